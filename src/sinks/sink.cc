// Sink::Open: picks the implementation by engine. One line per engine.
#include "sinks/sink.h"

#include "sinks/files/file_sink.h"
#include "sinks/mysql/mysql_sink.h"
#include "sinks/postgres/postgres_sink.h"

namespace dbs {

Result<std::unique_ptr<Sink>> Sink::Open(const ConnectionConfig& config,
                                         const SinkOptions& options) {
  switch (config.engine) {
    case Engine::kPostgres:
      return OpenPostgresSink(config, options);
    case Engine::kMysql:
      return OpenMysqlSink(config, options);
    case Engine::kFile:
      return OpenFileSink(config, options);
    default:
      break;
  }
  return Status::Unsupported("no sink for " + std::string(EngineName(config.engine)) +
                             " targets in this build");
}

}  // namespace dbs

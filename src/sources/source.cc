// Source::Open: picks the implementation by engine. One line per engine.
#include "sources/source.h"

#include "federated/federated_source.h"
#include "sources/files/file_source.h"
#include "sources/mysql/mysql_source.h"
#include "sources/postgres/postgres_source.h"

namespace dbs {

Result<std::unique_ptr<Source>> Source::Open(const ConnectionConfig& config) {
  switch (config.engine) {
    case Engine::kPostgres:
      return OpenPostgresSource(config);
    case Engine::kMysql:
      return OpenMysqlSource(config);
    case Engine::kFile:
      return OpenFileSource(config);
    case Engine::kFederated:
      return federated::OpenFederatedSource(config);
    default:
      break;
  }
  return Status::Unsupported("no source for " + std::string(EngineName(config.engine)) +
                             " connections in this build");
}

}  // namespace dbs

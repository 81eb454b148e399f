#include "explorer/console.h"

#include "explorer/console_internal.h"

namespace dbs::explorer {

Status ClassifyReadOnly(bool refused_as_read_only, const Status& s) {
  if (!refused_as_read_only) return s;
  return Status::PermissionDenied(
      "the statement writes, and the console runs read-only by default: send \"readOnly\": "
      "false to write (the database said: " +
      s.message() + ")");
}

Result<std::unique_ptr<QuerySession>> QuerySession::Open(const ConnectionConfig& config,
                                                         bool read_only, int64_t timeout_ms) {
  if (config.engine == Engine::kPostgres) return OpenPostgresSession(config, read_only, timeout_ms);
  return OpenMysqlSession(config, read_only, timeout_ms);
}

}  // namespace dbs::explorer

// CurrentSourcePosition: where the source's log ends now (for draining a change stream).
#include "mysql/mysql_client.h"
#include "postgres/pg_client.h"
#include "sources/change_stream.h"
#include "sources/mysql/mysql_source.h"

namespace dbs {

Result<SourcePosition> CurrentSourcePosition(const ConnectionConfig& config) {
  SourcePosition pos;
  if (config.engine == Engine::kPostgres) {
    DBS_ASSIGN_OR_RETURN(auto conn, pg::Connect(config));
    DBS_ASSIGN_OR_RETURN(auto res, pg::Exec(conn.get(), "SELECT pg_current_wal_lsn()::text",
                                            "reading the current WAL position"));
    pos.kind = SourcePosition::Kind::kPgLsn;
    pos.value = std::string(pg::Text(res.get(), 0, 0));
    return pos;
  }
  mysql::ConnectOptions co;
  DBS_ASSIGN_OR_RETURN(auto c, mysql::MysqlConnection::Open(config, co));
  pos = ReadBinlogPosition(c.get());
  if (pos.empty()) {
    return Status::FailedPrecondition(
        "the source's binlog position is not visible: enable the binlog (log_bin) and grant "
        "REPLICATION CLIENT (MariaDB: BINLOG MONITOR)");
  }
  return pos;
}

}  // namespace dbs

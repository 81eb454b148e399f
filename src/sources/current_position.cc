// CurrentSourcePosition: where the source's log ends now (for draining a change stream).
#include <algorithm>

#include "mysql/mysql_client.h"
#include "postgres/pg_client.h"
#include "sources/change_stream.h"

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
  DBS_ASSIGN_OR_RETURN(
      auto g, c->Query(c->is_mariadb()
                           ? "SELECT @@GLOBAL.gtid_binlog_pos"
                           : "SELECT IF(@@GLOBAL.gtid_mode = 'ON', @@GLOBAL.gtid_executed, '')",
                       "reading the GTID position"));
  std::string gtid = !g.empty() && g[0][0] ? *g[0][0] : "";
  gtid.erase(std::remove(gtid.begin(), gtid.end(), '\n'), gtid.end());
  auto st = c->Query("SHOW MASTER STATUS", "reading the binlog position");
  if (!st.ok()) st = c->Query("SHOW BINARY LOG STATUS", "reading the binlog position");
  DBS_RETURN_IF_ERROR(st.status());
  std::string file_pos;
  if (!st->empty() && (*st)[0].size() >= 2 && (*st)[0][0] && (*st)[0][1]) {
    file_pos = *(*st)[0][0] + ":" + *(*st)[0][1];
  }
  if (!gtid.empty()) {
    pos.kind = SourcePosition::Kind::kMysqlGtid;
    pos.value = gtid;
    pos.file_pos = file_pos;
  } else if (!file_pos.empty()) {
    pos.kind = SourcePosition::Kind::kMysqlFilePos;
    pos.value = file_pos;
  } else {
    return Status::FailedPrecondition(
        "the source's binlog position is not visible: enable the binlog (log_bin) and grant "
        "REPLICATION CLIENT (MariaDB: BINLOG MONITOR)");
  }
  return pos;
}

}  // namespace dbs

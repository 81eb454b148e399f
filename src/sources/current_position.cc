// CurrentSourcePosition: where the source's log ends now (for draining a change stream).
#include "mysql/mysql_client.h"
#include "postgres/pg_client.h"
#include "sources/change_stream.h"
#include "sources/mysql/mysql_source.h"
#include "sources/postgres/pg_change_stream.h"

namespace dbs {

Result<SourcePosition> CurrentSourcePosition(const ConnectionConfig& config) {
  SourcePosition pos;
  if (config.engine == Engine::kPostgres) {
    DBS_ASSIGN_OR_RETURN(auto conn, pg::Connect(config));
    // The insert position, not pg_current_wal_lsn() (the write position): a commit made with
    // synchronous_commit = off may still sit in the WAL buffers, past the write position, and a
    // drain to the write position would stop before it. Right after a page header (nothing on
    // the page yet) the WAL really ends at the page start: the sender never reports more, so
    // that is the position (no record ends inside a header).
    DBS_ASSIGN_OR_RETURN(
        auto res,
        pg::Exec(conn.get(),
                 "SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
                 "ELSE pg_current_wal_insert_lsn() END)::text, "
                 "current_setting('wal_block_size')::int8, "
                 "(SELECT setting::int8 FROM pg_settings WHERE name = 'wal_segment_size')",
                 "reading the current WAL position"));
    DBS_ASSIGN_OR_RETURN(uint64_t lsn, pg::ParseLsn(pg::Text(res.get(), 0, 0)));
    const auto block = static_cast<uint64_t>(pg::Int(res.get(), 0, 1));
    const auto segment = static_cast<uint64_t>(pg::Int(res.get(), 0, 2));
    constexpr uint64_t kShortHeader = 24, kLongHeader = 40;  // SizeOfXLog{Short,Long}PHD
    if (block > 0 && segment > 0) {
      if (lsn % segment == kLongHeader) {
        lsn -= kLongHeader;  // first page of a segment
      } else if (lsn % block == kShortHeader) {
        lsn -= kShortHeader;
      }
    }
    pos.kind = SourcePosition::Kind::kPgLsn;
    pos.value = pg::FormatLsn(lsn);
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

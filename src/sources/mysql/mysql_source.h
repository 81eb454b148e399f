// MysqlSource: the Source (sources/source.h) for MySQL 5.7/8.x and MariaDB 10.x, on libmariadb.
//
// Contract (beyond source.h):
//  - The connection's database is the default schema. ListTables lists its BASE TABLEs, or,
//    when the connection names no database, those of every non-system database;
//    ListAllTables those of every non-system database in any case.
//  - Describe reads information_schema (COLUMNS, STATISTICS, KEY_COLUMN_USAGE +
//    REFERENTIAL_CONSTRAINTS, CHECK_CONSTRAINTS where the server has them, TABLES for the row
//    estimate and comment) and first runs `SELECT * FROM t LIMIT 0`, so a missing table is
//    NotFound and a missing SELECT privilege PermissionDenied, both naming the table.
//  - BeginSnapshot pins one view for all readers: FLUSH TABLES WITH READ LOCK on the control
//    connection, START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY on each reader
//    connection, the binlog position (GTID set, else file:offset) read under the lock, UNLOCK
//    TABLES. Without the RELOAD privilege it falls back to a single reader with its own
//    consistent snapshot and logs a warning: parallel chunks are then read one after another,
//    and the recorded position is only approximate (MariaDB: exact file:offset from
//    binlog_snapshot_file/position).
//  - Readers run their SELECT as a server-side prepared statement and stream its rows in the
//    binary protocol (no mysql_stmt_store_result): integers, doubles and temporal values arrive
//    as binary, decimals, text, bytes, BIT, JSON, UUID/INET and geometry as bytes (decoded by
//    the text-cell rules of mysql_text_decode.h). The server then formats no numbers or dates:
//    a read costs it about half the CPU of the text protocol (bench/mysql_protocol_bench.sh).
//    A server that will not prepare statements (max_prepared_stmt_count reached or 0, a proxy
//    without them) is read with the text protocol instead, with one warning per snapshot.
//    Memory is one bundle plus one row (its longest values' buffers), whatever the table size.
//
// Exact values: every column's value is exact except FLOAT, which the server hands out as a
// float (and, in the text protocol, prints with at most 6 significant digits). FLOAT columns
// are therefore selected as `col * 1e0`: the product is computed in double precision (float ->
// double is exact, times 1 is exact, -0 stays -0); that double narrowed to float is the stored
// value.
// Geometry is selected raw: MySQL's internal value is a little-endian u32 SRID followed by
// WKB, which is exactly the kGeometry encoding (and avoids ST_AsWKB's axis-order swap for
// geographic SRIDs on MySQL 8). BIT arrives as big-endian bytes, TIMESTAMP in UTC (the session
// time_zone is '+00:00').
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/connection.h"
#include "sources/source.h"

namespace dbs {

namespace mysql {
class MysqlConnection;
}

class MysqlSource : public Source {
 public:
  // Connects the control connection. Errors as MysqlConnection::Open (mysql/mysql_client.h).
  static Result<std::unique_ptr<MysqlSource>> Open(const ConnectionConfig& config);
  ~MysqlSource() override;

  Result<std::vector<TableRef>> ListTables() override;
  Result<std::vector<TableRef>> ListAllTables() override;
  std::string DefaultSchema() const override { return config_.database; }
  Result<TableSchema> Describe(const TableRef& table) override;
  Result<TableSchema> DescribeQuery(const std::string& query, const TableRef& name) override;
  Result<std::vector<SchemaObject>> DescribeObjects(
      const std::vector<TableSchema>& tables) override;
  Result<std::vector<KeyRange>> Split(const TableSchema& table, uint64_t rows_per_chunk) override;
  Result<std::unique_ptr<Snapshot>> BeginSnapshot(int max_readers) override;
  // CDC (binlog_stream.h). CheckCdc: log_bin ON, binlog_format ROW, binlog_row_image FULL,
  // REPLICATION SLAVE and REPLICATION CLIENT (MariaDB: BINLOG MONITOR) privileges, and the
  // followed tables can be described; each failure says the statement or setting that fixes it.
  Status CheckCdc(const CdcOptions& options) override;
  // BeginSnapshot, whose position (GTID set and file_pos, read under the global read lock) a
  // binlog stream continues from without gap or duplicate. FailedPrecondition when no position
  // can be recorded (binlog off, REPLICATION CLIENT / BINLOG MONITOR missing).
  Result<std::unique_ptr<Snapshot>> BeginCdcSnapshot(int max_readers,
                                                     const CdcOptions& options) override;
  Result<std::unique_ptr<ChangeStream>> OpenChangeStream(const CdcOptions& options) override;

  bool is_mariadb() const;

 private:
  MysqlSource(ConnectionConfig config, std::unique_ptr<mysql::MysqlConnection> conn);
  // ListTables (`all` false) or ListAllTables.
  Result<std::vector<TableRef>> List(bool all);
  // The schema a TableRef means (its own, else the connection's database).
  Result<std::string> SchemaOf(const TableRef& table) const;

  ConnectionConfig config_;
  std::unique_ptr<mysql::MysqlConnection> conn_;
};

// The source's binlog position now: the GTID set when there is one (file_pos set too), else
// file:offset; kNone (with a warning) when the binlog is off or the user may not see it.
SourcePosition ReadBinlogPosition(mysql::MysqlConnection* c);

// Source::Open's entry for mysql:// and mariadb:// connections.
Result<std::unique_ptr<Source>> OpenMysqlSource(const ConnectionConfig& config);

}  // namespace dbs

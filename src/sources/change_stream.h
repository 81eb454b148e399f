// ChangeStream: the committed transactions of a source, in commit order, from a position.
//
// Contract:
//  - Opened by Source::OpenChangeStream; owns its replication connection; used from one
//    thread (Next and Confirm from the same thread).
//  - Next() returns whole committed transactions in commit order (large ones in parts, see
//    ChangeTxn::final); never an aborted or uncommitted change. It returns kIdle when nothing
//    arrived within the timeout (the caller then publishes progress, confirms, loops), at the
//    latest options.wake_interval after the timeout.
//  - Every transaction after options.start is returned exactly once per open; a transaction
//    whose position is <= start is never returned (resume without duplicates).
//  - Confirm(p): the target committed everything up to p. Only then may the source release
//    its log up to p (PostgreSQL: standby status flush LSN). The stream keeps the source's
//    retention point moving on an idle database (heartbeats) without ever confirming more
//    than what was confirmed or what has no changes of the followed tables.
//  - Errors: a lost connection is retryable (reopen from the last published position); a
//    dropped slot/publication, a purged binlog, or a DDL other than ADD COLUMN is a
//    non-retryable error that names the object and the statement.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/connection.h"
#include "core/change.h"
#include "core/result.h"
#include "core/schema.h"

namespace dbs {

struct CdcOptions {
  std::string stream;            // the dbstreams stream name: default slot/publication names
  std::vector<TableRef> tables;  // tables to follow; empty: every table
  SourcePosition start;          // continue after this position; empty: from now
  // PostgreSQL: names to create or reuse; defaults "dbs_<stream>" (lower-cased).
  std::string slot_name;
  std::string publication_name;
  // MySQL/MariaDB: the replica server id this reader uses (unique per source).
  uint32_t server_id = 0;  // 0: derived from the stream name
  // Parts of a large transaction hold at most this many rows.
  size_t max_part_rows = 10'000;
  std::chrono::milliseconds heartbeat{10'000};
  // How late Next(timeout) may return past its timeout on a quiet source. A stream that cannot
  // wait with a deadline (the MySQL/MariaDB binlog: a blocking fetch) asks the server for a
  // heartbeat this often (at least 10 ms, at most 1 s), so a caller holding a small batch
  // publishes it on time instead of when the next transaction arrives.
  std::chrono::milliseconds wake_interval{1'000};
};

// A table's schema changed in the source (at this point of the change stream).
struct SchemaChange {
  TableRef table;
  TableSchema schema;                      // the new schema (columns in the new order)
  std::string statement;                   // the DDL text when known (MySQL), else a description
  std::vector<std::string> added_columns;  // names, when the change is only ADD COLUMN
  bool only_added_columns = false;
};

struct ChangeEvent {
  enum class Kind {
    kIdle,          // nothing within the timeout; `position` may have advanced (heartbeat)
    kTransaction,   // `txn` holds a committed transaction (or a part of one)
    kSchemaChange,  // `schema_change`; changes after it use the new schema
  } kind = Kind::kIdle;
  ChangeTxn txn;
  SchemaChange schema_change;
  SourcePosition position;  // the latest position the stream has passed
};

class ChangeStream {
 public:
  virtual ~ChangeStream() = default;
  virtual Result<ChangeEvent> Next(std::chrono::milliseconds timeout) = 0;
  virtual Status Confirm(const SourcePosition& position) = 0;
  // Current schema of a followed table as the stream decodes it.
  virtual Result<TableSchema> TableSchemaOf(const TableRef& table) = 0;
};

// Orders two positions of the same kind from the same source: <0, 0, >0. For MariaDB/MySQL
// GTID sets, "a < b" means b contains a and more. InvalidArgument for different kinds or
// unparseable values.
Result<int> CompareSourcePositions(const SourcePosition& a, const SourcePosition& b);

// Where the source's log ends now, in the kind its change stream reports (PostgreSQL: the
// current WAL LSN; MySQL/MariaDB: the GTID set when GTIDs are on, else file:offset). A stream
// that has passed this position has seen every transaction committed before the call.
Result<SourcePosition> CurrentSourcePosition(const ConnectionConfig& config);

}  // namespace dbs

// Source: reads table structure and consistent snapshots of rows from a database.
//
// Contract:
//  - A Source owns one control connection; it is used from one thread.
//  - BeginSnapshot() pins a consistent view of the whole database and records the source
//    position at that point (for a CDC hand-off without gap or duplicate). The returned
//    Snapshot is thread-safe for OpenReader(): each reader gets its own connection that sees
//    exactly the pinned view, so chunks of tables can be read in parallel.
//  - A RowReader streams rows: memory stays bounded by the bundle limits, whatever the table
//    size. It is used from one thread.
//  - Errors name the object (table, column) and say what to do; connection loss is retryable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/connection.h"
#include "config/stream_config.h"
#include "core/bundle.h"
#include "core/change.h"
#include "core/result.h"
#include "core/schema.h"
#include "sources/change_stream.h"

namespace dbs {

// A chunk of a table: `column` in [lower, upper) (either side open when empty). With `pages`
// (PostgreSQL 14+ plain tables), the bounds are heap page numbers and the chunk is the rows
// whose ctid lies in those pages: a TID range scan, no key needed. With `files` (file
// sources), the bounds are indexes into the table's files, in reading order.
struct KeyRange {
  std::string column;
  std::optional<int64_t> lower;
  std::optional<int64_t> upper;
  bool pages = false;
  bool files = false;
};

// What one reader reads: a table (optionally a chunk of it), or a custom query.
struct ReadSpec {
  TableSchema table;                 // as described; `columns` limits what is read
  std::vector<std::string> columns;  // names to read, in this order; empty: all
  std::string filter;                // SQL boolean expression, the user's; empty: none
  std::string query;                 // custom SELECT instead of the table; empty: none
  std::optional<KeyRange> range;     // chunk bounds; empty: the whole table
  uint64_t limit = 0;                // at most this many rows (0: all)
  // PostgreSQL sources, for a PostgreSQL target: hand the rows over as binary COPY tuples
  // (Bundle::pg_copy) when every column is of a built-in scalar type read without a cast; the
  // reader decides, so a bundle may still come as columns.
  bool pg_copy_rows = false;
};

// A row a reader left out under StreamConfig::malformed_rows skip: where it is and why.
struct SkippedRow {
  std::string file;   // as the source names it (a path, or s3://bucket/key)
  uint64_t line = 0;  // 1-based line of the file (CSV: the header is line 1)
  std::string reason;
};

class RowReader {
 public:
  virtual ~RowReader() = default;
  // Appends up to max_rows rows (fewer when the rows' bytes reach max_bytes) to *out, whose
  // columns match the read columns' logical types. Returns false once the rows are exhausted
  // (possibly after appending the last ones).
  virtual Result<bool> Next(Bundle* out, size_t max_rows, size_t max_bytes) = 0;
  // The rows left out since the last call, in reading order (file sources with malformedRows
  // skip; nothing otherwise). Callers drain it after each Next(): what is not taken is kept.
  virtual std::vector<SkippedRow> TakeSkipped() { return {}; }
};

class Snapshot {
 public:
  virtual ~Snapshot() = default;
  virtual const SourcePosition& position() const = 0;
  // Thread-safe. Opens a reader on its own connection bound to this snapshot.
  virtual Result<std::unique_ptr<RowReader>> OpenReader(const ReadSpec& spec) = 0;
};

class Source {
 public:
  // Picks the implementation by engine (mysql/mariadb, postgres).
  static Result<std::unique_ptr<Source>> Open(const ConnectionConfig& config);
  virtual ~Source() = default;

  // Base tables (not views) of the database, schemas excluding system ones.
  virtual Result<std::vector<TableRef>> ListTables() = 0;
  // Every base table the connection may select from, in every schema — for MySQL/MariaDB also
  // in databases other than the connection's (what browsing shows, so `db.table` selects
  // them). By default, ListTables().
  virtual Result<std::vector<TableRef>> ListAllTables() { return ListTables(); }
  // The schema a table name without a schema part refers to ("public", or the database).
  virtual std::string DefaultSchema() const = 0;
  // The stream's settings on how rows are read, as opposed to which: file sources take the
  // selectors' column types (TableSelector::column_types) and StreamConfig::malformed_rows.
  // PlanTables calls it before it lists or describes tables. By default nothing is taken.
  virtual Status Configure(const StreamConfig& config) {
    (void)config;
    return Status::Ok();
  }
  virtual Result<TableSchema> Describe(const TableRef& table) = 0;
  // Describes the result columns of a custom query (name taken from `name`).
  virtual Result<TableSchema> DescribeQuery(const std::string& query, const TableRef& name) = 0;
  // Schema objects besides the tables (core/schema.h, SchemaObject) in the schemas of
  // `tables` (views, routines, sequences, extensions, ...) and on `tables` themselves
  // (triggers, policies, ...), with definitions the writer can run on a target of the same
  // engine. Nothing by default (a source without such objects).
  virtual Result<std::vector<SchemaObject>> DescribeObjects(
      const std::vector<TableSchema>& tables) {
    (void)tables;
    return std::vector<SchemaObject>();
  }
  // The chunk size (rows) a stream without splitRows reads a table in; 0: one chunk a table.
  virtual uint64_t DefaultSplitRows() const { return 250'000; }
  // Chunk ranges of about `rows_per_chunk` rows; one open range when the table has no
  // single-column integer primary key or is small, or rows_per_chunk is 0.
  virtual Result<std::vector<KeyRange>> Split(const TableSchema& table,
                                              uint64_t rows_per_chunk) = 0;
  // Pins a consistent snapshot for up to `max_readers` parallel readers.
  virtual Result<std::unique_ptr<Snapshot>> BeginSnapshot(int max_readers) = 0;

  // --- Change data capture (sources/change_stream.h) ---
  // Checks that the source can stream changes for these tables (log settings, privileges,
  // replica identity) and says exactly what to change when not.
  virtual Status CheckCdc(const CdcOptions& options) = 0;
  // Like BeginSnapshot, but the snapshot's position() is exactly where a change stream opened
  // with `options` and start = position() continues: no gap, no duplicate (PostgreSQL: the
  // replication slot is created here, exporting its snapshot).
  virtual Result<std::unique_ptr<Snapshot>> BeginCdcSnapshot(int max_readers,
                                                             const CdcOptions& options) = 0;
  // Opens a change stream on its own connection(s), from options.start (empty: from now).
  virtual Result<std::unique_ptr<ChangeStream>> OpenChangeStream(const CdcOptions& options) = 0;
};

// A source without a change stream (files, federated queries): mode load only. The CDC calls
// fail with Unsupported (Retry::kFail) and the reason the subclass gives.
class LoadOnlySource : public Source {
 public:
  Status CheckCdc(const CdcOptions&) override { return NoCdc(); }
  Result<std::unique_ptr<Snapshot>> BeginCdcSnapshot(int, const CdcOptions&) override {
    return NoCdc();
  }
  Result<std::unique_ptr<ChangeStream>> OpenChangeStream(const CdcOptions&) override {
    return NoCdc();
  }

 protected:
  // Why there is no change stream, for the error's message.
  virtual std::string NoCdcReason() const = 0;

 private:
  Status NoCdc() const { return Status(StatusCode::kUnsupported, Retry::kFail, NoCdcReason()); }
};

}  // namespace dbs

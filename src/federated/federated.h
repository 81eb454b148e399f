// Federated SQL: one read-only SELECT over several saved connections (and local files), run by
// an embedded DuckDB. docs/federated.md describes the design.
//
// Contract:
//  - Each source has an alias (a letter, then letters, digits or '_'; at most 63 characters);
//    the statement names a source table as `alias.schema.table` (or `alias.table` for the
//    source's default schema). MySQL/MariaDB schemas are databases.
//  - Only one SELECT (WITH ... SELECT included) is accepted: DuckDB's own parser decides
//    (json_serialize_sql serializes SELECT statements only). Sources are read in read-only
//    transactions (the source readers' consistent snapshots).
//  - Every source table becomes a DuckDB table function (one per table) behind a view named
//    like the table: DuckDB asks it for the columns the statement uses (projection pushdown),
//    and simple WHERE conditions on a table referenced once are sent to the source as its
//    own SQL (filter pushdown, pushdown.h); DuckDB still applies every condition itself.
//  - A table that Source::Split divides (heap page ranges on PostgreSQL 14+, otherwise a
//    single-column integer primary key's ranges) is read in chunks, in parallel
//    (up to `threads` readers); rows stream in chunks, so memory stays bounded. DuckDB runs
//    with `memory_limit` and spills joins and sorts to `temp_dir`.
//  - Each call opens its own in-memory DuckDB database (nothing is shared between calls) with
//    external file access off except for `allowed_directories`.
//  - timeout_ms interrupts DuckDB (Timeout); errors name the source alias where they come from.
//  - s3:// URLs in file functions (read_parquet('s3://bucket/events/*.parquet')) are read with
//    the credentials of the request's s3 source of that bucket, through local copies
//    (s3_urls.h); EXPLAIN lists the objects each read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/connection.h"
#include "core/result.h"

namespace dbs::federated {

struct FederatedSource {
  std::string alias;
  ConnectionConfig connection;
};

struct FederatedOptions {
  int64_t max_rows = 1000;  // rows returned; more set `truncated`
  int64_t timeout_ms = 60000;
  std::string memory_limit = "1GB";  // DuckDB memory_limit
  std::string temp_dir;              // DuckDB temp_directory for spilling; empty: no spilling
  int threads = 2;                   // DuckDB threads and parallel readers per table
  uint64_t rows_per_chunk = 250000;  // key-range size of a parallel table read
  // Folders DuckDB's file functions (read_csv, read_parquet, ...) may read; empty: none.
  std::vector<std::string> allowed_directories;
  // Bytes of objects a statement's s3:// URLs may copy in all (s3_urls.h).
  uint64_t max_s3_bytes = 8ull << 30;
};

struct ResultColumn {
  std::string name;
  std::string type;  // DuckDB's type name
};

struct FederatedResult {
  std::vector<ResultColumn> columns;
  nlohmann::json rows = nlohmann::json::array();  // arrays of JSON values, one per row
  bool truncated = false;
  int64_t elapsed_ms = 0;
};

// What one source is asked for: the statement in its own dialect (the reader may wrap it, e.g.
// PostgreSQL's COPY (...) TO STDOUT, and adds page or key ranges for parallel chunks).
struct SourceStatement {
  std::string alias;
  std::string statement;
};

struct FederatedPlan {
  std::string text;  // DuckDB's physical plan
  std::vector<SourceStatement> sources;
};

// OK when `alias` is a letter followed by letters, digits or '_' (at most 63 characters).
Status ValidateAlias(const std::string& alias);

// Runs `sql` and returns at most options.max_rows rows.
Result<FederatedResult> Run(const std::vector<FederatedSource>& sources, const std::string& sql,
                            const FederatedOptions& options);

// Plans `sql` without reading rows: DuckDB's plan and each source's statement.
Result<FederatedPlan> Explain(const std::vector<FederatedSource>& sources, const std::string& sql,
                              const FederatedOptions& options);

}  // namespace dbs::federated

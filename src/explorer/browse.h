// The table browser: rows of a table or view with paging, sorting and filters, counts, the
// table's DDL, a column profile, and ER diagrams of a schema.
//
// Contract:
//  - The table is described first (Source::Describe); every column a request names must be
//    one of its columns (InvalidArgument otherwise), and is quoted by the engine's rules from
//    the described name. Filter values are always sent as statement parameters (PostgreSQL
//    $n with the extended protocol, MySQL/MariaDB prepared statements), never written into
//    the SQL text: a value can only ever be data.
//  - Reads run in a read-only transaction with a statement timeout.
//  - Paging is keyset (WHERE (order columns) > (last row's values)) when the table has a
//    primary key and every order column is NOT NULL: the order is the requested sort followed
//    by the primary key; `next_cursor` holds the last row's values of those columns. Otherwise
//    it is LIMIT/OFFSET and `next_offset` says where the next page starts.
//  - Values follow console.h's rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/connection.h"
#include "core/result.h"
#include "explorer/console.h"

namespace dbs::explorer {

// A filter: op is one of = <> != < <= > >= like "not like" ilike contains in "not in"
// "is null" "is not null" (case-insensitive). `value` is a JSON scalar (an array for in /
// not in; absent for is [not] null).
struct RowFilter {
  std::string column;
  std::string op;
  nlohmann::json value;
};

struct SortKey {
  std::string column;
  bool descending = false;
};

struct RowsRequest {
  std::string schema;  // PostgreSQL schema or MySQL database
  std::string table;
  std::vector<RowFilter> filters;
  std::vector<SortKey> sort;
  int64_t limit = 100;                  // 1..1000
  int64_t offset = 0;                   // OFFSET paging only
  std::optional<nlohmann::json> after;  // keyset: a previous answer's next_cursor
  int64_t timeout_ms = 30000;
};

struct RowsResult {
  std::vector<ConsoleColumn> columns;  // the table's columns with their declared types
  std::vector<std::string> primary_key;
  nlohmann::json rows = nlohmann::json::array();
  std::string paging;                         // "keyset" or "offset"
  std::optional<nlohmann::json> next_cursor;  // keyset: pass as `after`; none at the end
  std::optional<int64_t> next_offset;         // offset: the next page's offset; none at the end
  std::string statement;  // the SQL sent, with its placeholders (values are never in it)
  int64_t elapsed_ms = 0;
};

Result<RowsResult> BrowseRows(const ConnectionConfig& c, const RowsRequest& r);

struct CountResult {
  int64_t rows = 0;
  bool exact = true;
};
// Exact: count(*) with the filters. Estimated: PostgreSQL's planner estimate for the filtered
// statement; MySQL/MariaDB the table's statistics (filters ignored).
Result<CountResult> CountTableRows(const ConnectionConfig& c, const std::string& schema,
                                   const std::string& table, const std::vector<RowFilter>& filters,
                                   bool exact, int64_t timeout_ms);

// The DDL as the engine prints it: MySQL/MariaDB SHOW CREATE TABLE (or VIEW); PostgreSQL
// built from the catalog (columns, defaults, identity and generated columns, constraints,
// indexes, comments; views from pg_get_viewdef).
Result<std::string> TableDdl(const ConnectionConfig& c, const std::string& schema,
                             const std::string& table);

// Per column: type, min, max, nulls %, approximate distinct count, average text length, on the
// first `sample_rows` rows (0: the whole table), computed by the embedded DuckDB over the
// federated reader (so memory stays bounded). {rows, sampled, columns: [...]}.
Result<nlohmann::json> ProfileTable(const ConnectionConfig& c, const std::string& schema,
                                    const std::string& table, int64_t sample_rows,
                                    int64_t timeout_ms, const std::string& temp_dir);

// An ER diagram: {nodes: [{id, schema, name, columns: [{name, type, nullable, primaryKey}]}],
// edges: [{id, name, from, fromColumns, to, toColumns}]} for the tables of `schema` (empty:
// the connection's default schema; "*": every schema). At most `max_tables` tables
// (ResourceExhausted beyond, naming the count).
Result<nlohmann::json> ErDiagram(const ConnectionConfig& c, const std::string& schema,
                                 size_t max_tables);

}  // namespace dbs::explorer

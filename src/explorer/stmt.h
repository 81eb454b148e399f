// Parameterised read-only statements for the table browser (browse.h): the SQL text has
// placeholders ($n on PostgreSQL, ? on MySQL/MariaDB) and the values travel apart from it
// (libpq's extended protocol; MySQL prepared statements), so a value is never parsed as SQL.
//
// Contract: each call opens its own connection, runs the statement in a read-only transaction
// with a statement timeout (PostgreSQL statement_timeout; MariaDB max_statement_time; MySQL
// max_execution_time), reads every row (callers bound the count with LIMIT) and closes.
// Values follow console.h's rules.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/connection.h"
#include "core/result.h"
#include "core/schema.h"
#include "explorer/console.h"

namespace dbs::explorer {

struct StmtParam {
  std::optional<std::string> text;  // nullopt: NULL
  bool integer = false;             // MySQL: bound as a 64-bit integer (exact comparisons)
};

struct StmtResult {
  std::vector<ConsoleColumn> columns;
  std::vector<nlohmann::json> rows;  // arrays of values
};

Result<StmtResult> RunReadOnly(const ConnectionConfig& c, const std::string& sql,
                               const std::vector<StmtParam>& params, int64_t timeout_ms);

// PostgreSQL DDL of a described table or view, from the catalog (browse.h's TableDdl).
Result<std::string> PostgresDdl(const ConnectionConfig& c, const TableSchema& t);

}  // namespace dbs::explorer

// MySQL / MariaDB column metadata -> the schema model (core/schema.h).
//
// The MySQL source reader selects one row of information_schema.COLUMNS per column, copies it
// into a MysqlColumnInfo and calls ColumnFromMysql. Nothing here talks to a server; the functions
// are pure and thread-safe. The full mapping, with every lossy edge, is in docs/type-mapping.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/schema.h"

namespace dbs {

// One row of information_schema.COLUMNS, as the reader got it. Text fields hold the server's
// text unchanged (SQL NULL -> empty string, except where an optional says otherwise).
struct MysqlColumnInfo {
  std::string column_name;                    // COLUMN_NAME
  std::string data_type;                      // DATA_TYPE: "int", "varchar", "enum", ...
  std::string column_type;                    // COLUMN_TYPE: "int(10) unsigned zerofill", ...
  bool is_nullable = true;                    // IS_NULLABLE = 'YES'
  std::optional<std::string> column_default;  // COLUMN_DEFAULT; nullopt for SQL NULL
  std::optional<uint64_t> character_maximum_length;  // CHARACTER_MAXIMUM_LENGTH
  std::optional<uint64_t> numeric_precision;         // NUMERIC_PRECISION
  std::optional<uint64_t> numeric_scale;             // NUMERIC_SCALE
  std::optional<uint64_t> datetime_precision;        // DATETIME_PRECISION
  std::string character_set_name;                    // CHARACTER_SET_NAME
  std::string collation_name;                        // COLLATION_NAME
  std::string extra;                                 // EXTRA: auto_increment, STORED GENERATED, ...
  std::string generation_expression;                 // GENERATION_EXPRESSION
  std::string column_comment;                        // COLUMN_COMMENT
  std::optional<uint32_t> srs_id;                    // SRS_ID (MySQL 8 geometry columns)

  // The server is MariaDB (10.2.7 or later). MariaDB reports COLUMN_DEFAULT as an SQL
  // expression (quoted literals, 'NULL' for a NULL default, current_timestamp()); MySQL
  // reports the raw literal text and marks expressions with DEFAULT_GENERATED in EXTRA.
  bool is_mariadb = false;
  // MariaDB stores JSON as LONGTEXT with a CHECK (json_valid(`col`)) constraint; COLUMN_TYPE
  // says "longtext". Set this when the reader found that check (see MariadbJsonCheckColumn);
  // the column then maps to kJson. Ignored unless DATA_TYPE is longtext.
  bool mariadb_json = false;
};

// Maps one column. Every MySQL 5.7/8.x and MariaDB 10.x built-in type is handled:
//   tinyint/smallint/mediumint/int/bigint [unsigned]  kInt8..kInt64 / kUInt8..kUInt64
//     (tinyint(1) and its alias bool stay kInt8; mediumint widens to 32 bits)
//   year -> kInt16; float -> kFloat32; double -> kFloat64; decimal -> kDecimal (precision, scale)
//   char/varchar/*text -> kText (length, charset, collation); charset binary -> kBytes
//   binary/varbinary/*blob -> kBytes; enum -> kEnum, set -> kSet (labels in enum_values)
//   bit(n) -> kBit (length n); date -> kDate; datetime(p) -> kTimestamp; timestamp(p) ->
//   kTimestampTz; time(p) -> kTime (precision p); json -> kJson; geometry and its subtypes ->
//   kGeometry (srid); MariaDB uuid -> kUuid, inet4/inet6 -> kText.
// source_type is COLUMN_TYPE, so MySQL -> MySQL keeps the exact type.
// default_expr is always an SQL expression in MySQL syntax, whatever the server's convention:
// a quoted literal ('abc', '0000-00-00'), a number, b'101', 0x6162, NULL is dropped (no
// default), CURRENT_TIMESTAMP[(p)] normalized to upper case, any other expression wrapped in
// parentheses ("(uuid())"). on_update holds "CURRENT_TIMESTAMP[(p)]" for ON UPDATE columns.
// Generated columns: generated_expr (MySQL's backslash-escaped quotes undone), generated_stored.
// Errors: Unsupported naming the column and type for anything else; InvalidArgument for a
// COLUMN_TYPE that does not parse (such as an unterminated enum label).
Result<Column> ColumnFromMysql(const MysqlColumnInfo& info);

// Parses the labels of "enum('a','b')" or "set(...)" as COLUMN_TYPE prints them: '' stands for
// a quote, backslash escapes are decoded, commas and parentheses inside labels are kept.
Result<std::vector<std::string>> ParseMysqlEnumLabels(std::string_view column_type);

// MySQL (not MariaDB) prints GENERATION_EXPRESSION, expression defaults and
// CHECK_CONSTRAINTS.CHECK_CLAUSE with the quotes and backslashes inside them escaped once more
// (concat(`a`,_utf8mb4\' \')): this undoes that level. ColumnFromMysql applies it itself; the
// reader applies it to check clauses before putting them in a CheckConstraint.
std::string UnescapeMysqlCatalogText(std::string_view text);

// When `check_clause` (information_schema.CHECK_CONSTRAINTS.CHECK_CLAUSE on MariaDB) is exactly
// json_valid(`col`), returns col: that column holds JSON. Otherwise nullopt.
std::optional<std::string> MariadbJsonCheckColumn(std::string_view check_clause);

}  // namespace dbs

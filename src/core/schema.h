// The schema model: what a source says about a table, and what a sink needs to create it.
//
// Plain value types, safe to copy. Serialized to JSON (ToJson/TableFromJson) for the per-table
// metadata message on the bus; TableFromJson validates untrusted input and names the field
// that is wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"
#include "core/types.h"

namespace dbs {

struct Column {
  std::string name;
  std::string source_type;  // as the source spells it: "bigint unsigned", "varchar(20)[]"
  LogicalType type = LogicalType::kText;
  LogicalType element_type = LogicalType::kNone;  // for kArray
  bool nullable = true;
  std::optional<std::string> default_expr;  // source SQL text of the default
  std::optional<std::string> on_update;     // MySQL ON UPDATE expression (CURRENT_TIMESTAMP)
  std::optional<uint32_t> length;           // chars (text) / bytes (binary) / bits (bit)
  std::optional<uint32_t> precision;        // decimal digits; fractional seconds for time
  std::optional<uint32_t> scale;
  std::string charset;
  std::string collation;
  std::vector<std::string> enum_values;       // enum and set labels, in order
  bool auto_increment = false;                // MySQL AUTO_INCREMENT / PG identity or serial
  std::optional<std::string> generated_expr;  // generated (computed) column expression
  bool generated_stored = false;
  std::string comment;
  uint32_t srid = 0;  // geometry

  friend bool operator==(const Column&, const Column&) = default;
};

struct IndexColumn {
  std::string name;  // column name, or the expression for expression indexes
  bool descending = false;
  std::optional<uint32_t> prefix_length;  // MySQL prefix indexes
  friend bool operator==(const IndexColumn&, const IndexColumn&) = default;
};

struct Index {
  std::string name;
  bool unique = false;
  std::string method;  // "btree", "hash", "gin", "fulltext", "spatial", ...
  std::vector<IndexColumn> columns;
  std::optional<std::string> predicate;  // partial index WHERE clause (PostgreSQL)
  friend bool operator==(const Index&, const Index&) = default;
};

struct ForeignKey {
  std::string name;
  std::vector<std::string> columns;
  std::string ref_schema;
  std::string ref_table;
  std::vector<std::string> ref_columns;
  std::string on_update = "NO ACTION";
  std::string on_delete = "NO ACTION";
  friend bool operator==(const ForeignKey&, const ForeignKey&) = default;
};

struct CheckConstraint {
  std::string name;
  std::string expression;  // source SQL text
  friend bool operator==(const CheckConstraint&, const CheckConstraint&) = default;
};

struct TableSchema {
  std::string schema;  // PostgreSQL schema or MySQL database
  std::string name;
  std::vector<Column> columns;
  std::vector<std::string> primary_key;  // column names, in key order; empty if none
  std::vector<Index> indexes;            // unique and secondary indexes (not the PK)
  std::vector<ForeignKey> foreign_keys;
  std::vector<CheckConstraint> checks;
  std::string comment;
  std::optional<uint64_t> estimated_rows;

  // "schema.name" (or "name" when schema is empty), unquoted: for messages.
  std::string QualifiedName() const;
  // Index of the named column, or -1.
  int FindColumn(const std::string& name) const;
  friend bool operator==(const TableSchema&, const TableSchema&) = default;
};

nlohmann::json ToJson(const TableSchema& t);
Result<TableSchema> TableFromJson(const nlohmann::json& j);

}  // namespace dbs

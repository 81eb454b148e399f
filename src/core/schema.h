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
  // The next value the column's generator hands out at the source (MySQL's AUTO_INCREMENT
  // counter, a PostgreSQL identity or serial sequence): the target's generator is moved to it
  // (or past the loaded rows, whichever is higher) so new rows get the ids they would have got.
  std::optional<int64_t> next_value;

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

// One partition of a partitioned table (PostgreSQL declarative partitioning).
struct Partition {
  std::string schema;  // where the partition lives at the source
  std::string name;
  std::string parent;        // the partitioned table it is attached to ("schema.name")
  std::string bound;         // "FOR VALUES FROM (...) TO (...)", "FOR VALUES IN (...)", "DEFAULT"
  std::string partition_by;  // a sub-partitioned partition's own key ("RANGE (x)"), or empty
  friend bool operator==(const Partition&, const Partition&) = default;
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
  // Partitioning, as the source engine spells it, for a target of the same engine: PostgreSQL
  // "RANGE (payment_date)" (the PARTITION BY key; `partitions` lists the partitions, parents
  // before their sub-partitions); MySQL the whole "PARTITION BY ..." clause of SHOW CREATE
  // TABLE, partitions included. Empty: not partitioned. Across engines the table is created
  // plain and the plan says so.
  std::string partition_by;
  std::vector<Partition> partitions;
  // PostgreSQL table inheritance: the parents ("schema.name") this table inherits from.
  std::vector<std::string> inherits;
  // PostgreSQL: other tables inherit from this one, so its own rows are read with ONLY (the
  // children are tables of their own).
  bool has_children = false;

  // "schema.name" (or "name" when schema is empty), unquoted: for messages.
  std::string QualifiedName() const;
  // Index of the named column, or -1.
  int FindColumn(const std::string& name) const;
  friend bool operator==(const TableSchema&, const TableSchema&) = default;
};

nlohmann::json ToJson(const TableSchema& t);
Result<TableSchema> TableFromJson(const nlohmann::json& j);

// --- Schema objects other than tables --------------------------------------------------------
// What a source has besides the tables' columns, keys and indexes, in the schemas of the
// selected tables: the writer migrates each object its target can take, and the plan and the
// run report name every other one with the reason (docs/type-mapping.md, "Schema objects").
// kPartitioning and kInheritance are never described by a source (they are properties of
// TableSchema); they appear in plans and reports only.
enum class ObjectKind {
  kView,
  kMaterializedView,
  kFunction,
  kProcedure,
  kAggregate,
  kTrigger,
  kSequence,
  kExtension,
  kEvent,
  kPolicy,
  kRule,
  kDomain,
  kPartitioning,
  kInheritance,
};
std::string_view ObjectKindName(ObjectKind k);  // "view", "materialized view", ...

struct SequenceInfo {
  std::string data_type = "bigint";
  int64_t start = 1;
  int64_t increment = 1;
  int64_t min = 1;
  int64_t max = 9223372036854775807;
  int64_t cache = 1;
  bool cycle = false;
  int64_t last_value = 1;  // with is_called false, the next nextval() returns last_value
  bool is_called = false;
  friend bool operator==(const SequenceInfo&, const SequenceInfo&) = default;
};

struct SchemaObject {
  ObjectKind kind = ObjectKind::kView;
  std::string schema;  // PostgreSQL schema or MySQL database
  std::string name;
  std::string table;  // triggers, policies, rules: the table it belongs to ("schema.name")
  // ONE statement that creates the object on the source's engine (writers run it so that the
  // server refuses a second statement). References to objects of its
  // own schema are unqualified (PostgreSQL: printed with search_path set to that schema;
  // MySQL: that schema's qualifier removed, DEFINER clauses removed), so the writer creates it
  // with the target schema current. Sequences and extensions are built from their fields.
  std::string definition;
  std::vector<std::string> reads;    // relations a view reads ("schema.name"), when known
  std::vector<std::string> used_by;  // extensions, domains: columns that need them
  std::string comment;
  std::string version;    // extensions
  std::string sql_mode;   // MySQL: the sql_mode the object was created under
  bool disabled = false;  // a trigger or event that is disabled at the source
  // Policies: the table has row-level security enabled (and forced for its owner).
  bool row_security = false;
  bool force_row_security = false;
  std::optional<SequenceInfo> sequence;
  // The source could describe the object but not produce a definition for it (e.g. an
  // aggregate): why. Such an object is reported, never created.
  std::string not_describable;

  std::string QualifiedName() const { return schema.empty() ? name : schema + "." + name; }
  friend bool operator==(const SchemaObject&, const SchemaObject&) = default;
};

nlohmann::json ToJson(const SchemaObject& o);
Result<SchemaObject> ObjectFromJson(const nlohmann::json& j);

}  // namespace dbs

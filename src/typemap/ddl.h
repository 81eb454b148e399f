// The schema model -> target DDL, for PostgreSQL and MySQL/MariaDB targets.
//
// The writer calls these in order for each table it creates:
//   PrepareTableSql  (PostgreSQL targets: enum types, sequences; empty otherwise)
//   CreateTableSql   columns, NOT NULL, defaults, identity, generated columns, primary key
//   FinishTableSql   (PostgreSQL targets: comments, sequence ownership; MySQL has them inline)
//   ... load the data ...
//   SyncAutoIncrementSql, CreateIndexSql per index, AddForeignKeySql per foreign key,
//   AddCheckSql per check.
// The statements are single statements without a trailing ';'. A function that returns an empty
// string (or an empty list) means there is nothing to run: it either is not needed or was
// skipped, and in the second case the reason is appended to options.warnings.
//
// Every function is pure (no connections) and thread-safe as long as options.warnings is not
// shared between threads. Errors: InvalidArgument when the model is unusable (an identifier too
// long for the target, an unknown column, a default or expression that is not one SQL fragment
// — metadata is treated as untrusted text and never spliced in unchecked), Unsupported when a
// column's type has no target type.
//
// The rules (which type becomes which, how defaults translate, what is lossy) are listed in
// docs/type-mapping.md; the comments here only name the decisions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/schema.h"
#include "typemap/sql.h"
#include "typemap/type_mapping_options.h"

namespace dbs {

struct DdlOptions {
  // Creates the table in this PostgreSQL schema / MySQL database instead of TableSchema::schema.
  // Foreign keys that point into the source table's own schema follow it.
  std::string target_schema;
  // The PostgreSQL target has PostGIS: kGeometry becomes geometry(Subtype,srid) rather than bytea.
  bool postgis = false;
  // CREATE TABLE / INDEX IF NOT EXISTS (MySQL has no CREATE INDEX IF NOT EXISTS: ignored there),
  // and CREATE TYPE that tolerates an existing type.
  bool if_not_exists = false;
  // MySQL bigint unsigned into PostgreSQL: numeric(20,0) (default; lossless, and an
  // AUTO_INCREMENT column draws from a sequence of its own) or bigint (faster, a real identity;
  // values above 9223372036854775807 fail at write time).
  bool pg_uint64_as_bigint = false;
  // JSON into PostgreSQL: json (default; keeps the exact text) or jsonb (normalizes
  // whitespace, key order and duplicate keys, and cannot hold \u0000).
  bool pg_jsonb = false;
  // MySQL TIME into PostgreSQL: time(p) (default; values outside 00:00..24:00 fail at write
  // time) or interval (holds MySQL's whole -838:59:59..838:59:59 range).
  bool mysql_time_as_interval = false;
  // The MySQL target is MariaDB 10.7+: uuid, inet4 and inet6 columns use MariaDB's native types
  // instead of char(36) / varchar(15) / varchar(45).
  bool mariadb_native_types = false;
  // PostgreSQL inet into MySQL: INET6 (only with mariadb_native_types) instead of varchar(43).
  bool pg_inet_as_inet6 = false;
  // Collation for text columns created in MySQL from PostgreSQL. Binary by default, because
  // PostgreSQL's default collations are case- and accent-sensitive and a case-insensitive
  // MySQL collation would turn distinct keys into duplicates. utf8mb4_bin is a PAD SPACE
  // collation (keys 'a' and 'a ' collide); use utf8mb4_0900_bin (MySQL 8) or
  // utf8mb4_nopad_bin (MariaDB) when trailing spaces are significant.
  std::string mysql_text_collation = "utf8mb4_bin";
  // Cross-dialect CHECK constraints are skipped (with a warning) unless this is set; then the
  // expression is passed on with its identifier quoting converted, which works for simple
  // comparisons and fails at execution for dialect-specific SQL.
  bool cross_dialect_checks = false;
  // PostgreSQL target: CREATE TABLE without the primary key; AddPrimaryKeySql adds it once the
  // load is in (one sorted index build instead of a b-tree insert per row). Ignored for MySQL,
  // where InnoDB clusters rows by the primary key and adding it later rebuilds the table.
  bool defer_primary_key = false;
  // Receives one line per lossy or skipped item: "<table>.<column>: what happened and why".
  // Not owned; may be null.
  std::vector<std::string>* warnings = nullptr;
};

// Copies the user's choices (a stream's `typeMapping`) into `o`. What the target supports is
// the caller's to combine: `target_has_postgis` (the PostgreSQL target has the extension) and
// `target_has_native_types` (the MySQL target is MariaDB 10.10+); each choice only applies
// where the target supports it.
void ApplyTypeMapping(const TypeMappingOptions& tm, bool target_has_postgis,
                      bool target_has_native_types, DdlOptions* o);

// The target type of one column, e.g. kUInt64 -> "numeric(20,0)" on PostgreSQL. Same dialect
// keeps Column::source_type (with a few portability exceptions, see docs); cross-dialect maps
// by logical type, refined by the source type name (char vs varchar, inet, varbit, ...).
// Without the table around it this cannot apply MySQL key-length adjustments (a PostgreSQL
// text primary key becomes varchar(768) in CreateTableSql but "longtext" here).
Result<std::string> TargetType(const Column& c, Dialect target, Dialect source,
                               const DdlOptions& options = {});

// The DEFAULT expression the target gets for `c`, or nullopt for none: same dialect keeps it,
// cross-dialect translates literals, booleans and current-time functions and drops anything
// else with a warning. nextval() defaults and identity become identity/AUTO_INCREMENT instead.
Result<std::optional<std::string>> TargetDefault(const Column& c, Dialect target, Dialect source,
                                                 const DdlOptions& options = {});

// CREATE TABLE with every column (type, NOT NULL, default, identity or AUTO_INCREMENT,
// generated expression when same-dialect) and the primary key. Enum and set columns going to
// PostgreSQL get an inline CHECK constraint listing their labels.
Result<std::string> CreateTableSql(const TableSchema& t, Dialect target, Dialect source,
                                   const DdlOptions& options = {});

// Statements to run before CreateTableSql on a PostgreSQL target: CREATE TYPE ... AS ENUM for
// the enum types the columns use (PostgreSQL -> PostgreSQL; the types keep their source names,
// unqualified ones land in the first schema of the writer's search_path), and CREATE SEQUENCE
// for unsigned-bigint AUTO_INCREMENT columns kept as numeric(20,0). Empty for MySQL targets.
Result<std::vector<std::string>> PrepareTableSql(const TableSchema& t, Dialect target,
                                                 Dialect source, const DdlOptions& options = {});

// Statements to run after CreateTableSql on a PostgreSQL target: ALTER SEQUENCE ... OWNED BY
// for the sequences of PrepareTableSql, COMMENT ON TABLE / COLUMN. Empty for MySQL targets,
// which get comments inline.
Result<std::vector<std::string>> FinishTableSql(const TableSchema& t, Dialect target,
                                                Dialect source, const DdlOptions& options = {});

// Moves each identity (or sequence-backed) column's sequence past the loaded rows (PostgreSQL
// targets; fails clearly when the largest value is beyond bigint). MySQL's AUTO_INCREMENT
// follows explicit inserts by itself: empty.
Result<std::vector<std::string>> SyncAutoIncrementSql(const TableSchema& t, Dialect target,
                                                      Dialect source,
                                                      const DdlOptions& options = {});

// CREATE [UNIQUE] INDEX for one of t.indexes. MySQL TEXT/BLOB key parts get a prefix of 255
// characters (fewer when several share the 3072-byte key limit). Index names moving from MySQL
// (per table) to PostgreSQL (per schema) are prefixed with the table name. Skipped with a
// warning (empty result) when the target cannot express it: FULLTEXT into PostgreSQL, GIN/GiST
// into MySQL, expression parts across dialects, unique partial indexes into MySQL.
Result<std::string> CreateIndexSql(const TableSchema& t, const Index& index, Dialect target,
                                   Dialect source, const DdlOptions& options = {});

// ALTER TABLE ... ADD PRIMARY KEY (...) for a table created with defer_primary_key; empty when
// the table has no primary key.
Result<std::string> AddPrimaryKeySql(const TableSchema& t, Dialect target,
                                     const DdlOptions& options = {});

// ALTER TABLE ... ADD CONSTRAINT ... FOREIGN KEY ... REFERENCES ... ON DELETE/UPDATE.
Result<std::string> AddForeignKeySql(const TableSchema& t, const ForeignKey& fk, Dialect target,
                                     Dialect source, const DdlOptions& options = {});

// ALTER TABLE ... ADD CONSTRAINT ... CHECK (...). Same dialect only unless
// options.cross_dialect_checks; MariaDB's json_valid() checks on JSON columns are dropped
// silently (the target's JSON type validates).
Result<std::string> AddCheckSql(const TableSchema& t, const CheckConstraint& check, Dialect target,
                                Dialect source, const DdlOptions& options = {});

// DROP TABLE IF EXISTS.
Result<std::string> DropTableSql(const TableSchema& t, Dialect target,
                                 const DdlOptions& options = {});

}  // namespace dbs

// What becomes of the schema objects of a run (core/schema.h, SchemaObject) and of its tables'
// partitioning and inheritance in a target: decided before anything is written (the plan), and
// carried out by the writer that swaps the run in (the run report records what happened).
//
// The rules (docs/type-mapping.md, "Schema objects"):
//  - Same engine: every object is migrated, in its target schema (the table's), with the
//    target schema current so its unqualified names resolve there. Exceptions: a view that
//    reads a relation the stream does not copy; objects the source could not describe; in CDC
//    modes a MySQL trigger (it would fire on every change the stream applies and MySQL cannot
//    switch it off: reported with its definition) and, on PostgreSQL, triggers are created
//    disabled and MySQL events are created disabled (enable them when the target takes over).
//  - Across engines: tables, keys, indexes, foreign keys, checks and generator values move;
//    views, routines, triggers, events, policies and rules are not translated (their SQL
//    differs in ways a rewrite cannot make exact) and are listed with their definitions;
//    partitioned tables become plain tables; inheritance children become separate tables.
//  - Domains: columns get the base type (every direction); extensions: PostgreSQL to
//    PostgreSQL only (the sink checks and creates them before any table, see
//    Sink::PrepareRun).
//  - With structure.objects off, every object is reported as skipped.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "config/connection.h"
#include "config/stream_config.h"
#include "core/result.h"
#include "core/schema.h"

namespace dbs {

struct ObjectOutcome {
  ObjectKind kind = ObjectKind::kView;
  std::string source;  // "schema.name" (triggers, policies, rules: "schema.table.name")
  std::string target;  // where it is (to be) created; empty when it is not
  bool migrated = false;
  // Not migrated: why, and what to do instead. Migrated: a note when it differs from the
  // source (created disabled, ...), else empty.
  std::string reason;
  std::string definition;  // not migrated: the source's definition, to adapt by hand
  friend bool operator==(const ObjectOutcome&, const ObjectOutcome&) = default;
};

nlohmann::json ToJson(const ObjectOutcome& o);
Result<ObjectOutcome> OutcomeFromJson(const nlohmann::json& j);
nlohmann::json ToJson(const std::vector<ObjectOutcome>& outcomes);
Result<std::vector<ObjectOutcome>> OutcomesFromJson(const nlohmann::json& j);

struct ObjectPlanInput {
  const std::vector<SchemaObject>* objects = nullptr;
  const std::vector<TableSchema>* tables = nullptr;  // the run's tables (source names)
  Engine source = Engine::kPostgres;
  Engine target = Engine::kPostgres;
  StreamMode mode = StreamMode::kLoad;
  bool enabled = true;  // structure.objects
  // The target schema / database of a source schema.
  std::function<std::string(const std::string& source_schema)> target_schema;
};

// One outcome per object, then one per partitioned or inheriting table, in creation order for
// the migrated ones: sequences, routines, views and materialized views, inheritance, rules,
// policies, triggers, events (extensions and domains, decided before the tables, first).
std::vector<ObjectOutcome> PlanObjects(const ObjectPlanInput& in);

// The object an outcome stands for (nullptr for partitioning and inheritance outcomes).
const SchemaObject* ObjectOf(const ObjectOutcome& outcome, const std::vector<SchemaObject>& all);

}  // namespace dbs

// The plan of a run, as `dbstreams plan`, POST /api/v1/streams/{id}/plan and the end of every
// run report it: per table the target, the action on it, the DDL and every lossy decision,
// and the row estimate; per schema object what becomes of it (sinks/objects_plan.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"
#include "core/schema.h"
#include "sinks/sink.h"

namespace dbs {

struct TablePlanEntry {
  std::string source;  // "schema.table" at the source
  std::optional<uint64_t> estimated_rows;
  TableDdlPlan ddl;
};

struct RunPlan {
  std::vector<TablePlanEntry> tables;
  std::vector<ObjectOutcome> objects;
};

// Asks `sink` (opened with the run's options) about every table and object; reads the target,
// writes nothing. `tables` carry their target names (as the writers see them).
Result<RunPlan> PlanRun(Sink* sink, const std::vector<TableSchema>& tables,
                        const std::vector<std::string>& source_names,
                        const std::vector<SchemaObject>& objects);

nlohmann::json ToJson(const RunPlan& plan);
Result<RunPlan> RunPlanFromJson(const nlohmann::json& j);

// For people: a few lines per table (statements only with `ddl`), then the objects that are not
// migrated (with the reason) and those that are.
std::string FormatPlan(const RunPlan& plan, bool ddl);

}  // namespace dbs

// The Sink base class's default methods and PlannedAction: in dbs_sink_cdc, the library every
// sink links, so the engine sinks need not link dbs_sinks (which links them).
#include "sinks/sink.h"

namespace dbs {

std::string PlannedAction(SchemaPolicy policy, WriteMode mode, bool exists, bool* create) {
  *create = !exists;
  std::string write;
  switch (mode) {
    case WriteMode::kAppend:
      write = "append";
      break;
    case WriteMode::kTruncateAndLoad:
      write = "truncate and reload";
      break;
    case WriteMode::kUpsert:
      write = "upsert";
      break;
    case WriteMode::kFailIfNotEmpty:
      write = "write (fails if not empty)";
      break;
  }
  switch (policy) {
    case SchemaPolicy::kFailIfExists:
      return exists ? "fail: the table exists (schema policy fail_if_exists)" : "create";
    case SchemaPolicy::kCreateMissing:
      return exists ? write + " into the existing table" : "create";
    case SchemaPolicy::kDropAndRecreate:
      *create = true;
      return exists ? "replace" : "create";
    case SchemaPolicy::kValidateExisting:
      *create = false;
      return exists ? "validate, then " + write
                    : "fail: the table is missing (schema policy validate_existing)";
  }
  return "";
}

Result<TableDdlPlan> Sink::PlanTable(const TableSchema& source_table) {
  TableDdlPlan p;
  p.target = source_table.QualifiedName();
  p.action = "write";
  return p;
}

std::vector<ObjectOutcome> Sink::PlanObjects(const std::vector<TableSchema>& tables,
                                             const std::vector<SchemaObject>& objects) {
  (void)tables;
  std::vector<ObjectOutcome> out;
  for (const SchemaObject& o : objects) {
    ObjectOutcome r;
    r.kind = o.kind;
    r.source = o.table.empty() ? o.QualifiedName() : o.table + "." + o.name;
    r.reason = "not applicable: this target holds only the tables' rows";
    r.definition = o.definition;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace dbs

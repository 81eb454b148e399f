#include "sinks/run_plan.h"

#include <nlohmann/json.hpp>

namespace dbs {

using nlohmann::json;

Result<RunPlan> PlanRun(Sink* sink, const std::vector<TableSchema>& tables,
                        const std::vector<std::string>& source_names,
                        const std::vector<SchemaObject>& objects) {
  RunPlan plan;
  for (size_t i = 0; i < tables.size(); ++i) {
    TablePlanEntry e;
    e.source = i < source_names.size() ? source_names[i] : tables[i].QualifiedName();
    e.estimated_rows = tables[i].estimated_rows;
    auto p = sink->PlanTable(tables[i]);
    if (!p.ok()) return p.status().WithContext("planning table " + e.source);
    e.ddl = std::move(p).value();
    plan.tables.push_back(std::move(e));
  }
  plan.objects = sink->PlanObjects(tables, objects);
  return plan;
}

json ToJson(const RunPlan& plan) {
  json tables = json::array();
  for (const TablePlanEntry& t : plan.tables) {
    json e = {{"source", t.source},
              {"target", t.ddl.target},
              {"action", t.ddl.action},
              {"statements", t.ddl.statements},
              {"warnings", t.ddl.warnings}};
    if (t.estimated_rows) e["estimatedRows"] = *t.estimated_rows;
    tables.push_back(std::move(e));
  }
  return {{"tables", std::move(tables)}, {"objects", ToJson(plan.objects)}};
}

Result<RunPlan> RunPlanFromJson(const json& j) {
  if (!j.is_object() || !j.contains("tables") || !j["tables"].is_array()) {
    return Status::Corruption("a run plan lacks its tables");
  }
  RunPlan plan;
  for (const json& t : j["tables"]) {
    if (!t.is_object()) return Status::Corruption("a run plan's table is not an object");
    TablePlanEntry e;
    e.source = t.value("source", "");
    e.ddl.target = t.value("target", "");
    e.ddl.action = t.value("action", "");
    if (t.contains("statements") && t["statements"].is_array()) {
      for (const json& s : t["statements"]) {
        if (s.is_string()) e.ddl.statements.push_back(s.get<std::string>());
      }
    }
    if (t.contains("warnings") && t["warnings"].is_array()) {
      for (const json& s : t["warnings"]) {
        if (s.is_string()) e.ddl.warnings.push_back(s.get<std::string>());
      }
    }
    if (t.contains("estimatedRows") && t["estimatedRows"].is_number_unsigned()) {
      e.estimated_rows = t["estimatedRows"].get<uint64_t>();
    }
    plan.tables.push_back(std::move(e));
  }
  if (j.contains("objects")) {
    DBS_ASSIGN_OR_RETURN(plan.objects, OutcomesFromJson(j["objects"]));
  }
  return plan;
}

std::string FormatPlan(const RunPlan& plan, bool ddl) {
  std::string out;
  for (const TablePlanEntry& t : plan.tables) {
    out += t.source + " -> " + t.ddl.target + ": " + t.ddl.action;
    if (t.estimated_rows) out += ", about " + std::to_string(*t.estimated_rows) + " rows";
    out += "\n";
    for (const std::string& w : t.ddl.warnings) out += "  lossy or skipped: " + w + "\n";
    if (ddl && (t.ddl.action == "create" || t.ddl.action == "replace")) {
      for (const std::string& s : t.ddl.statements) out += "  " + s + ";\n";
    }
  }
  size_t migrated = 0;
  for (const ObjectOutcome& o : plan.objects) migrated += o.migrated ? 1 : 0;
  if (!plan.objects.empty()) {
    out += "schema objects: " + std::to_string(migrated) + " migrated, " +
           std::to_string(plan.objects.size() - migrated) + " not migrated\n";
  }
  for (const ObjectOutcome& o : plan.objects) {
    if (o.migrated) continue;
    out += "  NOT MIGRATED " + std::string(ObjectKindName(o.kind)) + " " + o.source + ": " +
           o.reason + "\n";
  }
  for (const ObjectOutcome& o : plan.objects) {
    if (!o.migrated) continue;
    out += "  migrated " + std::string(ObjectKindName(o.kind)) + " " + o.source + " -> " +
           o.target + (o.reason.empty() ? "" : " (" + o.reason + ")") + "\n";
  }
  return out;
}

}  // namespace dbs

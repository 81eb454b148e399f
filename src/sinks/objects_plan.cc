#include "sinks/objects_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace dbs {

using nlohmann::json;

namespace {

std::string SourceName(const SchemaObject& o) {
  if (!o.table.empty() && (o.kind == ObjectKind::kTrigger || o.kind == ObjectKind::kPolicy ||
                           o.kind == ObjectKind::kRule)) {
    return o.table + "." + o.name;
  }
  return o.QualifiedName();
}

int Order(ObjectKind k) {
  switch (k) {
    case ObjectKind::kExtension:
      return 0;
    case ObjectKind::kDomain:
      return 1;
    case ObjectKind::kPartitioning:
      return 2;
    case ObjectKind::kSequence:
      return 3;
    case ObjectKind::kFunction:
    case ObjectKind::kProcedure:
    case ObjectKind::kAggregate:
      return 4;
    case ObjectKind::kView:
      return 5;
    case ObjectKind::kMaterializedView:
      return 6;
    case ObjectKind::kInheritance:
      return 7;
    case ObjectKind::kRule:
      return 8;
    case ObjectKind::kPolicy:
      return 9;
    case ObjectKind::kTrigger:
      return 10;
    case ObjectKind::kEvent:
      return 11;
  }
  return 12;
}

std::string EngineWord(Engine e) { return e == Engine::kPostgres ? "PostgreSQL" : "MySQL"; }

std::string Plural(ObjectKind k) {
  std::string s(ObjectKindName(k));
  if (k == ObjectKind::kPolicy) return "policies";
  return s + "s";
}

}  // namespace

json ToJson(const ObjectOutcome& o) {
  json j = {{"kind", ObjectKindName(o.kind)}, {"source", o.source}, {"migrated", o.migrated}};
  if (!o.target.empty()) j["target"] = o.target;
  if (!o.reason.empty()) j["reason"] = o.reason;
  if (!o.definition.empty()) j["definition"] = o.definition;
  return j;
}

Result<ObjectOutcome> OutcomeFromJson(const json& j) {
  if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string() || !j.contains("source") ||
      !j["source"].is_string()) {
    return Status::Corruption("an object outcome lacks kind or source");
  }
  ObjectOutcome o;
  const std::string kind = j["kind"].get<std::string>();
  bool known = false;
  for (int k = 0; k <= static_cast<int>(ObjectKind::kInheritance); ++k) {
    if (ObjectKindName(static_cast<ObjectKind>(k)) == kind) {
      o.kind = static_cast<ObjectKind>(k);
      known = true;
    }
  }
  if (!known) return Status::Corruption("unknown object kind '" + kind + "'");
  o.source = j["source"].get<std::string>();
  o.migrated = j.value("migrated", false);
  o.target = j.value("target", "");
  o.reason = j.value("reason", "");
  o.definition = j.value("definition", "");
  return o;
}

json ToJson(const std::vector<ObjectOutcome>& outcomes) {
  json a = json::array();
  for (const ObjectOutcome& o : outcomes) a.push_back(ToJson(o));
  return a;
}

Result<std::vector<ObjectOutcome>> OutcomesFromJson(const json& j) {
  if (!j.is_array()) return Status::Corruption("object outcomes are not a list");
  std::vector<ObjectOutcome> out;
  for (const json& e : j) {
    DBS_ASSIGN_OR_RETURN(ObjectOutcome o, OutcomeFromJson(e));
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<ObjectOutcome> PlanObjects(const ObjectPlanInput& in) {
  std::vector<ObjectOutcome> out;
  const bool same = in.source == in.target;
  const bool cdc = in.mode != StreamMode::kLoad;
  std::set<std::string> copied;  // source "schema.name" of the run's tables
  if (in.tables != nullptr) {
    for (const TableSchema& t : *in.tables) copied.insert(t.schema + "." + t.name);
  }
  auto target_name = [&](const std::string& schema, const std::string& name) {
    const std::string ts = in.target_schema ? in.target_schema(schema) : schema;
    return ts.empty() ? name : ts + "." + name;
  };
  std::set<std::string> views;  // views that will be created (a view may read another)
  if (in.objects != nullptr && same && in.enabled) {
    for (const SchemaObject& o : *in.objects) {
      if ((o.kind == ObjectKind::kView || o.kind == ObjectKind::kMaterializedView) &&
          o.not_describable.empty()) {
        views.insert(o.QualifiedName());
      }
    }
  }
  // Views reading a view that is itself not created are not created either: iterate.
  std::map<std::string, std::string> blocked;  // view -> the relation it misses
  for (bool changed = true; changed;) {
    changed = false;
    if (in.objects == nullptr) break;
    for (const SchemaObject& o : *in.objects) {
      if (!views.count(o.QualifiedName())) continue;
      for (const std::string& r : o.reads) {
        const std::string schema = r.substr(0, r.find('.'));
        if (schema == "pg_catalog" || schema == "information_schema") continue;
        if (copied.count(r) || views.count(r)) continue;
        blocked[o.QualifiedName()] = r;
        views.erase(o.QualifiedName());
        changed = true;
        break;
      }
    }
  }

  if (in.objects != nullptr) {
    for (const SchemaObject& o : *in.objects) {
      ObjectOutcome r;
      r.kind = o.kind;
      r.source = SourceName(o);
      auto refuse = [&](std::string why) {
        r.migrated = false;
        r.reason = std::move(why);
        r.definition = o.definition;
      };
      if (!in.enabled) {
        refuse("skipped: structure.objects is off");
      } else if (!o.not_describable.empty()) {
        refuse("not migrated: " + o.not_describable);
      } else if (o.kind == ObjectKind::kDomain) {
        std::string cols;
        for (const std::string& c : o.used_by) cols += (cols.empty() ? "" : ", ") + c;
        refuse("not migrated: the columns using it (" + cols +
               ") are created with its base type; its constraints are not carried");
      } else if (o.kind == ObjectKind::kExtension) {
        if (!same) {
          std::string cols;
          for (const std::string& c : o.used_by) cols += (cols.empty() ? "" : ", ") + c;
          refuse(std::string("not applicable: ") + EngineWord(in.target) + " has no extensions" +
                 (cols.empty()
                      ? ""
                      : "; the columns using its types (" + cols + ") get the mapped types"));
        } else {
          r.migrated = true;
          r.target = o.name;
          r.reason = o.used_by.empty() ? "created when missing (no selected column needs it)"
                                       : "needed by the tables: checked, and created when "
                                         "missing, before any table";
        }
      } else if (!same) {
        refuse("not migrated: " + Plural(o.kind) + " are not translated from " +
               EngineWord(in.source) + " to " + EngineWord(in.target) +
               " (their SQL differs); recreate it on the target from its definition");
      } else if ((o.kind == ObjectKind::kView || o.kind == ObjectKind::kMaterializedView) &&
                 blocked.count(o.QualifiedName())) {
        refuse("not migrated: it reads " + blocked[o.QualifiedName()] +
               ", which this stream does not copy");
      } else if (o.kind == ObjectKind::kTrigger && cdc && in.target == Engine::kMysql) {
        refuse(
            "not migrated: in a CDC stream it would fire on every change the stream applies "
            "(MySQL cannot switch triggers off); create it when the target takes over");
      } else {
        r.migrated = true;
        r.target = o.table.empty() ? target_name(o.schema, o.name)
                                   : target_name(o.table.substr(0, o.table.find('.')),
                                                 o.table.substr(o.table.find('.') + 1)) +
                                         "." + o.name;
        if (o.kind == ObjectKind::kTrigger && cdc) {
          r.reason =
              "created disabled: it would fire on every change the stream applies; enable it "
              "(ALTER TABLE ... ENABLE TRIGGER) when the target takes over";
        } else if (o.kind == ObjectKind::kEvent && cdc) {
          r.reason =
              "created disabled: enable it (ALTER EVENT ... ENABLE) when the target "
              "takes over";
        }
      }
      out.push_back(std::move(r));
    }
  }
  if (in.tables != nullptr) {
    for (const TableSchema& t : *in.tables) {
      const std::string name = t.schema + "." + t.name;
      if (!t.partition_by.empty()) {
        ObjectOutcome r;
        r.kind = ObjectKind::kPartitioning;
        r.source = name;
        if (same) {
          r.migrated = true;
          r.target = target_name(t.schema, t.name);
          r.reason = in.target == Engine::kPostgres
                         ? "partitioned by " + t.partition_by + ", " +
                               std::to_string(t.partitions.size()) + " partition(s)"
                         : "partitioned as at the source";
        } else {
          r.reason =
              "not migrated: created as a plain table (partitioning is not translated "
              "from " +
              EngineWord(in.source) + " to " + EngineWord(in.target) + ")";
          r.definition = t.partition_by;
        }
        out.push_back(std::move(r));
      }
      for (const std::string& parent : t.inherits) {
        ObjectOutcome r;
        r.kind = ObjectKind::kInheritance;
        r.source = name + " inherits " + parent;
        if (!same) {
          r.reason = "not migrated: " + EngineWord(in.target) +
                     " has no table inheritance; both are separate tables and " + parent +
                     " holds only its own rows";
        } else if (!copied.count(parent)) {
          r.reason = "not migrated: the parent " + parent + " is not in this stream";
        } else {
          r.migrated = true;
          const size_t dot = parent.find('.');
          r.target = target_name(t.schema, t.name) + " inherits " +
                     target_name(parent.substr(0, dot), parent.substr(dot + 1));
        }
        out.push_back(std::move(r));
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const ObjectOutcome& a, const ObjectOutcome& b) {
    return Order(a.kind) < Order(b.kind);
  });
  return out;
}

const SchemaObject* ObjectOf(const ObjectOutcome& outcome, const std::vector<SchemaObject>& all) {
  for (const SchemaObject& o : all) {
    if (o.kind == outcome.kind && SourceName(o) == outcome.source) return &o;
  }
  return nullptr;
}

}  // namespace dbs

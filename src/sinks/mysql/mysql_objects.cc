#include "sinks/mysql/mysql_objects.h"

namespace dbs::mysql {

namespace {

const std::string& Str(const TextRow& row, size_t i) {
  static const std::string kEmpty;
  return i < row.size() && row[i] ? *row[i] : kEmpty;
}

std::string Kind(ObjectKind k) { return std::string(ObjectKindName(k)); }

Result<bool> Exists(MysqlConnection* conn, const SchemaObject& o, const std::string& db) {
  const std::string d = conn->Literal(db), n = conn->Literal(o.name);
  std::string sql;
  switch (o.kind) {
    case ObjectKind::kView:
      sql = "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = " + d +
            " AND TABLE_NAME = " + n;
      break;
    case ObjectKind::kSequence:
      sql = "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = " + d +
            " AND TABLE_NAME = " + n;
      break;
    case ObjectKind::kFunction:
    case ObjectKind::kProcedure:
      sql = "SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = " + d +
            " AND ROUTINE_NAME = " + n + " AND ROUTINE_TYPE = " +
            (o.kind == ObjectKind::kFunction ? "'FUNCTION'" : "'PROCEDURE'");
      break;
    case ObjectKind::kTrigger:
      sql = "SELECT 1 FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = " + d +
            " AND TRIGGER_NAME = " + n;
      break;
    case ObjectKind::kEvent:
      sql = "SELECT 1 FROM information_schema.EVENTS WHERE EVENT_SCHEMA = " + d +
            " AND EVENT_NAME = " + n;
      break;
    default:
      return false;
  }
  DBS_ASSIGN_OR_RETURN(auto rows, conn->Query(sql, "looking up " + Kind(o.kind) + " " + o.name));
  return !rows.empty();
}

std::string DropSql(const SchemaObject& o, const std::string& db) {
  const std::string name = QuoteQualified(db, o.name);
  switch (o.kind) {
    case ObjectKind::kView:
      return "DROP VIEW IF EXISTS " + name;
    case ObjectKind::kSequence:
      return "DROP SEQUENCE IF EXISTS " + name;
    case ObjectKind::kFunction:
      return "DROP FUNCTION IF EXISTS " + name;
    case ObjectKind::kProcedure:
      return "DROP PROCEDURE IF EXISTS " + name;
    case ObjectKind::kTrigger:
      return "DROP TRIGGER IF EXISTS " + name;
    case ObjectKind::kEvent:
      return "DROP EVENT IF EXISTS " + name;
    default:
      return "";
  }
}

std::vector<std::string> CreateSql(const SchemaObject& o, const std::string& db,
                                   const CreateObjectsOptions& options) {
  std::vector<std::string> out;
  if (o.kind == ObjectKind::kSequence && o.sequence) {
    const SequenceInfo& q = *o.sequence;
    const std::string name = QuoteQualified(db, o.name);
    out.push_back("CREATE SEQUENCE " + name + " START WITH " + std::to_string(q.start) +
                  " MINVALUE " + std::to_string(q.min) + " MAXVALUE " + std::to_string(q.max) +
                  " INCREMENT BY " + std::to_string(q.increment) + " CACHE " +
                  std::to_string(q.cache) + (q.cycle ? " CYCLE" : " NOCYCLE"));
    out.push_back("SELECT SETVAL(" + name + ", " + std::to_string(q.last_value) + ", 0)");
    return out;
  }
  out.push_back(o.definition);
  if (o.kind == ObjectKind::kEvent && !o.disabled && options.mode != StreamMode::kLoad) {
    out.push_back("ALTER EVENT " + QuoteQualified(db, o.name) + " DISABLE");
  }
  return out;
}

// Creates one object. *missing_table: refused because a table or view does not exist (yet).
Status CreateOne(MysqlConnection* conn, const SchemaObject& o, const std::string& db,
                 const CreateObjectsOptions& options, ObjectOutcome* out, bool* missing_table) {
  *missing_table = false;
  const std::string what = Kind(o.kind) + " " + out->source;
  DBS_ASSIGN_OR_RETURN(bool exists, Exists(conn, o, db));
  if (exists && !options.replace) {
    out->migrated = false;
    out->reason =
        "not migrated: the target already has one of that name; left as it is (schema policy "
        "drop_and_recreate replaces it)";
    out->definition = o.definition;
    return Status::Ok();
  }
  Status s = conn->Exec("USE " + QuoteName(db), "creating " + what);
  if (s.ok() && !o.sql_mode.empty()) {
    s = conn->Exec("SET SESSION sql_mode = " + conn->Literal(o.sql_mode), "creating " + what);
  }
  if (s.ok() && exists) s = conn->Exec(DropSql(o, db), "replacing " + what);
  if (s.ok()) {
    for (const std::string& sql : CreateSql(o, db, options)) {
      s = conn->Exec(sql, "creating " + what);
      if (!s.ok()) break;
    }
  }
  if (s.ok()) {
    if (options.created) return options.created(out->source);
    return Status::Ok();
  }
  if (s.retryable() || conn->broken()) return s;
  *missing_table = s.message().find("1146") != std::string::npos;
  out->migrated = false;
  out->reason = "not migrated: the target refused it: " + s.message();
  out->definition = o.definition;
  return Status::Ok();
}

}  // namespace

Result<std::vector<ObjectOutcome>> CreateObjects(MysqlConnection* conn,
                                                 std::vector<ObjectOutcome> planned,
                                                 const std::vector<SchemaObject>& objects,
                                                 const CreateObjectsOptions& options) {
  DBS_ASSIGN_OR_RETURN(auto saved, conn->Query("SELECT DATABASE(), @@SESSION.sql_mode",
                                               "reading the session settings"));
  std::vector<size_t> retry;
  auto create = [&](size_t i, bool* missing) -> Status {
    ObjectOutcome& out = planned[i];
    const SchemaObject* o = ObjectOf(out, objects);
    if (o == nullptr) {
      out.migrated = false;
      out.reason = "not migrated: its description was lost on the way";
      return Status::Ok();
    }
    const std::string db = options.target_database ? options.target_database(o->schema) : o->schema;
    return CreateOne(conn, *o, db, options, &out, missing);
  };
  Status s;
  for (size_t i = 0; i < planned.size() && s.ok(); ++i) {
    ObjectOutcome& out = planned[i];
    if (!out.migrated || out.kind == ObjectKind::kPartitioning ||
        out.kind == ObjectKind::kExtension || out.kind == ObjectKind::kInheritance) {
      continue;
    }
    if (options.done_before.count(out.source)) continue;
    bool missing = false;
    s = create(i, &missing);
    if (s.ok() && missing && out.kind == ObjectKind::kView) retry.push_back(i);
  }
  for (bool progress = true; s.ok() && progress && !retry.empty();) {
    progress = false;
    std::vector<size_t> still;
    for (size_t i : retry) {
      ObjectOutcome& out = planned[i];
      out.migrated = true;
      out.reason.clear();
      out.definition.clear();
      bool missing = false;
      s = create(i, &missing);
      if (!s.ok()) break;
      if (out.migrated) {
        progress = true;
      } else if (missing) {
        still.push_back(i);
      }
    }
    retry = std::move(still);
  }
  // The session as it was (a dropped default database stays unset).
  if (!saved.empty() && !conn->broken()) {
    if (!Str(saved[0], 0).empty()) {
      (void)conn->Exec("USE " + QuoteName(Str(saved[0], 0)), "restoring the session");
    }
    (void)conn->Exec("SET SESSION sql_mode = " + conn->Literal(Str(saved[0], 1)),
                     "restoring the session");
  }
  if (!s.ok()) return s;
  return planned;
}

}  // namespace dbs::mysql

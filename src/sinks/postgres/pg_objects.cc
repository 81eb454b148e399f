#include "sinks/postgres/pg_objects.h"

#include <map>

namespace dbs::pg {

namespace {

// One statement, extended protocol: the server refuses a second statement in `sql`.
Status One(PGconn* conn, const std::string& sql, const std::string& ctx) {
  return ExecParams(conn, sql, {}, ctx).status();
}

// "schema.name" -> {schema, name} (first dot).
std::pair<std::string, std::string> Split(const std::string& qualified) {
  const size_t dot = qualified.find('.');
  if (dot == std::string::npos) return {"", qualified};
  return {qualified.substr(0, dot), qualified.substr(dot + 1)};
}

// A routine's "name(args)" quoted: "name"(args).
std::string QuotedRoutine(const std::string& name_args) {
  const size_t paren = name_args.find('(');
  if (paren == std::string::npos) return QuoteIdent(name_args);
  return QuoteIdent(name_args.substr(0, paren)) + name_args.substr(paren);
}

bool IsMissingRelation(const Status& s) { return s.message().find("42P01") != std::string::npos; }

struct Target {
  std::string schema;  // where the object goes
  std::string table;   // triggers, policies, rules: its table, quoted and qualified
};

// Whether an object of this kind and name exists in `t.schema` (or on t.table).
Result<bool> Exists(PGconn* conn, const SchemaObject& o, const Target& t) {
  const std::string ctx = "looking up " + std::string(ObjectKindName(o.kind)) + " " + o.name;
  std::string sql;
  std::vector<std::optional<std::string>> params;
  switch (o.kind) {
    case ObjectKind::kView:
    case ObjectKind::kMaterializedView:
    case ObjectKind::kSequence:
      sql = "SELECT to_regclass($1) IS NOT NULL";
      params = {QualifiedName(t.schema, o.name)};
      break;
    case ObjectKind::kFunction:
    case ObjectKind::kProcedure:
    case ObjectKind::kAggregate:
      sql =
          "SELECT EXISTS (SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
          "WHERE n.nspname = $1 AND p.proname || '(' || "
          "pg_get_function_identity_arguments(p.oid) || ')' = $2)";
      params = {t.schema, o.name};
      break;
    case ObjectKind::kTrigger:
      sql =
          "SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND "
          "tgname = $2 AND NOT tgisinternal)";
      params = {t.table, o.name};
      break;
    case ObjectKind::kPolicy:
      sql =
          "SELECT EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = to_regclass($1) AND "
          "polname = $2)";
      params = {t.table, o.name};
      break;
    case ObjectKind::kRule:
      sql =
          "SELECT EXISTS (SELECT 1 FROM pg_rewrite WHERE ev_class = to_regclass($1) AND "
          "rulename = $2)";
      params = {t.table, o.name};
      break;
    default:
      return false;
  }
  DBS_ASSIGN_OR_RETURN(ResultPtr r, ExecParams(conn, sql, params, ctx));
  return Bool(r.get(), 0, 0);
}

std::string DropSql(const SchemaObject& o, const Target& t) {
  switch (o.kind) {
    case ObjectKind::kView:
      return "DROP VIEW IF EXISTS " + QualifiedName(t.schema, o.name);
    case ObjectKind::kMaterializedView:
      return "DROP MATERIALIZED VIEW IF EXISTS " + QualifiedName(t.schema, o.name);
    case ObjectKind::kSequence:
      return "DROP SEQUENCE IF EXISTS " + QualifiedName(t.schema, o.name);
    case ObjectKind::kFunction:
      return "DROP FUNCTION IF EXISTS " + QuoteIdent(t.schema) + "." + QuotedRoutine(o.name);
    case ObjectKind::kProcedure:
      return "DROP PROCEDURE IF EXISTS " + QuoteIdent(t.schema) + "." + QuotedRoutine(o.name);
    case ObjectKind::kAggregate:
      return "DROP AGGREGATE IF EXISTS " + QuoteIdent(t.schema) + "." + QuotedRoutine(o.name);
    case ObjectKind::kTrigger:
      return "DROP TRIGGER IF EXISTS " + QuoteIdent(o.name) + " ON " + t.table;
    case ObjectKind::kPolicy:
      return "DROP POLICY IF EXISTS " + QuoteIdent(o.name) + " ON " + t.table;
    case ObjectKind::kRule:
      return "DROP RULE IF EXISTS " + QuoteIdent(o.name) + " ON " + t.table;
    default:
      return "";
  }
}

std::string CommentSql(const SchemaObject& o, const Target& t) {
  if (o.comment.empty()) return "";
  std::string what;
  switch (o.kind) {
    case ObjectKind::kView:
      what = "VIEW " + QualifiedName(t.schema, o.name);
      break;
    case ObjectKind::kMaterializedView:
      what = "MATERIALIZED VIEW " + QualifiedName(t.schema, o.name);
      break;
    case ObjectKind::kSequence:
      what = "SEQUENCE " + QualifiedName(t.schema, o.name);
      break;
    case ObjectKind::kFunction:
      what = "FUNCTION " + QuoteIdent(t.schema) + "." + QuotedRoutine(o.name);
      break;
    case ObjectKind::kProcedure:
      what = "PROCEDURE " + QuoteIdent(t.schema) + "." + QuotedRoutine(o.name);
      break;
    case ObjectKind::kAggregate:
      what = "AGGREGATE " + QuoteIdent(t.schema) + "." + QuotedRoutine(o.name);
      break;
    case ObjectKind::kTrigger:
      what = "TRIGGER " + QuoteIdent(o.name) + " ON " + t.table;
      break;
    default:
      return "";
  }
  return "COMMENT ON " + what + " IS " + QuoteLiteral(o.comment);
}

// The statements that make `o` in the target, in order (one statement each).
std::vector<std::string> CreateSql(const SchemaObject& o, const Target& t,
                                   const CreateObjectsOptions& options) {
  std::vector<std::string> out;
  if (o.kind == ObjectKind::kSequence && o.sequence) {
    const SequenceInfo& q = *o.sequence;
    const std::string name = QualifiedName(t.schema, o.name);
    out.push_back("CREATE SEQUENCE " + name + " AS " + q.data_type + " INCREMENT BY " +
                  std::to_string(q.increment) + " MINVALUE " + std::to_string(q.min) +
                  " MAXVALUE " + std::to_string(q.max) + " START WITH " + std::to_string(q.start) +
                  " CACHE " + std::to_string(q.cache) + (q.cycle ? " CYCLE" : " NO CYCLE"));
    out.push_back("SELECT setval(" + QuoteLiteral(name) + ", " + std::to_string(q.last_value) +
                  ", " + (q.is_called ? "true" : "false") + ")");
  } else {
    if (o.kind == ObjectKind::kPolicy) {
      if (o.row_security) out.push_back("ALTER TABLE " + t.table + " ENABLE ROW LEVEL SECURITY");
      if (o.force_row_security) {
        out.push_back("ALTER TABLE " + t.table + " FORCE ROW LEVEL SECURITY");
      }
    }
    out.push_back(o.definition);
  }
  if (std::string c = CommentSql(o, t); !c.empty()) out.push_back(std::move(c));
  if (o.kind == ObjectKind::kTrigger && (o.disabled || options.mode != StreamMode::kLoad)) {
    out.push_back("ALTER TABLE " + t.table + " DISABLE TRIGGER " + QuoteIdent(o.name));
  }
  return out;
}

// Creates one object under a savepoint. *outcome is updated when it is not created.
// *missing_relation: the target refused it because a relation does not exist (yet).
Status CreateOne(PGconn* conn, const SchemaObject& o, const Target& t,
                 const CreateObjectsOptions& options, ObjectOutcome* outcome,
                 bool* missing_relation) {
  *missing_relation = false;
  const std::string what = std::string(ObjectKindName(o.kind)) + " " + outcome->source;
  DBS_RETURN_IF_ERROR(One(conn, "SAVEPOINT dbs_object", "creating " + what));
  Status s = One(conn,
                 "SELECT set_config('search_path', " + QuoteLiteral(QuoteIdent(t.schema)) +
                     " || ', public', true)",
                 "setting the search path for " + what);
  if (s.ok()) {
    auto exists = Exists(conn, o, t);
    s = exists.status();
    if (s.ok() && *exists) {
      if (!options.replace) {
        DBS_RETURN_IF_ERROR(One(conn, "ROLLBACK TO SAVEPOINT dbs_object", "creating " + what));
        outcome->migrated = false;
        outcome->reason =
            "not migrated: the target already has one of that name; left as it is (schema "
            "policy drop_and_recreate replaces it)";
        outcome->definition = o.definition;
        return Status::Ok();
      }
      s = One(conn, DropSql(o, t), "replacing " + what);
    }
  }
  if (s.ok()) {
    for (const std::string& sql : CreateSql(o, t, options)) {
      s = One(conn, sql, "creating " + what);
      if (!s.ok()) break;
    }
  }
  if (s.ok()) return One(conn, "RELEASE SAVEPOINT dbs_object", "creating " + what);
  if (s.retryable()) return s;
  DBS_RETURN_IF_ERROR(One(conn, "ROLLBACK TO SAVEPOINT dbs_object", "creating " + what));
  *missing_relation = IsMissingRelation(s);
  outcome->migrated = false;
  outcome->reason = "not migrated: the target refused it: " + s.message();
  outcome->definition = o.definition;
  return Status::Ok();
}

}  // namespace

Result<std::vector<ObjectOutcome>> CreateObjects(PGconn* conn, std::vector<ObjectOutcome> planned,
                                                 const std::vector<SchemaObject>& objects,
                                                 const CreateObjectsOptions& options) {
  DBS_RETURN_IF_ERROR(One(conn, "SET LOCAL check_function_bodies = off", "creating objects"));
  std::vector<size_t> views;  // indexes of views refused for a missing relation: retried
  for (size_t i = 0; i < planned.size(); ++i) {
    ObjectOutcome& out = planned[i];
    if (!out.migrated) continue;
    if (out.kind == ObjectKind::kPartitioning) continue;  // made with the table
    if (out.kind == ObjectKind::kExtension) {
      DBS_ASSIGN_OR_RETURN(
          ResultPtr r, ExecParams(conn, "SELECT extversion FROM pg_extension WHERE extname = $1",
                                  {out.source.substr(out.source.find('.') + 1)},
                                  "looking up extension " + out.source));
      if (PQntuples(r.get()) == 0) {
        out.migrated = false;
        out.reason =
            "not migrated: the target has no such extension and it could not be created "
            "(CREATE EXTENSION needs a role allowed to create it, and the extension installed "
            "on the target server)";
      } else {
        out.reason = "in the target (version " + std::string(Text(r.get(), 0, 0)) + ")";
      }
      continue;
    }
    if (out.kind == ObjectKind::kInheritance) {
      const size_t at = out.target.find(" inherits ");
      auto [cs, cn] = Split(out.target.substr(0, at));
      auto [ps, pn] = Split(out.target.substr(at + 10));
      DBS_RETURN_IF_ERROR(One(conn, "SAVEPOINT dbs_object", "setting up inheritance"));
      Status s =
          One(conn, "ALTER TABLE " + QualifiedName(cs, cn) + " INHERIT " + QualifiedName(ps, pn),
              "setting up inheritance " + out.target);
      if (s.ok()) {
        DBS_RETURN_IF_ERROR(One(conn, "RELEASE SAVEPOINT dbs_object", "setting up inheritance"));
      } else {
        if (s.retryable()) return s;
        DBS_RETURN_IF_ERROR(
            One(conn, "ROLLBACK TO SAVEPOINT dbs_object", "setting up inheritance"));
        out.migrated = false;
        out.reason = "not migrated: the target refused it: " + s.message();
      }
      continue;
    }
    const SchemaObject* o = ObjectOf(out, objects);
    if (o == nullptr) {
      out.migrated = false;
      out.reason = "not migrated: its description was lost on the way";
      continue;
    }
    Target t;
    t.schema = options.target_schema ? options.target_schema(o->schema) : o->schema;
    if (!o->table.empty()) {
      auto [ts, tn] = Split(o->table);
      t.schema = options.target_schema ? options.target_schema(ts) : ts;
      t.table = QualifiedName(t.schema, tn);
    }
    bool missing = false;
    DBS_RETURN_IF_ERROR(CreateOne(conn, *o, t, options, &out, &missing));
    if (missing && (o->kind == ObjectKind::kView || o->kind == ObjectKind::kMaterializedView)) {
      views.push_back(i);
    }
  }
  // Views that read views created after them: again, while that helps.
  for (bool progress = true; progress && !views.empty();) {
    progress = false;
    std::vector<size_t> still;
    for (size_t i : views) {
      ObjectOutcome& out = planned[i];
      const SchemaObject* o = ObjectOf(out, objects);
      Target t;
      t.schema = options.target_schema ? options.target_schema(o->schema) : o->schema;
      out.migrated = true;
      out.reason.clear();
      out.definition.clear();
      bool missing = false;
      DBS_RETURN_IF_ERROR(CreateOne(conn, *o, t, options, &out, &missing));
      if (out.migrated) {
        progress = true;
      } else if (missing) {
        still.push_back(i);
      }
    }
    views = std::move(still);
  }
  return planned;
}

Status EnsureExtensions(PGconn* conn, const std::vector<SchemaObject>& objects,
                        std::vector<std::string>* created) {
  for (const SchemaObject& o : objects) {
    if (o.kind != ObjectKind::kExtension) continue;
    const std::string ctx = "checking extension " + o.name + " in the target";
    DBS_ASSIGN_OR_RETURN(
        ResultPtr r, ExecParams(conn,
                                "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = $1), "
                                "EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = $1), "
                                "to_regnamespace($2) IS NOT NULL",
                                {o.name, o.schema}, ctx));
    if (Bool(r.get(), 0, 0)) continue;
    Status s;
    if (!Bool(r.get(), 0, 1)) {
      s = Status::NotFound("the target server does not have it installed");
    } else {
      s = Command(conn,
                  "BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('dbstreams/bookkeeping', "
                  "0))",
                  ctx);
      if (s.ok()) {
        s = One(conn,
                "CREATE EXTENSION IF NOT EXISTS " + QuoteIdent(o.name) +
                    (Bool(r.get(), 0, 2) ? " SCHEMA " + QuoteIdent(o.schema) : std::string()),
                "creating extension " + o.name);
      }
      if (s.ok()) s = Command(conn, "COMMIT", ctx);
      if (!s.ok()) RollbackQuietly(conn);
    }
    if (s.ok()) {
      created->push_back(o.name);
      continue;
    }
    if (s.retryable()) return s;
    if (o.used_by.empty()) continue;  // reported at the swap
    std::string cols;
    for (const std::string& c : o.used_by) cols += (cols.empty() ? "" : ", ") + c;
    return Status::FailedPrecondition(
               "the target database has no extension " + o.name + ", which column(s) " + cols +
               " need, and it could not be created (" + s.message() +
               "): create it in the target (CREATE EXTENSION " + o.name +
               ", as a role allowed to), or leave those tables out of the stream")
        .WithRetry(Retry::kFail);
  }
  return Status::Ok();
}

}  // namespace dbs::pg

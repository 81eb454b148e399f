#include "sources/postgres/objects.h"

#include <cstdio>
#include <set>
#include <string>

namespace dbs::pg {

namespace {

// Not an object of an extension (those come with CREATE EXTENSION).
constexpr const char* kNotExtensionMember =
    " NOT EXISTS (SELECT 1 FROM pg_depend x WHERE x.classid = %s AND x.objid = %s "
    "AND x.deptype = 'e') ";

std::string NotExtensionMember(const std::string& classid, const std::string& objid) {
  char buf[256];
  std::snprintf(buf, sizeof buf, kNotExtensionMember, classid.c_str(), objid.c_str());
  return buf;
}

// Sets search_path to one schema for as long as it lives, so that definitions printed by
// pg_get_viewdef and friends name that schema's objects unqualified; restores the old path.
class SearchPath {
 public:
  explicit SearchPath(PGconn* conn) : conn_(conn) {}
  ~SearchPath() {
    if (!saved_.empty()) {
      (void)ExecParams(conn_, "SELECT set_config('search_path', $1, false)", {saved_},
                       "restoring the search path");
    }
  }
  Status Set(const std::string& schema) {
    if (schema == current_) return Status::Ok();
    if (saved_.empty()) {
      DBS_ASSIGN_OR_RETURN(ResultPtr r,
                           Exec(conn_, "SELECT current_setting('search_path')", "search path"));
      saved_ = Text(r.get(), 0, 0);
      if (saved_.empty()) saved_ = "\"$user\", public";
    }
    DBS_RETURN_IF_ERROR(ExecParams(conn_, "SELECT set_config('search_path', $1, false)",
                                   {QuoteIdent(schema)}, "setting the search path")
                            .status());
    current_ = schema;
    return Status::Ok();
  }

 private:
  PGconn* conn_;
  std::string saved_;
  std::string current_;
};

// The strings of a JSON array of strings as array_to_json(...)::text prints it (names only: no
// escapes to decode beyond what names of relations and columns hold).
std::vector<std::string> JsonNames(const std::string& text) {
  std::vector<std::string> out;
  for (size_t p = text.find('"'); p != std::string::npos; p = text.find('"', p + 1)) {
    const size_t q = text.find('"', p + 1);
    if (q == std::string::npos) break;
    out.push_back(text.substr(p + 1, q - p - 1));
    p = q;
  }
  return out;
}

std::string StripSemicolon(std::string s) {
  while (!s.empty() && (s.back() == ';' || s.back() == ' ' || s.back() == '\n')) s.pop_back();
  return s;
}

Status Extensions(PGconn* conn, const std::string& tables, std::vector<SchemaObject>* out) {
  static const char kSql[] =
      "SELECT e.extname, e.extversion, n.nspname, "
      "  array_to_json(ARRAY(SELECT DISTINCT cn.nspname || '.' || c.relname || '.' || a.attname "
      "    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
      "    JOIN pg_namespace cn ON cn.oid = c.relnamespace "
      "    JOIN pg_type t ON t.oid = a.atttypid "
      "    JOIN pg_depend d ON d.classid = 'pg_type'::regclass AND d.deptype = 'e' "
      "      AND d.refobjid = e.oid AND d.objid IN (t.oid, t.typelem, t.typbasetype) "
      "    WHERE a.attrelid = ANY(ARRAY(SELECT to_regclass(u) FROM unnest($1::text[]) u)) "
      "      AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1))::text "
      "FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
      "WHERE e.extname <> 'plpgsql' ORDER BY e.extname";
  DBS_ASSIGN_OR_RETURN(ResultPtr r, ExecParams(conn, kSql, {tables}, "listing extensions"));
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    SchemaObject o;
    o.kind = ObjectKind::kExtension;
    o.name = Text(r.get(), i, 0);
    o.version = Text(r.get(), i, 1);
    o.schema = Text(r.get(), i, 2);
    o.used_by = JsonNames(std::string(Text(r.get(), i, 3)));
    out->push_back(std::move(o));
  }
  return Status::Ok();
}

Status Views(PGconn* conn, const std::string& schemas, SearchPath* path,
             std::vector<SchemaObject>* out) {
  const std::string sql =
      "SELECT n.nspname, c.relname, c.relkind, c.oid, coalesce(obj_description(c.oid, "
      "'pg_class'), ''), quote_ident(c.relname), c.relispopulated, "
      "  coalesce((SELECT string_agg(o, ', ') FROM unnest(c.reloptions) o "
      "            WHERE o NOT LIKE 'check\\_option=%'), ''), "
      "  coalesce((SELECT upper(substr(o, 14)) FROM unnest(c.reloptions) o "
      "            WHERE o LIKE 'check\\_option=%'), ''), "
      "  array_to_json(ARRAY(SELECT DISTINCT rn.nspname || '.' || rc.relname "
      "    FROM pg_rewrite rw JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass "
      "      AND d.objid = rw.oid AND d.refclassid = 'pg_class'::regclass "
      "    JOIN pg_class rc ON rc.oid = d.refobjid "
      "    JOIN pg_namespace rn ON rn.oid = rc.relnamespace "
      "    WHERE rw.ev_class = c.oid AND d.refobjid <> c.oid ORDER BY 1))::text "
      "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
      "WHERE c.relkind IN ('v', 'm') AND n.nspname = ANY($1::text[]) AND " +
      NotExtensionMember("'pg_class'::regclass", "c.oid") + "ORDER BY n.nspname, c.relname";
  DBS_ASSIGN_OR_RETURN(ResultPtr r, ExecParams(conn, sql, {schemas}, "listing views"));
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    SchemaObject o;
    o.schema = Text(r.get(), i, 0);
    o.name = Text(r.get(), i, 1);
    const bool mat = Text(r.get(), i, 2) == "m";
    o.kind = mat ? ObjectKind::kMaterializedView : ObjectKind::kView;
    o.comment = Text(r.get(), i, 4);
    DBS_RETURN_IF_ERROR(path->Set(o.schema));
    DBS_ASSIGN_OR_RETURN(ResultPtr def, ExecParams(conn, "SELECT pg_get_viewdef($1::oid, true)",
                                                   {std::string(Text(r.get(), i, 3))},
                                                   "printing view " + o.QualifiedName()));
    const std::string body = StripSemicolon(std::string(Text(def.get(), 0, 0)));
    const std::string name(Text(r.get(), i, 5));
    const std::string options(Text(r.get(), i, 7));
    const std::string check(Text(r.get(), i, 8));
    if (mat) {
      o.definition = "CREATE MATERIALIZED VIEW " + name + " AS " + body +
                     (pg::Bool(r.get(), i, 6) ? " WITH DATA" : " WITH NO DATA");
    } else {
      o.definition = "CREATE VIEW " + name + (options.empty() ? "" : " WITH (" + options + ")") +
                     " AS " + body + (check.empty() ? "" : " WITH " + check + " CHECK OPTION");
    }
    o.reads = JsonNames(std::string(Text(r.get(), i, 9)));
    out->push_back(std::move(o));
  }
  return Status::Ok();
}

Status Routines(PGconn* conn, const std::string& schemas, SearchPath* path,
                std::vector<SchemaObject>* out) {
  const std::string sql =
      "SELECT n.nspname, p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')', "
      "  p.prokind, p.oid, coalesce(obj_description(p.oid, 'pg_proc'), ''), "
      "  quote_ident(n.nspname) "
      "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
      "WHERE n.nspname = ANY($1::text[]) AND " +
      NotExtensionMember("'pg_proc'::regclass", "p.oid") + "ORDER BY n.nspname, 2";
  DBS_ASSIGN_OR_RETURN(ResultPtr r, ExecParams(conn, sql, {schemas}, "listing functions"));
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    SchemaObject o;
    o.schema = Text(r.get(), i, 0);
    o.name = Text(r.get(), i, 1);
    const char kind = Text(r.get(), i, 2).empty() ? 'f' : Text(r.get(), i, 2)[0];
    const std::string oid(Text(r.get(), i, 3));
    o.comment = Text(r.get(), i, 4);
    const std::string qschema(Text(r.get(), i, 5));
    DBS_RETURN_IF_ERROR(path->Set(o.schema));
    const std::string ctx = "printing function " + o.QualifiedName();
    if (kind == 'a') {
      o.kind = ObjectKind::kAggregate;
      static const char kAgg[] =
          "SELECT a.aggkind, a.aggmtransfn <> 0 OR a.aggserialfn <> 0 OR a.aggdeserialfn <> 0, "
          "  format('CREATE AGGREGATE %s(%s) (SFUNC = %s, STYPE = %s%s%s%s%s)', "
          "    quote_ident(p.proname), pg_get_function_identity_arguments(p.oid), "
          "    a.aggtransfn::regproc, format_type(a.aggtranstype, NULL), "
          "    CASE WHEN a.aggfinalfn <> 0 THEN ', FINALFUNC = ' || a.aggfinalfn::regproc END, "
          "    CASE WHEN a.aggcombinefn <> 0 THEN ', COMBINEFUNC = ' || a.aggcombinefn::regproc "
          "    END, "
          "    CASE WHEN a.agginitval IS NOT NULL THEN ', INITCOND = ' || "
          "      quote_literal(a.agginitval) END, "
          "    CASE WHEN a.aggsortop <> 0 THEN ', SORTOP = ' || a.aggsortop::regoperator END) "
          "FROM pg_aggregate a JOIN pg_proc p ON p.oid = a.aggfnoid WHERE a.aggfnoid = $1::oid";
      DBS_ASSIGN_OR_RETURN(ResultPtr a, ExecParams(conn, kAgg, {oid}, ctx));
      if (PQntuples(a.get()) != 1 || Text(a.get(), 0, 0) != "n" || Bool(a.get(), 0, 1)) {
        o.not_describable =
            "ordered-set, hypothetical-set and moving or parallel aggregates are not migrated";
      } else {
        std::string def(Text(a.get(), 0, 2));
        // SORTOP prints as an operator with its argument types: keep only the operator.
        const size_t sort = def.find(", SORTOP = ");
        if (sort != std::string::npos) {
          const size_t paren = def.find('(', sort);
          if (paren != std::string::npos) def = def.substr(0, paren) + ")";
        }
        o.definition = def;
      }
    } else {
      o.kind = kind == 'p' ? ObjectKind::kProcedure : ObjectKind::kFunction;
      DBS_ASSIGN_OR_RETURN(ResultPtr def,
                           ExecParams(conn, "SELECT pg_get_functiondef($1::oid)", {oid}, ctx));
      std::string text(Text(def.get(), 0, 0));
      // pg_get_functiondef always qualifies the routine's own name: drop the qualifier.
      for (const char* head : {"CREATE OR REPLACE FUNCTION ", "CREATE OR REPLACE PROCEDURE "}) {
        const std::string prefix = std::string(head) + qschema + ".";
        if (text.compare(0, prefix.size(), prefix) == 0) {
          text = std::string(head) + text.substr(prefix.size());
          break;
        }
      }
      o.definition = StripSemicolon(text);
    }
    out->push_back(std::move(o));
  }
  return Status::Ok();
}

Status Sequences(PGconn* conn, const std::string& schemas, std::vector<SchemaObject>* out) {
  const std::string sql =
      "SELECT n.nspname, c.relname, format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement, "
      "  s.seqmin, s.seqmax, s.seqcache, s.seqcycle, "
      "  coalesce(obj_description(c.oid, 'pg_class'), ''), "
      "  has_sequence_privilege(c.oid, 'SELECT'), c.oid::regclass::text "
      "FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid "
      "JOIN pg_namespace n ON n.oid = c.relnamespace "
      "WHERE n.nspname = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM pg_depend d "
      "  WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid "
      "  AND d.deptype IN ('a', 'i', 'e')) "
      "ORDER BY n.nspname, c.relname";
  DBS_ASSIGN_OR_RETURN(ResultPtr r, ExecParams(conn, sql, {schemas}, "listing sequences"));
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    SchemaObject o;
    o.kind = ObjectKind::kSequence;
    o.schema = Text(r.get(), i, 0);
    o.name = Text(r.get(), i, 1);
    o.comment = Text(r.get(), i, 9);
    SequenceInfo q;
    q.data_type = Text(r.get(), i, 2);
    q.start = Int(r.get(), i, 3);
    q.increment = Int(r.get(), i, 4);
    q.min = Int(r.get(), i, 5);
    q.max = Int(r.get(), i, 6);
    q.cache = Int(r.get(), i, 7);
    q.cycle = Bool(r.get(), i, 8);
    q.last_value = q.start;
    if (!Bool(r.get(), i, 10)) {
      o.not_describable = "the role may not read the sequence's value (GRANT SELECT ON SEQUENCE " +
                          QualifiedName(o.schema, o.name) + ")";
    } else {
      DBS_ASSIGN_OR_RETURN(
          ResultPtr v,
          Exec(conn, "SELECT last_value, is_called FROM " + std::string(Text(r.get(), i, 11)),
               "reading sequence " + o.QualifiedName()));
      q.last_value = Int(v.get(), 0, 0);
      q.is_called = Bool(v.get(), 0, 1);
    }
    o.sequence = q;
    out->push_back(std::move(o));
  }
  return Status::Ok();
}

Status TableObjects(PGconn* conn, const std::string& tables, const std::vector<TableSchema>& list,
                    SearchPath* path, std::vector<SchemaObject>* out) {
  const std::string rels = "ARRAY(SELECT to_regclass(u) FROM unnest($1::text[]) u)";
  for (const TableSchema& t : list) {
    // One table at a time, printed with its own schema current.
    DBS_RETURN_IF_ERROR(path->Set(t.schema));
    const std::vector<std::optional<std::string>> one = {
        TextArrayLiteral({QualifiedName(t.schema, t.name)})};
    const std::string owner = t.schema + "." + t.name;
    DBS_ASSIGN_OR_RETURN(
        ResultPtr trg,
        ExecParams(conn,
                   "SELECT t.tgname, pg_get_triggerdef(t.oid, true), t.tgenabled, "
                   "  coalesce(obj_description(t.oid, 'pg_trigger'), '') FROM pg_trigger t "
                   "WHERE t.tgrelid = ANY(" +
                       rels + ") AND NOT t.tgisinternal ORDER BY t.tgname",
                   one, "listing the triggers of " + owner));
    for (int i = 0; i < PQntuples(trg.get()); ++i) {
      SchemaObject o;
      o.kind = ObjectKind::kTrigger;
      o.schema = t.schema;
      o.name = Text(trg.get(), i, 0);
      o.table = owner;
      o.definition = Text(trg.get(), i, 1);
      o.disabled = Text(trg.get(), i, 2) == "D";
      o.comment = Text(trg.get(), i, 3);
      out->push_back(std::move(o));
    }
    DBS_ASSIGN_OR_RETURN(
        ResultPtr pol,
        ExecParams(conn,
                   "SELECT p.polname, format('CREATE POLICY %I ON %s AS %s FOR %s TO %s%s%s', "
                   "  p.polname, c.oid::regclass, "
                   "  CASE WHEN p.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END, "
                   "  CASE p.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' "
                   "    WHEN 'w' THEN 'UPDATE' WHEN 'd' THEN 'DELETE' ELSE 'ALL' END, "
                   "  CASE WHEN p.polroles = '{0}' THEN 'PUBLIC' ELSE (SELECT string_agg("
                   "    quote_ident(rolname), ', ') FROM pg_roles WHERE oid = ANY(p.polroles)) "
                   "  END, "
                   "  ' USING (' || pg_get_expr(p.polqual, p.polrelid) || ')', "
                   "  ' WITH CHECK (' || pg_get_expr(p.polwithcheck, p.polrelid) || ')'), "
                   "  c.relrowsecurity, c.relforcerowsecurity "
                   "FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid "
                   "WHERE p.polrelid = ANY(" +
                       rels + ") ORDER BY p.polname",
                   one, "listing the policies of " + owner));
    for (int i = 0; i < PQntuples(pol.get()); ++i) {
      SchemaObject o;
      o.kind = ObjectKind::kPolicy;
      o.schema = t.schema;
      o.name = Text(pol.get(), i, 0);
      o.table = owner;
      o.row_security = Bool(pol.get(), i, 2);
      o.force_row_security = Bool(pol.get(), i, 3);
      o.definition = Text(pol.get(), i, 1);
      out->push_back(std::move(o));
    }
    DBS_ASSIGN_OR_RETURN(ResultPtr rul,
                         ExecParams(conn,
                                    "SELECT r.rulename, pg_get_ruledef(r.oid, true) FROM "
                                    "pg_rewrite r WHERE r.ev_class = ANY(" +
                                        rels + ") AND r.rulename <> '_RETURN' ORDER BY 1",
                                    one, "listing the rules of " + owner));
    for (int i = 0; i < PQntuples(rul.get()); ++i) {
      SchemaObject o;
      o.kind = ObjectKind::kRule;
      o.schema = t.schema;
      o.name = Text(rul.get(), i, 0);
      o.table = owner;
      o.definition = StripSemicolon(std::string(Text(rul.get(), i, 1)));
      out->push_back(std::move(o));
    }
  }
  // Domains the columns use: reported (the columns get the base type).
  DBS_ASSIGN_OR_RETURN(
      ResultPtr dom,
      ExecParams(conn,
                 "SELECT dn.nspname, d.typname, "
                 "  'CREATE DOMAIN ' || quote_ident(d.typname) || ' AS ' || "
                 "  format_type(d.typbasetype, d.typtypmod) || coalesce((SELECT ' ' || "
                 "  string_agg(pg_get_constraintdef(k.oid, true), ' ') FROM pg_constraint k "
                 "  WHERE k.contypid = d.oid), ''), "
                 "  array_to_json(array_agg(DISTINCT cn.nspname || '.' || c.relname || '.' || "
                 "    a.attname ORDER BY cn.nspname || '.' || c.relname || '.' || a.attname))"
                 "::text "
                 "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                 "JOIN pg_namespace cn ON cn.oid = c.relnamespace "
                 "JOIN pg_type at ON at.oid = a.atttypid "
                 "JOIN pg_type d ON d.typtype = 'd' AND d.oid IN (at.oid, at.typelem) "
                 "JOIN pg_namespace dn ON dn.oid = d.typnamespace "
                 "WHERE a.attrelid = ANY(" +
                     rels +
                     ") AND a.attnum > 0 AND NOT a.attisdropped "
                     "GROUP BY 1, 2, 3 ORDER BY 1, 2",
                 {tables}, "listing the domains of the tables"));
  for (int i = 0; i < PQntuples(dom.get()); ++i) {
    SchemaObject o;
    o.kind = ObjectKind::kDomain;
    o.schema = Text(dom.get(), i, 0);
    o.name = Text(dom.get(), i, 1);
    o.definition = Text(dom.get(), i, 2);
    o.used_by = JsonNames(std::string(Text(dom.get(), i, 3)));
    out->push_back(std::move(o));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<SchemaObject>> DescribeObjects(PGconn* conn,
                                                  const std::vector<TableSchema>& tables) {
  std::vector<SchemaObject> out;
  std::set<std::string> schema_set;
  std::vector<std::string> names, schemas;
  for (const TableSchema& t : tables) {
    names.push_back(QualifiedName(t.schema, t.name));
    if (schema_set.insert(t.schema).second) schemas.push_back(t.schema);
  }
  const std::string tables_param = TextArrayLiteral(names);
  const std::string schemas_param = TextArrayLiteral(schemas);
  SearchPath path(conn);
  DBS_RETURN_IF_ERROR(Extensions(conn, tables_param, &out));
  DBS_RETURN_IF_ERROR(Sequences(conn, schemas_param, &out));
  DBS_RETURN_IF_ERROR(Routines(conn, schemas_param, &path, &out));
  DBS_RETURN_IF_ERROR(Views(conn, schemas_param, &path, &out));
  DBS_RETURN_IF_ERROR(TableObjects(conn, tables_param, tables, &path, &out));
  return out;
}

}  // namespace dbs::pg

#include "sources/postgres/catalog.h"

#include <cctype>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "typemap/postgres_types.h"

namespace dbs::pg {

namespace {

using nlohmann::json;

// A JSON array of strings (array_to_json(...)::text) as a vector; NULL or malformed: empty.
std::vector<std::string> JsonStrings(const PGresult* res, int row, int col) {
  std::vector<std::string> out;
  if (IsNull(res, row, col)) return out;
  json j = json::parse(Text(res, row, col), nullptr, false);
  if (!j.is_array()) return out;
  for (const json& e : j) out.push_back(e.is_string() ? e.get<std::string>() : e.dump());
  return out;
}

std::vector<int64_t> JsonInts(const PGresult* res, int row, int col) {
  std::vector<int64_t> out;
  if (IsNull(res, row, col)) return out;
  json j = json::parse(Text(res, row, col), nullptr, false);
  if (!j.is_array()) return out;
  for (const json& e : j) out.push_back(e.is_number_integer() ? e.get<int64_t>() : 0);
  return out;
}

std::string FkAction(std::string_view code) {
  switch (code.empty() ? 'a' : code[0]) {
    case 'r':
      return "RESTRICT";
    case 'c':
      return "CASCADE";
    case 'n':
      return "SET NULL";
    case 'd':
      return "SET DEFAULT";
    default:
      return "NO ACTION";
  }
}

PgTypeInfo TypeInfoFor(const TypeCache& types, const TypeInfo& t, const std::string& formatted) {
  PgTypeInfo p;
  p.formatted = formatted;
  p.name = t.name;
  p.type_type = t.type_type;
  p.category = t.category;
  p.enum_labels = t.enum_labels;
  if (t.element != 0) {
    if (const TypeInfo* e = types.Find(t.element)) {
      p.element_name = e->name;
      p.element_type_type = e->type_type;
      if (p.enum_labels.empty()) p.enum_labels = e->enum_labels;
    }
  }
  return p;
}

// The column description typemap maps: the type, and for domains (or arrays of a domain) the
// domain's base type resolved through nested domains.
PgColumnInfo ColumnInfoFor(const TypeCache& types, uint32_t type_oid, const std::string& name,
                           const std::string& formatted) {
  PgColumnInfo info;
  info.name = name;
  const TypeInfo* t = types.Find(type_oid);
  if (t == nullptr) return info;
  info.type = TypeInfoFor(types, *t, formatted);
  uint32_t domain = 0;
  if (t->type_type == 'd') {
    domain = t->oid;
  } else if (t->element != 0) {
    const TypeInfo* e = types.Find(t->element);
    if (e != nullptr && e->type_type == 'd') domain = e->oid;
  }
  if (domain != 0) {
    if (const TypeInfo* base = types.Base(domain)) {
      info.domain_base = TypeInfoFor(types, *base, types.BaseFormatted(domain, base->formatted));
    }
  }
  return info;
}

std::string Qualified(const RelationInfo& r) { return r.schema + "." + r.name; }

// Declarative partitioning (the key and every partition, sub-partitions after their parents),
// inheritance parents, and whether other tables inherit from this one.
Status DescribePartitionsAndInheritance(PGconn* conn, const RelationInfo& rel, TableSchema* t) {
  const std::string oid = std::to_string(rel.oid);
  const std::string ctx = "describing the partitions and parents of " + Qualified(rel);
  if (rel.kind == 'p') {
    static const char kParts[] =
        "WITH RECURSIVE parts(oid, parent, depth) AS ("
        "  SELECT inhrelid, inhparent, 1 FROM pg_inherits WHERE inhparent = $1::oid "
        "  UNION ALL SELECT i.inhrelid, i.inhparent, p.depth + 1 FROM pg_inherits i "
        "  JOIN parts p ON i.inhparent = p.oid) "
        "SELECT n.nspname, c.relname, pn.nspname || '.' || pc.relname, "
        "  pg_get_expr(c.relpartbound, c.oid), "
        "  CASE WHEN c.relkind = 'p' THEN pg_get_partkeydef(c.oid) END, "
        "  pg_get_partkeydef($1::oid) "
        "FROM parts JOIN pg_class c ON c.oid = parts.oid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "JOIN pg_class pc ON pc.oid = parts.parent "
        "JOIN pg_namespace pn ON pn.oid = pc.relnamespace "
        "ORDER BY parts.depth, n.nspname, c.relname";
    DBS_ASSIGN_OR_RETURN(ResultPtr res, ExecParams(conn, kParts, {oid}, ctx));
    DBS_ASSIGN_OR_RETURN(ResultPtr key,
                         ExecParams(conn, "SELECT pg_get_partkeydef($1::oid)", {oid}, ctx));
    t->partition_by = Text(key.get(), 0, 0);
    for (int r = 0; r < PQntuples(res.get()); ++r) {
      Partition p;
      p.schema = Text(res.get(), r, 0);
      p.name = Text(res.get(), r, 1);
      p.parent = Text(res.get(), r, 2);
      p.bound = Text(res.get(), r, 3);
      p.partition_by = Text(res.get(), r, 4);
      t->partitions.push_back(std::move(p));
    }
    return Status::Ok();
  }
  static const char kParents[] =
      "SELECT pn.nspname || '.' || pc.relname FROM pg_inherits i "
      "JOIN pg_class pc ON pc.oid = i.inhparent "
      "JOIN pg_namespace pn ON pn.oid = pc.relnamespace "
      "JOIN pg_class c ON c.oid = i.inhrelid "
      "WHERE i.inhrelid = $1::oid AND NOT c.relispartition ORDER BY i.inhseqno";
  DBS_ASSIGN_OR_RETURN(ResultPtr parents, ExecParams(conn, kParents, {oid}, ctx));
  for (int r = 0; r < PQntuples(parents.get()); ++r) {
    t->inherits.push_back(std::string(Text(parents.get(), r, 0)));
  }
  DBS_ASSIGN_OR_RETURN(
      ResultPtr children,
      ExecParams(conn, "SELECT EXISTS (SELECT 1 FROM pg_inherits WHERE inhparent = $1::oid)", {oid},
                 ctx));
  t->has_children = rel.kind == 'r' && Bool(children.get(), 0, 0);
  return Status::Ok();
}

// The next value of each identity or serial column's sequence. A sequence the role may not read
// is left out: the target's generator then only moves past the loaded rows.
Status DescribeNextValues(PGconn* conn, TableSchema* t) {
  for (Column& c : t->columns) {
    if (!c.auto_increment) continue;
    DBS_ASSIGN_OR_RETURN(
        ResultPtr seq,
        ExecParams(conn,
                   "SELECT s.oid::regclass::text, has_sequence_privilege(s.oid, 'SELECT') "
                   "FROM pg_class s WHERE s.oid = pg_get_serial_sequence($1, $2)::regclass",
                   {QualifiedName(t->schema, t->name), c.name},
                   "finding the sequence of " + t->QualifiedName() + "." + c.name));
    if (PQntuples(seq.get()) == 0 || !Bool(seq.get(), 0, 1)) continue;
    const std::string name(Text(seq.get(), 0, 0));
    DBS_ASSIGN_OR_RETURN(
        ResultPtr v,
        Exec(conn,
             "SELECT s.last_value, s.is_called, q.seqincrement FROM " + name +
                 " s, pg_sequence q WHERE q.seqrelid = " + QuoteLiteral(name) + "::regclass",
             "reading sequence " + name));
    if (PQntuples(v.get()) != 1 || IsNull(v.get(), 0, 0)) continue;
    int64_t next = Int(v.get(), 0, 0);
    if (Bool(v.get(), 0, 1) && __builtin_add_overflow(next, Int(v.get(), 0, 2), &next)) continue;
    c.next_value = next;
  }
  return Status::Ok();
}

}  // namespace

std::string TrimQuery(const std::string& query) {
  size_t end = query.size();
  while (end > 0 &&
         (query[end - 1] == ';' || std::isspace(static_cast<unsigned char>(query[end - 1])))) {
    --end;
  }
  return query.substr(0, end);
}

Result<std::vector<TableRef>> ListTables(PGconn* conn) {
  static const char kSql[] =
      "SELECT n.nspname, c.relname FROM pg_class c "
      "JOIN pg_namespace n ON n.oid = c.relnamespace "
      "WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition "
      "  AND n.nspname NOT IN ('pg_catalog', 'information_schema', '_dbstreams') "
      "  AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%' "
      "  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass "
      "                  AND d.objid = c.oid AND d.deptype = 'e') "
      "ORDER BY 1, 2";
  DBS_ASSIGN_OR_RETURN(ResultPtr res, Exec(conn, kSql, "listing tables"));
  std::vector<TableRef> out;
  for (int r = 0; r < PQntuples(res.get()); ++r) {
    out.push_back(TableRef{std::string(Text(res.get(), r, 0)), std::string(Text(res.get(), r, 1))});
  }
  return out;
}

Result<RelationInfo> ResolveRelation(PGconn* conn, const TableRef& table) {
  static const char kSql[] =
      "SELECT c.oid, n.nspname, c.relname, c.relkind, c.reltuples, "
      "  obj_description(c.oid, 'pg_class'), "
      "  has_table_privilege(c.oid, 'SELECT') OR has_any_column_privilege(c.oid, 'SELECT'), "
      "  current_user "
      "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
      "WHERE c.oid = to_regclass($1)";
  const std::string display = table.QualifiedName();
  DBS_ASSIGN_OR_RETURN(ResultPtr res,
                       ExecParams(conn, kSql, {QualifiedName(table.schema, table.name)},
                                  "looking up table " + display));
  if (PQntuples(res.get()) == 0) {
    return Status::NotFound("table " + display + " does not exist");
  }
  RelationInfo r;
  r.oid = static_cast<uint32_t>(Int(res.get(), 0, 0));
  r.schema = Text(res.get(), 0, 1);
  r.name = Text(res.get(), 0, 2);
  r.kind = Text(res.get(), 0, 3).empty() ? 'r' : Text(res.get(), 0, 3)[0];
  r.reltuples = std::atof(std::string(Text(res.get(), 0, 4)).c_str());
  r.comment = Text(res.get(), 0, 5);
  if (r.kind != 'r' && r.kind != 'p' && r.kind != 'v' && r.kind != 'm' && r.kind != 'f') {
    return Status::InvalidArgument(display + " is not a table or view");
  }
  if (!Bool(res.get(), 0, 6)) {
    const std::string role(Text(res.get(), 0, 7));
    return Status::PermissionDenied(
        "role " + role + " has no SELECT privilege on table " + Qualified(r) +
        " (GRANT SELECT ON " + QualifiedName(r.schema, r.name) + " TO " + QuoteIdent(role) + ")");
  }
  return r;
}

Result<TableSchema> DescribeTable(PGconn* conn, TypeCache* types, const TableRef& table) {
  DBS_ASSIGN_OR_RETURN(RelationInfo rel, ResolveRelation(conn, table));
  const std::string name = Qualified(rel);
  const std::string ctx = "describing table " + name;
  const std::string oid = std::to_string(rel.oid);
  TableSchema t;
  t.schema = rel.schema;
  t.name = rel.name;
  t.comment = rel.comment;
  if (rel.reltuples >= 0) t.estimated_rows = static_cast<uint64_t>(rel.reltuples);

  // Columns.
  static const char kColumns[] =
      "SELECT a.attname, a.atttypid, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
      "  pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated, "
      "  CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation THEN "
      "    CASE WHEN cn.nspname = 'pg_catalog' THEN co.collname "
      "         ELSE cn.nspname || '.' || co.collname END END, "
      "  col_description(a.attrelid, a.attnum) "
      "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
      "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
      "LEFT JOIN pg_collation co ON co.oid = a.attcollation "
      "LEFT JOIN pg_namespace cn ON cn.oid = co.collnamespace "
      "WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum";
  DBS_ASSIGN_OR_RETURN(ResultPtr cols, ExecParams(conn, kColumns, {oid}, ctx));
  const int ncols = PQntuples(cols.get());
  if (ncols == 0) return Status::Unsupported("table " + name + " has no columns");
  std::vector<uint32_t> oids;
  for (int r = 0; r < ncols; ++r) oids.push_back(static_cast<uint32_t>(Int(cols.get(), r, 1)));
  DBS_RETURN_IF_ERROR(types->Load(conn, oids));
  for (int r = 0; r < ncols; ++r) {
    PgColumnInfo info =
        ColumnInfoFor(*types, oids[static_cast<size_t>(r)], std::string(Text(cols.get(), r, 0)),
                      std::string(Text(cols.get(), r, 2)));
    info.not_null = Bool(cols.get(), r, 3);
    if (!IsNull(cols.get(), r, 4)) info.default_expr = std::string(Text(cols.get(), r, 4));
    info.identity = Text(cols.get(), r, 5).empty() ? '\0' : Text(cols.get(), r, 5)[0];
    info.generated = Text(cols.get(), r, 6).empty() ? '\0' : Text(cols.get(), r, 6)[0];
    info.collation = Text(cols.get(), r, 7);
    info.comment = Text(cols.get(), r, 8);
    auto c = ColumnFromPostgres(info);
    if (!c.ok()) return c.status().WithContext("table " + name);
    t.columns.push_back(std::move(c).value());
  }

  // Primary key, foreign keys, checks.
  static const char kConstraints[] =
      "SELECT con.conname, con.contype, "
      "  array_to_json(ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(n, i) "
      "    JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n "
      "    ORDER BY k.i))::text, "
      "  fn.nspname, fc.relname, "
      "  array_to_json(ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(n, i) "
      "    JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n "
      "    ORDER BY k.i))::text, "
      "  con.confupdtype, con.confdeltype, pg_get_expr(con.conbin, con.conrelid) "
      "FROM pg_constraint con "
      "LEFT JOIN pg_class fc ON fc.oid = con.confrelid "
      "LEFT JOIN pg_namespace fn ON fn.oid = fc.relnamespace "
      "WHERE con.conrelid = $1 AND con.contype IN ('p', 'f', 'c') ORDER BY con.conname";
  DBS_ASSIGN_OR_RETURN(ResultPtr cons, ExecParams(conn, kConstraints, {oid}, ctx));
  for (int r = 0; r < PQntuples(cons.get()); ++r) {
    const std::string cname(Text(cons.get(), r, 0));
    const char type = Text(cons.get(), r, 1).empty() ? ' ' : Text(cons.get(), r, 1)[0];
    if (type == 'p') {
      t.primary_key = JsonStrings(cons.get(), r, 2);
    } else if (type == 'f') {
      ForeignKey fk;
      fk.name = cname;
      fk.columns = JsonStrings(cons.get(), r, 2);
      fk.ref_schema = Text(cons.get(), r, 3);
      fk.ref_table = Text(cons.get(), r, 4);
      fk.ref_columns = JsonStrings(cons.get(), r, 5);
      fk.on_update = FkAction(Text(cons.get(), r, 6));
      fk.on_delete = FkAction(Text(cons.get(), r, 7));
      t.foreign_keys.push_back(std::move(fk));
    } else if (type == 'c') {
      t.checks.push_back(CheckConstraint{cname, std::string(Text(cons.get(), r, 8))});
    }
  }

  // Unique and secondary indexes (not the primary key's, not exclusion constraints').
  static const char kIndexes[] =
      "SELECT ic.relname, i.indisunique, am.amname, pg_get_expr(i.indpred, i.indrelid), "
      "  array_to_json(ARRAY(SELECT CASE WHEN k.n = 0 "
      "      THEN pg_get_indexdef(i.indexrelid, k.i::int, true) ELSE a.attname::text END "
      "    FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(n, i) "
      "    LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n "
      "    WHERE k.i <= i.indnkeyatts ORDER BY k.i))::text, "
      "  array_to_json(i.indoption::int2[])::text "
      "FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid "
      "JOIN pg_am am ON am.oid = ic.relam "
      "WHERE i.indrelid = $1 AND NOT i.indisprimary AND i.indisvalid "
      "  AND NOT EXISTS (SELECT 1 FROM pg_constraint x WHERE x.conindid = i.indexrelid "
      "                  AND x.contype = 'x') "
      "ORDER BY ic.relname";
  DBS_ASSIGN_OR_RETURN(ResultPtr idx, ExecParams(conn, kIndexes, {oid}, ctx));
  for (int r = 0; r < PQntuples(idx.get()); ++r) {
    Index index;
    index.name = Text(idx.get(), r, 0);
    index.unique = Bool(idx.get(), r, 1);
    index.method = Text(idx.get(), r, 2);
    if (!IsNull(idx.get(), r, 3)) index.predicate = std::string(Text(idx.get(), r, 3));
    std::vector<std::string> parts = JsonStrings(idx.get(), r, 4);
    std::vector<int64_t> options = JsonInts(idx.get(), r, 5);
    for (size_t k = 0; k < parts.size(); ++k) {
      IndexColumn ic;
      ic.name = parts[k];
      ic.descending = k < options.size() && (options[k] & 1) != 0;
      index.columns.push_back(std::move(ic));
    }
    t.indexes.push_back(std::move(index));
  }
  DBS_RETURN_IF_ERROR(DescribePartitionsAndInheritance(conn, rel, &t));
  DBS_RETURN_IF_ERROR(DescribeNextValues(conn, &t));
  return t;
}

Result<TableSchema> DescribeQuery(PGconn* conn, TypeCache* types, const std::string& query,
                                  const TableRef& name) {
  const std::string ctx = "describing the query of " + name.QualifiedName();
  const std::string sql = TrimQuery(query);
  ResultPtr prep(PQprepare(conn, "", sql.c_str(), 0, nullptr));
  if (PQresultStatus(prep.get()) != PGRES_COMMAND_OK) {
    return ErrorStatus(conn, prep.get(), ctx);
  }
  ResultPtr desc(PQdescribePrepared(conn, ""));
  if (PQresultStatus(desc.get()) != PGRES_COMMAND_OK) {
    return ErrorStatus(conn, desc.get(), ctx);
  }
  const int n = PQnfields(desc.get());
  if (n == 0) return Status::InvalidArgument(ctx + ": the query returns no columns");
  std::string oids = "{", mods = "{";
  std::vector<uint32_t> type_oids;
  for (int i = 0; i < n; ++i) {
    if (i) oids += ',', mods += ',';
    type_oids.push_back(PQftype(desc.get(), i));
    oids += std::to_string(PQftype(desc.get(), i));
    mods += std::to_string(PQfmod(desc.get(), i));
  }
  oids += '}', mods += '}';
  DBS_ASSIGN_OR_RETURN(ResultPtr fmt,
                       ExecParams(conn,
                                  "SELECT format_type(u.t, u.m) FROM unnest($1::oid[], $2::int4[]) "
                                  "WITH ORDINALITY u(t, m, i) ORDER BY u.i",
                                  {oids, mods}, ctx));
  DBS_RETURN_IF_ERROR(types->Load(conn, type_oids));
  TableSchema t;
  t.schema = name.schema;
  t.name = name.name;
  std::set<std::string> seen;
  for (int i = 0; i < n; ++i) {
    const std::string col = PQfname(desc.get(), i);
    if (!seen.insert(col).second) {
      return Status::InvalidArgument(ctx + ": the query returns two columns named '" + col +
                                     "'; give them distinct aliases");
    }
    PgColumnInfo info = ColumnInfoFor(*types, type_oids[static_cast<size_t>(i)], col,
                                      std::string(Text(fmt.get(), i, 0)));
    auto c = ColumnFromPostgres(info);
    if (!c.ok()) return c.status().WithContext(ctx);
    t.columns.push_back(std::move(c).value());
  }
  return t;
}

}  // namespace dbs::pg

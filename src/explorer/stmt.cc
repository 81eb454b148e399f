#include "explorer/stmt.h"

#include <cstring>

#include "explorer/console_internal.h"
#include "mysql/mysql_client.h"
#include "postgres/pg_client.h"

namespace dbs::explorer {

using nlohmann::json;

namespace {

Result<StmtResult> RunPostgres(const ConnectionConfig& c, const std::string& sql,
                               const std::vector<StmtParam>& params, int64_t timeout_ms) {
  DBS_ASSIGN_OR_RETURN(pg::ConnPtr conn, pg::Connect(c));
  DBS_RETURN_IF_ERROR(pg::Command(
      conn.get(),
      "SET statement_timeout = " + std::to_string(timeout_ms) + "; BEGIN TRANSACTION READ ONLY",
      "starting a read-only transaction"));
  std::vector<std::optional<std::string>> values;
  for (const auto& p : params) values.push_back(p.text);
  auto r = pg::ExecParams(conn.get(), sql, values, "reading the table");
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kTimeout) {
      return Status::Timeout("the statement ran over its timeout of " + std::to_string(timeout_ms) +
                             " ms");
    }
    return r.status();
  }
  StmtResult out;
  const PGresult* res = r->get();
  for (int i = 0; i < PQnfields(res); ++i) {
    out.columns.push_back({PQfname(res, i), PgBuiltinTypeName(PQftype(res, i))});
  }
  for (int row = 0; row < PQntuples(res); ++row) {
    json j = json::array();
    for (int i = 0; i < PQnfields(res); ++i) j.push_back(PgValue(res, row, i));
    out.rows.push_back(std::move(j));
  }
  pg::RollbackQuietly(conn.get());
  return out;
}

struct StmtCloser {
  void operator()(MYSQL_STMT* s) const { mysql_stmt_close(s); }
};

Status StmtError(MYSQL_STMT* st, std::string_view context) {
  return mysql::MysqlError(mysql_stmt_errno(st), mysql_stmt_sqlstate(st), mysql_stmt_error(st),
                           context);
}

Result<StmtResult> RunMysql(const ConnectionConfig& c, const std::string& sql,
                            const std::vector<StmtParam>& params, int64_t timeout_ms) {
  mysql::ConnectOptions o;
  o.use_database = false;
  DBS_ASSIGN_OR_RETURN(auto conn, mysql::MysqlConnection::Open(c, o));
  const std::string limit = conn->is_mariadb()
                                ? "SET SESSION max_statement_time = " +
                                      std::to_string(static_cast<double>(timeout_ms) / 1000.0)
                                : "SET SESSION max_execution_time = " + std::to_string(timeout_ms);
  DBS_RETURN_IF_ERROR(conn->Exec(limit, "setting the statement timeout"));
  DBS_RETURN_IF_ERROR(conn->Exec("SET SESSION TRANSACTION READ ONLY", "starting a session"));
  DBS_RETURN_IF_ERROR(conn->Exec("START TRANSACTION READ ONLY", "starting a transaction"));
  std::unique_ptr<MYSQL_STMT, StmtCloser> st(mysql_stmt_init(conn->handle()));
  if (!st) return Status::Internal("mysql_stmt_init failed");
  const std::string ctx = "reading the table";
  if (mysql_stmt_prepare(st.get(), sql.data(), static_cast<unsigned long>(sql.size())) != 0) {
    return StmtError(st.get(), ctx);
  }
  std::vector<MYSQL_BIND> binds(params.size());
  std::vector<long long> ints(params.size());
  std::vector<unsigned long> lens(params.size());
  std::vector<my_bool> nulls(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    MYSQL_BIND& b = binds[i];
    std::memset(&b, 0, sizeof b);
    nulls[i] = params[i].text ? 0 : 1;
    b.is_null = &nulls[i];
    if (params[i].text && params[i].integer) {
      ints[i] = std::stoll(*params[i].text);
      b.buffer_type = MYSQL_TYPE_LONGLONG;
      b.buffer = &ints[i];
    } else {
      b.buffer_type = MYSQL_TYPE_STRING;
      b.buffer = params[i].text ? const_cast<char*>(params[i].text->data()) : nullptr;
      lens[i] = params[i].text ? static_cast<unsigned long>(params[i].text->size()) : 0;
      b.buffer_length = lens[i];
      b.length = &lens[i];
    }
  }
  if (!binds.empty() && mysql_stmt_bind_param(st.get(), binds.data()) != 0) {
    return StmtError(st.get(), ctx);
  }
  if (mysql_stmt_execute(st.get()) != 0) {
    const unsigned code = mysql_stmt_errno(st.get());
    if (code == 1969 || code == 3024) {
      return Status::Timeout("the statement ran over its timeout of " + std::to_string(timeout_ms) +
                             " ms");
    }
    return StmtError(st.get(), ctx);
  }
  StmtResult out;
  mysql::ResultHandle meta(mysql_stmt_result_metadata(st.get()));
  if (!meta) return out;
  const unsigned n = mysql_num_fields(meta.get());
  MYSQL_FIELD* fields = mysql_fetch_fields(meta.get());
  for (unsigned i = 0; i < n; ++i)
    out.columns.push_back({fields[i].name, MysqlTypeName(fields[i])});
  std::vector<MYSQL_BIND> res(n);
  std::vector<std::string> bufs(n, std::string(256, '\0'));
  std::vector<unsigned long> rlens(n);
  std::vector<my_bool> rnulls(n), rerrs(n);
  for (unsigned i = 0; i < n; ++i) {
    std::memset(&res[i], 0, sizeof res[i]);
    res[i].buffer_type = MYSQL_TYPE_STRING;
    res[i].buffer = bufs[i].data();
    res[i].buffer_length = static_cast<unsigned long>(bufs[i].size());
    res[i].length = &rlens[i];
    res[i].is_null = &rnulls[i];
    res[i].error = &rerrs[i];
  }
  if (mysql_stmt_bind_result(st.get(), res.data()) != 0) return StmtError(st.get(), ctx);
  while (true) {
    const int rc = mysql_stmt_fetch(st.get());
    if (rc == MYSQL_NO_DATA) break;
    if (rc == 1) return StmtError(st.get(), ctx);
    json row = json::array();
    for (unsigned i = 0; i < n; ++i) {
      if (rnulls[i]) {
        row.push_back(nullptr);
        continue;
      }
      if (rlens[i] > bufs[i].size()) {
        // Longer than the buffer: fetch this column again into one that fits.
        std::string big(rlens[i], '\0');
        MYSQL_BIND b;
        std::memset(&b, 0, sizeof b);
        unsigned long got = 0;
        b.buffer_type = MYSQL_TYPE_STRING;
        b.buffer = big.data();
        b.buffer_length = static_cast<unsigned long>(big.size());
        b.length = &got;
        if (mysql_stmt_fetch_column(st.get(), &b, i, 0) != 0) return StmtError(st.get(), ctx);
        row.push_back(MysqlValue(fields[i], big.data(), got));
      } else {
        row.push_back(MysqlValue(fields[i], bufs[i].data(), rlens[i]));
      }
    }
    out.rows.push_back(std::move(row));
  }
  st.reset();
  (void)conn->Exec("ROLLBACK", "ending the transaction");
  return out;
}

}  // namespace

Result<StmtResult> RunReadOnly(const ConnectionConfig& c, const std::string& sql,
                               const std::vector<StmtParam>& params, int64_t timeout_ms) {
  if (c.engine == Engine::kPostgres) return RunPostgres(c, sql, params, timeout_ms);
  return RunMysql(c, sql, params, timeout_ms);
}

Result<std::string> PostgresDdl(const ConnectionConfig& c, const TableSchema& t) {
  DBS_ASSIGN_OR_RETURN(pg::ConnPtr conn, pg::Connect(c));
  const std::string q = pg::QualifiedName(t.schema, t.name);
  DBS_ASSIGN_OR_RETURN(
      pg::ResultPtr rel,
      pg::ExecParams(conn.get(),
                     "SELECT c.oid, c.relkind, pg_get_viewdef(c.oid, true), "
                     "obj_description(c.oid, 'pg_class') FROM pg_class c WHERE c.oid = "
                     "to_regclass($1)",
                     {q}, "reading the catalog"));
  if (PQntuples(rel.get()) == 0)
    return Status::NotFound("table " + t.QualifiedName() + " does not exist");
  const std::string oid(pg::Text(rel.get(), 0, 0));
  const std::string kind(pg::Text(rel.get(), 0, 1));
  std::string ddl;
  if (kind == "v" || kind == "m") {
    ddl = std::string(kind == "m" ? "CREATE MATERIALIZED VIEW " : "CREATE VIEW ") + q + " AS\n" +
          std::string(pg::Text(rel.get(), 0, 2));
  } else {
    DBS_ASSIGN_OR_RETURN(
        pg::ResultPtr cols,
        pg::ExecParams(conn.get(),
                       "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
                       "pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated, "
                       "(SELECT quote_ident(co.collname) FROM pg_collation co WHERE co.oid = "
                       "a.attcollation AND a.attcollation <> (SELECT typcollation FROM pg_type "
                       "WHERE oid = a.atttypid)) FROM pg_attribute a LEFT JOIN pg_attrdef d ON "
                       "d.adrelid = a.attrelid AND d.adnum = a.attnum WHERE a.attrelid = $1::oid "
                       "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                       {oid}, "reading the columns"));
    std::vector<std::string> lines;
    for (int i = 0; i < PQntuples(cols.get()); ++i) {
      std::string l = "    " + pg::QuoteIdent(pg::Text(cols.get(), i, 0)) + " " +
                      std::string(pg::Text(cols.get(), i, 1));
      if (!pg::IsNull(cols.get(), i, 6)) l += " COLLATE " + std::string(pg::Text(cols.get(), i, 6));
      const std::string ident(pg::Text(cols.get(), i, 4));
      const std::string gen(pg::Text(cols.get(), i, 5));
      if (ident == "a") l += " GENERATED ALWAYS AS IDENTITY";
      if (ident == "d") l += " GENERATED BY DEFAULT AS IDENTITY";
      if (!pg::IsNull(cols.get(), i, 3)) {
        const std::string expr(pg::Text(cols.get(), i, 3));
        l += gen == "s" ? " GENERATED ALWAYS AS (" + expr + ") STORED" : " DEFAULT " + expr;
      }
      if (pg::Bool(cols.get(), i, 2)) l += " NOT NULL";
      lines.push_back(l);
    }
    DBS_ASSIGN_OR_RETURN(
        pg::ResultPtr cons,
        pg::ExecParams(conn.get(),
                       "SELECT conname, pg_get_constraintdef(oid, true) FROM pg_constraint WHERE "
                       "conrelid = $1::oid AND contype IN ('p', 'u', 'c', 'f', 'x') ORDER BY "
                       "contype <> 'p', contype, conname",
                       {oid}, "reading the constraints"));
    for (int i = 0; i < PQntuples(cons.get()); ++i) {
      lines.push_back("    CONSTRAINT " + pg::QuoteIdent(pg::Text(cons.get(), i, 0)) + " " +
                      std::string(pg::Text(cons.get(), i, 1)));
    }
    ddl = "CREATE TABLE " + q + " (\n";
    for (size_t i = 0; i < lines.size(); ++i)
      ddl += lines[i] + (i + 1 < lines.size() ? ",\n" : "\n");
    ddl += ")";
    DBS_ASSIGN_OR_RETURN(
        pg::ResultPtr idx,
        pg::ExecParams(conn.get(),
                       "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indrelid = "
                       "$1::oid AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = "
                       "i.indexrelid) ORDER BY 1",
                       {oid}, "reading the indexes"));
    for (int i = 0; i < PQntuples(idx.get()); ++i) {
      ddl += ";\n" + std::string(pg::Text(idx.get(), i, 0));
    }
    DBS_ASSIGN_OR_RETURN(
        pg::ResultPtr com,
        pg::ExecParams(conn.get(),
                       "SELECT a.attname, col_description(a.attrelid, a.attnum) FROM "
                       "pg_attribute a WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT "
                       "a.attisdropped AND col_description(a.attrelid, a.attnum) IS NOT NULL "
                       "ORDER BY a.attnum",
                       {oid}, "reading the comments"));
    for (int i = 0; i < PQntuples(com.get()); ++i) {
      ddl += ";\nCOMMENT ON COLUMN " + q + "." + pg::QuoteIdent(pg::Text(com.get(), i, 0)) +
             " IS " + pg::QuoteLiteral(pg::Text(com.get(), i, 1));
    }
  }
  if (!pg::IsNull(rel.get(), 0, 3)) {
    ddl += std::string(";\nCOMMENT ON ") +
           (kind == "v"   ? "VIEW "
            : kind == "m" ? "MATERIALIZED VIEW "
                          : "TABLE ") +
           q + " IS " + pg::QuoteLiteral(pg::Text(rel.get(), 0, 3));
  }
  return ddl + ";";
}

}  // namespace dbs::explorer

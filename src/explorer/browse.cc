#include "explorer/browse.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>

#include "explorer/console_internal.h"
#include "explorer/stmt.h"
#include "federated/federated.h"
#include "mysql/mysql_client.h"
#include "postgres/pg_client.h"
#include "sources/source.h"

namespace dbs::explorer {

using nlohmann::json;

namespace {

int64_t Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               t0)
      .count();
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Result<TableSchema> DescribeTable(const ConnectionConfig& c, const std::string& schema,
                                  const std::string& table) {
  if (table.empty()) return Status::InvalidArgument("table is required");
  DBS_ASSIGN_OR_RETURN(auto source, Source::Open(c));
  TableRef ref{schema.empty() ? source->DefaultSchema() : schema, table};
  return source->Describe(ref);
}

// SQL with its parameters, for either engine.
class SqlBuilder {
 public:
  SqlBuilder(Engine e, const TableSchema& t) : engine_(e), table_(t) {}
  std::string Quote(const std::string& name) const {
    return engine_ == Engine::kPostgres ? pg::QuoteIdent(name) : mysql::QuoteName(name);
  }
  std::string Table() const {
    return engine_ == Engine::kPostgres ? pg::QualifiedName(table_.schema, table_.name)
                                        : mysql::QuoteQualified(table_.schema, table_.name);
  }
  // The described column named exactly `name`.
  Result<const Column*> Find(const std::string& name) const {
    const int i = table_.FindColumn(name);
    if (i < 0) {
      return Status::InvalidArgument("column '" + name.substr(0, 128) + "' is not a column of " +
                                     table_.QualifiedName());
    }
    return &table_.columns[static_cast<size_t>(i)];
  }
  // A placeholder bound to `value` (a JSON scalar) for a comparison with `col`.
  Result<std::string> Param(const Column& col, const json& value) {
    StmtParam p;
    if (value.is_string()) {
      p.text = value.get<std::string>();
    } else if (value.is_boolean()) {
      p.text = value.get<bool>() ? (engine_ == Engine::kPostgres ? "true" : "1")
                                 : (engine_ == Engine::kPostgres ? "false" : "0");
    } else if (value.is_number()) {
      p.text = value.dump();
    } else {
      return Status::InvalidArgument("the value for column " + col.name +
                                     " must be a string, number or boolean");
    }
    if (col.type == LogicalType::kBytes && engine_ == Engine::kMysql &&
        p.text->rfind("\\x", 0) == 0) {
      p.text = Unhex(p.text->substr(2));  // the console's "\x<hex>" form of binary values
    }
    p.integer = IsSignedInt(col.type) || IsUnsignedInt(col.type);
    if (p.integer && !IsInteger(*p.text)) p.integer = false;
    params_.push_back(std::move(p));
    return engine_ == Engine::kPostgres ? "$" + std::to_string(params_.size()) : std::string("?");
  }
  // One filter as SQL.
  Result<std::string> Filter(const RowFilter& f) {
    DBS_ASSIGN_OR_RETURN(const Column* col, Find(f.column));
    const std::string c = Quote(col->name);
    const std::string op = Lower(f.op);
    if (op == "is null" || op == "is not null")
      return c + " " + (op == "is null" ? "IS NULL" : "IS NOT NULL");
    static const std::set<std::string> cmp = {"=", "<>", "!=", "<", "<=", ">", ">="};
    if (cmp.count(op)) {
      if (f.value.is_null()) {
        return Status::InvalidArgument("filter on " + col->name + ": " + op +
                                       " needs a value (use is null for NULLs)");
      }
      DBS_ASSIGN_OR_RETURN(std::string p, Param(*col, f.value));
      return c + " " + (op == "!=" ? "<>" : op) + " " + p;
    }
    if (op == "like" || op == "not like" || op == "ilike" || op == "contains") {
      if (!f.value.is_string()) {
        return Status::InvalidArgument("filter on " + col->name + ": " + op + " needs a string");
      }
      json v = f.value;
      if (op == "contains") v = "%" + EscapeLike(f.value.get<std::string>()) + "%";
      Column text = *col;
      text.type = LogicalType::kText;
      DBS_ASSIGN_OR_RETURN(std::string p, Param(text, v));
      const std::string lhs = engine_ == Engine::kPostgres ? c + "::text" : c;
      std::string kw = op == "not like" ? "NOT LIKE" : "LIKE";
      if (op == "ilike") kw = engine_ == Engine::kPostgres ? "ILIKE" : "LIKE";
      const std::string esc = engine_ == Engine::kPostgres ? " ESCAPE '\\'" : " ESCAPE '\\\\'";
      return lhs + " " + kw + " " + p + (op == "contains" ? esc : "");
    }
    if (op == "in" || op == "not in") {
      if (!f.value.is_array() || f.value.empty() || f.value.size() > 1000) {
        return Status::InvalidArgument("filter on " + col->name + ": " + op +
                                       " needs an array of 1 to 1000 values");
      }
      std::string list;
      for (const auto& v : f.value) {
        DBS_ASSIGN_OR_RETURN(std::string p, Param(*col, v));
        list += (list.empty() ? "" : ", ") + p;
      }
      return c + (op == "in" ? " IN (" : " NOT IN (") + list + ")";
    }
    return Status::InvalidArgument("filter on " + col->name + ": unknown operator '" +
                                   f.op.substr(0, 32) +
                                   "' (=, <>, <, <=, >, >=, like, not like, ilike, contains, in, "
                                   "not in, is null, is not null)");
  }
  Result<std::string> Where(const std::vector<RowFilter>& filters) {
    std::string w;
    for (const auto& f : filters) {
      DBS_ASSIGN_OR_RETURN(std::string s, Filter(f));
      w += (w.empty() ? "" : " AND ") + s;
    }
    return w;
  }
  std::vector<StmtParam>& params() { return params_; }

 private:
  static bool IsInteger(const std::string& s) {
    size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
    if (i >= s.size()) return false;
    for (; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
    }
    return s.size() <= 20;
  }
  static std::string EscapeLike(const std::string& s) {
    std::string out;
    for (char ch : s) {
      if (ch == '\\' || ch == '%' || ch == '_') out += '\\';
      out += ch;
    }
    return out;
  }
  static std::string Unhex(const std::string& h) {
    std::string out;
    auto nib = [](char x) -> int {
      if (x >= '0' && x <= '9') return x - '0';
      if (x >= 'a' && x <= 'f') return x - 'a' + 10;
      if (x >= 'A' && x <= 'F') return x - 'A' + 10;
      return -1;
    };
    for (size_t i = 0; i + 1 < h.size(); i += 2) {
      const int a = nib(h[i]), b = nib(h[i + 1]);
      if (a < 0 || b < 0) return h;
      out += static_cast<char>(a * 16 + b);
    }
    return out;
  }
  Engine engine_;
  const TableSchema& table_;
  std::vector<StmtParam> params_;
};

}  // namespace

Result<RowsResult> BrowseRows(const ConnectionConfig& c, const RowsRequest& r) {
  const auto t0 = std::chrono::steady_clock::now();
  if (r.limit < 1 || r.limit > 1000) return Status::InvalidArgument("limit must be 1 to 1000");
  if (r.offset < 0) return Status::InvalidArgument("offset must be 0 or more");
  DBS_ASSIGN_OR_RETURN(TableSchema t, DescribeTable(c, r.schema, r.table));
  SqlBuilder b(c.engine, t);
  RowsResult out;
  out.primary_key = t.primary_key;
  std::string select;
  for (const auto& col : t.columns) {
    out.columns.push_back({col.name, col.source_type});
    select += (select.empty() ? "" : ", ") + b.Quote(col.name);
  }
  // The order: the requested sort, then the primary key as the tie-break.
  std::vector<std::pair<const Column*, bool>> order;
  std::set<std::string> ordered;
  for (const auto& s : r.sort) {
    DBS_ASSIGN_OR_RETURN(const Column* col, b.Find(s.column));
    if (ordered.insert(col->name).second) order.push_back({col, s.descending});
  }
  for (const auto& k : t.primary_key) {
    DBS_ASSIGN_OR_RETURN(const Column* col, b.Find(k));
    if (ordered.insert(col->name).second) order.push_back({col, false});
  }
  bool keyset = !t.primary_key.empty();
  for (const auto& [col, desc] : order) keyset = keyset && !col->nullable;
  out.paging = keyset ? "keyset" : "offset";
  DBS_ASSIGN_OR_RETURN(std::string where, b.Where(r.filters));
  if (r.after) {
    if (!keyset) {
      return Status::InvalidArgument(
          "after: this order pages by offset (no primary key, or a nullable sort column)");
    }
    if (!r.after->is_array() || r.after->size() != order.size()) {
      return Status::InvalidArgument("after must be the nextCursor of the previous page (" +
                                     std::to_string(order.size()) + " values)");
    }
    // (c1, c2, ...) after (v1, v2, ...) in the order's directions, spelled out so that mixed
    // directions work: c1 > v1 OR (c1 = v1 AND c2 > v2) OR ...
    std::string any;
    for (size_t i = 0; i < order.size(); ++i) {
      std::string term;
      for (size_t j = 0; j < i; ++j) {
        DBS_ASSIGN_OR_RETURN(std::string p, b.Param(*order[j].first, (*r.after)[j]));
        term += b.Quote(order[j].first->name) + " = " + p + " AND ";
      }
      DBS_ASSIGN_OR_RETURN(std::string p, b.Param(*order[i].first, (*r.after)[i]));
      term += b.Quote(order[i].first->name) + (order[i].second ? " < " : " > ") + p;
      any += (any.empty() ? "(" : " OR (") + term + ")";
    }
    where = where.empty() ? any : "(" + where + ") AND (" + any + ")";
  }
  std::string sql = "SELECT " + select + " FROM " + b.Table();
  if (!where.empty()) sql += " WHERE " + where;
  std::string by;
  for (const auto& [col, desc] : order) {
    by += (by.empty() ? "" : ", ") + b.Quote(col->name) + (desc ? " DESC" : "");
  }
  if (!by.empty()) sql += " ORDER BY " + by;
  sql += " LIMIT " + std::to_string(r.limit + 1);
  if (!keyset && r.offset > 0) sql += " OFFSET " + std::to_string(r.offset);
  out.statement = sql;
  DBS_ASSIGN_OR_RETURN(StmtResult res, RunReadOnly(c, sql, b.params(), r.timeout_ms));
  const bool more = static_cast<int64_t>(res.rows.size()) > r.limit;
  for (size_t i = 0; i < res.rows.size() && static_cast<int64_t>(i) < r.limit; ++i) {
    out.rows.push_back(std::move(res.rows[i]));
  }
  if (more) {
    if (keyset) {
      json cursor = json::array();
      const json& last = out.rows.back();
      for (const auto& [col, desc] : order) {
        cursor.push_back(last[static_cast<size_t>(t.FindColumn(col->name))]);
      }
      out.next_cursor = cursor;
    } else {
      out.next_offset = r.offset + r.limit;
    }
  }
  out.elapsed_ms = Since(t0);
  return out;
}

Result<CountResult> CountTableRows(const ConnectionConfig& c, const std::string& schema,
                                   const std::string& table, const std::vector<RowFilter>& filters,
                                   bool exact, int64_t timeout_ms) {
  DBS_ASSIGN_OR_RETURN(TableSchema t, DescribeTable(c, schema, table));
  SqlBuilder b(c.engine, t);
  DBS_ASSIGN_OR_RETURN(std::string where, b.Where(filters));
  CountResult out;
  out.exact = exact;
  if (exact) {
    std::string sql = "SELECT count(*) FROM " + b.Table();
    if (!where.empty()) sql += " WHERE " + where;
    DBS_ASSIGN_OR_RETURN(StmtResult res, RunReadOnly(c, sql, b.params(), timeout_ms));
    if (!res.rows.empty())
      out.rows = res.rows[0][0].is_number() ? res.rows[0][0].get<int64_t>()
                                            : std::stoll(res.rows[0][0].get<std::string>());
    return out;
  }
  if (c.engine == Engine::kPostgres) {
    std::string sql = "EXPLAIN (FORMAT JSON) SELECT 1 FROM " + b.Table();
    if (!where.empty()) sql += " WHERE " + where;
    DBS_ASSIGN_OR_RETURN(StmtResult res, RunReadOnly(c, sql, b.params(), timeout_ms));
    if (!res.rows.empty() && res.rows[0][0].is_string()) {
      json plan = json::parse(res.rows[0][0].get<std::string>(), nullptr, false);
      if (plan.is_array() && !plan.empty()) {
        out.rows = plan[0]["Plan"].value("Plan Rows", int64_t{0});
      }
    }
    return out;
  }
  out.rows = static_cast<int64_t>(t.estimated_rows.value_or(0));
  return out;
}

Result<std::string> TableDdl(const ConnectionConfig& c, const std::string& schema,
                             const std::string& table) {
  DBS_ASSIGN_OR_RETURN(TableSchema t, DescribeTable(c, schema, table));
  if (c.engine == Engine::kMysql) {
    DBS_ASSIGN_OR_RETURN(
        StmtResult res,
        RunReadOnly(c, "SHOW CREATE TABLE " + mysql::QuoteQualified(t.schema, t.name), {}, 30000));
    if (res.rows.empty() || res.rows[0].size() < 2)
      return Status::NotFound("no DDL for " + t.QualifiedName());
    return res.rows[0][1].get<std::string>() + ";";
  }
  return PostgresDdl(c, t);
}

Result<json> ProfileTable(const ConnectionConfig& c, const std::string& schema,
                          const std::string& table, int64_t sample_rows, int64_t timeout_ms,
                          const std::string& temp_dir) {
  if (sample_rows < 0) return Status::InvalidArgument("sampleRows must be 0 (all) or more");
  DBS_ASSIGN_OR_RETURN(TableSchema t, DescribeTable(c, schema, table));
  auto dq = [](const std::string& s) {
    std::string out = "\"";
    for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return out + "\"";
  };
  std::string from = "src." + dq(t.schema) + "." + dq(t.name);
  std::string sql = "WITH t AS (SELECT * FROM " + from +
                    (sample_rows > 0 ? " LIMIT " + std::to_string(sample_rows) : "") +
                    ") SELECT count(*)";
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const std::string q = dq(t.columns[i].name);
    sql += ", count(" + q + "), min(" + q + ")::VARCHAR, max(" + q +
           ")::VARCHAR, approx_count_distinct(" + q + "), avg(length(" + q + "::VARCHAR))";
  }
  sql += " FROM t";
  federated::FederatedOptions o;
  o.max_rows = 1;
  o.timeout_ms = timeout_ms;
  o.temp_dir = temp_dir;
  DBS_ASSIGN_OR_RETURN(federated::FederatedResult res, federated::Run({{"src", c}}, sql, o));
  if (res.rows.empty()) return Status::Internal("the profile returned no row");
  const json& row = res.rows[0];
  const int64_t rows = row[0].get<int64_t>();
  json cols = json::array();
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const size_t b = 1 + i * 5;
    const int64_t nonnull = row[b].get<int64_t>();
    cols.push_back({{"name", t.columns[i].name},
                    {"type", t.columns[i].source_type},
                    {"nullable", t.columns[i].nullable},
                    {"min", row[b + 1]},
                    {"max", row[b + 2]},
                    {"nulls", rows - nonnull},
                    {"nullsPercent", rows == 0 ? 0.0
                                               : 100.0 * static_cast<double>(rows - nonnull) /
                                                     static_cast<double>(rows)},
                    {"approxDistinct", row[b + 3]},
                    {"avgLength", row[b + 4]}});
  }
  return json{{"schema", t.schema},         {"table", t.name},           {"rows", rows},
              {"sampled", sample_rows > 0}, {"sampleRows", sample_rows}, {"columns", cols},
              {"elapsedMs", res.elapsed_ms}};
}

Result<json> ErDiagram(const ConnectionConfig& c, const std::string& schema, size_t max_tables) {
  DBS_ASSIGN_OR_RETURN(auto source, Source::Open(c));
  DBS_ASSIGN_OR_RETURN(std::vector<TableRef> all, source->ListAllTables());
  const std::string want = schema.empty() ? source->DefaultSchema() : schema;
  std::vector<TableRef> tables;
  for (const auto& t : all) {
    if (want == "*" || t.schema == want) tables.push_back(t);
  }
  if (tables.size() > max_tables) {
    return Status::ResourceExhausted(std::to_string(tables.size()) +
                                     " tables are more than an ER diagram shows (at most " +
                                     std::to_string(max_tables) + "): pick one schema");
  }
  json nodes = json::array(), edges = json::array();
  std::set<std::string> ids;
  for (const auto& ref : tables) {
    DBS_ASSIGN_OR_RETURN(TableSchema t, source->Describe(ref));
    const std::string id = t.schema + "." + t.name;
    ids.insert(id);
    json cols = json::array();
    std::set<std::string> pk(t.primary_key.begin(), t.primary_key.end());
    for (const auto& col : t.columns) {
      cols.push_back({{"name", col.name},
                      {"type", col.source_type},
                      {"nullable", col.nullable},
                      {"primaryKey", pk.count(col.name) > 0}});
    }
    nodes.push_back({{"id", id}, {"schema", t.schema}, {"name", t.name}, {"columns", cols}});
    for (const auto& fk : t.foreign_keys) {
      const std::string to =
          (fk.ref_schema.empty() ? t.schema : fk.ref_schema) + "." + fk.ref_table;
      edges.push_back({{"id", id + ":" + fk.name},
                       {"name", fk.name},
                       {"from", id},
                       {"fromColumns", fk.columns},
                       {"to", to},
                       {"toColumns", fk.ref_columns},
                       {"onDelete", fk.on_delete},
                       {"onUpdate", fk.on_update}});
    }
  }
  // An edge to a table outside the diagram keeps its target as a node without columns.
  for (const auto& e : edges) {
    const std::string to = e["to"];
    if (ids.insert(to).second) {
      const size_t dot = to.find('.');
      nodes.push_back({{"id", to},
                       {"schema", to.substr(0, dot)},
                       {"name", to.substr(dot + 1)},
                       {"columns", json::array()},
                       {"external", true}});
    }
  }
  return json{{"schema", want}, {"nodes", nodes}, {"edges", edges}};
}

}  // namespace dbs::explorer

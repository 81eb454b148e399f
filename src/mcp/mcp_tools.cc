#include "mcp/mcp_tools.h"

#include "explorer/browse.h"
#include "explorer/console.h"
#include "explorer/files.h"
#include "explorer/sql_text.h"
#include "federated/federated.h"
#include "mcp/redact.h"

namespace dbs::mcp {

using nlohmann::json;

const char kInstructions[] =
    "Read-only access to a dbstreams installation: its saved database connections (PostgreSQL, "
    "MySQL/MariaDB), their catalogs, table structures and rows, SQL SELECTs (one connection, or "
    "several joined by federated SQL), and the streams that move data with their runs and logs. "
    "Nothing here can change data, configuration or stream state. Start with list_connections.";

namespace {

json Str(const std::string& d) { return {{"type", "string"}, {"description", d}}; }
json Int(const std::string& d, int64_t min, int64_t max, int64_t def) {
  return {{"type", "integer"},
          {"description", d},
          {"minimum", min},
          {"maximum", max},
          {"default", def}};
}
json Schema(json props, std::vector<std::string> required) {
  return {{"type", "object"},
          {"properties", std::move(props)},
          {"required", required},
          {"additionalProperties", false}};
}

Result<std::string> ArgString(const json& a, const std::string& name, bool required) {
  if (!a.contains(name) || a[name].is_null()) {
    if (required) return Status::InvalidArgument(name + " is required");
    return std::string();
  }
  if (!a[name].is_string()) return Status::InvalidArgument(name + " must be a string");
  return a[name].get<std::string>();
}
Result<int64_t> ArgInt(const json& a, const std::string& name, int64_t def, int64_t min,
                       int64_t max) {
  if (!a.contains(name) || a[name].is_null()) return def;
  if (!a[name].is_number_integer() || a[name].get<int64_t>() < min ||
      a[name].get<int64_t>() > max) {
    return Status::InvalidArgument(name + " must be an integer from " + std::to_string(min) +
                                   " to " + std::to_string(max));
  }
  return a[name].get<int64_t>();
}

// Wraps a tool so that whatever it returns (errors too) is redacted.
McpTool Tool(std::string name, std::string title, std::string description, json schema,
             std::function<Result<json>(const json&)> run) {
  return {std::move(name), std::move(title), std::move(description), std::move(schema),
          [run](const json& args) -> Result<json> {
            auto out = run(args);
            if (!out.ok()) return Status(out.status().code(), RedactText(out.status().message()));
            return Redact(*out);
          }};
}

json ConsoleColumns(const std::vector<explorer::ConsoleColumn>& cols) {
  json out = json::array();
  for (const auto& c : cols) out.push_back({{"name", c.name}, {"type", c.type}});
  return out;
}

Result<std::vector<federated::FederatedSource>> Sources(const ToolDeps& d, const json& a) {
  if (!a.contains("sources") || !a["sources"].is_array() || a["sources"].empty() ||
      a["sources"].size() > 16) {
    return Status::InvalidArgument("sources must be 1 to 16 {alias, connectionId} objects");
  }
  std::vector<federated::FederatedSource> out;
  for (const auto& s : a["sources"]) {
    if (!s.is_object() || !s.contains("alias") || !s["alias"].is_string() ||
        !s.contains("connectionId") || !s["connectionId"].is_string()) {
      return Status::InvalidArgument("each source is {\"alias\": \"pg1\", \"connectionId\": ...}");
    }
    DBS_RETURN_IF_ERROR(federated::ValidateAlias(s["alias"]));
    DBS_ASSIGN_OR_RETURN(ConnectionConfig c, d.connection(s["connectionId"]));
    out.push_back({s["alias"], std::move(c)});
  }
  return out;
}

}  // namespace

std::vector<McpTool> MakeTools(const ToolDeps& d) {
  std::vector<McpTool> t;
  const json conn_arg = Str("a connection id from list_connections");
  auto connection = [d](const json& a) -> Result<ConnectionConfig> {
    DBS_ASSIGN_OR_RETURN(std::string id, ArgString(a, "connectionId", true));
    auto c = d.connection(id);
    if (!c.ok()) return Status::NotFound("no connection " + id + ": see list_connections");
    return c;
  };

  t.push_back(Tool(
      "list_connections", "List connections",
      "The saved database connections: id, name and kind (postgres or mysql). Never their "
      "addresses or credentials.",
      Schema({{"search", Str("a substring of the name")}}, {}), [d](const json& a) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(std::string search, ArgString(a, "search", false));
        int64_t total = 0;
        DBS_ASSIGN_OR_RETURN(auto list, d.config->ListConnections(search, 0, 500, &total));
        json items = json::array();
        for (const auto& r : list) {
          items.push_back({{"id", r.id}, {"name", r.name}, {"kind", r.spec.value("engine", "")}});
        }
        return json{{"connections", items}, {"total", total}};
      }));
  for (const char* kind : {"databases", "schemas"}) {
    const std::string k = kind;
    t.push_back(
        Tool("list_" + k, "List " + k,
             "The " + k + " of a connection (MySQL/MariaDB: databases and schemas are the same).",
             Schema({{"connectionId", conn_arg}}, {"connectionId"}),
             [d, k, connection](const json& a) -> Result<json> {
               DBS_ASSIGN_OR_RETURN(ConnectionConfig c, connection(a));
               DBS_ASSIGN_OR_RETURN(json list, d.browse(c, k, ""));
               return json{{k, list}};
             }));
  }
  t.push_back(Tool(
      "list_tables", "List tables and views",
      "Tables and views of a connection, optionally of one schema (MySQL: database).",
      Schema({{"connectionId", conn_arg}, {"schema", Str("only this schema")}}, {"connectionId"}),
      [d, connection](const json& a) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(ConnectionConfig c, connection(a));
        DBS_ASSIGN_OR_RETURN(std::string schema, ArgString(a, "schema", false));
        DBS_ASSIGN_OR_RETURN(json tables, d.browse(c, "tables", schema));
        DBS_ASSIGN_OR_RETURN(json views, d.browse(c, "views", schema));
        return json{{"tables", tables}, {"views", views}};
      }));
  t.push_back(Tool(
      "describe_table", "Describe a table",
      "Columns (types, nullability, defaults), primary key, indexes, foreign keys and the DDL of "
      "a table or view.",
      Schema({{"connectionId", conn_arg},
              {"schema", Str("the schema (MySQL: database)")},
              {"table", Str("the table or view")}},
             {"connectionId", "schema", "table"}),
      [d, connection](const json& a) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(ConnectionConfig c, connection(a));
        DBS_ASSIGN_OR_RETURN(std::string schema, ArgString(a, "schema", true));
        DBS_ASSIGN_OR_RETURN(std::string table, ArgString(a, "table", true));
        DBS_ASSIGN_OR_RETURN(json desc, d.describe(c, schema, table));
        auto ddl = explorer::TableDdl(c, schema, table);
        desc["ddl"] = ddl.ok() ? json(*ddl) : json(nullptr);
        return desc;
      }));
  t.push_back(
      Tool("sample_rows", "Sample rows",
           "The first rows of a table or view in primary-key order (100 by default, at most 1000).",
           Schema({{"connectionId", conn_arg},
                   {"schema", Str("the schema (MySQL: database)")},
                   {"table", Str("the table or view")},
                   {"limit", Int("rows", 1, 1000, 100)}},
                  {"connectionId", "schema", "table"}),
           [connection](const json& a) -> Result<json> {
             DBS_ASSIGN_OR_RETURN(ConnectionConfig c, connection(a));
             explorer::RowsRequest r;
             DBS_ASSIGN_OR_RETURN(r.schema, ArgString(a, "schema", true));
             DBS_ASSIGN_OR_RETURN(r.table, ArgString(a, "table", true));
             DBS_ASSIGN_OR_RETURN(r.limit, ArgInt(a, "limit", 100, 1, 1000));
             DBS_ASSIGN_OR_RETURN(explorer::RowsResult rows, explorer::BrowseRows(c, r));
             return json{{"columns", ConsoleColumns(rows.columns)},
                         {"rows", rows.rows},
                         {"more", rows.next_cursor.has_value() || rows.next_offset.has_value()}};
           }));
  t.push_back(
      Tool("run_select", "Run a read-only SELECT",
           "Runs one SELECT (or WITH ... SELECT) in the connection's own SQL, in a read-only "
           "transaction enforced by the database. Anything else is refused. At most maxRows rows "
           "(100 by default, at most 1000).",
           Schema({{"connectionId", conn_arg},
                   {"sql", Str("one SELECT or WITH statement")},
                   {"maxRows", Int("rows", 1, 1000, 100)},
                   {"timeoutMs", Int("cancelled on the server past this", 1, 300000, 30000)}},
                  {"connectionId", "sql"}),
           [connection](const json& a) -> Result<json> {
             DBS_ASSIGN_OR_RETURN(ConnectionConfig c, connection(a));
             DBS_ASSIGN_OR_RETURN(std::string sql, ArgString(a, "sql", true));
             DBS_ASSIGN_OR_RETURN(int64_t max_rows, ArgInt(a, "maxRows", 100, 1, 1000));
             DBS_ASSIGN_OR_RETURN(int64_t timeout, ArgInt(a, "timeoutMs", 30000, 1, 300000));
             DBS_RETURN_IF_ERROR(explorer::CheckSelectOnly(sql));
             DBS_ASSIGN_OR_RETURN(auto session, explorer::QuerySession::Open(c, true, timeout));
             auto page = session->Execute(sql, max_rows);
             (void)session->Close();
             if (!page.ok()) return page.status();
             return json{{"columns", ConsoleColumns(page->columns)},
                         {"rows", page->rows},
                         {"truncated", page->has_more}};
           }));
  const json sources_arg = {
      {"type", "array"},
      {"description", "the connections the statement names, each with its alias (pg1, my1)"},
      {"items",
       {{"type", "object"},
        {"properties",
         {{"alias", Str("a letter, then letters, digits or _")}, {"connectionId", conn_arg}}},
        {"required", {"alias", "connectionId"}},
        {"additionalProperties", false}}}};
  const std::string fed_sql =
      "one DuckDB SELECT naming tables as alias.schema.table, e.g. SELECT ... FROM "
      "pg1.public.users u JOIN my1.shop.orders o ON o.user_id = u.id";
  t.push_back(Tool("federated_explain", "Explain a federated SELECT",
                   "DuckDB's plan of a SELECT over several connections, and the statement each "
                   "source is asked for. Reads no rows.",
                   Schema({{"sources", sources_arg}, {"sql", Str(fed_sql)}}, {"sources", "sql"}),
                   [d](const json& a) -> Result<json> {
                     DBS_ASSIGN_OR_RETURN(auto sources, Sources(d, a));
                     DBS_ASSIGN_OR_RETURN(std::string sql, ArgString(a, "sql", true));
                     federated::FederatedOptions o;
                     DBS_ASSIGN_OR_RETURN(federated::FederatedPlan p,
                                          federated::Explain(sources, sql, o));
                     json s = json::array();
                     for (const auto& x : p.sources) {
                       s.push_back({{"alias", x.alias}, {"statement", x.statement}});
                     }
                     return json{{"plan", p.text}, {"sources", s}};
                   }));
  t.push_back(
      Tool("federated_run", "Run a federated SELECT",
           "Runs one read-only SELECT joining tables of several connections in the embedded DuckDB "
           "(at most maxRows rows, 100 by default, at most 1000).",
           Schema({{"sources", sources_arg},
                   {"sql", Str(fed_sql)},
                   {"maxRows", Int("rows", 1, 1000, 100)},
                   {"timeoutMs", Int("interrupted past this", 1, 300000, 60000)}},
                  {"sources", "sql"}),
           [d](const json& a) -> Result<json> {
             DBS_ASSIGN_OR_RETURN(auto sources, Sources(d, a));
             DBS_ASSIGN_OR_RETURN(std::string sql, ArgString(a, "sql", true));
             federated::FederatedOptions o;
             DBS_ASSIGN_OR_RETURN(o.max_rows, ArgInt(a, "maxRows", 100, 1, 1000));
             DBS_ASSIGN_OR_RETURN(o.timeout_ms, ArgInt(a, "timeoutMs", 60000, 1, 300000));
             DBS_ASSIGN_OR_RETURN(federated::FederatedResult r, federated::Run(sources, sql, o));
             json cols = json::array();
             for (const auto& c : r.columns) cols.push_back({{"name", c.name}, {"type", c.type}});
             return json{{"columns", cols}, {"rows", r.rows}, {"truncated", r.truncated}};
           }));
  t.push_back(Tool(
      "list_streams", "List streams",
      "The streams (data movements between connections) with their mode, source and target "
      "connection ids and their last run's state.",
      Schema({{"search", Str("a substring of the name")}}, {}), [d](const json& a) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(std::string search, ArgString(a, "search", false));
        int64_t total = 0;
        DBS_ASSIGN_OR_RETURN(auto list, d.config->ListStreams(search, 0, 500, &total));
        json items = json::array();
        for (const auto& s : list) {
          json last = nullptr;
          auto runs = d.config->ListRuns(s.id, 1);
          if (runs.ok() && !runs->empty()) {
            const auto& r = runs->front();
            last = {{"id", r.id},
                    {"state", r.state},
                    {"error", r.error},
                    {"startedAt", r.started_at},
                    {"endedAt", r.ended_at},
                    {"rows", r.rows}};
          }
          auto side = [&](const char* k) {
            const json& v = s.config.contains(k) ? s.config[k] : json();
            return v.is_object() ? v.value("connection", "") : std::string();
          };
          items.push_back({{"id", s.id},
                           {"name", s.name},
                           {"mode", s.config.value("mode", "load")},
                           {"sourceConnectionId", side("source")},
                           {"targetConnectionId", side("target")},
                           {"lastRun", last}});
        }
        return json{{"streams", items}, {"total", total}};
      }));
  t.push_back(Tool("get_run", "A run's state",
                   "The state of one run of a stream: progress, rows, rates, errors, "
                   "per-table figures.",
                   Schema({{"runId", Str("a run id (lastRun.id of list_streams)")}}, {"runId"}),
                   [d](const json& a) -> Result<json> {
                     DBS_ASSIGN_OR_RETURN(std::string id, ArgString(a, "runId", true));
                     DBS_ASSIGN_OR_RETURN(json st, d.run_status(id));
                     st.erase("recentLogs");
                     return st;
                   }));
  t.push_back(
      Tool("run_logs", "A run's recent logs",
           "The newest log records of a run's stream (secrets redacted).",
           Schema({{"runId", Str("a run id")}, {"limit", Int("records", 1, 500, 100)}}, {"runId"}),
           [d](const json& a) -> Result<json> {
             DBS_ASSIGN_OR_RETURN(std::string id, ArgString(a, "runId", true));
             DBS_ASSIGN_OR_RETURN(int64_t limit, ArgInt(a, "limit", 100, 1, 500));
             DBS_ASSIGN_OR_RETURN(store::RunRecord r, d.config->GetRun(id));
             json logs = json::array();
             for (auto& rec : d.recent_logs(r.stream_name, static_cast<size_t>(limit))) {
               logs.push_back(std::move(rec));
             }
             return json{{"runId", id}, {"stream", r.stream_name}, {"logs", logs}};
           }));
  // Files in the configured folders (DBS_FILE_ROOTS).
  auto need_roots = [d]() -> Status {
    if (!d.file_roots.empty()) return Status::Ok();
    return Status::FailedPrecondition("no file folders are configured on this server");
  };
  json roots_desc = Str("a file root (list_files without arguments lists them)");
  t.push_back(Tool("list_files", "List files",
                   "The configured file folders, or one folder's files and sub-folders.",
                   Schema({{"root", roots_desc}, {"path", Str("a folder under the root")}}, {}),
                   [d, need_roots](const json& a) -> Result<json> {
                     DBS_RETURN_IF_ERROR(need_roots());
                     DBS_ASSIGN_OR_RETURN(std::string root, ArgString(a, "root", false));
                     if (root.empty()) return json{{"roots", d.file_roots}};
                     DBS_ASSIGN_OR_RETURN(std::string path, ArgString(a, "path", false));
                     return explorer::ListFolder(d.file_roots, root, path, 1000);
                   }));
  for (const bool sample : {false, true}) {
    t.push_back(Tool(
        sample ? "file_sample" : "file_schema", sample ? "A file's first rows" : "A file's schema",
        sample ? "The first rows of a CSV, JSON or Parquet file (100 by default, at most 1000)."
               : "The columns and types of a CSV, JSON or Parquet file (DuckDB's reading).",
        Schema(sample ? json{{"root", roots_desc},
                             {"path", Str("the file, relative to the root; globs allowed")},
                             {"limit", Int("rows", 1, 1000, 100)}}
                      : json{{"root", roots_desc},
                             {"path", Str("the file, relative to the root; globs allowed")}},
               {"root", "path"}),
        [d, need_roots, sample](const json& a) -> Result<json> {
          DBS_RETURN_IF_ERROR(need_roots());
          DBS_ASSIGN_OR_RETURN(std::string root, ArgString(a, "root", true));
          DBS_ASSIGN_OR_RETURN(std::string path, ArgString(a, "path", true));
          DBS_ASSIGN_OR_RETURN(int64_t limit, ArgInt(a, "limit", 100, 1, 1000));
          DBS_ASSIGN_OR_RETURN(std::string file, explorer::ResolveFile(d.file_roots, root, path));
          federated::FederatedOptions o;
          DBS_ASSIGN_OR_RETURN(federated::FederatedResult r,
                               explorer::FileSample(d.file_roots, file, sample ? limit : 0, o));
          json cols = json::array();
          for (const auto& c : r.columns) cols.push_back({{"name", c.name}, {"type", c.type}});
          json out = {{"file", file}, {"columns", cols}};
          if (sample) out["rows"] = r.rows;
          return out;
        }));
  }
  return t;
}

}  // namespace dbs::mcp

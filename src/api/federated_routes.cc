#include "api/federated_routes.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "federated/federated.h"
#include "federated/pushdown.h"
#include "federated/result_stream.h"

namespace dbs::api {

using nlohmann::json;

namespace {

constexpr size_t kMaxSources = 16;
constexpr size_t kMaxSqlBytes = 256 * 1024;

struct Request {
  std::vector<federated::FederatedSource> sources;
  std::string sql;
  federated::FederatedOptions options;
};

Status Field(const std::string& name, const std::string& what) {
  return Status::InvalidArgument(name + " " + what);
}

}  // namespace

Result<std::vector<federated::FederatedSource>> ParseFederatedSources(
    const json& sources,
    const std::function<Result<ConnectionConfig>(const std::string&)>& connection) {
  std::vector<federated::FederatedSource> out;
  if (!sources.is_array() || sources.empty() || sources.size() > kMaxSources) {
    return Field("sources", "must be an array of 1 to " + std::to_string(kMaxSources) +
                                " {\"alias\", \"connectionId\"} objects");
  }
  // An omitted alias defaults by kind, in order: pg1, pg2, ... for PostgreSQL, my1, my2, ...
  // for MySQL/MariaDB, s3, s3_2, ... for S3 buckets (DBConvert's defaults), skipping aliases
  // the request names itself.
  std::set<std::string> named;
  for (const json& s : sources) {
    if (s.is_object() && s.contains("alias") && s["alias"].is_string()) {
      named.insert(federated::Lower(s["alias"].get<std::string>()));
    }
  }
  std::map<std::string, int> next;
  for (size_t i = 0; i < sources.size(); ++i) {
    const json& s = sources[i];
    const std::string at = "sources[" + std::to_string(i) + "]";
    const bool has_alias = s.is_object() && s.contains("alias");
    if (!s.is_object() || s.size() != (has_alias ? 2u : 1u) ||
        (has_alias && !s["alias"].is_string()) || !s.contains("connectionId") ||
        !s["connectionId"].is_string()) {
      return Field(at,
                   "must be {\"alias\": \"pg1\", \"connectionId\": \"c_...\"} (alias optional)");
    }
    federated::FederatedSource fs;
    auto conn = connection(s["connectionId"].get<std::string>());
    if (!conn.ok()) return Field(at + ".connectionId", conn.status().message());
    fs.connection = std::move(*conn);
    if (has_alias) {
      fs.alias = s["alias"].get<std::string>();
    } else {
      // Buckets and folders: s3, s3_2, ... and files, files_2, ...
      const bool file = fs.connection.engine == Engine::kFile;
      const std::string kind = file ? (fs.connection.s3 ? "s3" : "files")
                               : fs.connection.engine == Engine::kPostgres ? "pg"
                                                                           : "my";
      do {
        const int n = ++next[kind];
        fs.alias =
            file ? (n == 1 ? kind : kind + "_" + std::to_string(n)) : kind + std::to_string(n);
      } while (named.count(fs.alias));
      named.insert(fs.alias);
    }
    Status a = federated::ValidateAlias(fs.alias);
    if (!a.ok()) return Field(at + ".alias", a.message());
    out.push_back(std::move(fs));
  }
  return out;
}

namespace {

Result<Request> ParseRequest(const json& body, const FederatedRouteDeps& deps) {
  Request r;
  for (const auto& [k, v] : body.items()) {
    if (k != "sources" && k != "sql" && k != "maxRows" && k != "timeoutMs") {
      return Field(k.size() <= 64 ? k : k.substr(0, 64) + "...",
                   "is not a known field (sources, sql, maxRows, timeoutMs)");
    }
  }
  if (!body.contains("sql") || !body["sql"].is_string() || body["sql"].get<std::string>().empty()) {
    return Field("sql", "is required: one SELECT statement");
  }
  r.sql = body["sql"].get<std::string>();
  if (r.sql.size() > kMaxSqlBytes) {
    return Field("sql", "must be at most " + std::to_string(kMaxSqlBytes) + " bytes");
  }
  if (body.contains("maxRows")) {
    const json& m = body["maxRows"];
    if (!m.is_number_integer() || m.get<int64_t>() < 1 || m.get<int64_t>() > 100000) {
      return Field("maxRows", "must be an integer from 1 to 100000");
    }
    r.options.max_rows = m.get<int64_t>();
  }
  if (body.contains("timeoutMs")) {
    const json& t = body["timeoutMs"];
    if (!t.is_number_integer() || t.get<int64_t>() < 1 || t.get<int64_t>() > 3600000) {
      return Field("timeoutMs", "must be an integer from 1 to 3600000");
    }
    r.options.timeout_ms = t.get<int64_t>();
  }
  DBS_ASSIGN_OR_RETURN(
      r.sources,
      ParseFederatedSources(body.contains("sources") ? body["sources"] : json(), deps.connection));
  r.options.memory_limit = deps.memory_limit;
  return r;
}

// A spill folder for one request, removed with it.
class TempDir {
 public:
  explicit TempDir(const std::string& root) {
    static std::atomic<uint64_t> n{0};
    std::error_code ec;
    std::filesystem::path base =
        root.empty() ? std::filesystem::temp_directory_path(ec) : std::filesystem::path(root);
    path_ = (base / ("dbstreams-federated-" + std::to_string(getpid()) + "-" +
                     std::to_string(n.fetch_add(1))))
                .string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Statement errors are the request's; anything a source answered is upstream.
Status Classify(const Status& s) {
  if (s.ok() || s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ||
      s.code() == StatusCode::kTimeout) {
    return s;
  }
  return Status::Unavailable("a source answered: " + s.ToString());
}

}  // namespace

Result<json> SavedStreamBody(const json& body, const FederatedRouteDeps& deps, json* columns) {
  if (!body.is_object()) return Status::InvalidArgument("the request body must be a JSON object");
  static const std::set<std::string> known = {"name",  "sources",      "sql",          "target",
                                              "table", "targetSchema", "schemaPolicy", "writeMode"};
  json query = json::object();
  for (const auto& [k, v] : body.items()) {
    if (!known.count(k)) {
      return Field(k.size() <= 64 ? k : k.substr(0, 64) + "...",
                   "is not a known field (name, sources, sql, target, table, targetSchema, "
                   "schemaPolicy, writeMode)");
    }
    if (k == "sources" || k == "sql") query[k] = v;
  }
  if (!body.contains("name") || !body["name"].is_string()) return Field("name", "is required");
  if (!body.contains("target") || !body["target"].is_string()) {
    return Field("target", "is required: the id of the connection to write to");
  }
  std::string table = "result";
  if (body.contains("table")) {
    if (!body["table"].is_string() || body["table"].get<std::string>().empty() ||
        body["table"].get<std::string>().size() > 63) {
      return Field("table", "must be a table name of 1 to 63 characters");
    }
    table = body["table"].get<std::string>();
  }
  DBS_ASSIGN_OR_RETURN(Request r, ParseRequest(query, deps));
  TempDir tmp(deps.temp_root);
  r.options.temp_dir = tmp.path();
  auto cols = federated::DescribeSelect(r.sources, r.sql, r.options);
  if (!cols.ok()) return Classify(cols.status());
  *columns = json::array();
  for (const Column& c : *cols) {
    columns->push_back({{"name", c.name}, {"type", std::string(LogicalTypeName(c.type))}});
  }
  json members = json::array();
  for (size_t i = 0; i < r.sources.size(); ++i) {
    members.push_back(
        {{"alias", r.sources[i].alias}, {"connection", body["sources"][i]["connectionId"]}});
  }
  json out = {{"name", body["name"]},
              {"source", {{"federated", members}}},
              {"target", {{"connection", body["target"]}}},
              {"tables", json::array({{{"name", table}, {"query", r.sql}}})}};
  for (const char* k : {"targetSchema", "schemaPolicy", "writeMode"}) {
    if (body.contains(k)) out[k] = body[k];
  }
  return out;
}

void RegisterFederatedRoutes(const std::string& v1, const AddFederatedRoute& add,
                             FederatedRouteDeps deps) {
  add("POST", v1 + "/explorer/federated", [deps](const json& body) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(Request r, ParseRequest(body, deps));
    TempDir tmp(deps.temp_root);
    r.options.temp_dir = tmp.path();
    auto out = federated::Run(r.sources, r.sql, r.options);
    if (!out.ok()) return Classify(out.status());
    json cols = json::array();
    for (const auto& c : out->columns) cols.push_back({{"name", c.name}, {"type", c.type}});
    json aliases = json::array();
    for (const auto& s : r.sources) aliases.push_back(s.alias);
    return json{{"columns", cols},
                {"rows", out->rows},
                {"truncated", out->truncated},
                {"elapsedMs", out->elapsed_ms},
                {"aliases", aliases}};
  });
  add("POST", v1 + "/explorer/federated/explain", [deps](const json& body) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(Request r, ParseRequest(body, deps));
    TempDir tmp(deps.temp_root);
    r.options.temp_dir = tmp.path();
    auto plan = federated::Explain(r.sources, r.sql, r.options);
    if (!plan.ok()) return Classify(plan.status());
    json sources = json::array();
    for (const auto& s : plan->sources) {
      sources.push_back({{"alias", s.alias}, {"statement", s.statement}});
    }
    return json{{"text", plan->text}, {"sources", sources}};
  });
}

}  // namespace dbs::api

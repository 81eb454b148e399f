#include "api/connections.h"

#include <chrono>
#include <filesystem>
#include <set>

#include "core/config.h"
#include "explorer/files.h"
#include "mysql/mysql_client.h"
#include "postgres/pg_client.h"
#include "sources/files/remote.h"
#include "sources/source.h"

namespace dbs::api {

using nlohmann::json;

namespace {

// Percent-encodes everything but unreserved characters (and '/' with keep_slash).
std::string PctEncode(const std::string& s, bool keep_slash = false) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

Status Field(const std::string& field, const std::string& msg) {
  return Status::InvalidArgument(field + " " + msg);
}

// A client-chosen name for an error message: at most 64 bytes, so that a huge key is not echoed.
std::string Clip(const std::string& s) { return s.size() <= 64 ? s : s.substr(0, 64) + "..."; }

// Upper bounds of the fields (bytes): a connection is small; the limits keep one record (and a
// list of them) far below the body cap.
constexpr size_t kMaxName = 128;
constexpr size_t kMaxUrl = 2048;
constexpr size_t kMaxHost = 253;  // a DNS name
constexpr size_t kMaxUser = 128;
constexpr size_t kMaxPassword = 1024;
constexpr size_t kMaxDatabase = 128;
constexpr size_t kMaxParams = 32;
constexpr size_t kMaxParamKey = 64;
constexpr size_t kMaxParamValue = 1024;
constexpr size_t kMaxSslValue = 16384;     // a file path or an inline PEM certificate
constexpr size_t kMaxPrefix = 1024;        // an S3 key prefix
constexpr size_t kMaxSessionToken = 8192;  // AWS STS tokens run to about 2 KB

size_t MaxLength(const std::string& k) {
  if (k == "name") return kMaxName;
  if (k == "url") return kMaxUrl;
  if (k == "host") return kMaxHost;
  if (k == "user") return kMaxUser;
  if (k == "password") return kMaxPassword;
  if (k == "sessionToken") return kMaxSessionToken;
  if (k == "database") return kMaxDatabase;
  if (k == "prefix" || k == "endpoint") return kMaxPrefix;
  return 64;  // engine, bucket, region, addressing
}

}  // namespace

Result<std::string> FolderInFileRoots(const std::string& path) {
  const std::vector<std::string> roots =
      explorer::FileRoots(SystemEnv("DBS_FILE_ROOTS").value_or(""));
  if (roots.empty()) {
    return Field("path",
                 "no file roots are configured: start the server with "
                 "DBS_FILE_ROOTS=/folder[:/other] to allow file connections inside them");
  }
  namespace fs = std::filesystem;
  const fs::path p(path);
  if (path.empty() || !p.is_absolute()) return Field("path", "must be an absolute folder path");
  for (const auto& part : p) {
    if (part == "..") return Field("path", "must not contain '..'");
  }
  // The deepest folder that exists, with its links resolved, then the parts still to create.
  fs::path existing = p, rest;
  std::error_code ec;
  while (!fs::exists(existing, ec) && existing.has_relative_path()) {
    rest = existing.filename() / rest;
    existing = existing.parent_path();
  }
  const fs::path real = fs::canonical(existing, ec);
  if (ec) return Field("path", "cannot be resolved: " + ec.message());
  if (fs::exists(p, ec) && !fs::is_directory(p, ec)) return Field("path", "is not a folder");
  const std::string full = (rest.empty() ? real : real / rest).lexically_normal().string();
  for (const std::string& root : roots) {
    if (full == root || full.rfind(root + "/", 0) == 0) {
      return full.size() > 1 && full.back() == '/' ? full.substr(0, full.size() - 1) : full;
    }
  }
  std::string list;
  for (const std::string& r : roots) list += (list.empty() ? "" : ", ") + r;
  return Field("path", "must be inside a configured file root (" + list + ")");
}

Result<ConnectionInput> ParseConnectionBody(const json& body, bool require_name) {
  static const std::set<std::string> known = {
      "name",     "url",      "engine",     "host",         "port",   "user",
      "password", "database", "ssl",        "params",       "bucket", "prefix",
      "endpoint", "region",   "addressing", "sessionToken", "path"};
  static const std::set<std::string> s3_only = {"bucket", "prefix",     "endpoint",
                                                "region", "addressing", "sessionToken"};
  if (!body.is_object()) return Status::InvalidArgument("the request body must be a JSON object");
  for (const auto& [k, v] : body.items()) {
    if (!known.count(k)) {
      return Field(Clip(k),
                   "is not a known field (name, url, engine, host, port, user, password, "
                   "database, ssl, params; for engine s3 bucket, prefix, endpoint, region, "
                   "addressing, sessionToken; for engine file path)");
    }
    if (k == "port") {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 65535) {
        return Field("port", "must be an integer from 1 to 65535");
      }
    } else if (k == "ssl" || k == "params") {
      if (!v.is_object()) return Field(k, "must be an object");
      const bool params = k == "params";
      if (params && v.size() > kMaxParams) {
        return Field(k, "must have at most " + std::to_string(kMaxParams) + " keys");
      }
      for (const auto& [pk, pv] : v.items()) {
        if (params && (pk.empty() || pk.size() > kMaxParamKey)) {
          return Field(k, "keys must be 1 to " + std::to_string(kMaxParamKey) + " characters");
        }
        if (!pv.is_string()) return Field(k + "." + Clip(pk), "must be a string");
        const size_t max = params ? kMaxParamValue : kMaxSslValue;
        if (pv.get_ref<const std::string&>().size() > max) {
          return Field(k + "." + Clip(pk), "must be at most " + std::to_string(max) + " bytes");
        }
      }
    } else if (!v.is_string()) {
      return Field(k, "must be a string");
    } else if (v.get_ref<const std::string&>().size() > MaxLength(k)) {
      return Field(k, "must be at most " + std::to_string(MaxLength(k)) + " bytes");
    }
  }
  ConnectionInput in;
  if (require_name) {
    if (!body.contains("name")) return Field("name", "is required");
    in.name = body["name"].get<std::string>();
    if (in.name.empty()) return Field("name", "must be 1 to 128 characters");
  }
  json cj = json::object();
  const bool s3_body = body.value("engine", "") == "s3";
  const bool file_body = body.value("engine", "") == "file";
  for (const auto& [k, v] : body.items()) {
    if (s3_only.count(k) && !s3_body) {
      return Field(k, "is a field of engine s3 connections only");
    }
    if (k == "path" && !file_body) return Field(k, "is a field of engine file connections only");
    if (s3_body && (k == "host" || k == "port" || k == "database")) {
      return Field(k, "is not a field of engine s3 connections (bucket, prefix, endpoint)");
    }
    if (file_body && (k == "url" || k == "host" || k == "port" || k == "database" || k == "user" ||
                      k == "password" || k == "ssl")) {
      return Field(k, "is not a field of engine file connections (path, params)");
    }
  }
  if (file_body) {
    if (!body.contains("path")) return Field("path", "is required for engine file");
    DBS_ASSIGN_OR_RETURN(std::string folder, FolderInFileRoots(body["path"].get<std::string>()));
    cj["url"] = "file://" + PctEncode(folder, /*keep_slash=*/true);
  } else if (s3_body) {
    if (body.contains("url")) return Field("url", "cannot be given with engine s3");
    if (!body.contains("bucket")) return Field("bucket", "is required for engine s3");
    const std::string bucket = body["bucket"].get<std::string>();
    bool ok_bucket = bucket.size() >= 3 && bucket.size() <= 63;
    for (char ch : bucket) {
      if (!(std::islower(static_cast<unsigned char>(ch)) ||
            std::isdigit(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-')) {
        ok_bucket = false;
      }
    }
    if (!ok_bucket || !std::isalnum(static_cast<unsigned char>(bucket.front())) ||
        !std::isalnum(static_cast<unsigned char>(bucket.back()))) {
      return Field("bucket",
                   "must be a bucket name: 3 to 63 lowercase letters, digits, dots and hyphens, "
                   "starting and ending with a letter or digit");
    }
    if (body.contains("endpoint")) {
      const std::string e = body["endpoint"].get<std::string>();
      if (e.rfind("http://", 0) != 0 && e.rfind("https://", 0) != 0) {
        return Field("endpoint", "must be an http:// or https:// URL");
      }
    }
    cj["url"] = "s3://" + bucket + "/" + PctEncode(body.value("prefix", ""), /*keep_slash=*/true);
    for (const char* k : {"endpoint", "region", "addressing"}) {
      if (body.contains(k)) cj[k] = body[k];
    }
  } else if (body.contains("url")) {
    for (const char* k : {"engine", "host", "port"}) {
      if (body.contains(k)) {
        return Field(k, "cannot be given with url: give either url or engine/host/port");
      }
    }
    cj["url"] = body["url"];
  } else {
    if (!body.contains("engine"))
      return Field("engine", "is required (postgres or mysql) unless url is given");
    if (!body.contains("host")) return Field("host", "is required unless url is given");
    std::string engine = body["engine"].get<std::string>();
    if (engine == "postgresql") engine = "postgres";
    if (engine == "mariadb") engine = "mysql";
    if (engine != "postgres" && engine != "mysql") {
      return Field("engine", "must be postgres or mysql (mariadb), not '" + engine + "'");
    }
    std::string host = body["host"].get<std::string>();
    if (host.empty() || host.find_first_of("/@?#: ") != std::string::npos) {
      return Field("host", "must be a host name or IPv4 address");
    }
    std::string url = engine + "://" + host;
    if (body.contains("port")) url += ":" + std::to_string(body["port"].get<int>());
    cj["url"] = url;
  }
  for (const char* k : {"user", "password", "database", "ssl", "sessionToken"}) {
    if (body.contains(k)) cj[k] = body[k];
  }
  if (body.contains("params") && !body["params"].empty()) {
    if (s3_body) {
      for (const auto& [k, v] : body["params"].items()) {
        if (k == "endpoint" || k == "region" || k == "addressing") {
          return Field("params." + k, "is a field of its own (" + k + ")");
        }
      }
    }
    std::string url = cj["url"].get<std::string>();
    if (url.find('?') != std::string::npos) {
      return Field("params", "cannot be combined with a url that has query parameters");
    }
    std::string q;
    for (const auto& [k, v] : body["params"].items()) {
      q += (q.empty() ? "?" : "&") + PctEncode(k) + "=" + PctEncode(v.get<std::string>());
    }
    // The URL needs a path before its query.
    size_t scheme = url.find("://");
    if (url.find('/', scheme + 3) == std::string::npos) url += "/";
    cj["url"] = url + q;
  }
  auto cfg = ParseConnection(cj, "connection");
  if (!cfg.ok()) {
    // Never echo a URL back: it may hold a password.
    std::string m = cfg.status().message();
    return Status::InvalidArgument(m);
  }
  // File connections name a folder of this server: through the API that would let any key
  // holder write anywhere the server may. They are for stream files (dbstreams run) until the
  // API confines them to configured roots.
  if (cfg->engine == Engine::kFile && !cfg->s3) {
    if (!file_body) {
      return Field("url", "a folder is given as {\"engine\": \"file\", \"path\": ...}");
    }
    DBS_RETURN_IF_ERROR(files::FileOptionsOf(*cfg).status());
  }
  if (cfg->s3) {
    DBS_RETURN_IF_ERROR(files::FileOptionsOf(*cfg).status());
  }
  if (!cfg->password.empty()) in.password = cfg->password;
  json spec;
  if (cfg->s3) {
    json params = cfg->params;
    spec = {
        {"engine", "s3"}, {"bucket", cfg->host}, {"prefix", cfg->database}, {"user", cfg->user}};
    for (const char* k : {"endpoint", "region", "addressing"}) {
      if (params.contains(k)) {
        spec[k] = params[k];
        params.erase(k);
      }
    }
    if (!spec.contains("region")) spec["region"] = files::kDefaultS3Region;
    if (!spec.contains("addressing")) spec["addressing"] = "path";
    if (!spec.contains("endpoint")) {
      spec["endpoint"] = files::DefaultS3Endpoint(spec["region"].get<std::string>());
    }
    // The session token goes to the secrets store; the spec keeps its marker.
    if (cfg->session_token == kStoredSessionToken) {
      in.session_token_input = SecretInput::kKeep;
    } else if (!cfg->session_token.empty()) {
      in.session_token_input = SecretInput::kInline;
      in.session_token = cfg->session_token;
    }
    if (in.session_token_input != SecretInput::kNone) spec["sessionToken"] = kStoredSessionToken;
    cfg->params = params.get<std::map<std::string, std::string>>();
  } else if (cfg->engine == Engine::kFile) {
    spec = {{"engine", "file"}, {"path", cfg->database}};
  } else {
    spec = {{"engine", std::string(EngineName(cfg->engine))},
            {"host", cfg->host},
            {"port", cfg->EffectivePort()},
            {"user", cfg->user},
            {"database", cfg->database}};
  }
  json ssl = json::object();
  if (!cfg->ssl.mode.empty()) ssl["mode"] = cfg->ssl.mode;
  if (!cfg->ssl.ca.empty()) ssl["ca"] = cfg->ssl.ca;
  if (!cfg->ssl.cert.empty()) ssl["cert"] = cfg->ssl.cert;
  if (!cfg->ssl.key.empty()) ssl["key"] = cfg->ssl.key;
  if (cfg->ssl.key == kStoredSslKey) {
    in.ssl_key_input = SecretInput::kKeep;
  } else if (IsInlinePem(cfg->ssl.key)) {
    in.ssl_key_input = SecretInput::kInline;
    in.ssl_key = cfg->ssl.key;
    ssl["key"] = kStoredSslKey;
  }
  spec["ssl"] = ssl;
  spec["params"] = cfg->params;
  in.spec = std::move(spec);
  return in;
}

json ConnectionJson(const json& spec, const std::string* password) {
  const bool s3 = spec.value("engine", "") == "s3";
  const bool file = spec.value("engine", "") == "file";
  std::string url = s3 ? "s3://" + spec.value("bucket", "") + "/" +
                             PctEncode(spec.value("prefix", ""), /*keep_slash=*/true)
                    : file ? "file://" + PctEncode(spec.value("path", ""), /*keep_slash=*/true)
                           : spec.value("engine", "postgres") + "://" +
                                 spec.value("host", "127.0.0.1") + ":" +
                                 std::to_string(spec.value("port", 0)) + "/";
  std::string q;
  if (s3) {
    for (const char* k : {"endpoint", "region", "addressing"}) {
      if (spec.contains(k) && spec[k].is_string()) {
        q += (q.empty() ? "?" : "&") + std::string(k) + "=" + PctEncode(spec[k].get<std::string>());
      }
    }
  }
  if (spec.contains("params") && spec["params"].is_object()) {
    for (const auto& [k, v] : spec["params"].items()) {
      if (v.is_string())
        q += (q.empty() ? "?" : "&") + PctEncode(k) + "=" + PctEncode(v.get<std::string>());
    }
  }
  json j = {{"url", url + q}};
  if (!spec.value("user", "").empty()) j["user"] = spec["user"];
  if (!spec.value("database", "").empty()) j["database"] = spec["database"];
  if (spec.contains("ssl") && spec["ssl"].is_object() && !spec["ssl"].empty())
    j["ssl"] = spec["ssl"];
  if (password != nullptr && !password->empty()) j["password"] = *password;
  if (s3 && spec.contains("sessionToken") && spec["sessionToken"].is_string() &&
      spec["sessionToken"] != kStoredSessionToken) {
    j["sessionToken"] = spec["sessionToken"];
  }
  return j;
}

Result<ConnectionConfig> ConnectionFromSpec(const json& spec, const std::string& password) {
  if (spec.value("engine", "") == "file") {
    // The roots may have changed since the connection was saved.
    DBS_RETURN_IF_ERROR(FolderInFileRoots(spec.value("path", "")).status());
  }
  return ParseConnection(ConnectionJson(spec, &password), "connection");
}

std::string SslKeyRef(const std::string& connection_id) {
  return "connection/" + connection_id + "/ssl-key";
}

std::string SessionTokenRef(const std::string& connection_id) {
  return "connection/" + connection_id + "/session-token";
}

json ConnectionOut(const store::ConnectionRecord& r) {
  json j = r.spec;
  if (j.contains("ssl") && j["ssl"].is_object() && j["ssl"].contains("key") &&
      j["ssl"]["key"].is_string() && IsInlinePem(j["ssl"]["key"].get<std::string>())) {
    j["ssl"]["key"] = kStoredSslKey;  // a record from before keys went to the secrets store
  }
  j["id"] = r.id;
  j["name"] = r.name;
  j["hasPassword"] = !r.secret_ref.empty();
  j["createdAt"] = r.created_at;
  j["updatedAt"] = r.updated_at;
  return j;
}

json TestConnection(const ConnectionConfig& c) {
  auto start = std::chrono::steady_clock::now();
  auto ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start)
        .count();
  };
  if (c.engine == Engine::kFile && !c.s3) {
    std::error_code ec;
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(c.database, ec)) {
      const std::string name = e.path().filename().string();
      if (!name.empty() && name[0] != '.') ++n;  // .dbs: the targets' bookkeeping
    }
    if (ec) {
      return {{"ok", false},
              {"error", "the folder " + c.database + " cannot be listed (" + ec.message() +
                            "); a stream into it creates it"},
              {"latencyMs", ms()}};
    }
    return {{"ok", true}, {"objects", n}, {"latencyMs", ms()}};
  }
  if (c.engine == Engine::kFile && c.s3) {
    auto store = files::OpenS3Of(c);
    if (!store.ok()) {
      return {{"ok", false}, {"error", store.status().ToString()}, {"latencyMs", ms()}};
    }
    auto list = (*store)->List("", false);
    if (!list.ok())
      return {{"ok", false}, {"error", list.status().ToString()}, {"latencyMs", ms()}};
    return {{"ok", true}, {"objects", list->size()}, {"latencyMs", ms()}};
  }
  if (c.engine == Engine::kPostgres) {
    auto conn = pg::Connect(c);
    if (!conn.ok())
      return {{"ok", false}, {"error", conn.status().ToString()}, {"latencyMs", ms()}};
    auto r = pg::Exec(conn->get(), "SELECT version()", "testing the connection");
    if (!r.ok()) return {{"ok", false}, {"error", r.status().ToString()}, {"latencyMs", ms()}};
    return {{"ok", true},
            {"serverVersion", std::string(pg::Text(r->get(), 0, 0))},
            {"latencyMs", ms()}};
  }
  auto conn = mysql::MysqlConnection::Open(c, {});
  if (!conn.ok()) return {{"ok", false}, {"error", conn.status().ToString()}, {"latencyMs", ms()}};
  auto rows = (*conn)->Query("SELECT version()", "testing the connection");
  if (!rows.ok()) return {{"ok", false}, {"error", rows.status().ToString()}, {"latencyMs", ms()}};
  std::string v = !rows->empty() && !(*rows)[0].empty() && (*rows)[0][0] ? *(*rows)[0][0] : "";
  return {{"ok", true}, {"serverVersion", v}, {"latencyMs", ms()}};
}

Result<json> Browse(const ConnectionConfig& c, const std::string& kind, const std::string& schema) {
  json out = json::array();
  if (c.engine == Engine::kFile) {
    // Files: one schema, "public"; its tables are the files and folders (sources/files).
    if (kind == "databases" || kind == "schemas") return json::array({"public"});
    if (kind == "views" || (!schema.empty() && schema != "public")) return out;
    DBS_ASSIGN_OR_RETURN(auto source, Source::Open(c));
    DBS_ASSIGN_OR_RETURN(auto tables, source->ListTables());
    for (const TableRef& t : tables) out.push_back({{"schema", t.schema}, {"name", t.name}});
    return out;
  }
  if (c.engine == Engine::kPostgres) {
    DBS_ASSIGN_OR_RETURN(auto conn, pg::Connect(c));
    if (kind == "databases") {
      DBS_ASSIGN_OR_RETURN(auto r, pg::Exec(conn.get(),
                                            "SELECT datname FROM pg_database WHERE NOT "
                                            "datistemplate ORDER BY 1",
                                            "listing databases"));
      for (int i = 0; i < PQntuples(r.get()); ++i)
        out.push_back(std::string(pg::Text(r.get(), i, 0)));
      return out;
    }
    if (kind == "schemas") {
      DBS_ASSIGN_OR_RETURN(auto r, pg::Exec(conn.get(),
                                            "SELECT nspname FROM pg_namespace WHERE nspname NOT "
                                            "LIKE 'pg\\_%' AND nspname <> 'information_schema' "
                                            "ORDER BY 1",
                                            "listing schemas"));
      for (int i = 0; i < PQntuples(r.get()); ++i)
        out.push_back(std::string(pg::Text(r.get(), i, 0)));
      return out;
    }
    std::string sql =
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = $1 "
        "AND table_schema NOT IN ('pg_catalog', 'information_schema') AND ($2 = '' OR "
        "table_schema = $2) ORDER BY 1, 2";
    DBS_ASSIGN_OR_RETURN(
        auto r, pg::ExecParams(conn.get(), sql, {kind == "views" ? "VIEW" : "BASE TABLE", schema},
                               "listing " + kind));
    for (int i = 0; i < PQntuples(r.get()); ++i) {
      out.push_back({{"schema", std::string(pg::Text(r.get(), i, 0))},
                     {"name", std::string(pg::Text(r.get(), i, 1))}});
    }
    return out;
  }
  mysql::ConnectOptions o;
  o.use_database = false;
  DBS_ASSIGN_OR_RETURN(auto conn, mysql::MysqlConnection::Open(c, o));
  const char* sys = "('mysql', 'information_schema', 'performance_schema', 'sys')";
  if (kind == "databases" || kind == "schemas") {
    DBS_ASSIGN_OR_RETURN(auto rows, conn->Query(std::string("SELECT schema_name FROM "
                                                            "information_schema.schemata WHERE "
                                                            "schema_name NOT IN ") +
                                                    sys + " ORDER BY 1",
                                                "listing databases"));
    for (auto& r : rows) out.push_back(r[0].value_or(""));
    return out;
  }
  std::string sql = std::string(
                        "SELECT table_schema, table_name FROM information_schema.tables "
                        "WHERE table_type = ") +
                    (kind == "views" ? "'VIEW'" : "'BASE TABLE'") + " AND table_schema NOT IN " +
                    sys;
  if (!schema.empty()) sql += " AND table_schema = " + conn->Literal(schema);
  sql += " ORDER BY 1, 2";
  DBS_ASSIGN_OR_RETURN(auto rows, conn->Query(sql, "listing " + kind));
  for (auto& r : rows) out.push_back({{"schema", r[0].value_or("")}, {"name", r[1].value_or("")}});
  return out;
}

namespace {
// NotFound unless schema.table is a base table or view of the connection.
Status CheckTable(const ConnectionConfig& c, const std::string& schema, const std::string& table) {
  for (const char* kind : {"tables", "views"}) {
    DBS_ASSIGN_OR_RETURN(json list, Browse(c, kind, schema));
    for (const json& t : list) {
      if (t.value("schema", "") == schema && t.value("name", "") == table) return Status::Ok();
    }
  }
  return Status::NotFound("table " + schema + "." + table + " does not exist on this connection");
}
}  // namespace

Result<json> DescribeTable(const ConnectionConfig& c, const std::string& schema,
                           const std::string& table) {
  DBS_RETURN_IF_ERROR(CheckTable(c, schema, table));
  DBS_ASSIGN_OR_RETURN(auto source, Source::Open(c));
  TableRef ref;
  ref.schema = schema;
  ref.name = table;
  DBS_ASSIGN_OR_RETURN(TableSchema t, source->Describe(ref));
  return ToJson(t);
}

Result<uint64_t> CountRows(const ConnectionConfig& c, const std::string& schema,
                           const std::string& table) {
  DBS_RETURN_IF_ERROR(CheckTable(c, schema, table));
  if (c.engine == Engine::kFile) {
    // Every row read (one column), streamed: files have no exact count but their manifest's.
    DBS_ASSIGN_OR_RETURN(auto source, Source::Open(c));
    DBS_ASSIGN_OR_RETURN(TableSchema t, source->Describe({schema, table}));
    DBS_ASSIGN_OR_RETURN(auto snap, source->BeginSnapshot(1));
    ReadSpec spec;
    spec.table = t;
    spec.columns = {t.columns.front().name};
    DBS_ASSIGN_OR_RETURN(auto reader, snap->OpenReader(spec));
    uint64_t n = 0;
    for (bool more = true; more;) {
      Bundle b;
      b.columns.emplace_back(t.columns.front().type, t.columns.front().element_type);
      DBS_ASSIGN_OR_RETURN(more, reader->Next(&b, 65536, 64u << 20));
      n += b.rows();
    }
    return n;
  }
  if (c.engine == Engine::kPostgres) {
    DBS_ASSIGN_OR_RETURN(auto conn, pg::Connect(c));
    DBS_ASSIGN_OR_RETURN(
        auto r, pg::Exec(conn.get(), "SELECT count(*) FROM " + pg::QualifiedName(schema, table),
                         "counting rows"));
    return static_cast<uint64_t>(pg::Int(r.get(), 0, 0));
  }
  mysql::ConnectOptions o;
  o.use_database = false;
  DBS_ASSIGN_OR_RETURN(auto conn, mysql::MysqlConnection::Open(c, o));
  DBS_ASSIGN_OR_RETURN(
      auto rows,
      conn->Query("SELECT count(*) FROM " + mysql::QuoteQualified(schema, table), "counting rows"));
  if (rows.empty() || rows[0].empty() || !rows[0][0]) return uint64_t{0};
  return static_cast<uint64_t>(std::stoull(*rows[0][0]));
}

}  // namespace dbs::api

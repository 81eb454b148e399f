#include "api/explorer_routes.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "api/client_watch.h"
#include "api/connections.h"
#include "api/explorer_body.h"
#include "api/federated_routes.h"
#include "core/config.h"
#include "core/logging.h"
#include "explorer/browse.h"
#include "explorer/console.h"
#include "explorer/export.h"
#include "explorer/federated_session.h"
#include "explorer/files.h"
#include "explorer/query_registry.h"
#include "mcp/mcp_http.h"
#include "mcp/mcp_tools.h"
#include "sources/files/remote.h"
#include "store/secrets_store.h"

namespace dbs::api {

using explorer::QueryRegistry;
using explorer::QuerySession;
using nlohmann::json;

namespace {

constexpr size_t kMaxSqlBytes = 256 * 1024;
constexpr size_t kHistoryStatementBytes = 64 * 1024;
constexpr size_t kLoggedStatementBytes = 500;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Shared by the handlers: the registry and the dependencies.
struct ExplorerState {
  ExplorerRouteDeps deps;
  QueryRegistry registry;
  std::unique_ptr<mcp::McpHttpEndpoint> mcp;
  std::vector<std::string> file_roots;  // DBS_FILE_ROOTS (files.h)
};

// Writes an MCP endpoint's answer into the response.
Result<json> McpAnswer(ExplorerCall& c, const mcp::HttpAnswer& a) {
  c.res.status = a.status;
  for (const auto& [k, v] : a.headers) c.res.set_header(k, v);
  if (!a.content_type.empty()) c.res.set_content(a.body, a.content_type.c_str());
  return json(nullptr);
}

// The id of the API key of the request ("" when it cannot be told: the metrics token).
std::string KeyId(const ExplorerState& st, const httplib::Request& req) {
  const std::string key = req.get_header_value("X-API-Key");
  if (key.empty() || st.deps.config == nullptr) return "";
  auto rec = st.deps.config->FindApiKey(store::Sha256Hex(key));
  return rec.ok() ? rec->id : "";
}

// --- the console ---------------------------------------------------------------------------

struct ConsoleRequest {
  std::string connection_id;
  ConnectionConfig connection;
  std::string sql;
  bool read_only = true;
  int64_t max_rows = 1000;
  int64_t timeout_ms = 60000;
  std::string query_id;
  bool analyze = false;  // explain
  std::string format;    // download
  // A federated console (explorer/federated_session.h): the sources instead of one
  // connection; connection_id is then their connection ids joined by ','.
  std::vector<federated::FederatedSource> sources;
};

Result<ConsoleRequest> ParseConsole(const ExplorerState& st, const json& body, bool explain,
                                    bool download) {
  std::vector<std::string> known = {"connectionId", "sources",   "sql",
                                    "readOnly",     "timeoutMs", "queryId"};
  if (explain) known.push_back("analyze");
  if (!explain) known.push_back("maxRows");
  if (download) known.push_back("format");
  BodyReader b(body, known);
  DBS_RETURN_IF_ERROR(b.status());
  ConsoleRequest r;
  const bool federated = b.Has("sources");
  if (federated && b.Has("connectionId")) {
    return Status::InvalidArgument(
        "give connectionId (one connection) or sources (a federated statement), not both");
  }
  if (!federated) {
    DBS_ASSIGN_OR_RETURN(r.connection_id, b.String("connectionId", true, 64));
  }
  DBS_ASSIGN_OR_RETURN(r.sql, b.String("sql", true, kMaxSqlBytes));
  DBS_ASSIGN_OR_RETURN(r.read_only, b.Bool("readOnly", true));
  DBS_ASSIGN_OR_RETURN(r.timeout_ms,
                       b.Int("timeoutMs", download ? 3600000 : 60000, 1, 24 * 3600000));
  DBS_ASSIGN_OR_RETURN(r.max_rows, b.Int("maxRows", download ? 0 : 1000, download ? 0 : 1,
                                         download ? int64_t{1} << 40 : 100000));
  DBS_ASSIGN_OR_RETURN(r.query_id, b.String("queryId", false, 64));
  DBS_ASSIGN_OR_RETURN(r.analyze, b.Bool("analyze", false));
  DBS_ASSIGN_OR_RETURN(r.format, b.String("format", download, 16));
  if (download && r.format != "csv" && r.format != "jsonl" && r.format != "parquet") {
    return Status::InvalidArgument("format must be csv, jsonl or parquet");
  }
  if (r.query_id.empty()) {
    r.query_id = QueryRegistry::NewId();
  } else {
    DBS_RETURN_IF_ERROR(QueryRegistry::ValidateId(r.query_id));
  }
  if (federated) {
    if (!r.read_only) {
      return Status::InvalidArgument(
          "readOnly: a federated statement is a SELECT and is always read-only");
    }
    if (r.analyze) {
      return Status::InvalidArgument(
          "analyze is not offered for federated statements: EXPLAIN shows what each source is "
          "asked for");
    }
    DBS_ASSIGN_OR_RETURN(r.sources, ParseFederatedSources(b.Get("sources"), st.deps.connection));
    for (const json& s : b.Get("sources")) {
      r.connection_id +=
          (r.connection_id.empty() ? "" : ",") + s["connectionId"].get<std::string>();
    }
    return r;
  }
  if (explain && r.analyze && r.read_only) {
    return Status::InvalidArgument(
        "analyze runs the statement: it needs \"readOnly\": false (it is rolled back)");
  }
  auto conn = st.deps.connection(r.connection_id);
  if (!conn.ok()) {
    return conn.status().code() == StatusCode::kNotFound
               ? Status::NotFound("connectionId " + r.connection_id + " does not exist")
               : conn.status();
  }
  r.connection = std::move(*conn);
  return r;
}

json ColumnsJson(const std::vector<explorer::ConsoleColumn>& columns) {
  json out = json::array();
  for (const auto& c : columns) out.push_back({{"name", c.name}, {"type", c.type}});
  return out;
}

json PageJson(const std::string& id, const explorer::ConsolePage& p, int64_t elapsed_ms,
              bool read_only) {
  return json{{"queryId", id},
              {"columns", ColumnsJson(p.columns)},
              {"rows", p.rows},
              {"hasMore", p.has_more},
              {"rowsAffected", p.rows_affected < 0 ? json(nullptr) : json(p.rows_affected)},
              {"command", p.command.empty() ? json(nullptr) : json(p.command)},
              {"readOnly", read_only},
              {"elapsedMs", elapsed_ms}};
}

void RecordHistory(const ExplorerState& st, const std::string& key_id, const ConsoleRequest& r,
                   const char* kind, int64_t started_ms, int64_t rows, const Status& s) {
  if (st.deps.config == nullptr || key_id.empty()) return;
  store::QueryHistoryRecord h;
  h.id = store::NewId("h_");
  h.api_key_id = key_id;
  h.connection_id = r.connection_id;
  h.kind = kind;
  h.statement = r.sql.substr(0, kHistoryStatementBytes);
  h.read_only = r.read_only;
  h.started_at = started_ms;
  h.duration_ms = NowMs() - started_ms;
  h.rows = rows;
  h.error = s.ok() ? "" : s.message();
  Status w = st.deps.config->AddQueryHistory(h);
  if (!w.ok()) {
    Log(LogLevel::kWarn, "explorer", "cannot record query history", {F("error", w.message())});
  }
}

void LogWrite(const std::string& key_id, const ConsoleRequest& r, const char* kind) {
  if (r.read_only) return;
  Log(LogLevel::kInfo, "explorer", "console statement with writes allowed",
      {F("keyId", key_id), F("connectionId", r.connection_id), F("kind", kind),
       F("queryId", r.query_id), F("sql", r.sql.substr(0, kLoggedStatementBytes))});
}

// Opens a session and registers it as running under the request's id, with its deadline and
// a check of the request's client.
Result<std::shared_ptr<QuerySession>> StartSession(ExplorerState& st, const ConsoleRequest& r,
                                                   const std::string& key_id,
                                                   const std::shared_ptr<ClientWatch>& watch) {
  Result<std::unique_ptr<QuerySession>> opened = Status::Internal("no session");
  if (!r.sources.empty()) {
    federated::FederatedOptions o;
    o.timeout_ms = r.timeout_ms;
    o.memory_limit = st.deps.memory_limit;
    opened = explorer::OpenFederatedSession(r.sources, o, st.deps.temp_root);
  } else {
    opened = QuerySession::Open(r.connection, r.read_only, r.timeout_ms);
  }
  if (!opened.ok()) {
    return Status::Unavailable("cannot open the connection: " + opened.status().ToString());
  }
  std::shared_ptr<QuerySession> session = std::move(*opened);
  explorer::QueryInfo info{r.query_id,  key_id, r.connection_id, r.sql.substr(0, 4096),
                           r.read_only, NowMs()};
  std::function<bool()> gone;
  if (watch) gone = [watch] { return watch->Gone(); };
  DBS_RETURN_IF_ERROR(st.registry.Begin(
      info, session, QueryRegistry::Clock::now() + std::chrono::milliseconds(r.timeout_ms), gone));
  return session;
}

Result<json> RunConsole(ExplorerState& st, ExplorerCall& c) {
  DBS_ASSIGN_OR_RETURN(ConsoleRequest r, ParseConsole(st, c.body, false, false));
  const std::string key_id = KeyId(st, c.req);
  const int64_t t0 = NowMs();
  LogWrite(key_id, r, "run");
  auto watch = std::make_shared<ClientWatch>(c.req);
  auto session = StartSession(st, r, key_id, watch);
  if (!session.ok()) {
    RecordHistory(st, key_id, r, "run", t0, 0, session.status());
    return session.status();
  }
  auto page = (*session)->Execute(r.sql, r.max_rows);
  Status done = page.ok() ? Status::Ok() : page.status();
  const int64_t rows = page.ok()
                           ? (page->rows_affected >= 0 ? page->rows_affected
                                                       : static_cast<int64_t>(page->rows.size()))
                           : 0;
  if (page.ok() && page->has_more) {
    Status parked = st.registry.Park(r.query_id);
    if (!parked.ok()) {
      done = parked;
    }
  }
  if (!page.ok() || !page->has_more || !done.ok()) {
    st.registry.Remove(r.query_id);
    Status closed = (*session)->Close();
    if (done.ok() && !closed.ok()) done = closed;  // a COMMIT that failed
  }
  RecordHistory(st, key_id, r, "run", t0, rows, done);
  if (!done.ok()) return done;
  return PageJson(r.query_id, *page, NowMs() - t0, r.read_only);
}

Result<json> NextPage(ExplorerState& st, ExplorerCall& c) {
  BodyReader b(c.body, {"maxRows", "timeoutMs"});
  DBS_RETURN_IF_ERROR(b.status());
  DBS_ASSIGN_OR_RETURN(int64_t max_rows, b.Int("maxRows", 1000, 1, 100000));
  DBS_ASSIGN_OR_RETURN(int64_t timeout_ms, b.Int("timeoutMs", 60000, 1, 24 * 3600000));
  const std::string id = c.params.at("id");
  const std::string key_id = KeyId(st, c.req);
  const int64_t t0 = NowMs();
  auto watch = std::make_shared<ClientWatch>(c.req);
  DBS_ASSIGN_OR_RETURN(
      std::shared_ptr<QuerySession> session,
      st.registry.Resume(id, key_id,
                         QueryRegistry::Clock::now() + std::chrono::milliseconds(timeout_ms),
                         [watch] { return watch->Gone(); }));
  auto page = session->Fetch(max_rows);
  if (page.ok() && page->has_more && st.registry.Park(id).ok()) {
    return PageJson(id, *page, NowMs() - t0, session->read_only());
  }
  st.registry.Remove(id);
  Status closed = session->Close();
  if (!page.ok()) return page.status();
  if (!closed.ok()) return closed;
  page->has_more = false;
  return PageJson(id, *page, NowMs() - t0, session->read_only());
}

Result<json> ExplainConsole(ExplorerState& st, ExplorerCall& c) {
  DBS_ASSIGN_OR_RETURN(ConsoleRequest r, ParseConsole(st, c.body, true, false));
  const std::string key_id = KeyId(st, c.req);
  const int64_t t0 = NowMs();
  if (r.analyze) LogWrite(key_id, r, "explain analyze");
  auto watch = std::make_shared<ClientWatch>(c.req);
  auto session = StartSession(st, r, key_id, watch);
  if (!session.ok()) {
    RecordHistory(st, key_id, r, "explain", t0, 0, session.status());
    return session.status();
  }
  auto plan = (*session)->Explain(r.sql, r.analyze);
  st.registry.Remove(r.query_id);
  Status closed = (*session)->Close();
  Status done = plan.ok() ? closed : plan.status();
  RecordHistory(st, key_id, r, "explain", t0, 0, done);
  if (!done.ok()) return done;
  return json{{"queryId", r.query_id},
              {"text", plan->text},
              {"json", plan->json},
              {"analyze", r.analyze},
              {"elapsedMs", NowMs() - t0}};
}

// A download in progress: the session, the page being written, what was written.
struct Download {
  std::shared_ptr<ExplorerState> st;
  std::shared_ptr<QuerySession> session;
  ConsoleRequest request;
  std::string key_id;
  int64_t started_ms = 0;
  explorer::ConsolePage page;
  std::vector<explorer::ConsoleColumn> columns;
  int64_t rows = 0;
  bool header = false;
  Status status;
  std::unique_ptr<ScratchDir> scratch;  // Parquet: the file being sent
  std::FILE* file = nullptr;
  ~Download() {
    if (file != nullptr) std::fclose(file);
  }
  bool Capped() const { return request.max_rows > 0 && rows >= request.max_rows; }
  // The rows of the current page as CSV or JSONL (at most up to the cap).
  std::string Render() {
    std::string out;
    if (!header && request.format == "csv") out += explorer::CsvHeader(columns);
    header = true;
    for (const auto& row : page.rows) {
      if (Capped()) break;
      out += request.format == "csv" ? explorer::CsvRow(row) : explorer::JsonlRow(columns, row);
      ++rows;
    }
    return out;
  }
  // The next page; false at the end (or on an error, kept in `status`).
  bool Next() {
    if (!page.has_more || Capped()) return false;
    auto p = session->Fetch(1000);
    if (!p.ok()) {
      status = p.status();
      return false;
    }
    page = std::move(*p);
    return true;
  }
  void Finish() {
    st->registry.Remove(request.query_id);
    Status closed = session->Close();
    if (status.ok() && !closed.ok()) status = closed;
    RecordHistory(*st, key_id, request, "download", started_ms, rows, status);
  }
};

// Writes every row to a JSON Lines file, then converts it to Parquet with DuckDB.
Status WriteParquet(Download& d) {
  d.scratch = std::make_unique<ScratchDir>(d.st->deps.temp_root, "download");
  std::error_code ec;
  std::filesystem::create_directories(d.scratch->path(), ec);
  if (ec) return Status::IoError("cannot create " + d.scratch->path() + ": " + ec.message());
  const std::string jsonl = d.scratch->path() + "/rows.jsonl";
  const std::string parquet = d.scratch->path() + "/result.parquet";
  {
    std::FILE* f = std::fopen(jsonl.c_str(), "wb");
    if (f == nullptr) return Status::IoError("cannot write " + jsonl);
    bool more = true;
    while (more) {
      for (const auto& row : d.page.rows) {
        if (d.Capped()) break;
        const std::string line = explorer::JsonlRow(d.columns, row);
        std::fwrite(line.data(), 1, line.size(), f);
        ++d.rows;
      }
      more = d.Next();
    }
    std::fclose(f);
    DBS_RETURN_IF_ERROR(d.status);
  }
  DBS_RETURN_IF_ERROR(explorer::JsonlToParquet(jsonl, parquet, d.columns, d.scratch->path()));
  std::filesystem::remove(jsonl, ec);
  d.file = std::fopen(parquet.c_str(), "rb");
  if (d.file == nullptr) return Status::IoError("cannot read " + parquet);
  return Status::Ok();
}

Result<json> DownloadConsole(const std::shared_ptr<ExplorerState>& sp, ExplorerCall& c) {
  ExplorerState& st = *sp;
  DBS_ASSIGN_OR_RETURN(ConsoleRequest r, ParseConsole(st, c.body, false, true));
  auto d = std::make_shared<Download>();
  d->st = sp;
  d->key_id = KeyId(st, c.req);
  d->started_ms = NowMs();
  d->request = r;
  LogWrite(d->key_id, r, "download");
  // The client check works while the first page and (Parquet) the file are made; once rows
  // stream, a closed client fails the next write.
  auto watch = std::make_shared<ClientWatch>(c.req);
  auto session = StartSession(st, r, d->key_id, watch);
  if (!session.ok()) {
    RecordHistory(st, d->key_id, r, "download", d->started_ms, 0, session.status());
    return session.status();
  }
  d->session = *session;
  auto first = d->session->Execute(r.sql, 1000);
  if (!first.ok()) {
    d->status = first.status();
    d->Finish();
    return first.status();
  }
  d->page = std::move(*first);
  d->columns = d->page.columns;
  if (r.format == "parquet") {
    Status w = WriteParquet(*d);
    if (!w.ok()) {
      if (d->status.ok()) d->status = w;
      d->Finish();
      return w;
    }
  }
  const char* type = r.format == "csv"     ? "text/csv; charset=utf-8"
                     : r.format == "jsonl" ? "application/x-ndjson"
                                           : "application/vnd.apache.parquet";
  c.res.set_header("Content-Disposition", "attachment; filename=\"result." + r.format + "\"");
  c.res.set_header("X-Query-Id", r.query_id);
  c.res.set_chunked_content_provider(
      type,
      [d](size_t, httplib::DataSink& sink) {
        if (d->file != nullptr) {
          char buf[64 * 1024];
          const size_t n = std::fread(buf, 1, sizeof buf, d->file);
          if (n > 0) return sink.write(buf, n);
          sink.done();
          return true;
        }
        std::string chunk = d->Render();
        if (!chunk.empty() && !sink.write(chunk.data(), chunk.size())) {
          d->status = Status::Cancelled("the client closed the download");
          return false;
        }
        if (!d->Next()) {
          // An error after the first rows can only end the stream early: the rows already
          // sent stand, the history records the error.
          sink.done();
        }
        return true;
      },
      [d](bool) { d->Finish(); });
  return json(nullptr);
}

// --- files (local folders; files.h) --------------------------------------------------------

json FederatedJson(const federated::FederatedResult& r) {
  json cols = json::array();
  for (const auto& c : r.columns) cols.push_back({{"name", c.name}, {"type", c.type}});
  return json{
      {"columns", cols}, {"rows", r.rows}, {"truncated", r.truncated}, {"elapsedMs", r.elapsed_ms}};
}

Status NeedRoots(const ExplorerState& st) {
  if (!st.file_roots.empty()) return Status::Ok();
  return Status::FailedPrecondition(
      "no file roots are configured: start the server with DBS_FILE_ROOTS=/folder[:/other]");
}

Result<json> FileRootsRoute(ExplorerState& st, ExplorerCall&) {
  return json{{"roots", st.file_roots}};
}

// The connection named by the body's connectionId: an s3 connection (its bucket) or a file
// connection (its folder, inside the server's file roots: ConnectionFromSpec checks it again).
struct FilesOf {
  std::unique_ptr<ObjectStore> store;  // s3 connections
  std::string folder;                  // file connections
};
Result<FilesOf> ConnectionFiles(ExplorerState& st, const BodyReader& b) {
  DBS_ASSIGN_OR_RETURN(std::string id, b.String("connectionId", true, 128));
  auto conn = st.deps.connection(id);
  if (!conn.ok()) return Status::NotFound("connection " + id + " does not exist");
  if (conn->engine != Engine::kFile) {
    return Status::InvalidArgument(
        "connectionId must name an s3 or file connection (or give root)");
  }
  FilesOf f;
  if (conn->s3) {
    DBS_ASSIGN_OR_RETURN(f.store, files::OpenS3Of(*conn));
  } else {
    f.folder = conn->database;
  }
  return f;
}

Result<json> FileList(ExplorerState& st, ExplorerCall& c) {
  BodyReader b(c.body, {"root", "path", "connectionId"});
  DBS_RETURN_IF_ERROR(b.status());
  if (b.Has("connectionId")) {
    if (b.Has("root")) return Status::InvalidArgument("give root or connectionId, not both");
    DBS_ASSIGN_OR_RETURN(FilesOf f, ConnectionFiles(st, b));
    DBS_ASSIGN_OR_RETURN(std::string path, b.String("path", false, 1024));
    if (f.store == nullptr) {
      // A folder connection: its folder is the root (nothing above it is reachable), and the
      // targets' bookkeeping (.dbs) and other dot entries are not shown.
      DBS_ASSIGN_OR_RETURN(json r, explorer::ListFolder({f.folder}, f.folder, path, 10000));
      json& entries = r["entries"];
      for (auto it = entries.begin(); it != entries.end();) {
        it = it->value("name", "").rfind('.', 0) == 0 ? entries.erase(it) : it + 1;
      }
      r["connectionId"] = b.Get("connectionId");
      return r;
    }
    auto r = explorer::ListObjects(f.store.get(), b.Get("connectionId"), path, 10000);
    if (!r.ok()) return Upstream(r.status());
    return r;
  }
  DBS_RETURN_IF_ERROR(NeedRoots(st));
  DBS_ASSIGN_OR_RETURN(std::string root, b.String("root", true, 4096));
  DBS_ASSIGN_OR_RETURN(std::string path, b.String("path", false, 4096));
  return explorer::ListFolder(st.file_roots, root, path, 10000);
}

Result<json> FileSampleRoute(ExplorerState& st, ExplorerCall& c) {
  BodyReader b(c.body, {"root", "path", "rows", "timeoutMs", "connectionId"});
  DBS_RETURN_IF_ERROR(b.status());
  DBS_ASSIGN_OR_RETURN(std::string path, b.String("path", true, 4096));
  DBS_ASSIGN_OR_RETURN(int64_t rows, b.Int("rows", 100, 0, 1000));
  federated::FederatedOptions o;
  DBS_ASSIGN_OR_RETURN(o.timeout_ms, b.Int("timeoutMs", 60000, 1, 3600000));
  if (b.Has("connectionId")) {
    if (b.Has("root")) return Status::InvalidArgument("give root or connectionId, not both");
    DBS_ASSIGN_OR_RETURN(FilesOf f, ConnectionFiles(st, b));
    ScratchDir tmp(st.deps.temp_root, "files");
    o.temp_dir = tmp.path();
    if (f.store == nullptr) {
      DBS_ASSIGN_OR_RETURN(std::string file, explorer::ResolveFile({f.folder}, f.folder, path));
      DBS_ASSIGN_OR_RETURN(federated::FederatedResult r,
                           explorer::FileSample({f.folder}, file, rows, o));
      json out = FederatedJson(r);
      out["file"] = path;
      return out;
    }
    auto r = explorer::ObjectSample(f.store.get(), path, rows, o);
    if (!r.ok()) return Upstream(r.status());
    json out = FederatedJson(*r);
    out["file"] = path;
    return out;
  }
  DBS_RETURN_IF_ERROR(NeedRoots(st));
  DBS_ASSIGN_OR_RETURN(std::string root, b.String("root", true, 4096));
  DBS_ASSIGN_OR_RETURN(std::string file, explorer::ResolveFile(st.file_roots, root, path));
  ScratchDir tmp(st.deps.temp_root, "files");
  o.temp_dir = tmp.path();
  DBS_ASSIGN_OR_RETURN(federated::FederatedResult r,
                       explorer::FileSample(st.file_roots, file, rows, o));
  json out = FederatedJson(r);
  out["file"] = file;
  return out;
}

Result<json> FileQuery(ExplorerState& st, ExplorerCall& c) {
  BodyReader b(c.body, {"sql", "sources", "maxRows", "timeoutMs"});
  DBS_RETURN_IF_ERROR(b.status());
  DBS_RETURN_IF_ERROR(NeedRoots(st));
  DBS_ASSIGN_OR_RETURN(std::string sql, b.String("sql", true, kMaxSqlBytes));
  federated::FederatedOptions o;
  DBS_ASSIGN_OR_RETURN(o.max_rows, b.Int("maxRows", 1000, 1, 100000));
  DBS_ASSIGN_OR_RETURN(o.timeout_ms, b.Int("timeoutMs", 60000, 1, 3600000));
  o.allowed_directories = st.file_roots;
  o.memory_limit = st.deps.memory_limit;
  std::vector<federated::FederatedSource> sources;
  if (b.Has("sources")) {
    const json& s = b.Get("sources");
    if (!s.is_array() || s.size() > 16) {
      return Status::InvalidArgument(
          "sources must be an array of at most 16 {alias, connectionId}");
    }
    for (size_t i = 0; i < s.size(); ++i) {
      const std::string at = "sources[" + std::to_string(i) + "]";
      if (!s[i].is_object() || !s[i].contains("alias") || !s[i]["alias"].is_string() ||
          !s[i].contains("connectionId") || !s[i]["connectionId"].is_string() || s[i].size() != 2) {
        return Status::InvalidArgument(at + " must be {\"alias\", \"connectionId\"}");
      }
      Status a = federated::ValidateAlias(s[i]["alias"]);
      if (!a.ok()) return Status::InvalidArgument(at + ".alias " + a.message());
      auto conn = st.deps.connection(s[i]["connectionId"]);
      if (!conn.ok()) return Status::InvalidArgument(at + ".connectionId does not exist");
      sources.push_back({s[i]["alias"], std::move(*conn)});
    }
  }
  ScratchDir tmp(st.deps.temp_root, "files");
  o.temp_dir = tmp.path();
  auto r = federated::Run(sources, sql, o);
  if (!r.ok()) return Upstream(r.status());
  json out = FederatedJson(*r);
  out["aliases"] = json::array();
  for (const auto& s : sources) out["aliases"].push_back(s.alias);
  return out;
}

Result<json> History(ExplorerState& st, ExplorerCall& c) {
  store::QueryHistoryFilter f;
  f.api_key_id = KeyId(st, c.req);
  f.search = c.req.get_param_value("search");
  f.connection_id = c.req.get_param_value("connectionId");
  DBS_ASSIGN_OR_RETURN(QueryPage p, PageOfQuery(c.req));
  int64_t total = 0;
  json items = json::array();
  if (!f.api_key_id.empty()) {
    DBS_ASSIGN_OR_RETURN(auto list, st.deps.config->ListQueryHistory(f, p.offset, p.limit, &total));
    for (const auto& h : list) {
      items.push_back({{"id", h.id},
                       {"connectionId", h.connection_id},
                       {"kind", h.kind},
                       {"statement", h.statement},
                       {"readOnly", h.read_only},
                       {"startedAt", h.started_at},
                       {"durationMs", h.duration_ms},
                       {"rows", h.rows},
                       {"error", h.error.empty() ? json(nullptr) : json(h.error)}});
    }
  }
  return json{{"items", items}, {"total", total}, {"offset", p.offset}, {"limit", p.limit}};
}

Result<json> Queries(ExplorerState& st, ExplorerCall& c) {
  DBS_ASSIGN_OR_RETURN(QueryPage p, PageOfQuery(c.req));
  std::vector<json> all = st.registry.List(KeyId(st, c.req));
  json items = json::array();
  for (size_t i = static_cast<size_t>(p.offset);
       i < all.size() && items.size() < static_cast<size_t>(p.limit); ++i) {
    items.push_back(all[i]);
  }
  return json{{"items", items},
              {"total", static_cast<int64_t>(all.size())},
              {"offset", p.offset},
              {"limit", p.limit}};
}

// --- the table browser ---------------------------------------------------------------------

struct TableTarget {
  ConnectionConfig connection;
  std::string schema, table;
};

Result<TableTarget> ParseTarget(const ExplorerState& st, const BodyReader& b) {
  TableTarget t;
  DBS_ASSIGN_OR_RETURN(std::string id, b.String("connectionId", true, 64));
  DBS_ASSIGN_OR_RETURN(t.schema, b.String("schema", false, 1024));
  DBS_ASSIGN_OR_RETURN(t.table, b.String("table", true, 1024));
  auto conn = st.deps.connection(id);
  if (!conn.ok()) {
    return conn.status().code() == StatusCode::kNotFound
               ? Status::NotFound("connectionId " + id + " does not exist")
               : conn.status();
  }
  t.connection = std::move(*conn);
  return t;
}

Result<std::vector<explorer::RowFilter>> ParseFilters(const BodyReader& b) {
  std::vector<explorer::RowFilter> out;
  if (!b.Has("filters")) return out;
  const json& f = b.Get("filters");
  if (!f.is_array() || f.size() > 64) {
    return Status::InvalidArgument("filters must be an array of at most 64 {column, op, value}");
  }
  for (size_t i = 0; i < f.size(); ++i) {
    const std::string at = "filters[" + std::to_string(i) + "]";
    const json& x = f[i];
    if (!x.is_object() || !x.contains("column") || !x["column"].is_string() || !x.contains("op") ||
        !x["op"].is_string()) {
      return Status::InvalidArgument(at + " must be {\"column\", \"op\", \"value\"}");
    }
    for (const auto& [k, v] : x.items()) {
      if (k != "column" && k != "op" && k != "value") {
        return Status::InvalidArgument(at + "." + k.substr(0, 64) +
                                       " is not a known field (column, op, value)");
      }
    }
    out.push_back({x["column"], x["op"], x.value("value", json())});
  }
  return out;
}

Result<json> TableRows(ExplorerState& st, ExplorerCall& c) {
  BodyReader b(c.body, {"connectionId", "schema", "table", "filters", "sort", "limit", "offset",
                        "after", "timeoutMs"});
  DBS_RETURN_IF_ERROR(b.status());
  DBS_ASSIGN_OR_RETURN(TableTarget t, ParseTarget(st, b));
  explorer::RowsRequest r;
  r.schema = t.schema;
  r.table = t.table;
  DBS_ASSIGN_OR_RETURN(r.filters, ParseFilters(b));
  DBS_ASSIGN_OR_RETURN(r.limit, b.Int("limit", 100, 1, 1000));
  DBS_ASSIGN_OR_RETURN(r.offset, b.Int("offset", 0, 0, int64_t{1} << 40));
  DBS_ASSIGN_OR_RETURN(r.timeout_ms, b.Int("timeoutMs", 30000, 1, 3600000));
  if (b.Has("sort")) {
    const json& s = b.Get("sort");
    if (!s.is_array() || s.size() > 16) {
      return Status::InvalidArgument("sort must be an array of at most 16 {column, desc}");
    }
    for (size_t i = 0; i < s.size(); ++i) {
      if (!s[i].is_object() || !s[i].contains("column") || !s[i]["column"].is_string() ||
          (s[i].contains("desc") && !s[i]["desc"].is_boolean()) ||
          s[i].size() != (s[i].contains("desc") ? 2u : 1u)) {
        return Status::InvalidArgument("sort[" + std::to_string(i) +
                                       "] must be {\"column\": name, \"desc\": boolean}");
      }
      r.sort.push_back({s[i]["column"], s[i].value("desc", false)});
    }
  }
  if (b.Has("after") && !b.Get("after").is_null()) r.after = b.Get("after");
  auto out = explorer::BrowseRows(t.connection, r);
  if (!out.ok()) return Upstream(out.status());
  return json{{"columns", ColumnsJson(out->columns)},
              {"primaryKey", out->primary_key},
              {"rows", out->rows},
              {"paging", out->paging},
              {"nextCursor", out->next_cursor ? *out->next_cursor : json(nullptr)},
              {"nextOffset", out->next_offset ? json(*out->next_offset) : json(nullptr)},
              {"statement", out->statement},
              {"elapsedMs", out->elapsed_ms}};
}

Result<json> TableCount(ExplorerState& st, ExplorerCall& c) {
  BodyReader b(c.body, {"connectionId", "schema", "table", "filters", "exact", "timeoutMs"});
  DBS_RETURN_IF_ERROR(b.status());
  DBS_ASSIGN_OR_RETURN(TableTarget t, ParseTarget(st, b));
  DBS_ASSIGN_OR_RETURN(auto filters, ParseFilters(b));
  DBS_ASSIGN_OR_RETURN(bool exact, b.Bool("exact", true));
  DBS_ASSIGN_OR_RETURN(int64_t timeout, b.Int("timeoutMs", 30000, 1, 3600000));
  auto n = explorer::CountTableRows(t.connection, t.schema, t.table, filters, exact, timeout);
  if (!n.ok()) return Upstream(n.status());
  return json{{"rows", n->rows}, {"exact", n->exact}};
}

Result<json> TableDdl(ExplorerState& st, ExplorerCall& c) {
  BodyReader b(c.body, {"connectionId", "schema", "table"});
  DBS_RETURN_IF_ERROR(b.status());
  DBS_ASSIGN_OR_RETURN(TableTarget t, ParseTarget(st, b));
  auto ddl = explorer::TableDdl(t.connection, t.schema, t.table);
  if (!ddl.ok()) return Upstream(ddl.status());
  return json{{"ddl", *ddl}};
}

Result<json> TableProfile(ExplorerState& st, ExplorerCall& c) {
  BodyReader b(c.body, {"connectionId", "schema", "table", "sampleRows", "timeoutMs"});
  DBS_RETURN_IF_ERROR(b.status());
  DBS_ASSIGN_OR_RETURN(TableTarget t, ParseTarget(st, b));
  DBS_ASSIGN_OR_RETURN(int64_t sample, b.Int("sampleRows", 10000, 0, int64_t{1} << 40));
  DBS_ASSIGN_OR_RETURN(int64_t timeout, b.Int("timeoutMs", 120000, 1, 3600000));
  ScratchDir tmp(st.deps.temp_root, "profile");
  auto p = explorer::ProfileTable(t.connection, t.schema, t.table, sample, timeout, tmp.path());
  if (!p.ok()) return Upstream(p.status());
  return *p;
}

// An ER diagram of the files of a folder: a node per readable file, its columns as DuckDB reads
// them; files have no keys, so no edges.
Result<json> FileEr(ExplorerState& st, const BodyReader& b) {
  DBS_RETURN_IF_ERROR(NeedRoots(st));
  DBS_ASSIGN_OR_RETURN(std::string root, b.String("root", true, 4096));
  DBS_ASSIGN_OR_RETURN(std::string path, b.String("path", false, 4096));
  DBS_ASSIGN_OR_RETURN(json list, explorer::ListFolder(st.file_roots, root, path, 500));
  json nodes = json::array();
  ScratchDir tmp(st.deps.temp_root, "er");
  federated::FederatedOptions o;
  o.temp_dir = tmp.path();
  for (const json& e : list["entries"]) {
    if (e["kind"] != "file" || nodes.size() >= 100) continue;
    auto file = explorer::ResolveFile(st.file_roots, root, e["path"].get<std::string>());
    if (!file.ok() || !explorer::FileReader(*file).ok()) continue;
    auto sample = explorer::FileSample(st.file_roots, *file, 0, o);
    if (!sample.ok()) continue;  // a file DuckDB cannot read is left out
    json cols = json::array();
    for (const auto& col : sample->columns) {
      cols.push_back(
          {{"name", col.name}, {"type", col.type}, {"nullable", true}, {"primaryKey", false}});
    }
    nodes.push_back({{"id", e["path"]}, {"schema", path}, {"name", e["name"]}, {"columns", cols}});
  }
  return json{{"schema", path}, {"nodes", nodes}, {"edges", json::array()}};
}

Result<json> Er(ExplorerState& st, ExplorerCall& c) {
  BodyReader b(c.body, {"connectionId", "schema", "root", "path"});
  DBS_RETURN_IF_ERROR(b.status());
  if (b.Has("root")) return FileEr(st, b);
  DBS_ASSIGN_OR_RETURN(std::string id, b.String("connectionId", true, 64));
  DBS_ASSIGN_OR_RETURN(std::string schema, b.String("schema", false, 1024));
  auto conn = st.deps.connection(id);
  if (!conn.ok()) return Status::NotFound("connectionId " + id + " does not exist");
  auto er = explorer::ErDiagram(*conn, schema, 500);
  if (!er.ok()) return Upstream(er.status());
  return *er;
}

}  // namespace

void RegisterExplorerRoutes(const std::string& v1, const AddExplorerRoute& add,
                            ExplorerRouteDeps deps) {
  auto st = std::make_shared<ExplorerState>();
  st->deps = std::move(deps);
  st->file_roots = explorer::FileRoots(SystemEnv("DBS_FILE_ROOTS").value_or(""));
  {
    mcp::ToolDeps td;
    td.connection = st->deps.connection;
    td.config = st->deps.config;
    td.browse = [](const ConnectionConfig& c, const std::string& kind, const std::string& schema) {
      return Browse(c, kind, schema);
    };
    td.describe = [](const ConnectionConfig& c, const std::string& schema,
                     const std::string& table) { return DescribeTable(c, schema, table); };
    td.run_status = st->deps.run_status;
    td.recent_logs = st->deps.recent_logs;
    td.temp_root = st->deps.temp_root;
    td.file_roots = st->file_roots;
    const std::string version = st->deps.version;
    st->mcp = std::make_unique<mcp::McpHttpEndpoint>([td, version] {
      return std::make_unique<mcp::McpServer>("dbstreams", version, mcp::kInstructions,
                                              mcp::MakeTools(td));
    });
  }
  const std::string e = v1 + "/explorer";
  // Each handler maps the engine's errors onto the explorer's statuses (explorer_body.h).
  auto route = [&](const std::string& method, const std::string& path,
                   Result<json> (*fn)(ExplorerState&, ExplorerCall&), int ok) {
    add(
        method, path, [st, fn](ExplorerCall& c) { return Respond(c, fn(*st, c)); }, ok);
  };
  route("POST", e + "/console", RunConsole, 200);
  route("POST", e + "/console/explain", ExplainConsole, 200);
  add(
      "POST", e + "/console/download",
      [st](ExplorerCall& c) { return Respond(c, DownloadConsole(st, c)); }, 200);
  route("GET", e + "/queries", Queries, 200);
  route("POST", e + "/queries/{id}/next", NextPage, 200);
  add(
      "DELETE", e + "/queries/{id}",
      [st](ExplorerCall& c) -> Result<json> {
        return Respond(c, [&]() -> Result<json> {
          DBS_RETURN_IF_ERROR(st->registry.Cancel(c.params.at("id"), KeyId(*st, c.req)));
          return json(nullptr);
        }());
      },
      204);
  route("GET", e + "/history", History, 200);
  route("POST", e + "/table/rows", TableRows, 200);
  route("POST", e + "/table/count", TableCount, 200);
  route("POST", e + "/table/ddl", TableDdl, 200);
  route("POST", e + "/table/profile", TableProfile, 200);
  route("POST", e + "/er", Er, 200);
  route("GET", e + "/files/roots", FileRootsRoute, 200);
  route("POST", e + "/files/list", FileList, 200);
  route("POST", e + "/files/sample", FileSampleRoute, 200);
  route("POST", e + "/files/query", FileQuery, 200);
  // MCP over Streamable HTTP (src/mcp/mcp_http.h): behind the API key like every route.
  add(
      "POST", "/mcp",
      [st](ExplorerCall& c) -> Result<json> {
        return McpAnswer(c, st->mcp->Post(c.body, c.req.get_header_value("Mcp-Session-Id"),
                                          c.req.get_header_value("MCP-Protocol-Version")));
      },
      200);
  add(
      "GET", "/mcp", [st](ExplorerCall& c) -> Result<json> { return McpAnswer(c, st->mcp->Get()); },
      405);
  add(
      "DELETE", "/mcp",
      [st](ExplorerCall& c) -> Result<json> {
        return McpAnswer(c, st->mcp->Delete(c.req.get_header_value("Mcp-Session-Id")));
      },
      204);
}

}  // namespace dbs::api

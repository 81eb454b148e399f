// The SQLite config store: one file (config.db) in the data folder, WAL mode, one connection
// guarded by a mutex. Schema changes are numbered migrations applied in order at open time
// (table schema_version holds the applied number).
#include <sodium.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <limits>
#include <mutex>

#include "store/config_store.h"

namespace dbs::store {

using nlohmann::json;

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
std::string TodayUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}
std::string NewId(const std::string& prefix) {
  unsigned char b[8];
  randombytes_buf(b, sizeof b);
  static const char* hex = "0123456789abcdef";
  std::string s = prefix;
  for (unsigned char c : b) {
    s += hex[c >> 4];
    s += hex[c & 15];
  }
  return s;
}

namespace {

// Numbered migrations: index i brings the schema from version i to i + 1.
const char* const kMigrations[] = {
    // 1: the initial schema.
    "CREATE TABLE connections (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, spec TEXT NOT NULL,"
    "  secret_ref TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);"
    "CREATE TABLE streams (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, config TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);"
    "CREATE TABLE runs (id TEXT PRIMARY KEY, stream_id TEXT NOT NULL, stream_name TEXT NOT NULL,"
    "  state TEXT NOT NULL, error TEXT NOT NULL, reader_service TEXT NOT NULL,"
    "  started_at INTEGER NOT NULL, ended_at INTEGER NOT NULL, rows INTEGER NOT NULL,"
    "  bytes INTEGER NOT NULL);"
    "CREATE INDEX runs_by_stream ON runs (stream_id, started_at);"
    "CREATE TABLE usage_days (day TEXT PRIMARY KEY, bytes INTEGER NOT NULL,"
    "  cdc_seconds INTEGER NOT NULL);"
    "CREATE TABLE api_keys (id TEXT PRIMARY KEY, name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,"
    "  prefix TEXT NOT NULL, created_at INTEGER NOT NULL, revoked_at INTEGER NOT NULL);",
    // 2: API keys may expire (unix seconds; 0: never).
    "ALTER TABLE api_keys ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;",
    // 3: a run's final figures (per table, rates, CDC), JSON.
    "ALTER TABLE runs ADD COLUMN details TEXT NOT NULL DEFAULT '';",
    // 4: the explorer's query history, per API key.
    "CREATE TABLE query_history (id TEXT PRIMARY KEY, api_key_id TEXT NOT NULL,"
    "  connection_id TEXT NOT NULL, kind TEXT NOT NULL, statement TEXT NOT NULL,"
    "  read_only INTEGER NOT NULL, started_at INTEGER NOT NULL, duration_ms INTEGER NOT NULL,"
    "  rows INTEGER NOT NULL, error TEXT NOT NULL);"
    "CREATE INDEX query_history_by_key ON query_history (api_key_id, started_at);",
};
constexpr int kSchemaVersion = sizeof(kMigrations) / sizeof(kMigrations[0]);

// A prepared statement with positional binds; finalized on destruction.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &st_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(st_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& Bind(const std::string& v) {
    if (rc_ == SQLITE_OK)
      rc_ = sqlite3_bind_text(st_, ++n_, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int64_t v) {
    if (rc_ == SQLITE_OK) rc_ = sqlite3_bind_int64(st_, ++n_, v);
    return *this;
  }
  // SQLITE_ROW / SQLITE_DONE, or an error status.
  Result<bool> Step() {
    if (rc_ != SQLITE_OK) return Error("preparing a statement");
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    rc_ = rc;
    return Error("running a statement");
  }
  std::string Text(int col) {
    const unsigned char* p = sqlite3_column_text(st_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(st_, col)))
             : std::string();
  }
  int64_t Int(int col) { return sqlite3_column_int64(st_, col); }
  int changes() { return sqlite3_changes(db_); }
  int extended_code() { return sqlite3_extended_errcode(db_); }

 private:
  Status Error(const char* what) {
    std::string msg = std::string("config store: ") + what + ": " + sqlite3_errmsg(db_);
    int code = sqlite3_errcode(db_);
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
      return Status(StatusCode::kIoError, Retry::kRetry, msg);
    }
    if (code == SQLITE_CONSTRAINT) return Status::AlreadyExists(msg);
    return Status::IoError(msg);
  }
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
  int rc_ = SQLITE_OK;
  int n_ = 0;
};

class SqliteConfigStore : public ConfigStore {
 public:
  ~SqliteConfigStore() override { sqlite3_close(db_); }

  static Result<std::unique_ptr<ConfigStore>> Open(const std::string& path) {
    auto s = std::unique_ptr<SqliteConfigStore>(new SqliteConfigStore());
    int rc = sqlite3_open_v2(path.c_str(), &s->db_,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                             nullptr);
    if (rc != SQLITE_OK) {
      return Status::IoError("config store: cannot open " + path + ": " +
                             (s->db_ ? sqlite3_errmsg(s->db_) : "out of memory") +
                             ": check the data folder's permissions");
    }
    ::chmod(path.c_str(), 0600);
    sqlite3_busy_timeout(s->db_, 5000);
    DBS_RETURN_IF_ERROR(s->ExecScript("PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON;"));
    DBS_RETURN_IF_ERROR(s->Migrate(path));
    return std::unique_ptr<ConfigStore>(std::move(s));
  }

  Result<std::vector<ConnectionRecord>> ListConnections(const std::string& search, int offset,
                                                        int limit, int64_t* total) override {
    std::lock_guard<std::mutex> l(mu_);
    if (total) {
      Stmt c(db_, "SELECT count(*) FROM connections WHERE instr(lower(name), lower(?)) > 0");
      c.Bind(search);
      DBS_ASSIGN_OR_RETURN(bool row, c.Step());
      *total = row ? c.Int(0) : 0;
    }
    Stmt st(db_,
            "SELECT id, name, spec, secret_ref, created_at, updated_at FROM connections "
            "WHERE instr(lower(name), lower(?)) > 0 ORDER BY name LIMIT ? OFFSET ?");
    st.Bind(search).Bind(int64_t{limit}).Bind(int64_t{offset});
    std::vector<ConnectionRecord> out;
    while (true) {
      DBS_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.push_back(ConnRow(st));
    }
    return out;
  }
  Result<ConnectionRecord> GetConnection(const std::string& id) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_,
            "SELECT id, name, spec, secret_ref, created_at, updated_at FROM connections "
            "WHERE id = ?");
    st.Bind(id);
    DBS_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return Status::NotFound("connection " + id + " does not exist");
    return ConnRow(st);
  }
  Status PutConnection(const ConnectionRecord& r, bool create) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_, create ? "INSERT INTO connections (name, spec, secret_ref, created_at, "
                          "updated_at, id) VALUES (?, ?, ?, ?, ?, ?)"
                        : "UPDATE connections SET name = ?, spec = ?, secret_ref = ?, "
                          "created_at = ?, updated_at = ? WHERE id = ?");
    st.Bind(r.name).Bind(r.spec.dump()).Bind(r.secret_ref).Bind(r.created_at).Bind(r.updated_at);
    st.Bind(r.id);
    auto s = st.Step();
    if (!s.ok()) {
      if (s.status().code() == StatusCode::kAlreadyExists) {
        return Status::AlreadyExists("a connection named '" + r.name +
                                     "' already exists: choose another name");
      }
      return s.status();
    }
    if (!create && st.changes() == 0) {
      return Status::NotFound("connection " + r.id + " does not exist");
    }
    return Status::Ok();
  }
  Status DeleteConnection(const std::string& id) override {
    return DeleteById("DELETE FROM connections WHERE id = ?", id, "connection");
  }

  Result<std::vector<StreamRecord>> ListStreams(const std::string& search, int offset, int limit,
                                                int64_t* total) override {
    std::lock_guard<std::mutex> l(mu_);
    {
      Stmt c(db_, "SELECT count(*) FROM streams WHERE instr(lower(name), lower(?)) > 0");
      c.Bind(search);
      DBS_ASSIGN_OR_RETURN(bool row, c.Step());
      if (total) *total = row ? c.Int(0) : 0;
    }
    Stmt st(db_,
            "SELECT id, name, config, created_at, updated_at FROM streams "
            "WHERE instr(lower(name), lower(?)) > 0 ORDER BY name LIMIT ? OFFSET ?");
    st.Bind(search).Bind(int64_t{limit}).Bind(int64_t{offset});
    std::vector<StreamRecord> out;
    while (true) {
      DBS_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.push_back(StreamRow(st));
    }
    return out;
  }
  Result<StreamRecord> GetStream(const std::string& id) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_, "SELECT id, name, config, created_at, updated_at FROM streams WHERE id = ?");
    st.Bind(id);
    DBS_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return Status::NotFound("stream " + id + " does not exist");
    return StreamRow(st);
  }
  Status PutStream(const StreamRecord& r, bool create) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_, create ? "INSERT INTO streams (name, config, created_at, updated_at, id) "
                          "VALUES (?, ?, ?, ?, ?)"
                        : "UPDATE streams SET name = ?, config = ?, created_at = ?, "
                          "updated_at = ? WHERE id = ?");
    st.Bind(r.name).Bind(r.config.dump()).Bind(r.created_at).Bind(r.updated_at).Bind(r.id);
    auto s = st.Step();
    if (!s.ok()) {
      if (s.status().code() == StatusCode::kAlreadyExists) {
        return Status::AlreadyExists("a stream named '" + r.name +
                                     "' already exists: choose another name");
      }
      return s.status();
    }
    if (!create && st.changes() == 0) return Status::NotFound("stream " + r.id + " does not exist");
    return Status::Ok();
  }
  Status DeleteStream(const std::string& id) override {
    return DeleteById("DELETE FROM streams WHERE id = ?", id, "stream");
  }
  Result<std::vector<std::string>> StreamsUsingConnection(const std::string& conn_id) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_, "SELECT id, config FROM streams");
    std::vector<std::string> out;
    while (true) {
      DBS_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      json c = json::parse(st.Text(1), nullptr, false);
      if (c.is_discarded()) continue;
      bool uses = false;
      for (const char* side : {"source", "target"}) {
        if (!c.contains(side) || !c[side].is_object()) continue;
        uses = uses || c[side].value("connection", "") == conn_id;
        // A federated source names its connections per alias.
        if (c[side].contains("federated") && c[side]["federated"].is_array()) {
          for (const json& m : c[side]["federated"]) {
            uses = uses || (m.is_object() && m.value("connection", "") == conn_id);
          }
        }
      }
      if (uses) out.push_back(st.Text(0));
    }
    return out;
  }

  Status PutRun(const RunRecord& r) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_,
            "INSERT OR REPLACE INTO runs (id, stream_id, stream_name, state, error, "
            "reader_service, started_at, ended_at, rows, bytes, details) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?)");
    st.Bind(r.id).Bind(r.stream_id).Bind(r.stream_name).Bind(r.state).Bind(r.error);
    st.Bind(r.reader_service).Bind(r.started_at).Bind(r.ended_at);
    st.Bind(static_cast<int64_t>(r.rows)).Bind(static_cast<int64_t>(r.bytes)).Bind(r.details);
    return st.Step().status();
  }
  Result<RunRecord> GetRun(const std::string& id) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_, (std::string(kRunCols) + " WHERE id = ?").c_str());
    st.Bind(id);
    DBS_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return Status::NotFound("run " + id + " does not exist");
    return RunRow(st);
  }
  Result<std::vector<RunRecord>> ListRuns(const std::string& stream_id, int limit) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_, (std::string(kRunCols) +
                  " WHERE stream_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ?")
                     .c_str());
    st.Bind(stream_id).Bind(int64_t{limit});
    return Runs(st);
  }
  Result<std::vector<RunRecord>> ListRuns(const std::string& stream_id, int offset, int limit,
                                          int64_t* total) override {
    std::lock_guard<std::mutex> l(mu_);
    if (total) {
      Stmt c(db_, "SELECT count(*) FROM runs WHERE stream_id = ?");
      c.Bind(stream_id);
      DBS_ASSIGN_OR_RETURN(bool row, c.Step());
      *total = row ? c.Int(0) : 0;
    }
    Stmt st(db_, (std::string(kRunCols) +
                  " WHERE stream_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ? OFFSET ?")
                     .c_str());
    st.Bind(stream_id).Bind(int64_t{limit}).Bind(int64_t{offset});
    return Runs(st);
  }
  Result<std::vector<RunRecord>> ListActiveRuns() override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_, (std::string(kRunCols) +
                  " WHERE state IN ('starting','running','paused','stopping') ORDER BY started_at")
                     .c_str());
    return Runs(st);
  }

  Status AddUsage(const std::string& day, uint64_t bytes, uint64_t cdc_seconds) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_,
            "INSERT INTO usage_days (day, bytes, cdc_seconds) VALUES (?, ?, ?) ON CONFLICT(day) "
            "DO UPDATE SET bytes = bytes + excluded.bytes, "
            "cdc_seconds = cdc_seconds + excluded.cdc_seconds");
    st.Bind(day).Bind(static_cast<int64_t>(bytes)).Bind(static_cast<int64_t>(cdc_seconds));
    return st.Step().status();
  }
  Result<std::vector<UsageDay>> ListUsage() override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_, "SELECT day, bytes, cdc_seconds FROM usage_days ORDER BY day");
    std::vector<UsageDay> out;
    while (true) {
      DBS_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.push_back(
          {st.Text(0), static_cast<uint64_t>(st.Int(1)), static_cast<uint64_t>(st.Int(2))});
    }
    return out;
  }

  Status CreateApiKey(const ApiKeyRecord& r) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_,
            "INSERT INTO api_keys (id, name, hash, prefix, created_at, revoked_at, expires_at) "
            "VALUES (?,?,?,?,?,0,?)");
    st.Bind(r.id).Bind(r.name).Bind(r.hash).Bind(r.prefix).Bind(r.created_at).Bind(r.expires_at);
    return st.Step().status();
  }
  Result<std::vector<ApiKeyRecord>> ListApiKeys() override {
    return ListApiKeys(0, std::numeric_limits<int>::max(), nullptr);
  }
  Result<std::vector<ApiKeyRecord>> ListApiKeys(int offset, int limit, int64_t* total) override {
    std::lock_guard<std::mutex> l(mu_);
    if (total) {
      Stmt c(db_, "SELECT count(*) FROM api_keys");
      DBS_ASSIGN_OR_RETURN(bool row, c.Step());
      *total = row ? c.Int(0) : 0;
    }
    Stmt st(db_, (std::string(kKeyCols) + " ORDER BY created_at, rowid LIMIT ? OFFSET ?").c_str());
    st.Bind(int64_t{limit}).Bind(int64_t{offset});
    std::vector<ApiKeyRecord> out;
    while (true) {
      DBS_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.push_back(KeyRow(st));
    }
    return out;
  }
  Status RevokeApiKey(const std::string& id) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_, "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at = 0");
    st.Bind(NowSeconds()).Bind(id);
    DBS_RETURN_IF_ERROR(st.Step().status());
    if (st.changes() == 0)
      return Status::NotFound("API key " + id + " does not exist or was revoked");
    return Status::Ok();
  }
  Result<ApiKeyRecord> FindApiKey(const std::string& hash) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_, (std::string(kKeyCols) +
                  " WHERE hash = ? AND revoked_at = 0 AND (expires_at = 0 OR expires_at > ?)")
                     .c_str());
    st.Bind(hash).Bind(NowSeconds());
    DBS_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return Status::NotFound("no valid API key with this hash");
    return KeyRow(st);
  }

  Status AddQueryHistory(const QueryHistoryRecord& r) override {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_,
            "INSERT INTO query_history (id, api_key_id, connection_id, kind, statement, "
            "read_only, started_at, duration_ms, rows, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?)");
    st.Bind(r.id)
        .Bind(r.api_key_id)
        .Bind(r.connection_id)
        .Bind(r.kind)
        .Bind(r.statement)
        .Bind(int64_t{r.read_only ? 1 : 0})
        .Bind(r.started_at)
        .Bind(r.duration_ms)
        .Bind(r.rows)
        .Bind(r.error);
    return st.Step().status();
  }
  Result<std::vector<QueryHistoryRecord>> ListQueryHistory(const QueryHistoryFilter& f, int offset,
                                                           int limit, int64_t* total) override {
    std::lock_guard<std::mutex> l(mu_);
    const std::string where =
        " WHERE api_key_id = ? AND instr(lower(statement), lower(?)) > 0 AND (? = '' OR "
        "connection_id = ?)";
    if (total) {
      Stmt c(db_, ("SELECT count(*) FROM query_history" + where).c_str());
      c.Bind(f.api_key_id).Bind(f.search).Bind(f.connection_id).Bind(f.connection_id);
      DBS_ASSIGN_OR_RETURN(bool row, c.Step());
      *total = row ? c.Int(0) : 0;
    }
    Stmt st(db_, ("SELECT id, api_key_id, connection_id, kind, statement, read_only, started_at, "
                  "duration_ms, rows, error FROM query_history" +
                  where + " ORDER BY started_at DESC, rowid DESC LIMIT ? OFFSET ?")
                     .c_str());
    st.Bind(f.api_key_id)
        .Bind(f.search)
        .Bind(f.connection_id)
        .Bind(f.connection_id)
        .Bind(int64_t{limit})
        .Bind(int64_t{offset});
    std::vector<QueryHistoryRecord> out;
    while (true) {
      DBS_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      QueryHistoryRecord r;
      r.id = st.Text(0);
      r.api_key_id = st.Text(1);
      r.connection_id = st.Text(2);
      r.kind = st.Text(3);
      r.statement = st.Text(4);
      r.read_only = st.Int(5) != 0;
      r.started_at = st.Int(6);
      r.duration_ms = st.Int(7);
      r.rows = st.Int(8);
      r.error = st.Text(9);
      out.push_back(std::move(r));
    }
    return out;
  }

 private:
  static constexpr const char* kRunCols =
      "SELECT id, stream_id, stream_name, state, error, reader_service, started_at, ended_at, "
      "rows, bytes, details FROM runs";
  static constexpr const char* kKeyCols =
      "SELECT id, name, hash, prefix, created_at, revoked_at, expires_at FROM api_keys";

  SqliteConfigStore() = default;

  Status ExecScript(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "unknown error";
      sqlite3_free(err);
      return Status::IoError("config store: " + m);
    }
    return Status::Ok();
  }
  Status Migrate(const std::string& path) {
    DBS_RETURN_IF_ERROR(
        ExecScript("CREATE TABLE IF NOT EXISTS schema_version (v INTEGER NOT NULL)"));
    int64_t v = 0;
    {
      Stmt st(db_, "SELECT max(v) FROM schema_version");
      DBS_ASSIGN_OR_RETURN(bool row, st.Step());
      if (row) v = st.Int(0);
    }
    if (v > kSchemaVersion) {
      return Status::FailedPrecondition("config store " + path + " has schema version " +
                                        std::to_string(v) + ", newer than this build's " +
                                        std::to_string(kSchemaVersion) + ": upgrade dbstreams");
    }
    for (int64_t i = v; i < kSchemaVersion; ++i) {
      DBS_RETURN_IF_ERROR(ExecScript(std::string("BEGIN IMMEDIATE;") + kMigrations[i] +
                                     "; INSERT INTO schema_version VALUES (" +
                                     std::to_string(i + 1) + "); COMMIT;"));
    }
    return Status::Ok();
  }
  Status DeleteById(const char* sql, const std::string& id, const char* what) {
    std::lock_guard<std::mutex> l(mu_);
    Stmt st(db_, sql);
    st.Bind(id);
    DBS_RETURN_IF_ERROR(st.Step().status());
    if (st.changes() == 0)
      return Status::NotFound(std::string(what) + " " + id + " does not exist");
    return Status::Ok();
  }
  static ConnectionRecord ConnRow(Stmt& st) {
    ConnectionRecord r;
    r.id = st.Text(0);
    r.name = st.Text(1);
    r.spec = json::parse(st.Text(2), nullptr, false);
    if (r.spec.is_discarded()) r.spec = json::object();
    r.secret_ref = st.Text(3);
    r.created_at = st.Int(4);
    r.updated_at = st.Int(5);
    return r;
  }
  static StreamRecord StreamRow(Stmt& st) {
    StreamRecord r;
    r.id = st.Text(0);
    r.name = st.Text(1);
    r.config = json::parse(st.Text(2), nullptr, false);
    if (r.config.is_discarded()) r.config = json::object();
    r.created_at = st.Int(3);
    r.updated_at = st.Int(4);
    return r;
  }
  static ApiKeyRecord KeyRow(Stmt& st) {
    return {st.Text(0), st.Text(1), st.Text(2), st.Text(3), st.Int(4), st.Int(5), st.Int(6)};
  }
  static Result<std::vector<RunRecord>> Runs(Stmt& st) {
    std::vector<RunRecord> out;
    while (true) {
      DBS_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      out.push_back(RunRow(st));
    }
    return out;
  }
  static RunRecord RunRow(Stmt& st) {
    RunRecord r;
    r.id = st.Text(0);
    r.stream_id = st.Text(1);
    r.stream_name = st.Text(2);
    r.state = st.Text(3);
    r.error = st.Text(4);
    r.reader_service = st.Text(5);
    r.started_at = st.Int(6);
    r.ended_at = st.Int(7);
    r.rows = static_cast<uint64_t>(st.Int(8));
    r.bytes = static_cast<uint64_t>(st.Int(9));
    r.details = st.Text(10);
    return r;
  }

  std::mutex mu_;
  sqlite3* db_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<ConfigStore>> ConfigStore::Open(const std::string& backend,
                                                       const std::string& data_dir) {
  if (sodium_init() < 0) return Status::Internal("libsodium failed to initialize");
  if (backend == "sqlite") {
    std::error_code ec;
    std::filesystem::create_directories(data_dir, ec);
    if (ec) {
      return Status::IoError("cannot create the data folder " + data_dir + ": " + ec.message());
    }
    return SqliteConfigStore::Open(data_dir + "/config.db");
  }
  return Status::InvalidArgument("unknown CONFIG_BACKEND '" + backend +
                                 "': the known config backends are: sqlite");
}

}  // namespace dbs::store

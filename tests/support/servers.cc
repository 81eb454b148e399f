#include "support/servers.h"

#include <curl/curl.h>
#include <libpq-fe.h>
#include <mysql.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "bus/jetstream.h"
#include "support/subprocess.h"

namespace dbs::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Throwaway servers on loopback only: fixed passwords are fine and keep templates shareable.
constexpr char kMariaDbPassword[] = "dbs-test-mariadb";
constexpr char kPostgresPassword[] = "dbs-test-postgres";
constexpr char kS3AccessKey[] = "dbs-test-s3-access";
constexpr char kS3SecretKey[] = "dbs-test-s3-secret";
// Bump when the way templates are made changes, so old caches are not reused.
constexpr char kTemplateRevision[] = "t1";
constexpr auto kStopGrace = seconds(60);
constexpr auto kToolTimeout = seconds(180);
constexpr int kStartAttempts = 3;  // retries when a chosen port was taken meanwhile

std::atomic<int> g_cluster_counter{0};

milliseconds Remaining(Clock::time_point deadline) {
  return std::max(milliseconds(0),
                  std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
}

// Appends the last connection error to a readiness failure.
Status WithLastError(const Status& st, const std::string& last_error) {
  if (st.ok() || last_error.empty()) return st;
  return Status(st.code(), st.retryable() ? Retry::kRetry : Retry::kFail,
                st.message() + "\nlast connection error: " + last_error);
}

// `cp -a from to`: keeps owners and modes (PostgreSQL's data folder must stay owned by it).
Status CopyTree(const std::string& from, const std::string& to, const std::string& log) {
  DBS_ASSIGN_OR_RETURN(std::string cp, FindProgram("cp"));
  SpawnSpec spec;
  spec.argv = {cp, "-a", from, to};
  spec.log_path = log;
  return RunCommand(spec, kToolTimeout, "copying " + from + " to " + to);
}

Status ChownTo(const std::string& path, const std::optional<RunAs>& who) {
  if (!who) return Status::Ok();
  if (chown(path.c_str(), who->uid, who->gid) != 0) {
    return Status::IoError("chown " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

// The word after `marker` in `text` ("Ver 10.11.19-MariaDB" -> "10.11.19-MariaDB").
std::string WordAfter(const std::string& text, const std::string& marker) {
  size_t at = text.find(marker);
  if (at == std::string::npos) return {};
  std::istringstream in(text.substr(at + marker.size()));
  std::string word;
  in >> word;
  return word;
}

// --- MariaDB client ----------------------------------------------------------------------------

struct MysqlCloser {
  void operator()(MYSQL* m) const { mysql_close(m); }
};
using MysqlPtr = std::unique_ptr<MYSQL, MysqlCloser>;

struct MysqlResultFree {
  void operator()(MYSQL_RES* r) const { mysql_free_result(r); }
};

Status MysqlError(MYSQL* m, const std::string& what) {
  const unsigned int code = mysql_errno(m);
  std::string msg = what + ": MariaDB error " + std::to_string(code) + " (" + mysql_sqlstate(m) +
                    "): " + mysql_error(m);
  if (code >= 2000 && code < 3000) return Status::Unavailable(std::move(msg));  // client side
  if (code == 1045) return Status::Unauthenticated(std::move(msg));
  return Status::InvalidArgument(std::move(msg));
}

Result<MysqlPtr> MysqlConnect(int port, const std::string& database, unsigned int timeout_s) {
  static std::once_flag init;
  std::call_once(init, [] { mysql_library_init(0, nullptr, nullptr); });
  MysqlPtr m(mysql_init(nullptr));
  if (!m) return Status::ResourceExhausted("mysql_init failed");
  unsigned int local_infile = 1;
  unsigned long max_packet = 256UL << 20;
  mysql_optionsv(m.get(), MYSQL_OPT_CONNECT_TIMEOUT, &timeout_s);
  mysql_optionsv(m.get(), MYSQL_SET_CHARSET_NAME, "utf8mb4");
  mysql_optionsv(m.get(), MYSQL_OPT_LOCAL_INFILE, &local_infile);
  mysql_optionsv(m.get(), MYSQL_OPT_MAX_ALLOWED_PACKET, &max_packet);
  if (mysql_real_connect(m.get(), "127.0.0.1", "root", kMariaDbPassword,
                         database.empty() ? nullptr : database.c_str(),
                         static_cast<unsigned int>(port), nullptr,
                         CLIENT_MULTI_STATEMENTS) == nullptr) {
    return MysqlError(m.get(), "connecting to MariaDB at 127.0.0.1:" + std::to_string(port));
  }
  return m;
}

Result<Rows> MysqlRun(MYSQL* m, const std::string& sql) {
  if (mysql_real_query(m, sql.data(), sql.size()) != 0) return MysqlError(m, "running SQL");
  Rows rows;
  for (;;) {
    std::unique_ptr<MYSQL_RES, MysqlResultFree> res(mysql_store_result(m));
    if (res) {
      const unsigned int ncols = mysql_num_fields(res.get());
      Rows set;
      while (MYSQL_ROW row = mysql_fetch_row(res.get())) {
        const unsigned long* lengths = mysql_fetch_lengths(res.get());
        std::vector<std::optional<std::string>> out;
        out.reserve(ncols);
        for (unsigned int i = 0; i < ncols; ++i) {
          if (row[i] == nullptr) {
            out.emplace_back(std::nullopt);
          } else {
            out.emplace_back(std::string(row[i], lengths[i]));
          }
        }
        set.push_back(std::move(out));
      }
      rows = std::move(set);
    } else if (mysql_field_count(m) != 0) {
      return MysqlError(m, "reading a result");
    }
    const int next = mysql_next_result(m);
    if (next < 0) break;
    if (next > 0) return MysqlError(m, "running SQL");
  }
  return rows;
}

// --- PostgreSQL client -------------------------------------------------------------------------

struct PgCloser {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using PgPtr = std::unique_ptr<PGconn, PgCloser>;

std::string TrimRight(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

Result<PgPtr> PgConnect(int port, const std::string& database, int timeout_s) {
  const std::string port_s = std::to_string(port);
  const std::string timeout = std::to_string(timeout_s);
  const char* keys[] = {"host",
                        "port",
                        "user",
                        "password",
                        "dbname",
                        "connect_timeout",
                        "sslmode",
                        "gssencmode",
                        "client_encoding",
                        "application_name",
                        nullptr};
  const char* values[] = {"127.0.0.1",      port_s.c_str(),     "postgres", kPostgresPassword,
                          database.c_str(), timeout.c_str(),    "disable",  "disable",
                          "UTF8",           "dbs-test-fixture", nullptr};
  PgPtr c(PQconnectdbParams(keys, values, 0));
  if (!c) return Status::ResourceExhausted("PQconnectdbParams failed");
  if (PQstatus(c.get()) != CONNECTION_OK) {
    return Status::Unavailable("connecting to PostgreSQL at 127.0.0.1:" + port_s + "/" + database +
                               ": " + TrimRight(PQerrorMessage(c.get())));
  }
  return c;
}

Status PgResultError(PGresult* r) {
  const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  std::string msg = "PostgreSQL error";
  if (state != nullptr) msg += std::string(" ") + state;
  msg += ": " + TrimRight(PQresultErrorMessage(r));
  if (state != nullptr && (std::string_view(state).substr(0, 2) == "08" ||
                           std::string_view(state).substr(0, 2) == "57")) {
    return Status::Unavailable(std::move(msg));
  }
  return Status::InvalidArgument(std::move(msg));
}

Result<Rows> PgRun(PGconn* c, const std::string& sql) {
  if (PQsendQuery(c, sql.c_str()) == 0) {
    return Status::Unavailable("sending SQL to PostgreSQL: " + TrimRight(PQerrorMessage(c)));
  }
  Rows rows;
  Status error;
  while (PGresult* r = PQgetResult(c)) {
    switch (PQresultStatus(r)) {
      case PGRES_TUPLES_OK: {
        Rows set;
        const int nrows = PQntuples(r);
        const int ncols = PQnfields(r);
        for (int i = 0; i < nrows; ++i) {
          std::vector<std::optional<std::string>> row;
          row.reserve(static_cast<size_t>(ncols));
          for (int j = 0; j < ncols; ++j) {
            if (PQgetisnull(r, i, j)) {
              row.emplace_back(std::nullopt);
            } else {
              row.emplace_back(
                  std::string(PQgetvalue(r, i, j), static_cast<size_t>(PQgetlength(r, i, j))));
            }
          }
          set.push_back(std::move(row));
        }
        rows = std::move(set);
        break;
      }
      case PGRES_COMMAND_OK:
      case PGRES_EMPTY_QUERY:
        break;
      case PGRES_COPY_IN:
        PQputCopyEnd(c, "COPY FROM STDIN is not supported by the test fixture");
        break;
      case PGRES_COPY_OUT: {
        char* buf = nullptr;
        while (PQgetCopyData(c, &buf, 0) > 0) PQfreemem(buf);
        if (error.ok()) error = Status::Unsupported("COPY TO STDOUT is not supported by Query");
        break;
      }
      default:
        if (error.ok()) error = PgResultError(r);
        break;
    }
    PQclear(r);
  }
  if (!error.ok()) return error;
  return rows;
}

// --- templates -----------------------------------------------------------------------------------

Result<std::string> MariaDbTemplate(const std::string& mariadbd) {
  DBS_ASSIGN_OR_RETURN(std::string out, CaptureOutput({mariadbd, "--version"}, seconds(30)));
  std::string version = WordAfter(out, "Ver ");  // "10.11.19-MariaDB-0+deb12u1"
  version = version.substr(0, version.find('-'));
  if (version.empty()) version = "unknown";
  const std::string name = "mariadb-" + version + "-" + kTemplateRevision;
  return EnsureTemplate(name, [&](const std::string& tmp) -> Status {
    Result<std::string> install = FindProgram("mariadb-install-db");
    if (!install.ok()) install = FindProgram("mysql_install_db");
    DBS_RETURN_IF_ERROR(install.status());
    // mariadb-install-db runs this in bootstrap mode, where grant tables are off until flushed.
    // It also makes root@127.0.0.1, root@::1 and root@<hostname> without a password; those would
    // win over root@'%' for TCP logins, so they go.
    const std::string pw = kMariaDbPassword;
    const std::string sql =
        "FLUSH PRIVILEGES;\n"
        "DELETE FROM mysql.global_priv WHERE User='root' AND Host<>'localhost';\n"
        "DELETE FROM mysql.proxies_priv WHERE Host<>'localhost';\n"
        "FLUSH PRIVILEGES;\n"
        "ALTER USER root@localhost IDENTIFIED BY '" +
        pw +
        "';\n"
        "CREATE USER root@'%' IDENTIFIED BY '" +
        pw +
        "';\n"
        "GRANT ALL PRIVILEGES ON *.* TO root@'%' WITH GRANT OPTION;\n";
    const std::string sql_path = tmp + "/setup.sql";
    DBS_RETURN_IF_ERROR(WriteFile(sql_path, sql, 0600));
    SpawnSpec spec;
    spec.argv = {*install,
                 "--no-defaults",
                 "--datadir=" + tmp + "/data",
                 "--auth-root-authentication-method=normal",
                 "--skip-test-db",
                 "--skip-name-resolve",
                 "--extra-file=" + sql_path};
    if (geteuid() == 0) spec.argv.push_back("--user=root");
    spec.log_path = tmp + "/install.log";
    spec.cwd = tmp;
    Status st = RunCommand(spec, kToolTimeout, "mariadb-install-db");
    unlink(sql_path.c_str());
    return st;
  });
}

Result<std::string> PostgresBinDir(const PostgresServerOptions& options) {
  auto has_postgres = [](const std::string& dir) {
    return access((dir + "/postgres").c_str(), X_OK) == 0 &&
           access((dir + "/initdb").c_str(), X_OK) == 0;
  };
  std::string dir = options.bin_dir;
  if (dir.empty()) {
    if (const char* env = std::getenv("DBS_PG_BIN_DIR")) dir = env;
  }
  if (!dir.empty()) {
    if (has_postgres(dir)) return dir;
    return Status::NotFound("no postgres and initdb in " + dir);
  }
  int best = -1;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string name = e.path().filename().string();
    char* end = nullptr;
    long v = std::strtol(name.c_str(), &end, 10);
    if (end != name.c_str() && *end == '\0' && v > best && has_postgres(e.path() / "bin")) {
      best = static_cast<int>(v);
      dir = (e.path() / "bin").string();
    }
  }
  if (!dir.empty()) return dir;
  Result<std::string> initdb = FindProgram("initdb");
  if (initdb.ok()) {
    dir = fs::path(*initdb).parent_path().string();
    if (has_postgres(dir)) return dir;
  }
  return Status::NotFound(
      "PostgreSQL server binaries (postgres, initdb) not found in /usr/lib/postgresql/*/bin; set "
      "DBS_PG_BIN_DIR");
}

Result<std::string> PostgresTemplate(const std::string& bin_dir, const std::optional<RunAs>& as) {
  DBS_ASSIGN_OR_RETURN(std::string out,
                       CaptureOutput({bin_dir + "/postgres", "--version"}, seconds(30)));
  std::string version = WordAfter(out, "(PostgreSQL) ");  // "15.18"
  if (version.empty()) version = "unknown";
  const std::string name = "postgres-" + version + "-" + kTemplateRevision;
  return EnsureTemplate(name, [&](const std::string& tmp) -> Status {
    DBS_RETURN_IF_ERROR(ChownTo(tmp, as));
    const std::string pwfile = tmp + "/pwfile";
    DBS_RETURN_IF_ERROR(WriteFile(pwfile, std::string(kPostgresPassword) + "\n", 0600));
    DBS_RETURN_IF_ERROR(ChownTo(pwfile, as));
    Status st;
    // C.UTF-8 gives Unicode-aware upper()/lower(); fall back to C where it is missing.
    for (const char* locale : {"C.UTF-8", "C"}) {
      DBS_RETURN_IF_ERROR(RemoveTree(tmp + "/data"));
      SpawnSpec spec;
      spec.argv = {bin_dir + "/initdb",
                   "-D",
                   tmp + "/data",
                   "-U",
                   "postgres",
                   "--pwfile=" + pwfile,
                   "-E",
                   "UTF8",
                   std::string("--locale=") + locale,
                   "--auth-local=trust",
                   "--auth-host=scram-sha-256",
                   "-N"};
      spec.run_as = as;
      spec.cwd = tmp;
      spec.env_drop_prefixes = {"PG", "LC_", "LANG"};
      spec.log_path = tmp + "/initdb.log";
      st = RunCommand(spec, kToolTimeout, "initdb");
      if (st.ok()) break;
    }
    unlink(pwfile.c_str());
    return st;
  });
}

// --- shared instances ----------------------------------------------------------------------------

template <typename T>
struct SharedSlot {
  std::mutex mu;
  std::unique_ptr<T> server;
  std::optional<Status> error;
};

struct SharedState {
  SharedSlot<NatsServer> nats;
  SharedSlot<MariaDbServer> mariadb;
  SharedSlot<PostgresServer> postgres;
};

SharedState& Shared() {
  static SharedState* state = new SharedState();  // outlives the atexit handler
  return *state;
}

pid_t g_shared_owner = 0;  // the process that registered StopAll with atexit

template <typename T>
Result<T*> GetOrStart(SharedSlot<T>& slot) {
  static std::once_flag registered;
  std::call_once(registered, [] {
    g_shared_owner = getpid();
    std::atexit(&SharedServers::StopAll);
  });
  std::lock_guard<std::mutex> lock(slot.mu);
  if (slot.server) return slot.server.get();
  if (slot.error) return *slot.error;
  Result<std::unique_ptr<T>> started = T::Start();
  if (!started.ok()) {
    slot.error = started.status().WithContext("starting the shared test server");
    return *slot.error;
  }
  slot.server = std::move(started).value();
  return slot.server.get();
}

template <typename T>
void StopSlot(SharedSlot<T>& slot) {
  std::lock_guard<std::mutex> lock(slot.mu);
  slot.server.reset();
}

}  // namespace

// --- NatsServer ----------------------------------------------------------------------------------

struct NatsServer::Route {
  std::string cluster_name;
  std::string server_name;
  int port = 0;
  std::vector<int> peer_ports;
};

Result<std::unique_ptr<NatsServer>> NatsServer::Start(const NatsServerOptions& options) {
  for (int attempt = 1;; ++attempt) {
    DBS_ASSIGN_OR_RETURN(std::vector<int> ports, PickFreePorts(2));
    DBS_ASSIGN_OR_RETURN(std::unique_ptr<NatsServer> server,
                         Launch(options, ports[0], ports[1], nullptr));
    Status st = server->WaitReady(options.startup_timeout);
    if (st.ok()) return server;
    if (attempt >= kStartAttempts || !LogSaysAddressInUse(server->LogTail())) return st;
  }
}

Result<std::unique_ptr<NatsServer>> NatsServer::Launch(const NatsServerOptions& options, int port,
                                                       int monitor_port, const Route* route) {
  std::unique_ptr<NatsServer> s(new NatsServer());
  s->options_ = options;
  s->port_ = port;
  s->monitor_port_ = monitor_port;
  DBS_ASSIGN_OR_RETURN(s->dir_, CreateServerDir());
  s->process_ = std::make_unique<ServerProcess>("nats-server", s->dir_, SIGTERM, SIGKILL);
  s->server_name_ = route != nullptr ? route->server_name : "dbs-test-" + std::to_string(port);
  const bool tls = !options.tls_cert_file.empty();
  s->url_ = std::string(tls ? "tls" : "nats") + "://127.0.0.1:" + std::to_string(port);

  auto quote = [](const std::string& v) { return "\"" + v + "\""; };
  std::string conf;
  conf += "server_name: " + quote(s->server_name_) + "\n";
  conf += "listen: " + quote("127.0.0.1:" + std::to_string(port)) + "\n";
  conf += "http: " + quote("127.0.0.1:" + std::to_string(monitor_port)) + "\n";
  if (options.max_payload > 0) conf += "max_payload: " + std::to_string(options.max_payload) + "\n";
  conf += "jetstream {\n  store_dir: " + quote(s->dir_ + "/jetstream") + "\n}\n";
  if (tls) {
    conf += "tls {\n  cert_file: " + quote(options.tls_cert_file) + "\n";
    conf += "  key_file: " + quote(options.tls_key_file) + "\n";
    if (!options.tls_ca_file.empty()) conf += "  ca_file: " + quote(options.tls_ca_file) + "\n";
    if (options.tls_verify_clients) conf += "  verify: true\n";
    conf += "  timeout: 5\n}\n";
  }
  if (route != nullptr) {
    conf += "cluster {\n  name: " + quote(route->cluster_name) + "\n";
    conf += "  listen: " + quote("127.0.0.1:" + std::to_string(route->port)) + "\n";
    conf += "  routes: [\n";
    for (int p : route->peer_ports) {
      conf += "    " + quote("nats-route://127.0.0.1:" + std::to_string(p)) + "\n";
    }
    conf += "  ]\n}\n";
  }
  for (const std::string& line : options.extra_config) conf += line + "\n";
  s->config_path_ = s->dir_ + "/nats.conf";
  DBS_RETURN_IF_ERROR(WriteFile(s->config_path_, conf));
  DBS_RETURN_IF_ERROR(s->Spawn());
  return s;
}

NatsServer::~NatsServer() {
  if (process_ && !process_->owned_here()) return;  // a forked copy of the owner
  if (process_) {
    process_->Stop(kStopGrace).ok();
    process_.reset();
  }
  if (!dir_.empty()) RemoveTree(dir_).ok();
}

Status NatsServer::Spawn() {
  DBS_ASSIGN_OR_RETURN(std::string bin, FindProgram("nats-server"));
  SpawnSpec spec;
  spec.argv = {bin, "-c", config_path_};
  spec.cwd = dir_;
  return process_->Start(std::move(spec));
}

Status NatsServer::WaitReady(milliseconds timeout) {
  // /healthz answers 200 once JetStream is up; in a cluster, once this node is in contact with
  // the meta leader and its streams are current.
  return process_->WaitUntilReady(timeout, [this] {
    return CanConnect(port_) && HttpGetStatus(monitor_port_, "/healthz", seconds(2)) == 200;
  });
}

bool NatsServer::running() { return process_ && process_->Running(); }

Status NatsServer::Stop() { return process_->Stop(kStopGrace); }

Status NatsServer::Restart() {
  DBS_RETURN_IF_ERROR(Stop());
  DBS_RETURN_IF_ERROR(Spawn());
  return WaitReady(options_.startup_timeout);
}

void NatsServer::Kill() { process_->Kill(); }

std::string NatsServer::LogTail() const { return process_ ? process_->LogTail() : std::string(); }

// --- NatsCluster ---------------------------------------------------------------------------------

Result<std::unique_ptr<NatsCluster>> NatsCluster::Start(const NatsClusterOptions& options) {
  const int n = options.nodes;
  if (n < 1 || n > 9) return Status::InvalidArgument("NatsCluster: nodes must be 1..9");
  for (int attempt = 1;; ++attempt) {
    DBS_ASSIGN_OR_RETURN(std::vector<int> ports, PickFreePorts(3 * n));
    std::unique_ptr<NatsCluster> c(new NatsCluster());
    c->name_ = "dbs-test-" + std::to_string(getpid()) + "-" +
               std::to_string(g_cluster_counter.fetch_add(1));
    NatsServerOptions node_options;
    node_options.startup_timeout = options.startup_timeout;
    for (int i = 0; i < n; ++i) {
      NatsServer::Route route;
      route.cluster_name = c->name_;
      route.server_name = "dbs-node-" + std::to_string(i);
      route.port = ports[static_cast<size_t>(2 * n + i)];
      for (int j = 0; j < n; ++j) {
        if (j != i) route.peer_ports.push_back(ports[static_cast<size_t>(2 * n + j)]);
      }
      DBS_ASSIGN_OR_RETURN(std::unique_ptr<NatsServer> node,
                           NatsServer::Launch(node_options, ports[static_cast<size_t>(i)],
                                              ports[static_cast<size_t>(n + i)], &route));
      c->nodes_.push_back(std::move(node));
    }
    const auto deadline = Clock::now() + options.startup_timeout;
    Status st;
    for (auto& node : c->nodes_) {
      st = node->WaitReady(Remaining(deadline));
      if (!st.ok()) break;
    }
    if (st.ok()) st = c->WaitForJetStream(deadline);
    if (st.ok()) return c;
    bool port_clash = false;
    for (auto& node : c->nodes_) port_clash = port_clash || LogSaysAddressInUse(node->LogTail());
    if (attempt >= kStartAttempts || !port_clash) return st.WithContext("NATS cluster " + c->name_);
  }
}

Status NatsCluster::WaitForJetStream(Clock::time_point deadline) {
  bus::NatsOptions o;
  o.url = urls();
  o.name = "dbs-test-fixture";
  o.connect_timeout = seconds(2);
  o.request_timeout = seconds(2);
  bus::StreamSpec spec;
  spec.name = "DBS_FIXTURE_READY";
  spec.subjects = {"dbs.fixture.ready"};
  spec.replicas = std::min(3, size());
  spec.file_storage = false;
  Status last;
  std::unique_ptr<bus::NatsConnection> conn;
  while (Clock::now() < deadline) {
    if (!conn) {
      Result<std::unique_ptr<bus::NatsConnection>> c = bus::NatsConnection::Connect(o);
      if (c.ok()) {
        conn = std::move(c).value();
      } else {
        last = c.status();
      }
    }
    if (conn) {
      last = conn->EnsureStream(spec);
      if (last.ok()) {
        conn->DeleteStream(spec.name).ok();  // best effort: a leftover is harmless
        return Status::Ok();
      }
    }
    std::this_thread::sleep_for(milliseconds(200));
  }
  return Status::Timeout(
      "JetStream meta leader not elected in time (a replicas=" + std::to_string(spec.replicas) +
      " stream could not be created): " + last.ToString());
}

NatsCluster::~NatsCluster() = default;

std::string NatsCluster::urls() const {
  std::string out;
  for (const auto& node : nodes_) {
    if (!out.empty()) out += ",";
    out += node->url();
  }
  return out;
}

Status NatsCluster::StopNode(int i) {
  if (i < 0 || i >= size()) return Status::InvalidArgument("no cluster node " + std::to_string(i));
  return node(i).Stop();
}

Status NatsCluster::StartNode(int i) {
  if (i < 0 || i >= size()) return Status::InvalidArgument("no cluster node " + std::to_string(i));
  return node(i).Restart();
}

// --- MariaDbServer -------------------------------------------------------------------------------

Result<std::unique_ptr<MariaDbServer>> MariaDbServer::Start(const MariaDbServerOptions& options) {
  Result<std::string> mariadbd = FindProgram("mariadbd");
  if (!mariadbd.ok()) mariadbd = FindProgram("mysqld");
  DBS_RETURN_IF_ERROR(mariadbd.status());
  DBS_ASSIGN_OR_RETURN(std::string tmpl, MariaDbTemplate(*mariadbd));
  for (int attempt = 1;; ++attempt) {
    std::unique_ptr<MariaDbServer> s(new MariaDbServer());
    s->options_ = options;
    s->mariadbd_ = *mariadbd;
    DBS_ASSIGN_OR_RETURN(s->dir_, CreateServerDir());
    s->process_ = std::make_unique<ServerProcess>("mariadbd", s->dir_, SIGTERM, SIGKILL);
    DBS_ASSIGN_OR_RETURN(std::vector<int> ports, PickFreePorts(1));
    s->port_ = ports[0];
    DBS_RETURN_IF_ERROR(CopyTree(tmpl + "/data", s->dir_ + "/data", s->dir_ + "/setup.log"));
    fs::create_directory(s->dir_ + "/tmp");
    Status st = s->Spawn();
    if (st.ok()) st = s->WaitReady(options.startup_timeout);
    if (st.ok()) return s;
    if (attempt >= kStartAttempts || !LogSaysAddressInUse(s->LogTail())) return st;
  }
}

MariaDbServer::~MariaDbServer() {
  if (process_ && !process_->owned_here()) return;  // a forked copy of the owner
  if (process_) {
    process_->Stop(kStopGrace).ok();
    process_.reset();
  }
  if (!dir_.empty()) RemoveTree(dir_).ok();
}

Status MariaDbServer::Spawn() {
  SpawnSpec spec;
  spec.argv = {mariadbd_,
               "--no-defaults",  // must come first: skip /etc/mysql and ~/.my.cnf
               "--datadir=" + dir_ + "/data",
               "--port=" + std::to_string(port_),
               "--bind-address=127.0.0.1",
               "--socket=" + socket_path(),
               "--pid-file=" + dir_ + "/mariadbd.pid",
               "--tmpdir=" + dir_ + "/tmp",
               "--skip-name-resolve",
               "--character-set-server=utf8mb4",
               "--collation-server=utf8mb4_unicode_ci",
               "--local-infile=ON",
               "--max-allowed-packet=256M",
               "--innodb-buffer-pool-size=256M",
               "--innodb-flush-log-at-trx-commit=2",
               "--sync-binlog=0",
               "--server-id=" + std::to_string(options_.server_id),
               "--gtid-strict-mode=ON",
               "--log-slave-updates",
               "--binlog-format=ROW",
               "--binlog-row-image=FULL",
               "--binlog-row-metadata=FULL"};
  spec.argv.push_back(options_.log_bin ? "--log-bin=binlog" : "--skip-log-bin");
  if (geteuid() == 0) spec.argv.push_back("--user=root");
  for (const std::string& a : options_.extra_args) spec.argv.push_back(a);
  spec.cwd = dir_;
  return process_->Start(std::move(spec));
}

Status MariaDbServer::WaitReady(milliseconds timeout) {
  std::string last_error;
  Status st = process_->WaitUntilReady(timeout, [&] {
    Result<MysqlPtr> m = MysqlConnect(port_, "", 2);
    if (!m.ok()) {
      last_error = m.status().ToString();
      return false;
    }
    Result<Rows> r = MysqlRun(m->get(), "SELECT 1");
    if (!r.ok()) last_error = r.status().ToString();
    return r.ok();
  });
  return WithLastError(st, last_error);
}

std::string MariaDbServer::url() const {
  return "mysql://root:" + password() + "@127.0.0.1:" + std::to_string(port_) + "/";
}

std::string MariaDbServer::password() const { return kMariaDbPassword; }

bool MariaDbServer::running() { return process_ && process_->Running(); }

Status MariaDbServer::Exec(const std::string& sql, const std::string& database) {
  return Query(sql, database).status();
}

Result<Rows> MariaDbServer::Query(const std::string& sql, const std::string& database) {
  DBS_ASSIGN_OR_RETURN(MysqlPtr m, MysqlConnect(port_, database, 10));
  return MysqlRun(m.get(), sql);
}

Status MariaDbServer::Stop() { return process_->Stop(kStopGrace); }

Status MariaDbServer::Restart() {
  DBS_RETURN_IF_ERROR(Stop());
  DBS_RETURN_IF_ERROR(Spawn());
  return WaitReady(options_.startup_timeout);
}

void MariaDbServer::Kill() { process_->Kill(); }

std::string MariaDbServer::LogTail() const {
  return process_ ? process_->LogTail() : std::string();
}

// --- PostgresServer ------------------------------------------------------------------------------

Result<std::unique_ptr<PostgresServer>> PostgresServer::Start(
    const PostgresServerOptions& options) {
  DBS_ASSIGN_OR_RETURN(std::string bin_dir, PostgresBinDir(options));
  DBS_ASSIGN_OR_RETURN(std::optional<RunAs> as, PostgresAccount());
  DBS_ASSIGN_OR_RETURN(std::string tmpl, PostgresTemplate(bin_dir, as));
  for (int attempt = 1;; ++attempt) {
    std::unique_ptr<PostgresServer> s(new PostgresServer());
    s->options_ = options;
    s->bin_dir_ = bin_dir;
    DBS_ASSIGN_OR_RETURN(s->dir_, CreateServerDir());
    // SIGINT: fast shutdown. If we die, SIGQUIT: immediate shutdown, which still stops the
    // backends and frees the shared memory.
    s->process_ = std::make_unique<ServerProcess>("postgres", s->dir_, SIGINT, SIGQUIT);
    DBS_ASSIGN_OR_RETURN(std::vector<int> ports, PickFreePorts(1));
    s->port_ = ports[0];
    DBS_RETURN_IF_ERROR(CopyTree(tmpl + "/data", s->dir_ + "/data", s->dir_ + "/setup.log"));
    if (mkdir(s->socket_dir().c_str(), 0755) != 0) {
      return Status::IoError("creating " + s->socket_dir() + ": " + std::strerror(errno));
    }
    DBS_RETURN_IF_ERROR(ChownTo(s->socket_dir(), as));
    Status st = s->Spawn();
    if (st.ok()) st = s->WaitReady(options.startup_timeout);
    if (st.ok()) return s;
    if (attempt >= kStartAttempts || !LogSaysAddressInUse(s->LogTail())) return st;
  }
}

PostgresServer::~PostgresServer() {
  if (process_ && !process_->owned_here()) return;  // a forked copy of the owner
  if (process_) {
    process_->Stop(kStopGrace).ok();
    process_.reset();
  }
  if (!dir_.empty()) {
    RemoveStalePostgresShm(dir_ + "/data");  // left behind when the server was killed
    RemoveTree(dir_).ok();
  }
}

Status PostgresServer::Spawn() {
  DBS_ASSIGN_OR_RETURN(std::optional<RunAs> as, PostgresAccount());
  SpawnSpec spec;
  spec.argv = {bin_dir_ + "/postgres", "-D", dir_ + "/data"};
  std::vector<std::pair<std::string, std::string>> settings = {
      {"port", std::to_string(port_)},
      {"listen_addresses", "127.0.0.1"},
      {"unix_socket_directories", socket_dir()},
      {"wal_level", "logical"},
      {"max_replication_slots", "20"},
      {"max_wal_senders", "20"},
      {"fsync", "off"},
      {"synchronous_commit", "off"},
      {"full_page_writes", "off"},
      {"shared_buffers", "128MB"},
  };
  settings.insert(settings.end(), options_.settings.begin(), options_.settings.end());
  for (const auto& [name, value] : settings) {
    spec.argv.push_back("-c");
    spec.argv.push_back(name + "=" + value);
  }
  spec.run_as = as;
  spec.cwd = dir_ + "/data";
  spec.env_drop_prefixes = {"PG", "LC_", "LANG"};
  return process_->Start(std::move(spec));
}

Status PostgresServer::WaitReady(milliseconds timeout) {
  std::string last_error;
  Status st = process_->WaitUntilReady(timeout, [&] {
    Result<PgPtr> c = PgConnect(port_, "postgres", 2);
    if (!c.ok()) {
      last_error = c.status().ToString();
      return false;
    }
    Result<Rows> r = PgRun(c->get(), "SELECT 1");
    if (!r.ok()) last_error = r.status().ToString();
    return r.ok();
  });
  return WithLastError(st, last_error);
}

std::string PostgresServer::UrlFor(const std::string& database) const {
  return "postgres://postgres:" + password() + "@127.0.0.1:" + std::to_string(port_) + "/" +
         database;
}

std::string PostgresServer::password() const { return kPostgresPassword; }

bool PostgresServer::running() { return process_ && process_->Running(); }

Status PostgresServer::Exec(const std::string& sql, const std::string& database) {
  return Query(sql, database).status();
}

Result<Rows> PostgresServer::Query(const std::string& sql, const std::string& database) {
  DBS_ASSIGN_OR_RETURN(PgPtr c, PgConnect(port_, database, 10));
  return PgRun(c.get(), sql);
}

Status PostgresServer::CreateDatabase(const std::string& name) {
  DBS_ASSIGN_OR_RETURN(PgPtr c, PgConnect(port_, "postgres", 10));
  char* quoted = PQescapeIdentifier(c.get(), name.c_str(), name.size());
  if (quoted == nullptr) {
    return Status::InvalidArgument("bad database name " + name + ": " +
                                   TrimRight(PQerrorMessage(c.get())));
  }
  const std::string sql = std::string("CREATE DATABASE ") + quoted;
  PQfreemem(quoted);
  return PgRun(c.get(), sql).status();
}

Status PostgresServer::Stop() { return process_->Stop(kStopGrace); }

Status PostgresServer::Restart() {
  DBS_RETURN_IF_ERROR(Stop());
  DBS_RETURN_IF_ERROR(Spawn());
  return WaitReady(options_.startup_timeout);
}

void PostgresServer::Kill() { process_->Kill(); }

std::string PostgresServer::LogTail() const {
  return process_ ? process_->LogTail() : std::string();
}

// --- S3Server ------------------------------------------------------------------------------------

Result<std::unique_ptr<S3Server>> S3Server::Start(const S3ServerOptions& options) {
  DBS_ASSIGN_OR_RETURN(std::string node, FindProgram("node"));
  std::string tools = DBS_S3RVER_DIR;
  if (const char* env = std::getenv("DBS_S3RVER_DIR")) tools = env;
  const std::string script = tools + "/serve.js";
  if (access((tools + "/node_modules/@20minutes/s3rver/package.json").c_str(), R_OK) != 0) {
    return Status::NotFound("s3rver is not installed in " + tools +
                            " (run scripts/setup.sh, which runs npm ci there)");
  }
  for (int attempt = 1;; ++attempt) {
    std::unique_ptr<S3Server> s(new S3Server());
    s->options_ = options;
    s->node_ = node;
    s->script_ = script;
    DBS_ASSIGN_OR_RETURN(s->dir_, CreateServerDir());
    s->process_ = std::make_unique<ServerProcess>("s3rver", s->dir_, SIGTERM, SIGKILL);
    DBS_ASSIGN_OR_RETURN(std::vector<int> ports, PickFreePorts(1));
    s->port_ = ports[0];
    Status st = s->Spawn();
    if (st.ok()) st = s->WaitReady(options.startup_timeout);
    if (st.ok()) return s;
    if (attempt >= kStartAttempts || !LogSaysAddressInUse(s->LogTail())) return st;
  }
}

S3Server::~S3Server() {
  if (process_ && !process_->owned_here()) return;  // a forked copy of the owner
  if (process_) {
    process_->Stop(kStopGrace).ok();
    process_.reset();
  }
  if (!dir_.empty()) RemoveTree(dir_).ok();
}

Status S3Server::Spawn() {
  SpawnSpec spec;
  // --openssl-legacy-provider: s3rver makes its continuation tokens with DES.
  spec.argv = {node_,
               "--openssl-legacy-provider",
               script_,
               "--access-key",
               kS3AccessKey,
               "--secret-key",
               kS3SecretKey,
               "--directory",
               dir_ + "/data",
               "--address",
               "127.0.0.1",
               "--port",
               std::to_string(port_)};
  if (options_.vhost) {
    spec.argv.insert(spec.argv.end(), {"--service-endpoint", "localhost"});
  } else {
    spec.argv.push_back("--no-vhost-buckets");
  }
  if (!options_.tls_cert_file.empty()) {
    spec.argv.insert(spec.argv.end(),
                     {"--key", options_.tls_key_file, "--cert", options_.tls_cert_file});
  }
  if (options_.allow_mismatched_signatures) spec.argv.push_back("--allow-mismatched-signatures");
  spec.cwd = dir_;
  return process_->Start(std::move(spec));
}

Status S3Server::WaitReady(milliseconds timeout) {
  // s3rver prints its address once it listens.
  return process_->WaitUntilReady(timeout, [this] {
    return CanConnect(port_) && process_->LogTail().find("S3rver listening") != std::string::npos;
  });
}

std::string S3Server::endpoint() const {
  return std::string(options_.tls_cert_file.empty() ? "http" : "https") +
         "://127.0.0.1:" + std::to_string(port_);
}

std::string S3Server::vhost_endpoint() const {
  return std::string(options_.tls_cert_file.empty() ? "http" : "https") +
         "://s3.localhost:" + std::to_string(port_);
}

std::string S3Server::access_key() const { return kS3AccessKey; }
std::string S3Server::secret_key() const { return kS3SecretKey; }
bool S3Server::running() { return process_ && process_->Running(); }

Status S3Server::CreateBucket(const std::string& name) {
  // Signed by libcurl's own SigV4 (not the code under test); curl needs the payload hash header.
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, void (*)(CURL*)> h(curl_easy_init(), &curl_easy_cleanup);
  if (!h) return Status::ResourceExhausted("curl_easy_init failed");
  const std::string url = endpoint() + "/" + name;
  const std::string userpwd = std::string(kS3AccessKey) + ":" + kS3SecretKey;
  curl_slist* headers = curl_slist_append(
      nullptr,
      "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> guard(headers, &curl_slist_free_all);
  std::string body;
  curl_easy_setopt(h.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(h.get(), CURLOPT_CUSTOMREQUEST, "PUT");
  curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h.get(), CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:s3");
  curl_easy_setopt(h.get(), CURLOPT_USERPWD, userpwd.c_str());
  curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h.get(), CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(h.get(), CURLOPT_SSL_VERIFYPEER, 0L);  // the fixture's own loopback server
  curl_easy_setopt(h.get(), CURLOPT_SSL_VERIFYHOST, 0L);
  curl_easy_setopt(
      h.get(), CURLOPT_WRITEFUNCTION, +[](char* p, size_t size, size_t n, void* user) -> size_t {
        static_cast<std::string*>(user)->append(p, size * n);
        return size * n;
      });
  curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &body);
  const CURLcode rc = curl_easy_perform(h.get());
  if (rc != CURLE_OK) {
    return Status::Unavailable("creating bucket " + name + " at " + endpoint() + ": " +
                               curl_easy_strerror(rc));
  }
  long status = 0;
  curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status == 200 || body.find("BucketAlreadyOwnedByYou") != std::string::npos) {
    return Status::Ok();
  }
  return Status::InvalidArgument("creating bucket " + name + ": HTTP " + std::to_string(status) +
                                 ": " + body);
}

Status S3Server::Stop() { return process_->Stop(kStopGrace); }

namespace {

// s3rver keeps an object as files beside each other: "<key>._S3rver_object", its ".md5" and
// "<key>._S3rver_metadata.json", written one after the other. A server killed between or inside
// those writes leaves an object whose metadata does not parse; s3rver then fails every listing
// of its folder with InternalError, for good. On S3 a PUT is atomic: an object whose PUT was
// cut off does not exist. This removes such leftovers (and md5 files that are not 32 hex
// digits, which s3rver recomputes), so the restarted server behaves like S3.
void RemoveTornObjects(const std::string& data_dir) {
  namespace fs = std::filesystem;
  const std::string meta = "._S3rver_metadata.json";
  const std::string object = "._S3rver_object";
  std::vector<fs::path> torn_meta, bad_md5;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(data_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    std::ifstream in(it->path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (name.size() > meta.size() &&
        name.compare(name.size() - meta.size(), meta.size(), meta) == 0) {
      if (!nlohmann::json::accept(text)) torn_meta.push_back(it->path());
    } else if (name.size() > object.size() + 4 &&
               name.compare(name.size() - object.size() - 4, object.size() + 4, object + ".md5") ==
                   0) {
      if (text.size() != 32) bad_md5.push_back(it->path());
    }
  }
  for (const fs::path& m : torn_meta) {
    const std::string base = m.string().substr(0, m.string().size() - meta.size());
    fs::remove(m, ec);
    fs::remove(base + object, ec);
    fs::remove(base + object + ".md5", ec);
  }
  for (const fs::path& m : bad_md5) fs::remove(m, ec);
}

}  // namespace

Status S3Server::Restart() {
  DBS_RETURN_IF_ERROR(Stop());
  RemoveTornObjects(dir_ + "/data");
  DBS_RETURN_IF_ERROR(Spawn());
  return WaitReady(options_.startup_timeout);
}

void S3Server::Kill() { process_->Kill(); }

std::string S3Server::LogTail() const { return process_ ? process_->LogTail() : std::string(); }

// --- SharedServers -------------------------------------------------------------------------------

Result<NatsServer*> SharedServers::Nats() { return GetOrStart(Shared().nats); }
Result<MariaDbServer*> SharedServers::MariaDb() { return GetOrStart(Shared().mariadb); }
Result<PostgresServer*> SharedServers::Postgres() { return GetOrStart(Shared().postgres); }

void SharedServers::StopAll() {
  if (getpid() != g_shared_owner) return;  // exit() in a forked child: not our servers
  StopSlot(Shared().nats);
  StopSlot(Shared().mariadb);
  StopSlot(Shared().postgres);
}

}  // namespace dbs::testing

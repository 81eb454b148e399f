// Real throwaway servers for tests and benchmarks: NATS (JetStream, single node or a 3-node
// cluster), MariaDB, PostgreSQL and an S3 server (s3rver), each on 127.0.0.1, on free ports, in a
// private folder.
//
// Contract:
//  - Start() returns only when the server answers (NATS: TCP plus /healthz on its monitoring
//    port; cluster: a replicas=3 stream can be created; MariaDB and PostgreSQL: a password login
//    over TCP runs SELECT 1), or an error whose message ends with the tail of the server log.
//    Every wait is bounded (startup_timeout, 60 s by default); nothing hangs forever.
//  - Each server lives in /tmp/dbstreams-test/<pid>-<n>/ (data, sockets, log `server.log`). The
//    destructor stops the server (clean shutdown, SIGKILL when that takes over a minute) and
//    removes the folder. If the test process dies, also by SIGKILL, the kernel signals the
//    servers (PR_SET_PDEATHSIG) and the next Start() of any test sweeps the leftover folder.
//  - Stop() shuts the server down cleanly and keeps its data; Restart() starts it again (stopping
//    it first when running) on the same port with the same data; Kill() is a crash (SIGKILL of
//    the whole server) and keeps the data for Restart() to recover.
//  - Objects are not thread-safe: one thread drives one server at a time. Different servers may
//    be started and used from different threads at once (children are forked on a process-wide
//    launcher thread, see subprocess.h). Exec/Query open a fresh connection per call, so they
//    may be used while other clients are connected; a call's statements share one session.
//  - MariaDB and PostgreSQL data folders are copied from a template made once per machine under
//    /tmp/dbstreams-fixture-cache/ (mariadb-<version>-t<rev>, postgres-<version>-t<rev>), so a
//    start costs a copy and a server boot (well under a second), not an install.
//  - Running as root: PostgreSQL runs as the `postgres` system user (its folders are chowned to
//    it); mariadbd runs with --user=root. As another user, both run as that user.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/status.h"

namespace dbs::testing {

class ServerProcess;  // subprocess.h

// Query results: rows of columns; NULL is nullopt. Values are the servers' text forms.
using Rows = std::vector<std::vector<std::optional<std::string>>>;

// --- NATS
// -----------------------------------------------------------------------------------------

struct NatsServerOptions {
  int64_t max_payload = 0;  // bytes; 0: the server default (1 MiB); at most 64 MiB
  // TLS: with a certificate and key, clients must use TLS (url() is then tls://...). With a CA,
  // clients must present a certificate it signed when verify_clients is set.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_ca_file;
  bool tls_verify_clients = false;
  std::vector<std::string> extra_config;  // lines appended to the generated nats-server config
  std::chrono::seconds startup_timeout{60};
};

class NatsServer {
 public:
  static Result<std::unique_ptr<NatsServer>> Start(const NatsServerOptions& options = {});
  ~NatsServer();
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  // nats://127.0.0.1:PORT (tls://... with TLS).
  const std::string& url() const { return url_; }
  int port() const { return port_; }
  int monitor_port() const { return monitor_port_; }  // HTTP monitoring (/healthz, /jsz)
  const std::string& server_name() const { return server_name_; }
  const std::string& dir() const { return dir_; }
  bool running();

  Status Stop();     // SIGTERM, wait; keeps the JetStream store
  Status Restart();  // same port and store; waits until /healthz is OK
  void Kill();       // SIGKILL
  std::string LogTail() const;

 private:
  friend class NatsCluster;
  struct Route;  // cluster membership (NatsCluster)

  NatsServer() = default;
  // Writes the config and spawns the process; does not wait.
  static Result<std::unique_ptr<NatsServer>> Launch(const NatsServerOptions& options, int port,
                                                    int monitor_port, const Route* route);
  Status Spawn();
  Status WaitReady(std::chrono::milliseconds timeout);

  NatsServerOptions options_;
  std::string dir_;
  std::string config_path_;
  std::string url_;
  std::string server_name_;
  int port_ = 0;
  int monitor_port_ = 0;
  std::unique_ptr<ServerProcess> process_;
};

struct NatsClusterOptions {
  int nodes = 3;
  std::chrono::seconds startup_timeout{60};
};

// A JetStream cluster of `nodes` NATS servers on 127.0.0.1 (routes on free ports), named
// dbs-node-0..N-1 in cluster dbs-test-<pid>-<n>.
class NatsCluster {
 public:
  // Returns once every node is healthy and a replicas=3 (or nodes) stream can be created, i.e.
  // the JetStream meta leader is elected.
  static Result<std::unique_ptr<NatsCluster>> Start(const NatsClusterOptions& options = {});
  ~NatsCluster();
  NatsCluster(const NatsCluster&) = delete;
  NatsCluster& operator=(const NatsCluster&) = delete;

  // Every node's URL, comma-joined (a libnats server list).
  std::string urls() const;
  int size() const { return static_cast<int>(nodes_.size()); }
  NatsServer& node(int i) { return *nodes_.at(static_cast<size_t>(i)); }

  Status StopNode(int i);   // clean shutdown of one node (the others keep running)
  Status StartNode(int i);  // starts a stopped node again; waits until its /healthz is OK
                            // (in contact with the meta leader and caught up)

 private:
  NatsCluster() = default;
  Status WaitForJetStream(std::chrono::steady_clock::time_point deadline);

  std::string name_;
  std::vector<std::unique_ptr<NatsServer>> nodes_;
};

// --- MariaDB -------------------------------------------------------------------------------------

struct MariaDbServerOptions {
  bool log_bin = true;  // binary log (ROW format, FULL row image and metadata, GTID strict)
  int server_id = 1;
  // Appended to mariadbd's command line, e.g. "--innodb-log-file-size=1G" (later options win).
  std::vector<std::string> extra_args;
  std::chrono::seconds startup_timeout{60};
};

class MariaDbServer {
 public:
  static Result<std::unique_ptr<MariaDbServer>> Start(const MariaDbServerOptions& options = {});
  ~MariaDbServer();
  MariaDbServer(const MariaDbServer&) = delete;
  MariaDbServer& operator=(const MariaDbServer&) = delete;

  // mysql://root:PASSWORD@127.0.0.1:PORT/
  std::string url() const;
  std::string host() const { return "127.0.0.1"; }
  int port() const { return port_; }
  std::string user() const { return "root"; }
  std::string password() const;
  std::string socket_path() const { return dir_ + "/mysql.sock"; }
  const std::string& dir() const { return dir_; }
  bool running();

  // Runs one or more ';'-separated statements (fresh connection, utf8mb4, LOCAL INFILE
  // allowed) in `database` (empty: none). Errors carry the server's code and SQLSTATE.
  Status Exec(const std::string& sql, const std::string& database = "");
  // Like Exec; returns the rows of the last statement that produced a result set.
  Result<Rows> Query(const std::string& sql, const std::string& database = "");

  Status Stop();     // SIGTERM (clean shutdown), keeps the data
  Status Restart();  // same folder and port
  void Kill();       // SIGKILL: a crash; Restart() runs InnoDB recovery
  std::string LogTail() const;

 private:
  MariaDbServer() = default;
  Status Spawn();
  Status WaitReady(std::chrono::milliseconds timeout);

  MariaDbServerOptions options_;
  std::string mariadbd_;
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<ServerProcess> process_;
};

// --- PostgreSQL ----------------------------------------------------------------------------------

struct PostgresServerOptions {
  // Extra server settings, passed as -c NAME=VALUE after the fixture's (so they win).
  std::vector<std::pair<std::string, std::string>> settings;
  std::string bin_dir;  // empty: $DBS_PG_BIN_DIR, else the newest /usr/lib/postgresql/*/bin
  std::chrono::seconds startup_timeout{60};
};

class PostgresServer {
 public:
  static Result<std::unique_ptr<PostgresServer>> Start(const PostgresServerOptions& options = {});
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // postgres://postgres:PASSWORD@127.0.0.1:PORT/postgres
  std::string url() const { return UrlFor("postgres"); }
  std::string UrlFor(const std::string& database) const;
  std::string host() const { return "127.0.0.1"; }
  int port() const { return port_; }
  std::string user() const { return "postgres"; }
  std::string password() const;
  std::string socket_dir() const { return dir_ + "/sock"; }
  const std::string& dir() const { return dir_; }
  bool running();

  // Runs one or more ';'-separated statements (simple query protocol: one implicit transaction
  // unless the SQL has its own BEGIN/COMMIT) in `database`, on a fresh connection.
  Status Exec(const std::string& sql, const std::string& database = "postgres");
  // Like Exec; returns the rows of the last statement that produced rows.
  Result<Rows> Query(const std::string& sql, const std::string& database = "postgres");
  Status CreateDatabase(const std::string& name);

  Status Stop();     // SIGINT (fast shutdown), keeps the data
  Status Restart();  // same folder and port
  void Kill();       // SIGKILL of the postmaster and its backends: a crash
  std::string LogTail() const;

 private:
  PostgresServer() = default;
  Status Spawn();
  Status WaitReady(std::chrono::milliseconds timeout);

  PostgresServerOptions options_;
  std::string bin_dir_;
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<ServerProcess> process_;
};

// --- S3 (s3rver) ---------------------------------------------------------------------------------

struct S3ServerOptions {
  // TLS: with a certificate and key, the server speaks https only (endpoint() is https://...).
  std::string tls_cert_file;
  std::string tls_key_file;
  // Virtual-host addressing: the server takes "<bucket>.s3.localhost" host names as buckets;
  // vhost_endpoint() is then http://s3.localhost:PORT (*.localhost resolves to loopback).
  bool vhost = false;
  // Accept requests whose signature does not match (still refuses unknown access keys). Only
  // for tests of something the server signs differently from AWS (its virtual-host canonical
  // path): never for credential tests.
  bool allow_mismatched_signatures = false;
  std::chrono::seconds startup_timeout{60};
};

// s3rver (npm @20minutes/s3rver, pinned in tools/s3rver, run by Node.js) on 127.0.0.1: a real S3
// server on disk that verifies AWS Signature V4 of the Authorization header (not the payload
// hash), with ranged GETs, ListObjectsV2 with continuation, and multipart uploads. It does not
// implement AbortMultipartUpload or ListMultipartUploads (NotImplemented / MethodNotAllowed),
// and it accepts unsigned requests as anonymous. Its data lives in dir()/data.
class S3Server {
 public:
  static Result<std::unique_ptr<S3Server>> Start(const S3ServerOptions& options = {});
  ~S3Server();
  S3Server(const S3Server&) = delete;
  S3Server& operator=(const S3Server&) = delete;

  // http://127.0.0.1:PORT (https://127.0.0.1:PORT with TLS).
  std::string endpoint() const;
  // http://s3.localhost:PORT: for virtual-host addressing (options.vhost).
  std::string vhost_endpoint() const;
  int port() const { return port_; }
  std::string region() const { return "us-east-1"; }
  std::string access_key() const;
  std::string secret_key() const;
  const std::string& dir() const { return dir_; }
  bool running();

  // Creates a bucket (a signed PUT /name). OK when it exists already.
  Status CreateBucket(const std::string& name);

  Status Stop();  // SIGTERM, keeps the data
  // Same port and data. Objects whose writes a Kill() cut off are removed first (s3rver keeps
  // an object in several files; on S3 a PUT is atomic), see RemoveTornObjects.
  Status Restart();
  void Kill();  // SIGKILL
  std::string LogTail() const;

 private:
  S3Server() = default;
  Status Spawn();
  Status WaitReady(std::chrono::milliseconds timeout);

  S3ServerOptions options_;
  std::string node_;
  std::string script_;
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<ServerProcess> process_;
};

// --- shared instances for gtest binaries ---------------------------------------------------------

// Process-wide servers started on first use (default options) and stopped at exit (std::atexit),
// so the tests of one binary share one server of each kind. Thread-safe. A failed start is
// remembered: later calls return the same error at once. Tests must not Stop/Kill/Restart the
// shared instances (start a private server for fault tests) and should use their own databases,
// streams and subjects.
class SharedServers {
 public:
  static Result<NatsServer*> Nats();
  static Result<MariaDbServer*> MariaDb();
  static Result<PostgresServer*> Postgres();
  // Stops and removes every shared server now (also runs at exit).
  static void StopAll();
};

}  // namespace dbs::testing

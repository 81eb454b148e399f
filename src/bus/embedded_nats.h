// A nats-server child process with JetStream, managed by dbstreams: the embedded default of
// `dbstreams serve` and `dbstreams run`.
//
// Contract: Start() returns once the server accepts clients and JetStream answers. The server
// stores its data under options.data_dir/jetstream and dies with the process that started it
// (parent-death signal). Stop() (and the destructor) shut it down cleanly.
//
// Security: the server always requires authentication, with one user per role and the
// permissions of bus/nats_auth.h (passwords from options.users, or fresh random ones). Its
// configuration holds only bcrypt hashes; the folder is made 0700 and every file the server
// writes is 0600 (umask of the child). When it listens beyond loopback it also requires TLS,
// with a self-signed certificate made in the folder on first start (clients trust exactly it).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "bus/jetstream.h"
#include "bus/nats_auth.h"
#include "core/result.h"
#include "core/subprocess.h"

namespace dbs::bus {

struct EmbeddedNatsOptions {
  std::string data_dir;  // required; created if missing
  std::string host = "127.0.0.1";
  int port = 0;                   // 0: a free port
  int64_t max_payload = 8 << 20;  // bytes; nats-server's own default is 1 MiB
  std::string binary = "nats-server";
  std::chrono::milliseconds start_timeout{30000};
  NatsUsers users;  // empty: fresh random users for this server's lifetime
  // TLS: "auto" (on unless `host` is a loopback address), "on" or "off". A non-loopback
  // server without TLS is refused unless this is "off".
  std::string tls = "auto";
  // GOMEMLIMIT for the broker: a soft limit of Go's collector (it collects garbage harder as
  // the heap nears it; nothing fails). It trims garbage only: what JetStream holds live (a
  // load's unpurged bundles) is not bounded by it, and the RSS can stay above it. 0: unset.
  int64_t memory_limit = 96ll << 20;
};

class EmbeddedNats {
 public:
  static Result<std::unique_ptr<EmbeddedNats>> Start(const EmbeddedNatsOptions& options);
  ~EmbeddedNats();

  const std::string& url() const { return url_; }
  // Connection options for a client of `role`: URL, the role's user and password, and the
  // server's certificate as the only trusted CA when TLS is on.
  NatsOptions ClientOptions(NatsRole role, const std::string& client_name) const;
  const NatsUsers& users() const { return users_; }
  bool tls() const { return !ca_file_.empty(); }
  int port() const { return port_; }
  // The server's log file (for error messages).
  const std::string& log_file() const { return log_file_; }
  // For an error message when the bus stopped answering: whether the server is still running
  // (or how it ended), the start of a crash report in its log ("panic:", "fatal error:") if
  // there is one, and the log's last lines.
  std::string Diagnosis();
  // Stops the server (and its watcher). Idempotent. `discard`: the caller throws the store away
  // right after (a run's private broker), so the server is killed at once rather than given
  // time to close its store cleanly (SIGTERM, up to 15 s).
  void Stop(bool discard = false);
  // How often the watcher started the server again after it exited on its own.
  int restarts() const;
  // The running server's process id (-1: none), e.g. for tests that crash it.
  pid_t pid() const;

 private:
  EmbeddedNats() = default;
  // The watcher: a server that exits on its own (a crash) is started again on the same port
  // and store, so the clients reconnect and JetStream recovers its streams from the store; a
  // server that keeps exiting (kMaxRestarts within a minute) is left down and said so.
  void Watch();
  static constexpr int kMaxRestarts = 5;
  SpawnOptions spawn_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  int restarts_ = 0;
  std::thread watcher_;
  std::unique_ptr<ChildProcess> child_;  // under mu_ once the watcher runs
  std::string url_;
  std::string log_file_;
  std::string ca_file_;  // the server's self-signed certificate when TLS is on
  NatsUsers users_;
  int port_ = 0;
};

// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(const std::string& host);

// The last `max_bytes` of a file (for startup error messages).
std::string FileTail(const std::string& path, size_t max_bytes = 2000);

}  // namespace dbs::bus

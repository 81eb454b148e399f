// dbstreams-testenv: starts throwaway servers (see servers.h) for scripts and benchmarks, prints
// their connection settings, and stops them again.
//
//   dbstreams-testenv [--nats] [--nats-cluster] [--mariadb] [--postgres] [--s3] [--env-file PATH]
//
// Prints KEY=VALUE lines on stdout once every server is ready (and writes them to PATH, atomically,
// so a script may wait for the file to appear and then `source` it), then runs until SIGTERM,
// SIGINT or SIGHUP, or until stdin reaches EOF when stdin is a pipe, socket or terminal (a
// background job's /dev/null stdin is ignored). Then it stops every server, removes their
// folders and the env file, and exits 0. Exit code 1 when a server fails to start, 2 on bad usage.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "support/servers.h"
#include "support/subprocess.h"

namespace {

using dbs::Result;
using dbs::Status;
namespace t = dbs::testing;

int Usage() {
  std::fprintf(stderr,
               "usage: dbstreams-testenv [--nats] [--nats-cluster] [--mariadb] [--postgres] "
               "[--s3] [--env-file PATH]\n"
               "Starts throwaway servers on 127.0.0.1, prints NATS_URL=, MYSQL_URL=, PG_URL= (and\n"
               "PGHOST/PGPORT/PGUSER/PGPASSWORD, MYSQL_HOST/...) lines, and runs until SIGTERM,\n"
               "SIGINT or EOF on stdin (when stdin is a pipe or terminal).\n");
  return 2;
}

// stdin EOF means "stop" only when stdin is something a controlling script can close.
bool WatchStdin() {
  struct stat sb;
  if (fstat(0, &sb) != 0) return false;
  return S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode) || isatty(0);
}

template <typename T>
bool Collect(std::future<Result<std::unique_ptr<T>>>& f, std::unique_ptr<T>* out,
             const char* what) {
  Result<std::unique_ptr<T>> r = f.get();
  if (!r.ok()) {
    std::fprintf(stderr, "dbstreams-testenv: %s failed to start: %s\n", what,
                 r.status().ToString().c_str());
    return false;
  }
  *out = std::move(r).value();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool nats = false;
  bool cluster = false;
  bool mariadb = false;
  bool postgres = false;
  bool s3 = false;
  std::string env_file;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--nats") {
      nats = true;
    } else if (a == "--nats-cluster") {
      cluster = true;
    } else if (a == "--mariadb") {
      mariadb = true;
    } else if (a == "--postgres") {
      postgres = true;
    } else if (a == "--s3") {
      s3 = true;
    } else if (a == "--env-file" && i + 1 < argc) {
      env_file = argv[++i];
    } else if (a.rfind("--env-file=", 0) == 0) {
      env_file = a.substr(11);
    } else {
      return Usage();
    }
  }
  if (!nats && !cluster && !mariadb && !postgres && !s3) return Usage();

  // Block the stop signals before any thread exists, so every thread inherits the mask and the
  // signals are only ever read from the signalfd below (children reset their mask).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  const int sig_fd = signalfd(-1, &stop_signals, SFD_CLOEXEC);
  if (sig_fd < 0) {
    std::perror("signalfd");
    return 1;
  }
  if (!env_file.empty()) unlink(env_file.c_str());  // never leave a stale one for pollers

  // Start everything in parallel: forks happen on the fixture's launcher thread anyway.
  std::future<Result<std::unique_ptr<t::NatsServer>>> nats_f;
  std::future<Result<std::unique_ptr<t::NatsCluster>>> cluster_f;
  std::future<Result<std::unique_ptr<t::MariaDbServer>>> mariadb_f;
  std::future<Result<std::unique_ptr<t::PostgresServer>>> postgres_f;
  std::future<Result<std::unique_ptr<t::S3Server>>> s3_f;
  constexpr char kS3Bucket[] = "dbstreams-test";
  if (nats) nats_f = std::async(std::launch::async, [] { return t::NatsServer::Start(); });
  if (cluster) cluster_f = std::async(std::launch::async, [] { return t::NatsCluster::Start(); });
  if (mariadb) {
    mariadb_f = std::async(std::launch::async, [] { return t::MariaDbServer::Start(); });
  }
  if (postgres) {
    postgres_f = std::async(std::launch::async, [] { return t::PostgresServer::Start(); });
  }
  std::unique_ptr<t::NatsServer> nats_server;
  std::unique_ptr<t::NatsCluster> nats_cluster;
  std::unique_ptr<t::MariaDbServer> mariadb_server;
  std::unique_ptr<t::PostgresServer> postgres_server;
  std::unique_ptr<t::S3Server> s3_server;
  if (s3) {
    s3_f = std::async(std::launch::async, [&]() -> Result<std::unique_ptr<t::S3Server>> {
      DBS_ASSIGN_OR_RETURN(std::unique_ptr<t::S3Server> s, t::S3Server::Start());
      DBS_RETURN_IF_ERROR(s->CreateBucket(kS3Bucket));
      return s;
    });
  }
  bool ok = true;
  if (nats) ok = Collect(nats_f, &nats_server, "nats-server") && ok;
  if (cluster) ok = Collect(cluster_f, &nats_cluster, "NATS cluster") && ok;
  if (mariadb) ok = Collect(mariadb_f, &mariadb_server, "MariaDB") && ok;
  if (postgres) ok = Collect(postgres_f, &postgres_server, "PostgreSQL") && ok;
  if (s3) ok = Collect(s3_f, &s3_server, "S3 (s3rver)") && ok;
  if (!ok) return 1;  // destructors stop whatever did start

  std::vector<std::pair<std::string, std::string>> vars;
  if (nats_server) {
    vars.emplace_back("NATS_URL", nats_server->url());
    vars.emplace_back("NATS_MONITOR_URL",
                      "http://127.0.0.1:" + std::to_string(nats_server->monitor_port()));
  }
  if (nats_cluster)
    vars.emplace_back(nats_server ? "NATS_CLUSTER_URL" : "NATS_URL", nats_cluster->urls());
  if (mariadb_server) {
    vars.emplace_back("MYSQL_URL", mariadb_server->url());
    vars.emplace_back("MYSQL_HOST", mariadb_server->host());
    vars.emplace_back("MYSQL_PORT", std::to_string(mariadb_server->port()));
    vars.emplace_back("MYSQL_USER", mariadb_server->user());
    vars.emplace_back("MYSQL_PASSWORD", mariadb_server->password());
    vars.emplace_back("MYSQL_SOCKET", mariadb_server->socket_path());
  }
  if (postgres_server) {
    vars.emplace_back("PG_URL", postgres_server->url());
    vars.emplace_back("PGHOST", postgres_server->host());
    vars.emplace_back("PGPORT", std::to_string(postgres_server->port()));
    vars.emplace_back("PGUSER", postgres_server->user());
    vars.emplace_back("PGPASSWORD", postgres_server->password());
    vars.emplace_back("PGDATABASE", "postgres");
  }
  if (s3_server) {
    vars.emplace_back("S3_ENDPOINT", s3_server->endpoint());
    vars.emplace_back("S3_REGION", s3_server->region());
    vars.emplace_back("S3_BUCKET", kS3Bucket);
    vars.emplace_back("S3_ACCESS_KEY", s3_server->access_key());
    vars.emplace_back("S3_SECRET_KEY", s3_server->secret_key());
  }
  std::string text;
  for (const auto& [k, v] : vars) text += k + "=" + v + "\n";
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  if (!env_file.empty()) {
    const std::string tmp = env_file + ".tmp";
    Status st = t::WriteFile(tmp, text, 0600);
    if (st.ok() && rename(tmp.c_str(), env_file.c_str()) != 0) {
      st = Status::IoError("renaming " + tmp + ": " + std::strerror(errno));
    }
    if (!st.ok()) {
      std::fprintf(stderr, "dbstreams-testenv: %s\n", st.ToString().c_str());
      return 1;
    }
  }

  const bool watch_stdin = WatchStdin();
  for (;;) {
    pollfd fds[2] = {{sig_fd, POLLIN, 0}, {0, POLLIN, 0}};
    const int n = poll(fds, watch_stdin ? 2 : 1, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (fds[0].revents != 0) {
      signalfd_siginfo info;
      if (read(sig_fd, &info, sizeof(info)) > 0) {
        std::fprintf(stderr, "dbstreams-testenv: %s, stopping\n", strsignal(info.ssi_signo));
      }
      break;
    }
    if (watch_stdin && fds[1].revents != 0) {
      char buf[4096];
      const ssize_t r = read(0, buf, sizeof(buf));
      if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
        std::fprintf(stderr, "dbstreams-testenv: stdin closed, stopping\n");
        break;
      }
    }
  }
  if (!env_file.empty()) unlink(env_file.c_str());
  s3_server.reset();
  postgres_server.reset();
  mariadb_server.reset();
  nats_cluster.reset();
  nats_server.reset();
  return 0;
}

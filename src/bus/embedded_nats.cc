#include "bus/embedded_nats.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "bus/jetstream.h"
#include "core/logging.h"
#include "core/private_file.h"
#include "security/self_signed.h"

namespace dbs::bus {

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  in6_addr a6{};
  if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
  return false;
}

namespace {

// A string in nats-server's configuration syntax (double quotes, backslash escapes).
std::string ConfString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string FileTail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  auto size = static_cast<size_t>(in.tellg());
  size_t start = size > max_bytes ? size - max_bytes : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<std::unique_ptr<EmbeddedNats>> EmbeddedNats::Start(const EmbeddedNatsOptions& o) {
  if (o.data_dir.empty()) return Status::InvalidArgument("embedded NATS needs a data folder");
  std::error_code ec;
  std::filesystem::create_directories(o.data_dir, ec);
  if (ec) {
    return Status::IoError("cannot create NATS data folder " + o.data_dir + ": " + ec.message());
  }
  int port = o.port;
  if (port == 0) {
    DBS_ASSIGN_OR_RETURN(port, FindFreePort());
  } else if (CanConnect(o.host, port)) {
    return Status::AlreadyExists("port " + std::to_string(port) + " on " + o.host +
                                 " is already in use (another nats-server or dbstreams?); "
                                 "choose another with --nats-port");
  }
  bool tls = false;
  if (o.tls == "on") {
    tls = true;
  } else if (o.tls == "auto") {
    tls = !IsLoopbackHost(o.host);
  } else if (o.tls != "off") {
    return Status::InvalidArgument("NATS TLS must be auto, on or off, not '" + o.tls + "'");
  }
  // The folder holds the store and the server's credentials hashes: owner only.
  ::chmod(o.data_dir.c_str(), 0700);
  std::unique_ptr<EmbeddedNats> n(new EmbeddedNats());
  n->port_ = port;
  n->users_ = o.users.empty() ? NatsUsers::Generate() : o.users;
  n->url_ = std::string(tls ? "tls" : "nats") + "://" +
            (o.host == "0.0.0.0" || o.host == "::" ? std::string("127.0.0.1") : o.host) + ":" +
            std::to_string(port);
  n->log_file_ = o.data_dir + "/nats-server.log";
  std::string tls_conf;
  if (tls) {
    const std::string cert = o.data_dir + "/nats-server-cert.pem";
    const std::string key = o.data_dir + "/nats-server-key.pem";
    DBS_RETURN_IF_ERROR(security::EnsureSelfSigned(cert, key, {o.host})
                            .WithContext("making the embedded NATS server's certificate"));
    n->ca_file_ = cert;
    tls_conf = "tls {\n  cert_file: " + ConfString(cert) + "\n  key_file: " + ConfString(key) +
               "\n  timeout: 5\n}\n";
  }
  DBS_ASSIGN_OR_RETURN(std::string auth, AuthorizationConf(n->users_));
  // A config file, so max_payload, the store folder and the users are explicit.
  const std::string conf = o.data_dir + "/nats-server.conf";
  DBS_RETURN_IF_ERROR(WritePrivateFile(
      conf, "host: " + ConfString(o.host) + "\nport: " + std::to_string(port) +
                "\nmax_payload: " + std::to_string(o.max_payload) + "\njetstream {\n  store_dir: " +
                ConfString(o.data_dir) + "\n}\n" + tls_conf + auth));
  SpawnOptions so;
  so.argv = {o.binary, "-c", conf};
  if (o.memory_limit > 0) so.env.push_back("GOMEMLIMIT=" + std::to_string(o.memory_limit));
  so.output_file = n->log_file_;
  so.death_signal = SIGTERM;
  so.umask = 077;  // the JetStream store and the log: owner only
  auto child = ChildProcess::Spawn(so);
  if (!child.ok()) {
    return child.status().WithContext("starting nats-server (is it installed? scripts/setup.sh)");
  }
  n->child_ = std::move(child).value();
  n->spawn_ = so;

  auto deadline = std::chrono::steady_clock::now() + o.start_timeout;
  Status last = Status::Unavailable("not started");
  // nats-server listens some tens of milliseconds after its start: looked for every 5 ms at
  // first, then less often.
  std::chrono::milliseconds poll{5};
  while (std::chrono::steady_clock::now() < deadline) {
    if (!n->child_->Running()) {
      return Status::Unavailable("nats-server exited during startup:\n" + FileTail(n->log_file_));
    }
    if (CanConnect(o.host, port)) {
      NatsOptions no = n->ClientOptions(NatsRole::kApi, "dbstreams-probe");
      no.max_reconnects = 0;
      no.connect_timeout = std::chrono::milliseconds(1000);
      no.request_timeout = std::chrono::milliseconds(2000);
      auto conn = NatsConnection::Connect(no);
      if (conn.ok()) {
        last = (*conn)->JetStreamReady();
        if (last.ok()) {
          Log(LogLevel::kInfo, "nats", "embedded nats-server ready",
              {F("url", n->url_), F("store", o.data_dir)});
          EmbeddedNats* self = n.get();
          n->watcher_ = std::thread([self] { self->Watch(); });
          return n;
        }
      } else {
        last = conn.status();
      }
    }
    std::this_thread::sleep_for(poll);
    poll = std::min(poll * 2, std::chrono::milliseconds(50));
  }
  return Status::Timeout("nats-server did not become ready: " + last.ToString() + "\n" +
                         FileTail(n->log_file_));
}

EmbeddedNats::~EmbeddedNats() { Stop(); }

void EmbeddedNats::Watch() {
  std::unique_lock<std::mutex> l(mu_);
  std::vector<std::chrono::steady_clock::time_point> recent;  // restarts in the last minute
  while (!cv_.wait_for(l, std::chrono::milliseconds(250), [this] { return stopping_; })) {
    if (!child_ || child_->Running()) continue;
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(recent, [&](auto t) { return now - t > std::chrono::minutes(1); });
    if (static_cast<int>(recent.size()) >= kMaxRestarts) {
      Log(LogLevel::kError, "nats",
          "the embedded nats-server keeps exiting; it is left down (see its log)",
          {F("log", log_file_), F("restarts", restarts_)});
      child_.reset();
      continue;
    }
    l.unlock();
    const std::string why = Diagnosis();
    l.lock();
    if (stopping_) break;
    Log(LogLevel::kWarn, "nats", "the embedded nats-server exited; starting it again",
        {F("url", url_), F("detail", why)});
    auto child = ChildProcess::Spawn(spawn_);
    recent.push_back(now);
    ++restarts_;
    if (child.ok()) {
      child_ = std::move(child).value();
    } else {
      Log(LogLevel::kError, "nats", "cannot start the embedded nats-server again",
          {F("error", child.status().ToString())});
    }
  }
}

pid_t EmbeddedNats::pid() const {
  std::lock_guard<std::mutex> l(mu_);
  return child_ ? child_->pid() : -1;
}

int EmbeddedNats::restarts() const {
  std::lock_guard<std::mutex> l(mu_);
  return restarts_;
}

std::string EmbeddedNats::Diagnosis() {
  bool running;
  {
    std::lock_guard<std::mutex> l(mu_);
    running = child_ && child_->Running();
  }
  std::string out =
      running ? "the embedded nats-server is running" : "the embedded nats-server is not running";
  std::ifstream in(log_file_, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string log = ss.str();
  size_t crash = std::string::npos;
  for (const char* mark : {"\npanic: ", "\nfatal error: ", "\nSIGQUIT", "\nSIGABRT"}) {
    crash = std::min(crash, log.find(mark));
  }
  if (crash != std::string::npos) {
    out += "; its crash report begins:\n" + log.substr(crash + 1, 1200);
    if (log.size() > crash + 1 + 1200) out += "\n[...]";
  }
  const size_t tail = log.size() > 1500 ? log.size() - 1500 : 0;
  if (crash == std::string::npos || tail > crash + 1200) {
    out += "\nlast lines of its log:\n" + log.substr(tail);
  }
  return out;
}

NatsOptions EmbeddedNats::ClientOptions(NatsRole role, const std::string& client_name) const {
  NatsOptions o;
  o.url = url_;
  o.name = client_name;
  o.user = users_.For(role).user;
  o.password = users_.For(role).password;
  if (!ca_file_.empty()) {
    o.tls = true;
    o.ca_file = ca_file_;
  }
  return o;
}

void EmbeddedNats::Stop(bool discard) {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  std::lock_guard<std::mutex> l(mu_);
  if (child_) {
    child_->Terminate(discard ? SIGKILL : SIGTERM, std::chrono::seconds(15));
    child_.reset();
  }
}

}  // namespace dbs::bus

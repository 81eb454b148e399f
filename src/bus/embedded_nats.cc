#include "bus/embedded_nats.h"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "bus/jetstream.h"
#include "core/logging.h"

namespace dbs::bus {

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
  std::unique_ptr<EmbeddedNats> n(new EmbeddedNats());
  n->port_ = port;
  n->url_ = "nats://" + o.host + ":" + std::to_string(port);
  n->log_file_ = o.data_dir + "/nats-server.log";
  // A config file, so max_payload and the store folder are explicit.
  std::string conf = o.data_dir + "/nats-server.conf";
  {
    std::ofstream f(conf, std::ios::trunc);
    f << "host: \"" << o.host << "\"\nport: " << port << "\nmax_payload: " << o.max_payload
      << "\njetstream {\n  store_dir: \"" << o.data_dir << "\"\n}\n";
    if (!f) return Status::IoError("cannot write " + conf);
  }
  SpawnOptions so;
  so.argv = {o.binary, "-c", conf};
  so.output_file = n->log_file_;
  so.death_signal = SIGTERM;
  auto child = ChildProcess::Spawn(so);
  if (!child.ok()) {
    return child.status().WithContext("starting nats-server (is it installed? scripts/setup.sh)");
  }
  n->child_ = std::move(child).value();

  auto deadline = std::chrono::steady_clock::now() + o.start_timeout;
  Status last = Status::Unavailable("not started");
  while (std::chrono::steady_clock::now() < deadline) {
    if (!n->child_->Running()) {
      return Status::Unavailable("nats-server exited during startup:\n" + FileTail(n->log_file_));
    }
    if (CanConnect(o.host, port)) {
      NatsOptions no;
      no.url = n->url_;
      no.max_reconnects = 0;
      no.connect_timeout = std::chrono::milliseconds(1000);
      no.request_timeout = std::chrono::milliseconds(2000);
      auto conn = NatsConnection::Connect(no);
      if (conn.ok()) {
        last = (*conn)->JetStreamReady();
        if (last.ok()) {
          Log(LogLevel::kInfo, "nats", "embedded nats-server ready",
              {F("url", n->url_), F("store", o.data_dir)});
          return n;
        }
      } else {
        last = conn.status();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::Timeout("nats-server did not become ready: " + last.ToString() + "\n" +
                         FileTail(n->log_file_));
}

EmbeddedNats::~EmbeddedNats() { Stop(); }

void EmbeddedNats::Stop() {
  if (child_) {
    child_->Terminate(SIGTERM, std::chrono::seconds(15));
    child_.reset();
  }
}

}  // namespace dbs::bus

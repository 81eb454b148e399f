// A nats-server child process with JetStream, managed by dbstreams: the embedded default of
// `dbstreams serve` and `dbstreams run`.
//
// Contract: Start() returns once the server accepts clients and JetStream answers. The server
// stores its data under options.data_dir/jetstream and dies with the process that started it
// (parent-death signal). Stop() (and the destructor) shut it down cleanly.
#pragma once

#include <chrono>
#include <memory>
#include <string>

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
};

class EmbeddedNats {
 public:
  static Result<std::unique_ptr<EmbeddedNats>> Start(const EmbeddedNatsOptions& options);
  ~EmbeddedNats();

  const std::string& url() const { return url_; }
  int port() const { return port_; }
  // The server's log file (for error messages).
  const std::string& log_file() const { return log_file_; }
  void Stop();

 private:
  EmbeddedNats() = default;
  std::unique_ptr<ChildProcess> child_;
  std::string url_;
  std::string log_file_;
  int port_ = 0;
};

// The last `max_bytes` of a file (for startup error messages).
std::string FileTail(const std::string& path, size_t max_bytes = 2000);

}  // namespace dbs::bus

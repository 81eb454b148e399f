// LogHub: the API's window on the platform's logs. Records arrive as JSON lines from
// dbs.logs.> (every service, the API included, publishes there) and are kept in a bounded ring
// buffer with increasing sequence numbers, for the SSE log stream and per-run recent logs.
//
// Contract: thread-safe; memory is bounded by `capacity` records; Wait() returns early when
// Close() is called (server shutdown).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dbs::api {

struct LogFilter {
  int min_level = 0;    // LogLevel numeric value (trace=0 .. error=4)
  std::string stream;   // fields.stream must equal it; "" = any
  std::string service;  // "service", "serviceId" or "kind" must equal it; "" = any
  bool Matches(const nlohmann::json& rec) const;
};

class LogHub {
 public:
  explicit LogHub(size_t capacity = 5000) : capacity_(capacity) {}
  void Add(nlohmann::json record);
  // Records with seq > after (oldest first), waiting up to `timeout` when there are none.
  // *last receives the newest sequence number seen.
  std::vector<nlohmann::json> Wait(uint64_t after, std::chrono::milliseconds timeout,
                                   uint64_t* last);
  // The newest `limit` records matching `filter`, oldest first.
  std::vector<nlohmann::json> Recent(const LogFilter& filter, size_t limit);
  uint64_t last_seq();
  void Close();

 private:
  size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<uint64_t, nlohmann::json>> ring_;
  uint64_t seq_ = 0;
  bool closed_ = false;
};

int LogLevelNumber(const std::string& name);  // -1 when unknown

}  // namespace dbs::api

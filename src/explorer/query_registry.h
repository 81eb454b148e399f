// QueryRegistry: the console's running statements and open cursors, by query id, each owned
// by the API key that started it.
//
// Contract:
//  - Thread-safe. One background thread (a tick every 100 ms) cancels statements past their
//    deadline (QuerySession::Cancel(timeout = true)), cancels statements whose client went away
//    (the `client_gone` check), and closes cursors idle for longer than `cursor_idle`.
//  - A query is "running" while a request drives its session and "open" while it waits as a
//    cursor for its next page. Only the owning key sees, pages or cancels it (others get
//    NotFound, as for an unknown id).
//  - At most `max_open` cursors wait at once (ResourceExhausted beyond; the oldest are not
//    dropped silently). The destructor closes every cursor.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "explorer/console.h"

namespace dbs::explorer {

struct QueryInfo {
  std::string id;
  std::string key_id;
  std::string connection_id;
  std::string sql;
  bool read_only = true;
  int64_t started_at_ms = 0;  // unix milliseconds
};

class QueryRegistry {
 public:
  using Clock = std::chrono::steady_clock;
  explicit QueryRegistry(std::chrono::milliseconds cursor_idle = std::chrono::minutes(10),
                         size_t max_open = 64);
  ~QueryRegistry();
  QueryRegistry(const QueryRegistry&) = delete;
  QueryRegistry& operator=(const QueryRegistry&) = delete;

  // A fresh query id ("q_" + 16 hex digits).
  static std::string NewId();
  // OK when `id` may name a query: 1 to 64 of A-Z a-z 0-9 _ -.
  static Status ValidateId(const std::string& id);

  // Registers a running statement. AlreadyExists when the id is in use.
  Status Begin(const QueryInfo& info, std::shared_ptr<QuerySession> session,
               Clock::time_point deadline, std::function<bool()> client_gone);
  // The statement of `id` is waiting for its next page (its deadline and client check end).
  Status Park(const std::string& id);
  // Takes an open cursor to read its next page: it is running again with a new deadline.
  // NotFound for an unknown id or another key's; FailedPrecondition while it runs.
  Result<std::shared_ptr<QuerySession>> Resume(const std::string& id, const std::string& key_id,
                                               Clock::time_point deadline,
                                               std::function<bool()> client_gone);
  // Forgets `id` (its driver is done with it).
  void Remove(const std::string& id);
  // A running statement is cancelled on the server (its request then fails with Cancelled);
  // an open cursor is closed. NotFound for an unknown id or another key's.
  Status Cancel(const std::string& id, const std::string& key_id);
  // The key's queries, oldest first: {queryId, connectionId, sql, readOnly, state, startedAt,
  // serverSessionId}.
  std::vector<nlohmann::json> List(const std::string& key_id);

 private:
  struct Entry {
    QueryInfo info;
    std::shared_ptr<QuerySession> session;
    bool running = true;
    Clock::time_point deadline;
    Clock::time_point idle_since;
    std::function<bool()> client_gone;
    bool cancelled = false;
  };
  void Tick();

  const std::chrono::milliseconds cursor_idle_;
  const size_t max_open_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<std::string, Entry> entries_;
  std::thread thread_;
};

}  // namespace dbs::explorer

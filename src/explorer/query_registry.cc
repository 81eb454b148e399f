#include "explorer/query_registry.h"

#include <sys/random.h>

#include <cctype>

namespace dbs::explorer {

using nlohmann::json;

QueryRegistry::QueryRegistry(std::chrono::milliseconds cursor_idle, size_t max_open)
    : cursor_idle_(cursor_idle), max_open_(max_open) {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      cv_.wait_for(l, std::chrono::milliseconds(100));
      if (stop_) break;
      l.unlock();
      Tick();
      l.lock();
    }
  });
}

QueryRegistry::~QueryRegistry() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::map<std::string, Entry> left;
  {
    std::lock_guard<std::mutex> l(mu_);
    left.swap(entries_);
  }
  for (auto& [id, e] : left) {
    if (!e.running && e.session) (void)e.session->Close();
  }
}

std::string QueryRegistry::NewId() {
  unsigned char b[8] = {};
  if (getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b)) {
    const auto t = Clock::now().time_since_epoch().count();
    for (size_t i = 0; i < sizeof b; ++i) b[i] = static_cast<unsigned char>(t >> (8 * i));
  }
  static const char* hex = "0123456789abcdef";
  std::string s = "q_";
  for (unsigned char c : b) {
    s += hex[c >> 4];
    s += hex[c & 15];
  }
  return s;
}

Status QueryRegistry::ValidateId(const std::string& id) {
  bool ok = !id.empty() && id.size() <= 64;
  for (char c : id)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  if (!ok) return Status::InvalidArgument("queryId must be 1 to 64 of A-Z, a-z, 0-9, _ and -");
  return Status::Ok();
}

Status QueryRegistry::Begin(const QueryInfo& info, std::shared_ptr<QuerySession> session,
                            Clock::time_point deadline, std::function<bool()> client_gone) {
  std::lock_guard<std::mutex> l(mu_);
  if (entries_.count(info.id)) {
    return Status::AlreadyExists("queryId " + info.id + " is already in use");
  }
  Entry e;
  e.info = info;
  e.session = std::move(session);
  e.deadline = deadline;
  e.client_gone = std::move(client_gone);
  entries_.emplace(info.id, std::move(e));
  return Status::Ok();
}

Status QueryRegistry::Park(const std::string& id) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return Status::NotFound("query " + id + " is not open");
  size_t open = 0;
  for (const auto& [k, e] : entries_) open += e.running ? 0 : 1;
  if (open >= max_open_) {
    return Status::ResourceExhausted("too many open result cursors (" + std::to_string(max_open_) +
                                     "): read or cancel some first");
  }
  it->second.running = false;
  it->second.client_gone = nullptr;
  it->second.idle_since = Clock::now();
  return Status::Ok();
}

Result<std::shared_ptr<QuerySession>> QueryRegistry::Resume(const std::string& id,
                                                            const std::string& key_id,
                                                            Clock::time_point deadline,
                                                            std::function<bool()> client_gone) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.info.key_id != key_id) {
    return Status::NotFound("no open query " + id + " (closed, expired or never started)");
  }
  if (it->second.running) {
    return Status::FailedPrecondition("query " + id + " is still reading its previous page");
  }
  it->second.running = true;
  it->second.deadline = deadline;
  it->second.client_gone = std::move(client_gone);
  return it->second.session;
}

void QueryRegistry::Remove(const std::string& id) {
  std::lock_guard<std::mutex> l(mu_);
  entries_.erase(id);
}

Status QueryRegistry::Cancel(const std::string& id, const std::string& key_id) {
  std::shared_ptr<QuerySession> close, cancel;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.info.key_id != key_id) {
      return Status::NotFound("no running or open query " + id);
    }
    if (it->second.running) {
      it->second.cancelled = true;
      cancel = it->second.session;
    } else {
      close = std::move(it->second.session);
      entries_.erase(it);
    }
  }
  if (cancel) cancel->Cancel(false);
  if (close) (void)close->Close();
  return Status::Ok();
}

std::vector<json> QueryRegistry::List(const std::string& key_id) {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::pair<int64_t, json>> out;
  for (const auto& [id, e] : entries_) {
    if (e.info.key_id != key_id) continue;
    out.push_back({e.info.started_at_ms,
                   {{"queryId", id},
                    {"connectionId", e.info.connection_id},
                    {"sql", e.info.sql},
                    {"readOnly", e.info.read_only},
                    {"state", e.running ? "running" : "open"},
                    {"startedAt", e.info.started_at_ms},
                    {"serverSessionId", e.session ? e.session->server_session_id() : 0}}});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<json> items;
  for (auto& [t, j] : out) items.push_back(std::move(j));
  return items;
}

void QueryRegistry::Tick() {
  const auto now = Clock::now();
  std::vector<std::pair<std::shared_ptr<QuerySession>, bool>> cancels;  // session, timeout
  std::vector<std::shared_ptr<QuerySession>> closes;
  std::vector<std::pair<std::string, std::function<bool()>>> checks;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      Entry& e = it->second;
      if (e.running) {
        if (!e.cancelled && now >= e.deadline) {
          e.cancelled = true;
          cancels.push_back({e.session, true});
        } else if (!e.cancelled && e.client_gone) {
          checks.push_back({it->first, e.client_gone});
        }
        ++it;
      } else if (now - e.idle_since >= cursor_idle_) {
        closes.push_back(std::move(e.session));
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // The client checks run outside the lock (they poll a socket).
  for (auto& [id, gone] : checks) {
    if (!gone()) continue;
    std::lock_guard<std::mutex> l(mu_);
    auto it = entries_.find(id);
    if (it != entries_.end() && it->second.running && !it->second.cancelled) {
      it->second.cancelled = true;
      cancels.push_back({it->second.session, false});
    }
  }
  for (auto& [s, timeout] : cancels) s->Cancel(timeout);
  for (auto& s : closes) (void)s->Close();
}

}  // namespace dbs::explorer

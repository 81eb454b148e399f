#include "api/log_hub.h"

namespace dbs::api {

using nlohmann::json;

int LogLevelNumber(const std::string& name) {
  static const char* names[] = {"trace", "debug", "info", "warn", "error"};
  for (int i = 0; i < 5; ++i) {
    if (name == names[i]) return i;
  }
  return -1;
}

bool LogFilter::Matches(const json& rec) const {
  if (!rec.is_object()) return false;
  if (min_level > 0 && LogLevelNumber(rec.value("level", "")) < min_level) return false;
  if (!stream.empty()) {
    if (!rec.contains("fields") || !rec["fields"].is_object() ||
        rec["fields"].value("stream", "") != stream) {
      return false;
    }
  }
  if (!service.empty() && rec.value("service", "") != service &&
      rec.value("serviceId", "") != service && rec.value("kind", "") != service) {
    return false;
  }
  return true;
}

void LogHub::Add(json record) {
  {
    std::lock_guard<std::mutex> l(mu_);
    ring_.emplace_back(++seq_, std::move(record));
    while (ring_.size() > capacity_) ring_.pop_front();
  }
  cv_.notify_all();
}

std::vector<json> LogHub::Wait(uint64_t after, std::chrono::milliseconds timeout, uint64_t* last) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_for(l, timeout, [&] { return closed_ || seq_ > after; });
  std::vector<json> out;
  for (const auto& [s, r] : ring_) {
    if (s > after) out.push_back(r);
  }
  if (last) *last = seq_;
  return out;
}

std::vector<json> LogHub::Recent(const LogFilter& filter, size_t limit) {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<json> out;
  for (auto it = ring_.rbegin(); it != ring_.rend() && out.size() < limit; ++it) {
    if (filter.Matches(it->second)) out.push_back(it->second);
  }
  return {out.rbegin(), out.rend()};
}

uint64_t LogHub::last_seq() {
  std::lock_guard<std::mutex> l(mu_);
  return seq_;
}

void LogHub::Close() {
  {
    std::lock_guard<std::mutex> l(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

}  // namespace dbs::api

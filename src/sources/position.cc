// CompareSourcePositions: ordering of PostgreSQL LSNs, binlog file positions and GTID sets.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <utility>

#include "sources/change_stream.h"

namespace dbs {
namespace {

bool ParseU64(std::string_view s, int base, uint64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

Result<uint64_t> ParseLsn(const std::string& v) {
  auto slash = v.find('/');
  uint64_t hi = 0, lo = 0;
  if (slash == std::string::npos || !ParseU64(std::string_view(v).substr(0, slash), 16, &hi) ||
      !ParseU64(std::string_view(v).substr(slash + 1), 16, &lo) || hi > 0xffffffffu ||
      lo > 0xffffffffu) {
    return Status::InvalidArgument("not a PostgreSQL LSN: '" + v + "' (expected like 0/16B3748)");
  }
  return (hi << 32) | lo;
}

// "binlog.000003:1234" -> (file, offset); files compare by name (same base, zero-padded).
Result<std::pair<std::string, uint64_t>> ParseFilePos(const std::string& v) {
  auto colon = v.rfind(':');
  uint64_t off = 0;
  if (colon == std::string::npos || colon == 0 ||
      !ParseU64(std::string_view(v).substr(colon + 1), 10, &off)) {
    return Status::InvalidArgument("not a binlog position: '" + v +
                                   "' (expected like binlog.000003:1234)");
  }
  return std::make_pair(v.substr(0, colon), off);
}

// A GTID set as intervals per source: MariaDB "domain-server-seq" entries (one per domain;
// the key is the domain, the set is 1..seq) or MySQL "uuid:1-5:7" entries.
using GtidSet = std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>>;

Result<GtidSet> ParseGtidSet(const std::string& v) {
  GtidSet set;
  auto bad = [&]() { return Status::InvalidArgument("not a GTID set: '" + v + "'"); };
  size_t pos = 0;
  while (pos <= v.size()) {
    size_t comma = v.find(',', pos);
    if (comma == std::string::npos) comma = v.size();
    std::string item = v.substr(pos, comma - pos);
    item.erase(std::remove_if(item.begin(), item.end(),
                              [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
               item.end());
    pos = comma + 1;
    if (item.empty()) {
      if (comma == v.size()) break;
      continue;
    }
    auto colon = item.find(':');
    if (colon == std::string::npos) {  // MariaDB domain-server-seq
      auto d1 = item.find('-');
      auto d2 = item.rfind('-');
      uint64_t seq = 0, tmp = 0;
      if (d1 == std::string::npos || d1 == d2 ||
          !ParseU64(std::string_view(item).substr(0, d1), 10, &tmp) ||
          !ParseU64(std::string_view(item).substr(d1 + 1, d2 - d1 - 1), 10, &tmp) ||
          !ParseU64(std::string_view(item).substr(d2 + 1), 10, &seq)) {
        return bad();
      }
      auto& iv = set["d" + item.substr(0, d1)];
      if (seq > 0) iv.emplace_back(1, seq);
    } else {  // MySQL uuid:a-b:c
      std::string uuid = item.substr(0, colon);
      auto& iv = set["u" + uuid];
      size_t p = colon + 1;
      while (p <= item.size()) {
        size_t next = item.find(':', p);
        if (next == std::string::npos) next = item.size();
        std::string_view range = std::string_view(item).substr(p, next - p);
        auto dash = range.find('-');
        uint64_t a = 0, b = 0;
        if (dash == std::string_view::npos) {
          if (!ParseU64(range, 10, &a)) return bad();
          b = a;
        } else if (!ParseU64(range.substr(0, dash), 10, &a) ||
                   !ParseU64(range.substr(dash + 1), 10, &b) || b < a) {
          return bad();
        }
        iv.emplace_back(a, b);
        p = next + 1;
      }
    }
  }
  for (auto& [k, iv] : set) {  // normalize: sorted, merged
    std::sort(iv.begin(), iv.end());
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (auto& r : iv) {
      if (!merged.empty() && r.first <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    iv = std::move(merged);
  }
  return set;
}

bool Contains(const GtidSet& big, const GtidSet& small) {
  for (const auto& [k, iv] : small) {
    if (iv.empty()) continue;
    auto it = big.find(k);
    if (it == big.end()) return false;
    for (const auto& r : iv) {
      bool covered = false;
      for (const auto& b : it->second) {
        if (b.first <= r.first && r.second <= b.second) covered = true;
      }
      if (!covered) return false;
    }
  }
  return true;
}

}  // namespace

Result<int> CompareSourcePositions(const SourcePosition& a, const SourcePosition& b) {
  if (a.kind != b.kind) {
    return Status::InvalidArgument("cannot compare source positions of different kinds ('" +
                                   a.value + "' and '" + b.value + "')");
  }
  switch (a.kind) {
    case SourcePosition::Kind::kNone:
      return 0;
    case SourcePosition::Kind::kPgLsn: {
      DBS_ASSIGN_OR_RETURN(uint64_t x, ParseLsn(a.value));
      DBS_ASSIGN_OR_RETURN(uint64_t y, ParseLsn(b.value));
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    case SourcePosition::Kind::kMysqlFilePos: {
      DBS_ASSIGN_OR_RETURN(auto x, ParseFilePos(a.value));
      DBS_ASSIGN_OR_RETURN(auto y, ParseFilePos(b.value));
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    case SourcePosition::Kind::kMysqlGtid: {
      DBS_ASSIGN_OR_RETURN(GtidSet x, ParseGtidSet(a.value));
      DBS_ASSIGN_OR_RETURN(GtidSet y, ParseGtidSet(b.value));
      bool x_in_y = Contains(y, x), y_in_x = Contains(x, y);
      if (x_in_y && y_in_x) return 0;
      if (x_in_y) return -1;
      if (y_in_x) return 1;
      return Status::InvalidArgument("GTID sets '" + a.value + "' and '" + b.value +
                                     "' are not ordered (neither contains the other)");
    }
  }
  return 0;
}

}  // namespace dbs

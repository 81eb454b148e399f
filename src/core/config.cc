#include "core/config.h"

#include <cstdlib>
#include <limits>

namespace dbs {

std::optional<std::string> SystemEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

namespace {

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  bool neg = false;
  size_t i = 0;
  if (s[0] == '-' || s[0] == '+') {
    neg = s[0] == '-';
    i = 1;
  }
  if (i == s.size()) return false;
  uint64_t acc = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (acc > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    acc = acc * 10 + d;
  }
  const uint64_t lim = neg ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (acc > lim) return false;
  *out = neg ? static_cast<int64_t>(0 - acc) : static_cast<int64_t>(acc);
  return true;
}

// Splits "123abc" into number 123 and unit "abc".
bool SplitUnit(std::string_view text, uint64_t* num, std::string_view* unit) {
  size_t i = 0;
  uint64_t acc = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (acc > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    acc = acc * 10 + d;
    ++i;
  }
  if (i == 0) return false;
  *num = acc;
  *unit = text.substr(i);
  return true;
}

}  // namespace

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  uint64_t n;
  std::string_view unit;
  auto bad = [&] {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a duration (use e.g. 250ms, 5s, 2m, 1h)");
  };
  if (!SplitUnit(text, &n, &unit)) return bad();
  uint64_t mult;
  if (unit == "ms") {
    mult = 1;
  } else if (unit == "s" || unit.empty()) {
    mult = 1000;
  } else if (unit == "m") {
    mult = 60'000;
  } else if (unit == "h") {
    mult = 3'600'000;
  } else {
    return bad();
  }
  if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / mult) return bad();
  return std::chrono::milliseconds(static_cast<int64_t>(n * mult));
}

Result<uint64_t> ParseBytes(std::string_view text) {
  uint64_t n;
  std::string_view unit;
  auto bad = [&] {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a size (use e.g. 1048576, 512KiB, 8MiB, 1GB)");
  };
  if (!SplitUnit(text, &n, &unit)) return bad();
  uint64_t mult;
  if (unit.empty() || unit == "B") {
    mult = 1;
  } else if (unit == "KB") {
    mult = 1000;
  } else if (unit == "MB") {
    mult = 1000'000;
  } else if (unit == "GB") {
    mult = 1000'000'000;
  } else if (unit == "KiB") {
    mult = 1024;
  } else if (unit == "MiB") {
    mult = 1024 * 1024;
  } else if (unit == "GiB") {
    mult = 1024ull * 1024 * 1024;
  } else {
    return bad();
  }
  if (n > std::numeric_limits<uint64_t>::max() / mult) return bad();
  return n * mult;
}

Result<Config> Config::Load(const std::vector<FlagSpec>& specs, int argc, const char* const* argv,
                            const EnvLookup& env) {
  Config c;
  std::map<std::string, const FlagSpec*> by_name;
  for (const FlagSpec& s : specs) {
    by_name[s.name] = &s;
    if (!s.env.empty()) {
      if (auto v = env(s.env)) {
        c.values_[s.name] = {*v, "env " + s.env};
        continue;
      }
    }
    c.values_[s.name] = {s.default_value, "default"};
  }
  bool flags_done = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (flags_done || arg.size() < 2 || arg.substr(0, 2) != "--") {
      c.positional_.emplace_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    std::string_view body = arg.substr(2);
    size_t eq = body.find('=');
    std::string name(body.substr(0, eq));
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      return Status::InvalidArgument("unknown flag --" + name + "\n" + Usage(specs));
    }
    std::string value;
    if (eq != std::string_view::npos) {
      value = std::string(body.substr(eq + 1));
    } else if (it->second->is_bool) {
      value = "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Status::InvalidArgument("flag --" + name + " needs a value");
    }
    c.values_[name] = {std::move(value), "flag --" + name};
  }
  return c;
}

const std::string& Config::GetString(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) std::abort();  // undeclared flag: a bug in the caller
  return it->second.value;
}

std::string Config::Source(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? "unknown" : it->second.source;
}

Status Config::Bad(const std::string& name, const std::string& what) const {
  return Status::InvalidArgument("invalid value '" + GetString(name) + "' for " + name + " (from " +
                                 Source(name) + "): " + what);
}

Result<int64_t> Config::GetInt(const std::string& name, int64_t min, int64_t max) const {
  int64_t v;
  if (!ParseInt64(GetString(name), &v)) return Bad(name, "expected an integer");
  if (v < min || v > max) {
    return Bad(name, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  }
  return v;
}

Result<bool> Config::GetBool(const std::string& name) const {
  const std::string& v = GetString(name);
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off" || v.empty()) return false;
  return Bad(name, "expected true or false");
}

Result<std::chrono::milliseconds> Config::GetDuration(const std::string& name) const {
  auto r = ParseDuration(GetString(name));
  if (!r.ok()) return Bad(name, r.status().message());
  return r;
}

Result<uint64_t> Config::GetBytes(const std::string& name) const {
  auto r = ParseBytes(GetString(name));
  if (!r.ok()) return Bad(name, r.status().message());
  return r;
}

std::string Config::Usage(const std::vector<FlagSpec>& specs) {
  std::string out = "flags:\n";
  for (const FlagSpec& s : specs) {
    out += "  --" + s.name;
    if (!s.is_bool) out += "=VALUE";
    if (!s.env.empty()) out += "  (env " + s.env + ")";
    out += "\n      " + s.help;
    if (!s.default_value.empty()) out += " [default: " + s.default_value + "]";
    out += "\n";
  }
  return out;
}

}  // namespace dbs

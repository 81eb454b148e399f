// Service configuration from command-line flags and environment variables.
//
// Precedence: a flag on the command line, then its environment variable, then the default.
// Flags: "--name=value", "--name value", and "--name" alone for boolean flags. Anything not
// starting with "--" is positional. "--" ends flag parsing.
// Unknown flags and malformed values are InvalidArgument errors naming the flag and the env
// variable, so the operator can fix them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace dbs {

struct FlagSpec {
  std::string name;           // "nats-url" (without dashes)
  std::string env;            // "NATS_URL"; empty for flag-only
  std::string default_value;  // used when neither flag nor env is set
  std::string help;
  bool is_bool = false;
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
// Reads the process environment.
std::optional<std::string> SystemEnv(const std::string& name);

class Config {
 public:
  static Result<Config> Load(const std::vector<FlagSpec>& specs, int argc, const char* const* argv,
                             const EnvLookup& env = SystemEnv);

  // The raw text of a declared flag (after precedence). Undeclared names are a bug: abort.
  const std::string& GetString(const std::string& name) const;
  Result<int64_t> GetInt(const std::string& name, int64_t min, int64_t max) const;
  Result<bool> GetBool(const std::string& name) const;
  // "250ms", "5s", "2m", "1h", or a bare number of seconds.
  Result<std::chrono::milliseconds> GetDuration(const std::string& name) const;
  // "1048576", "512KiB", "8MiB", "1GB" (powers of 1000 for KB/MB/GB, 1024 for KiB/MiB/GiB).
  Result<uint64_t> GetBytes(const std::string& name) const;
  // Where a value came from: "flag --x", "env X" or "default", for error messages.
  std::string Source(const std::string& name) const;

  const std::vector<std::string>& positional() const { return positional_; }

  static std::string Usage(const std::vector<FlagSpec>& specs);

 private:
  struct Entry {
    std::string value;
    std::string source;
  };
  Status Bad(const std::string& name, const std::string& what) const;
  std::map<std::string, Entry> values_;
  std::vector<std::string> positional_;
};

Result<std::chrono::milliseconds> ParseDuration(std::string_view text);
Result<uint64_t> ParseBytes(std::string_view text);

}  // namespace dbs

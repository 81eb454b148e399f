#include "core/logging.h"

#include <sys/time.h>

#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

namespace dbs {

std::string_view LogLevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kTrace:
      return "trace";
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

Result<LogLevel> LogLevelFromName(std::string_view name) {
  for (auto l :
       {LogLevel::kTrace, LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (LogLevelName(l) == name) return l;
  }
  if (name == "warning") return LogLevel::kWarn;
  return Status::InvalidArgument("unknown log level '" + std::string(name) +
                                 "' (expected trace, debug, info, warn or error)");
}

namespace {

std::string FormatTime(int64_t unix_micros, int digits) {
  time_t secs = static_cast<time_t>(unix_micros / 1000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  long frac = static_cast<long>(unix_micros % 1000000);
  if (digits == 3) {
    std::snprintf(buf + n, sizeof buf - n, ".%03ldZ", frac / 1000);
  } else {
    std::snprintf(buf + n, sizeof buf - n, ".%06ldZ", frac);
  }
  return buf;
}

int64_t NowMicros() {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  return int64_t{tv.tv_sec} * 1000000 + tv.tv_usec;
}

}  // namespace

std::string LogRecordToJson(const LogRecord& r) {
  nlohmann::ordered_json j;
  j["ts"] = FormatTime(r.unix_micros, 6);
  j["level"] = LogLevelName(r.level);
  j["service"] = r.service;
  j["component"] = r.component;
  j["msg"] = r.message;
  if (!r.fields.empty()) {
    nlohmann::ordered_json f;
    for (const LogField& x : r.fields) f[x.key] = x.value;
    j["fields"] = std::move(f);
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// Appends `s` to `out` with every control character (and, inside quotes, '"' and '\\')
// escaped, so a value can neither start a new line nor write raw bytes such as NUL: a text
// log line is one record whatever the values hold.
void AppendEscaped(std::string* out, std::string_view s, bool quoted) {
  static const char* hex = "0123456789abcdef";
  for (unsigned char c : s) {
    switch (c) {
      case '\n':
        *out += "\\n";
        continue;
      case '\r':
        *out += "\\r";
        continue;
      case '\t':
        *out += "\\t";
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7f) {
      *out += "\\x";
      *out += hex[c >> 4];
      *out += hex[c & 15];
    } else if (quoted && (c == '"' || c == '\\')) {
      *out += '\\';
      *out += static_cast<char>(c);
    } else {
      *out += static_cast<char>(c);
    }
  }
}

bool NeedsQuotes(std::string_view v) {
  if (v.empty()) return true;
  for (unsigned char c : v) {
    if (c <= 0x20 || c == 0x7f || c == '"' || c == '=' || c == '\\') return true;
  }
  return false;
}

}  // namespace

std::string LogRecordToText(const LogRecord& r) {
  std::string out = FormatTime(r.unix_micros, 3);
  char lvl[8];
  std::snprintf(lvl, sizeof lvl, " %-5s", std::string(LogLevelName(r.level)).c_str());
  out += lvl;
  out += " [";
  AppendEscaped(&out, r.component, false);
  out += "] ";
  AppendEscaped(&out, r.message, false);
  for (const LogField& f : r.fields) {
    out += ' ';
    AppendEscaped(&out, f.key, false);
    out += '=';
    const bool quote = NeedsQuotes(f.value);
    if (quote) out += '"';
    AppendEscaped(&out, f.value, quote);
    if (quote) out += '"';
  }
  return out;
}

void StderrSink::Write(const LogRecord& r) {
  std::string line = json_ ? LogRecordToJson(r) : LogRecordToText(r);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

Logger::Logger() { sinks_.push_back(std::make_unique<StderrSink>(false)); }

Logger& Logger::Global() {
  static Logger* logger = new Logger();  // never destroyed: usable during static teardown
  return *logger;
}

void Logger::SetService(std::string service) {
  std::lock_guard<std::mutex> lock(mu_);
  service_ = std::move(service);
}

LogSink* Logger::AddSink(std::unique_ptr<LogSink> sink) {
  std::lock_guard<std::mutex> lock(mu_);
  sinks_.push_back(std::move(sink));
  return sinks_.back().get();
}

void Logger::RemoveSink(LogSink* sink) {
  std::unique_ptr<LogSink> doomed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = sinks_.begin(); it != sinks_.end(); ++it) {
      if (it->get() == sink) {
        doomed = std::move(*it);
        sinks_.erase(it);
        break;
      }
    }
  }
}

void Logger::Log(LogLevel level, std::string_view component, std::string message,
                 std::vector<LogField> fields) {
  if (!Enabled(level)) return;
  LogRecord r;
  r.unix_micros = NowMicros();
  r.level = level;
  r.component = std::string(component);
  r.message = std::move(message);
  r.fields = std::move(fields);
  std::lock_guard<std::mutex> lock(mu_);
  r.service = service_;
  for (auto& s : sinks_) s->Write(r);
}

std::string RedactUrl(std::string_view url) {
  std::string out(url);
  // userinfo password: scheme://user:pass@host
  size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    size_t start = scheme + 3;
    size_t at = out.find('@', start);
    size_t slash = out.find('/', start);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) {
        out.replace(colon + 1, at - colon - 1, "***");
      }
    }
  }
  // password=... in query strings or keyword/value connection strings.
  for (std::string key : {"password=", "sslpassword=", "secret_key=", "secretKey="}) {
    size_t pos = 0;
    while ((pos = out.find(key, pos)) != std::string::npos) {
      size_t v = pos + key.size();
      size_t end = out.find_first_of("& ", v);
      if (end == std::string::npos) end = out.size();
      out.replace(v, end - v, "***");
      pos = v + 3;
    }
  }
  return out;
}

}  // namespace dbs

// Structured logging: levels, a component, a message and key/value fields.
//
// Contract:
//  - Log() is thread-safe. Records go to every registered sink, one record at a time (sinks
//    are called under the logger's lock and need no locking of their own; they must not log).
//  - Messages and fields must never carry secrets: use RedactUrl() for connection strings.
//  - The API's log stream (SSE) and the NATS log publisher are sinks too.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/result.h"

namespace dbs {

enum class LogLevel : uint8_t { kTrace = 0, kDebug, kInfo, kWarn, kError };

std::string_view LogLevelName(LogLevel l);
Result<LogLevel> LogLevelFromName(std::string_view name);

struct LogField {
  std::string key;
  std::string value;
};

template <typename T>
LogField F(std::string key, const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return {std::move(key), v ? "true" : "false"};
  } else if constexpr (std::is_arithmetic_v<T>) {
    return {std::move(key), std::to_string(v)};
  } else {
    return {std::move(key), std::string(v)};
  }
}

struct LogRecord {
  int64_t unix_micros = 0;
  LogLevel level = LogLevel::kInfo;
  std::string service;    // "stream-reader", "stream-writer", "stream-api", "dbstreams"
  std::string component;  // subsystem: "bus", "mysql", "load", ...
  std::string message;
  std::vector<LogField> fields;
};

// One JSON object per record: {"ts":"2026-11-30T06:00:00.123456Z","level":"info",...}.
std::string LogRecordToJson(const LogRecord& r);
// "2026-11-30T06:00:00.123Z INFO  [bus] connected url=nats://127.0.0.1:4222". One line per
// record: control characters anywhere (message, component, field values) are escaped as \n,
// \r, \t or \xNN, and quoted values escape '"' and '\', so untrusted text (a connection
// name, a source error) cannot forge a line or write raw bytes.
std::string LogRecordToText(const LogRecord& r);

class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void Write(const LogRecord& record) = 0;
};

// Writes to stderr as text or JSON lines.
class StderrSink : public LogSink {
 public:
  explicit StderrSink(bool json) : json_(json) {}
  void Write(const LogRecord& record) override;

 private:
  bool json_;
};

class Logger {
 public:
  static Logger& Global();

  void SetLevel(LogLevel l) { level_.store(l, std::memory_order_relaxed); }
  LogLevel level() const { return level_.load(std::memory_order_relaxed); }
  bool Enabled(LogLevel l) const { return l >= level(); }
  void SetService(std::string service);

  // Takes ownership; returns the sink pointer as a handle for RemoveSink.
  LogSink* AddSink(std::unique_ptr<LogSink> sink);
  // Destroys the sink.
  void RemoveSink(LogSink* sink);

  void Log(LogLevel level, std::string_view component, std::string message,
           std::vector<LogField> fields = {});

 private:
  Logger();
  std::atomic<LogLevel> level_{LogLevel::kInfo};
  std::mutex mu_;
  std::string service_ = "dbstreams";
  std::vector<std::unique_ptr<LogSink>> sinks_;
};

inline void Log(LogLevel level, std::string_view component, std::string message,
                std::vector<LogField> fields = {}) {
  Logger& l = Logger::Global();
  if (l.Enabled(level)) l.Log(level, component, std::move(message), std::move(fields));
}

// "postgres://user:secret@host/db" -> "postgres://user:***@host/db"; also hides the value of
// password=... keywords and query parameters.
std::string RedactUrl(std::string_view url);

}  // namespace dbs

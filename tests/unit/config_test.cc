#include "core/config.h"

#include <gtest/gtest.h>

#include <map>

#include "core/logging.h"

namespace dbs {
namespace {

std::vector<FlagSpec> Specs() {
  return {{"nats-url", "NATS_URL", "nats://127.0.0.1:4222", "NATS server"},
          {"bundle-size", "DBS_BUNDLE_SIZE", "100", "rows per bundle"},
          {"verbose", "", "false", "more logs", true},
          {"idle", "", "5s", "idle timeout"},
          {"max-payload", "", "1MiB", "payload limit"}};
}

EnvLookup Env(std::map<std::string, std::string> m) {
  return [m](const std::string& k) -> std::optional<std::string> {
    auto it = m.find(k);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Config, FlagsBeatEnvBeatDefaults) {
  const char* argv[] = {"x", "--bundle-size=500", "run", "--verbose", "--idle", "250ms", "file"};
  auto c =
      Config::Load(Specs(), 7, argv, Env({{"NATS_URL", "nats://n:1"}, {"DBS_BUNDLE_SIZE", "7"}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->GetString("nats-url"), "nats://n:1");
  EXPECT_EQ(*c->GetInt("bundle-size", 1, 100000), 500);
  EXPECT_TRUE(*c->GetBool("verbose"));
  EXPECT_EQ(c->GetDuration("idle")->count(), 250);
  EXPECT_EQ(*c->GetBytes("max-payload"), 1048576u);
  EXPECT_EQ(c->positional(), (std::vector<std::string>{"run", "file"}));
}

TEST(Config, ErrorsAreActionable) {
  const char* argv[] = {"x", "--bundel-size=5"};
  auto c = Config::Load(Specs(), 2, argv, Env({}));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unknown flag --bundel-size"), std::string::npos);

  const char* argv2[] = {"x"};
  auto d = Config::Load(Specs(), 1, argv2, Env({{"DBS_BUNDLE_SIZE", "lots"}}));
  ASSERT_TRUE(d.ok());
  auto n = d->GetInt("bundle-size", 1, 1000);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().message(),
            "invalid value 'lots' for bundle-size (from env DBS_BUNDLE_SIZE): expected an integer");
  EXPECT_FALSE(ParseDuration("5 parsecs").ok());
  EXPECT_FALSE(ParseBytes("99999999999999999999GiB").ok());
}

class CaptureSink : public LogSink {
 public:
  explicit CaptureSink(std::vector<LogRecord>* out) : out_(out) {}
  void Write(const LogRecord& r) override { out_->push_back(r); }

 private:
  std::vector<LogRecord>* out_;
};

TEST(Logging, StructuredRecordsReachSinks) {
  std::vector<LogRecord> got;
  Logger& l = Logger::Global();
  LogSink* sink = l.AddSink(std::make_unique<CaptureSink>(&got));
  Log(LogLevel::kInfo, "bus", "connected", {F("url", "nats://h:4222"), F("rows", 42)});
  Log(LogLevel::kTrace, "bus", "hidden");  // below the default level
  l.RemoveSink(sink);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].component, "bus");
  EXPECT_EQ(got[0].fields[1].value, "42");
  std::string json = LogRecordToJson(got[0]);
  EXPECT_NE(json.find("\"msg\":\"connected\""), std::string::npos);
  EXPECT_NE(LogRecordToText(got[0]).find("[bus] connected url=nats://h:4222 rows=42"),
            std::string::npos);
}

TEST(Logging, SecretsAreRedacted) {
  EXPECT_EQ(RedactUrl("postgres://app:s3cret@db:5432/x?sslmode=require"),
            "postgres://app:***@db:5432/x?sslmode=require");
  EXPECT_EQ(RedactUrl("host=db user=app password=s3cret dbname=x"),
            "host=db user=app password=*** dbname=x");
  EXPECT_EQ(RedactUrl("mysql://root@db/x"), "mysql://root@db/x");
}

}  // namespace
}  // namespace dbs

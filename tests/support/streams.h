// Small helpers of the end-to-end tests (header-only: the binaries that use them link the
// config and run libraries already): fresh databases on the shared servers, and stream configs.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/stream_config.h"
#include "core/subprocess.h"
#include "run/local_run.h"
#include "support/servers.h"
#include "verify/checksum.h"

namespace dbs::testing {

// Drops and creates MariaDB database `name` (utf8mb4_bin); returns its URL.
inline std::string FreshMariaDb(MariaDbServer* m, const std::string& name) {
  EXPECT_TRUE(m->Exec("DROP DATABASE IF EXISTS `" + name + "`; CREATE DATABASE `" + name +
                      "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
                  .ok());
  return m->url() + name;
}

// Drops (with FORCE) and creates PostgreSQL database `name`; returns its URL.
inline std::string FreshPostgres(PostgresServer* p, const std::string& name) {
  EXPECT_TRUE(p->Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)").ok());
  EXPECT_TRUE(p->CreateDatabase(name).ok());
  return p->UrlFor(name);
}

// The stream {name, source, target} plus `extra` fields, parsed (a parse error fails the test).
inline StreamConfig MakeStreamConfig(const std::string& name, const nlohmann::json& src,
                                     const nlohmann::json& dst,
                                     const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json j = {{"name", name}, {"source", src}, {"target", dst}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  auto c = ParseStreamConfig(j);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : StreamConfig{};
}

// A binary of this build (stream-reader, stream-writer, ...) with arguments, extra environment
// entries, and its output in `log`. Killed with SIGKILL (Kill, no wait) or ended by its
// ChildProcess's destructor.
class BinaryProc {
 public:
  BinaryProc(const std::string& bin, std::vector<std::string> args, const std::string& log,
             std::vector<std::string> env = {}) {
    SpawnOptions o;
    o.argv = {bin};
    for (auto& a : args) o.argv.push_back(std::move(a));
    o.env = std::move(env);
    o.output_file = log;
    auto c = ChildProcess::Spawn(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (c.ok()) child_ = std::move(c).value();
  }
  // The exit status, or -1 when it did not start or is still running after `timeout`.
  int Wait(std::chrono::seconds timeout) {
    if (!child_) return -1;
    auto r = child_->Wait(timeout);
    return r.ok() ? *r : -1;
  }
  void Kill() {
    if (child_) ::kill(child_->pid(), SIGKILL);
  }
  ChildProcess* child() { return child_.get(); }

 private:
  std::unique_ptr<ChildProcess> child_;
};

// Runs `c` locally (embedded nats-server storing under data_dir) with `writers` writers.
inline Result<RunSummary> RunStream(const StreamConfig& c, int writers,
                                    const std::string& data_dir) {
  LocalRunOptions o;
  o.writers = writers;
  o.data_dir = data_dir;
  return RunLocal(c, o, nullptr);
}

// Runs `c`; the run must succeed and its own verification (source vs. target) must match.
inline void RunAndExpectVerified(const StreamConfig& c, int writers, const std::string& data_dir) {
  auto s = RunStream(c, writers, data_dir);
  ASSERT_TRUE(s.ok()) << c.name << ": " << s.status().ToString();
  ASSERT_FALSE(s->verdicts.empty());
  for (const TableVerdict& v : s->verdicts) {
    EXPECT_TRUE(v.match()) << c.name << ": " << v.Describe();
  }
}

// The checksums of `src` and `dst` (any engines), table by table, must be equal.
inline void ExpectSameChecksums(const nlohmann::json& src, const nlohmann::json& dst,
                                const nlohmann::json& tables,
                                const std::string& target_schema = "") {
  nlohmann::json extra = {{"tables", tables}};
  if (!target_schema.empty()) extra["targetSchema"] = target_schema;
  auto v = VerifyStream(MakeStreamConfig("compare", src, dst, extra));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_FALSE(v->empty());
  for (const TableVerdict& t : *v) EXPECT_TRUE(t.match()) << t.Describe();
}

}  // namespace dbs::testing

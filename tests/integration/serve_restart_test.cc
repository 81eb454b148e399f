// A failed run through the API never becomes "completed" with wrong data (issue 11 §3): the
// whole `dbstreams serve` (API, reader, writer and its embedded nats-server) is SIGKILLed in the
// middle of a load, started again on the same data folder, and the stream started again. The
// interrupted run ends failed, with a reason; the new one completes verified, and the target
// holds every source row once, with its primary key.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/servers.h"
#include "support/subprocess.h"

namespace dbs {
namespace {

using nlohmann::json;
using testing::SharedServers;
namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// One `dbstreams serve` process on a data folder.
class Serve {
 public:
  Serve(std::string root, std::string log) : root_(std::move(root)), log_(std::move(log)) {}
  ~Serve() {
    if (pid_ > 0) testing::TerminateChild(pid_, SIGTERM, std::chrono::seconds(20));
  }
  // Starts and waits for the API's address (and the first key, printed on the first start).
  void Start() {
    testing::SpawnSpec spec;
    spec.argv = {
        DBS_DBSTREAMS_BIN, "serve", "--data-dir",        root_ + "/data",      "--port", "0",
        "--nats-port",     "0",     "--master-key-file", root_ + "/master.key"};
    spec.log_path = log_;
    spec.death_signal = SIGKILL;
    auto pid = testing::Spawn(spec);
    ASSERT_TRUE(pid.ok()) << pid.status().ToString();
    pid_ = *pid;
    url_.clear();
    for (int i = 0; i < 300 && url_.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const std::string all = ReadAll(log_);
      if (key_.empty()) {
        std::smatch k;
        if (std::regex_search(all, k, std::regex("keep it\\): ([A-Za-z0-9_]+)"))) key_ = k[1];
      }
      const std::string out = all.substr(std::min(all.size(), log_seen_));
      std::regex api("API: +(http://[^ \\n]+)/api/v1");
      for (auto it = std::sregex_iterator(out.begin(), out.end(), api);
           it != std::sregex_iterator(); ++it) {
        url_ = (*it)[1];  // the newest start's
      }
    }
    log_seen_ = ReadAll(log_).size();
    ASSERT_FALSE(url_.empty()) << ReadAll(log_);
    ASSERT_FALSE(key_.empty()) << ReadAll(log_);
  }
  // SIGKILL of serve and everything it started (its nats-server dies with it).
  void Kill() {
    testing::KillProcessTree(pid_);
    int status = 0;
    for (int i = 0; i < 100 && !testing::TryReap(pid_, &status); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    pid_ = -1;
  }
  std::pair<int, json> Call(const std::string& method, const std::string& path,
                            const json& body = json::object()) {
    httplib::Client c(url_);
    c.set_read_timeout(60, 0);
    httplib::Headers h = {{"X-API-Key", key_}};
    auto r = method == "GET" ? c.Get(path.c_str(), h)
                             : c.Post(path.c_str(), h, body.dump(), "application/json");
    if (!r) return {-1, json::object()};
    json j = json::parse(r->body, nullptr, false);
    return {r->status, j.is_object() ? j : json::object()};
  }

 private:
  std::string root_, log_, url_, key_;
  size_t log_seen_ = 0;  // what earlier starts wrote to the log
  pid_t pid_ = -1;
};

TEST(ServeRestart, KilledMidLoadThenStartedAgainEndsExactOrFailed) {
  auto maria = SharedServers::MariaDb();
  ASSERT_TRUE(maria.ok()) << maria.status().ToString();
  auto pg = SharedServers::Postgres();
  ASSERT_TRUE(pg.ok()) << pg.status().ToString();
  const int kRows = 300000;
  ASSERT_TRUE((*maria)
                  ->Exec("DROP DATABASE IF EXISTS restart_src; CREATE DATABASE restart_src "
                         "CHARACTER SET utf8mb4")
                  .ok());
  ASSERT_TRUE((*maria)
                  ->Exec("CREATE TABLE t (id int PRIMARY KEY, v varchar(64), d datetime(6)); "
                         "INSERT INTO t SELECT seq, md5(seq), '2024-01-01' + INTERVAL seq SECOND "
                         "FROM seq_1_to_" +
                             std::to_string(kRows),
                         "restart_src")
                  .ok());
  ASSERT_TRUE((*pg)->Exec("DROP DATABASE IF EXISTS restart_dst WITH (FORCE)").ok());
  ASSERT_TRUE((*pg)->CreateDatabase("restart_dst").ok());

  const std::string root = "/tmp/dbstreams-test/restart-" + std::to_string(getpid());
  fs::remove_all(root);
  fs::create_directories(root);
  Serve serve(root, root + "/serve.log");
  ASSERT_NO_FATAL_FAILURE(serve.Start());

  auto src = serve.Call("POST", "/api/v1/connections",
                        {{"name", "src"}, {"url", (*maria)->url() + "restart_src"}});
  ASSERT_EQ(src.first, 201) << src.second.dump();
  auto dst = serve.Call("POST", "/api/v1/connections",
                        {{"name", "dst"},
                         {"engine", "postgres"},
                         {"host", "127.0.0.1"},
                         {"port", (*pg)->port()},
                         {"user", (*pg)->user()},
                         {"password", (*pg)->password()},
                         {"database", "restart_dst"}});
  ASSERT_EQ(dst.first, 201) << dst.second.dump();
  auto stream = serve.Call("POST", "/api/v1/streams",
                           {{"name", "restart-load"},
                            {"source", {{"connection", src.second["id"]}}},
                            {"target", {{"connection", dst.second["id"]}}},
                            {"targetSchema", "public"},
                            // Small bundles: the load lasts long enough to be killed midway.
                            {"dataBundleSize", 1000}});
  ASSERT_EQ(stream.first, 201) << stream.second.dump();
  const std::string sid = stream.second["id"];
  auto start = [&]() {
    std::pair<int, json> run;
    for (int i = 0; i < 100; ++i) {  // services announce themselves within a heartbeat or two
      run = serve.Call("POST", "/api/v1/streams/" + sid + "/start");
      if (run.first != 503 && run.first != 409) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_EQ(run.first, 202) << run.second.dump();
    return run.second.value("id", "");
  };
  const std::string first = start();
  ASSERT_FALSE(first.empty());
  // Kill everything once rows are being written (before the load is complete).
  // A deadline, not a count of polls: on a busy machine the first bundles take a while.
  bool writing = false;
  json seen;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  while (!writing && std::chrono::steady_clock::now() < until) {
    auto r = serve.Call("GET", "/api/v1/runs/" + first);
    seen = r.second;
    const std::string st = seen.value("state", "");
    ASSERT_NE(st, "completed") << "the load finished before the kill";
    ASSERT_NE(st, "failed") << seen.dump();
    for (const json& t : seen.value("tables", json::array())) {
      writing = writing || t.value("rowsWritten", 0) > 0;
    }
    if (!writing) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(writing) << "no rows written yet: " << seen.dump();
  serve.Kill();

  ASSERT_NO_FATAL_FAILURE(serve.Start());
  // The interrupted run ends failed (its services are gone), with a reason.
  std::string state;
  json rec;
  for (int i = 0; i < 300; ++i) {
    auto r = serve.Call("GET", "/api/v1/runs/" + first);
    rec = r.second;
    state = rec.value("state", "");
    if (state == "failed" || state == "completed" || state == "stopped") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(state, "failed") << rec.dump();
  EXPECT_FALSE(rec.value("error", "").empty()) << rec.dump();

  // Started again: completed, verified, exact.
  const std::string second = start();
  ASSERT_FALSE(second.empty());
  for (int i = 0; i < 1200; ++i) {
    auto r = serve.Call("GET", "/api/v1/runs/" + second);
    rec = r.second;
    state = rec.value("state", "");
    if (state == "failed" || state == "completed" || state == "stopped") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(state, "completed") << rec.dump();
  ASSERT_TRUE(rec.contains("verification")) << rec.dump();
  EXPECT_EQ(rec["verification"].value("ok", false), true) << rec.dump();
  auto rows = (*pg)->Query("SELECT count(*), count(DISTINCT id) FROM public.t", "restart_dst");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ((*rows)[0][0].value_or(""), std::to_string(kRows));
  EXPECT_EQ((*rows)[0][1].value_or(""), std::to_string(kRows));
  auto key = (*pg)->Query(
      "SELECT count(*) FROM pg_constraint WHERE conrelid = 'public.t'::regclass AND contype = 'p'",
      "restart_dst");
  ASSERT_TRUE(key.ok());
  EXPECT_EQ((*key)[0][0].value_or(""), "1");
  // Nothing of the interrupted run is left in the target.
  auto left = (*pg)->Query(
      "SELECT count(*) FROM pg_namespace WHERE nspname LIKE '\\_dbs\\_shadow\\_%'", "restart_dst");
  ASSERT_TRUE(left.ok());
  EXPECT_EQ((*left)[0][0].value_or(""), "0");
  fs::remove_all(root);
}

}  // namespace
}  // namespace dbs

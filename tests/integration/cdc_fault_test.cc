// CDC fault tests (labels "cdc", "fault"): a PostgreSQL -> PostgreSQL and a MariaDB ->
// PostgreSQL load+cdc stream run as separate stream-reader and stream-writer processes while a
// workload changes the source; the writer is SIGKILLed, then the reader, then the source database
// and nats-server are restarted. A supervisor restarts a process that exits (as systemd or
// Kubernetes would). At the end the reader drains and the target must equal the source by
// checksum: nothing lost, nothing doubled. A drained change stream started again, writer first,
// goes on in the same run.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/stream_config.h"
#include "core/subprocess.h"
#include "support/servers.h"
#include "verify/checksum.h"

namespace dbs {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A service process that the test can kill; Supervise() restarts it when it died.
class Service {
 public:
  Service(std::string bin, std::vector<std::string> args, std::string log)
      : bin_(std::move(bin)), args_(std::move(args)), log_(std::move(log)) {
    Start();
  }
  void Start() {
    SpawnOptions o;
    o.argv = {bin_};
    for (const auto& a : args_) o.argv.push_back(a);
    o.output_file = log_ + "." + std::to_string(starts_++);
    auto c = ChildProcess::Spawn(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    child_ = std::move(c).value();
  }
  void Kill() {
    ::kill(child_->pid(), SIGKILL);
    (void)child_->Wait(10s);
  }
  // Restarts the process if it exited; returns true when it did.
  bool Supervise() {
    if (child_->Running()) return false;
    Start();
    return true;
  }
  void Signal(int sig) { ::kill(child_->pid(), sig); }
  int Wait(std::chrono::seconds t) {
    auto r = child_->Wait(t);
    return r.ok() ? *r : -1;
  }
  std::string Logs() const {
    std::string all;
    for (int i = 0; i < starts_; ++i) {
      all +=
          "--- " + log_ + "." + std::to_string(i) + "\n" + ReadFile(log_ + "." + std::to_string(i));
    }
    return all;
  }
  int starts() const { return starts_; }

 private:
  std::string bin_;
  std::vector<std::string> args_;
  std::string log_;
  int starts_ = 0;
  std::unique_ptr<ChildProcess> child_;
};

class CdcFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_dir_ = std::filesystem::temp_directory_path() /
                ("dbstreams-cdc-fault-" + std::to_string(getpid()));
    std::filesystem::create_directories(data_dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(data_dir_, ec);
  }
  std::filesystem::path data_dir_;
};

// Runs a workload that tolerates the source going away: a failed statement is skipped.
class Workload {
 public:
  Workload(std::function<Status(const std::string&)> exec, bool pg)
      : exec_(std::move(exec)), pg_(pg) {}
  void Start() {
    thread_ = std::thread([this] { Loop(); });
  }
  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  uint64_t committed() const { return committed_.load(); }

 private:
  void Loop() {
    std::mt19937 rng(7);
    int64_t next = 1000;
    while (!stop_.load()) {
      std::string sql = pg_ ? "BEGIN;" : "START TRANSACTION;";
      for (int s = 0; s < 5; ++s) {
        int r = static_cast<int>(rng() % 10);
        int64_t id = 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(next));
        if (r < 2) {
          sql += "INSERT INTO events (id, k, note) VALUES (" + std::to_string(next++) + ", " +
                 std::to_string(rng() % 100) + ", 'n\\nq''" + std::to_string(rng()) + "');";
        } else if (r < 8) {
          sql += "UPDATE events SET k = k + 1, note = 'u" + std::to_string(rng()) +
                 "' WHERE id = " + std::to_string(id) + ";";
        } else {
          sql += "DELETE FROM events WHERE id = " + std::to_string(id) + ";";
        }
      }
      sql += "COMMIT;";
      if (exec_(sql).ok()) {
        committed_.fetch_add(1);
      } else {
        std::this_thread::sleep_for(100ms);  // the source restarts
      }
      std::this_thread::sleep_for(2ms);
    }
  }
  std::function<Status(const std::string&)> exec_;
  bool pg_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> committed_{0};
  std::thread thread_;
};

// Compares the stream's source and target (row counts and checksums of every table); `logs`
// are shown with a table that differs.
void ExpectTargetEqualsSource(const json& stream, const std::string& logs) {
  auto c = ParseStreamConfig(stream);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto v = VerifyStream(*c);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  for (const auto& t : *v) {
    EXPECT_TRUE(t.match()) << t.source_table << ": rows " << t.source.rows << " vs "
                           << t.target.rows << "\n"
                           << logs;
  }
}

void RunFaults(const std::filesystem::path& dir, const std::string& name, const std::string& src,
               const std::string& dst, std::function<Status(const std::string&)> exec, bool pg,
               std::function<Status()> restart_source,
               std::function<Result<int64_t>()> target_rows) {
  auto nats = testing::NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status().ToString();
  json j = {{"name", name},
            {"mode", "load+cdc"},
            {"source", src},
            {"target", dst},
            {"schemaPolicy", "drop_and_recreate"},
            {"cdc", {{"batchChanges", 200}}}};
  std::string cfg = (dir / (name + ".json")).string();
  std::ofstream(cfg) << j.dump(2);
  std::string url = (*nats)->url();
  std::string logs = (dir / name).string();
  Service writer(DBS_WRITER_BIN, {"--nats-url", url, "--ack-wait-ms", "3000", cfg},
                 logs + "-writer.log");
  Service reader(DBS_READER_BIN, {"--nats-url", url, cfg}, logs + "-reader.log");
  Workload load(exec, pg);
  load.Start();
  auto supervise_for = [&](std::chrono::milliseconds d) {
    auto end = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < end) {
      writer.Supervise();
      reader.Supervise();
      std::this_thread::sleep_for(200ms);
    }
  };
  // Wait for the load phase to land on the target.
  for (int i = 0; i < 600; ++i) {
    auto n = target_rows();
    if (n.ok() && *n > 0) break;
    supervise_for(100ms);
  }
  supervise_for(2s);
  writer.Kill();
  supervise_for(3s);
  reader.Kill();
  supervise_for(3s);
  Status restarted = restart_source();
  ASSERT_TRUE(restarted.ok()) << restarted.ToString();
  supervise_for(3s);
  ASSERT_TRUE((*nats)->Restart().ok());
  supervise_for(4s);
  load.Stop();
  EXPECT_GT(load.committed(), 50u);
  // Drain: the reader publishes everything committed so far, then both exit.
  supervise_for(1s);
  reader.Signal(SIGTERM);
  EXPECT_EQ(reader.Wait(180s), 0) << reader.Logs();
  EXPECT_EQ(writer.Wait(180s), 0) << writer.Logs();
  ExpectTargetEqualsSource(j, reader.Logs() + writer.Logs());
  std::printf("%s: %llu source transactions, reader started %d times, writer %d times\n",
              name.c_str(), static_cast<unsigned long long>(load.committed()), reader.starts(),
              writer.starts());
}

TEST_F(CdcFaultTest, PostgresToPostgresSurvivesKillsAndRestarts) {
  auto src_server = testing::PostgresServer::Start();
  ASSERT_TRUE(src_server.ok()) << src_server.status().ToString();
  testing::PostgresServer* s = src_server->get();
  ASSERT_TRUE(s->CreateDatabase("faultsrc").ok());
  ASSERT_TRUE(
      s->Exec("CREATE TABLE events (id bigint PRIMARY KEY, k int, note text);"
              "INSERT INTO events SELECT g, g % 10, 'seed' FROM generate_series(1, 1000) g;",
              "faultsrc")
          .ok());
  auto shared = testing::SharedServers::Postgres();
  ASSERT_TRUE(shared.ok());
  testing::PostgresServer* t = *shared;
  ASSERT_TRUE(t->Exec("DROP DATABASE IF EXISTS faultdst WITH (FORCE)").ok());
  ASSERT_TRUE(t->CreateDatabase("faultdst").ok());
  RunFaults(
      data_dir_, "fault_pg", s->UrlFor("faultsrc"), t->UrlFor("faultdst"),
      [s](const std::string& sql) { return s->Exec(sql, "faultsrc"); }, true,
      [s] { return s->Restart(); },
      [t]() -> Result<int64_t> {
        auto r = t->Query("SELECT count(*) FROM events", "faultdst");
        if (!r.ok()) return r.status();
        return std::stoll(*(*r)[0][0]);
      });
}

TEST_F(CdcFaultTest, MariaDbToPostgresSurvivesKillsAndRestarts) {
  auto src_server = testing::MariaDbServer::Start();
  ASSERT_TRUE(src_server.ok()) << src_server.status().ToString();
  testing::MariaDbServer* s = src_server->get();
  ASSERT_TRUE(s->Exec("CREATE DATABASE faultm CHARACTER SET utf8mb4").ok());
  ASSERT_TRUE(s->Exec("CREATE TABLE events (id BIGINT PRIMARY KEY, k INT, note TEXT);"
                      "INSERT INTO events SELECT seq, seq % 10, 'seed' FROM seq_1_to_1000;",
                      "faultm")
                  .ok());
  auto shared = testing::SharedServers::Postgres();
  ASSERT_TRUE(shared.ok());
  testing::PostgresServer* t = *shared;
  ASSERT_TRUE(t->Exec("DROP DATABASE IF EXISTS faultmdst WITH (FORCE)").ok());
  ASSERT_TRUE(t->CreateDatabase("faultmdst").ok());
  RunFaults(
      data_dir_, "fault_maria", s->url() + "faultm", t->UrlFor("faultmdst"),
      [s](const std::string& sql) { return s->Exec(sql, "faultm"); }, false,
      [s] { return s->Restart(); },
      [t]() -> Result<int64_t> {
        auto r = t->Query("SELECT count(*) FROM faultm.events", "faultmdst");
        if (!r.ok()) return r.status();
        return std::stoll(*(*r)[0][0]);
      });
}

// A drained change stream started again resumes its run (the reader's load phase is done); a
// stream-writer started before the reader must join that run, not wait for a new one that never
// comes (it waited until its plan timeout and failed, writing nothing).
TEST_F(CdcFaultTest, DrainedChangeStreamStartedAgainWriterFirst) {
  auto nats = testing::NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status().ToString();
  auto shared = testing::SharedServers::Postgres();
  ASSERT_TRUE(shared.ok());
  testing::PostgresServer* pg = *shared;
  for (const char* db : {"againsrc", "againdst"}) {
    ASSERT_TRUE(pg->Exec(std::string("DROP DATABASE IF EXISTS ") + db + " WITH (FORCE)").ok());
    ASSERT_TRUE(pg->CreateDatabase(db).ok());
  }
  ASSERT_TRUE(pg->Exec("CREATE TABLE events (id bigint PRIMARY KEY, k int, note text);"
                       "INSERT INTO events SELECT g, g % 10, 'seed' FROM generate_series(1, 500) g",
                       "againsrc")
                  .ok());
  json j = {{"name", "again"},
            {"mode", "load+cdc"},
            {"source", pg->UrlFor("againsrc")},
            {"target", pg->UrlFor("againdst")},
            {"schemaPolicy", "drop_and_recreate"}};
  std::string cfg = (data_dir_ / "again.json").string();
  std::ofstream(cfg) << j.dump(2);
  const std::string url = (*nats)->url();
  const std::string logs = (data_dir_ / "again").string();
  auto target = [&](const std::string& sql) -> std::string {
    auto r = pg->Query(sql, "againdst");
    return r.ok() && !r->empty() && (*r)[0][0] ? *(*r)[0][0] : "";
  };
  auto wait_for = [&](const std::string& sql, const std::string& want) {
    for (int i = 0; i < 600 && target(sql) != want; ++i) std::this_thread::sleep_for(100ms);
    return target(sql);
  };
  {
    Service writer(DBS_WRITER_BIN, {"--nats-url", url, cfg}, logs + "-w1.log");
    Service reader(DBS_READER_BIN, {"--nats-url", url, cfg}, logs + "-r1.log");
    ASSERT_EQ(wait_for("SELECT count(*) FROM events", "500"), "500") << writer.Logs();
    ASSERT_TRUE(pg->Exec("UPDATE events SET note = 'first' WHERE id <= 10", "againsrc").ok());
    ASSERT_EQ(wait_for("SELECT count(*) FROM events WHERE note = 'first'", "10"), "10");
    reader.Signal(SIGTERM);  // drain: both exit once everything committed is applied
    ASSERT_EQ(reader.Wait(60s), 0) << reader.Logs();
    ASSERT_EQ(writer.Wait(60s), 0) << writer.Logs();
  }
  ASSERT_TRUE(pg->Exec("UPDATE events SET note = 'second' WHERE id <= 20; "
                       "DELETE FROM events WHERE id > 400; "
                       "INSERT INTO events SELECT g, 0, 'new' FROM generate_series(501, 550) g",
                       "againsrc")
                  .ok());
  Service writer(DBS_WRITER_BIN, {"--nats-url", url, cfg}, logs + "-w2.log");
  std::this_thread::sleep_for(1s);  // the writer looks at the bus before the reader starts
  Service reader(DBS_READER_BIN, {"--nats-url", url, cfg}, logs + "-r2.log");
  EXPECT_EQ(wait_for("SELECT count(*) FROM events WHERE note = 'new'", "50"), "50")
      << writer.Logs() << reader.Logs();
  reader.Signal(SIGTERM);
  EXPECT_EQ(reader.Wait(60s), 0) << reader.Logs();
  EXPECT_EQ(writer.Wait(60s), 0) << writer.Logs();
  ExpectTargetEqualsSource(j, reader.Logs() + writer.Logs());
  EXPECT_EQ(target("SELECT count(*) FROM events"), "450");
}

}  // namespace
}  // namespace dbs

// Change data capture end to end (label "cdc"): load+cdc in every direction between MariaDB and
// PostgreSQL while a scripted workload of inserts, updates, deletes, key changes and truncates
// runs on the source; the run then drains and the target must equal the source by checksum.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/stream_config.h"
#include "run/local_run.h"
#include "support/servers.h"
#include "verify/checksum.h"

namespace dbs {
namespace {

using nlohmann::json;
using testing::MariaDbServer;
using testing::PostgresServer;
using testing::SharedServers;

std::string SqlFile(const char* name) {
  std::ifstream in(std::string(DBS_TEST_SQL_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs SQL on the source; `pg` picks the dialect.
using ExecFn = std::function<Status(const std::string&)>;

// The scripted workload: small transactions, about 20% inserts, 60% updates, 20% deletes of
// `events` rows, key changes, a table without a key, a truncate, and edits of the type zoo.
// `before_rest` runs once before transaction txns/4 (the test waits there until the snapshot is
// pinned, so that the rest of the workload must travel as changes however fast the source is).
void RunWorkload(bool pg, const ExecFn& exec, int txns, uint32_t seed,
                 const std::function<void()>& before_rest = {}) {
  std::mt19937 rng(seed);
  std::vector<int64_t> ids;
  for (int64_t i = 1; i <= 200; ++i) ids.push_back(i);
  int64_t next_id = 1000;
  auto pick = [&]() -> size_t { return rng() % ids.size(); };
  auto note = [&](int64_t v) {
    // Newlines, quotes, backslashes and 4-byte unicode must travel exactly.
    return std::string("'note ") + std::to_string(v) + " line\\nnext \"q\" ''s'' 😀 " +
           std::to_string(rng() % 100000) + "'";
  };
  const std::string now = pg ? "now()" : "NOW(6)";
  for (int t = 0; t < txns; ++t) {
    if (t == txns / 4 && before_rest) before_rest();
    std::string sql = pg ? "BEGIN;" : "START TRANSACTION;";
    int stmts = 1 + static_cast<int>(rng() % 4);
    for (int s = 0; s < stmts; ++s) {
      int r = static_cast<int>(rng() % 10);
      if (r < 2 || ids.size() < 20) {
        int64_t id = next_id++;
        ids.push_back(id);
        sql += "INSERT INTO events (id, k, amount, note, ts, payload) VALUES (" +
               std::to_string(id) + ", " + std::to_string(rng() % 1000) + ", " +
               std::to_string(rng() % 1000000) + ".1234, " + note(id) + ", " + now +
               ", '{\"n\": " + std::to_string(id) + "}');";
      } else if (r < 8) {
        int64_t id = ids[pick()];
        sql += "UPDATE events SET k = k + 1, amount = amount * 2 + 0.0001, note = " + note(id) +
               " WHERE id = " + std::to_string(id) + ";";
      } else {
        size_t i = pick();
        sql += "DELETE FROM events WHERE id = " + std::to_string(ids[i]) + ";";
        ids.erase(ids.begin() + static_cast<long>(i));
      }
    }
    if (t % 40 == 7) {  // a primary-key change
      size_t i = pick();
      int64_t id = next_id++;
      sql += "UPDATE events SET id = " + std::to_string(id) +
             " WHERE id = " + std::to_string(ids[i]) + ";";
      ids[i] = id;
    }
    if (t % 25 == 3) {
      sql += "INSERT INTO nokey VALUES (" + std::to_string(t % 3) + ", 'dup'), (" +
             std::to_string(t) + ", NULL);";
      sql += "UPDATE nokey SET b = 'changed' WHERE a = " + std::to_string(t) + ";";
    }
    if (t % 25 == 13) sql += "DELETE FROM nokey WHERE a = " + std::to_string(t - 10) + ";";
    if (t == txns / 2) {
      sql +=
          pg ? "COMMIT; TRUNCATE scratch; BEGIN;" : "COMMIT; TRUNCATE scratch; START TRANSACTION;";
      sql += "INSERT INTO scratch VALUES (100, 'after truncate');";
    }
    if (t == txns / 3) {  // type zoo: copy values across rows, change a key, delete, insert
      sql += "UPDATE zoo SET id = 103 WHERE id = 3;";
      sql += "DELETE FROM zoo WHERE id = 4;";
      sql += "INSERT INTO zoo (id) VALUES (77);";
      sql +=
          "UPDATE zoo SET c_text = (SELECT c_text FROM (SELECT c_text FROM zoo WHERE id = 1) "
          "x) WHERE id = 2;";
    }
    sql += "COMMIT;";
    Status st = exec(sql);
    ASSERT_TRUE(st.ok()) << st.ToString() << "\n" << sql;
  }
  // A rolled-back transaction never shows up on the target.
  Status st = exec(std::string(pg ? "BEGIN;" : "START TRANSACTION;") +
                   "INSERT INTO events (id, k) VALUES (999999, 1); ROLLBACK;");
  ASSERT_TRUE(st.ok()) << st.ToString();
}

std::string EventsDdl(bool pg) {
  std::string ddl =
      pg ? "CREATE TABLE events (id bigint PRIMARY KEY, k int NOT NULL, amount numeric(20,4), "
           "note text, ts timestamptz, payload jsonb);"
           "CREATE TABLE nokey (a int, b text); ALTER TABLE nokey REPLICA IDENTITY FULL;"
           "CREATE TABLE scratch (id int PRIMARY KEY, v text);"
           "INSERT INTO events SELECT g, g % 100, g * 1.5, 'seed ' || g, now(), "
           "jsonb_build_object('g', g) FROM generate_series(1, 200) g;"
         : "CREATE TABLE events (id BIGINT PRIMARY KEY, k INT NOT NULL, amount DECIMAL(20,4), "
           "note TEXT, ts DATETIME(6), payload JSON);"
           "CREATE TABLE nokey (a INT, b TEXT);"
           "CREATE TABLE scratch (id INT PRIMARY KEY, v TEXT);"
           "INSERT INTO events SELECT seq, seq % 100, seq * 1.5, CONCAT('seed ', seq), NOW(6), "
           "JSON_OBJECT('g', seq) FROM seq_1_to_200;";
  ddl += "INSERT INTO scratch VALUES (1, 'a'), (2, 'b');";
  return ddl;
}

class CdcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = SharedServers::MariaDb();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    maria_ = *m;
    auto p = SharedServers::Postgres();
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pg_ = *p;
    data_dir_ =
        std::filesystem::temp_directory_path() / ("dbstreams-cdc-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(data_dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(data_dir_, ec);
  }

  std::string NewMariaDb(const std::string& name) {
    EXPECT_TRUE(maria_
                    ->Exec("DROP DATABASE IF EXISTS `" + name + "`; CREATE DATABASE `" + name +
                           "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
                    .ok());
    return maria_->url() + name;
  }
  std::string NewPostgres(const std::string& name) {
    EXPECT_TRUE(pg_->Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)").ok());
    EXPECT_TRUE(pg_->CreateDatabase(name).ok());
    return pg_->UrlFor(name);
  }
  // Drops slots left behind by earlier runs of a stream (they would hold WAL).
  void DropSlot(const std::string& slot) {
    (void)pg_->Exec(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
        "WHERE slot_name = '" +
        slot + "' AND NOT active");
  }

  StreamConfig Config(const std::string& name, const std::string& src, const std::string& dst,
                      json extra = json::object()) {
    json j = {{"name", name},
              {"mode", "load+cdc"},
              {"source", src},
              {"target", dst},
              {"schemaPolicy", "drop_and_recreate"},
              {"cdc", {{"batchChanges", 500}}}};
    for (auto& [k, v] : extra.items()) j[k] = v;
    auto c = ParseStreamConfig(j);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : StreamConfig{};
  }

  // Runs load+cdc while the workload runs on the source, drains, and checks every table.
  void RunWithWorkload(const StreamConfig& c, bool source_pg, const ExecFn& exec, int txns) {
    std::atomic<bool> workload_done{false};
    std::atomic<bool> pinned{false};
    LocalRunOptions o;
    o.writers = 2;
    o.data_dir = data_dir_.string();
    o.drain_when = [&] { return workload_done.load(); };
    // The progress board has tables once the reader published its plan, i.e. after the
    // snapshot and its source position were pinned.
    ProgressFn on_progress = [&](const std::vector<TableProgress>& tables, double) {
      if (!tables.empty()) pinned.store(true);
    };
    Result<RunSummary> result = Status::Internal("not run");
    std::thread run([&] { result = RunLocal(c, o, on_progress); });
    RunWorkload(source_pg, exec, txns, 42, [&] {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!pinned.load() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
    workload_done.store(true);
    run.join();
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_GT(result->cdc.read, 0u);
    ASSERT_FALSE(result->verdicts.empty());
    for (const TableVerdict& v : result->verdicts) {
      EXPECT_TRUE(v.match()) << v.source_table << " -> " << v.target_table << ": rows "
                             << v.source.rows << " vs " << v.target.rows;
    }
  }

  // Runs stream `c` (1 writer), waits until its target database `target_db` has table t (the
  // structure phase is done), calls change_source, then drains and returns the run's summary.
  Result<RunSummary> RunAroundChanges(const StreamConfig& c, const std::string& target_db,
                                      const std::function<void()>& change_source) {
    std::atomic<bool> done{false};
    LocalRunOptions o;
    o.writers = 1;
    o.data_dir = data_dir_.string();
    o.drain_when = [&] { return done.load(); };
    Result<RunSummary> result = Status::Internal("not run");
    std::thread run([&] { result = RunLocal(c, o, nullptr); });
    for (int i = 0; i < 300; ++i) {
      auto r = pg_->Query("SELECT count(*) FROM pg_tables WHERE tablename = 't'", target_db);
      if (r.ok() && !r->empty() && (*r)[0][0] && *(*r)[0][0] == "1") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    change_source();
    done.store(true);
    run.join();
    return result;
  }

  MariaDbServer* maria_ = nullptr;
  PostgresServer* pg_ = nullptr;
  std::filesystem::path data_dir_;
};

TEST_F(CdcTest, PostgresToPostgres) {
  std::string src = NewPostgres("cdc_p2p");
  ASSERT_TRUE(pg_->Exec(SqlFile("postgres_zoo.sql") + EventsDdl(true), "cdc_p2p").ok());
  std::string dst = NewPostgres("cdc_p2p_dst");
  DropSlot("dbs_cdc_p2p");
  RunWithWorkload(
      Config("cdc_p2p", src, dst), true,
      [&](const std::string& sql) { return pg_->Exec(sql, "cdc_p2p"); }, 300);
  // PostgreSQL's own row text, in key order, must be equal too.
  const std::string digest = "SELECT md5(string_agg(e::text, '|' ORDER BY id)) FROM events e";
  auto a = pg_->Query(digest, "cdc_p2p");
  auto b = pg_->Query(digest, "cdc_p2p_dst");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0][0], (*b)[0][0]);
  DropSlot("dbs_cdc_p2p");
}

TEST_F(CdcTest, MariaDbToPostgres) {
  std::string src = NewMariaDb("cdc_m2p");
  ASSERT_TRUE(maria_
                  ->Exec("SET SESSION sql_mode=''; " + SqlFile("mariadb_zoo.sql") +
                             "UPDATE zoo SET c_time = '12:34:56.5' WHERE c_time < '00:00:00' OR "
                             "c_time >= '24:00:00';" +
                             EventsDdl(false),
                         "cdc_m2p")
                  .ok());
  std::string dst = NewPostgres("cdc_m2p_dst");
  RunWithWorkload(
      Config("cdc_m2p", src, dst, {{"zeroDate", "null"}}), false,
      [&](const std::string& sql) { return maria_->Exec(sql, "cdc_m2p"); }, 300);
}

TEST_F(CdcTest, PostgresToMariaDb) {
  std::string src = NewPostgres("cdc_p2m");
  ASSERT_TRUE(pg_->Exec(SqlFile("postgres_zoo.sql") + R"sql(
    UPDATE zoo SET c_date = NULL, c_timestamp = NULL, c_timestamptz = NULL WHERE id IN (1, 2);
    UPDATE zoo SET c_real = NULL, c_double = NULL, c_numeric_free = NULL WHERE id IN (2, 4);
    UPDATE zoo SET c_numeric_free = NULL WHERE id = 1;
  )sql" + EventsDdl(true),
                        "cdc_p2m")
                  .ok());
  std::string dst = NewMariaDb("cdc_p2m_dst");
  DropSlot("dbs_cdc_p2m");
  RunWithWorkload(
      Config("cdc_p2m", src, dst), true,
      [&](const std::string& sql) { return pg_->Exec(sql, "cdc_p2m"); }, 300);
  DropSlot("dbs_cdc_p2m");
}

TEST_F(CdcTest, MariaDbToMariaDb) {
  std::string src = NewMariaDb("cdc_m2m");
  ASSERT_TRUE(
      maria_
          ->Exec("SET SESSION sql_mode=''; " + SqlFile("mariadb_zoo.sql") + EventsDdl(false),
                 "cdc_m2m")
          .ok());
  std::string dst = NewMariaDb("cdc_m2m_dst");
  RunWithWorkload(
      Config("cdc_m2m", src, dst), false,
      [&](const std::string& sql) { return maria_->Exec(sql, "cdc_m2m"); }, 300);
}

// Mode cdc (no load) with an operation filter: only inserts reach the target.
TEST_F(CdcTest, CdcOnlyWithOperationFilter) {
  std::string src = NewPostgres("cdc_ops");
  ASSERT_TRUE(pg_->Exec("CREATE TABLE t (id int PRIMARY KEY, v text);"
                        "INSERT INTO t VALUES (1, 'before the stream');",
                        "cdc_ops")
                  .ok());
  std::string dst = NewPostgres("cdc_ops_dst");
  DropSlot("dbs_cdc_ops");
  StreamConfig c =
      Config("cdc_ops", src, dst,
             {{"mode", "cdc"}, {"verify", false}, {"cdc", {{"operations", {"insert"}}}}});
  Result<RunSummary> result = RunAroundChanges(c, "cdc_ops_dst", [&] {
    EXPECT_TRUE(
        pg_->Exec("INSERT INTO t VALUES (2, 'x'), (3, 'y'); UPDATE t SET v = 'u' WHERE id = 2;"
                  "DELETE FROM t WHERE id = 3;",
                  "cdc_ops")
            .ok());
  });
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  auto rows = pg_->Query("SELECT id, v FROM t ORDER BY id", "cdc_ops_dst");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);  // row 1 predates the stream; 2 and 3 inserted; no update/delete
  EXPECT_EQ(*(*rows)[0][0], "2");
  EXPECT_EQ(*(*rows)[0][1], "x");
  EXPECT_EQ(*(*rows)[1][0], "3");
  DropSlot("dbs_cdc_ops");
}

// A transaction many times larger than the writer holds ahead (4 x batchChanges row changes)
// travels in parts over several messages; the writer must still fetch all of them and apply
// the transaction whole.
TEST_F(CdcTest, TransactionLargerThanTheWriterHoldsAhead) {
  std::string src = NewPostgres("cdc_big");
  ASSERT_TRUE(pg_->Exec("CREATE TABLE t (id int PRIMARY KEY, v text);", "cdc_big").ok());
  std::string dst = NewPostgres("cdc_big_dst");
  DropSlot("dbs_cdc_big");
  StreamConfig c = Config("cdc_big", src, dst, {{"mode", "cdc"}});
  Result<RunSummary> result = RunAroundChanges(c, "cdc_big_dst", [&] {
    // 12,000 inserts and 12,000 updates in one transaction: 48 parts of 500 changes.
    EXPECT_TRUE(
        pg_->Exec("BEGIN; INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 12000) g;"
                  "UPDATE t SET v = v || '!' WHERE id % 3 = 0;"
                  "UPDATE t SET v = v || '?' WHERE id % 3 <> 0; COMMIT;",
                  "cdc_big")
            .ok());
  });
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const std::string digest =
      "SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM t";
  auto a = pg_->Query(digest, "cdc_big");
  auto b = pg_->Query(digest, "cdc_big_dst");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*b)[0][0].has_value());
  EXPECT_EQ(*(*b)[0][0], "12000");
  EXPECT_EQ((*a)[0][1], (*b)[0][1]);
  DropSlot("dbs_cdc_big");
}

}  // namespace
}  // namespace dbs

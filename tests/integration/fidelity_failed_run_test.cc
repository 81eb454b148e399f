// A failed run never damages the target (issue 11 section 3, docs/delivery.md "What a failed
// run leaves"): with real servers, a run that fails mid-table, a writer killed mid-swap and a
// run killed mid-load and started again each leave the target either exactly as it was before
// (md5 of the ordered table contents) or exactly the new data (checksum-verified).
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/stream_config.h"
#include "core/subprocess.h"
#include "run/local_run.h"
#include "support/servers.h"
#include "support/streams.h"
#include "verify/checksum.h"

namespace dbs {
namespace {

using nlohmann::json;
using testing::MariaDbServer;
using testing::PostgresServer;
using testing::SharedServers;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using Proc = testing::BinaryProc;

class FailedRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = SharedServers::Postgres();
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pg_ = *p;
    data_dir_ = std::filesystem::temp_directory_path() /
                ("dbstreams-fidelity-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(data_dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(data_dir_, ec);
  }

  std::string NewPostgres(const std::string& name) {
    EXPECT_TRUE(pg_->Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)").ok());
    EXPECT_TRUE(pg_->CreateDatabase(name).ok());
    return pg_->UrlFor(name);
  }
  std::string Scalar(const std::string& sql, const std::string& db) {
    auto r = pg_->Query(sql, db);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    if (!r.ok() || r->empty() || (*r)[0].empty() || !(*r)[0][0]) return "<null>";
    return *(*r)[0][0];
  }
  // The table's whole content, in key order, as one md5.
  std::string Md5(const std::string& table, const std::string& db) {
    return Scalar(
        "SELECT md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) FROM " + table + " x",
        db);
  }
  // Schemas and tables a run may leave behind: shadow schemas and the bookkeeping schema.
  std::string Leftovers(const std::string& db) {
    return Scalar(
        "SELECT coalesce(string_agg(nspname, ',' ORDER BY nspname), '') FROM pg_namespace "
        "WHERE nspname LIKE '\\_dbs\\_shadow\\_%' OR nspname = '_dbstreams'",
        db);
  }

  StreamConfig Config(const json& j) {
    auto c = ParseStreamConfig(j);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : StreamConfig{};
  }
  Result<RunSummary> Run(const StreamConfig& c, int writers = 2) {
    LocalRunOptions o;
    o.writers = writers;
    o.data_dir = data_dir_.string();
    return RunLocal(c, o, nullptr);
  }
  void ExpectVerified(const StreamConfig& c) {
    auto v = VerifyStream(c);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_FALSE(v->empty());
    for (const auto& t : *v) {
      EXPECT_TRUE(t.match()) << t.source_table << ": rows " << t.source.rows << " vs "
                             << t.target.rows;
    }
  }
  std::string WriteConfig(const json& j) {
    std::string path = (data_dir_ / (j["name"].get<std::string>() + ".json")).string();
    std::ofstream(path) << j.dump(2);
    return path;
  }

  PostgresServer* pg_ = nullptr;
  std::filesystem::path data_dir_;
};

// The source for PostgreSQL -> PostgreSQL cases: parent p (100 rows) and child t (n rows, a
// foreign key to p, a secondary index), with the bad row `bad` in t.v at id `bad_id` (0: none).
void MakeSource(PostgresServer* pg, const std::string& db, int n) {
  ASSERT_TRUE(pg->Exec("CREATE TABLE p (id int PRIMARY KEY, name text); "
                       "INSERT INTO p SELECT g, 'p' || g FROM generate_series(1, 100) g; "
                       "CREATE TABLE t (id int PRIMARY KEY, pid int REFERENCES p (id), v text); "
                       "CREATE INDEX t_v_idx ON t (v); "
                       "INSERT INTO t SELECT g, 1 + g % 100, 'new ' || g "
                       "  FROM generate_series(1, " +
                           std::to_string(n) + ") g",
                       db)
                  .ok());
}

// The target's earlier data: other rows, other shapes, a view on t.
void MakeOldTarget(PostgresServer* pg, const std::string& db) {
  ASSERT_TRUE(pg->Exec("CREATE TABLE p (id int PRIMARY KEY, name text); "
                       "INSERT INTO p SELECT g, 'old p' || g FROM generate_series(1, 100) g; "
                       "CREATE TABLE t (id int PRIMARY KEY, pid int REFERENCES p (id), v text "
                       "  CHECK (v <> 'new 15000')); "
                       "INSERT INTO t SELECT g, 1 + g % 100, 'old ' || g "
                       "  FROM generate_series(1, 3000) g; "
                       "CREATE VIEW t_view AS SELECT id, v FROM t",
                       db)
                  .ok());
}

// truncate_and_load keeps the target tables and refills them: a row the target rejects (its
// own CHECK constraint, at row 15,000 of 30,000) fails the run, and the tables, the view on
// them and the bookkeeping are exactly as before. Before shadows, TRUNCATE ran at the start
// and the committed bundles stayed.
TEST_F(FailedRunTest, TruncateAndLoadRejectedRowLeavesTheOldData) {
  const std::string src = NewPostgres("fid_trunc_src");
  MakeSource(pg_, "fid_trunc_src", 30000);
  const std::string dst = NewPostgres("fid_trunc_dst");
  MakeOldTarget(pg_, "fid_trunc_dst");
  const std::string p_before = Md5("public.p", "fid_trunc_dst");
  const std::string t_before = Md5("public.t", "fid_trunc_dst");
  json j = {{"name", "fid-trunc"},
            {"source", src},
            {"target", dst},
            {"writeMode", "truncate_and_load"},
            {"dataBundleSize", 500}};
  auto r = Run(Config(j));
  ASSERT_FALSE(r.ok()) << "the target's CHECK constraint must reject row 15000";
  EXPECT_NE(r.status().ToString().find("public.t"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(Md5("public.p", "fid_trunc_dst"), p_before);
  EXPECT_EQ(Md5("public.t", "fid_trunc_dst"), t_before);
  EXPECT_EQ(Scalar("SELECT count(*) FROM t_view", "fid_trunc_dst"), "3000");
  EXPECT_EQ(Leftovers("fid_trunc_dst"), "");

  // Without the bad row the same stream replaces the rows; the view still works.
  ASSERT_TRUE(pg_->Exec("ALTER TABLE t DROP CONSTRAINT t_v_check", "fid_trunc_dst").ok());
  auto ok = Run(Config(j));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ExpectVerified(Config(j));
  EXPECT_EQ(Scalar("SELECT count(*) FROM t_view", "fid_trunc_dst"), "30000");
  EXPECT_EQ(Md5("public.t", "fid_trunc_dst"), Md5("public.t", "fid_trunc_src"));
}

// drop_and_recreate into a target with earlier data, and into an empty database: a MariaDB zero
// date that the PostgreSQL target cannot store (zeroDate = error) at row 15,000 fails the run
// mid-table. The old tables stay exactly as they were; the empty database stays empty (no
// tables, no shadow schema, no _dbstreams). With keepPartial the shadow copies stay and the
// error names them.
TEST_F(FailedRunTest, DropAndRecreateRejectedRowLeavesTheOldDataOrNothing) {
  auto m = SharedServers::MariaDb();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  MariaDbServer* maria = *m;
  ASSERT_TRUE(maria
                  ->Exec("DROP DATABASE IF EXISTS fid_drop_src; CREATE DATABASE fid_drop_src "
                         "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
                  .ok());
  ASSERT_TRUE(maria
                  ->Exec("SET SESSION sql_mode = ''; "
                         "CREATE TABLE p (id int PRIMARY KEY, name varchar(50)); "
                         "INSERT INTO p SELECT seq, concat('p', seq) FROM seq_1_to_100; "
                         "CREATE TABLE t (id int PRIMARY KEY, pid int, d date, v varchar(50), "
                         "  KEY t_v_idx (v), CONSTRAINT t_pid_fk FOREIGN KEY (pid) "
                         "  REFERENCES p (id)); "
                         "INSERT INTO t SELECT seq, 1 + seq % 100, '2024-01-01' + INTERVAL seq "
                         "  MINUTE, concat('new ', seq) FROM seq_1_to_30000; "
                         "UPDATE t SET d = '0000-00-00' WHERE id = 15000",
                         "fid_drop_src")
                  .ok());
  const std::string src = maria->url() + "fid_drop_src";

  // A target with earlier data.
  const std::string dst = NewPostgres("fid_drop_dst");
  MakeOldTarget(pg_, "fid_drop_dst");
  const std::string p_before = Md5("public.p", "fid_drop_dst");
  const std::string t_before = Md5("public.t", "fid_drop_dst");
  json j = {{"name", "fid-drop"},
            {"source", src},
            {"target", dst},
            {"targetSchema", "public"},
            {"schemaPolicy", "drop_and_recreate"},
            {"dataBundleSize", 500}};
  auto r = Run(Config(j));
  ASSERT_FALSE(r.ok()) << "the zero date must fail the run";
  EXPECT_NE(r.status().ToString().find("zero"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(Md5("public.p", "fid_drop_dst"), p_before);
  EXPECT_EQ(Md5("public.t", "fid_drop_dst"), t_before);
  EXPECT_EQ(Scalar("SELECT count(*) FROM t_view", "fid_drop_dst"), "3000");
  EXPECT_EQ(Leftovers("fid_drop_dst"), "");

  // An empty database stays empty.
  const std::string empty = NewPostgres("fid_drop_empty");
  j["name"] = "fid-drop-empty";
  j["target"] = empty;
  r = Run(Config(j));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(Scalar("SELECT count(*) FROM pg_tables WHERE schemaname NOT IN "
                   "('pg_catalog', 'information_schema')",
                   "fid_drop_empty"),
            "0");
  EXPECT_EQ(Leftovers("fid_drop_empty"), "");

  // keepPartial: the shadow copies stay for inspection, named in the error; the target too.
  j["name"] = "fid-drop-keep";
  j["target"] = dst;
  j["keepPartial"] = true;
  // One writer, so the bundles before the bad one (in the second fetch) have committed when it
  // fails: with two, the failure may stop the other writer before its first commit.
  r = Run(Config(j), 1);
  ASSERT_FALSE(r.ok());
  const std::string msg = r.status().ToString();
  const size_t at = msg.find("_dbs_shadow_");
  ASSERT_NE(at, std::string::npos) << msg;
  const std::string shadow_schema = msg.substr(at, std::string("_dbs_shadow_").size() + 16);
  EXPECT_NE(msg.find(shadow_schema + ".t"), std::string::npos) << msg;
  EXPECT_GT(std::stoll(Scalar("SELECT count(*) FROM " + shadow_schema + ".t", "fid_drop_dst")), 0);
  EXPECT_EQ(Md5("public.t", "fid_drop_dst"), t_before);

  // The next run of the stream drops the kept copies and, without the bad row, replaces the
  // tables with indexes, foreign keys and primary keys.
  ASSERT_TRUE(maria->Exec("UPDATE t SET d = '2024-01-01' WHERE id = 15000", "fid_drop_src").ok());
  auto ok = Run(Config(j));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ExpectVerified(Config(j));
  EXPECT_EQ(Scalar("SELECT to_regnamespace('" + shadow_schema + "') IS NULL", "fid_drop_dst"), "t");
  EXPECT_EQ(Scalar("SELECT count(*) FROM pg_constraint WHERE conrelid = 'public.t'::regclass "
                   "AND contype IN ('p', 'f')",
                   "fid_drop_dst"),
            "2");
  EXPECT_EQ(Scalar("SELECT count(*) FROM pg_indexes WHERE schemaname = 'public' AND "
                   "tablename = 't' AND indexname LIKE '%t_v_idx'",
                   "fid_drop_dst"),
            "1");
  EXPECT_EQ(Leftovers("fid_drop_dst"), "_dbstreams");
}

// The writer is SIGKILLed inside the swap transaction (test hook DBS_TEST_SWAP_PAUSE_SECONDS):
// the target is exactly the old data. Another writer then finishes the same run: exactly the
// new data, with its primary keys, index and foreign key.
TEST_F(FailedRunTest, WriterKilledMidSwapLeavesOldThenNewData) {
  auto nats = testing::NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status().ToString();
  const std::string src = NewPostgres("fid_swap_src");
  MakeSource(pg_, "fid_swap_src", 20000);
  const std::string dst = NewPostgres("fid_swap_dst");
  MakeOldTarget(pg_, "fid_swap_dst");
  ASSERT_TRUE(pg_->Exec("ALTER TABLE t DROP CONSTRAINT t_v_check", "fid_swap_dst").ok());
  const std::string t_before = Md5("public.t", "fid_swap_dst");
  json j = {{"name", "fid-swap"},
            {"source", src},
            {"target", dst},
            {"schemaPolicy", "drop_and_recreate"},
            {"dataBundleSize", 1000}};
  const std::string cfg = WriteConfig(j);
  const std::string url = (*nats)->url();
  const std::string logs = data_dir_.string();
  Proc reader(DBS_READER_BIN, {"--nats-url", url, cfg}, logs + "/r.log");
  {
    Proc victim(DBS_WRITER_BIN, {"--nats-url", url, "--id", "victim", cfg}, logs + "/v.log",
                {"DBS_TEST_SWAP_PAUSE_SECONDS=120"});
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    bool paused = false;
    while (!paused && std::chrono::steady_clock::now() < deadline) {
      paused = ReadFile(logs + "/v.log").find("pausing inside the swap") != std::string::npos;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(paused) << ReadFile(logs + "/v.log");
    victim.Kill();
  }
  // The server ends the dead client's transaction: nothing of the swap is visible.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (Scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = 'fid_swap_dst' AND "
                "state LIKE 'idle in transaction%'",
                "fid_swap_dst") != "0" &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(Md5("public.t", "fid_swap_dst"), t_before);
  EXPECT_EQ(Scalar("SELECT count(*) FROM t_view", "fid_swap_dst"), "3000");

  Proc again(DBS_WRITER_BIN, {"--nats-url", url, "--id", "again", cfg}, logs + "/a.log");
  EXPECT_EQ(again.Wait(std::chrono::seconds(120)), 0) << ReadFile(logs + "/a.log");
  EXPECT_EQ(reader.Wait(std::chrono::seconds(60)), 0) << ReadFile(logs + "/r.log");
  ExpectVerified(Config(j));
  EXPECT_EQ(Md5("public.t", "fid_swap_dst"), Md5("public.t", "fid_swap_src"));
  EXPECT_EQ(Scalar("SELECT count(*) FROM pg_constraint WHERE conrelid = 'public.t'::regclass "
                   "AND contype IN ('p', 'f')",
                   "fid_swap_dst"),
            "2");
  EXPECT_EQ(Leftovers("fid_swap_dst"), "_dbstreams");
}

// The API case of issue 11: the writer (with the reader) is killed mid-load, and the stream is
// started again as a new run (schema policy create_missing, write mode append). The new run
// must not append to what the killed one wrote: exactly the source rows, primary key in place,
// nothing of the killed run left. Before shadows: duplicates, no primary key, "completed".
TEST_F(FailedRunTest, RunKilledMidLoadAndStartedAgainIsExact) {
  auto nats = testing::NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status().ToString();
  const std::string src = NewPostgres("fid_restart_src");
  MakeSource(pg_, "fid_restart_src", 300000);
  const std::string dst = NewPostgres("fid_restart_dst");
  json j = {{"name", "fid-restart"}, {"source", src}, {"target", dst}, {"dataBundleSize", 500}};
  const std::string cfg = WriteConfig(j);
  const std::string url = (*nats)->url();
  const std::string logs = data_dir_.string();
  {
    Proc reader(DBS_READER_BIN, {"--nats-url", url, cfg}, logs + "/r.log");
    // The victim holds after its second committed batch (test hook): kill both there.
    Proc victim(DBS_WRITER_BIN, {"--nats-url", url, "--id", "victim", cfg}, logs + "/v.log",
                {"DBS_TEST_WRITER_HOLD_AFTER_BATCHES=2"});
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    bool held = false;
    while (!held && std::chrono::steady_clock::now() < deadline) {
      held = ReadFile(logs + "/v.log").find("holding after committed batches") != std::string::npos;
      if (!held) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(held) << ReadFile(logs + "/v.log") << ReadFile(logs + "/r.log");
    victim.Kill();
    reader.Kill();
    auto q = pg_->Query("SELECT count(*) FROM _dbstreams.applied", "fid_restart_dst");
    ASSERT_TRUE(q.ok() && !q->empty() && (*q)[0][0]);
    EXPECT_GT(std::stoll(*(*q)[0][0]), 0) << "committed bundles of the killed run";
  }
  ASSERT_EQ(Scalar("SELECT count(*) FROM _dbstreams.dbstreams_state WHERE tbl = 'public.t' AND "
                   "phase LIKE 'prepared%'",
                   "fid_restart_dst"),
            "1")
      << "the killed run got past its load";
  auto ok = Run(Config(j));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_FALSE(ok->verdicts.empty());
  for (const auto& v : ok->verdicts) EXPECT_TRUE(v.match()) << v.source_table;
  EXPECT_EQ(Scalar("SELECT count(*) || ' ' || count(DISTINCT id) FROM public.t", "fid_restart_dst"),
            "300000 300000");
  EXPECT_EQ(Scalar("SELECT count(*) FROM pg_constraint WHERE conrelid = 'public.t'::regclass "
                   "AND contype = 'p'",
                   "fid_restart_dst"),
            "1");
  EXPECT_EQ(Scalar("SELECT count(*) FROM _dbstreams.dbstreams_state WHERE stream NOT LIKE "
                   "(SELECT stream FROM _dbstreams.dbstreams_state WHERE tbl = '' LIMIT 1)",
                   "fid_restart_dst"),
            "0")
      << "state rows of the killed run are gone";
  EXPECT_EQ(Leftovers("fid_restart_dst"), "_dbstreams");
}

// Issue 11 section 6: a row the target rejects is named by its source table, column and
// primary key, not by the sink's staging table and a COPY line number. Table t has an inet
// column (written through a staging table) and a varchar(5) that row 777 overflows; table u
// goes straight into a shadow copy with a varchar(5) too short for row 4242.
TEST_F(FailedRunTest, RejectedRowErrorNamesSourceTableColumnAndKey) {
  const std::string src = NewPostgres("fid_err_src");
  ASSERT_TRUE(pg_->Exec("CREATE TABLE t (id int PRIMARY KEY, v text, ip text); "
                        "INSERT INTO t SELECT g, 'v' || (g % 100), '10.0.0.' || (g % 250) "
                        "  FROM generate_series(1, 2000) g; "
                        "UPDATE t SET v = 'too long' WHERE id = 777",
                        "fid_err_src")
                  .ok());
  const std::string dst = NewPostgres("fid_err_dst");
  ASSERT_TRUE(
      pg_->Exec("CREATE TABLE t (id int PRIMARY KEY, v varchar(5), ip inet)", "fid_err_dst").ok());
  json j = {{"name", "fid-err"}, {"source", src}, {"target", dst}, {"tables", {"t"}}};
  auto r = Run(Config(j), 1);
  ASSERT_FALSE(r.ok());
  std::string msg = r.status().ToString();
  EXPECT_NE(msg.find("source table public.t, column v, key (id)=(777)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("_dbs_stage"), std::string::npos) << msg;

  ASSERT_TRUE(pg_->Exec("CREATE TABLE u (id int PRIMARY KEY, v text); "
                        "INSERT INTO u SELECT g, 'v' FROM generate_series(1, 5000) g; "
                        "UPDATE u SET v = 'too long' WHERE id = 4242",
                        "fid_err_src")
                  .ok());
  ASSERT_TRUE(pg_->Exec("CREATE TABLE u (id int PRIMARY KEY, v varchar(5))", "fid_err_dst").ok());
  j["name"] = "fid-err-u";
  j["tables"] = {"u"};
  // truncate_and_load: the rows go into a shadow copy with the target's own columns.
  j["writeMode"] = "truncate_and_load";
  r = Run(Config(j), 1);
  ASSERT_FALSE(r.ok());
  msg = r.status().ToString();
  EXPECT_NE(msg.find("source table public.u, column v, key (id)=(4242)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("_dbs_shadow"), std::string::npos) << msg;
}

// --- MySQL/MariaDB targets: shadow databases, one RENAME TABLE, refill in one transaction ---

class MariaDbFailedRunTest : public FailedRunTest {
 protected:
  void SetUp() override {
    FailedRunTest::SetUp();
    auto m = SharedServers::MariaDb();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    maria_ = *m;
  }
  std::string NewMariaDb(const std::string& db) {
    EXPECT_TRUE(maria_->Exec("DROP DATABASE IF EXISTS " + db + "; CREATE DATABASE " + db).ok());
    return maria_->url() + db;
  }
  std::string MScalar(const std::string& sql, const std::string& db = "") {
    auto r = maria_->Query(sql, db);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    if (!r.ok() || r->empty() || (*r)[0].empty() || !(*r)[0][0]) return "<null>";
    return *(*r)[0][0];
  }
  // Count and a checksum of the ordered rows of t (id, pid, v).
  std::string Sum(const std::string& db) {
    return MScalar(
        "SELECT CONCAT(COUNT(*), ':', COALESCE(SUM(CRC32(CONCAT_WS('|', id, pid, v))), "
        "0)) FROM t",
        db);
  }
  // Shadow databases and renamed-aside tables any run left on the server.
  std::string Leftovers() {
    return MScalar(
        "SELECT CONCAT(COALESCE(GROUP_CONCAT(SCHEMA_NAME), ''), '/', (SELECT COUNT(*) FROM "
        "information_schema.TABLES WHERE TABLE_NAME LIKE '\\_dbs\\_old\\_%')) FROM "
        "information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE '\\_dbs\\_sh\\_%'");
  }
  // The target's earlier data: p, t (a foreign key to p, a CHECK that rejects 'new 15000'), a
  // view and a trigger on t, and a table o outside the run with a foreign key to t.
  void MakeOldMariaTarget(const std::string& db) {
    ASSERT_TRUE(maria_
                    ->Exec("CREATE TABLE p (id int PRIMARY KEY, name text); "
                           "INSERT INTO p SELECT seq, concat('old p', seq) FROM seq_1_to_100; "
                           "CREATE TABLE t (id int PRIMARY KEY, pid int, v varchar(50), "
                           "  f double, CONSTRAINT t_p FOREIGN KEY (pid) REFERENCES p (id), "
                           "  CONSTRAINT t_v CHECK (v <> 'new 15000')); "
                           "INSERT INTO t SELECT seq, 1 + seq % 100, concat('old ', seq), 0.5 "
                           "  FROM seq_1_to_3000; "
                           "CREATE TABLE o (id int PRIMARY KEY, tid int, CONSTRAINT o_t "
                           "  FOREIGN KEY (tid) REFERENCES t (id)); "
                           "INSERT INTO o VALUES (1, 1); "
                           "CREATE TABLE audit (n int); "
                           "CREATE TRIGGER t_ins AFTER INSERT ON t FOR EACH ROW "
                           "  INSERT INTO audit VALUES (NEW.id); "
                           "CREATE VIEW t_view AS SELECT id, v FROM t",
                           db)
                    .ok());
  }
  MariaDbServer* maria_ = nullptr;
};

// A PostgreSQL source whose t has a NaN (MySQL cannot store it) at id 15000 of 30000.
void MakeNanSource(PostgresServer* pg, const std::string& db) {
  ASSERT_TRUE(pg->Exec("CREATE TABLE p (id int PRIMARY KEY, name text); "
                       "INSERT INTO p SELECT g, 'p' || g FROM generate_series(1, 100) g; "
                       "CREATE TABLE t (id int PRIMARY KEY, pid int REFERENCES p (id), "
                       "  v varchar(50), f float8); "
                       "CREATE INDEX t_v_idx ON t (v); "
                       "INSERT INTO t SELECT g, 1 + g % 100, 'new ' || g, g / 4.0 "
                       "  FROM generate_series(1, 30000) g; "
                       "UPDATE t SET f = 'NaN' WHERE id = 15000",
                       db)
                  .ok());
}

// drop_and_recreate into MariaDB: a value the target cannot hold at row 15,000 fails the run
// mid-table; the old tables, their trigger, the view and the foreign key from a table outside
// the run are exactly as before, and no shadow database stays. Fixed, the next run replaces
// the tables in one RENAME: new data, indexes and foreign keys, and the outside table's
// foreign key points at the new t.
TEST_F(MariaDbFailedRunTest, DropAndRecreateIntoMariaDbLeavesOldDataThenSwaps) {
  const std::string src = NewPostgres("fidm_drop_src");
  MakeNanSource(pg_, "fidm_drop_src");
  const std::string dst = NewMariaDb("fidm_drop_dst");
  MakeOldMariaTarget("fidm_drop_dst");
  const std::string before = Sum("fidm_drop_dst");
  json j = {{"name", "fidm-drop"},
            {"source", src},
            {"target", dst},
            {"schemaPolicy", "drop_and_recreate"},
            {"dataBundleSize", 500}};
  auto r = Run(Config(j));
  ASSERT_FALSE(r.ok()) << "NaN must fail the run";
  EXPECT_NE(r.status().ToString().find("NaN"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(Sum("fidm_drop_dst"), before);
  EXPECT_EQ(MScalar("SELECT COUNT(*) FROM t_view", "fidm_drop_dst"), "3000");
  EXPECT_EQ(MScalar("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = "
                    "'fidm_drop_dst'"),
            "1");
  EXPECT_EQ(Leftovers(), "/0");

  // An empty database stays empty.
  const std::string empty = NewMariaDb("fidm_drop_empty");
  j["name"] = "fidm-drop-empty";
  j["target"] = empty;
  r = Run(Config(j));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(MScalar("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                    "'fidm_drop_empty'"),
            "0");
  EXPECT_EQ(Leftovers(), "/0");

  // keepPartial: the shadow copies stay, named in the error; the next run drops them.
  j["name"] = "fidm-drop";
  j["target"] = dst;
  j["keepPartial"] = true;
  // One writer, so the bundles before the bad one (in the second fetch) have committed when it
  // fails: with two, the failure may stop the other writer before its first commit.
  r = Run(Config(j), 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("_dbs_sh_"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(Sum("fidm_drop_dst"), before);

  ASSERT_TRUE(pg_->Exec("UPDATE t SET f = 1 WHERE id = 15000", "fidm_drop_src").ok());
  j.erase("keepPartial");
  auto ok = Run(Config(j));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ExpectVerified(Config(j));
  EXPECT_EQ(MScalar("SELECT COUNT(*) FROM t", "fidm_drop_dst"), "30000");
  EXPECT_EQ(MScalar("SELECT COUNT(*) FROM t_view", "fidm_drop_dst"), "30000");
  EXPECT_EQ(MScalar("SELECT GROUP_CONCAT(CONCAT(TABLE_NAME, '>', REFERENCED_TABLE_NAME) ORDER BY "
                    "TABLE_NAME) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE "
                    "CONSTRAINT_SCHEMA = 'fidm_drop_dst'"),
            "o>t,t>p");
  EXPECT_EQ(MScalar("SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = "
                    "'fidm_drop_dst' AND TABLE_NAME = 't' AND INDEX_NAME = 't_v_idx'"),
            "1");
  EXPECT_EQ(Leftovers(), "/0");
}

// truncate_and_load into MariaDB: the target's own CHECK rejects row 15,000; the tables keep
// their old rows and the trigger. Without the CHECK the rows are replaced in one transaction;
// the table keeps its trigger and the outside foreign key.
TEST_F(MariaDbFailedRunTest, TruncateAndLoadIntoMariaDbLeavesOldDataThenRefills) {
  const std::string src = NewPostgres("fidm_trunc_src");
  MakeNanSource(pg_, "fidm_trunc_src");
  ASSERT_TRUE(pg_->Exec("UPDATE t SET f = 2 WHERE id = 15000", "fidm_trunc_src").ok());
  const std::string dst = NewMariaDb("fidm_trunc_dst");
  MakeOldMariaTarget("fidm_trunc_dst");
  const std::string before = Sum("fidm_trunc_dst");
  json j = {{"name", "fidm-trunc"},
            {"source", src},
            {"target", dst},
            {"writeMode", "truncate_and_load"},
            {"dataBundleSize", 500}};
  auto r = Run(Config(j));
  ASSERT_FALSE(r.ok()) << "the target's CHECK must reject row 15000";
  EXPECT_EQ(Sum("fidm_trunc_dst"), before);
  EXPECT_EQ(MScalar("SELECT COUNT(*) FROM o", "fidm_trunc_dst"), "1");
  EXPECT_EQ(Leftovers(), "/0");

  ASSERT_TRUE(maria_->Exec("ALTER TABLE t DROP CONSTRAINT t_v", "fidm_trunc_dst").ok());
  ASSERT_TRUE(maria_->Exec("DELETE FROM o", "fidm_trunc_dst").ok());
  auto ok = Run(Config(j));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ExpectVerified(Config(j));
  EXPECT_EQ(MScalar("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = "
                    "'fidm_trunc_dst'"),
            "1");
  EXPECT_EQ(MScalar("SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE "
                    "CONSTRAINT_SCHEMA = 'fidm_trunc_dst' AND TABLE_NAME = 'o'"),
            "1");
  EXPECT_EQ(Leftovers(), "/0");
}

// The writer is SIGKILLed inside the swap, after the RENAME (test hook
// DBS_TEST_MYSQL_SWAP_PAUSE): another writer of the same run finishes it — the outside foreign
// key re-pointed, the old tables dropped, the shadow database gone — and the data is exact.
TEST_F(MariaDbFailedRunTest, WriterKilledMidSwapIsFinishedByTheNextWriter) {
  auto nats = testing::NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status().ToString();
  const std::string src = NewPostgres("fidm_swap_src");
  MakeNanSource(pg_, "fidm_swap_src");
  ASSERT_TRUE(pg_->Exec("UPDATE t SET f = 3 WHERE id = 15000", "fidm_swap_src").ok());
  const std::string dst = NewMariaDb("fidm_swap_dst");
  MakeOldMariaTarget("fidm_swap_dst");
  json j = {{"name", "fidm-swap"},
            {"source", src},
            {"target", dst},
            {"schemaPolicy", "drop_and_recreate"},
            {"dataBundleSize", 1000}};
  const std::string cfg = WriteConfig(j);
  const std::string url = (*nats)->url();
  const std::string logs = data_dir_.string();
  Proc reader(DBS_READER_BIN, {"--nats-url", url, cfg}, logs + "/mr.log");
  {
    Proc victim(DBS_WRITER_BIN, {"--nats-url", url, "--id", "victim", cfg}, logs + "/mv.log",
                {"DBS_TEST_MYSQL_SWAP_PAUSE=120"});
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    bool paused = false;
    while (!paused && std::chrono::steady_clock::now() < deadline) {
      paused = ReadFile(logs + "/mv.log").find("pausing between the rename") != std::string::npos;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(paused) << ReadFile(logs + "/mv.log");
    victim.Kill();
  }
  Proc again(DBS_WRITER_BIN, {"--nats-url", url, "--id", "again", cfg}, logs + "/ma.log");
  EXPECT_EQ(again.Wait(std::chrono::seconds(120)), 0) << ReadFile(logs + "/ma.log");
  EXPECT_EQ(reader.Wait(std::chrono::seconds(60)), 0) << ReadFile(logs + "/mr.log");
  ExpectVerified(Config(j));
  EXPECT_EQ(MScalar("SELECT COUNT(*) FROM t", "fidm_swap_dst"), "30000");
  EXPECT_EQ(MScalar("SELECT REFERENCED_TABLE_NAME FROM information_schema.REFERENTIAL_CONSTRAINTS "
                    "WHERE CONSTRAINT_SCHEMA = 'fidm_swap_dst' AND TABLE_NAME = 'o'"),
            "t");
  EXPECT_EQ(Leftovers(), "/0");
}

// A value MariaDB refuses (a numeric beyond DECIMAL(65,30), digits beyond its 30 decimals)
// is named by source table, column and primary key, not by the line of a LOAD DATA statement;
// the failed run into an empty database leaves no table and no shadow database.
TEST_F(MariaDbFailedRunTest, RejectedValueNamesSourceTableColumnAndKey) {
  const std::string src = NewPostgres("fidm_err_src");
  ASSERT_TRUE(pg_->Exec("CREATE TABLE t (id int PRIMARY KEY, n numeric); "
                        "INSERT INTO t SELECT g, g FROM generate_series(1, 3000) g; "
                        "UPDATE t SET n = 1e70 WHERE id = 1555",
                        "fidm_err_src")
                  .ok());
  const std::string dst = NewMariaDb("fidm_err_dst");
  json j = {{"name", "fidm-err"}, {"source", src}, {"target", dst}};
  auto r = Run(Config(j), 1);
  ASSERT_FALSE(r.ok());
  const std::string msg = r.status().ToString();
  EXPECT_NE(msg.find("source table public.t, column n, key (id)=(1555)"), std::string::npos) << msg;
  EXPECT_EQ(MScalar("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                    "'fidm_err_dst'"),
            "0");
  EXPECT_EQ(Leftovers(), "/0");

  ASSERT_TRUE(pg_->Exec("UPDATE t SET n = 0.1234567890123456789012345678901234 WHERE id = 1555",
                        "fidm_err_src")
                  .ok());
  r = Run(Config(j), 1);
  ASSERT_FALSE(r.ok()) << "digits beyond the 30 decimals must not be cut silently";
  EXPECT_NE(r.status().ToString().find("key (id)=(1555)"), std::string::npos)
      << r.status().ToString();

  // Two writers, and bookkeeping another stream keeps in the target: the second writer to learn
  // of the failure finds the run abandoned already, and says only the cause.
  ASSERT_TRUE(maria_
                  ->Exec("CREATE DATABASE IF NOT EXISTS `_dbstreams`; CREATE TABLE IF NOT EXISTS "
                         "`_dbstreams`.`keepme` (x int); INSERT INTO `_dbstreams`.`keepme` "
                         "VALUES (1)")
                  .ok());
  r = Run(Config(j), 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToString().find("cleaning up the target failed"), std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(MScalar("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                    "'fidm_err_dst'"),
            "0");
  ASSERT_TRUE(maria_->Exec("DROP TABLE `_dbstreams`.`keepme`").ok());
}

}  // namespace
}  // namespace dbs

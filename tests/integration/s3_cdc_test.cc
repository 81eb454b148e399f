// CDC into S3 (s3rver from npm), with real servers: a MariaDB load+cdc stream into JSON Lines
// objects with two writers, verified (the bucket's snapshot with its change files replayed
// equals the source) and every change once, in commit order; two S3 sinks that share a
// run's JetStream commit log (a real nats-server) racing on the same batches publish each
// change exactly once; a CDC run into S3 without a commit log is refused before it writes.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "bus/commit_log.h"
#include "bus/jetstream.h"
#include "bus/protocol.h"
#include "config/connection.h"
#include "config/stream_config.h"
#include "objstore/object_store.h"
#include "run/local_run.h"
#include "sinks/sink.h"
#include "support/change_batches.h"
#include "support/jsonl.h"
#include "support/servers.h"
#include "support/streams.h"

namespace dbs {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::BatchBuilder;
using testing::Col;
using testing::I;
using testing::R;
using testing::S;
using testing::S3Server;
using testing::SharedServers;
using testing::U;

constexpr char kBucket[] = "dbs-cdc";

class S3CdcTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto s = S3Server::Start();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    s3_ = s->release();
    ASSERT_TRUE(s3_->CreateBucket(kBucket).ok());
  }
  static void TearDownTestSuite() {
    delete s3_;
    s3_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(s3_, nullptr);
    tmp_ = fs::temp_directory_path() / ("dbstreams-s3-cdc-" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_ / "bus");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }

  // The s3:// target URL of `prefix` (user and password apart, as a stream file gives them).
  json S3(const std::string& prefix, const std::string& query) {
    return {{"url", "s3://" + std::string(kBucket) + "/" + prefix + "?endpoint=" + s3_->endpoint() +
                        "&" + query},
            {"user", s3_->access_key()},
            {"password", s3_->secret_key()}};
  }
  std::unique_ptr<ObjectStore> Store(const std::string& prefix) {
    S3Settings o;
    o.endpoint = s3_->endpoint();
    o.bucket = kBucket;
    o.prefix = prefix;
    o.access_key = s3_->access_key();
    o.secret_key = s3_->secret_key();
    auto s = OpenS3Store(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  // Keys under `dir` (recursive), sorted.
  static std::vector<std::string> Keys(ObjectStore* store, const std::string& dir) {
    auto l = store->List(dir, true);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    std::vector<std::string> out;
    if (l.ok()) {
      for (const ObjectInfo& o : *l) {
        if (!o.is_prefix) out.push_back(o.key);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // The rows of the JSONL change files of `table`, in file name order.
  static std::vector<json> ChangeRows(ObjectStore* store, const std::string& table,
                                      std::vector<std::string>* names = nullptr) {
    std::vector<json> rows;
    for (const std::string& key : Keys(store, table + "/_changes/")) {
      const std::string n = key.substr(key.rfind('/') + 1);
      if (n.rfind("changes-", 0) != 0) continue;
      if (names) names->push_back(n);
      std::string bytes;
      EXPECT_TRUE(store->ReadRange(key, 0, 1 << 26, &bytes).ok()) << key;
      testing::AppendJsonlRows(bytes, key, &rows);
    }
    return rows;
  }
  // Change file names ("changes-<epoch>-<first>-<last>.ext") follow each other from message 1
  // without a gap or an overlap, in one run.
  static void ExpectContiguous(const std::vector<std::string>& names) {
    uint64_t next = 1;
    for (const std::string& n : names) {
      ASSERT_GE(n.size(), 64u) << n;
      EXPECT_EQ(n.substr(8, 22), names[0].substr(8, 22)) << n;
      EXPECT_EQ(std::stoull(n.substr(31, 16)), next) << n;
      next = std::stoull(n.substr(48, 16)) + 1;
    }
  }

  static S3Server* s3_;
  fs::path tmp_;
};

S3Server* S3CdcTest::s3_ = nullptr;

// MariaDB load+cdc into JSON Lines on S3 with two writers: verified, the changes in commit
// order, each once, in contiguous change files, and nothing staged left in the bucket.
TEST_F(S3CdcTest, MariaDbLoadAndChangesToJsonlOnS3) {
  auto m = SharedServers::MariaDb();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  testing::MariaDbServer* maria = *m;
  const std::string src = testing::FreshMariaDb(maria, "s3cdc_m");
  ASSERT_TRUE(maria
                  ->Exec("CREATE TABLE acct (id INT PRIMARY KEY, name VARCHAR(50), "
                         "amount DECIMAL(12,2), note TEXT);"
                         "INSERT INTO acct VALUES (1, 'ann', 10.10, 'a\\nb'), (2, 'bob', 0.20, "
                         "NULL), (3, 'cy', -3.00, 'ünï \"q\"');",
                         "s3cdc_m")
                  .ok());
  StreamConfig c = testing::MakeStreamConfig(
      "s3cdc_m", src, S3("maria", "format=jsonl&changeFileSeconds=0"), {{"mode", "load+cdc"}});
  auto store = Store("maria");
  ASSERT_NE(store, nullptr);

  std::atomic<bool> done{false};
  LocalRunOptions o;
  o.writers = 2;
  o.data_dir = (tmp_ / "bus").string();
  o.drain_when = [&] { return done.load(); };
  Result<RunSummary> result = Status::Internal("not run");
  std::thread run([&] { result = RunLocal(c, o, nullptr); });
  for (int i = 0; i < 600 && !store->Stat("acct/_manifest.json").ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const char* txns[] = {
      "INSERT INTO acct VALUES (4, 'dee', 4.40, 'x'), (5, 'eve', 5.55, NULL)",
      "UPDATE acct SET amount = 11.11 WHERE id = 1",
      "UPDATE acct SET id = 20, name = 'bobby' WHERE id = 2", "DELETE FROM acct WHERE id = 3",
      ("BEGIN; INSERT INTO acct VALUES (6, 'tmp', 6.00, NULL); UPDATE acct SET name = "
       "'tmp2' WHERE id = 6; DELETE FROM acct WHERE id = 6; COMMIT")};
  for (const char* sql : txns) EXPECT_TRUE(maria->Exec(sql, "s3cdc_m").ok()) << sql;
  // More than one batch of changes, so that both writers take part.
  for (int i = 100; i < 400; i += 20) {
    EXPECT_TRUE(maria
                    ->Exec("INSERT INTO acct SELECT seq, CONCAT('n', seq), seq / 100, NULL "
                           "FROM seq_" +
                               std::to_string(i) + "_to_" + std::to_string(i + 19),
                           "s3cdc_m")
                    .ok());
  }
  done.store(true);
  run.join();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->verdicts.size(), 1u);
  EXPECT_TRUE(result->verdicts[0].match()) << result->verdicts[0].Describe();

  std::vector<std::string> names;
  const std::vector<json> rows = ChangeRows(store.get(), "acct", &names);
  ASSERT_FALSE(names.empty());
  ExpectContiguous(names);
  std::vector<std::string> seen;
  for (const json& r : rows) {
    seen.push_back(r.at("_op").get<std::string>() + " " + std::to_string(r.at("id").get<int>()));
    EXPECT_FALSE(r.at("_position").get<std::string>().empty());
  }
  std::vector<std::string> want = {"insert 4",        "insert 5",  "update_before 1", "update 1",
                                   "update_before 2", "update 20", "delete 3",        "insert 6",
                                   "update_before 6", "update 6",  "delete 6"};
  for (int id = 100; id < 400; ++id) want.push_back("insert " + std::to_string(id));
  EXPECT_EQ(seen, want);
  // Nothing staged is left once the stream drained: no segment, no checkpoint object (the
  // checkpoint lives in the run's JetStream stream).
  for (const std::string& key : Keys(store.get(), ".dbs/cdc/")) {
    ADD_FAILURE() << "left in the bucket: " << key;
  }
}

// Two S3 sinks of one run, each with its own NATS connection to the run's JetStream stream,
// apply the same batches at the same time (as two writers given one redelivered batch do) and
// publish often: every change is in exactly one change file, in order, and the files follow
// each other without a gap or an overlap.
TEST_F(S3CdcTest, RacingWritersPublishEachChangeOnce) {
  auto nats = testing::NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status().ToString();
  bus::NatsOptions no;
  no.url = (*nats)->url();
  auto conn_a = bus::NatsConnection::Connect(no);
  ASSERT_TRUE(conn_a.ok()) << conn_a.status().ToString();
  auto conn_b = bus::NatsConnection::Connect(no);
  ASSERT_TRUE(conn_b.ok()) << conn_b.status().ToString();
  ASSERT_TRUE((*conn_a)->JetStreamReady().ok());
  bus::StreamSpec spec;
  spec.name = bus::JetStreamName("race");
  spec.subjects = bus::StoredSubjects("race");
  ASSERT_TRUE((*conn_a)->EnsureStream(spec).ok());

  auto target =
      ParseConnection(S3("race", "format=jsonl&changeFileRows=7&changeFileSeconds=0"), "target");
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  TableSchema t;
  t.schema = "public";
  t.name = "t";
  t.columns = {Col("id", "int", LogicalType::kInt32, false), Col("v", "text", LogicalType::kText)};
  t.primary_key = {"id"};
  auto open = [&](bus::NatsConnection* conn) {
    SinkOptions so;
    so.stream = "race.r1";
    so.mode = StreamMode::kCdc;
    so.commit_log = std::make_shared<bus::JetStreamCommitLog>(conn, "race");
    auto s = Sink::Open(*target, so);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  };
  auto a = open(conn_a->get());
  auto b = open(conn_b->get());
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->PrepareRun().ok());

  // Batch k (1..40): insert 3 rows, update one of them, delete the one before.
  constexpr int kBatches = 40;
  std::vector<BatchBuilder> batches(kBatches);
  for (int k = 0; k < kBatches; ++k) {
    BatchBuilder& bb = batches[k];
    bb.AddTable(t);
    std::vector<R> rows;
    for (int i = 0; i < 3; ++i) rows.push_back(R{RowOp::kInsert, {I(3 * k + i), S("v")}});
    rows.push_back(R{RowOp::kUpdate, {I(3 * k), S("w" + std::to_string(k))}});
    if (k > 0) rows.push_back(R{RowOp::kDelete, {I(3 * k - 1), U()}});
    bb.Txn({{&t, rows}});
  }
  std::atomic<uint64_t> applied{0};
  auto writer = [&](Sink* s) {
    for (int k = 0; k < kBatches; ++k) {
      auto n = s->ApplyChanges(batches[k].Batch(k + 1, k + 1));
      ASSERT_TRUE(n.ok()) << "batch " << k + 1 << ": " << n.status().ToString();
      applied += *n;
    }
  };
  std::thread ta(writer, a.get());
  std::thread tb(writer, b.get());
  ta.join();
  tb.join();
  // Each batch counted once, by the writer whose commit won.
  EXPECT_EQ(applied.load(), uint64_t{kBatches * 5 - 1});
  ASSERT_TRUE(a->FlushChanges(/*all=*/true).ok());
  ASSERT_TRUE(b->FlushChanges(/*all=*/true).ok());
  auto cp = a->ReadCdcCheckpoint(0);
  ASSERT_TRUE(cp.ok()) << cp.status().ToString();
  EXPECT_EQ(cp->seq, uint64_t{kBatches});

  auto store = Store("race");
  std::vector<std::string> names;
  const std::vector<json> rows = ChangeRows(store.get(), "t", &names);
  EXPECT_GE(names.size(), 2u);
  ExpectContiguous(names);
  std::vector<std::string> seen, want;
  for (const json& r : rows) {
    seen.push_back(r.at("_op").get<std::string>() + " " + std::to_string(r.at("id").get<int>()));
  }
  for (int k = 0; k < kBatches; ++k) {
    for (int i = 0; i < 3; ++i) want.push_back("insert " + std::to_string(3 * k + i));
    want.push_back("update " + std::to_string(3 * k));
    if (k > 0) want.push_back("delete " + std::to_string(3 * k - 1));
  }
  EXPECT_EQ(seen, want);
  for (const std::string& key : Keys(store.get(), ".dbs/cdc/")) {
    ADD_FAILURE() << "left in the bucket: " << key;
  }
}

// A CDC run into S3 whose writer has no commit log (a library user's own pipeline) is refused
// before it writes, saying what to run instead; a load is not.
TEST_F(S3CdcTest, ChangesWithoutCommitLogAreRefused) {
  auto target = ParseConnection(S3("nolog", "format=jsonl"), "target");
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  SinkOptions so;
  so.stream = "nolog.r1";
  so.mode = StreamMode::kCdc;
  auto s = Sink::Open(*target, so);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Status st = (*s)->PrepareRun();
  EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.ToString();
  EXPECT_NE(st.message().find("stream-writer"), std::string::npos) << st.ToString();
  so.mode = StreamMode::kLoad;
  auto load = Sink::Open(*target, so);
  ASSERT_TRUE(load.ok());
  EXPECT_TRUE((*load)->PrepareRun().ok());
  EXPECT_TRUE(Keys(Store("nolog").get(), "").empty());
}

}  // namespace
}  // namespace dbs

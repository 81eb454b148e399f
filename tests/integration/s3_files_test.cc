// Files on S3-compatible storage as sources and targets, end to end through NATS JetStream with
// real servers (s3rver from npm, MariaDB, PostgreSQL): MariaDB tables into Parquet and JSONL
// objects and back into PostgreSQL with the source's checksums; objects written by others
// (a CSV file, a folder of JSONL files, a glob) into PostgreSQL; the finish keeps one copy of a
// bundle two writers staged; wrong credentials and a missing bucket give clear errors.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/stream_config.h"
#include "objstore/object_store.h"
#include "run/local_run.h"
#include "sinks/sink.h"
#include "sources/files/file_common.h"
#include "sources/source.h"
#include "support/servers.h"
#include "support/streams.h"
#include "verify/checksum.h"

namespace dbs {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::MariaDbServer;
using testing::PostgresServer;
using testing::S3Server;
using testing::SharedServers;

constexpr char kBucket[] = "dbs-files";

// Edge values that files must keep: exact decimals beyond 38 digits, binary with NUL and
// quotes, unicode, microsecond timestamps, JSON spacing, unsigned 64-bit, NULLs.
constexpr char kEdgeTable[] = R"sql(
  CREATE TABLE edge (
    id int PRIMARY KEY,
    big decimal(65,30),
    u varchar(100),
    b varbinary(64),
    ts datetime(6),
    j json,
    f double,
    ui bigint unsigned
  ) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  INSERT INTO edge VALUES
    (1, 12345678901234567890123456789012345.123456789012345678901234567890, 'plain',
     X'00FF5C27220A0D', '2024-02-29 23:59:59.123456', '{"a":  1, "b": [1, 2.50]}', 1.5,
     18446744073709551615),
    (2, -1.5, 'ünïcødé ✓ 日本語 🎉', X'', '1970-01-01 00:00:00.000001', '[]', -0.0, 0),
    (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
  INSERT INTO edge (id, big, u, ts)
    SELECT seq, seq / 7, CONCAT('row ', seq), '2023-01-01 00:00:00' + INTERVAL seq SECOND
    FROM seq_4_to_2500;
)sql";

class S3FilesTest : public ::testing::Test {
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
    auto m = SharedServers::MariaDb();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    maria_ = *m;
    auto p = SharedServers::Postgres();
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pg_ = *p;
    dir_ = fs::temp_directory_path() / ("dbstreams-s3-files-test-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // The s3:// connection of `prefix` in the test bucket, as a stream file gives it.
  json S3(const std::string& prefix, const std::string& query = "",
          const std::string& secret = "") {
    return {{"url", "s3://" + std::string(kBucket) + "/" + prefix + "?endpoint=" + s3_->endpoint() +
                        (query.empty() ? "" : "&" + query)},
            {"user", s3_->access_key()},
            {"password", secret.empty() ? s3_->secret_key() : secret}};
  }
  // The bucket (at `prefix`) as an object store, to look at what a run left.
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
  static Status Put(ObjectStore* store, const std::string& key, const std::string& bytes) {
    DBS_ASSIGN_OR_RETURN(auto w, store->Create(key));
    DBS_RETURN_IF_ERROR(w->Write(bytes));
    return w->Commit();
  }

  std::string NewMariaDb(const std::string& name) { return testing::FreshMariaDb(maria_, name); }
  std::string NewPostgres(const std::string& name) { return testing::FreshPostgres(pg_, name); }

  StreamConfig Config(const std::string& name, const json& src, const json& dst,
                      json extra = json::object()) {
    return testing::MakeStreamConfig(name, src, dst, extra);
  }
  Result<RunSummary> Run(const StreamConfig& c, int writers = 2) {
    return testing::RunStream(c, writers, (dir_ / "nats").string());
  }
  void RunAndVerify(const StreamConfig& c, int writers = 2) {
    testing::RunAndExpectVerified(c, writers, (dir_ / "nats").string());
  }
  void ExpectSameData(const json& src, const json& dst, const json& tables,
                      const std::string& target_schema = "") {
    testing::ExpectSameChecksums(src, dst, tables, target_schema);
  }

  static S3Server* s3_;
  MariaDbServer* maria_ = nullptr;
  PostgresServer* pg_ = nullptr;
  fs::path dir_;
};

S3Server* S3FilesTest::s3_ = nullptr;

// A manifest of `rows` rows in part files of at most `per` rows (a writer commits a part when it
// has held it a while, so parts may be smaller), each with its checksum; the table folder of
// `store` holds exactly those parts and the manifest.
void ExpectParts(ObjectStore* store, const std::string& table, const files::Manifest& m,
                 uint64_t rows, uint64_t per) {
  EXPECT_EQ(m.rows, rows);
  EXPECT_GE(m.files.size(), (rows + per - 1) / per);
  uint64_t sum = 0;
  std::vector<std::string> names = {table + "/_manifest.json"};
  for (const auto& f : m.files) {
    EXPECT_GT(f.rows, 0u) << f.name;
    EXPECT_LE(f.rows, per) << f.name;
    EXPECT_EQ(f.sha256.size(), 64u) << f.name;
    sum += f.rows;
    names.push_back(table + "/" + f.name);
  }
  EXPECT_EQ(sum, rows);
  std::sort(names.begin(), names.end());
  auto objects = store->List(table, false);
  ASSERT_TRUE(objects.ok()) << objects.status().ToString();
  std::vector<std::string> keys;
  for (const ObjectInfo& o : *objects) keys.push_back(o.key);
  EXPECT_EQ(keys, names) << "the parts and the manifest, nothing else";
}

class S3RoundTrip : public S3FilesTest, public ::testing::WithParamInterface<const char*> {};

// MariaDB -> files on S3 (two writers, small bundles, several part files) -> PostgreSQL, each
// run verified, and PostgreSQL equal to the MariaDB table. Nothing of the run's staging stays.
TEST_P(S3RoundTrip, MariaDbToS3AndIntoPostgresKeepsTheChecksums) {
  const std::string format = GetParam();
  const std::string db = "s3_rt_" + format;
  const std::string src = NewMariaDb(db);
  ASSERT_TRUE(maria_->Exec(kEdgeTable, db).ok());
  const std::string prefix = "rt-" + format;
  RunAndVerify(Config("m2s3-" + format, src, S3(prefix, "format=" + format + "&rowsPerFile=1000"),
                      {{"dataBundleSize", 300}}));
  auto store = Store(prefix);
  ASSERT_NE(store, nullptr);
  std::string text;
  ASSERT_TRUE(store->ReadRange("edge/_manifest.json", 0, 1 << 20, &text).ok());
  auto m = files::ManifestFromJson(json::parse(text));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ExpectParts(store.get(), "edge", *m, 2500, 1000);
  const size_t first_files = m->files.size();
  auto staged = store->List(".dbs/runs", true);
  ASSERT_TRUE(staged.ok()) << staged.status().ToString();
  EXPECT_TRUE(staged->empty()) << staged->front().key;

  const std::string pg = NewPostgres("s3_rt_pg_" + format);
  RunAndVerify(Config("s3p-" + format, S3(prefix), pg));
  ExpectSameData(src, pg, json::array({"edge"}), "public");
  // ...and equal to a direct MariaDB -> PostgreSQL load: the same column types, the same rows.
  const std::string direct = NewPostgres("s3_rt_direct_" + format);
  RunAndVerify(Config("m2p-direct-" + format, src, direct, {{"targetSchema", "public"}}));
  ExpectSameData(direct, pg, json::array({"public.edge"}), "public");
  const std::string types =
      "SELECT string_agg(column_name || ' ' || data_type || coalesce('(' || "
      "character_maximum_length || ')', '') || coalesce('(' || numeric_precision || ',' || "
      "numeric_scale || ')', ''), ', ' ORDER BY ordinal_position) FROM "
      "information_schema.columns WHERE table_schema = 'public' AND table_name = 'edge'";
  auto via_s3 = pg_->Query(types, "s3_rt_pg_" + format);
  auto straight = pg_->Query(types, "s3_rt_direct_" + format);
  ASSERT_TRUE(via_s3.ok() && straight.ok());
  EXPECT_EQ((*via_s3)[0][0], (*straight)[0][0]);
  auto exact = pg_->Query("SELECT big::text, encode(b, 'hex'), u FROM public.edge WHERE id = 1",
                          "s3_rt_pg_" + format);
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_EQ((*exact)[0][0], "12345678901234567890123456789012345.123456789012345678901234567890");
  EXPECT_EQ((*exact)[0][1], "00ff5c27220a0d");

  // truncate_and_load replaces the files: the new manifest lists only new parts, the old
  // ones are gone.
  RunAndVerify(Config("m2s3b-" + format, src, S3(prefix, "format=" + format + "&rowsPerFile=1000"),
                      {{"writeMode", "truncate_and_load"}, {"dataBundleSize", 300}}));
  ASSERT_TRUE(store->ReadRange("edge/_manifest.json", 0, 1 << 20, &text).ok());
  m = files::ManifestFromJson(json::parse(text));
  ASSERT_TRUE(m.ok());
  ExpectParts(store.get(), "edge", *m, 2500, 1000);
  ASSERT_FALSE(m->files.empty());
  char first[16];
  std::snprintf(first, sizeof first, "part-%05zu", first_files);
  EXPECT_EQ(m->files.front().name.rfind(first, 0), 0u) << m->files.front().name;
}

INSTANTIATE_TEST_SUITE_P(Formats, S3RoundTrip, ::testing::Values("parquet", "csv", "jsonl"),
                         [](const auto& info) { return std::string(info.param); });

// Objects written by others (no manifest: sniffed) into PostgreSQL: a CSV file, a folder of
// JSONL files (one table), and a glob that picks some CSV files of a folder.
TEST_F(S3FilesTest, ObjectsOfOthersIntoPostgres) {
  auto store = Store("in");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(
      Put(store.get(), "people.csv", "id,name,amount\n1,Ann,12.50\n2,\"Bob, Jr.\",0.01\n3,Zoë,-7\n")
          .ok());
  ASSERT_TRUE(Put(store.get(), "events/2026-01.jsonl",
                  "{\"id\": 1, \"kind\": \"a\"}\n{\"id\": 2, \"kind\": \"b\"}\n")
                  .ok());
  ASSERT_TRUE(Put(store.get(), "events/2026-02.jsonl", "{\"id\": 3, \"kind\": \"c\"}\n").ok());
  const std::string pg = NewPostgres("s3_in");
  RunAndVerify(Config("s3-in", S3("in"), pg));
  auto people = pg_->Query(
      "SELECT string_agg(id || ':' || name || ':' || amount, ' ' ORDER BY id) "
      "FROM public.people",
      "s3_in");
  ASSERT_TRUE(people.ok()) << people.status().ToString();
  EXPECT_EQ((*people)[0][0], "1:Ann:12.5 2:Bob, Jr.:0.01 3:Zoë:-7");
  auto events =
      pg_->Query("SELECT string_agg(id || kind, ' ' ORDER BY id) FROM public.events", "s3_in");
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  EXPECT_EQ((*events)[0][0], "1a 2b 3c");

  ASSERT_TRUE(Put(store.get(), "drop/a-1.csv", "id,v\n1,x\n").ok());
  ASSERT_TRUE(Put(store.get(), "drop/b-2.csv", "id,v\n2,y\n").ok());
  const std::string pg2 = NewPostgres("s3_glob");
  RunAndVerify(Config("s3-glob", S3("in/drop/a-*.csv"), pg2));
  auto tables = pg_->Query(
      "SELECT string_agg(table_name, ',' ORDER BY table_name) FROM information_schema.tables "
      "WHERE table_schema = 'public'",
      "s3_glob");
  ASSERT_TRUE(tables.ok()) << tables.status().ToString();
  EXPECT_EQ((*tables)[0][0], "a-1");
}

class S3Overlap : public S3FilesTest, public ::testing::WithParamInterface<const char*> {};

// Two writers that commit the same bundles (a redelivery while the first still writes, which S3
// cannot lock against) leave overlapping segments; the finish writes every row once, in bundle
// order: the later segment is written again without the shared bundle, in its own format, with
// its awkward values (quotes, commas, newlines, empty text and NULL) intact.
TEST_P(S3Overlap, OverlappingSegmentsAreWrittenOnce) {
  const std::string format = GetParam();
  TableSchema t;
  t.schema = "public";
  t.name = "t";
  Column id;
  id.name = "id";
  id.type = LogicalType::kInt64;
  Column v;
  v.name = "v";
  v.type = LogicalType::kText;
  v.nullable = true;
  t.columns = {id, v};
  t.primary_key = {"id"};
  // Bundle k holds ids 10k .. 10k+9.
  auto value = [](int i) -> std::optional<std::string> {
    switch (i % 5) {
      case 0:
        return "v" + std::to_string(i);
      case 1:
        return "a \"quoted\", comma\nand newline " + std::to_string(i);
      case 2:
        return std::string();
      case 3:
        return std::nullopt;
      default:
        return "ünï " + std::to_string(i);
    }
  };
  std::vector<Bundle> bundles(4);
  for (int k = 0; k < 4; ++k) {
    bundles[k].columns.emplace_back(LogicalType::kInt64);
    bundles[k].columns.emplace_back(LogicalType::kText);
    for (int i = 0; i < 10; ++i) {
      bundles[k].columns[0].AppendInt(10 * k + i);
      auto val = value(10 * k + i);
      if (val) {
        bundles[k].columns[1].AppendBytes(*val);
      } else {
        bundles[k].columns[1].AppendNull();
      }
    }
  }
  auto ref = [&](int k) { return BundleRef{"t.0." + std::to_string(k), &t, &bundles[k]}; };
  const std::string prefix = "dedup-" + format;
  auto target = ParseConnection(S3(prefix, "format=" + format), "target");
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  SinkOptions so;
  so.stream = "dedup.1";
  so.shadow_tables = true;
  auto a = Sink::Open(*target, so);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE((*a)->DefersCommit());
  ASSERT_TRUE((*a)->PrepareTable(t).ok());
  ASSERT_TRUE((*a)->Apply({ref(0)}).ok());
  ASSERT_TRUE((*a)->CommitStaged().ok());
  auto settled = (*a)->TakeSettled();
  EXPECT_EQ(settled.committed, (std::vector<std::string>{"t.0.0"}));
  auto b = Sink::Open(*target, so);
  ASSERT_TRUE(b.ok());
  auto nb = (*b)->Apply({ref(0), ref(1), ref(2)});  // bundle 0 is committed: skipped
  ASSERT_TRUE(nb.ok()) << nb.status().ToString();
  EXPECT_EQ(*nb, 2u);
  ASSERT_TRUE((*b)->CommitStaged().ok());
  settled = (*b)->TakeSettled();
  EXPECT_EQ(settled.committed, (std::vector<std::string>{"t.0.0", "t.0.1", "t.0.2"}));
  EXPECT_TRUE(settled.dropped.empty());
  // A writer that committed bundles 2 and 3 without seeing b's segment: its segment (staged by
  // a sink of another run, then moved into this run's staging) overlaps b's by bundle 2.
  SinkOptions other = so;
  other.stream = "dedup.other";
  auto c = Sink::Open(*target, other);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->Apply({ref(2), ref(3)}).ok());
  ASSERT_TRUE((*c)->CommitStaged().ok());
  auto store = Store(prefix);
  auto staged = store->List(".dbs/runs/dedup.other/t", false);
  ASSERT_TRUE(staged.ok()) << staged.status().ToString();
  ASSERT_EQ(staged->size(), 2u) << "the segment and its .ids record";
  for (const ObjectInfo& o : *staged) {
    std::string bytes;
    ASSERT_TRUE(store->ReadRange(o.key, 0, 1 << 24, &bytes).ok());
    const std::string name = o.key.substr(o.key.rfind('/') + 1);
    ASSERT_TRUE(Put(store.get(), ".dbs/runs/dedup.1/t/" + name, bytes).ok());
  }
  ASSERT_TRUE((*a)->FinishStream({t}).ok());
  ASSERT_TRUE((*b)->FinishStream({t}).ok());  // finished already: nothing to do
  ASSERT_TRUE((*a)->ForgetStream().ok());
  std::string text;
  ASSERT_TRUE(store->ReadRange("t/_manifest.json", 0, 1 << 20, &text).ok());
  auto m = files::ManifestFromJson(json::parse(text));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ExpectParts(store.get(), "t", *m, 40, 20);
  ASSERT_EQ(m->files.size(), 3u) << "bundle 0; bundles 1 and 2; bundle 3 written again";
  EXPECT_EQ(m->files[2].rows, 10u);

  auto source = Source::Open(*ParseConnection(S3(prefix), "source"));
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto schema = (*source)->Describe({"public", "t"});
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  EXPECT_EQ(schema->estimated_rows, 40u);
  auto snap = (*source)->BeginSnapshot(1);
  ASSERT_TRUE(snap.ok());
  ReadSpec spec;
  spec.table = *schema;
  auto reader = (*snap)->OpenReader(spec);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  std::vector<int64_t> ids;
  std::vector<std::optional<std::string>> values;
  while (true) {
    Bundle out;
    for (const Column& col : schema->columns) out.columns.emplace_back(col.type);
    auto more = (*reader)->Next(&out, 1000, 1 << 20);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    for (size_t r = 0; r < out.rows(); ++r) {
      ids.push_back(out.columns[0].GetInt(r));
      if (out.columns[1].IsNull(r)) {
        values.push_back(std::nullopt);
      } else {
        values.push_back(std::string(out.columns[1].GetBytes(r)));
      }
    }
    if (!*more) break;
  }
  ASSERT_EQ(ids.size(), 40u);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(ids[i], i) << "row " << i;
    EXPECT_EQ(values[i], value(i)) << "row " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, S3Overlap, ::testing::Values("parquet", "csv", "jsonl"),
                         [](const auto& info) { return std::string(info.param); });

std::string ReadLog(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A writer process SIGKILLed while it stages segments on S3, and a new one started: every row
// once, exactly the part files of the manifest, nothing left in the staging.
TEST_F(S3FilesTest, WriterKilledMidLoadLeavesNoDuplicateOrPartialFile) {
  auto nats = testing::NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status().ToString();
  const std::string src = NewPostgres("s3_kill_src");
  ASSERT_TRUE(
      pg_->Exec("CREATE TABLE t (id int PRIMARY KEY, v varchar(200)); "
                "INSERT INTO t SELECT g, repeat('x', g % 200) FROM generate_series(1, 200000) g",
                "s3_kill_src")
          .ok());
  json j = {{"name", "s3-kill"},
            {"source", src},
            {"target", S3("kill", "format=parquet&rowsPerFile=100000")},
            {"dataBundleSize", 500}};
  const std::string cfg = (dir_ / "s3-kill.json").string();
  std::ofstream(cfg) << j.dump(2);
  const std::string url = (*nats)->url();
  const std::string logs = dir_.string();
  auto store = Store("kill");
  ASSERT_NE(store, nullptr);
  auto segments = [&] {
    auto l = store->List(".dbs/runs", true);
    int n = 0;
    if (l.ok()) {
      for (const ObjectInfo& o : *l)
        n += o.key.size() > 4 && o.key.substr(o.key.size() - 4) == ".ids";
    }
    return n;
  };
  testing::BinaryProc r(DBS_READER_BIN, {"--nats-url", url, cfg}, logs + "/r.log");
  {
    testing::BinaryProc w(DBS_WRITER_BIN, {"--nats-url", url, "--id", "victim", cfg},
                          logs + "/victim.log");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    int n = 0;
    while (std::chrono::steady_clock::now() < deadline && (n = segments()) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_GT(n, 0) << ReadLog(logs + "/victim.log");
    w.Kill();
    w.Wait(std::chrono::seconds(10));
    EXPECT_FALSE(store->Stat("t/_manifest.json").ok()) << "killed before the end";
  }
  testing::BinaryProc again(DBS_WRITER_BIN, {"--nats-url", url, "--id", "again", cfg},
                            logs + "/again.log");
  EXPECT_EQ(again.Wait(std::chrono::seconds(300)), 0) << ReadLog(logs + "/again.log");
  EXPECT_EQ(r.Wait(std::chrono::seconds(60)), 0) << ReadLog(logs + "/r.log");
  std::string text;
  ASSERT_TRUE(store->ReadRange("t/_manifest.json", 0, 1 << 20, &text).ok());
  auto m = files::ManifestFromJson(json::parse(text));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ExpectParts(store.get(), "t", *m, 200000, 100000);
  EXPECT_EQ(segments(), 0) << "the staging is removed";
  auto v = VerifyStream(Config("s3-kill-check", src, S3("kill")));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  for (const auto& t : *v) EXPECT_TRUE(t.match()) << t.Describe();
}

// The S3 server killed in the middle of a target run (SIGKILL, while segments are being
// uploaded) and started again on the same port a few seconds later: the writers retry, and the
// run ends verified, every row once, the staging removed.
TEST_F(S3FilesTest, ServerKilledMidRunAndBackEndsVerified) {
  auto own = S3Server::Start();
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  S3Server& s3 = **own;
  ASSERT_TRUE(s3.CreateBucket("outage").ok());
  const std::string src = NewPostgres("s3_outage_src");
  ASSERT_TRUE(
      pg_->Exec("CREATE TABLE t (id int PRIMARY KEY, v varchar(200)); "
                "INSERT INTO t SELECT g, repeat('y', g % 200) FROM generate_series(1, 100000) g",
                "s3_outage_src")
          .ok());
  const json dst = {{"url", "s3://outage/out?endpoint=" + s3.endpoint() + "&rowsPerFile=60000"},
                    {"user", s3.access_key()},
                    {"password", s3.secret_key()}};
  S3Settings o;
  o.endpoint = s3.endpoint();
  o.bucket = "outage";
  o.prefix = "out";
  o.access_key = s3.access_key();
  o.secret_key = s3.secret_key();
  auto store = OpenS3Store(o);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  StreamConfig c = Config("s3-outage", src, dst, {{"dataBundleSize", 500}});
  Result<RunSummary> result = Status::Internal("not run");
  std::thread run([&] { result = Run(c); });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool staged = false;
  while (!staged && std::chrono::steady_clock::now() < deadline) {
    auto l = (*store)->List(".dbs/runs", true);
    staged = l.ok() && !l->empty();
    if (!staged) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(staged);
  s3.Kill();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_TRUE(s3.Restart().ok()) << s3.LogTail();
  run.join();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->verdicts.size(), 1u);
  EXPECT_TRUE(result->verdicts[0].match()) << result->verdicts[0].Describe();
  std::string text;
  ASSERT_TRUE((*store)->ReadRange("t/_manifest.json", 0, 1 << 20, &text).ok());
  auto m = files::ManifestFromJson(json::parse(text));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ExpectParts(store->get(), "t", *m, 100000, 60000);
  auto left = (*store)->List(".dbs/runs", true);
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty()) << left->size() << " staging objects left";
}

// Wrong credentials and a missing bucket: clear errors that name the bucket, never the secret.
TEST_F(S3FilesTest, WrongCredentialsAndMissingBucket) {
  const std::string pg = NewPostgres("s3_bad");
  auto r = Run(Config("s3-bad", S3("in", "", "not-the-secret-5f3a"), pg), 1);
  ASSERT_FALSE(r.ok());
  const std::string msg = r.status().ToString();
  EXPECT_NE(msg.find(kBucket), std::string::npos) << msg;
  EXPECT_EQ(msg.find("not-the-secret-5f3a"), std::string::npos) << msg;
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << msg;

  json missing = S3("x");
  missing["url"] = "s3://no-such-bucket-dbs/x?endpoint=" + s3_->endpoint();
  r = Run(Config("s3-missing", missing, pg), 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("no-such-bucket-dbs"), std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
}

}  // namespace
}  // namespace dbs

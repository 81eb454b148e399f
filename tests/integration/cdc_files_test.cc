// CDC into files: change logs of MariaDB and PostgreSQL tables as JSONL and Parquet change
// files, end to end through NATS JetStream with real servers (inserts, updates with and without
// a key change, deletes, in commit order; rolling by size; a restarted stream that resumes), and
// the file target's change delivery with batches built by hand (redelivery, gaps, a crash
// between a change file's rename and its checkpoint, new columns).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/connection.h"
#include "config/stream_config.h"
#include "run/local_run.h"
#include "sinks/sink.h"
#include "sources/files/duck.h"
#include "sources/source.h"
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
using testing::MariaDbServer;
using testing::PostgresServer;
using testing::R;
using testing::S;
using testing::SharedServers;
using testing::U;

// The change files of `table` under `root`, in name order.
std::vector<std::string> ChangeFilesOf(const std::string& root, const std::string& table) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root + "/" + table + "/_changes", ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("changes-", 0) == 0) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every row of JSONL files, in order.
std::vector<json> JsonlRows(const std::vector<std::string>& files) {
  std::vector<json> rows;
  for (const std::string& f : files) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    testing::AppendJsonlRows(text.str(), f, &rows);
  }
  return rows;
}

// The run epoch and message range in change file names ("changes-<epoch>-<first>-<last>.ext").
struct FileRange {
  std::string epoch;
  uint64_t first = 0, last = 0;
};
std::vector<FileRange> Ranges(const std::vector<std::string>& files) {
  std::vector<FileRange> out;
  for (const std::string& f : files) {
    const std::string n = fs::path(f).filename().string();
    EXPECT_EQ(n.substr(0, 8), "changes-") << n;
    out.push_back({n.substr(8, 22), std::stoull(n.substr(31, 16)), std::stoull(n.substr(48, 16))});
  }
  return out;
}

// Within a run, ranges follow each other from message 1 without a gap or an overlap; the
// number of runs.
size_t ExpectContiguous(const std::vector<FileRange>& ranges) {
  size_t runs = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (i == 0 || ranges[i].epoch != ranges[i - 1].epoch) {
      ++runs;
      if (i > 0) {
        EXPECT_GT(ranges[i].epoch, ranges[i - 1].epoch);
      }
      EXPECT_EQ(ranges[i].first, 1u) << "file " << i;
    } else {
      EXPECT_EQ(ranges[i].first, ranges[i - 1].last + 1) << "file " << i;
    }
  }
  return runs;
}

class CdcFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = SharedServers::MariaDb();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    maria_ = *m;
    auto p = SharedServers::Postgres();
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pg_ = *p;
    tmp_ = fs::temp_directory_path() / ("dbstreams-cdc-files-" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_ / "bus");
    fs::create_directories(tmp_ / "out");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
  std::string Out() const { return (tmp_ / "out").string(); }

  // Runs `c` with two writers until `ready` holds, calls `change`, then drains.
  Result<RunSummary> RunAround(const StreamConfig& c, const std::function<bool()>& ready,
                               const std::function<void()>& change) {
    std::atomic<bool> done{false};
    LocalRunOptions o;
    o.writers = 2;
    o.data_dir = (tmp_ / "bus").string();
    o.drain_when = [&] { return done.load(); };
    Result<RunSummary> result = Status::Internal("not run");
    std::thread run([&] { result = RunLocal(c, o, nullptr); });
    for (int i = 0; i < 600 && !ready(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    change();
    done.store(true);
    run.join();
    return result;
  }

  // The slot's confirmed_flush_lsn: empty while it does not exist or is still being created
  // (a slot shows in pg_replication_slots before its consistent point, and changes committed
  // before that point are not in it).
  std::string SlotReadyAt(const std::string& slot) {
    auto r = pg_->Query(
        "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '" + slot +
        "' AND confirmed_flush_lsn IS NOT NULL");
    return r.ok() && !r->empty() && (*r)[0][0] ? *(*r)[0][0] : std::string();
  }
  void DropSlot(const std::string& slot) {
    (void)pg_->Exec(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
        "WHERE slot_name = '" +
        slot + "' AND NOT active");
  }

  MariaDbServer* maria_ = nullptr;
  PostgresServer* pg_ = nullptr;
  fs::path tmp_;
};

// MariaDB load+cdc into JSON Lines: the snapshot as part files, then every change in commit
// order with its operation, and snapshot + changes replayed equal the source's final rows.
TEST_F(CdcFilesTest, MariaDbLoadAndChangesToJsonl) {
  const std::string src = testing::FreshMariaDb(maria_, "cdcf_m");
  ASSERT_TRUE(maria_
                  ->Exec("CREATE TABLE acct (id INT PRIMARY KEY, name VARCHAR(50), "
                         "amount DECIMAL(12,2), note TEXT);"
                         "INSERT INTO acct VALUES (1, 'ann', 10.10, 'a\\nb'), (2, 'bob', 0.20, "
                         "NULL), (3, 'cy', -3.00, 'ünï \"q\"');",
                         "cdcf_m")
                  .ok());
  const std::string dst = "file://" + Out() + "?format=jsonl&changeFileSeconds=0";
  // The run's verification reads the folder as the snapshot with its change files replayed.
  StreamConfig c = testing::MakeStreamConfig("cdcf_m", src, dst, {{"mode", "load+cdc"}});
  auto result = RunAround(
      c, [&] { return fs::exists(Out() + "/acct/_manifest.json"); },
      [&] {
        const char* txns[] = {
            "INSERT INTO acct VALUES (4, 'dee', 4.40, 'x'), (5, 'eve', 5.55, NULL)",
            "UPDATE acct SET amount = 11.11 WHERE id = 1",
            "UPDATE acct SET id = 20, name = 'bobby' WHERE id = 2", "DELETE FROM acct WHERE id = 3",
            ("BEGIN; INSERT INTO acct VALUES (6, 'tmp', 6.00, NULL); UPDATE acct SET name = "
             "'tmp2' WHERE id = 6; DELETE FROM acct WHERE id = 6; COMMIT")};
        for (const char* sql : txns) EXPECT_TRUE(maria_->Exec(sql, "cdcf_m").ok()) << sql;
      });
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->verdicts.size(), 1u);
  EXPECT_TRUE(result->verdicts[0].match()) << result->verdicts[0].Describe();

  const std::vector<std::string> files = ChangeFilesOf(Out(), "acct");
  ASSERT_FALSE(files.empty());
  ExpectContiguous(Ranges(files));
  const std::vector<json> rows = JsonlRows(files);
  std::vector<std::string> seen;
  for (const json& r : rows) {
    seen.push_back(r.at("_op").get<std::string>() + " " + std::to_string(r.at("id").get<int>()));
    EXPECT_FALSE(r.at("_position").get<std::string>().empty());
    EXPECT_FALSE(r.at("_commit_ts").get<std::string>().empty());
    EXPECT_TRUE(r.at("_unchanged").is_null()) << r.dump();  // MariaDB sends full images
  }
  const std::vector<std::string> want = {
      "insert 4", "insert 5", "update_before 1", "update 1", "update_before 2", "update 20",
      "delete 3", "insert 6", "update_before 6", "update 6", "delete 6"};
  EXPECT_EQ(seen, want);
  // A delete carries the old row; an update its new image.
  for (const json& r : rows) {
    if (r["_op"] == "delete" && r["id"] == 3) {
      EXPECT_EQ(r["name"], "cy");
    }
    if (r["_op"] == "update" && r["id"] == 20) {
      EXPECT_EQ(r["name"], "bobby");
    }
  }

  // Snapshot + changes replayed by key = the source now.
  std::map<int, std::string> state;
  std::vector<std::string> parts;
  for (const auto& e : fs::directory_iterator(Out() + "/acct")) {
    if (e.path().filename().string().rfind("part-", 0) == 0) parts.push_back(e.path().string());
  }
  for (const json& r : JsonlRows(parts)) state[r["id"].get<int>()] = r["name"];
  ASSERT_EQ(state.size(), 3u);
  for (const json& r : rows) {
    const int id = r["id"].get<int>();
    if (r["_op"] == "insert" || r["_op"] == "update") {
      state[id] = r["name"];
    } else {
      state.erase(id);
    }
  }
  auto now = maria_->Query("SELECT id, name FROM acct ORDER BY id", "cdcf_m");
  ASSERT_TRUE(now.ok());
  std::map<int, std::string> source;
  for (const auto& row : *now) source[std::stoi(*row[0])] = *row[1];
  EXPECT_EQ(state, source);
  // Nothing staged is left once the stream drained.
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(Out() + "/.dbs/cdc", ec)) {
    EXPECT_NE(e.path().extension(), ".parquet") << e.path();
  }
}

// PostgreSQL cdc into Parquet, change files rolled by size; a second run of the stream (a new
// run starts from the source's current position) adds files that sort after the first run's
// and overwrite none: every inserted row exactly once.
TEST_F(CdcFilesTest, PostgresChangesToParquetRollAndSecondRun) {
  const std::string src = testing::FreshPostgres(pg_, "cdcf_p");
  ASSERT_TRUE(
      pg_->Exec("CREATE TABLE ev (id int PRIMARY KEY, v text, n numeric(20,4));", "cdcf_p").ok());
  DropSlot("dbs_cdcf_p");
  const std::string dst =
      "file://" + Out() + "?format=parquet&changeFileRows=40&changeFileSeconds=3600";
  StreamConfig c = testing::MakeStreamConfig("cdcf_p", src, dst,
                                             {{"mode", "cdc"}, {"cdc", {{"batchChanges", 25}}}});
  auto insert = [&](int from, int to) {
    for (int i = from; i <= to; i += 10) {
      std::string sql = "INSERT INTO ev SELECT g, 'row ' || g, g * 1.0001 FROM generate_series(" +
                        std::to_string(i) + ", " + std::to_string(std::min(to, i + 9)) + ") g";
      EXPECT_TRUE(pg_->Exec(sql, "cdcf_p").ok());
    }
  };
  auto first = RunAround(
      c, [&] { return !SlotReadyAt("dbs_cdcf_p").empty(); }, [&] { insert(1, 230); });
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const size_t first_files = ChangeFilesOf(Out(), "ev").size();
  EXPECT_GE(first_files, 4u);  // 230 changes, rolled at 40 or more each, plus the final flush
  // The second run replaces the slot: it is ready when the new slot reached its consistent
  // point, elsewhere than the old one.
  const std::string before = SlotReadyAt("dbs_cdcf_p");
  auto second = RunAround(
      c,
      [&] {
        const std::string now = SlotReadyAt("dbs_cdcf_p");
        return !now.empty() && now != before;
      },
      [&] { insert(231, 260); });
  ASSERT_TRUE(second.ok()) << second.status().ToString();

  const std::vector<std::string> files = ChangeFilesOf(Out(), "ev");
  EXPECT_GT(files.size(), first_files);
  EXPECT_EQ(ExpectContiguous(Ranges(files)), 2u);
  auto duck = files::Duck::Open(1, "128MB");
  ASSERT_TRUE(duck.ok());
  std::string list;
  for (const std::string& f : files) list += (list.empty() ? "" : ", ") + files::SqlString(f);
  auto r = (*duck)->Query(
      "SELECT count(*), count(DISTINCT id), min(id), max(id), "
      "sum(CASE WHEN _op = 'insert' THEN 1 ELSE 0 END), "
      "bool_and(v = 'row ' || id AND n = CAST(id * 1.0001 AS DECIMAL(20,4))) FROM read_parquet([" +
      list + "])");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->Text(0, 0).value_or(""), "260");
  EXPECT_EQ(r->Text(1, 0).value_or(""), "260");
  EXPECT_EQ(r->Text(2, 0).value_or(""), "1");
  EXPECT_EQ(r->Text(3, 0).value_or(""), "260");
  EXPECT_EQ(r->Text(4, 0).value_or(""), "260");
  EXPECT_EQ(r->Text(5, 0).value_or(""), "true");
  DropSlot("dbs_cdcf_p");
}

// Table public.t (id int primary key, v text), for the hand-built batches below.
TableSchema IdTextTable() {
  TableSchema t;
  t.schema = "public";
  t.name = "t";
  t.columns = {Col("id", "int", LogicalType::kInt32, false), Col("v", "text", LogicalType::kText)};
  t.primary_key = {"id"};
  return t;
}

// A CDC file sink for stream `stream` into a fresh folder `root` with URL query `query`.
std::unique_ptr<Sink> OpenChangeSink(const fs::path& root, const std::string& query,
                                     const std::string& stream) {
  fs::remove_all(root);
  auto cfg = ParseConnectionUrl("file://" + root.string() + "?" + query);
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  if (!cfg.ok()) return nullptr;
  SinkOptions so;
  so.stream = stream;
  so.mode = StreamMode::kCdc;
  auto sink = Sink::Open(*cfg, so);
  EXPECT_TRUE(sink.ok()) << sink.status().ToString();
  return sink.ok() ? std::move(sink).value() : nullptr;
}

// The file target's change delivery with hand-built batches: a redelivery writes nothing, a
// gap is refused, a crash after a change file's rename (the checkpoint still lists its
// segments) is healed without a duplicate, unchanged cells are named, a truncate is a row, and
// new columns start a new file.
TEST(CdcFilesSinkTest, ExactlyOnceAcrossCrashAndColumns) {
  const fs::path root =
      fs::temp_directory_path() / ("dbstreams-cdc-files-sink-" + std::to_string(getpid()));
  TableSchema t = IdTextTable();
  std::unique_ptr<Sink> sink =
      OpenChangeSink(root, "format=jsonl&changeFileRows=1000&changeFileSeconds=3600", "hand.r1");
  ASSERT_NE(sink, nullptr);
  Sink& s = *sink;

  BatchBuilder b1;
  b1.AddTable(t);
  b1.Txn({{&t, {R{RowOp::kInsert, {I(1), S("a")}}, R{RowOp::kInsert, {I(2), S("b")}}}}});
  auto a = s.ApplyChanges(b1.Batch(1, 1));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, 2u);
  auto again = s.ApplyChanges(b1.Batch(1, 1));  // a redelivery
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0u);
  BatchBuilder gap;
  gap.AddTable(t);
  gap.Txn({{&t, {R{RowOp::kInsert, {I(9), S("z")}}}}});
  EXPECT_EQ(s.ApplyChanges(gap.Batch(5, 5)).status().code(), StatusCode::kFailedPrecondition);

  BatchBuilder b2;
  b2.AddTable(t);
  b2.Txn({{&t, {R{RowOp::kUpdate, {I(1), U()}}, R{RowOp::kDelete, {I(2), U()}}}}});
  b2.Truncate(t);
  ASSERT_TRUE(s.ApplyChanges(b2.Batch(2, 3)).ok());
  auto cp = s.ReadCdcCheckpoint(0);
  ASSERT_TRUE(cp.ok());
  EXPECT_EQ(cp->seq, 3u);
  EXPECT_TRUE(ChangeFilesOf(root.string(), "t").empty());  // held back: not due yet

  // A crash between the publication's rename and its checkpoint: the old checkpoint returns.
  const std::string state = (root / ".dbs/cdc/hand/p0.json").string();
  ASSERT_TRUE(fs::exists(state));
  fs::copy_file(state, state + ".before");
  ASSERT_TRUE(s.FlushChanges(/*all=*/true).ok());
  ASSERT_EQ(ChangeFilesOf(root.string(), "t").size(), 1u);
  fs::rename(state + ".before", state);
  // The staged segments came back with the old checkpoint; the next publication finds them
  // in the file already.
  BatchBuilder b3;
  b3.AddTable(t);
  b3.Txn({{&t, {R{RowOp::kInsert, {I(3), S("c")}}}}});
  ASSERT_TRUE(s.ApplyChanges(b3.Batch(4, 4)).ok());
  // New columns: what is staged is published first, in the old columns.
  TableSchema t2 = t;
  t2.columns.push_back(Col("w", "text", LogicalType::kText));
  ASSERT_TRUE(s.AddColumns(t2, {"w"}).ok());
  BatchBuilder b4;
  b4.AddTable(t2);
  b4.Txn({{&t2, {R{RowOp::kInsert, {I(4), S("d"), S("new")}}}}});
  ASSERT_TRUE(s.ApplyChanges(b4.Batch(5, 5)).ok());
  ASSERT_TRUE(s.FlushChanges(/*all=*/true).ok());

  const std::vector<std::string> files = ChangeFilesOf(root.string(), "t");
  ASSERT_EQ(files.size(), 3u);
  ExpectContiguous(Ranges(files));
  std::vector<std::string> seen;
  for (const json& r : JsonlRows(files)) {
    std::string line = r["_op"].get<std::string>() + " " +
                       (r["id"].is_null() ? "null" : std::to_string(r["id"].get<int>()));
    if (r.contains("_unchanged") && r["_unchanged"].is_array()) {
      for (const json& u : r["_unchanged"]) line += " ~" + u.get<std::string>();
    }
    if (r.contains("w") && !r["w"].is_null()) line += " w=" + r["w"].get<std::string>();
    seen.push_back(line);
  }
  const std::vector<std::string> want = {"insert 1",      "insert 2",      "update 1 ~v",
                                         "delete 2 ~v",   "truncate null", "insert 3",
                                         "insert 4 w=new"};
  EXPECT_EQ(seen, want);
  fs::remove_all(root);
}

// Every row of a file source's table, as "id:v" texts (v "NULL" for NULL), sorted.
std::vector<std::string> SourceRows(const std::string& root, const std::string& table) {
  std::vector<std::string> out;
  auto cfg = ParseConnectionUrl("file://" + root);
  EXPECT_TRUE(cfg.ok());
  auto source = Source::Open(*cfg);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  if (!source.ok()) return out;
  auto schema = (*source)->Describe({"public", table});
  EXPECT_TRUE(schema.ok()) << schema.status().ToString();
  auto snap = (*source)->BeginSnapshot(1);
  if (!schema.ok() || !snap.ok()) return out;
  ReadSpec spec;
  spec.table = *schema;
  auto reader = (*snap)->OpenReader(spec);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return out;
  while (true) {
    Bundle b;
    for (const Column& col : schema->columns) b.columns.emplace_back(col.type);
    auto more = (*reader)->Next(&b, 1000, 1 << 20);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok()) break;
    for (size_t r = 0; r < b.rows(); ++r) {
      std::string row = std::to_string(b.columns[0].GetInt(r)) + ":";
      row += b.columns[1].IsNull(r) ? "NULL" : std::string(b.columns[1].GetBytes(r));
      out.push_back(row);
    }
    if (!*more) break;
  }
  std::sort(out.begin(), out.end());
  return out;
}

// changeFileSeconds: staged changes are published once the oldest is that old, by the next
// batch or by a flush that is not the final one; before that they are held back.
TEST(CdcFilesSinkTest, ChangesArePublishedByAge) {
  const fs::path root =
      fs::temp_directory_path() / ("dbstreams-cdc-files-age-" + std::to_string(getpid()));
  TableSchema t = IdTextTable();
  std::unique_ptr<Sink> sink =
      OpenChangeSink(root, "format=jsonl&changeFileRows=1000&changeFileSeconds=1", "age.r1");
  ASSERT_NE(sink, nullptr);
  Sink& s = *sink;
  BatchBuilder b1;
  b1.AddTable(t);
  b1.Txn({{&t, {R{RowOp::kInsert, {I(1), S("a")}}}}});
  ASSERT_TRUE(s.ApplyChanges(b1.Batch(1, 1)).ok());
  ASSERT_TRUE(s.FlushChanges(/*all=*/false).ok());
  EXPECT_TRUE(ChangeFilesOf(root.string(), "t").empty()) << "not a second old yet";
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  ASSERT_TRUE(s.FlushChanges(/*all=*/false).ok());
  EXPECT_EQ(ChangeFilesOf(root.string(), "t").size(), 1u) << "a second old: published";
  // The next change starts a new file, published (with the batch's own change) by a batch
  // that comes after its second.
  BatchBuilder b2;
  b2.AddTable(t);
  b2.Txn({{&t, {R{RowOp::kInsert, {I(2), S("b")}}}}});
  ASSERT_TRUE(s.ApplyChanges(b2.Batch(2, 2)).ok());
  EXPECT_EQ(ChangeFilesOf(root.string(), "t").size(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  BatchBuilder b3;
  b3.AddTable(t);
  b3.Txn({{&t, {R{RowOp::kInsert, {I(3), S("c")}}}}});
  ASSERT_TRUE(s.ApplyChanges(b3.Batch(3, 3)).ok());
  const std::vector<std::string> files = ChangeFilesOf(root.string(), "t");
  ASSERT_EQ(files.size(), 2u);
  std::ifstream second(files[1]);
  std::string line;
  size_t lines = 0;
  while (std::getline(second, line)) lines += line.empty() ? 0 : 1;
  EXPECT_EQ(lines, 2u) << "changes 2 and 3";
  ASSERT_TRUE(s.FlushChanges(/*all=*/true).ok());
  EXPECT_EQ(ChangeFilesOf(root.string(), "t").size(), 2u) << "nothing was left staged";
  fs::remove_all(root);
}

// A table folder with change files reads as its current state: the snapshot with the changes
// replayed by key (an unchanged cell keeps its value, a key change moves the row, an explicit
// NULL is a NULL), and a table without a key by whole rows counted.
TEST(CdcFilesSinkTest, FolderWithChangesReadsAsCurrentState) {
  const fs::path root =
      fs::temp_directory_path() / ("dbstreams-cdc-files-replay-" + std::to_string(getpid()));
  fs::remove_all(root);
  auto cfg = ParseConnectionUrl("file://" + root.string() + "?format=csv&changeFileSeconds=0");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  SinkOptions so;
  so.stream = "replay.r1";
  so.mode = StreamMode::kLoadCdc;
  auto sink = Sink::Open(*cfg, so);
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  Sink& s = **sink;
  TableSchema t;
  t.schema = "public";
  t.name = "t";
  t.columns = {Col("id", "int", LogicalType::kInt32, false), Col("v", "text", LogicalType::kText)};
  t.primary_key = {"id"};
  TableSchema k = t;
  k.name = "k";
  k.primary_key.clear();
  ASSERT_TRUE(s.PrepareTable(t).ok());
  ASSERT_TRUE(s.PrepareTable(k).ok());
  const Bundle snap_t =
      testing::Build(t, {R{RowOp::kInsert, {I(1), S("a0")}}, R{RowOp::kInsert, {I(2), S("b0")}},
                         R{RowOp::kInsert, {I(3), S("c,0 \"q\"")}}});
  const Bundle snap_k =
      testing::Build(k, {R{RowOp::kInsert, {I(1), S("x")}}, R{RowOp::kInsert, {I(1), S("x")}},
                         R{RowOp::kInsert, {I(2), S("y")}}});
  auto n = s.Apply({BundleRef{"t:0:1", &t, &snap_t}, BundleRef{"k:0:1", &k, &snap_k}});
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_TRUE(s.FinishStream({t, k}).ok());
  EXPECT_EQ(SourceRows(root.string(), "t"),
            (std::vector<std::string>{"1:a0", "2:b0", "3:c,0 \"q\""}));

  BatchBuilder b;
  b.AddTable(t);
  b.AddTable(k);
  b.Txn({{&t,
          {R{RowOp::kUpdate, {I(1), U()}}, R{RowOp::kUpdateBefore, {I(2), S("b0")}},
           R{RowOp::kUpdate, {I(20), S("b1")}}, R{RowOp::kDelete, {I(3), U()}},
           R{RowOp::kInsert, {I(4), S("d")}}}},
         {&k, {R{RowOp::kDelete, {I(1), S("x")}}, R{RowOp::kInsert, {I(3), S("z")}}}}});
  b.Txn({{&t, {R{RowOp::kUpdate, {I(4), testing::Null()}}}}});
  auto applied = s.ApplyChanges(b.Batch(1, 2));
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ(SourceRows(root.string(), "t"), (std::vector<std::string>{"1:a0", "20:b1", "4:NULL"}));
  EXPECT_EQ(SourceRows(root.string(), "k"), (std::vector<std::string>{"1:x", "2:y", "3:z"}));
  fs::remove_all(root);
}

}  // namespace
}  // namespace dbs

// Sink::ApplyChanges / ReadCdcCheckpoint / AddColumns against the fixture's shared PostgreSQL
// and MariaDB, with change batches built by hand: row semantics (upserts, partial updates, key
// changes, deletes, truncates, tables without a key, several changes of one key in a batch),
// exactly-once (redelivery, gaps, rollback of a bad batch), the type zoos applied as inserts,
// updates and deletes and compared by checksum in all four directions, and a throughput print.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/connection.h"
#include "core/bundle.h"
#include "core/change.h"
#include "sinks/sink.h"
#include "sources/source.h"
#include "support/change_batches.h"
#include "support/servers.h"
#include "verify/checksum.h"

namespace dbs {
namespace {

using testing::BatchBuilder;
using testing::Build;
using testing::Col;
using testing::I;
using testing::Null;
using testing::R;
using testing::S;
using testing::U;
using testing::V;

using testing::Rows;
using testing::SharedServers;

#define ASSERT_OK(expr)                                       \
  do {                                                        \
    const ::dbs::Status st_ = (expr);                         \
    ASSERT_TRUE(st_.ok()) << #expr << ": " << st_.ToString(); \
  } while (0)

#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                  \
  auto DBS_CONCAT_(r_, __LINE__) = (expr);                               \
  ASSERT_TRUE(DBS_CONCAT_(r_, __LINE__).ok())                            \
      << #expr << ": " << DBS_CONCAT_(r_, __LINE__).status().ToString(); \
  lhs = std::move(DBS_CONCAT_(r_, __LINE__)).value()

std::string SqlFile(const char* name) {
  std::ifstream in(std::string(DBS_TEST_SQL_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

enum class Target { kPostgres, kMariaDb };

class CdcApplyTest : public ::testing::TestWithParam<Target> {
 protected:
  void SetUp() override {
    if (GetParam() == Target::kPostgres) {
      auto pg = SharedServers::Postgres();
      ASSERT_TRUE(pg.ok()) << pg.status().ToString();
      pg_ = *pg;
    } else {
      auto m = SharedServers::MariaDb();
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      maria_ = *m;
    }
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? std::tolower(c) : '_';
    db_ = ("cdc_" + name).substr(0, 40);
    if (pg_) {
      ASSERT_OK(pg_->Exec("DROP DATABASE IF EXISTS " + db_ + " WITH (FORCE)"));
      ASSERT_OK(pg_->CreateDatabase(db_));
    } else {
      ASSERT_OK(maria_->Exec("DROP DATABASE IF EXISTS `" + db_ + "`; CREATE DATABASE `" + db_ +
                             "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"));
    }
  }

  bool pg() const { return pg_ != nullptr; }
  std::string schema() const { return pg() ? "public" : db_; }

  ConnectionConfig Config() {
    auto c = ParseConnectionUrl(pg() ? pg_->UrlFor(db_) : maria_->url() + db_);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : ConnectionConfig{};
  }

  std::unique_ptr<Sink> OpenSink(const std::string& run = "run1") {
    SinkOptions o;
    o.stream = db_ + "." + run;
    o.source_engine = pg() ? Engine::kPostgres : Engine::kMysql;
    auto s = Sink::Open(Config(), o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  Rows Query(const std::string& sql) {
    auto r = pg() ? pg_->Query(sql, db_) : maria_->Query(sql, db_);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    return r.ok() ? *r : Rows{};
  }

  // "id|name|qty|note" per row, ordered by id.
  std::vector<std::string> Items(const std::string& table = "items") {
    std::vector<std::string> out;
    for (const auto& row : Query("SELECT id, name, qty, note FROM " + table + " ORDER BY id")) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) line += (i ? "|" : "") + row[i].value_or("NULL");
      out.push_back(line);
    }
    return out;
  }

  TableSchema ItemsSchema(const std::string& name = "items") {
    TableSchema t;
    t.schema = schema();
    t.name = name;
    t.columns = {Col("id", "bigint", LogicalType::kInt64, false),
                 Col("name", "varchar(20)", LogicalType::kText),
                 Col("qty", "int", LogicalType::kInt32), Col("note", "text", LogicalType::kText)};
    t.columns[1].length = 20;
    t.primary_key = {"id"};
    return t;
  }

  testing::PostgresServer* pg_ = nullptr;
  testing::MariaDbServer* maria_ = nullptr;
  std::string db_;
};

using Op = RowOp;

TEST_P(CdcApplyTest, RowSemantics) {
  auto sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  TableSchema t = ItemsSchema();
  ASSERT_OK(sink->PrepareTable(t).status());
  ASSERT_OK_AND_ASSIGN(CdcCheckpoint cp0, sink->ReadCdcCheckpoint(0));
  EXPECT_EQ(cp0.seq, 0u);

  uint64_t seq = 0;
  auto apply = [&](BatchBuilder& bb) -> Result<size_t> {
    ++seq;
    return sink->ApplyChanges(bb.Batch(seq, seq));
  };
  {  // inserts (one a replay of an existing key: an upsert)
    BatchBuilder bb;
    bb.AddTable(t);
    bb.Txn({{&t,
             {{Op::kInsert, {I(1), S("one"), I(10), S("n1")}},
              {Op::kInsert, {I(2), S("two"), I(20), S("it's\ttab\nline \\ \"q\"")}},
              {Op::kInsert, {I(3), S("three"), I(30), Null()}}}}});
    bb.Txn({{&t, {{Op::kInsert, {I(3), S("three"), I(31), S("n3")}}}}});
    ASSERT_OK_AND_ASSIGN(size_t n, apply(bb));
    EXPECT_EQ(n, 4u);
    EXPECT_EQ(Items(), (std::vector<std::string>{"1|one|10|n1", "2|two|20|it's\ttab\nline \\ \"q\"",
                                                 "3|three|31|n3"}));
  }
  {  // full update, partial update, key change with a full image
    BatchBuilder bb;
    bb.AddTable(t);
    bb.Txn({{&t,
             {{Op::kUpdate, {I(1), S("uno"), I(11), Null()}},
              {Op::kUpdate, {I(2), U(), I(21), U()}},
              {Op::kUpdateBefore, {I(3), U(), U(), U()}},
              {Op::kUpdate, {I(30), S("thirty"), I(300), S("n30")}}}}});
    ASSERT_OK_AND_ASSIGN(size_t n, apply(bb));
    EXPECT_EQ(n, 3u);
    EXPECT_EQ(Items(),
              (std::vector<std::string>{"1|uno|11|NULL", "2|two|21|it's\ttab\nline \\ \"q\"",
                                        "30|thirty|300|n30"}));
  }
  {  // partial update with a key change (the old row is only in the target): a move
    BatchBuilder bb;
    bb.AddTable(t);
    bb.Txn({{&t,
             {{Op::kUpdate, {I(2), U(), I(22), U()}},
              {Op::kUpdateBefore, {I(2), U(), U(), U()}},
              {Op::kUpdate, {I(20), S("twenty"), U(), U()}},
              {Op::kUpdate, {I(20), U(), U(), S("moved")}}}}});
    ASSERT_OK_AND_ASSIGN(size_t n, apply(bb));
    EXPECT_EQ(n, 3u);
    EXPECT_EQ(Items(), (std::vector<std::string>{"1|uno|11|NULL", "20|twenty|22|moved",
                                                 "30|thirty|300|n30"}));
  }
  {  // delete; several changes of one key in one batch; partial merges onto a full image
    BatchBuilder bb;
    bb.AddTable(t);
    bb.Txn({{&t, {{Op::kDelete, {I(1), U(), U(), U()}}}}});
    bb.Txn({{&t,
             {{Op::kInsert, {I(7), S("seven"), I(7), S("a")}},
              {Op::kUpdate, {I(7), U(), I(70), U()}},
              {Op::kDelete, {I(7), U(), U(), U()}},
              {Op::kInsert, {I(7), S("SEVEN"), I(700), Null()}},
              {Op::kUpdate, {I(7), U(), U(), S("final")}}}}});
    bb.Txn({{&t,
             {{Op::kInsert, {I(8), S("eight"), I(8), S("b")}},
              {Op::kUpdate, {I(8), S("EIGHT"), U(), U()}},
              {Op::kUpdateBefore, {I(8), U(), U(), U()}},
              {Op::kUpdate, {I(9), U(), I(9), U()}},
              {Op::kDelete, {I(30), U(), U(), U()}},
              {Op::kInsert, {I(30), S("again"), Null(), Null()}},
              {Op::kDelete, {I(99), U(), U(), U()}},
              {Op::kUpdate, {I(98), U(), I(1), U()}}}}});
    ASSERT_OK_AND_ASSIGN(size_t n, apply(bb));
    EXPECT_EQ(n, 13u);
    EXPECT_EQ(Items(), (std::vector<std::string>{"7|SEVEN|700|final", "9|EIGHT|9|b",
                                                 "20|twenty|22|moved", "30|again|NULL|NULL"}));
  }
  {  // truncate in the middle of a batch
    BatchBuilder bb;
    bb.AddTable(t);
    bb.Txn({{&t, {{Op::kInsert, {I(50), S("fifty"), I(5), Null()}}}}});
    bb.Truncate(t);
    bb.Txn({{&t,
             {{Op::kInsert, {I(60), S("sixty"), I(6), Null()}},
              {Op::kUpdate, {I(60), U(), I(66), U()}}}}});
    ASSERT_OK_AND_ASSIGN(size_t n, apply(bb));
    EXPECT_EQ(n, 4u);
    EXPECT_EQ(Items(), (std::vector<std::string>{"60|sixty|66|NULL"}));
  }
  ASSERT_OK_AND_ASSIGN(CdcCheckpoint cp, sink->ReadCdcCheckpoint(0));
  EXPECT_EQ(cp.seq, seq);
  EXPECT_EQ(cp.position.kind, SourcePosition::Kind::kPgLsn);
  EXPECT_EQ(cp.position.value, "0/" + std::to_string(seq * 100));
}

TEST_P(CdcApplyTest, TableWithoutKey) {
  auto sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  TableSchema t = ItemsSchema("nokey");
  t.primary_key.clear();
  t.columns[0].nullable = true;
  ASSERT_OK(sink->PrepareTable(t).status());
  BatchBuilder bb;
  bb.AddTable(t);
  bb.Txn({{&t,
           {{Op::kInsert, {I(1), S("x"), Null(), S("dup")}},
            {Op::kInsert, {I(1), S("x"), Null(), S("dup")}},
            {Op::kInsert, {I(2), Null(), I(5), Null()}},
            {Op::kInsert, {I(3), S("y"), I(6), Null()}}}}});
  bb.Txn({{&t,
           {{Op::kDelete, {I(1), S("x"), Null(), S("dup")}},
            {Op::kUpdateBefore, {I(2), Null(), I(5), Null()}},
            {Op::kUpdate, {I(2), S("now"), I(5), U()}},
            {Op::kInsert, {I(4), S("z"), I(7), Null()}},
            {Op::kDelete, {I(3), S("y"), I(6), Null()}}}}});
  ASSERT_OK_AND_ASSIGN(size_t n, sink->ApplyChanges(bb.Batch(1, 2)));
  EXPECT_EQ(n, 8u);
  EXPECT_EQ(Items("nokey"),
            (std::vector<std::string>{"1|x|NULL|dup", "2|now|5|NULL", "4|z|7|NULL"}));
  // An update without the old image cannot find its row.
  BatchBuilder bad;
  bad.AddTable(t);
  bad.Txn({{&t, {{Op::kUpdate, {I(4), S("w"), U(), U()}}}}});
  auto r = sink->ApplyChanges(bad.Batch(3, 3));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("nokey"), std::string::npos) << r.status().ToString();
}

// Two tables the PostgreSQL sink cannot run its MERGE on the same way: one of key columns only
// (nothing to update: an existing row stays) and one with a rule (MERGE refuses such tables; the
// sink uses DELETE + INSERT ... ON CONFLICT there). Both must give the rows' final state.
TEST_P(CdcApplyTest, KeyOnlyTableAndTableWithARule) {
  auto sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  TableSchema keys;
  keys.schema = schema();
  keys.name = "keys_only";
  keys.columns = {Col("id", "bigint", LogicalType::kInt64, false)};
  keys.primary_key = {"id"};
  TableSchema ruled = ItemsSchema("ruled");
  ASSERT_OK(sink->PrepareTable(keys).status());
  ASSERT_OK(sink->PrepareTable(ruled).status());
  if (pg()) {
    ASSERT_OK(
        pg_->Exec("CREATE RULE note_deletes AS ON DELETE TO ruled DO ALSO NOTIFY ruled", db_));
  }
  BatchBuilder bb;
  bb.AddTable(keys);
  bb.AddTable(ruled);
  bb.Txn({{&keys, {{Op::kInsert, {I(1)}}, {Op::kInsert, {I(2)}}, {Op::kInsert, {I(3)}}}},
          {&ruled,
           {{Op::kInsert, {I(1), S("one"), I(1), Null()}},
            {Op::kInsert, {I(2), S("two"), I(2), Null()}}}}});
  ASSERT_OK_AND_ASSIGN(size_t n, sink->ApplyChanges(bb.Batch(1, 1)));
  EXPECT_EQ(n, 5u);
  BatchBuilder bb2;
  bb2.AddTable(keys);
  bb2.AddTable(ruled);
  bb2.Txn({{&keys, {{Op::kInsert, {I(2)}}, {Op::kDelete, {I(1)}}, {Op::kInsert, {I(4)}}}},
           {&ruled,
            {{Op::kUpdate, {I(1), S("uno"), I(10), S("x")}},
             {Op::kDelete, {I(2), U(), U(), U()}},
             {Op::kInsert, {I(3), S("three"), I(3), Null()}},
             {Op::kUpdate, {I(3), U(), I(33), U()}}}}});
  ASSERT_OK_AND_ASSIGN(n, sink->ApplyChanges(bb2.Batch(2, 2)));
  EXPECT_EQ(n, 7u);
  std::vector<std::string> ids;
  for (const auto& row : Query("SELECT id FROM keys_only ORDER BY id")) {
    ids.push_back(row[0].value_or("NULL"));
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"2", "3", "4"}));
  EXPECT_EQ(Items("ruled"), (std::vector<std::string>{"1|uno|10|x", "3|three|33|NULL"}));
}

TEST_P(CdcApplyTest, RedeliveryGapAndRollback) {
  auto sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  TableSchema t = ItemsSchema();
  TableSchema t2 = ItemsSchema("other");
  ASSERT_OK(sink->PrepareTable(t).status());
  ASSERT_OK(sink->PrepareTable(t2).status());
  BatchBuilder b1;
  b1.AddTable(t);
  b1.Txn({{&t, {{Op::kInsert, {I(1), S("a"), I(1), Null()}}}}});
  b1.Txn({{&t, {{Op::kInsert, {I(2), S("b"), I(2), Null()}}}}});
  ASSERT_OK_AND_ASSIGN(size_t n, sink->ApplyChanges(b1.Batch(1, 2)));
  EXPECT_EQ(n, 2u);
  // Redelivery (even with different content, and from another sink of a later run): nothing.
  BatchBuilder again;
  again.AddTable(t);
  again.Txn({{&t, {{Op::kDelete, {I(1), U(), U(), U()}}}}});
  auto sink2 = OpenSink("run2");
  ASSERT_NE(sink2, nullptr);
  ASSERT_OK(sink2->PrepareTable(t).status());
  ASSERT_OK_AND_ASSIGN(n, sink2->ApplyChanges(again.Batch(1, 2)));
  EXPECT_EQ(n, 0u);
  ASSERT_OK_AND_ASSIGN(n, sink->ApplyChanges(again.Batch(2, 2)));
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(Items(), (std::vector<std::string>{"1|a|1|NULL", "2|b|2|NULL"}));
  // A gap.
  auto gap = sink->ApplyChanges(again.Batch(5, 6));
  ASSERT_FALSE(gap.ok());
  EXPECT_EQ(gap.status().code(), StatusCode::kFailedPrecondition) << gap.status().ToString();
  EXPECT_NE(gap.status().message().find("5"), std::string::npos);
  EXPECT_NE(gap.status().message().find("checkpoint 2"), std::string::npos)
      << gap.status().ToString();
  // Another partition has its own checkpoint.
  BatchBuilder p1;
  p1.AddTable(t2);
  p1.Txn({{&t2, {{Op::kInsert, {I(1), S("p1"), Null(), Null()}}}}});
  ASSERT_OK_AND_ASSIGN(n, sink->ApplyChanges(p1.Batch(1, 1, /*partition=*/1)));
  EXPECT_EQ(n, 1u);
  // A value the target rejects: everything rolls back, the checkpoint included.
  BatchBuilder bad;
  bad.AddTable(t);
  bad.AddTable(t2);
  bad.Txn({{&t2, {{Op::kInsert, {I(5), S("fine"), Null(), Null()}}}},
           {&t, {{Op::kUpdate, {I(1), S("fine too"), I(5), Null()}}}}});
  bad.Txn({{&t, {{Op::kInsert, {I(3), S(std::string(50, 'x')), I(3), Null()}}}}});
  auto r = sink->ApplyChanges(bad.Batch(3, 4));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_FALSE(r.status().retryable());
  EXPECT_NE(r.status().message().find("items"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("name"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(Items(), (std::vector<std::string>{"1|a|1|NULL", "2|b|2|NULL"}));
  EXPECT_EQ(Items("other"), (std::vector<std::string>{"1|p1|NULL|NULL"}));
  ASSERT_OK_AND_ASSIGN(CdcCheckpoint cp, sink->ReadCdcCheckpoint(0));
  EXPECT_EQ(cp.seq, 2u);
  // The sink stays usable.
  ASSERT_OK_AND_ASSIGN(n, sink->ApplyChanges(b1.Batch(3, 4)));
  EXPECT_EQ(n, 2u);
  ASSERT_OK_AND_ASSIGN(cp, sink->ReadCdcCheckpoint(0));
  EXPECT_EQ(cp.seq, 4u);
}

TEST_P(CdcApplyTest, AddColumns) {
  auto sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  TableSchema t = ItemsSchema();
  ASSERT_OK(sink->PrepareTable(t).status());
  BatchBuilder b1;
  b1.AddTable(t);
  b1.Txn({{&t, {{Op::kInsert, {I(1), S("a"), I(1), Null()}}}}});
  ASSERT_OK(sink->ApplyChanges(b1.Batch(1, 1)).status());
  TableSchema t2 = t;
  t2.columns.push_back(Col("extra", "bigint", LogicalType::kInt64));
  t2.columns.push_back(Col("label", "varchar(10)", LogicalType::kText));
  ASSERT_OK(sink->AddColumns(t2, {"extra", "label"}));
  ASSERT_OK(sink->AddColumns(t2, {"extra", "label"}));  // idempotent
  BatchBuilder b2;
  b2.AddTable(t2);
  b2.Txn({{&t2,
           {{Op::kInsert, {I(2), S("b"), I(2), Null(), I(9007199254740993), S("new")}},
            {Op::kUpdate, {I(1), U(), U(), U(), I(-5), U()}}}}});
  ASSERT_OK_AND_ASSIGN(size_t n, sink->ApplyChanges(b2.Batch(2, 2)));
  EXPECT_EQ(n, 2u);
  Rows rows = Query("SELECT id, name, extra, label FROM items ORDER BY id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][1].value_or("NULL"), "a");
  EXPECT_EQ(rows[0][2].value_or("NULL"), "-5");
  EXPECT_FALSE(rows[0][3].has_value());
  EXPECT_EQ(rows[1][2].value_or("NULL"), "9007199254740993");
  EXPECT_EQ(rows[1][3].value_or("NULL"), "new");
}

// 100k changes, 20/60/20 insert/update/delete, 5 per transaction, 1000 per ApplyChanges.
TEST_P(CdcApplyTest, Throughput) {
  auto sink = OpenSink();
  ASSERT_NE(sink, nullptr);
  TableSchema t = ItemsSchema();
  ASSERT_OK(sink->PrepareTable(t).status());
  std::mt19937_64 rng(42);
  std::vector<int64_t> live;
  int64_t next_id = 1;
  // Seed rows so updates and deletes have something to hit.
  const size_t kTotal = 100000, kPerBatch = 1000, kPerTxn = 5;
  uint64_t seq = 0;
  double seconds = 0;
  size_t applied = 0;
  for (size_t done = 0; done < kTotal; done += kPerBatch) {
    BatchBuilder bb;
    bb.AddTable(t);
    for (size_t tx = 0; tx < kPerBatch / kPerTxn; ++tx) {
      std::vector<R> rows;
      for (size_t k = 0; k < kPerTxn; ++k) {
        const unsigned r = static_cast<unsigned>(rng() % 10);
        if (r < 2 || live.size() < 10) {
          const int64_t id = next_id++;
          live.push_back(id);
          rows.push_back({Op::kInsert,
                          {I(id), S("n" + std::to_string(id)), I(id % 1000),
                           S("note " + std::to_string(rng() % 100000))}});
        } else if (r < 8) {
          const int64_t id = live[rng() % live.size()];
          rows.push_back(
              {Op::kUpdate,
               {I(id), S("u" + std::to_string(id)), I(static_cast<int64_t>(rng() % 1000)),
                S("upd " + std::to_string(rng() % 100000))}});
        } else {
          const size_t at = rng() % live.size();
          const int64_t id = live[at];
          live[at] = live.back();
          live.pop_back();
          rows.push_back({Op::kDelete, {I(id), U(), U(), U()}});
        }
      }
      bb.Txn({{&t, rows}});
    }
    ++seq;
    const ChangeBatch batch = bb.Batch(seq, seq);
    const auto start = std::chrono::steady_clock::now();
    auto n = sink->ApplyChanges(batch);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    applied += *n;
  }
  EXPECT_EQ(applied, kTotal);
  Rows count = Query("SELECT count(*) FROM items");
  ASSERT_EQ(count.size(), 1u);
  EXPECT_EQ(count[0][0].value_or(""), std::to_string(live.size()));
  std::printf("[ throughput ] %s target: %zu changes (20/60/20) in %.2f s = %.0f changes/s\n",
              pg() ? "PostgreSQL" : "MariaDB", applied, seconds, applied / seconds);
}

INSTANTIATE_TEST_SUITE_P(Targets, CdcApplyTest,
                         ::testing::Values(Target::kPostgres, Target::kMariaDb),
                         [](const ::testing::TestParamInfo<Target>& i) {
                           return i.param == Target::kPostgres ? "Postgres" : "MariaDb";
                         });

// --- type zoos: snapshot rows applied as inserts, then updates, then deletes -----------------

class CdcZooTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = SharedServers::MariaDb();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    maria_ = *m;
    auto p = SharedServers::Postgres();
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pg_ = *p;
  }

  ConnectionConfig PgConfig(const std::string& db) {
    return ParseConnectionUrl(pg_->UrlFor(db)).value();
  }
  ConnectionConfig MariaConfig(const std::string& db) {
    return ParseConnectionUrl(maria_->url() + db).value();
  }
  void NewPg(const std::string& db) {
    ASSERT_OK(pg_->Exec("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)"));
    ASSERT_OK(pg_->CreateDatabase(db));
  }
  void NewMaria(const std::string& db) {
    ASSERT_OK(maria_->Exec("DROP DATABASE IF EXISTS `" + db + "`; CREATE DATABASE `" + db +
                           "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"));
  }

  // Reads the source zoo, applies it to the target as kInsert, kUpdate then kDelete changes and
  // compares checksums after each (the target is empty at the end).
  void RoundTrip(const ConnectionConfig& src, const ConnectionConfig& dst, TableRef table,
                 const std::string& target_schema, ZeroDatePolicy zero_date) {
    ASSERT_OK_AND_ASSIGN(auto source, Source::Open(src));
    ASSERT_OK_AND_ASSIGN(TableSchema schema, source->Describe(table));
    ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
    ReadSpec spec;
    spec.table = schema;
    std::vector<Bundle> bundles;
    {
      ASSERT_OK_AND_ASSIGN(auto reader, snap->OpenReader(spec));
      bool more = true;
      while (more) {
        Bundle b;
        for (const Column& c : schema.columns) b.columns.emplace_back(c.type, c.element_type);
        ASSERT_OK_AND_ASSIGN(more, reader->Next(&b, 2, 4u << 20));
        if (b.rows() > 0) bundles.push_back(std::move(b));
      }
    }
    std::vector<LogicalType> types;
    std::vector<std::string> names;
    for (const Column& c : schema.columns) {
      types.push_back(c.type);
      names.push_back(c.name);
    }
    RowHasher hasher(types, zero_date);
    ASSERT_OK_AND_ASSIGN(TableChecksum want, ChecksumTable(snap.get(), spec, hasher));
    ASSERT_GT(want.rows, 0u);

    SinkOptions so;
    so.stream = "zoo-" + target_schema + "-" + table.schema + ".r1";
    so.source_engine = src.engine;
    so.target_schema = target_schema;
    so.zero_date = zero_date;
    ASSERT_OK_AND_ASSIGN(auto sink, Sink::Open(dst, so));
    ASSERT_OK_AND_ASSIGN(TargetTable tt, sink->PrepareTable(schema));
    std::map<std::string, TableSchema> tables{{schema.QualifiedName(), schema}};

    auto target_sum = [&]() -> Result<TableChecksum> {
      DBS_ASSIGN_OR_RETURN(auto target, Source::Open(dst));
      DBS_ASSIGN_OR_RETURN(TableSchema desc, target->Describe({tt.schema, tt.name}));
      DBS_ASSIGN_OR_RETURN(auto tsnap, target->BeginSnapshot(1));
      ReadSpec ts;
      ts.table = desc;
      ts.columns = names;
      return ChecksumTable(tsnap.get(), ts, hasher);
    };
    uint64_t seq = 0;
    for (RowOp op : {RowOp::kInsert, RowOp::kUpdate, RowOp::kDelete}) {
      std::vector<ChangeTxn> txns(bundles.size());
      ChangeBatch batch;
      for (size_t i = 0; i < bundles.size(); ++i) {
        ChangeSegment seg;
        seg.table = {schema.schema, schema.name};
        seg.rows = bundles[i];
        seg.rows.ops.assign(seg.rows.rows(), op);
        txns[i].xid = std::to_string(i);
        txns[i].segments.push_back(std::move(seg));
        batch.txns.push_back(&txns[i]);
      }
      batch.first_seq = batch.last_seq = ++seq;
      batch.tables = &tables;
      auto n = sink->ApplyChanges(batch);
      ASSERT_TRUE(n.ok()) << "applying as op " << static_cast<int>(op) << ": "
                          << n.status().ToString();
      EXPECT_EQ(*n, want.rows);
      ASSERT_OK_AND_ASSIGN(TableChecksum got, target_sum());
      if (op == RowOp::kDelete) {
        EXPECT_EQ(got.rows, 0u);
      } else {
        EXPECT_EQ(got, want) << "after op " << static_cast<int>(op) << ": rows " << got.rows
                             << " vs " << want.rows;
      }
    }
  }

  testing::MariaDbServer* maria_ = nullptr;
  testing::PostgresServer* pg_ = nullptr;
};

TEST_F(CdcZooTest, PostgresToPostgres) {
  NewPg("cdczoo_p2p_src");
  ASSERT_OK(pg_->Exec(SqlFile("postgres_zoo.sql"), "cdczoo_p2p_src"));
  NewPg("cdczoo_p2p_dst");
  RoundTrip(PgConfig("cdczoo_p2p_src"), PgConfig("cdczoo_p2p_dst"), {"public", "zoo"}, "",
            ZeroDatePolicy::kError);
}

TEST_F(CdcZooTest, MariaDbToMariaDb) {
  NewMaria("cdczoo_m2m_src");
  ASSERT_OK(
      maria_->Exec("SET SESSION sql_mode=''; " + SqlFile("mariadb_zoo.sql"), "cdczoo_m2m_src"));
  NewMaria("cdczoo_m2m_dst");
  RoundTrip(MariaConfig("cdczoo_m2m_src"), MariaConfig("cdczoo_m2m_dst"), {"cdczoo_m2m_src", "zoo"},
            "cdczoo_m2m_dst", ZeroDatePolicy::kError);
}

TEST_F(CdcZooTest, MariaDbToPostgres) {
  NewMaria("cdczoo_m2p_src");
  ASSERT_OK(
      maria_->Exec("SET SESSION sql_mode=''; " + SqlFile("mariadb_zoo.sql"), "cdczoo_m2p_src"));
  // MySQL TIME beyond PostgreSQL's time of day (see load_test).
  ASSERT_OK(maria_->Exec(
      "UPDATE zoo SET c_time = '12:34:56.5' WHERE c_time < '00:00:00' OR c_time >= '24:00:00'",
      "cdczoo_m2p_src"));
  NewPg("cdczoo_m2p_dst");
  RoundTrip(MariaConfig("cdczoo_m2p_src"), PgConfig("cdczoo_m2p_dst"), {"cdczoo_m2p_src", "zoo"},
            "", ZeroDatePolicy::kNull);
}

TEST_F(CdcZooTest, PostgresToMariaDb) {
  NewPg("cdczoo_p2m_src");
  ASSERT_OK(pg_->Exec(SqlFile("postgres_zoo.sql"), "cdczoo_p2m_src"));
  // Values MySQL cannot hold (BC dates, infinities, NaN; see load_test).
  ASSERT_OK(pg_->Exec(R"sql(
    UPDATE zoo SET c_date = NULL, c_timestamp = NULL, c_timestamptz = NULL WHERE id IN (1, 2);
    UPDATE zoo SET c_real = NULL, c_double = NULL, c_numeric_free = NULL WHERE id IN (2, 4);
    UPDATE zoo SET c_numeric_free = NULL WHERE id = 1;
  )sql",
                      "cdczoo_p2m_src"));
  NewMaria("cdczoo_p2m_dst");
  RoundTrip(PgConfig("cdczoo_p2m_src"), MariaConfig("cdczoo_p2m_dst"), {"public", "zoo"},
            "cdczoo_p2m_dst", ZeroDatePolicy::kError);
}

}  // namespace
}  // namespace dbs

// MySQL/MariaDB change data capture (binlog) against the fixture's shared MariaDB (ROW binlog,
// GTID strict mode):
//  - the type zoo inserted, updated and deleted, every decoded cell compared exactly with a
//    snapshot read of the same rows through MysqlSource's text-protocol reader;
//  - a primary key change, TRUNCATE, multi-table transactions in order, a rolled-back
//    transaction that never appears, a large transaction in parts;
//  - resume from a GTID position and from a file position without duplicates; the hand-off
//    from BeginCdcSnapshot (rows before it only in the snapshot, after it only in the stream);
//  - ADD COLUMN and another DDL as schema changes; CheckCdc errors (no replication privileges,
//    binlog_format STATEMENT, binlog_row_image MINIMAL; the globals are restored).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "config/connection.h"
#include "sources/mysql/mysql_source.h"
#include "support/servers.h"

namespace dbs {
namespace {

using testing::MariaDbServer;
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

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class MysqlCdcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = SharedServers::MariaDb();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = *s;
  }

  ConnectionConfig Config(const std::string& db) {
    auto c = ParseConnectionUrl(server_->url());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    ConnectionConfig cfg = c.ok() ? *c : ConnectionConfig{};
    cfg.database = db;
    return cfg;
  }

  void Exec(const std::string& sql, const std::string& db = "") {
    Status s = server_->Exec(sql, db);
    ASSERT_TRUE(s.ok()) << s.ToString() << "\nSQL: " << sql.substr(0, 400);
  }

  // A fresh database for one test.
  void FreshDb(const std::string& db) {
    Exec("DROP DATABASE IF EXISTS " + db + "; CREATE DATABASE " + db +
         " DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_bin");
  }

  std::unique_ptr<MysqlSource> Source(const std::string& db) {
    auto s = MysqlSource::Open(Config(db));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  Result<std::unique_ptr<ChangeStream>> Stream(MysqlSource* src, const std::string& name,
                                               SourcePosition start = {},
                                               std::vector<TableRef> tables = {},
                                               size_t max_part_rows = 10'000) {
    CdcOptions o;
    o.stream = name;
    o.start = std::move(start);
    o.tables = std::move(tables);
    o.max_part_rows = max_part_rows;
    return src->OpenChangeStream(o);
  }

  // Reads events until `txns` final transactions arrived (schema changes are kept too), or
  // fails after `wait`.
  std::vector<ChangeEvent> Collect(ChangeStream* s, size_t txns,
                                   std::chrono::seconds wait = std::chrono::seconds(20)) {
    std::vector<ChangeEvent> out;
    size_t finals = 0;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (finals < txns && std::chrono::steady_clock::now() < deadline) {
      auto e = s->Next(std::chrono::milliseconds(500));
      EXPECT_TRUE(e.ok()) << e.status().ToString();
      if (!e.ok()) break;
      if (e->kind == ChangeEvent::Kind::kIdle) continue;
      if (e->kind == ChangeEvent::Kind::kTransaction && e->txn.final) ++finals;
      out.push_back(std::move(e).value());
    }
    EXPECT_EQ(finals, txns) << "transactions received before the deadline";
    return out;
  }

  // Asserts that nothing but idle events arrive for `ms`.
  void ExpectQuiet(ChangeStream* s, int ms = 1500) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < deadline) {
      auto e = s->Next(std::chrono::milliseconds(300));
      ASSERT_TRUE(e.ok()) << e.status().ToString();
      ASSERT_EQ(e->kind, ChangeEvent::Kind::kIdle)
          << "unexpected event: txn " << e->txn.xid << " rows " << e->txn.rows();
    }
  }

  // The snapshot reader's view of `table`, ordered by id.
  Bundle SnapshotRows(MysqlSource* src, const std::string& table) {
    Bundle out;
    auto t = src->Describe({"", table});
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    if (!t.ok()) return out;
    auto snap = src->BeginSnapshot(1);
    EXPECT_TRUE(snap.ok()) << snap.status().ToString();
    if (!snap.ok()) return out;
    ReadSpec spec;
    spec.table = *t;
    spec.limit = 1'000'000;  // ordered by the primary key
    auto reader = (*snap)->OpenReader(spec);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    if (!reader.ok()) return out;
    for (const Column& c : t->columns) out.columns.emplace_back(c.type, c.element_type);
    bool more = true;
    while (more) {
      auto r = (*reader)->Next(&out, 1000, 64u << 20);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) break;
      more = *r;
    }
    return out;
  }

  // Every cell of rows[row] of a CDC bundle equals snapshot row `srow`, exactly.
  void ExpectRowEquals(const Bundle& cdc, size_t row, const Bundle& snap, size_t srow,
                       const TableSchema& schema, const std::string& what) {
    ASSERT_EQ(cdc.columns.size(), snap.columns.size());
    for (size_t c = 0; c < cdc.columns.size(); ++c) {
      EXPECT_FALSE(cdc.columns[c].IsUnchanged(row)) << what << " column " << schema.columns[c].name;
      const Value a = cdc.columns[c].Get(row), b = snap.columns[c].Get(srow);
      EXPECT_TRUE(a == b) << what << " column " << schema.columns[c].name << " ("
                          << schema.columns[c].source_type << "): binlog "
                          << a.ToString().substr(0, 200) << " snapshot "
                          << b.ToString().substr(0, 200);
    }
  }

  MariaDbServer* server_ = nullptr;
};

int64_t IdOf(const Bundle& b, size_t row) { return b.columns[0].GetInt(row); }

TEST_F(MysqlCdcTest, TypeZooInsertUpdateDeleteMatchesSnapshot) {
  const std::string db = "cdc_zoo";
  FreshDb(db);
  auto src = Source(db);
  ASSERT_NE(src, nullptr);
  ASSERT_OK_AND_ASSIGN(auto stream, Stream(src.get(), "zoo"));
  Exec(ReadFile(std::string(DBS_TEST_SQL_DIR) + "/mariadb_zoo.sql"), db);
  ASSERT_OK_AND_ASSIGN(TableSchema schema, src->Describe({"", "zoo"}));

  // Inserts: rows 1-4 in one statement, row 5 in another.
  auto ins = Collect(stream.get(), 2);
  std::vector<std::pair<const Bundle*, size_t>> inserted;
  for (const auto& e : ins) {
    ASSERT_EQ(e.kind, ChangeEvent::Kind::kTransaction);
    EXPECT_EQ(e.txn.position.kind, SourcePosition::Kind::kMysqlGtid);
    EXPECT_FALSE(e.txn.position.file_pos.empty());
    for (const auto& seg : e.txn.segments) {
      EXPECT_EQ(seg.table.name, "zoo");
      ASSERT_OK(seg.rows.Validate());
      for (size_t r = 0; r < seg.rows.rows(); ++r) {
        EXPECT_EQ(seg.rows.ops[r], RowOp::kInsert);
        inserted.emplace_back(&seg.rows, r);
      }
    }
  }
  Bundle before = SnapshotRows(src.get(), "zoo");
  ASSERT_EQ(before.rows(), 5u);
  ASSERT_EQ(inserted.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    ExpectRowEquals(*inserted[i].first, inserted[i].second, before, i, schema,
                    "insert of row " + std::to_string(i + 1));
  }

  // Updates: every row changes (c_int for rows with one, the key of none).
  Exec(
      "UPDATE zoo SET c_smallint = IFNULL(c_smallint, 0) DIV 2 + 1, c_varchar = "
      "CONCAT(IFNULL(c_varchar, ''), '!')",
      db);
  Bundle after = SnapshotRows(src.get(), "zoo");
  auto upd = Collect(stream.get(), 1);
  ASSERT_EQ(upd.size(), 1u);
  ASSERT_EQ(upd[0].txn.segments.size(), 1u);
  const Bundle& ub = upd[0].txn.segments[0].rows;
  ASSERT_EQ(ub.rows(), 10u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(ub.ops[2 * i], RowOp::kUpdateBefore);
    EXPECT_EQ(ub.ops[2 * i + 1], RowOp::kUpdate);
    ExpectRowEquals(ub, 2 * i, before, i, schema, "update before image " + std::to_string(i + 1));
    ExpectRowEquals(ub, 2 * i + 1, after, i, schema, "update after image " + std::to_string(i + 1));
  }

  // Deletes.
  Exec("DELETE FROM zoo", db);
  auto del = Collect(stream.get(), 1);
  ASSERT_EQ(del.size(), 1u);
  const Bundle& db_rows = del[0].txn.segments.at(0).rows;
  ASSERT_EQ(db_rows.rows(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(db_rows.ops[i], RowOp::kDelete);
    ExpectRowEquals(db_rows, i, after, i, schema, "delete of row " + std::to_string(i + 1));
  }
}

TEST_F(MysqlCdcTest, KeyChangeTruncateMultiTableOrderAndRollback) {
  const std::string db = "cdc_order";
  FreshDb(db);
  Exec(
      "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(20)); CREATE TABLE b (id INT PRIMARY KEY, "
      "w CHAR(5)); CREATE TABLE other (id INT PRIMARY KEY)",
      db);
  auto src = Source(db);
  ASSERT_NE(src, nullptr);
  ASSERT_OK_AND_ASSIGN(auto stream, Stream(src.get(), "order", {}, {{"", "a"}, {db, "b"}}));

  Exec("INSERT INTO a VALUES (1, 'one')", db);
  Exec("UPDATE a SET id = 10 WHERE id = 1", db);
  Exec(
      "BEGIN; INSERT INTO a VALUES (2, 'x'); INSERT INTO b VALUES (1, 'bb'); INSERT INTO a "
      "VALUES (3, 'y'); INSERT INTO other VALUES (1); COMMIT",
      db);
  Exec("BEGIN; INSERT INTO a VALUES (99, 'never'); INSERT INTO b VALUES (99, 'nvr'); ROLLBACK", db);
  Exec("INSERT INTO other VALUES (2)", db);  // not followed: no transaction
  Exec("TRUNCATE TABLE b", db);
  Exec("INSERT INTO b VALUES (7, 'last')", db);
  Exec(
      "BEGIN; INSERT INTO a VALUES (20, 's1'); SAVEPOINT sp; INSERT INTO a VALUES (21, 'gone'); "
      "ROLLBACK TO SAVEPOINT sp; INSERT INTO a VALUES (22, 's2'); COMMIT",
      db);

  auto ev = Collect(stream.get(), 6);
  ASSERT_EQ(ev.size(), 6u);
  // 6: the savepoint transaction is one transaction without the rolled-back row.
  const Bundle& sp = ev[5].txn.segments.at(0).rows;
  ASSERT_EQ(sp.rows(), 2u);
  EXPECT_EQ(IdOf(sp, 0), 20);
  EXPECT_EQ(IdOf(sp, 1), 22);
  // 1: insert.
  EXPECT_EQ(ev[0].txn.segments.at(0).rows.ops, std::vector<RowOp>{RowOp::kInsert});
  // 2: key change: before image with the old key, after image with the new one.
  const Bundle& kc = ev[1].txn.segments.at(0).rows;
  ASSERT_EQ(kc.rows(), 2u);
  EXPECT_EQ(kc.ops[0], RowOp::kUpdateBefore);
  EXPECT_EQ(IdOf(kc, 0), 1);
  EXPECT_EQ(kc.ops[1], RowOp::kUpdate);
  EXPECT_EQ(IdOf(kc, 1), 10);
  EXPECT_EQ(kc.columns[1].GetBytes(1), "one");
  // 3: a, b, a in statement order; `other` left out.
  const auto& segs = ev[2].txn.segments;
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[0].table.name, "a");
  EXPECT_EQ(segs[1].table.name, "b");
  EXPECT_EQ(segs[1].rows.columns[1].GetBytes(0), "bb");
  EXPECT_EQ(segs[2].table.name, "a");
  EXPECT_EQ(IdOf(segs[2].rows, 0), 3);
  // The rolled-back transaction never appears: 4 is the truncate.
  ASSERT_EQ(ev[3].txn.segments.size(), 1u);
  EXPECT_TRUE(ev[3].txn.segments[0].truncate);
  EXPECT_EQ(ev[3].txn.segments[0].table, (TableRef{db, "b"}));
  EXPECT_EQ(IdOf(ev[4].txn.segments.at(0).rows, 0), 7);
  // Positions increase.
  for (size_t i = 1; i < ev.size(); ++i) {
    auto c = CompareSourcePositions(ev[i - 1].txn.position, ev[i].txn.position);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_LT(*c, 0);
  }
  ExpectQuiet(stream.get(), 800);
}

TEST_F(MysqlCdcTest, LargeTransactionInParts) {
  const std::string db = "cdc_large";
  FreshDb(db);
  Exec("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))", db);
  auto src = Source(db);
  ASSERT_NE(src, nullptr);
  ASSERT_OK_AND_ASSIGN(auto stream, Stream(src.get(), "large", {}, {}, 100));
  Exec(
      "INSERT INTO t WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < "
      "250) SELECT n, CONCAT('v', n) FROM s",
      db);
  Exec("UPDATE t SET v = 'u' WHERE id <= 60", db);  // 120 rows: parts of 100 and 20
  auto ev = Collect(stream.get(), 2);
  ASSERT_EQ(ev.size(), 5u);
  std::vector<size_t> sizes;
  std::vector<bool> finals;
  int64_t next_id = 1;
  for (size_t i = 0; i < 3; ++i) {
    sizes.push_back(ev[i].txn.rows());
    finals.push_back(ev[i].txn.final);
    EXPECT_EQ(ev[i].txn.xid, ev[0].txn.xid);
    for (const auto& seg : ev[i].txn.segments) {
      for (size_t r = 0; r < seg.rows.rows(); ++r) EXPECT_EQ(IdOf(seg.rows, r), next_id++);
    }
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{100, 100, 50}));
  EXPECT_EQ(finals, (std::vector<bool>{false, false, true}));
  EXPECT_EQ(ev[3].txn.rows(), 100u);
  EXPECT_FALSE(ev[3].txn.final);
  EXPECT_EQ(ev[3].txn.segments[0].rows.ops.back(), RowOp::kUpdate);
  EXPECT_EQ(ev[4].txn.rows(), 20u);
  EXPECT_TRUE(ev[4].txn.final);
}

TEST_F(MysqlCdcTest, ResumeFromGtidAndFilePositionWithoutDuplicates) {
  const std::string db = "cdc_resume";
  FreshDb(db);
  Exec("CREATE TABLE t (id INT PRIMARY KEY)", db);
  auto src = Source(db);
  ASSERT_NE(src, nullptr);
  std::vector<SourcePosition> pos;
  {
    ASSERT_OK_AND_ASSIGN(auto stream, Stream(src.get(), "resume-a"));
    for (int i = 1; i <= 3; ++i) Exec("INSERT INTO t VALUES (" + std::to_string(i) + ")", db);
    auto ev = Collect(stream.get(), 3);
    ASSERT_EQ(ev.size(), 3u);
    for (const auto& e : ev) pos.push_back(e.txn.position);
    ASSERT_OK(stream->Confirm(pos.back()));
  }
  ASSERT_EQ(pos[0].kind, SourcePosition::Kind::kMysqlGtid);
  auto ids = [&](const std::vector<ChangeEvent>& ev) {
    std::vector<int64_t> out;
    for (const auto& e : ev) out.push_back(IdOf(e.txn.segments.at(0).rows, 0));
    return out;
  };
  {  // GTID: continues after transaction 1.
    ASSERT_OK_AND_ASSIGN(auto stream, Stream(src.get(), "resume-b", pos[0]));
    auto ev = Collect(stream.get(), 2);
    EXPECT_EQ(ids(ev), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(ev.back().txn.position.value, pos[2].value);
    ExpectQuiet(stream.get(), 800);
  }
  {  // File position only.
    SourcePosition fp;
    fp.kind = SourcePosition::Kind::kMysqlFilePos;
    fp.value = pos[1].file_pos;
    ASSERT_OK_AND_ASSIGN(auto stream, Stream(src.get(), "resume-c", fp));
    auto ev = Collect(stream.get(), 1);
    EXPECT_EQ(ids(ev), (std::vector<int64_t>{3}));
    EXPECT_EQ(ev.back().txn.position.file_pos, pos[2].file_pos);
    EXPECT_EQ(ev.back().txn.position.value, pos[2].value);
    ExpectQuiet(stream.get(), 800);
  }
  {  // From the last position: nothing old, only what comes next.
    ASSERT_OK_AND_ASSIGN(auto stream, Stream(src.get(), "resume-d", pos[2]));
    Exec("INSERT INTO t VALUES (4)", db);
    auto ev = Collect(stream.get(), 1);
    EXPECT_EQ(ids(ev), (std::vector<int64_t>{4}));
  }
  {  // A GTID the server never had, and a purged/unknown file: non-retryable errors.
    SourcePosition bad;
    bad.kind = SourcePosition::Kind::kMysqlFilePos;
    bad.value = "binlog.999999:4";
    auto s = Stream(src.get(), "resume-e", bad);
    ASSERT_FALSE(s.ok());
    EXPECT_FALSE(s.status().retryable());
    EXPECT_NE(s.status().message().find("purged"), std::string::npos) << s.status().ToString();
    SourcePosition future;
    future.kind = SourcePosition::Kind::kMysqlGtid;
    future.value = "0-1-999999999";
    auto f = Stream(src.get(), "resume-f", future);
    Status st = f.ok() ? (*f)->Next(std::chrono::seconds(3)).status() : f.status();
    ASSERT_FALSE(st.ok());
    EXPECT_FALSE(st.retryable()) << st.ToString();
  }
}

TEST_F(MysqlCdcTest, MinimalRowImageGivesUnchangedCells) {
  const std::string db = "cdc_minimal";
  FreshDb(db);
  Exec("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20), w INT)", db);
  Exec("INSERT INTO t VALUES (1, 'a', 10)", db);
  auto src = Source(db);
  ASSERT_NE(src, nullptr);
  ASSERT_OK_AND_ASSIGN(auto stream, Stream(src.get(), "minimal"));
  // Session-level MINIMAL image: before = the key, after = the changed columns.
  Exec(
      "SET SESSION binlog_row_image = 'MINIMAL'; UPDATE t SET v = 'b' WHERE id = 1; DELETE "
      "FROM t WHERE id = 1",
      db);
  auto ev = Collect(stream.get(), 2);
  ASSERT_EQ(ev.size(), 2u);
  const Bundle& u = ev[0].txn.segments.at(0).rows;
  ASSERT_EQ(u.rows(), 2u);
  EXPECT_EQ(u.ops[0], RowOp::kUpdateBefore);
  EXPECT_EQ(IdOf(u, 0), 1);
  EXPECT_TRUE(u.columns[1].IsUnchanged(0));
  EXPECT_TRUE(u.columns[2].IsUnchanged(0));
  EXPECT_EQ(u.ops[1], RowOp::kUpdate);
  EXPECT_TRUE(u.columns[0].IsUnchanged(1));
  EXPECT_EQ(u.columns[1].GetBytes(1), "b");
  EXPECT_TRUE(u.columns[2].IsUnchanged(1));
  const Bundle& d = ev[1].txn.segments.at(0).rows;
  ASSERT_EQ(d.rows(), 1u);
  EXPECT_EQ(d.ops[0], RowOp::kDelete);
  EXPECT_EQ(IdOf(d, 0), 1);
  EXPECT_TRUE(d.columns[1].IsUnchanged(0));
}

TEST_F(MysqlCdcTest, LostConnectionIsRetryable) {
  const std::string db = "cdc_lost";
  FreshDb(db);
  Exec("CREATE TABLE t (id INT PRIMARY KEY)", db);
  auto src = Source(db);
  ASSERT_NE(src, nullptr);
  ASSERT_OK_AND_ASSIGN(auto stream, Stream(src.get(), "lost"));
  Exec("INSERT INTO t VALUES (1)", db);
  auto ev = Collect(stream.get(), 1);
  ASSERT_EQ(ev.size(), 1u);
  // Kill the stream's binlog dump thread on the server.
  auto rows = server_->Query(
      "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_FALSE(rows->empty());
  for (const auto& r : *rows) (void)server_->Exec("KILL " + r[0].value_or("0"));
  Status st;
  for (int i = 0; i < 20 && st.ok(); ++i)
    st = stream->Next(std::chrono::milliseconds(300)).status();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.retryable()) << st.ToString();
  // Reopening from the last position continues without a duplicate.
  Exec("INSERT INTO t VALUES (2)", db);
  ASSERT_OK_AND_ASSIGN(auto again, Stream(src.get(), "lost", ev[0].txn.position));
  auto ev2 = Collect(again.get(), 1);
  ASSERT_EQ(ev2.size(), 1u);
  EXPECT_EQ(IdOf(ev2[0].txn.segments.at(0).rows, 0), 2);
}

// Next(timeout) on a quiet source comes back about wake_interval after its timeout, not when the
// server's next event happens to arrive: the reader publishes a lone transaction on time.
TEST_F(MysqlCdcTest, QuietSourceReturnsWithinTheWakeInterval) {
  const std::string db = "cdc_quiet";
  FreshDb(db);
  Exec("CREATE TABLE t (id INT PRIMARY KEY)", db);
  auto src = Source(db);
  ASSERT_NE(src, nullptr);
  CdcOptions o;
  o.stream = "quiet";
  o.wake_interval = std::chrono::milliseconds(20);
  ASSERT_OK_AND_ASSIGN(auto stream, src->OpenChangeStream(o));
  Exec("INSERT INTO t VALUES (1)", db);
  ASSERT_EQ(Collect(stream.get(), 1).size(), 1u);

  // 20 idle calls: without the short heartbeat each one waits for the default one (1 s).
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    ASSERT_OK_AND_ASSIGN(ChangeEvent e, stream->Next(std::chrono::milliseconds(5)));
    EXPECT_EQ(e.kind, ChangeEvent::Kind::kIdle);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8));

  // A lone transaction after the quiet spell arrives in the next call that waits long enough.
  Exec("INSERT INTO t VALUES (2)", db);
  auto ev = Collect(stream.get(), 1);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(IdOf(ev[0].txn.segments.at(0).rows, 0), 2);
}

TEST_F(MysqlCdcTest, SnapshotHandOffHasNoGapAndNoDuplicate) {
  const std::string db = "cdc_handoff";
  FreshDb(db);
  Exec("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", db);
  Exec("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')", db);
  auto src = Source(db);
  ASSERT_NE(src, nullptr);
  CdcOptions o;
  o.stream = "handoff";
  ASSERT_OK(src->CheckCdc(o));
  ASSERT_OK_AND_ASSIGN(auto snap, src->BeginCdcSnapshot(2, o));
  const SourcePosition at = snap->position();
  ASSERT_EQ(at.kind, SourcePosition::Kind::kMysqlGtid);
  EXPECT_FALSE(at.file_pos.empty());
  Exec("INSERT INTO t VALUES (4, 'd'); UPDATE t SET v = 'B' WHERE id = 2", db);
  // The snapshot sees 1..3 as they were.
  ASSERT_OK_AND_ASSIGN(TableSchema schema, src->Describe({"", "t"}));
  ReadSpec spec;
  spec.table = schema;
  ASSERT_OK_AND_ASSIGN(auto reader, snap->OpenReader(spec));
  Bundle b;
  for (const Column& c : schema.columns) b.columns.emplace_back(c.type);
  while (true) {
    ASSERT_OK_AND_ASSIGN(bool more, reader->Next(&b, 100, 1 << 20));
    if (!more) break;
  }
  ASSERT_EQ(b.rows(), 3u);
  EXPECT_EQ(b.columns[1].GetBytes(1), "b");
  reader.reset();
  // The stream from the snapshot's position has exactly the later changes.
  o.start = at;
  ASSERT_OK_AND_ASSIGN(auto stream, src->OpenChangeStream(o));
  auto ev = Collect(stream.get(), 2);
  ASSERT_EQ(ev.size(), 2u);
  const Bundle& ins = ev[0].txn.segments.at(0).rows;
  ASSERT_EQ(ins.rows(), 1u);
  EXPECT_EQ(IdOf(ins, 0), 4);
  const Bundle& up = ev[1].txn.segments.at(0).rows;
  ASSERT_EQ(up.rows(), 2u);
  EXPECT_EQ(up.columns[1].GetBytes(0), "b");
  EXPECT_EQ(up.columns[1].GetBytes(1), "B");
  ExpectQuiet(stream.get(), 800);
}

TEST_F(MysqlCdcTest, DdlBecomesSchemaChanges) {
  const std::string db = "cdc_ddl";
  FreshDb(db);
  Exec("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", db);
  auto src = Source(db);
  ASSERT_NE(src, nullptr);
  ASSERT_OK_AND_ASSIGN(auto stream, Stream(src.get(), "ddl"));
  ASSERT_OK_AND_ASSIGN(TableSchema s0, stream->TableSchemaOf({"", "t"}));
  EXPECT_EQ(s0.columns.size(), 2u);
  // Each statement waits for its events: the stream describes a changed table as it is now.
  const std::vector<std::string> statements = {
      "INSERT INTO t VALUES (1, 'a')",
      "ALTER TABLE t ADD COLUMN n INT DEFAULT 5, ADD COLUMN m TEXT",
      "INSERT INTO t VALUES (2, 'b', 6, 'x')", "ALTER TABLE t MODIFY v VARCHAR(100)",
      "UPDATE t SET v = REPEAT('z', 50) WHERE id = 2"};
  std::vector<ChangeEvent> ev;
  for (const std::string& sql : statements) {
    Exec(sql, db);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    const size_t want = ev.size() + 1;
    while (ev.size() < want && std::chrono::steady_clock::now() < deadline) {
      ASSERT_OK_AND_ASSIGN(ChangeEvent e, stream->Next(std::chrono::milliseconds(500)));
      if (e.kind != ChangeEvent::Kind::kIdle) ev.push_back(std::move(e));
    }
  }
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[0].kind, ChangeEvent::Kind::kTransaction);
  EXPECT_EQ(ev[0].txn.segments.at(0).rows.columns.size(), 2u);
  ASSERT_EQ(ev[1].kind, ChangeEvent::Kind::kSchemaChange);
  const SchemaChange& add = ev[1].schema_change;
  EXPECT_EQ(add.table, (TableRef{db, "t"}));
  EXPECT_TRUE(add.only_added_columns);
  EXPECT_EQ(add.added_columns, (std::vector<std::string>{"n", "m"}));
  EXPECT_NE(add.statement.find("ADD COLUMN n"), std::string::npos);
  EXPECT_EQ(add.schema.columns.size(), 4u);
  ASSERT_EQ(ev[2].kind, ChangeEvent::Kind::kTransaction);
  const Bundle& b = ev[2].txn.segments.at(0).rows;
  ASSERT_EQ(b.columns.size(), 4u);
  EXPECT_EQ(b.columns[2].GetInt(0), 6);
  EXPECT_EQ(b.columns[3].GetBytes(0), "x");
  ASSERT_EQ(ev[3].kind, ChangeEvent::Kind::kSchemaChange);
  EXPECT_FALSE(ev[3].schema_change.only_added_columns);
  EXPECT_TRUE(ev[3].schema_change.added_columns.empty());
  EXPECT_NE(ev[3].schema_change.statement.find("MODIFY"), std::string::npos);
  EXPECT_EQ(ev[3].schema_change.schema.columns[1].length, 100u);
  ASSERT_EQ(ev[4].kind, ChangeEvent::Kind::kTransaction);
  EXPECT_EQ(ev[4].txn.segments.at(0).rows.columns[1].GetBytes(1), std::string(50, 'z'));
  // Dropping a followed table stops the stream with the statement named.
  Exec("DROP TABLE t", db);
  Status st;
  for (int i = 0; i < 20 && st.ok(); ++i) {
    auto e = stream->Next(std::chrono::milliseconds(500));
    st = e.status();
  }
  ASSERT_FALSE(st.ok());
  EXPECT_FALSE(st.retryable());
  EXPECT_NE(st.message().find("DROP TABLE"), std::string::npos) << st.ToString();
}

TEST_F(MysqlCdcTest, CheckCdcSaysWhatToFix) {
  const std::string db = "cdc_check";
  FreshDb(db);
  Exec("CREATE TABLE t (id INT PRIMARY KEY)", db);
  auto src = Source(db);
  ASSERT_NE(src, nullptr);
  CdcOptions o;
  o.stream = "check";
  o.tables = {{"", "t"}};
  ASSERT_OK(src->CheckCdc(o));
  o.tables = {{"", "missing"}};
  EXPECT_EQ(src->CheckCdc(o).code(), StatusCode::kNotFound);
  o.tables = {{"", "t"}};

  // A user without replication privileges.
  Exec(
      "DROP USER IF EXISTS 'cdc_plain'@'%'; CREATE USER 'cdc_plain'@'%' IDENTIFIED BY 'pw'; "
      "GRANT SELECT ON " +
      db + ".* TO 'cdc_plain'@'%'");
  ConnectionConfig plain = Config(db);
  plain.user = "cdc_plain";
  plain.password = "pw";
  {
    ASSERT_OK_AND_ASSIGN(auto p, MysqlSource::Open(plain));
    Status s = p->CheckCdc(o);
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.ToString();
    EXPECT_NE(s.message().find("GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.*"), std::string::npos)
        << s.ToString();
  }
  Exec("GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'cdc_plain'@'%'");
  {
    ASSERT_OK_AND_ASSIGN(auto p, MysqlSource::Open(plain));
    ASSERT_OK(p->CheckCdc(o));
  }

  // Global settings, restored afterwards.
  Exec("SET GLOBAL binlog_format = 'STATEMENT'");
  Status fmt = src->CheckCdc(o);
  Exec("SET GLOBAL binlog_format = 'ROW'");
  EXPECT_EQ(fmt.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(fmt.message().find("SET GLOBAL binlog_format = 'ROW'"), std::string::npos)
      << fmt.ToString();
  Exec("SET GLOBAL binlog_row_image = 'MINIMAL'");
  Status img = src->CheckCdc(o);
  Exec("SET GLOBAL binlog_row_image = 'FULL'");
  EXPECT_EQ(img.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(img.message().find("must be FULL"), std::string::npos) << img.ToString();
  ASSERT_OK(src->CheckCdc(o));

  // A private server without a binary log.
  testing::MariaDbServerOptions no_log;
  no_log.log_bin = false;
  ASSERT_OK_AND_ASSIGN(auto plain_server, MariaDbServer::Start(no_log));
  auto cfg = ParseConnectionUrl(plain_server->url());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  ASSERT_OK_AND_ASSIGN(auto nolog, MysqlSource::Open(*cfg));
  CdcOptions any;
  Status off = nolog->CheckCdc(any);
  EXPECT_EQ(off.code(), StatusCode::kFailedPrecondition) << off.ToString();
  EXPECT_NE(off.message().find("log_bin"), std::string::npos) << off.ToString();
  auto snap = nolog->BeginCdcSnapshot(1, any);
  EXPECT_EQ(snap.status().code(), StatusCode::kFailedPrecondition) << snap.status().ToString();
  auto stream = nolog->OpenChangeStream(any);
  EXPECT_FALSE(stream.ok());
}

}  // namespace
}  // namespace dbs

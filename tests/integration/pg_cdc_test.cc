// PostgreSQL change data capture (pgoutput logical replication) against the fixture's shared
// PostgreSQL: the type zoo decoded value-exact (text and binary values), unchanged TOAST cells,
// REPLICA IDENTITY FULL, transaction order, large transactions in parts, streamed (protocol 2)
// transactions with aborts, resume without duplicates, confirmation and the idle heartbeat, the
// snapshot hand-off, ADD COLUMN, CheckCdc's errors and a dropped slot.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "config/connection.h"
#include "core/bundle.h"
#include "core/logging.h"
#include "sources/change_stream.h"
#include "sources/source.h"
#include "support/servers.h"

namespace dbs {
namespace {

using namespace std::chrono_literals;
using testing::PostgresServer;
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

std::string SqlFile(const std::string& name) {
  std::ifstream in(std::string(DBS_TEST_SQL_DIR) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Cell(const Rows& rows, size_t row = 0, size_t col = 0) {
  if (rows.size() <= row || rows[row].size() <= col) return "<missing>";
  return rows[row][col].value_or("<NULL>");
}

using RowValues = std::vector<Value>;

// Collects the messages of log records (to see which paths the stream took).
class LogCapture : public LogSink {
 public:
  void Write(const LogRecord& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    messages_.push_back(r.message);
  }
  bool Contains(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& m : messages_) {
      if (m.find(text) != std::string::npos) return true;
    }
    return false;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> messages_;
};

RowValues RowOf(const Bundle& b, size_t r) {
  RowValues v;
  for (const ColumnVector& c : b.columns) v.push_back(c.Get(r));
  return v;
}

class PgCdcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pg = SharedServers::Postgres();
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    pg_ = *pg;
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    name_ = name.substr(0, 40);
    db_ = "cdc_" + name_;
    ASSERT_OK(pg_->CreateDatabase(db_));
    auto capture = std::make_unique<LogCapture>();
    log_ = capture.get();
    Logger::Global().AddSink(std::move(capture));
    options_.stream = "T_" + name_;  // default names: dbs_t_<name>, lower-cased
    slot_ = "dbs_t_" + name_;
  }

  void TearDown() override {
    stream_.reset();
    source_.reset();
    if (log_) Logger::Global().RemoveSink(log_);
    // The walsender may hold the slot for a moment after the stream closed.
    for (int i = 0; i < 50; ++i) {
      auto r =
          pg_->Query("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + slot_ + "'");
      if (!r.ok() || Cell(*r) == "0") break;
      (void)pg_->Exec("SELECT pg_drop_replication_slot('" + slot_ + "')");
      std::this_thread::sleep_for(100ms);
    }
  }

  ConnectionConfig Config() {
    auto c = ParseConnectionUrl(pg_->UrlFor(db_));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : ConnectionConfig{};
  }

  Source* source() {
    if (!source_) {
      auto s = Source::Open(Config());
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      if (s.ok()) source_ = std::move(s).value();
    }
    return source_.get();
  }

  Status Open(const SourcePosition& start = {}) {
    stream_.reset();
    CdcOptions o = options_;
    o.start = start;
    Result<std::unique_ptr<ChangeStream>> s = source()->OpenChangeStream(o);
    if (!s.ok()) return s.status();
    stream_ = std::move(s).value();
    return Status::Ok();
  }

  Status Exec(const std::string& sql) { return pg_->Exec(sql, db_); }
  Rows Query(const std::string& sql) {
    auto r = pg_->Query(sql, db_);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Rows{};
  }

  // Events until `txns` final transactions arrived (schema changes and parts included).
  std::vector<ChangeEvent> Collect(size_t txns, std::chrono::seconds timeout = 30s) {
    std::vector<ChangeEvent> out;
    size_t finals = 0;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (finals < txns && std::chrono::steady_clock::now() < deadline) {
      auto ev = stream_->Next(200ms);
      EXPECT_TRUE(ev.ok()) << ev.status().ToString();
      if (!ev.ok()) break;
      if (ev->kind == ChangeEvent::Kind::kIdle) continue;
      if (ev->kind == ChangeEvent::Kind::kTransaction && ev->txn.final) ++finals;
      out.push_back(std::move(ev).value());
    }
    EXPECT_EQ(finals, txns) << "transactions received before the timeout";
    return out;
  }

  // Nothing more arrives within `wait`.
  void ExpectQuiet(std::chrono::milliseconds wait = 1500ms) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline) {
      auto ev = stream_->Next(200ms);
      ASSERT_TRUE(ev.ok()) << ev.status().ToString();
      EXPECT_EQ(ev->kind, ChangeEvent::Kind::kIdle)
          << "unexpected transaction at " << ev->position.value;
    }
  }

  // The rows of a table as a snapshot read gives them, by their first (id) column.
  std::map<int64_t, RowValues> SnapshotRows(const std::string& table, Snapshot* snap = nullptr) {
    std::map<int64_t, RowValues> out;
    auto schema = source()->Describe(TableRef{"public", table});
    EXPECT_TRUE(schema.ok()) << schema.status().ToString();
    if (!schema.ok()) return out;
    std::unique_ptr<Snapshot> own;
    if (snap == nullptr) {
      auto s = source()->BeginSnapshot(1);
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      if (!s.ok()) return out;
      own = std::move(s).value();
      snap = own.get();
    }
    ReadSpec spec;
    spec.table = *schema;
    auto reader = snap->OpenReader(spec);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    if (!reader.ok()) return out;
    bool more = true;
    while (more) {
      Bundle b;
      auto r = (*reader)->Next(&b, 1000, 64u << 20);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) break;
      more = *r;
      for (size_t i = 0; i < b.rows(); ++i) out[b.columns[0].GetInt(i)] = RowOf(b, i);
    }
    return out;
  }

  // Waits (driving the stream) until the slot's confirmed_flush_lsn reaches `lsn`.
  bool WaitConfirmed(const std::string& lsn, std::chrono::seconds timeout = 15s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      Rows r = Query("SELECT confirmed_flush_lsn >= '" + lsn +
                     "'::pg_lsn FROM pg_replication_slots WHERE slot_name = '" + slot_ + "'");
      if (Cell(r) == "t") return true;
      auto ev = stream_->Next(100ms);
      if (!ev.ok()) return false;
    }
    return false;
  }

  PostgresServer* pg_ = nullptr;
  LogCapture* log_ = nullptr;
  std::string name_, db_, slot_;
  CdcOptions options_;
  std::unique_ptr<Source> source_;
  std::unique_ptr<ChangeStream> stream_;
};

const std::regex kLsnRe("^[0-9A-F]+/[0-9A-F]+$");

// Every cell of `row` equals `expect` (unchanged cells allowed where `may_be_unchanged`).
void ExpectRow(const Bundle& b, size_t r, const RowValues& expect, bool may_be_unchanged,
               const TableSchema& schema, const std::string& what) {
  ASSERT_EQ(b.columns.size(), expect.size()) << what;
  for (size_t c = 0; c < expect.size(); ++c) {
    if (b.columns[c].IsUnchanged(r)) {
      EXPECT_TRUE(may_be_unchanged)
          << what << ": column " << schema.columns[c].name << " unchanged";
      continue;
    }
    EXPECT_EQ(b.columns[c].Get(r), expect[c])
        << what << ": column " << schema.columns[c].name << ": got "
        << b.columns[c].Get(r).ToString().substr(0, 200) << ", want "
        << expect[c].ToString().substr(0, 200);
  }
}

const char kZooCopy[] = "INSERT INTO %T SELECT id + 100, %C FROM %S ORDER BY id";

// The zoo round trip on `table` (created like zoo, holding zoo's rows): inserts copies of the
// rows, updates (also the key), deletes and truncates; each decoded row equals what a snapshot
// read gives for the same row.
class PgCdcZooTest : public PgCdcTest {
 protected:
  void Run(const std::string& table);
};

void PgCdcZooTest::Run(const std::string& table) {
  PostgresServer* pg = pg_;
  const std::string& db = db_;
  ChangeStream* stream = stream_.get();
  auto cols = pg->Query(
      "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM "
      "pg_attribute WHERE attrelid = '" +
          table + "'::regclass AND attnum > 1 AND NOT attisdropped",
      db);
  ASSERT_TRUE(cols.ok());
  std::string sql = kZooCopy;
  sql.replace(sql.find("%T"), 2, table);
  sql.replace(sql.find("%C"), 2, Cell(*cols));
  sql.replace(sql.find("%S"), 2, table);
  ASSERT_OK(pg->Exec(sql, db));
  std::map<int64_t, RowValues> snap = SnapshotRows(table);
  ASSERT_EQ(snap.size(), 8u);
  ASSERT_OK(pg->Exec("UPDATE " + table + " SET c_int = 7 WHERE id = 104", db));
  ASSERT_OK(pg->Exec("UPDATE " + table + " SET id = 200 WHERE id = 101", db));
  ASSERT_OK(pg->Exec("DELETE FROM " + table + " WHERE id = 102", db));
  ASSERT_OK(pg->Exec("TRUNCATE " + table, db));
  std::vector<ChangeEvent> ev = Collect(5);
  ASSERT_EQ(ev.size(), 5u);
  for (const auto& e : ev) {
    ASSERT_EQ(e.kind, ChangeEvent::Kind::kTransaction);
    EXPECT_TRUE(e.txn.final);
    EXPECT_EQ(e.txn.position.kind, SourcePosition::Kind::kPgLsn);
    EXPECT_TRUE(std::regex_match(e.txn.position.value, kLsnRe)) << e.txn.position.value;
    EXPECT_GT(e.txn.commit_time_us, 1'600'000'000'000'000LL);
    ASSERT_EQ(e.txn.segments.size(), 1u);
    EXPECT_EQ(e.txn.segments[0].table, (TableRef{"public", table}));
  }
  for (size_t i = 1; i < ev.size(); ++i) {
    auto c = CompareSourcePositions(ev[i - 1].txn.position, ev[i].txn.position);
    ASSERT_TRUE(c.ok());
    EXPECT_LT(*c, 0) << "commit order";
  }
  auto schema_r = stream->TableSchemaOf(TableRef{"public", table});
  ASSERT_TRUE(schema_r.ok());
  const TableSchema& schema = *schema_r;
  const int c_int = schema.FindColumn("c_int");
  ASSERT_GE(c_int, 0);

  // 1: the inserts, value-exact.
  const Bundle& ins = ev[0].txn.segments[0].rows;
  ASSERT_EQ(ins.rows(), 4u);
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(ins.ops[r], RowOp::kInsert);
    const int64_t id = ins.columns[0].GetInt(r);
    ASSERT_TRUE(snap.count(id)) << id;
    ExpectRow(ins, r, snap[id], false, schema, "insert of " + std::to_string(id));
  }
  // 2: an update of a non-key column; the 1 MB bytea of row 104 is unchanged TOAST.
  const Bundle& up = ev[1].txn.segments[0].rows;
  ASSERT_EQ(up.rows(), 1u);
  EXPECT_EQ(up.ops[0], RowOp::kUpdate);
  RowValues want = snap[104];
  want[static_cast<size_t>(c_int)] = Value::Int(LogicalType::kInt32, 7);
  ExpectRow(up, 0, want, true, schema, "update of 104");
  const int c_bytea = schema.FindColumn("c_bytea");
  EXPECT_TRUE(up.columns[static_cast<size_t>(c_bytea)].IsUnchanged(0)) << "TOASTed bytea";
  // 3: key change: the old key, then the new row.
  const Bundle& key = ev[2].txn.segments[0].rows;
  ASSERT_EQ(key.rows(), 2u);
  EXPECT_EQ(key.ops[0], RowOp::kUpdateBefore);
  EXPECT_EQ(key.columns[0].GetInt(0), 101);
  for (size_t c = 1; c < key.columns.size(); ++c) {
    EXPECT_TRUE(key.columns[c].IsUnchanged(0)) << schema.columns[c].name;
  }
  EXPECT_EQ(key.ops[1], RowOp::kUpdate);
  want = snap[101];
  want[0] = Value::Int(LogicalType::kInt32, 200);
  ExpectRow(key, 1, want, true, schema, "key update 101 -> 200");
  // 4: the delete carries the key.
  const Bundle& del = ev[3].txn.segments[0].rows;
  ASSERT_EQ(del.rows(), 1u);
  EXPECT_EQ(del.ops[0], RowOp::kDelete);
  EXPECT_EQ(del.columns[0].GetInt(0), 102);
  EXPECT_TRUE(del.columns[1].IsUnchanged(0));
  // 5: truncate.
  EXPECT_TRUE(ev[4].txn.segments[0].truncate);
  EXPECT_EQ(ev[4].txn.segments[0].rows.rows(), 0u);
}

// inet, money, xml, ranges, ... in the zoo: the stream uses text values.
TEST_F(PgCdcZooTest, ZooTextValues) {
  ASSERT_OK(Exec(SqlFile("postgres_zoo.sql")));
  options_.tables = {TableRef{"public", "zoo"}};
  ASSERT_OK(source()->CheckCdc(options_));
  ASSERT_OK(Open());
  EXPECT_TRUE(log_->Contains("text values"));
  Run("zoo");
}

// Only types with binary decoders: the stream uses binary values (PostgreSQL >= 14).
TEST_F(PgCdcZooTest, ZooBinaryValues) {
  ASSERT_OK(Exec(SqlFile("postgres_zoo.sql")));
  ASSERT_OK(
      Exec("CREATE TABLE zoo_bin AS SELECT id, c_smallint, c_int, c_bigint, c_real, c_double, "
           "c_numeric, c_numeric_free, c_char, c_varchar, c_text, c_name, c_bytea, c_bool, c_date, "
           "c_time, c_timetz, c_timestamp, c_timestamptz, c_interval, c_uuid, c_json, c_jsonb, "
           "c_bit, c_varbit, c_mood, c_domain, c_int_arr, c_text_arr, c_2d_arr FROM zoo; "
           "ALTER TABLE zoo_bin ADD PRIMARY KEY (id)"));
  options_.tables = {TableRef{"", "zoo_bin"}};
  ASSERT_OK(source()->CheckCdc(options_));
  ASSERT_OK(Open());
  EXPECT_TRUE(log_->Contains("binary values"));
  Run("zoo_bin");
}

// A drain reads up to CurrentSourcePosition: it must lie past a commit made just before with
// synchronous_commit = off, whose record may still be in the WAL buffers (before the fix the
// position was the WAL write position, usually a page or more behind such a commit).
TEST_F(PgCdcTest, CurrentPositionCoversAnAsynchronousCommit) {
  ASSERT_OK(Exec("CREATE TABLE t (id int PRIMARY KEY)"));
  for (int i = 0; i < 20; ++i) {
    Rows r = Query("SET synchronous_commit = off; INSERT INTO t VALUES (" + std::to_string(i) +
                   "); SELECT pg_current_wal_insert_lsn()::text");
    ASSERT_EQ(r.size(), 1u);
    const std::string after_commit = r[0][0].value_or("");
    ASSERT_OK_AND_ASSIGN(SourcePosition p, CurrentSourcePosition(Config()));
    ASSERT_EQ(p.kind, SourcePosition::Kind::kPgLsn);
    // At most a page header before (the position then is the page start: nothing follows).
    Rows d = Query("SELECT pg_wal_lsn_diff('" + p.value + "', '" + after_commit + "') >= -40");
    EXPECT_EQ(Cell(d), "t") << "position " << p.value << ", commit ends before " << after_commit;
  }
}

TEST_F(PgCdcTest, UnchangedToastAndReplicaIdentityFull) {
  ASSERT_OK(
      Exec("CREATE TABLE doc (id int PRIMARY KEY, body text, n int); "
           "CREATE TABLE nokey (a int, b text); ALTER TABLE nokey REPLICA IDENTITY FULL"));
  options_.tables = {TableRef{"public", "doc"}, TableRef{"public", "nokey"}};
  ASSERT_OK(source()->CheckCdc(options_));
  ASSERT_OK(Open());
  // ~200 kB of incompressible text: stored out of line.
  ASSERT_OK(
      Exec("INSERT INTO doc SELECT 1, string_agg(md5(i::text), '') FROM "
           "generate_series(1, 6000) i"));
  ASSERT_OK(Exec("UPDATE doc SET n = 5 WHERE id = 1"));
  ASSERT_OK(Exec("INSERT INTO nokey VALUES (1, 'x'), (2, 'y')"));
  ASSERT_OK(Exec("UPDATE nokey SET b = 'z' WHERE a = 1"));
  ASSERT_OK(Exec("DELETE FROM nokey WHERE a = 2"));
  std::vector<ChangeEvent> ev = Collect(5);
  ASSERT_EQ(ev.size(), 5u);
  const Bundle& ins = ev[0].txn.segments[0].rows;
  EXPECT_EQ(ins.columns[1].GetBytes(0).size(), 6000u * 32);
  const Bundle& up = ev[1].txn.segments[0].rows;
  ASSERT_EQ(up.rows(), 1u);
  EXPECT_EQ(up.ops[0], RowOp::kUpdate);
  EXPECT_TRUE(up.columns[1].IsUnchanged(0)) << "unchanged TOAST must not read as a value";
  EXPECT_FALSE(up.columns[1].IsNull(0) && !up.columns[1].IsUnchanged(0));
  EXPECT_EQ(up.columns[2].GetInt(0), 5);
  // REPLICA IDENTITY FULL: the whole old row before the new one; deletes carry the whole row.
  const Bundle& fu = ev[3].txn.segments[0].rows;
  ASSERT_EQ(fu.rows(), 2u);
  EXPECT_EQ(fu.ops[0], RowOp::kUpdateBefore);
  EXPECT_EQ(fu.columns[0].GetInt(0), 1);
  EXPECT_EQ(fu.columns[1].GetBytes(0), "x");
  EXPECT_EQ(fu.ops[1], RowOp::kUpdate);
  EXPECT_EQ(fu.columns[1].GetBytes(1), "z");
  const Bundle& fd = ev[4].txn.segments[0].rows;
  ASSERT_EQ(fd.rows(), 1u);
  EXPECT_EQ(fd.ops[0], RowOp::kDelete);
  EXPECT_EQ(fd.columns[0].GetInt(0), 2);
  EXPECT_EQ(fd.columns[1].GetBytes(0), "y");
}

TEST_F(PgCdcTest, MultiTableTransactionsKeepOrder) {
  ASSERT_OK(Exec("CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int PRIMARY KEY)"));
  options_.tables = {TableRef{"public", "a"}, TableRef{"public", "b"}};
  ASSERT_OK(Open());
  ASSERT_OK(
      Exec("BEGIN; INSERT INTO a VALUES (1); INSERT INTO a VALUES (2); "
           "INSERT INTO b VALUES (1); INSERT INTO a VALUES (3); COMMIT"));
  ASSERT_OK(Exec("INSERT INTO b VALUES (2)"));
  std::vector<ChangeEvent> ev = Collect(2);
  ASSERT_EQ(ev.size(), 2u);
  const auto& s = ev[0].txn.segments;
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].table.name, "a");
  EXPECT_EQ(s[0].rows.rows(), 2u);
  EXPECT_EQ(s[1].table.name, "b");
  EXPECT_EQ(s[1].rows.rows(), 1u);
  EXPECT_EQ(s[2].table.name, "a");
  EXPECT_EQ(s[2].rows.columns[0].GetInt(0), 3);
  EXPECT_EQ(ev[1].txn.segments[0].table.name, "b");
}

TEST_F(PgCdcTest, LargeTransactionInParts) {
  ASSERT_OK(Exec("CREATE TABLE big (id int PRIMARY KEY, v text)"));
  options_.tables = {TableRef{"public", "big"}};
  options_.max_part_rows = 100;
  ASSERT_OK(Open());
  ASSERT_OK(Exec("INSERT INTO big SELECT i, 'v' || i FROM generate_series(1, 250) i"));
  std::vector<ChangeEvent> ev = Collect(1);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_FALSE(ev[0].txn.final);
  EXPECT_FALSE(ev[1].txn.final);
  EXPECT_TRUE(ev[2].txn.final);
  EXPECT_EQ(ev[0].txn.rows(), 100u);
  EXPECT_EQ(ev[1].txn.rows(), 100u);
  EXPECT_EQ(ev[2].txn.rows(), 50u);
  EXPECT_EQ(ev[0].txn.xid, ev[2].txn.xid);
  int64_t next = 1;
  for (const auto& e : ev) {
    for (const auto& seg : e.txn.segments) {
      for (size_t r = 0; r < seg.rows.rows(); ++r) EXPECT_EQ(seg.rows.columns[0].GetInt(r), next++);
    }
  }
}

// Protocol 2 streams in-progress transactions once they exceed logical_decoding_work_mem (set
// low for the replication session); the stream buffers them until Stream Commit, drops aborted
// ones and rolled-back subtransactions.
TEST_F(PgCdcTest, StreamedTransactions) {
  ASSERT_OK(Exec("CREATE TABLE s (id int PRIMARY KEY, v text)"));
  options_.tables = {TableRef{"public", "s"}};
  ConnectionConfig cfg = Config();
  cfg.params["options"] = "-c logical_decoding_work_mem=64kB";
  auto src = Source::Open(cfg);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  source_ = std::move(src).value();
  ASSERT_OK(Open());
  // Aborted after being streamed.
  ASSERT_OK(
      Exec("BEGIN; INSERT INTO s SELECT i, repeat('a', 200) FROM "
           "generate_series(100001, 103000) i; ROLLBACK"));
  // Committed, with a rolled-back subtransaction in the middle.
  ASSERT_OK(
      Exec("BEGIN; INSERT INTO s SELECT i, repeat('b', 200) FROM generate_series(1, 3000) i; "
           "SAVEPOINT sp; INSERT INTO s SELECT i, 'gone' FROM generate_series(5001, 8000) i; "
           "ROLLBACK TO sp; "
           "INSERT INTO s SELECT i, repeat('c', 200) FROM generate_series(3001, 6000) i; "
           "COMMIT"));
  ASSERT_OK(Exec("INSERT INTO s VALUES (0, 'small')"));
  std::vector<ChangeEvent> ev = Collect(2);
  ASSERT_EQ(ev.size(), 2u);
  ASSERT_TRUE(ev[0].txn.final);
  std::vector<int64_t> ids;
  for (const auto& seg : ev[0].txn.segments) {
    for (size_t r = 0; r < seg.rows.rows(); ++r) ids.push_back(seg.rows.columns[0].GetInt(r));
  }
  ASSERT_EQ(ids.size(), 6000u);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], static_cast<int64_t>(i + 1));
  EXPECT_EQ(ev[1].txn.segments[0].rows.columns[0].GetInt(0), 0);
  // Statistics reach pg_stat_replication_slots with a delay.
  std::string streamed;
  for (int i = 0; i < 50; ++i) {
    streamed = Cell(Query("SELECT stream_txns FROM pg_stat_replication_slots WHERE slot_name = '" +
                          slot_ + "'"));
    if (streamed != "0" && streamed != "<missing>") break;
    ASSERT_TRUE(stream_->Next(200ms).ok());
  }
  EXPECT_NE(streamed, "0") << "the server did not stream: the test proves nothing";
  EXPECT_NE(streamed, "<missing>");
  EXPECT_TRUE(log_->Contains("spilling it to a temporary file"))
      << "the streamed transaction stayed in memory: the spill path is untested";
}

TEST_F(PgCdcTest, ResumeWithoutDuplicatesAndConfirm) {
  ASSERT_OK(Exec("CREATE TABLE r (id int PRIMARY KEY)"));
  options_.tables = {TableRef{"public", "r"}};
  ASSERT_OK(Open());
  for (int i = 1; i <= 3; ++i) ASSERT_OK(Exec("INSERT INTO r VALUES (" + std::to_string(i) + ")"));
  std::vector<ChangeEvent> ev = Collect(3);
  ASSERT_EQ(ev.size(), 3u);
  const SourcePosition second = ev[1].txn.position;
  ASSERT_OK(stream_->Confirm(second));
  EXPECT_TRUE(WaitConfirmed(second.value)) << "confirmed_flush_lsn did not reach " << second.value;
  stream_.reset();
  ASSERT_OK(Exec("INSERT INTO r VALUES (4)"));
  ASSERT_OK(Open(second));
  ev = Collect(2);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].txn.segments[0].rows.columns[0].GetInt(0), 3);
  EXPECT_EQ(ev[1].txn.segments[0].rows.columns[0].GetInt(0), 4);
  ExpectQuiet();
}

TEST_F(PgCdcTest, IdleSlotAdvances) {
  ASSERT_OK(
      Exec("CREATE TABLE followed (id int PRIMARY KEY); "
           "CREATE TABLE other (id int PRIMARY KEY)"));
  options_.tables = {TableRef{"public", "followed"}};
  ASSERT_OK(Open());
  ASSERT_OK(Exec("INSERT INTO followed VALUES (1)"));
  std::vector<ChangeEvent> ev = Collect(1);
  ASSERT_EQ(ev.size(), 1u);
  ASSERT_OK(stream_->Confirm(ev[0].txn.position));
  ASSERT_TRUE(WaitConfirmed(ev[0].txn.position.value));
  // Only changes of an unfollowed table: the slot still moves past them.
  ASSERT_OK(Exec("INSERT INTO other SELECT generate_series(1, 100)"));
  Rows wal = Query("SELECT pg_current_wal_lsn()::text");
  const std::string target = Cell(wal);
  EXPECT_TRUE(WaitConfirmed(target, 20s)) << "idle slot did not advance to " << target;
  auto idle = stream_->Next(300ms);
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(idle->kind, ChangeEvent::Kind::kIdle);
  auto cmp = CompareSourcePositions(idle->position, ev[0].txn.position);
  ASSERT_TRUE(cmp.ok());
  EXPECT_GT(*cmp, 0) << "kIdle position " << idle->position.value;
}

TEST_F(PgCdcTest, SnapshotHandOff) {
  ASSERT_OK(
      Exec("CREATE TABLE h (id int PRIMARY KEY, v text); "
           "INSERT INTO h SELECT i, 'before' FROM generate_series(1, 10) i"));
  options_.tables = {TableRef{"public", "h"}};
  // A leftover inactive slot of the same name is replaced (a fresh start).
  ASSERT_OK(Exec("SELECT pg_create_logical_replication_slot('" + slot_ + "', 'pgoutput')"));
  std::map<int64_t, RowValues> snap_rows;
  SourcePosition pos;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Snapshot> snap, source()->BeginCdcSnapshot(2, options_));
    pos = snap->position();
    EXPECT_TRUE(std::regex_match(pos.value, kLsnRe)) << pos.value;
    ASSERT_OK(Exec("INSERT INTO h SELECT i, 'after' FROM generate_series(11, 20) i"));
    ASSERT_OK(Exec("UPDATE h SET v = 'changed' WHERE id = 1"));
    snap_rows = SnapshotRows("h", snap.get());
  }
  ASSERT_EQ(snap_rows.size(), 10u);
  for (const auto& [id, row] : snap_rows) {
    EXPECT_LE(id, 10);
    EXPECT_EQ(row[1], Value::Bytes(LogicalType::kText, "before"));
  }
  ASSERT_OK(Open(pos));
  std::vector<ChangeEvent> ev = Collect(2);
  ASSERT_EQ(ev.size(), 2u);
  const Bundle& ins = ev[0].txn.segments[0].rows;
  ASSERT_EQ(ins.rows(), 10u);
  for (size_t r = 0; r < 10; ++r) EXPECT_EQ(ins.columns[0].GetInt(r), static_cast<int64_t>(r + 11));
  EXPECT_EQ(ev[1].txn.segments[0].rows.columns[1].GetBytes(0), "changed");
  ExpectQuiet();
}

TEST_F(PgCdcTest, AddColumnIsASchemaChange) {
  ASSERT_OK(Exec("CREATE TABLE g (id int PRIMARY KEY, a text)"));
  options_.tables = {TableRef{"public", "g"}};
  ASSERT_OK(Open());
  ASSERT_OK(Exec("INSERT INTO g VALUES (1, 'x')"));
  ASSERT_OK(Exec("ALTER TABLE g ADD COLUMN b int"));
  ASSERT_OK(Exec("INSERT INTO g VALUES (2, 'y', 5)"));
  std::vector<ChangeEvent> ev = Collect(2);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].txn.segments[0].rows.columns.size(), 2u);
  ASSERT_EQ(ev[1].kind, ChangeEvent::Kind::kSchemaChange);
  const SchemaChange& sc = ev[1].schema_change;
  EXPECT_EQ(sc.table, (TableRef{"public", "g"}));
  EXPECT_TRUE(sc.only_added_columns);
  EXPECT_EQ(sc.added_columns, std::vector<std::string>{"b"});
  EXPECT_EQ(sc.schema.columns.size(), 3u);
  const Bundle& b = ev[2].txn.segments[0].rows;
  ASSERT_EQ(b.columns.size(), 3u);
  EXPECT_EQ(b.columns[2].GetInt(0), 5);
  auto now = stream_->TableSchemaOf(TableRef{"public", "g"});
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->columns.size(), 3u);
}

TEST_F(PgCdcTest, CheckCdcErrors) {
  ASSERT_OK(Exec("CREATE TABLE keyed (id int PRIMARY KEY); CREATE TABLE loose (a int)"));
  options_.tables = {TableRef{"public", "keyed"}};
  ASSERT_OK(source()->CheckCdc(options_));
  options_.tables = {TableRef{"public", "loose"}};
  Status s = source()->CheckCdc(options_);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("REPLICA IDENTITY FULL"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("loose"), std::string::npos) << s.message();

  const std::string role = "norepl_" + name_.substr(0, 20);
  ASSERT_OK(Exec("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '" + role +
                 "') THEN CREATE ROLE " + role +
                 " LOGIN PASSWORD 'pw'; END IF; END $$; "
                 "GRANT SELECT ON keyed TO " +
                 role));
  ConnectionConfig cfg = Config();
  cfg.user = role;
  cfg.password = "pw";
  auto weak = Source::Open(cfg);
  ASSERT_TRUE(weak.ok()) << weak.status().ToString();
  options_.tables = {TableRef{"public", "keyed"}};
  s = (*weak)->CheckCdc(options_);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.ToString();
  EXPECT_NE(s.message().find("REPLICATION"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(role), std::string::npos) << s.message();

  options_.slot_name = "Bad-Name";
  s = source()->CheckCdc(options_);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
}

TEST_F(PgCdcTest, DroppedSlotIsALoudError) {
  ASSERT_OK(Exec("CREATE TABLE d (id int PRIMARY KEY)"));
  options_.tables = {TableRef{"public", "d"}};
  ASSERT_OK(Open());
  ASSERT_OK(Exec("INSERT INTO d VALUES (1)"));
  std::vector<ChangeEvent> ev = Collect(1);
  ASSERT_EQ(ev.size(), 1u);
  stream_.reset();
  // The walsender may take a moment to release the slot.
  for (int i = 0; i < 50; ++i) {
    if (Exec("SELECT pg_drop_replication_slot('" + slot_ + "')").ok()) break;
    std::this_thread::sleep_for(100ms);
  }
  Status s = Open(ev[0].txn.position);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_FALSE(s.retryable());
  EXPECT_NE(s.message().find(slot_), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("dropped"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace dbs

namespace dbs {
namespace {

TEST_F(PgCdcTest, DroppedPublicationIsALoudError) {
  ASSERT_OK(Exec("CREATE TABLE p (id int PRIMARY KEY)"));
  options_.tables = {TableRef{"public", "p"}};
  ASSERT_OK(Open());
  ASSERT_OK(Exec("INSERT INTO p VALUES (1)"));
  ASSERT_EQ(Collect(1).size(), 1u);
  ASSERT_OK(Exec("DROP PUBLICATION dbs_t_" + name_));
  ASSERT_OK(Exec("INSERT INTO p VALUES (2)"));
  Status s;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (s.ok() && std::chrono::steady_clock::now() < deadline) {
    auto ev = stream_->Next(200ms);
    if (!ev.ok()) s = ev.status();
  }
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_FALSE(s.retryable());
  EXPECT_NE(s.message().find("publication dbs_t_" + name_), std::string::npos) << s.message();
}

}  // namespace
}  // namespace dbs

namespace dbs {
namespace {

// Changes of partitions arrive as changes of the followed partitioned table.
TEST_F(PgCdcTest, PartitionedTable) {
  ASSERT_OK(
      Exec("CREATE TABLE pt (id int PRIMARY KEY, v text) PARTITION BY RANGE (id); "
           "CREATE TABLE pt_a PARTITION OF pt FOR VALUES FROM (0) TO (100); "
           "CREATE TABLE pt_b PARTITION OF pt FOR VALUES FROM (100) TO (200)"));
  options_.tables = {TableRef{"public", "pt"}};
  ASSERT_OK(source()->CheckCdc(options_));
  ASSERT_OK(Open());
  ASSERT_OK(Exec("INSERT INTO pt VALUES (1, 'a'), (150, 'b')"));
  std::vector<ChangeEvent> ev = Collect(1);
  ASSERT_EQ(ev.size(), 1u);
  size_t rows = 0;
  for (const auto& seg : ev[0].txn.segments) {
    EXPECT_EQ(seg.table, (TableRef{"public", "pt"}));
    rows += seg.rows.rows();
  }
  EXPECT_EQ(rows, 2u);
}

}  // namespace
}  // namespace dbs

namespace dbs {
namespace {

// A private server without logical decoding: CheckCdc says what to set and that a restart is
// needed.
TEST(PgCdcCheckTest, WalLevelNotLogical) {
  testing::PostgresServerOptions o;
  o.settings = {{"wal_level", "replica"}};
  auto server = PostgresServer::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto cfg = ParseConnectionUrl((*server)->url());
  ASSERT_TRUE(cfg.ok());
  ASSERT_OK((*server)->Exec("CREATE TABLE t (id int PRIMARY KEY)"));
  auto source = Source::Open(*cfg);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  CdcOptions options;
  options.stream = "w";
  options.tables = {TableRef{"public", "t"}};
  Status s = (*source)->CheckCdc(options);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("wal_level = logical"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("restart"), std::string::npos) << s.message();
}

// A private server shut down while changes it sent are not confirmed yet (the target has not
// committed them): the server waits for a confirmation that cannot come, asking for it again
// and again; the stream hangs up so that the shutdown completes, with a retryable error.
TEST(PgCdcShutdownTest, UnconfirmedChangesDoNotHoldTheServer) {
  auto server = PostgresServer::Start();
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  PostgresServer* pg = server->get();
  ASSERT_OK(pg->Exec("CREATE TABLE s (id int PRIMARY KEY)"));
  auto cfg = ParseConnectionUrl(pg->url());
  ASSERT_TRUE(cfg.ok());
  auto source = Source::Open(*cfg);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  CdcOptions options;
  options.stream = "shutdown";
  options.tables = {TableRef{"public", "s"}};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChangeStream> stream, (*source)->OpenChangeStream(options));
  ASSERT_OK(pg->Exec("INSERT INTO s VALUES (1)"));
  bool got = false;
  for (int i = 0; i < 100 && !got; ++i) {
    auto ev = stream->Next(200ms);
    ASSERT_TRUE(ev.ok()) << ev.status().ToString();
    got = ev->kind == ChangeEvent::Kind::kTransaction;
  }
  ASSERT_TRUE(got) << "the insert did not arrive";

  const auto start = std::chrono::steady_clock::now();
  Status stopped;
  std::thread stopper([&] { stopped = pg->Stop(); });
  Status ended;
  while (ended.ok() && std::chrono::steady_clock::now() - start < 90s) {
    auto ev = stream->Next(200ms);
    if (!ev.ok()) ended = ev.status();
  }
  stopper.join();
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(stopped.ok()) << stopped.ToString();
  EXPECT_LT(took, 30s) << "the shutdown waited for the stream";
  EXPECT_EQ(ended.code(), StatusCode::kUnavailable) << ended.ToString();
  EXPECT_TRUE(ended.retryable()) << ended.ToString();
  EXPECT_NE(ended.message().find("waits for changes"), std::string::npos) << ended.message();
}

}  // namespace
}  // namespace dbs

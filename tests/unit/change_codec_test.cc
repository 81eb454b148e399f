// Change messages (core/change_codec.h) and source position ordering (sources/position.cc).
#include <gtest/gtest.h>

#include "core/change_codec.h"
#include "sources/change_stream.h"
#include "support/sample_bundles.h"

namespace dbs {
namespace {

ChangeTxn MakeTxn(size_t rows, uint32_t seed) {
  ChangeTxn t;
  t.xid = "xid-" + std::to_string(seed);
  t.position = {SourcePosition::Kind::kPgLsn, "0/16B37" + std::to_string(seed % 10), ""};
  t.commit_time_us = 1'700'000'000'000'000 + seed;
  ChangeSegment s;
  s.table = {"public", "t" + std::to_string(seed)};
  s.rows = testing::MakeZooBundle(rows, seed);
  for (size_t r = 0; r < rows; ++r) {
    s.rows.ops.push_back(r % 3 == 0   ? RowOp::kInsert
                         : r % 3 == 1 ? RowOp::kDelete
                                      : RowOp::kUpdate);
  }
  // An "unchanged" cell travels as such.
  if (rows > 0) {
    ColumnVector c(LogicalType::kText);
    for (size_t r = 0; r < rows; ++r) {
      if (r % 2) {
        c.AppendUnchanged();
      } else {
        c.AppendBytes("v" + std::to_string(r));
      }
    }
    s.rows.columns.push_back(std::move(c));
  }
  t.segments.push_back(std::move(s));
  ChangeSegment trunc;
  trunc.table = {"public", "gone"};
  trunc.truncate = true;
  t.segments.push_back(std::move(trunc));
  return t;
}

void ExpectSameTxn(const ChangeTxn& a, const ChangeTxn& b) {
  EXPECT_EQ(a.xid, b.xid);
  EXPECT_EQ(a.position, b.position);
  EXPECT_EQ(a.commit_time_us, b.commit_time_us);
  EXPECT_EQ(a.final, b.final);
  EXPECT_EQ(a.part, b.part);
  ASSERT_EQ(a.segments.size(), b.segments.size());
  for (size_t i = 0; i < a.segments.size(); ++i) {
    const auto& x = a.segments[i];
    const auto& y = b.segments[i];
    EXPECT_EQ(x.table, y.table);
    EXPECT_EQ(x.truncate, y.truncate);
    ASSERT_EQ(x.rows.rows(), y.rows.rows());
    EXPECT_EQ(x.rows.ops, y.rows.ops);
    ASSERT_EQ(x.rows.columns.size(), y.rows.columns.size());
    for (size_t c = 0; c < x.rows.columns.size(); ++c) {
      for (size_t r = 0; r < x.rows.rows(); ++r) {
        EXPECT_EQ(x.rows.columns[c].IsUnchanged(r), y.rows.columns[c].IsUnchanged(r));
        EXPECT_TRUE(x.rows.columns[c].Get(r) == y.rows.columns[c].Get(r)) << c << "/" << r;
      }
    }
  }
}

TEST(ChangeCodec, RoundTripsTransactionsAndSchemaChanges) {
  ChangeMessageWriter w;
  ChangeTxn a = MakeTxn(7, 1), b = MakeTxn(0, 2);
  b.final = false;
  b.part = 3;
  ASSERT_TRUE(w.AddTxn(a).ok());
  ASSERT_TRUE(w.AddTxn(b).ok());
  SchemaChangeRecord sc;
  sc.table = {"db", "t"};
  sc.schema.schema = "db";
  sc.schema.name = "t";
  Column col;
  col.name = "added";
  col.type = LogicalType::kInt64;
  sc.schema.columns.push_back(col);
  sc.statement = "ALTER TABLE t ADD COLUMN added BIGINT";
  sc.added_columns = {"added"};
  sc.only_added_columns = true;
  sc.position = {SourcePosition::Kind::kMysqlGtid, "0-1-42", "binlog.000001:1234"};
  ASSERT_TRUE(w.AddSchemaChange(sc).ok());
  EXPECT_EQ(w.records(), 3u);
  SourcePosition resume{SourcePosition::Kind::kPgLsn, "0/10", ""};
  std::string bytes = w.Finish(17, resume);
  EXPECT_EQ(w.records(), 0u);
  auto m = DecodeChangeMessage(bytes);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->seq, 17u);
  EXPECT_EQ(m->resume, resume);
  ASSERT_EQ(m->records.size(), 3u);
  ExpectSameTxn(a, std::get<ChangeTxn>(m->records[0]));
  ExpectSameTxn(b, std::get<ChangeTxn>(m->records[1]));
  const auto& sc2 = std::get<SchemaChangeRecord>(m->records[2]);
  EXPECT_EQ(sc2.table, sc.table);
  EXPECT_EQ(sc2.statement, sc.statement);
  EXPECT_EQ(sc2.added_columns, sc.added_columns);
  EXPECT_TRUE(sc2.only_added_columns);
  EXPECT_EQ(sc2.position, sc.position);
  EXPECT_EQ(sc2.schema.columns.size(), 1u);

  // Every truncation and a flipped byte are errors, never crashes.
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeChangeMessage(std::string_view(bytes).substr(0, n)).ok()) << n;
  }
  std::string bad = bytes;
  bad[4] = 9;  // version
  EXPECT_FALSE(DecodeChangeMessage(bad).ok());
}

TEST(ChangeCodec, SplitTxnKeepsOrderAndNumbersParts) {
  ChangeTxn t = MakeTxn(10, 5);
  auto parts = SplitTxn(t, 4);
  ASSERT_EQ(parts.size(), 3u);
  size_t rows = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(parts[i].part, i);
    EXPECT_EQ(parts[i].final, i + 1 == parts.size());
    EXPECT_EQ(parts[i].xid, t.xid);
    rows += parts[i].rows();
  }
  EXPECT_EQ(rows, 10u);
  // The truncate segment stays, after the rows.
  EXPECT_TRUE(parts.back().segments.back().truncate);
  // Concatenated parts give back the rows in order.
  size_t at = 0;
  for (const auto& p : parts) {
    for (const auto& s : p.segments) {
      for (size_t r = 0; r < s.rows.rows(); ++r, ++at) {
        EXPECT_EQ(s.rows.ops[r], t.segments[0].rows.ops[at]);
        EXPECT_TRUE(s.rows.columns[0].Get(r) == t.segments[0].rows.columns[0].Get(at));
      }
    }
  }
}

SourcePosition Lsn(const char* v) { return {SourcePosition::Kind::kPgLsn, v, ""}; }
SourcePosition Gtid(const char* v) { return {SourcePosition::Kind::kMysqlGtid, v, ""}; }
SourcePosition File(const char* v) { return {SourcePosition::Kind::kMysqlFilePos, v, ""}; }

TEST(SourcePositions, Order) {
  EXPECT_EQ(*CompareSourcePositions(Lsn("0/16B3748"), Lsn("0/16B3749")), -1);
  EXPECT_EQ(*CompareSourcePositions(Lsn("1/0"), Lsn("0/FFFFFFFF")), 1);
  EXPECT_EQ(*CompareSourcePositions(Lsn("A/b"), Lsn("a/B")), 0);
  EXPECT_FALSE(CompareSourcePositions(Lsn("16B3748"), Lsn("0/1")).ok());
  EXPECT_EQ(*CompareSourcePositions(File("binlog.000002:4"), File("binlog.000010:4")), -1);
  EXPECT_EQ(*CompareSourcePositions(File("binlog.000002:900"), File("binlog.000002:1000")), -1);
  EXPECT_EQ(*CompareSourcePositions(Gtid("0-1-42"), Gtid("0-1-43")), -1);
  EXPECT_EQ(*CompareSourcePositions(Gtid("0-1-42,1-1-5"), Gtid("0-1-42")), 1);
  EXPECT_EQ(*CompareSourcePositions(Gtid("0-2-42"), Gtid("0-1-42")), 0);  // domain sequence
  EXPECT_FALSE(CompareSourcePositions(Gtid("0-1-50,1-1-1"), Gtid("0-1-42,1-1-9")).ok());
  const char* u = "3E11FA47-71CA-11E1-9E33-C80AA9429562";
  EXPECT_EQ(*CompareSourcePositions(Gtid((std::string(u) + ":1-5").c_str()),
                                    Gtid((std::string(u) + ":1-5:7-9").c_str())),
            -1);
  EXPECT_EQ(*CompareSourcePositions(Gtid((std::string(u) + ":1-5:6-9").c_str()),
                                    Gtid((std::string(u) + ":1-9").c_str())),
            0);
  EXPECT_FALSE(CompareSourcePositions(Lsn("0/1"), File("b.1:4")).ok());
  EXPECT_FALSE(CompareSourcePositions(Gtid("x-y"), Gtid("0-1-1")).ok());
}

}  // namespace
}  // namespace dbs

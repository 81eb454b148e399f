// Verification's cell normalization (src/verify/checksum.h): equal values compare equal across
// engines, changed values differ, and the per-column digests name the differing column.
#include <gtest/gtest.h>

#include <cmath>

#include "core/array.h"
#include "verify/checksum.h"

namespace dbs {
namespace {

using L = LogicalType;

Column Col(const std::string& name, L type, const std::string& source_type) {
  Column c;
  c.name = name;
  c.type = type;
  c.source_type = source_type;
  return c;
}

std::optional<std::string> Text(L source_type, CellRule rule, L type, const std::string& v) {
  ColumnVector c(type);
  c.AppendBytes(v);
  return CanonicalCell(c, 0, source_type, ZeroDatePolicy::kError, rule);
}

TEST(VerifyRules, ChosenFromBothSidesColumnTypes) {
  const Engine my = Engine::kMysql, pg = Engine::kPostgres;
  EXPECT_EQ(RuleFor(Col("a", L::kText, "inet6"), my, Col("a", L::kText, "inet"), pg),
            CellRule::kInet);
  EXPECT_EQ(RuleFor(Col("a", L::kText, "inet"), pg, Col("a", L::kText, "varchar(43)"), my),
            CellRule::kInet);
  EXPECT_EQ(RuleFor(Col("j", L::kJson, "longtext"), my, Col("j", L::kJson, "json"), pg),
            CellRule::kJsonText);
  EXPECT_EQ(RuleFor(Col("j", L::kJson, "longtext"), my, Col("j", L::kJson, "jsonb"), pg),
            CellRule::kByType);
  EXPECT_EQ(RuleFor(Col("j", L::kJson, "json"), pg, Col("j", L::kJson, "json"), my),
            CellRule::kByType);  // MySQL 8 normalizes its json
  EXPECT_EQ(RuleFor(Col("j", L::kJson, "json"), pg, Col("j", L::kJson, "longtext"), my),
            CellRule::kJsonText);  // MariaDB keeps the text
  Column arr = Col("v", L::kArray, "integer[]");
  EXPECT_EQ(RuleFor(arr, pg, arr, pg), CellRule::kArrayExact);
  EXPECT_EQ(RuleFor(Col("t", L::kText, "text"), pg, Col("t", L::kText, "longtext"), my),
            CellRule::kByType);
}

TEST(VerifyCells, EqualValuesEqualChangedValuesDiffer) {
  // Addresses: one spelling; a prefix the value shows is kept.
  EXPECT_EQ(Text(L::kText, CellRule::kInet, L::kText, "2001:DB8:0:0::1"),
            Text(L::kText, CellRule::kInet, L::kText, "2001:db8::1"));
  EXPECT_NE(Text(L::kText, CellRule::kInet, L::kText, "10.0.0.1/32"),
            Text(L::kText, CellRule::kInet, L::kText, "10.0.0.1"));
  EXPECT_EQ(Text(L::kText, CellRule::kInet, L::kText, "10.0.0.0/8"), "10.0.0.0/8");
  // JSON: exact text when the target keeps it, the parsed document when it normalizes.
  EXPECT_NE(Text(L::kJson, CellRule::kJsonText, L::kJson, "{\"a\":1,\"a\":2}"),
            Text(L::kJson, CellRule::kJsonText, L::kJson, "{\"a\": 2}"));
  EXPECT_EQ(Text(L::kJson, CellRule::kByType, L::kJson, "{\"a\":1,\"a\":2}"),
            Text(L::kJson, CellRule::kByType, L::kJson, "{\"a\": 2}"));
  // Text: byte for byte ('?' is not 'é').
  EXPECT_NE(Text(L::kText, CellRule::kByType, L::kText, "caf?"),
            Text(L::kText, CellRule::kByType, L::kText, "café"));
  // Floats: -0 is not 0.
  ColumnVector f(L::kFloat64);
  f.AppendFloat64(-0.0);
  f.AppendFloat64(0.0);
  EXPECT_NE(CanonicalCell(f, 0, L::kFloat64, ZeroDatePolicy::kError),
            CanonicalCell(f, 1, L::kFloat64, ZeroDatePolicy::kError));
  // Arrays on both sides: the lower bound counts.
  ArrayValue a;
  a.element_type = L::kInt32;
  a.dims = {{3, 0}};
  a.elements = {Value::Int(L::kInt32, 1), Value::Null(L::kInt32), Value::Int(L::kInt32, 3)};
  ArrayValue b = a;
  b.dims = {{3, 1}};
  ColumnVector arrs(L::kArray, L::kInt32);
  arrs.AppendBytes(*EncodeArray(a));
  arrs.AppendBytes(*EncodeArray(b));
  EXPECT_EQ(CanonicalCell(arrs, 0, L::kArray, ZeroDatePolicy::kError, CellRule::kArrayExact),
            "[0:2]={1,NULL,3}");
  EXPECT_NE(CanonicalCell(arrs, 0, L::kArray, ZeroDatePolicy::kError, CellRule::kArrayExact),
            CanonicalCell(arrs, 1, L::kArray, ZeroDatePolicy::kError, CellRule::kArrayExact));
  // An interval and its PostgreSQL text in a MySQL varchar.
  ColumnVector iv(L::kInterval);
  iv.AppendInterval({14, 3, 4LL * 3600 * 1000000 + 500000});
  EXPECT_EQ(CanonicalCell(iv, 0, L::kInterval, ZeroDatePolicy::kError),
            Text(L::kInterval, CellRule::kByType, L::kText, "1 year 2 mons 3 days 04:00:00.5"));
  // MySQL TIME kept as a PostgreSQL interval.
  ColumnVector tm(L::kTime), tiv(L::kInterval);
  tm.AppendMicros(-(838LL * 3600 + 59 * 60 + 59) * 1000000);
  tiv.AppendInterval({0, 0, -(838LL * 3600 + 59 * 60 + 59) * 1000000});
  EXPECT_EQ(CanonicalCell(tm, 0, L::kTime, ZeroDatePolicy::kError),
            CanonicalCell(tiv, 0, L::kTime, ZeroDatePolicy::kError));
}

TEST(VerifyDigest, PerColumnSumsNameTheDifferingColumn) {
  RowHasher h({L::kInt32, L::kText, L::kText}, {}, {0}, ZeroDatePolicy::kError);
  auto bundle = [](const char* name) {
    Bundle b;
    b.columns.emplace_back(L::kInt32);
    b.columns.emplace_back(L::kText);
    b.columns.emplace_back(L::kText);
    for (int i = 1; i <= 100; ++i) {
      b.columns[0].AppendInt(i);
      b.columns[1].AppendBytes(i == 42 ? name : "same");
      b.columns[2].AppendBytes("x" + std::to_string(i));
    }
    return b;
  };
  TableDigest a, b;
  h.Add(bundle("é"), &a);
  h.Add(bundle("?"), &b);
  EXPECT_NE(a.total, b.total);
  EXPECT_EQ(a.columns[0], b.columns[0]);
  EXPECT_NE(a.columns[1], b.columns[1]);
  EXPECT_EQ(a.columns[2], b.columns[2]);
  size_t differing = 0;
  for (size_t i = 0; i < kVerifyBuckets; ++i) differing += a.buckets[i] != b.buckets[i];
  EXPECT_EQ(differing, 1u);
}

}  // namespace
}  // namespace dbs

// Unit tests of the MySQL text codecs, no server: the source's cell decoder
// (sources/mysql/mysql_text_decode.h) and the sink's LOAD DATA / INSERT text encoder
// (sinks/mysql/mysql_load_encoder.h), including float round trips bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/array.h"
#include "core/temporal.h"
#include "sinks/mysql/mysql_load_encoder.h"
#include "sources/mysql/mysql_text_decode.h"

namespace dbs::mysql {
namespace {

Column Col(const std::string& name, LogicalType t, std::optional<uint32_t> length = {}) {
  Column c;
  c.name = name;
  c.type = t;
  c.source_type = std::string(LogicalTypeName(t));
  c.length = length;
  return c;
}

// Decodes one cell of a column of type t; the error message, or "" on success.
std::string Decode(const Column& c, std::string_view text, ColumnVector* out) {
  auto d = DecoderFor(c);
  if (!d.ok()) return d.status().ToString();
  Status s = DecodeCell(*d, text, out);
  return s.ok() ? "" : s.ToString();
}

std::string Text(const Column& src, const std::string& target_type, const ColumnVector& col,
                 size_t row = 0) {
  auto w = WriterFor(src, src.name, target_type);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  std::string out;
  Status s = CellText(*w, col, row, &out);
  return s.ok() ? out : "ERROR: " + s.message();
}

TEST(MysqlTextDecode, Integers) {
  int64_t i;
  uint64_t u;
  EXPECT_TRUE(ParseInt64("-9223372036854775808", &i));
  EXPECT_EQ(i, std::numeric_limits<int64_t>::min());
  EXPECT_TRUE(ParseInt64("9223372036854775807", &i));
  EXPECT_FALSE(ParseInt64("9223372036854775808", &i));
  EXPECT_FALSE(ParseInt64("-9223372036854775809", &i));
  EXPECT_FALSE(ParseInt64("", &i));
  EXPECT_FALSE(ParseInt64("-", &i));
  EXPECT_FALSE(ParseInt64("1x", &i));
  EXPECT_TRUE(ParseUInt64("18446744073709551615", &u));
  EXPECT_EQ(u, std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(ParseUInt64("18446744073709551616", &u));
  EXPECT_FALSE(ParseUInt64("-1", &u));

  ColumnVector t8(LogicalType::kInt8);
  EXPECT_EQ(Decode(Col("a", LogicalType::kInt8), "-128", &t8), "");
  EXPECT_NE(Decode(Col("a", LogicalType::kInt8), "128", &t8), "");
  EXPECT_EQ(t8.GetInt(0), -128);
  ColumnVector u16(LogicalType::kUInt16);
  EXPECT_EQ(Decode(Col("a", LogicalType::kUInt16), "65535", &u16), "");
  EXPECT_NE(Decode(Col("a", LogicalType::kUInt16), "65536", &u16), "");
}

TEST(MysqlTextDecode, FloatsAreExact) {
  // What `col * 1e0` prints for FLOAT columns: the float widened to double, shortest text.
  ColumnVector f(LogicalType::kFloat32);
  const Column fc = Col("f", LogicalType::kFloat32);
  EXPECT_EQ(Decode(fc, "3.4028234663852886e38", &f), "");
  EXPECT_EQ(Decode(fc, "1.401298464324817e-45", &f), "");
  EXPECT_EQ(Decode(fc, "0.10000000149011612", &f), "");
  EXPECT_EQ(Decode(fc, "16777215", &f), "");
  EXPECT_EQ(Decode(fc, "-0", &f), "");
  EXPECT_EQ(f.GetFloat32(0), std::numeric_limits<float>::max());
  EXPECT_EQ(f.GetFloat32(1), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(f.GetFloat32(2), 0.1f);
  EXPECT_EQ(f.GetFloat32(3), 16777215.0f);
  EXPECT_TRUE(std::signbit(f.GetFloat32(4)));
  EXPECT_NE(Decode(fc, "1.5abc", &f), "");
  ColumnVector d(LogicalType::kFloat64);
  EXPECT_EQ(Decode(Col("d", LogicalType::kFloat64), "5e-324", &d), "");
  EXPECT_EQ(d.GetFloat64(0), std::numeric_limits<double>::denorm_min());
}

TEST(MysqlTextDecode, BitsTemporalsAndOthers) {
  // BIT(n): ceil(n/8) big-endian bytes.
  ColumnVector b(LogicalType::kBit);
  EXPECT_EQ(Decode(Col("b", LogicalType::kBit, 9), std::string("\x01\x05", 2), &b), "");
  EXPECT_EQ(Decode(Col("b", LogicalType::kBit, 64), std::string(8, '\xff'), &b), "");
  EXPECT_EQ(Decode(Col("b", LogicalType::kBit, 1), std::string("\x01", 1), &b), "");
  EXPECT_NE(Decode(Col("b", LogicalType::kBit, 1), std::string("\x02", 1), &b), "");
  EXPECT_EQ(b.Get(0).ToString(), "100000101");
  EXPECT_EQ(b.Get(1).ToString(), std::string(64, '1'));
  EXPECT_EQ(b.Get(2).ToString(), "1");

  ColumnVector dt(LogicalType::kDate);
  EXPECT_EQ(Decode(Col("d", LogicalType::kDate), "0000-00-00", &dt), "");
  EXPECT_EQ(Decode(Col("d", LogicalType::kDate), "2020-00-15", &dt), "");
  EXPECT_EQ(FormatDate(dt.GetDate(0)), "0000-00-00");
  EXPECT_EQ(FormatDate(dt.GetDate(1)), "2020-00-15");
  ColumnVector tm(LogicalType::kTime);
  EXPECT_EQ(Decode(Col("t", LogicalType::kTime), "-838:59:59.999999", &tm), "");
  EXPECT_EQ(tm.GetMicros(0), -((838LL * 3600 + 59 * 60 + 59) * 1000000 + 999999));
  ColumnVector ts(LogicalType::kTimestampTz);
  EXPECT_EQ(Decode(Col("t", LogicalType::kTimestampTz), "1970-01-01 00:00:01.5", &ts), "");
  EXPECT_EQ(ts.GetMicros(0), -kUnixToEpochMicros + 1500000);
  ColumnVector u(LogicalType::kUuid);
  EXPECT_EQ(Decode(Col("u", LogicalType::kUuid), "123e4567-e89b-12d3-a456-426614174000", &u), "");
  EXPECT_EQ(u.Get(0).ToString(), "123e4567-e89b-12d3-a456-426614174000");
  ColumnVector g(LogicalType::kGeometry);
  EXPECT_NE(Decode(Col("g", LogicalType::kGeometry), "abc", &g), "");

  EXPECT_NE(Decode(Col("i", LogicalType::kInterval), "1 day", nullptr), "");
}

TEST(MysqlLoadEncoder, Escaping) {
  std::string out;
  AppendLoadEscaped(std::string("a\\b\tc\nd\re\0f\\N", 13), &out);
  EXPECT_EQ(out, "a\\\\b\\tc\\nd\\re\\0f\\\\N");
}

TEST(MysqlLoadEncoder, FloatsRoundTripBitForBit) {
  // What the sink writes for a float, read back as MySQL does (text -> double -> float) and
  // as the source does: the same bits, for many random finite values.
  std::mt19937 rng(42);
  const Column fc = Col("f", LogicalType::kFloat32);
  const Column dc = Col("d", LogicalType::kFloat64);
  for (int i = 0; i < 20000; ++i) {
    uint32_t fb = static_cast<uint32_t>(rng());
    uint64_t db = (uint64_t{rng()} << 32) | rng();
    float fv;
    double dv;
    std::memcpy(&fv, &fb, 4);
    std::memcpy(&dv, &db, 8);
    if (!std::isfinite(fv) || !std::isfinite(dv)) continue;
    ColumnVector f(LogicalType::kFloat32), d(LogicalType::kFloat64);
    f.AppendFloat32(fv);
    d.AppendFloat64(dv);
    ColumnVector f2(LogicalType::kFloat32), d2(LogicalType::kFloat64);
    ASSERT_EQ(Decode(fc, Text(fc, "float", f), &f2), "");
    ASSERT_EQ(Decode(dc, Text(dc, "double", d), &d2), "");
    ASSERT_EQ(std::memcmp(f.FixedSlot(0), f2.FixedSlot(0), 4), 0) << fv;
    ASSERT_EQ(std::memcmp(d.FixedSlot(0), d2.FixedSlot(0), 8), 0) << dv;
  }
  ColumnVector nan(LogicalType::kFloat64);
  nan.AppendFloat64(std::nan(""));
  EXPECT_NE(Text(dc, "double", nan).find("ERROR"), std::string::npos);
}

TEST(MysqlLoadEncoder, TextForms) {
  ColumnVector year(LogicalType::kInt16);
  year.AppendInt(0);
  year.AppendInt(1999);
  EXPECT_EQ(Text(Col("y", LogicalType::kInt16), "year", year, 0), "0000");
  EXPECT_EQ(Text(Col("y", LogicalType::kInt16), "year", year, 1), "1999");
  EXPECT_EQ(Text(Col("y", LogicalType::kInt16), "smallint", year, 0), "0");

  ColumnVector bits(LogicalType::kBit);
  bits.AppendBytes(EncodeBits("0101"));
  auto w = WriterFor(Col("b", LogicalType::kBit, 4), "b", "bit");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->expression, "CAST(CONV(?, 2, 10) AS UNSIGNED)");
  EXPECT_EQ(Text(Col("b", LogicalType::kBit, 4), "bit", bits), "0101");

  ColumnVector dates(LogicalType::kDate);
  dates.AppendDate(*ParseDate("0000-00-00"));
  dates.AppendDate(*ParseDate("2024-02-29"));
  dates.AppendDate(kDatePosInfinity);
  dates.AppendDate(*ParseDate("0044-03-15 BC"));
  const Column dc = Col("d", LogicalType::kDate);
  EXPECT_EQ(Text(dc, "date", dates, 0), "0000-00-00");
  EXPECT_EQ(Text(dc, "date", dates, 1), "2024-02-29");
  EXPECT_NE(Text(dc, "date", dates, 2).find("ERROR"), std::string::npos);
  EXPECT_NE(Text(dc, "date", dates, 3).find("ERROR"), std::string::npos);
  EXPECT_EQ(Text(dc, "varchar", dates, 3), "0044-03-15 BC");  // text keeps Value::ToString()

  ColumnVector ts(LogicalType::kTimestampTz);
  ts.AppendMicros(*ParseTimestamp("2024-02-29 13:45:00.000001"));
  ts.AppendMicros(*ParseTimestamp("0000-00-00 00:00:00"));
  EXPECT_EQ(Text(Col("t", LogicalType::kTimestampTz), "datetime", ts, 0),
            "2024-02-29 13:45:00.000001");
  EXPECT_EQ(Text(Col("t", LogicalType::kTimestampTz), "timestamp", ts, 1), "0000-00-00 00:00:00");

  ColumnVector blob(LogicalType::kBytes);
  blob.AppendBytes(std::string("\x00\xff", 2));
  w = WriterFor(Col("b", LogicalType::kBytes), "b", "longblob");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->expression, "UNHEX(?)");
  EXPECT_EQ(Text(Col("b", LogicalType::kBytes), "longblob", blob), "00ff");
  EXPECT_EQ(Text(Col("b", LogicalType::kBytes), "text", blob), "\\x00ff");

  ColumnVector iv(LogicalType::kInterval);
  iv.AppendInterval({1, 2, 3000000});
  EXPECT_EQ(Text(Col("i", LogicalType::kInterval), "varchar", iv),
            Value::IntervalValue({1, 2, 3000000}).ToString());

  ColumnVector uuid(LogicalType::kUuid);
  Uuid u;
  ASSERT_TRUE(ParseUuid("123e4567-e89b-12d3-a456-426614174000", &u));
  uuid.AppendUuid(u);
  EXPECT_EQ(Text(Col("u", LogicalType::kUuid), "char", uuid),
            "123e4567-e89b-12d3-a456-426614174000");
  EXPECT_EQ(Text(Col("u", LogicalType::kUuid), "binary", uuid), "123e4567e89b12d3a456426614174000");
}

TEST(MysqlLoadEncoder, ArraysAsJson) {
  ArrayValue a;
  a.element_type = LogicalType::kText;
  a.dims = {{2, 1}, {2, 1}};
  a.elements = {Value::Bytes(LogicalType::kText, "a\"b"), Value::Null(LogicalType::kText),
                Value::Bytes(LogicalType::kText, "\\"), Value::Bytes(LogicalType::kText, "")};
  auto enc = EncodeArray(a);
  ASSERT_TRUE(enc.ok());
  auto j = ArrayToJson(*enc);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(*j, R"([["a\"b",null],["\\",""]])");

  ArrayValue n;
  n.element_type = LogicalType::kDecimal;
  n.dims = {{3, 1}};
  n.elements = {Value::Bytes(LogicalType::kDecimal, "1.50"),
                Value::Bytes(LogicalType::kDecimal, "NaN"),
                Value::Bytes(LogicalType::kDecimal, "-0.5")};
  auto enc2 = EncodeArray(n);
  ASSERT_TRUE(enc2.ok());
  EXPECT_EQ(*ArrayToJson(*enc2), R"([1.50,"NaN",-0.5])");

  ArrayValue empty;
  empty.element_type = LogicalType::kInt32;
  EXPECT_EQ(*ArrayToJson(*EncodeArray(empty)), "[]");
}

}  // namespace
}  // namespace dbs::mysql

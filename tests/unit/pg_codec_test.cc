// The PostgreSQL binary codecs without a server: values encoded for binary COPY FROM
// (sinks/postgres/pg_encode.h) decode back to the same values (postgres/pg_decode.h),
// the byte layouts that differ from ours (timetz zone, interval order, bit header, arrays) are
// PostgreSQL's, and malformed server bytes are rejected.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/array.h"
#include "core/schema.h"
#include "core/temporal.h"
#include "postgres/pg_binary.h"
#include "postgres/pg_decode.h"
#include "sinks/postgres/pg_encode.h"

namespace dbs::pg {
namespace {

using L = LogicalType;

// Encodes row 0 of `col` with `enc` and returns the field's bytes (without the length word);
// "<NULL>" for a NULL field.
std::string Encode(const Encoder& enc, const ColumnVector& col,
                   ZeroDatePolicy zd = ZeroDatePolicy::kNull) {
  std::string out;
  Status s = EncodeCell(enc, col, 0, zd, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (out.size() < 4) return "<short>";
  if (LoadBE32(out.data()) == 0xFFFFFFFFu) return "<NULL>";
  EXPECT_EQ(LoadBE32(out.data()), out.size() - 4);
  return out.substr(4);
}

Value Decode(const FieldPlan& plan, const std::string& bytes) {
  ColumnVector col(plan.type, plan.element_type);
  DecodeScratch scratch;
  Status s = DecodeField(plan, bytes, &col, &scratch);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return s.ok() ? col.Get(0) : Value();
}

struct Case {
  Value value;
  Enc enc;
  Wire wire;
};

TEST(PgCodec, ScalarsRoundTrip) {
  const std::vector<Case> cases = {
      {Value::Bool(true), Enc::kBool, Wire::kBool},
      {Value::Int(L::kInt16, -32768), Enc::kInt2, Wire::kInt2},
      {Value::Int(L::kInt32, std::numeric_limits<int32_t>::min()), Enc::kInt4, Wire::kInt4},
      {Value::Int(L::kInt64, std::numeric_limits<int64_t>::max()), Enc::kInt8, Wire::kInt8},
      {Value::UInt(L::kUInt32, 4294967295u), Enc::kUInt32, Wire::kUInt32},
      {Value::UInt(L::kUInt64, 18446744073709551615u), Enc::kUInt64, Wire::kUInt64},
      {Value::Float32(-0.0f), Enc::kFloat4, Wire::kFloat4},
      {Value::Float64(std::numeric_limits<double>::denorm_min()), Enc::kFloat8, Wire::kFloat8},
      {Value::Bytes(L::kDecimal, "-12345678901234567890.000100"), Enc::kDecimalNumeric,
       Wire::kNumeric},
      {Value::Bytes(L::kDecimal, "NaN"), Enc::kDecimalNumeric, Wire::kNumeric},
      {Value::Bytes(L::kText, "h\xC3\xA9llo \xF0\x9F\x98\x80"), Enc::kRaw, Wire::kRaw},
      {Value::Bytes(L::kBytes, std::string("\0\1\xff", 3)), Enc::kRaw, Wire::kRaw},
      {Value::Bytes(L::kJson, "{\"a\": [1, 2]}"), Enc::kJsonb, Wire::kJsonb},
      {Value::Bytes(L::kBit, EncodeBits("1011001110")), Enc::kBit, Wire::kBit},
      {Value::Bytes(L::kBit, EncodeBits("")), Enc::kBit, Wire::kBit},
      {Value::Date(kDateNegInfinity), Enc::kDate, Wire::kDate},
      {Value::Micros(L::kTime, 86'400'000'000), Enc::kTime, Wire::kTime},
      {Value::TimeTzValue({49'500'000'000, 19800}), Enc::kTimeTz, Wire::kTimeTz},
      {Value::Micros(L::kTimestampTz, kTimestampPosInfinity), Enc::kTimestamp, Wire::kTimestamp},
      {Value::IntervalValue({-14, 3, -14'706'000'001}), Enc::kInterval, Wire::kInterval},
  };
  for (const Case& c : cases) {
    ColumnVector col(c.value.type());
    ASSERT_TRUE(col.Append(c.value).ok());
    Encoder enc;
    enc.enc = c.enc;
    enc.type = c.value.type();
    FieldPlan plan;
    plan.type = c.value.type();
    plan.wire = c.wire;
    EXPECT_TRUE(WireFits(c.wire, c.value.type()));
    EXPECT_EQ(Decode(plan, Encode(enc, col)), c.value) << c.value.ToString();
  }
}

TEST(PgCodec, LayoutsArePostgres) {
  // timetz: microseconds, then the zone in seconds WEST of UTC.
  ColumnVector tz(L::kTimeTz);
  tz.AppendTimeTz({1, 7200});
  std::string b = Encode(Encoder{Enc::kTimeTz, L::kTimeTz}, tz);
  ASSERT_EQ(b.size(), 12u);
  EXPECT_EQ(LoadBE64(b.data()), 1u);
  EXPECT_EQ(static_cast<int32_t>(LoadBE32(b.data() + 8)), -7200);
  // interval: microseconds, days, months.
  ColumnVector iv(L::kInterval);
  iv.AppendInterval({5, 6, 7});
  b = Encode(Encoder{Enc::kInterval, L::kInterval}, iv);
  ASSERT_EQ(b.size(), 16u);
  EXPECT_EQ(LoadBE64(b.data()), 7u);
  EXPECT_EQ(LoadBE32(b.data() + 8), 6u);
  EXPECT_EQ(LoadBE32(b.data() + 12), 5u);
  // bit: i32 big-endian bit count.
  ColumnVector bits(L::kBit);
  bits.AppendBytes(EncodeBits("101"));
  b = Encode(Encoder{Enc::kBit, L::kBit}, bits);
  EXPECT_EQ(b, std::string("\0\0\0\3\xa0", 5));
  // integers into numeric.
  ColumnVector u(L::kUInt64);
  u.AppendUInt(18446744073709551615u);
  b = Encode(Encoder{Enc::kIntNumeric, L::kUInt64}, u);
  std::string text;
  ASSERT_TRUE(AppendNumericText(b, &text).ok());
  EXPECT_EQ(text, "18446744073709551615");
}

// Found by fuzz_pg_decode: a PostgreSQL array of two dimensions, 9 and 0, decodes to an empty
// array that ValidateArray accepts.
TEST(PgCodec, ArrayWithAZeroLengthInnerDimension) {
  const std::string b(
      "\x00\x00\x00\x02\x00\x09\xff\xff\xff\xff\x07\x00\x00\x00\x00\x09"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00",
      28);
  pg::FieldPlan plan{L::kArray, pg::Wire::kArray, L::kBool, pg::Wire::kBool};
  ColumnVector col(plan.type, plan.element_type);
  pg::DecodeScratch scratch;
  ASSERT_TRUE(pg::DecodeField(plan, b, &col, &scratch).ok());
  ASSERT_EQ(col.size(), 1u);
  EXPECT_TRUE(ValidateArray(col.GetBytes(0)).ok()) << ValidateArray(col.GetBytes(0)).ToString();
}

TEST(PgCodec, ArraysRoundTripWithNullsAndBounds) {
  ArrayValue a;
  a.element_type = L::kInt32;
  a.dims = {{2, 0}, {2, -1}};
  a.elements = {Value::Int(L::kInt32, 1), Value::Null(L::kInt32), Value::Int(L::kInt32, 3),
                Value::Int(L::kInt32, -4)};
  ArrayValue t;
  t.element_type = L::kText;
  t.dims = {{3, 1}};
  t.elements = {Value::Bytes(L::kText, "a,b"), Value::Null(L::kText), Value::Bytes(L::kText, "")};
  ArrayValue empty;
  empty.element_type = L::kDecimal;
  ArrayValue tz;
  tz.element_type = L::kTimeTz;
  tz.dims = {{1, 1}};
  tz.elements = {Value::TimeTzValue({3, -3600})};
  const struct {
    ArrayValue value;
    Enc enc;
    Wire wire;
  } cases[] = {{a, Enc::kInt4, Wire::kInt4},
               {t, Enc::kRaw, Wire::kRaw},
               {empty, Enc::kDecimalNumeric, Wire::kNumeric},
               {tz, Enc::kTimeTz, Wire::kTimeTz}};
  for (const auto& c : cases) {
    auto bytes = EncodeArray(c.value);
    ASSERT_TRUE(bytes.ok());
    ColumnVector col(L::kArray, c.value.element_type);
    col.AppendBytes(*bytes);
    Encoder enc{Enc::kArray, L::kArray, c.value.element_type, c.enc, 23};
    const std::string pgbytes = Encode(enc, col);
    ASSERT_GE(pgbytes.size(), 12u);
    EXPECT_EQ(LoadBE32(pgbytes.data()), c.value.dims.size());
    EXPECT_EQ(LoadBE32(pgbytes.data() + 8), 23u);  // the element type OID
    FieldPlan plan{L::kArray, Wire::kArray, c.value.element_type, c.wire};
    Value back = Decode(plan, pgbytes);
    ASSERT_FALSE(back.is_null());
    auto decoded = DecodeArray(back.AsBytes());
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, c.value) << ArrayToString(c.value);
    // Every truncation of the server bytes is rejected, never read past.
    for (size_t n = 0; n < pgbytes.size(); ++n) {
      ColumnVector sink(L::kArray, c.value.element_type);
      DecodeScratch scratch;
      EXPECT_FALSE(DecodeField(plan, pgbytes.substr(0, n), &sink, &scratch).ok()) << n;
    }
  }
}

TEST(PgCodec, MalformedServerBytesAreCorruption) {
  DecodeScratch scratch;
  const struct {
    FieldPlan plan;
    std::string bytes;
  } bad[] = {
      {{L::kInt32, Wire::kInt4}, "abc"},
      {{L::kUuid, Wire::kUuid}, std::string(15, 'x')},
      {{L::kBit, Wire::kBit}, std::string("\0\0\0\x09\xff", 5)},  // 9 bits need 2 bytes
      {{L::kJson, Wire::kJsonb}, "\x02{}"},
      {{L::kDecimal, Wire::kNumeric}, std::string("\0\1\0\0\0\0\0\0", 8)},
      // 2^31 x 2^31 elements claimed
      {{L::kArray, Wire::kArray, L::kInt32, Wire::kInt4},
       std::string("\0\0\0\2\0\0\0\0\0\0\0\x17\x7f\xff\xff\xff\0\0\0\1\x7f\xff\xff\xff\0\0\0\1",
                   28)},
  };
  for (const auto& c : bad) {
    ColumnVector col(c.plan.type, c.plan.element_type);
    Status s = DecodeField(c.plan, c.bytes, &col, &scratch);
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
    EXPECT_EQ(col.size(), 0u);
  }
}

TEST(PgCodec, RangeChecksAndZeroDates) {
  ColumnVector big(L::kInt64);
  big.AppendInt(int64_t{1} << 40);
  std::string out;
  Status s = EncodeCell(Encoder{Enc::kInt4, L::kInt64}, big, 0, ZeroDatePolicy::kNull, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("1099511627776"), std::string::npos);
  EXPECT_TRUE(out.empty());

  auto zero = ParseDate("0000-00-00");
  ASSERT_TRUE(zero.ok());
  ColumnVector d(L::kDate);
  d.AppendDate(*zero);
  EXPECT_EQ(Encode(Encoder{Enc::kDate, L::kDate}, d, ZeroDatePolicy::kNull), "<NULL>");
  std::string neg = Encode(Encoder{Enc::kDate, L::kDate}, d, ZeroDatePolicy::kNegInfinity);
  ASSERT_EQ(neg.size(), 4u);
  EXPECT_EQ(static_cast<int32_t>(LoadBE32(neg.data())), kDateNegInfinity);
  out.clear();
  s = EncodeCell(Encoder{Enc::kDate, L::kDate}, d, 0, ZeroDatePolicy::kError, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

// Binary COPY tuples as a PostgreSQL source sends them: (int4, text, jsonb) rows.
std::string Tuple(std::optional<int32_t> i, std::optional<std::string> t,
                  std::optional<std::string> j) {
  std::string out;
  AppendBE16(&out, 3);
  if (i) {
    AppendBE32(&out, 4);
    AppendBE32(&out, static_cast<uint32_t>(*i));
  } else {
    AppendBE32(&out, 0xFFFFFFFFu);
  }
  for (const auto& v : {t, j ? std::optional<std::string>("\x01" + *j) : std::nullopt}) {
    if (!v) {
      AppendBE32(&out, 0xFFFFFFFFu);
      continue;
    }
    AppendBE32(&out, static_cast<uint32_t>(v->size()));
    out += *v;
  }
  return out;
}

TEST(PgCodec, CopyTuplesBecomeColumns) {
  PgCopyRows rows;
  rows.type_oids = {kOidInt4, kOidText, kOidJsonb};
  rows.tuples = Tuple(7, "h\xC3\xA9llo", "{\"a\": 1}") + Tuple(std::nullopt, "", std::nullopt) +
                Tuple(-2147483647 - 1, std::nullopt, "[]");
  rows.rows = 3;
  std::vector<Column> cols(3);
  cols[0].name = "i";
  cols[0].type = LogicalType::kInt32;
  cols[1].name = "t";
  cols[1].type = LogicalType::kText;
  cols[2].name = "j";
  cols[2].type = LogicalType::kJson;
  auto decoded = DecodeCopyRows(rows, cols);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const Bundle& b = *decoded;
  ASSERT_EQ(b.rows(), 3u);
  EXPECT_EQ(b.columns[0].Get(0).ToString(), "7");
  EXPECT_TRUE(b.columns[0].IsNull(1));
  EXPECT_EQ(b.columns[0].Get(2).ToString(), "-2147483648");
  EXPECT_EQ(b.columns[1].Get(0).ToString(), "h\xC3\xA9llo");
  EXPECT_FALSE(b.columns[1].IsNull(1));
  EXPECT_EQ(b.columns[1].Get(1).ToString(), "");
  EXPECT_TRUE(b.columns[1].IsNull(2));
  EXPECT_EQ(b.columns[2].Get(0).ToString(), "{\"a\": 1}");
  EXPECT_TRUE(b.columns[2].IsNull(1));

  // A type that does not give the column's logical type, a wrong column count, a user type.
  cols[0].type = LogicalType::kText;
  EXPECT_EQ(DecodeCopyRows(rows, cols).status().code(), StatusCode::kInvalidArgument);
  cols[0].type = LogicalType::kInt32;
  EXPECT_EQ(DecodeCopyRows(rows, {cols[0], cols[1]}).status().code(), StatusCode::kInvalidArgument);
  PgCopyRows user = rows;
  user.type_oids[1] = 16385;
  EXPECT_EQ(DecodeCopyRows(user, cols).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(BuiltinWire(16385).has_value());
  EXPECT_EQ(BuiltinWire(kOidTimestampTz), Wire::kTimestamp);

  // Malformed tuples: every truncation, a wrong field count, a negative length.
  for (size_t n = 0; n < rows.tuples.size(); ++n) {
    PgCopyRows cut = rows;
    cut.tuples.resize(n);
    EXPECT_EQ(DecodeCopyRows(cut, cols).status().code(), StatusCode::kCorruption) << n;
  }
  PgCopyRows bad = rows;
  bad.tuples[1] = 4;
  EXPECT_EQ(DecodeCopyRows(bad, cols).status().code(), StatusCode::kCorruption);
  bad = rows;
  bad.tuples[2] = '\x80';
  EXPECT_EQ(DecodeCopyRows(bad, cols).status().code(), StatusCode::kCorruption);
  bad = rows;
  bad.rows = 4;
  EXPECT_EQ(DecodeCopyRows(bad, cols).status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace dbs::pg

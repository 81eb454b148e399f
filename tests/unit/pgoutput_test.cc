// pgoutput message decoding (sources/postgres/pgoutput.h) on hand-built messages, including
// truncation at every byte, and PostgreSQL text values (pg_text.h).
#include <gtest/gtest.h>

#include <string>

#include "core/array.h"
#include "core/column.h"
#include "core/temporal.h"
#include "postgres/pg_binary.h"
#include "sources/postgres/pg_text.h"
#include "sources/postgres/pgoutput.h"

namespace dbs::pg {
namespace {

// Message builder.
struct Msg {
  std::string b;
  explicit Msg(char tag) { b.push_back(tag); }
  Msg& U8(uint8_t v) {
    b.push_back(static_cast<char>(v));
    return *this;
  }
  Msg& U16(uint16_t v) {
    AppendBE16(&b, v);
    return *this;
  }
  Msg& U32(uint32_t v) {
    AppendBE32(&b, v);
    return *this;
  }
  Msg& U64(uint64_t v) {
    AppendBE64(&b, v);
    return *this;
  }
  Msg& Str(std::string_view s) {
    b.append(s);
    b.push_back('\0');
    return *this;
  }
  Msg& Cell(char kind, std::string_view data = {}) {
    U8(static_cast<uint8_t>(kind));
    if (kind == 't' || kind == 'b') {
      U32(static_cast<uint32_t>(data.size()));
      b.append(data);
    }
    return *this;
  }
};

// Every proper prefix of a valid message must be rejected without a crash.
void ExpectTruncationsFail(const std::string& bytes, int proto, bool in_stream) {
  PgoutputMessage m;
  for (size_t n = 0; n < bytes.size(); ++n) {
    Status s = DecodePgoutput(std::string_view(bytes).substr(0, n), proto, in_stream, &m);
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << "prefix of " << n << " bytes";
  }
  // A trailing byte is an error too.
  EXPECT_EQ(DecodePgoutput(bytes + "x", proto, in_stream, &m).code(), StatusCode::kCorruption);
}

TEST(PgoutputTest, BeginCommit) {
  const std::string begin = Msg('B').U64(0x1'00000010).U64(777).U32(42).b;
  PgoutputMessage m;
  ASSERT_TRUE(DecodePgoutput(begin, 1, false, &m).ok());
  EXPECT_EQ(m.kind, PgoutputKind::kBegin);
  EXPECT_EQ(m.lsn, 0x1'00000010u);
  EXPECT_EQ(m.timestamp, 777);
  EXPECT_EQ(m.xid, 42u);
  ExpectTruncationsFail(begin, 1, false);

  const std::string commit = Msg('C').U8(0).U64(100).U64(120).U64(999).b;
  ASSERT_TRUE(DecodePgoutput(commit, 2, false, &m).ok());
  EXPECT_EQ(m.kind, PgoutputKind::kCommit);
  EXPECT_EQ(m.lsn, 100u);
  EXPECT_EQ(m.end_lsn, 120u);
  EXPECT_EQ(m.timestamp, 999);
  ExpectTruncationsFail(commit, 2, false);

  const std::string origin = Msg('O').U64(5).Str("node1").b;
  ASSERT_TRUE(DecodePgoutput(origin, 1, false, &m).ok());
  EXPECT_EQ(m.name, "node1");
  ExpectTruncationsFail(origin, 1, false);
}

TEST(PgoutputTest, RelationAndType) {
  for (bool in_stream : {false, true}) {
    Msg r('R');
    if (in_stream) r.U32(9);
    r.U32(16384).Str("public").Str("t").U8('d').U16(2);
    r.U8(1).Str("id").U32(23).U32(0xffffffff);
    r.U8(0).Str("name").U32(25).U32(0xffffffff);
    PgoutputMessage m;
    ASSERT_TRUE(DecodePgoutput(r.b, 2, in_stream, &m).ok());
    EXPECT_EQ(m.kind, PgoutputKind::kRelation);
    EXPECT_EQ(m.xid, in_stream ? 9u : 0u);
    EXPECT_EQ(m.oid, 16384u);
    EXPECT_EQ(m.nspname, "public");
    EXPECT_EQ(m.name, "t");
    EXPECT_EQ(m.replica_identity, 'd');
    ASSERT_EQ(m.columns.size(), 2u);
    EXPECT_TRUE(m.columns[0].key());
    EXPECT_EQ(m.columns[0].name, "id");
    EXPECT_EQ(m.columns[0].type_oid, 23u);
    EXPECT_EQ(m.columns[0].type_mod, -1);
    EXPECT_FALSE(m.columns[1].key());
    ExpectTruncationsFail(r.b, 2, in_stream);
  }
  // A column count the bytes cannot hold is rejected before allocating.
  const std::string huge = Msg('R').U32(1).Str("s").Str("t").U8('d').U16(65535).b;
  PgoutputMessage m;
  EXPECT_EQ(DecodePgoutput(huge, 1, false, &m).code(), StatusCode::kCorruption);

  const std::string type = Msg('Y').U32(600).Str("public").Str("mood").b;
  ASSERT_TRUE(DecodePgoutput(type, 1, false, &m).ok());
  EXPECT_EQ(m.oid, 600u);
  EXPECT_EQ(m.name, "mood");
  ExpectTruncationsFail(type, 1, false);
}

TEST(PgoutputTest, InsertUpdateDelete) {
  Msg ins('I');
  ins.U32(16384).U8('N').U16(4).Cell('t', "42").Cell('n').Cell('u').Cell('b',
                                                                         std::string("\0\1", 2));
  PgoutputMessage m;
  ASSERT_TRUE(DecodePgoutput(ins.b, 1, false, &m).ok());
  EXPECT_EQ(m.kind, PgoutputKind::kInsert);
  ASSERT_EQ(m.new_tuple.size(), 4u);
  EXPECT_EQ(m.new_tuple[0].kind, TupleCell::Kind::kText);
  EXPECT_EQ(m.new_tuple[0].data, "42");
  EXPECT_EQ(m.new_tuple[1].kind, TupleCell::Kind::kNull);
  EXPECT_EQ(m.new_tuple[2].kind, TupleCell::Kind::kUnchanged);
  EXPECT_EQ(m.new_tuple[3].kind, TupleCell::Kind::kBinary);
  EXPECT_EQ(m.new_tuple[3].data, std::string_view("\0\1", 2));
  ExpectTruncationsFail(ins.b, 1, false);

  for (char old : {'K', 'O', '\0'}) {
    Msg up('U');
    up.U32(7).U32(16384);
    if (old) up.U8(static_cast<uint8_t>(old)).U16(2).Cell('t', "1").Cell('n');
    up.U8('N').U16(2).Cell('t', "2").Cell('u');
    ASSERT_TRUE(DecodePgoutput(up.b, 2, true, &m).ok()) << old;
    EXPECT_EQ(m.xid, 7u);
    EXPECT_EQ(m.old_kind, old);
    EXPECT_EQ(m.old_tuple.size(), old ? 2u : 0u);
    ASSERT_EQ(m.new_tuple.size(), 2u);
    EXPECT_EQ(m.new_tuple[0].data, "2");
    ExpectTruncationsFail(up.b, 2, true);
  }

  Msg del('D');
  del.U32(16384).U8('K').U16(1).Cell('t', "5");
  ASSERT_TRUE(DecodePgoutput(del.b, 1, false, &m).ok());
  EXPECT_EQ(m.old_kind, 'K');
  ASSERT_EQ(m.old_tuple.size(), 1u);
  EXPECT_EQ(m.old_tuple[0].data, "5");
  ExpectTruncationsFail(del.b, 1, false);

  // Unknown cell kind, missing 'N', delete without an old tuple.
  EXPECT_FALSE(DecodePgoutput(Msg('I').U32(1).U8('N').U16(1).Cell('x').b, 1, false, &m).ok());
  EXPECT_FALSE(DecodePgoutput(Msg('I').U32(1).U8('X').U16(0).b, 1, false, &m).ok());
  EXPECT_FALSE(DecodePgoutput(Msg('D').U32(1).U8('N').U16(0).b, 1, false, &m).ok());
  // A value length beyond the message.
  EXPECT_FALSE(
      DecodePgoutput(Msg('I').U32(1).U8('N').U16(1).U8('t').U32(0xffffffff).b, 1, false, &m).ok());
}

TEST(PgoutputTest, TruncateAndMessage) {
  const std::string t = Msg('T').U32(2).U8(kTruncateCascade).U32(10).U32(11).b;
  PgoutputMessage m;
  ASSERT_TRUE(DecodePgoutput(t, 1, false, &m).ok());
  EXPECT_EQ(m.truncate_oids, (std::vector<uint32_t>{10, 11}));
  EXPECT_EQ(m.flags, kTruncateCascade);
  ExpectTruncationsFail(t, 1, false);
  EXPECT_FALSE(DecodePgoutput(Msg('T').U32(0x40000000).U8(0).b, 1, false, &m).ok());

  const std::string msg = Msg('M').U8(1).U64(55).Str("pfx").U32(3).Str("ab").b;  // "ab\0"
  ASSERT_TRUE(DecodePgoutput(msg, 1, false, &m).ok());
  EXPECT_EQ(m.name, "pfx");
  EXPECT_EQ(m.content, std::string_view("ab\0", 3));
  EXPECT_EQ(m.lsn, 55u);
  ExpectTruncationsFail(msg, 1, false);
}

TEST(PgoutputTest, Streaming) {
  PgoutputMessage m;
  const std::string start = Msg('S').U32(700).U8(1).b;
  ASSERT_TRUE(DecodePgoutput(start, 2, false, &m).ok());
  EXPECT_EQ(m.xid, 700u);
  EXPECT_EQ(m.flags, 1);
  ExpectTruncationsFail(start, 2, false);
  // Stream messages need protocol 2.
  EXPECT_EQ(DecodePgoutput(start, 1, false, &m).code(), StatusCode::kCorruption);

  ASSERT_TRUE(DecodePgoutput(Msg('E').b, 2, true, &m).ok());
  EXPECT_EQ(m.kind, PgoutputKind::kStreamStop);

  const std::string commit = Msg('c').U32(700).U8(0).U64(90).U64(100).U64(5).b;
  ASSERT_TRUE(DecodePgoutput(commit, 2, false, &m).ok());
  EXPECT_EQ(m.kind, PgoutputKind::kStreamCommit);
  EXPECT_EQ(m.xid, 700u);
  EXPECT_EQ(m.lsn, 90u);
  EXPECT_EQ(m.end_lsn, 100u);
  ExpectTruncationsFail(commit, 2, false);

  const std::string abort = Msg('A').U32(700).U32(701).b;
  ASSERT_TRUE(DecodePgoutput(abort, 2, false, &m).ok());
  EXPECT_EQ(m.xid, 700u);
  EXPECT_EQ(m.subxid, 701u);
  for (size_t n = 0; n < abort.size(); ++n) {
    EXPECT_FALSE(DecodePgoutput(std::string_view(abort).substr(0, n), 2, false, &m).ok());
  }
  EXPECT_EQ(DecodePgoutput("Z", 2, false, &m).code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodePgoutput("", 2, false, &m).code(), StatusCode::kCorruption);
}

// --- text values

Value DecodeOne(const TextPlan& plan, std::string_view text) {
  ColumnVector col(plan.type, plan.element_type);
  Status s = DecodeTextField(plan, text, &col);
  EXPECT_TRUE(s.ok()) << text << ": " << s.ToString();
  if (!s.ok() || col.size() != 1) return Value();
  return col.Get(0);
}

TextPlan P(LogicalType t, LogicalType e = LogicalType::kNone) {
  TextPlan p;
  p.type = t;
  p.element_type = e;
  return p;
}

TEST(PgTextTest, Scalars) {
  using L = LogicalType;
  EXPECT_EQ(DecodeOne(P(L::kBool), "t"), Value::Bool(true));
  EXPECT_EQ(DecodeOne(P(L::kInt16), "-32768"), Value::Int(L::kInt16, -32768));
  EXPECT_EQ(DecodeOne(P(L::kInt64), "-9223372036854775808"), Value::Int(L::kInt64, INT64_MIN));
  EXPECT_EQ(DecodeOne(P(L::kFloat32), "-3.40282347e+38"), Value::Float32(-3.40282347e+38f));
  EXPECT_EQ(DecodeOne(P(L::kFloat64), "-Infinity"),
            Value::Float64(-std::numeric_limits<double>::infinity()));
  EXPECT_EQ(DecodeOne(P(L::kDecimal), "-1.50"), Value::Bytes(L::kDecimal, "-1.50"));
  TextPlan money = P(L::kDecimal);
  money.money = true;
  EXPECT_EQ(DecodeOne(money, "-$92,233,720,368,547,758.08"),
            Value::Bytes(L::kDecimal, "-92233720368547758.08"));
  TextPlan bpchar = P(L::kText);
  bpchar.bpchar = true;
  EXPECT_EQ(DecodeOne(bpchar, "ab   "), Value::Bytes(L::kText, "ab"));
  // inet arrives in its output form, which the snapshot reads too (abbrev): no /32 added.
  EXPECT_EQ(DecodeOne(P(L::kText), "10.0.0.1"), Value::Bytes(L::kText, "10.0.0.1"));
  EXPECT_EQ(DecodeOne(P(L::kText), "::1"), Value::Bytes(L::kText, "::1"));
  EXPECT_EQ(DecodeOne(P(L::kText), "10.0.0.0/8"), Value::Bytes(L::kText, "10.0.0.0/8"));
  EXPECT_EQ(DecodeOne(P(L::kBytes), "\\x00ff10"),
            Value::Bytes(L::kBytes, std::string("\0\xff\x10", 3)));
  EXPECT_EQ(DecodeOne(P(L::kBit), "1010"), Value::Bytes(L::kBit, EncodeBits("1010")));
  EXPECT_EQ(DecodeOne(P(L::kDate), "4713-01-01 BC"), Value::Date(*ParseDate("4713-01-01 BC")));
  EXPECT_EQ(DecodeOne(P(L::kTimestampTz), "294276-12-31 23:59:59.999999+00"),
            Value::Micros(L::kTimestampTz, *ParseTimestampTz("294276-12-31 23:59:59.999999+00")));
  EXPECT_EQ(DecodeOne(P(L::kTimeTz), "12:34:56.5+05:30"),
            Value::TimeTzValue(TimeTz{*ParseTime("12:34:56.5"), 5 * 3600 + 30 * 60}));
  EXPECT_EQ(DecodeOne(P(L::kTimeTz), "00:00:00-12"), Value::TimeTzValue(TimeTz{0, -12 * 3600}));
  EXPECT_EQ(DecodeOne(P(L::kInterval), "P1Y2M3DT4H5M6.789S"),
            Value::IntervalValue(Interval{14, 3, (4 * 3600 + 5 * 60 + 6) * 1000000LL + 789000}));
  EXPECT_EQ(DecodeOne(P(L::kInterval), "P-1DT2H"),
            Value::IntervalValue(Interval{0, -1, 2 * 3600 * 1000000LL}));
  EXPECT_EQ(DecodeOne(P(L::kInterval), "PT-4H-5M-6.5S"),
            Value::IntervalValue(Interval{0, 0, -((4 * 3600 + 5 * 60 + 6) * 1000000LL + 500000)}));
  EXPECT_EQ(DecodeOne(P(L::kInterval), "P-178000000Y"),
            Value::IntervalValue(Interval{-2136000000, 0, 0}));
}

TEST(PgTextTest, Arrays) {
  using L = LogicalType;
  Value v = DecodeOne(P(L::kArray, L::kInt32), "[0:1][1:2]={{1,2},{3,NULL}}");
  Result<ArrayValue> a = DecodeArray(v.AsBytes());
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->dims.size(), 2u);
  EXPECT_EQ(a->dims[0], (ArrayDim{2, 0}));
  EXPECT_EQ(a->dims[1], (ArrayDim{2, 1}));
  ASSERT_EQ(a->elements.size(), 4u);
  EXPECT_EQ(a->elements[2], Value::Int(L::kInt32, 3));
  EXPECT_TRUE(a->elements[3].is_null());

  v = DecodeOne(P(L::kArray, L::kText), R"({"a","b,c","","NULL",NULL,"quote\"d"})");
  a = DecodeArray(v.AsBytes());
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->elements.size(), 6u);
  EXPECT_EQ(a->elements[1], Value::Bytes(L::kText, "b,c"));
  EXPECT_EQ(a->elements[3], Value::Bytes(L::kText, "NULL"));
  EXPECT_TRUE(a->elements[4].is_null());
  EXPECT_EQ(a->elements[5], Value::Bytes(L::kText, "quote\"d"));

  v = DecodeOne(P(L::kArray, L::kInt32), "{}");
  a = DecodeArray(v.AsBytes());
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->dims.empty());

  ColumnVector col(L::kArray, L::kInt32);
  for (const char* bad :
       {"{1,2", "{{1},{2,3}}", "{1,{2}}", "[1:2]={1}x", "{\"a}", "", "1", "{1,,2}", "[a:b]={1}"}) {
    EXPECT_FALSE(DecodeTextField(P(L::kArray, L::kInt32), bad, &col).ok()) << bad;
  }
  EXPECT_EQ(col.size(), 0u);
}

TEST(PgTextTest, Malformed) {
  using L = LogicalType;
  ColumnVector b(L::kBool);
  EXPECT_FALSE(DecodeTextField(P(L::kBool), "yes", &b).ok());
  ColumnVector i(L::kInt16);
  EXPECT_FALSE(DecodeTextField(P(L::kInt16), "40000", &i).ok());
  ColumnVector by(L::kBytes);
  EXPECT_FALSE(DecodeTextField(P(L::kBytes), "\\x0", &by).ok());
  EXPECT_FALSE(DecodeTextField(P(L::kBytes), "abc", &by).ok());
  ColumnVector iv(L::kInterval);
  EXPECT_FALSE(DecodeTextField(P(L::kInterval), "P", &iv).ok());
  EXPECT_FALSE(DecodeTextField(P(L::kInterval), "1 day", &iv).ok());
  EXPECT_FALSE(DecodeTextField(P(L::kInterval), "P1.5D", &iv).ok());
  ColumnVector tz(L::kTimeTz);
  EXPECT_FALSE(DecodeTextField(P(L::kTimeTz), "12:00:00", &tz).ok());
  EXPECT_EQ(b.size() + i.size() + by.size() + iv.size() + tz.size(), 0u);
}

}  // namespace
}  // namespace dbs::pg

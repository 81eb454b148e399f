// Binlog event decoder (sources/mysql/binlog_event.h) on hand-built bytes: headers and CRC32,
// format description, table maps with optional metadata, V1 (MariaDB) and V2 (MySQL 8) rows
// events with partial images, every temporal type with fractional seconds, NEWDECIMAL, MySQL
// binary JSON, and every truncation of an event (a Corruption status, never a crash).
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "core/temporal.h"
#include "sources/mysql/binlog_event.h"

namespace dbs::mysql::binlog {
namespace {

// --- byte builders ---------------------------------------------------------------------------

std::string LE(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}
std::string BE(uint64_t v, int n) {
  std::string s;
  for (int i = n - 1; i >= 0; --i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}
std::string Hex(const char* h) {
  std::string s;
  for (size_t i = 0; h[i] && h[i + 1]; i += 2) {
    if (h[i] == ' ') {
      --i;
      continue;
    }
    s += static_cast<char>(std::stoi(std::string(h + i, 2), nullptr, 16));
  }
  return s;
}
std::string Packed(uint64_t v) {
  if (v < 251) return std::string(1, static_cast<char>(v));
  if (v < 65536) return "\xFC" + LE(v, 2);
  return "\xFE" + LE(v, 8);
}
std::string Str(const std::string& s) { return Packed(s.size()) + s; }

// A whole event: header + body (+ CRC32).
std::string MakeEvent(uint8_t type, const std::string& body, bool crc, uint32_t next_pos = 1000) {
  const uint32_t len = static_cast<uint32_t>(kHeaderSize + body.size() + (crc ? 4 : 0));
  std::string e = LE(1700000000, 4) + std::string(1, static_cast<char>(type)) + LE(1, 4) +
                  LE(len, 4) + LE(next_pos, 4) + LE(0, 2) + body;
  if (crc) e += LE(Crc32(e), 4);
  return e;
}

FormatDescription TestFd() {
  FormatDescription fd;
  fd.post_header_lengths.assign(200, 0);
  fd.post_header_lengths[kQueryEvent - 1] = 13;
  fd.post_header_lengths[kTableMapEvent - 1] = 8;
  for (int t : {23, 24, 25}) fd.post_header_lengths[t - 1] = 8;
  for (int t : {30, 31, 32}) fd.post_header_lengths[t - 1] = 10;
  return fd;
}

// An event over `body`; the bytes are kept alive for the whole test binary (Event only views
// them).
Event Ev(uint8_t type, const std::string& body) {
  static std::deque<std::string> keep;
  keep.push_back(body);
  Event e;
  e.header.type = type;
  e.body = keep.back();
  return e;
}

Column Col(const std::string& name, LogicalType t, const std::string& source_type = "") {
  Column c;
  c.name = name;
  c.type = t;
  c.source_type = source_type;
  return c;
}

// Decodes a single value; returns the cell.
Value Decode1(uint8_t type, uint16_t meta, const Column& c, const std::string& bytes,
              Status* status = nullptr) {
  ColumnVector v(c.type);
  size_t pos = 0;
  Status s = DecodeValue(type, meta, c, bytes, &pos, &v);
  if (status) *status = s;
  EXPECT_TRUE(s.ok() || status) << s.ToString();
  if (!s.ok()) return Value();
  EXPECT_EQ(pos, bytes.size());
  return v.Get(0);
}

// DATETIME2 / TIME2 encoders, written from MySQL's documented layout.
std::string DateTime2(int y, int mo, int d, int h, int mi, int s, int64_t micros, int fsp) {
  const uint64_t ym = uint64_t(y) * 13 + mo;
  const uint64_t intpart = (((ym << 5) | d) << 17) | (uint64_t(h) << 12) | (mi << 6) | s;
  std::string out = BE(intpart + 0x8000000000ULL, 5);
  if (fsp == 1 || fsp == 2) out += BE(micros / 10000, 1);
  if (fsp == 3 || fsp == 4) out += BE(micros / 100, 2);
  if (fsp == 5 || fsp == 6) out += BE(micros, 3);
  return out;
}

// --- tests -----------------------------------------------------------------------------------

TEST(BinlogTest, Crc32MatchesZlib) {
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(Crc32(""), 0u);
}

TEST(BinlogTest, EventHeaderAndChecksum) {
  const std::string e = MakeEvent(kXidEvent, LE(42, 8), true, 555);
  auto ev = ParseEvent(e, ChecksumAlg::kCrc32, true);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_EQ(ev->header.type, kXidEvent);
  EXPECT_EQ(ev->header.next_position, 555u);
  EXPECT_EQ(ev->body.size(), 8u);
  EXPECT_EQ(*ParseXid(*ev), 42u);

  std::string bad = e;
  bad[kHeaderSize] ^= 1;
  auto b = ParseEvent(bad, ChecksumAlg::kCrc32, true);
  EXPECT_EQ(b.status().code(), StatusCode::kCorruption);
  EXPECT_NE(b.status().message().find("CRC32"), std::string::npos);
  // Without checksums the same bytes are a 12-byte body.
  EXPECT_EQ(ParseEvent(e, ChecksumAlg::kOff, false)->body.size(), 12u);
  for (size_t n = 0; n < e.size(); ++n) {
    EXPECT_FALSE(ParseEvent(e.substr(0, n), ChecksumAlg::kCrc32, true).ok()) << n;
  }
}

TEST(BinlogTest, FormatDescription) {
  std::string ver = "8.0.36";
  ver.resize(50, '\0');
  std::string lens(41, '\0');
  lens[kTableMapEvent - 1] = 8;
  lens[kWriteRowsV2 - 1] = 10;
  const std::string body = LE(4, 2) + ver + LE(0, 4) + std::string(1, 19) + lens + "\x01";
  const std::string e = MakeEvent(kFormatDescriptionEvent, body, true);
  auto fd = ParseFormatDescription(e);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  EXPECT_EQ(fd->server_version, "8.0.36");
  EXPECT_EQ(fd->checksum, ChecksumAlg::kCrc32);
  EXPECT_EQ(fd->post_header_lengths.size(), 41u);
  EXPECT_EQ(fd->PostHeaderLength(kWriteRowsV2), 10);
  EXPECT_FALSE(fd->is_mariadb());
  // Checksum off: the algorithm byte is the last byte.
  auto off = ParseFormatDescription(
      MakeEvent(kFormatDescriptionEvent, LE(4, 2) + ver + LE(0, 4) + "\x13" + lens + '\0', false));
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ(off->checksum, ChecksumAlg::kOff);
  for (size_t n = 0; n < e.size(); ++n) EXPECT_FALSE(ParseFormatDescription(e.substr(0, n)).ok());
}

TEST(BinlogTest, RotateQueryGtids) {
  auto rot = ParseRotate(Ev(kRotateEvent, LE(4, 8) + "binlog.000007"));
  ASSERT_TRUE(rot.ok());
  EXPECT_EQ(rot->file, "binlog.000007");
  EXPECT_EQ(rot->position, 4u);

  Event hb = Ev(kHeartbeatEvent, "binlog.000007");
  hb.header.next_position = 1234;
  auto h = ParseHeartbeat(hb);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->file, "binlog.000007");
  EXPECT_EQ(h->position, 1234u);
  EXPECT_FALSE(ParseRotate(Ev(kRotateEvent, LE(4, 7))).ok());

  const FormatDescription fd = TestFd();
  const std::string status_vars(5, '\0');
  const std::string q = LE(7, 4) + LE(0, 4) + std::string(1, 2) + LE(0, 2) +
                        LE(status_vars.size(), 2) + status_vars + "db" + '\0' +
                        "ALTER TABLE t ADD c INT";
  auto qe = ParseQuery(Ev(kQueryEvent, q), fd);
  ASSERT_TRUE(qe.ok()) << qe.status().ToString();
  EXPECT_EQ(qe->database, "db");
  EXPECT_EQ(qe->statement, "ALTER TABLE t ADD c INT");
  for (size_t n = 0; n < 20; ++n)
    EXPECT_FALSE(ParseQuery(Ev(kQueryEvent, q.substr(0, n)), fd).ok());

  Event g = Ev(kMariaGtidEvent, LE(42, 8) + LE(3, 4) + "\x01");
  g.header.server_id = 9;
  auto mg = ParseMariaGtid(g);
  ASSERT_TRUE(mg.ok());
  EXPECT_EQ(mg->ToString(), "3-9-42");
  EXPECT_TRUE(mg->standalone());

  auto gl = ParseMariaGtidList(Ev(kMariaGtidListEvent, LE(2, 4) + LE(0, 4) + LE(1, 4) + LE(5, 8) +
                                                           LE(1, 4) + LE(2, 4) + LE(6, 8)));
  ASSERT_TRUE(gl.ok());
  ASSERT_EQ(gl->size(), 2u);
  EXPECT_EQ((*gl)[1].ToString(), "1-2-6");
  EXPECT_FALSE(ParseMariaGtidList(Ev(kMariaGtidListEvent, LE(2, 4) + LE(0, 4))).ok());

  const std::string sid = Hex("3E11FA4771CA11E19E33C80AA9429562");
  auto my = ParseMysqlGtid(Ev(kMysqlGtidEvent, "\x01" + sid + LE(23, 8) + std::string(17, '\0')));
  ASSERT_TRUE(my.ok());
  EXPECT_EQ(my->ToString(), "3e11fa47-71ca-11e1-9e33-c80aa9429562:23");
  EXPECT_FALSE(ParseMysqlGtid(Ev(kMysqlGtidEvent, "\x01" + sid)).ok());
}

TEST(BinlogTest, NewDecimal) {
  size_t used = 0;
  // DECIMAL(14,4) 1234567890.1234 (MySQL's documented example) and its negative.
  auto a = DecimalToText(Hex("810DFB38D204D2"), 14, 4, &used);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, "1234567890.1234");
  EXPECT_EQ(used, 7u);
  EXPECT_EQ(*DecimalToText(Hex("7EF204C72DFB2D"), 14, 4, &used), "-1234567890.1234");
  // DECIMAL(12,2): 0 -> "0.00"; -0.01.
  EXPECT_EQ(*DecimalToText(Hex("800000000000"), 12, 2, &used), "0.00");
  EXPECT_EQ(*DecimalToText(Hex("7FFFFFFFFFFE"), 12, 2, &used), "-0.01");
  // DECIMAL(65,30): 35 integer digits (3 + 4 groups), 30 fraction digits (3 groups + 3).
  std::string max = BE(99 | 0x80, 1);
  max[0] = static_cast<char>(0x80 | 0);  // leading partial group of 8 digits takes 4 bytes
  // Build 1 followed by zeros: integer part "1", fraction 0.000..001.
  std::string bytes = BE(0x80000000u, 4);              // 8-digit partial group (4 bytes) = 0
  bytes += BE(0, 4) + BE(0, 4) + BE(1, 4);             // 3 groups: ...000000001
  bytes += BE(0, 4) + BE(0, 4) + BE(0, 4) + BE(1, 2);  // 27 + 3 fraction digits: ...001
  auto big = DecimalToText(bytes, 65, 30, &used);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(*big, "1.000000000000000000000000000001");
  EXPECT_EQ(used, 30u);
  // A group >= 10^9 and every truncation are corrupt.
  EXPECT_FALSE(DecimalToText(Hex("80FFFFFFFF00"), 12, 2, &used).ok());
  for (size_t n = 0; n < 7; ++n) {
    EXPECT_FALSE(DecimalToText(Hex("810DFB38D204D2").substr(0, n), 14, 4, &used).ok());
  }
  EXPECT_FALSE(DecimalToText("", 70, 2, &used).ok());

  Column c = Col("d", LogicalType::kDecimal);
  EXPECT_EQ(Decode1(kTypeNewDecimal, (14 << 8) | 4, c, Hex("810DFB38D204D2")).AsBytes(),
            "1234567890.1234");
}

TEST(BinlogTest, IntegersFloatsYear) {
  Column i8 = Col("a", LogicalType::kInt8), u8 = Col("b", LogicalType::kUInt8);
  EXPECT_EQ(Decode1(kTypeTiny, 0, i8, "\xFF").ToString(), "-1");
  EXPECT_EQ(Decode1(kTypeTiny, 0, u8, "\xFF").ToString(), "255");
  Column i32 = Col("m", LogicalType::kInt32), u32 = Col("m", LogicalType::kUInt32);
  EXPECT_EQ(Decode1(kTypeInt24, 0, i32, Hex("000080")).ToString(), "-8388608");
  EXPECT_EQ(Decode1(kTypeInt24, 0, u32, Hex("FFFFFF")).ToString(), "16777215");
  Column i64 = Col("x", LogicalType::kInt64), u64 = Col("y", LogicalType::kUInt64);
  EXPECT_EQ(Decode1(kTypeLongLong, 0, i64, LE(0x8000000000000000ULL, 8)).ToString(),
            "-9223372036854775808");
  EXPECT_EQ(Decode1(kTypeLongLong, 0, u64, LE(~0ULL, 8)).ToString(), "18446744073709551615");
  Column f = Col("f", LogicalType::kFloat32), d = Col("d", LogicalType::kFloat64);
  float fv = -3.40282e38f;
  uint32_t fb;
  std::memcpy(&fb, &fv, 4);
  EXPECT_EQ(Decode1(kTypeFloat, 4, f, LE(fb, 4)), Value::Float32(fv));
  double dv = -2.2250738585072014e-308;
  uint64_t db;
  std::memcpy(&db, &dv, 8);
  EXPECT_EQ(Decode1(kTypeDouble, 8, d, LE(db, 8)), Value::Float64(dv));
  Column y = Col("y", LogicalType::kInt16);
  EXPECT_EQ(Decode1(kTypeYear, 0, y, "\xFF").ToString(), "2155");
  EXPECT_EQ(Decode1(kTypeYear, 0, y, std::string(1, '\0')).ToString(), "0");
  // The schema says text: the binlog integer does not fit (a stale schema), not a crash.
  Status s;
  Decode1(kTypeLong, 0, Col("t", LogicalType::kText), LE(1, 4), &s);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(BinlogTest, TemporalWithFractions) {
  Column ts = Col("ts", LogicalType::kTimestampTz);
  // TIMESTAMP2(3) 2038-01-19 03:14:07.999 UTC.
  auto v = Decode1(kTypeTimestamp2, 3, ts, BE(2147483647, 4) + BE(9990, 2));
  EXPECT_EQ(v.ToString(), "2038-01-19 03:14:07.999+00");
  // TIMESTAMP2(6) 1970-01-01 00:00:01.000001; zero timestamp is the zero date.
  EXPECT_EQ(Decode1(kTypeTimestamp2, 6, ts, BE(1, 4) + BE(1, 3)).ToString(),
            "1970-01-01 00:00:01.000001+00");
  ColumnVector zero(LogicalType::kTimestampTz);
  size_t pos = 0;
  ASSERT_TRUE(DecodeValue(kTypeTimestamp2, 0, ts, BE(0, 4), &pos, &zero).ok());
  EXPECT_EQ(TimestampKind(zero.GetMicros(0)), TemporalKind::kZeroDate);

  Column dt = Col("dt", LogicalType::kTimestamp);
  EXPECT_EQ(Decode1(kTypeDateTime2, 6, dt, DateTime2(2024, 2, 29, 13, 45, 0, 123456, 6)).ToString(),
            "2024-02-29 13:45:00.123456");
  EXPECT_EQ(Decode1(kTypeDateTime2, 0, dt, DateTime2(9999, 12, 31, 23, 59, 59, 0, 0)).ToString(),
            "9999-12-31 23:59:59");
  EXPECT_EQ(Decode1(kTypeDateTime2, 2, dt, DateTime2(2020, 6, 15, 12, 0, 0, 500000, 2)).ToString(),
            "2020-06-15 12:00:00.5");
  // Zero dates are kept exactly, like the snapshot reader's ParseTimestamp.
  auto z = Decode1(kTypeDateTime2, 1, dt, DateTime2(2021, 0, 0, 10, 11, 12, 500000, 1));
  EXPECT_EQ(z.AsMicros(), *ParseTimestamp("2021-00-00 10:11:12.5"));

  Column t = Col("t", LogicalType::kTime);
  // TIME2(6) -838:59:59.000000 and 838:59:59.999999.
  const int64_t max_hms = (838LL << 12) | (59 << 6) | 59;
  EXPECT_EQ(
      Decode1(kTypeTime2, 6, t, BE(0x800000000000LL + ((max_hms << 24) | 999999), 6)).ToString(),
      "838:59:59.999999");
  EXPECT_EQ(Decode1(kTypeTime2, 6, t, BE(0x800000000000LL - (max_hms << 24), 6)).ToString(),
            "-838:59:59");
  // TIME2(1) -00:00:00.5: int part -1, fraction byte -50 (0xCE).
  EXPECT_EQ(Decode1(kTypeTime2, 1, t, BE(0x7FFFFF, 3) + "\xCE").AsMicros(), -500000);
  // TIME2(3) 12:34:56.789.
  const int64_t hms = (12 << 12) | (34 << 6) | 56;
  EXPECT_EQ(Decode1(kTypeTime2, 3, t, BE(0x800000 + hms, 3) + BE(7890, 2)).ToString(),
            "12:34:56.789");

  Column date = Col("d", LogicalType::kDate);
  EXPECT_EQ(Decode1(kTypeDate, 0, date, LE((2024 << 9) | (2 << 5) | 29, 3)).ToString(),
            "2024-02-29");
  EXPECT_EQ(Decode1(kTypeDate, 0, date, LE(0, 3)).ToString(), "0000-00-00");
  // Old DATETIME and TIMESTAMP.
  EXPECT_EQ(Decode1(kTypeDateTime, 0, dt, LE(20240229134500ULL, 8)).ToString(),
            "2024-02-29 13:45:00");
  EXPECT_EQ(Decode1(kTypeTimestamp, 0, ts, LE(86400, 4)).ToString(), "1970-01-02 00:00:00+00");
}

TEST(BinlogTest, StringsEnumSetBit) {
  Column txt = Col("s", LogicalType::kText);
  EXPECT_EQ(Decode1(kTypeVarchar, 255, txt,
                    "\x03"
                    "abc")
                .AsBytes(),
            "abc");
  EXPECT_EQ(Decode1(kTypeVarchar, 1020, txt, LE(3, 2) + "abc").AsBytes(), "abc");
  // CHAR(10) utf8mb4: real type STRING, max length 40 -> one length byte.
  EXPECT_EQ(Decode1(kTypeString, (0xFE << 8) | 40, txt,
                    "\x02"
                    "ab")
                .AsBytes(),
            "ab");
  // CHAR(255) utf8mb4 = 1020 bytes: the high length bits live in the type byte.
  const uint16_t meta1020 =
      static_cast<uint16_t>((((0xFE ^ ((1020 & 0x300) >> 4))) << 8) | (1020 & 0xFF));
  EXPECT_EQ(Decode1(kTypeString, meta1020, txt, LE(2, 2) + "xy").AsBytes(), "xy");
  // BINARY(4) padding restored.
  Column bin = Col("b", LogicalType::kBytes, "binary(4)");
  bin.length = 4;
  EXPECT_EQ(Decode1(kTypeString, (0xFE << 8) | 4, bin, "\x01\xFF").AsBytes(),
            std::string("\xFF\0\0\0", 4));

  Column en = Col("e", LogicalType::kEnum);
  en.enum_values = {"small", "it's", "a,b"};
  EXPECT_EQ(Decode1(kTypeString, (kTypeEnum << 8) | 1, en, "\x02").AsBytes(), "it's");
  EXPECT_EQ(Decode1(kTypeString, (kTypeEnum << 8) | 1, en, std::string(1, '\0')).AsBytes(), "");
  Status s;
  Decode1(kTypeString, (kTypeEnum << 8) | 1, en, "\x09", &s);
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  Column set = Col("s", LogicalType::kSet);
  set.enum_values = {"a", "b", "c"};
  EXPECT_EQ(Decode1(kTypeString, (kTypeSet << 8) | 1, set, "\x05").AsBytes(), "a,c");
  EXPECT_EQ(Decode1(kTypeString, (kTypeSet << 8) | 1, set, std::string(1, '\0')).AsBytes(), "");

  Column bit = Col("b", LogicalType::kBit);
  bit.length = 10;
  auto b = Decode1(kTypeBit, (1 << 8) | 2, bit, Hex("0301"));
  // u32 bit count 10, then 0b1100000001 left-aligned in 2 bytes: 1100 0000 01xx xxxx.
  EXPECT_EQ(b.AsBytes(), std::string("\x0A\x00\x00\x00\xC0\x40", 6));
  bit.length = 64;
  EXPECT_EQ(Decode1(kTypeBit, 8 << 8, bit, std::string(8, '\xFF')).AsBytes().size(), 12u);

  Column blob = Col("b", LogicalType::kBytes);
  EXPECT_EQ(Decode1(kTypeBlob, 3, blob, LE(2, 3) + "hi").AsBytes(), "hi");
  Column geo = Col("g", LogicalType::kGeometry);
  const std::string wkb = LE(4326, 4) + Hex("0101000000") + std::string(16, '\0');
  EXPECT_EQ(Decode1(kTypeGeometry, 4, geo, LE(wkb.size(), 4) + wkb).AsBytes(), wkb);
  Decode1(kTypeGeometry, 4, geo, LE(3, 4) + "abc", &s);
  EXPECT_FALSE(s.ok());
}

// {"a": 1, "b": [true, null, "x"], "c": 2.5} in MySQL's binary JSON.
std::string SampleJson() {
  std::string arr = LE(3, 2) + LE(15, 2);
  arr += "\x04" + LE(1, 2);   // true (inline literal)
  arr += "\x04" + LE(0, 2);   // null
  arr += "\x0C" + LE(13, 2);  // string at offset 13
  arr += std::string("\x01x");
  double d = 2.5;
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  std::string obj = LE(3, 2) + LE(51, 2);
  obj += LE(25, 2) + LE(1, 2) + LE(26, 2) + LE(1, 2) + LE(27, 2) + LE(1, 2);
  obj += "\x05" + LE(1, 2);   // int16 1 (inline)
  obj += "\x02" + LE(28, 2);  // small array at 28
  obj += "\x0B" + LE(43, 2);  // double at 43
  obj += "abc" + arr + LE(bits, 8);
  return std::string(1, '\0') + obj;
}

TEST(BinlogTest, MysqlBinaryJson) {
  const std::string j = SampleJson();
  auto t = MysqlJsonToText(j);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(*t, "{\"a\": 1, \"b\": [true, null, \"x\"], \"c\": 2.5}");
  EXPECT_EQ(*MysqlJsonToText(""), "null");
  EXPECT_EQ(*MysqlJsonToText("\x0C\x05"
                             "a\"\n\x01z"),
            "\"a\\\"\\n\\u0001z\"");
  double d = 1e10;
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  EXPECT_EQ(*MysqlJsonToText("\x0B" + LE(bits, 8)), "10000000000.0");
  for (auto [v, text] : {std::pair<double, const char*>{1e23, "1e23"},
                         {1.5e-7, "1.5e-7"},
                         {-0.25, "-0.25"},
                         {3.0, "3.0"}}) {
    std::memcpy(&bits, &v, 8);
    EXPECT_EQ(*MysqlJsonToText("\x0B" + LE(bits, 8)), text);
  }
  EXPECT_EQ(*MysqlJsonToText("\x09" + LE(static_cast<uint64_t>(-5), 8)), "-5");
  // Opaque DECIMAL(4,2) 12.34.
  EXPECT_EQ(*MysqlJsonToText("\x0F\xF6\x04\x04\x02" + Hex("8C22")), "12.34");
  for (size_t n = 1; n < j.size(); ++n) EXPECT_FALSE(MysqlJsonToText(j.substr(0, n)).ok()) << n;
  // Through DecodeValue: a JSON column with 4 length bytes.
  Column c = Col("j", LogicalType::kJson);
  EXPECT_EQ(Decode1(kTypeJson, 4, c, LE(j.size(), 4) + j).AsBytes(),
            "{\"a\": 1, \"b\": [true, null, \"x\"], \"c\": 2.5}");
  // Deep nesting is bounded.
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "\x02" + LE(1, 2) + LE(7, 2) + "\x02" + LE(0, 2);
  EXPECT_FALSE(MysqlJsonToText(deep).ok());
}

// A table map of (id INT UNSIGNED NOT NULL, name VARCHAR(20), amount DECIMAL(10,2),
// ts TIMESTAMP(3), e ENUM('x','y'), doc JSON) with FULL optional metadata.
std::string SampleTableMapBody() {
  std::string types = std::string() + char(kTypeLong) + char(kTypeVarchar) + char(kTypeNewDecimal) +
                      char(kTypeTimestamp2) + char(kTypeString) + char(kTypeJson);
  std::string meta =
      LE(80, 2) + BE((10 << 8) | 2, 2) + "\x03" + BE((kTypeEnum << 8) | 1, 2) + "\x04";
  std::string body = LE(77, 6) + LE(1, 2) +
                     "\x02"
                     "db" +
                     '\0' +
                     "\x01"
                     "t" +
                     '\0' + Packed(6) + types + Str(meta) + "\x3E";  // nullable: all but id
  std::string names = Str("id") + Str("name") + Str("amount") + Str("ts") + Str("e") + Str("doc");
  std::string labels = Packed(2) + Str("x") + Str("y");
  body += "\x01" + Str(std::string(1, '\x80'));  // signedness: id (first numeric) unsigned
  body += "\x04" + Str(names);
  body += "\x06" + Str(labels);
  body += "\x08" + Str(Packed(0));  // primary key: column 0
  return body;
}

TEST(BinlogTest, TableMapWithOptionalMetadata) {
  const FormatDescription fd = TestFd();
  const std::string body = SampleTableMapBody();
  auto m = ParseTableMap(Ev(kTableMapEvent, body), fd);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->table_id, 77u);
  EXPECT_EQ(m->database, "db");
  EXPECT_EQ(m->table, "t");
  ASSERT_EQ(m->column_count(), 6u);
  EXPECT_EQ(m->metadata[1], 80);
  EXPECT_EQ(m->metadata[2], (10 << 8) | 2);
  EXPECT_EQ(m->RealType(4), kTypeEnum);
  EXPECT_FALSE(m->nullable[0]);
  EXPECT_TRUE(m->nullable[5]);
  ASSERT_TRUE(m->has_signedness);
  EXPECT_TRUE(m->unsigned_flags[0]);
  EXPECT_FALSE(m->unsigned_flags[2]);
  EXPECT_EQ(m->column_names[3], "ts");
  EXPECT_EQ(m->enum_labels[4], (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(m->primary_key, std::vector<uint32_t>{0});
  EXPECT_EQ(ColumnForTableMap(*m, 0).type, LogicalType::kUInt32);
  EXPECT_EQ(ColumnForTableMap(*m, 4).enum_values.size(), 2u);
  for (size_t n = 0; n < body.size(); ++n) {
    auto t = ParseTableMap(Ev(kTableMapEvent, body.substr(0, n)), fd);
    // A prefix that ends exactly between optional metadata fields is still a valid map.
    if (t.ok()) {
      EXPECT_GE(n, body.find("\x01\x01\x80"));
    } else {
      EXPECT_EQ(t.status().code(), StatusCode::kCorruption) << n;
    }
  }
}

struct Decoded {
  std::vector<ColumnVector> cols;
  std::vector<Column> schema;
};

Decoded Schema6(const TableMap& m) {
  Decoded d;
  for (size_t i = 0; i < m.column_count(); ++i) d.schema.push_back(ColumnForTableMap(m, i));
  for (const Column& c : d.schema) d.cols.emplace_back(c.type);
  return d;
}

std::vector<ColumnTarget> Targets(Decoded* d) {
  std::vector<ColumnTarget> t;
  for (size_t i = 0; i < d->schema.size(); ++i) t.push_back({&d->schema[i], &d->cols[i]});
  return t;
}

TEST(BinlogTest, MysqlV2RowsEventsWithPartialImages) {
  const FormatDescription fd = TestFd();
  auto m = ParseTableMap(Ev(kTableMapEvent, SampleTableMapBody()), fd);
  ASSERT_TRUE(m.ok());
  const std::string j = SampleJson();
  // Row 1: id 7, name "héllo", amount -0.01, ts 1970-01-01 00:00:01.5, e 'y', doc json.
  std::string row1 = std::string(1, '\0') + LE(7, 4) + Str("h\xC3\xA9llo") + Hex("7FFFFFFFFE") +
                     BE(1, 4) + BE(5000, 2) + "\x02" + LE(j.size(), 4) + j;
  // Row 2: id 4294967295, everything else NULL (null bits 1..5).
  std::string row2 = std::string(1, '\x3E') + LE(0xFFFFFFFFu, 4);
  const std::string extra("\x00\x01\x00", 3);  // an extra-data item (ignored)
  std::string write =
      LE(77, 6) + LE(1, 2) + LE(2 + extra.size(), 2) + extra + Packed(6) + "\x3F" + row1 + row2;
  auto ev = ParseRowsEvent(Ev(kWriteRowsV2, write), fd);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_TRUE(ev->v2);
  EXPECT_EQ(ev->kind, RowsKind::kWrite);
  EXPECT_EQ(ev->extra.size(), 3u);
  Decoded d = Schema6(*m);
  auto targets = Targets(&d);
  size_t pos = 0;
  ASSERT_TRUE(DecodeRow(*m, ev->present, ev->rows, &pos, targets).ok());
  ASSERT_TRUE(DecodeRow(*m, ev->present, ev->rows, &pos, targets).ok());
  EXPECT_EQ(pos, ev->rows.size());
  EXPECT_EQ(d.cols[0].GetUInt(0), 7u);
  EXPECT_EQ(d.cols[1].GetBytes(0), "h\xC3\xA9llo");
  EXPECT_EQ(d.cols[2].GetBytes(0), "-0.01");
  EXPECT_EQ(d.cols[3].Get(0).ToString(), "1970-01-01 00:00:01.5+00");
  EXPECT_EQ(d.cols[4].GetBytes(0), "y");
  EXPECT_EQ(d.cols[5].GetBytes(0), "{\"a\": 1, \"b\": [true, null, \"x\"], \"c\": 2.5}");
  EXPECT_EQ(d.cols[0].GetUInt(1), 4294967295u);
  for (size_t c = 1; c < 6; ++c) EXPECT_TRUE(d.cols[c].IsNull(1)) << c;

  // UPDATE with a MINIMAL-style image: before = key only, after = name only.
  std::string before = std::string(1, '\0') + LE(7, 4);
  std::string after = std::string(1, '\0') + Str("new");
  std::string update =
      LE(77, 6) + LE(1, 2) + LE(2, 2) + Packed(6) + "\x01" + "\x02" + before + after;
  auto up = ParseRowsEvent(Ev(kUpdateRowsV2, update), fd);
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_EQ(up->kind, RowsKind::kUpdate);
  Decoded u = Schema6(*m);
  auto ut = Targets(&u);
  pos = 0;
  ASSERT_TRUE(DecodeRow(*m, up->present, up->rows, &pos, ut).ok());
  ASSERT_TRUE(DecodeRow(*m, up->present_after, up->rows, &pos, ut).ok());
  EXPECT_EQ(pos, up->rows.size());
  EXPECT_EQ(u.cols[0].GetUInt(0), 7u);
  EXPECT_TRUE(u.cols[1].IsUnchanged(0));
  EXPECT_TRUE(u.cols[0].IsUnchanged(1));
  EXPECT_EQ(u.cols[1].GetBytes(1), "new");
  EXPECT_TRUE(u.cols[5].IsUnchanged(1));
  EXPECT_FALSE(u.cols[1].IsNull(1));

  // Every truncation of the write event's rows fails cleanly.
  for (size_t n = 0; n + 1 < row1.size(); ++n) {
    Decoded t = Schema6(*m);
    auto tt = Targets(&t);
    size_t p = 0;
    std::string cut = row1.substr(0, n);
    EXPECT_FALSE(DecodeRow(*m, ev->present, cut, &p, tt).ok()) << n;
  }
  for (size_t n = 0; n < 12; ++n) {
    EXPECT_FALSE(ParseRowsEvent(Ev(kWriteRowsV2, write.substr(0, n)), fd).ok()) << n;
  }
  // A column count that disagrees with the table map.
  Decoded t = Schema6(*m);
  auto tt = Targets(&t);
  pos = 0;
  EXPECT_FALSE(DecodeRow(*m, std::vector<bool>(5, true), ev->rows, &pos, tt).ok());
}

TEST(BinlogTest, MariaDbV1RowsEvents) {
  const FormatDescription fd = TestFd();
  auto m = ParseTableMap(Ev(kTableMapEvent, SampleTableMapBody()), fd);
  ASSERT_TRUE(m.ok());
  std::string row = std::string(1, '\x3E') + LE(1, 4);
  std::string del = LE(77, 6) + LE(1, 2) + Packed(6) + "\x3F" + row;
  auto ev = ParseRowsEvent(Ev(kDeleteRowsV1, del), fd);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_FALSE(ev->v2);
  EXPECT_EQ(ev->kind, RowsKind::kDelete);
  Decoded d = Schema6(*m);
  auto targets = Targets(&d);
  size_t pos = 0;
  ASSERT_TRUE(DecodeRow(*m, ev->present, ev->rows, &pos, targets).ok());
  EXPECT_EQ(d.cols[0].GetUInt(0), 1u);
  // A skipped column (no target) is still consumed.
  Decoded s = Schema6(*m);
  auto st = Targets(&s);
  st[0].out = nullptr;
  pos = 0;
  ASSERT_TRUE(DecodeRow(*m, ev->present, ev->rows, &pos, st).ok());
  EXPECT_EQ(pos, ev->rows.size());
  EXPECT_EQ(ParseRowsEvent(Ev(kMariaWriteRowsCompressedV1, del), fd).status().code(),
            StatusCode::kUnsupported);
  EXPECT_EQ(ParseRowsEvent(Ev(kMysqlPartialUpdateRowsEvent, del), fd).status().code(),
            StatusCode::kUnsupported);
}

}  // namespace
}  // namespace dbs::mysql::binlog

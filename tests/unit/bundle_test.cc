#include "core/bundle.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/array.h"
#include "core/temporal.h"
#include "support/sample_bundles.h"

namespace dbs {
namespace {

using testing::BundleRows;
using testing::MakeTypicalBundle;
using testing::MakeZooBundle;

Bundle RoundTrip(const Bundle& b, Compression c) {
  std::string bytes;
  EncodeOptions o;
  o.compression = c;
  EXPECT_TRUE(EncodeBundle(b, o, &bytes).ok());
  auto d = DecodeBundle(bytes);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(d).value() : Bundle{};
}

void ExpectSame(const Bundle& a, const Bundle& b) {
  ASSERT_EQ(a.columns.size(), b.columns.size());
  ASSERT_EQ(a.rows(), b.rows());
  EXPECT_EQ(a.ops, b.ops);
  for (size_t i = 0; i < a.columns.size(); ++i) {
    EXPECT_EQ(a.columns[i].type(), b.columns[i].type());
    EXPECT_EQ(a.columns[i].element_type(), b.columns[i].element_type());
    for (size_t r = 0; r < a.rows(); ++r) {
      EXPECT_EQ(a.columns[i].IsUnchanged(r), b.columns[i].IsUnchanged(r));
    }
  }
  auto ra = BundleRows(a), rb = BundleRows(b);
  for (size_t r = 0; r < ra.size(); ++r) {
    for (size_t c = 0; c < ra[r].size(); ++c) {
      ASSERT_EQ(ra[r][c], rb[r][c])
          << "row " << r << " column " << c << " (" << LogicalTypeName(a.columns[c].type())
          << "): " << ra[r][c].ToString() << " vs " << rb[r][c].ToString();
    }
  }
}

TEST(BundleCodec, EveryTypeRoundTripsWithEveryCompression) {
  Bundle zoo = MakeZooBundle(300, 7);
  for (Compression c : {Compression::kNone, Compression::kLz4, Compression::kZstd}) {
    SCOPED_TRACE(std::string(CompressionName(c)));
    ExpectSame(zoo, RoundTrip(zoo, c));
  }
}

TEST(BundleCodec, ExtremesAreBitExact) {
  Bundle b;
  b.columns.emplace_back(LogicalType::kFloat64);
  b.columns.emplace_back(LogicalType::kInt64);
  b.columns.emplace_back(LogicalType::kUInt64);
  b.columns.emplace_back(LogicalType::kText);
  b.columns.emplace_back(LogicalType::kTimestamp);
  b.columns.emplace_back(LogicalType::kDate);
  const double nan_payload = [] {
    uint64_t bits = 0x7ff8000000000abcULL;
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }();
  const double doubles[] = {nan_payload, -0.0, std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::denorm_min()};
  for (double d : doubles) {
    b.columns[0].AppendFloat64(d);
    b.columns[1].AppendInt(std::numeric_limits<int64_t>::min());
    b.columns[2].AppendUInt(std::numeric_limits<uint64_t>::max());
    b.columns[3].AppendBytes("");
    b.columns[4].AppendMicros(*ParseTimestamp("0000-00-00 00:00:00"));
    b.columns[5].AppendDate(kDatePosInfinity);
  }
  b.columns[3].AppendNull();  // empty string vs NULL
  for (size_t i = 0; i < b.columns.size(); ++i) {
    if (i != 3) b.columns[i].AppendNull();
  }
  Bundle d = RoundTrip(b, Compression::kZstd);
  ExpectSame(b, d);
  uint64_t bits;
  double got = d.columns[0].GetFloat64(0);
  std::memcpy(&bits, &got, 8);
  EXPECT_EQ(bits, 0x7ff8000000000abcULL);
  EXPECT_TRUE(std::signbit(d.columns[0].GetFloat64(1)));
  EXPECT_FALSE(d.columns[3].IsNull(0));
  EXPECT_EQ(d.columns[3].GetBytes(0), "");
  EXPECT_TRUE(d.columns[3].IsNull(5));
  EXPECT_EQ(FormatTimestamp(d.columns[4].GetMicros(0)), "0000-00-00 00:00:00");
}

TEST(BundleCodec, CdcOpsAndUnchangedCellsSurvive) {
  Bundle b;
  b.columns.emplace_back(LogicalType::kInt32);
  b.columns.emplace_back(LogicalType::kText);
  for (int i = 0; i < 20; ++i) {
    b.columns[0].AppendInt(i);
    if (i % 3 == 0) {
      b.columns[1].AppendUnchanged();
    } else if (i % 3 == 1) {
      b.columns[1].AppendNull();
    } else {
      b.columns[1].AppendBytes(std::string(static_cast<size_t>(i), 'v'));
    }
    b.ops.push_back(static_cast<RowOp>(1 + i % 4));
  }
  Bundle d = RoundTrip(b, Compression::kLz4);
  ExpectSame(b, d);
  EXPECT_TRUE(d.columns[1].IsUnchanged(0));
  EXPECT_TRUE(d.columns[1].IsNull(0));
  EXPECT_FALSE(d.columns[1].IsUnchanged(1));
  EXPECT_TRUE(d.columns[1].IsNull(1));
}

TEST(BundleCodec, EmptyBundles) {
  Bundle none;
  ExpectSame(none, RoundTrip(none, Compression::kZstd));
  Bundle no_rows;
  no_rows.columns.emplace_back(LogicalType::kText);
  no_rows.columns.emplace_back(LogicalType::kInt8);
  ExpectSame(no_rows, RoundTrip(no_rows, Compression::kLz4));
}

TEST(BundleCodec, CompressesTypicalRows) {
  Bundle b = MakeTypicalBundle(1000, 3);
  std::string raw, lz4, zstd;
  ASSERT_TRUE(EncodeBundle(b, {Compression::kNone, 1, 0}, &raw).ok());
  ASSERT_TRUE(EncodeBundle(b, {Compression::kLz4, 1, 0}, &lz4).ok());
  ASSERT_TRUE(EncodeBundle(b, {Compression::kZstd, 1, 0}, &zstd).ok());
  EXPECT_LT(lz4.size(), raw.size());
  EXPECT_LT(zstd.size(), lz4.size());
  ExpectSame(b, *DecodeBundle(zstd));
}

TEST(BundleCodec, InconsistentBundlesAreRejectedOnEncode) {
  Bundle b;
  b.columns.emplace_back(LogicalType::kInt32);
  b.columns.emplace_back(LogicalType::kInt32);
  b.columns[0].AppendInt(1);
  std::string out;
  Status s = EncodeBundle(b, {}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(BundleCodec, EveryTruncationIsAnError) {
  Bundle b = MakeZooBundle(20, 11);
  for (Compression c : {Compression::kNone, Compression::kLz4, Compression::kZstd}) {
    std::string bytes;
    ASSERT_TRUE(EncodeBundle(b, {c, 1, 0}, &bytes).ok());
    for (size_t n = 0; n < bytes.size(); ++n) {
      auto d = DecodeBundle(std::string_view(bytes).substr(0, n));
      ASSERT_FALSE(d.ok()) << "prefix " << n;
    }
    std::string longer = bytes + "x";
    EXPECT_FALSE(DecodeBundle(longer).ok());
  }
}

TEST(BundleCodec, CorruptBytesNeverCrash) {
  Bundle b = MakeZooBundle(30, 5);
  std::string clean;
  ASSERT_TRUE(EncodeBundle(b, {Compression::kNone, 1, 0}, &clean).ok());
  std::mt19937 rng(42);
  int errors = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = clean;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    auto d = DecodeBundle(bytes);
    if (!d.ok()) {
      ++errors;
      EXPECT_TRUE(d.status().code() == StatusCode::kCorruption ||
                  d.status().code() == StatusCode::kUnsupported ||
                  d.status().code() == StatusCode::kResourceExhausted)
          << d.status().ToString();
    } else {
      // What decodes must encode again to a decodable bundle.
      std::string again;
      ASSERT_TRUE(EncodeBundle(*d, {Compression::kNone, 1, 0}, &again).ok());
      ASSERT_TRUE(DecodeBundle(again).ok());
    }
  }
  EXPECT_GT(errors, 0);  // most flips land in value bytes, where any bits are a value
}

TEST(BundleCodec, HeaderChecks) {
  Bundle b = MakeTypicalBundle(10, 1);
  std::string bytes;
  ASSERT_TRUE(EncodeBundle(b, {}, &bytes).ok());
  std::string bad = bytes;
  bad[0] = 'X';
  EXPECT_EQ(DecodeBundle(bad).status().code(), StatusCode::kCorruption);
  bad = bytes;
  bad[4] = 9;
  EXPECT_EQ(DecodeBundle(bad).status().code(), StatusCode::kUnsupported);
  DecodeLimits tight;
  tight.max_rows = 5;
  EXPECT_EQ(DecodeBundle(bytes, tight).status().code(), StatusCode::kResourceExhausted);
}

// Bundles of PostgreSQL COPY tuples (two columns: int4, text).
Bundle CopyTupleBundle(size_t rows) {
  Bundle b;
  b.pg_copy.type_oids = {23, 25};
  for (size_t r = 0; r < rows; ++r) {
    const std::string text = r % 3 == 0 ? "" : "row " + std::to_string(r);
    const char head[] = {0, 2, 0, 0, 0, 4};
    b.pg_copy.tuples.append(head, 6);
    const uint32_t v = static_cast<uint32_t>(r);
    const char val[] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                        static_cast<char>(v >> 8), static_cast<char>(v)};
    b.pg_copy.tuples.append(val, 4);
    if (r % 5 == 4) {
      b.pg_copy.tuples.append("\xff\xff\xff\xff", 4);  // NULL
    } else {
      const char len[] = {0, 0, 0, static_cast<char>(text.size())};
      b.pg_copy.tuples.append(len, 4);
      b.pg_copy.tuples += text;
    }
  }
  b.pg_copy.rows = rows;
  return b;
}

TEST(BundleCodec, CopyTuplesRoundTripAndAreChecked) {
  Bundle b = CopyTupleBundle(200);
  ASSERT_TRUE(b.is_pg_copy());
  EXPECT_EQ(b.rows(), 200u);
  ASSERT_TRUE(b.Validate().ok()) << b.Validate().ToString();
  for (Compression c : {Compression::kNone, Compression::kLz4, Compression::kZstd}) {
    std::string bytes;
    ASSERT_TRUE(EncodeBundle(b, {c, 1, 0}, &bytes).ok());
    auto d = DecodeBundle(bytes);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_TRUE(d->is_pg_copy());
    EXPECT_TRUE(d->columns.empty());
    EXPECT_EQ(d->rows(), 200u);
    EXPECT_EQ(d->pg_copy.type_oids, b.pg_copy.type_oids);
    EXPECT_EQ(d->pg_copy.tuples, b.pg_copy.tuples);
    for (size_t n = 0; n < bytes.size(); ++n) {
      ASSERT_FALSE(DecodeBundle(std::string_view(bytes).substr(0, n)).ok()) << "prefix " << n;
    }
  }
  // Inconsistent bundles are refused on encode: columns or ops beside the tuples, a wrong
  // field count, a length past the end, a row count that does not match.
  std::string out;
  Bundle bad = b;
  bad.columns.emplace_back(LogicalType::kInt32);
  EXPECT_FALSE(EncodeBundle(bad, {}, &out).ok());
  bad = b;
  bad.ops.assign(200, RowOp::kInsert);
  EXPECT_FALSE(EncodeBundle(bad, {}, &out).ok());
  bad = b;
  bad.pg_copy.tuples[1] = 3;
  EXPECT_EQ(bad.Validate().code(), StatusCode::kCorruption);
  bad = b;
  bad.pg_copy.tuples[6 + 4 + 3] = 100;  // the first text length
  EXPECT_EQ(bad.Validate().code(), StatusCode::kCorruption);
  bad = b;
  bad.pg_copy.rows = 199;
  EXPECT_EQ(bad.Validate().code(), StatusCode::kCorruption);
  EXPECT_TRUE(out.empty());

  // Random corruption of the stored bytes: an error or a bundle that encodes again.
  std::string clean;
  ASSERT_TRUE(EncodeBundle(b, {Compression::kNone, 1, 0}, &clean).ok());
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes = clean;
    bytes[rng() % bytes.size()] = static_cast<char>(rng());
    auto d = DecodeBundle(bytes);
    if (!d.ok()) continue;
    std::string again;
    ASSERT_TRUE(EncodeBundle(*d, {Compression::kNone, 1, 0}, &again).ok());
  }
}

TEST(Arrays, RoundTripAndValidation) {
  ArrayValue a;
  a.element_type = LogicalType::kText;
  a.dims = {{2, 1}, {2, 0}};
  a.elements = {Value::Bytes(LogicalType::kText, "a"), Value::Null(LogicalType::kText),
                Value::Bytes(LogicalType::kText, ""), Value::Bytes(LogicalType::kText, "ü")};
  auto enc = EncodeArray(a);
  ASSERT_TRUE(enc.ok());
  auto dec = DecodeArray(*enc);
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(*dec, a);
  EXPECT_EQ(ArrayToString(a), "[1:2][0:1]={{a,NULL},{\"\",ü}}") << "the empty text is quoted";
  // Quoted as PostgreSQL's array_out quotes: the text reads back into the same elements.
  ArrayValue q;
  q.element_type = LogicalType::kText;
  q.dims = {{7, 1}};
  for (const char* e : {"a,b", "NULL", "null", "q\"t", "back\\slash", "{x}", " lead"}) {
    q.elements.push_back(Value::Bytes(LogicalType::kText, e));
  }
  EXPECT_EQ(ArrayToString(q),
            "{\"a,b\",\"NULL\",\"null\",\"q\\\"t\",\"back\\\\slash\",\"{x}\",\" lead\"}");
  a.elements.pop_back();
  EXPECT_FALSE(EncodeArray(a).ok());
  std::string broken = *enc;
  broken.pop_back();
  EXPECT_FALSE(DecodeArray(broken).ok());
  EXPECT_FALSE(ValidateArray(broken).ok());
}

// A zero-length dimension after a longer one: no elements, and valid (the element count is
// bounded by the input size only once every dimension is known).
TEST(Arrays, ZeroLengthInnerDimensionIsEmpty) {
  ArrayValue a;
  a.element_type = LogicalType::kBool;
  a.dims = {{9, 0}, {0, 16777216}};
  auto enc = EncodeArray(a);
  ASSERT_TRUE(enc.ok()) << enc.status().ToString();
  EXPECT_TRUE(ValidateArray(*enc).ok()) << ValidateArray(*enc).ToString();
  auto dec = DecodeArray(*enc);
  ASSERT_TRUE(dec.ok()) << dec.status().ToString();
  EXPECT_EQ(*dec, a);
}

TEST(Values, BitsUuidsAndText) {
  bool ok;
  EXPECT_EQ(DecodeBits(EncodeBits("101100111"), &ok), "101100111");
  EXPECT_TRUE(ok);
  DecodeBits("\x05\x00\x00\x00", &ok);
  EXPECT_FALSE(ok);
  Uuid u;
  ASSERT_TRUE(ParseUuid("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", &u));
  EXPECT_EQ(UuidToString(u), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
  EXPECT_FALSE(ParseUuid("a0eebc99", &u));
  EXPECT_EQ(Value::Null(LogicalType::kInt32).ToString(), "NULL");
  EXPECT_EQ(Value::Date(*ParseDate("2024-01-02")).ToString(), "2024-01-02");
  EXPECT_NE(Value::Int(LogicalType::kInt32, 1), Value::Int(LogicalType::kInt64, 1));
}

}  // namespace
}  // namespace dbs

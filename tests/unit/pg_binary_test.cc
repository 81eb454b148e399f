#include "postgres/pg_binary.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace dbs::pg {
namespace {

std::string RoundTrip(const std::string& text) {
  std::string bin;
  Status s = AppendNumericBinary(text, &bin);
  EXPECT_TRUE(s.ok()) << text << ": " << s.ToString();
  std::string out;
  s = AppendNumericText(bin, &out);
  EXPECT_TRUE(s.ok()) << text << ": " << s.ToString();
  return out;
}

TEST(PgNumeric, CanonicalTextRoundTripsExactly) {
  for (const char* t :
       {"0", "0.00", "1", "-1", "1.50", "12345678.000123", "0.0001", "-0.00001234", "10000",
        "100000000", "99999999999999999999.99999", "NaN", "Infinity", "-Infinity", "9999", "0.1",
        "123456789012345678901234567890.123456789012345678901234567890"}) {
    EXPECT_EQ(RoundTrip(t), t);
  }
}

TEST(PgNumeric, AcceptsSignsExponentsAndLeadingZeros) {
  EXPECT_EQ(RoundTrip("+3"), "3");
  EXPECT_EQ(RoundTrip("007.5"), "7.5");
  EXPECT_EQ(RoundTrip("1e5"), "100000");
  EXPECT_EQ(RoundTrip("1.5e-3"), "0.0015");
  EXPECT_EQ(RoundTrip("1.50E+1"), "15.0");
  EXPECT_EQ(RoundTrip(".5"), "0.5");
  EXPECT_EQ(RoundTrip("-0"), "0");
  EXPECT_EQ(RoundTrip("inf"), "Infinity");
  EXPECT_EQ(RoundTrip("-infinity"), "-Infinity");
  EXPECT_EQ(RoundTrip("nan"), "NaN");
}

TEST(PgNumeric, BinaryLayoutMatchesPostgres) {
  std::string bin;
  ASSERT_TRUE(AppendNumericBinary("1.50", &bin).ok());
  // ndigits 2, weight 0, sign +, dscale 2, digits 0001 5000.
  const unsigned char want[] = {0, 2, 0, 0, 0, 0, 0, 2, 0, 1, 0x13, 0x88};
  ASSERT_EQ(bin.size(), sizeof(want));
  EXPECT_EQ(0, std::memcmp(bin.data(), want, sizeof(want)));
  bin.clear();
  ASSERT_TRUE(AppendNumericBinary("-0.00001234", &bin).ok());
  // 0.0000 1234 -> weight -2, digits {1234}, sign -, dscale 8.
  const unsigned char want2[] = {0, 1, 0xff, 0xfe, 0x40, 0, 0, 8, 0x04, 0xd2};
  ASSERT_EQ(bin.size(), sizeof(want2));
  EXPECT_EQ(0, std::memcmp(bin.data(), want2, sizeof(want2)));
}

TEST(PgNumeric, RejectsMalformedText) {
  for (const char* t :
       {"", "-", ".", "1.2.3", "abc", "1e", "1e99999999", "1 ", "0x10", "1e200000", "1e-20000"}) {
    std::string bin;
    EXPECT_FALSE(AppendNumericBinary(t, &bin).ok()) << t;
  }
}

TEST(PgNumeric, RejectsCorruptBinary) {
  std::string out;
  EXPECT_FALSE(AppendNumericText(std::string("\0\1\0\0", 4), &out).ok());
  // ndigits 1 but no digit bytes
  EXPECT_FALSE(AppendNumericText(std::string("\0\1\0\0\0\0\0\0", 8), &out).ok());
  // digit 10000
  EXPECT_FALSE(AppendNumericText(std::string("\0\1\0\0\0\0\0\0\x27\x10", 10), &out).ok());
  // bad sign
  EXPECT_FALSE(AppendNumericText(std::string("\0\0\0\0\x12\0\0\0", 8), &out).ok());
}

TEST(PgNumeric, IntegersEncodeExactly) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{9999}, uint64_t{10000}, uint64_t{100000000},
                     std::numeric_limits<uint64_t>::max()}) {
    std::string bin, out;
    AppendNumericFromUInt64(v, false, &bin);
    ASSERT_TRUE(AppendNumericText(bin, &out).ok());
    EXPECT_EQ(out, std::to_string(v));
  }
  for (int64_t v : {std::numeric_limits<int64_t>::min(), int64_t{-1}, int64_t{-10000},
                    std::numeric_limits<int64_t>::max()}) {
    std::string bin, out;
    AppendNumericFromInt64(v, &bin);
    ASSERT_TRUE(AppendNumericText(bin, &out).ok());
    EXPECT_EQ(out, std::to_string(v));
  }
}

}  // namespace
}  // namespace dbs::pg

#include "core/temporal.h"

#include <gtest/gtest.h>

namespace dbs {
namespace {

TEST(Temporal, CivilDaysRoundTripOverAWideRange) {
  for (int64_t d = -3'000'000; d <= 3'000'000; d += 997) {
    int64_t y;
    unsigned m, dd;
    CivilFromDays(d, &y, &m, &dd);
    ASSERT_TRUE(IsValidCivilDate(y, m, dd));
    ASSERT_EQ(DaysFromCivil(y, m, dd), d);
  }
  EXPECT_EQ(DaysFromCivil(1970, 1, 1), 0);
  EXPECT_EQ(DaysFromCivil(2000, 1, 1), 10957);
  EXPECT_EQ(DaysFromCivil(1969, 12, 31), -1);
}

TEST(Temporal, DatesFormatAndParseLikePostgres) {
  const char* cases[] = {"2024-02-29",    "1970-01-01",    "0001-01-01", "0044-03-15 BC",
                         "4713-11-24 BC", "5874897-12-31", "9999-12-31", "infinity",
                         "-infinity",     "0000-00-00",    "2020-00-15", "2020-05-00"};
  for (const char* c : cases) {
    auto d = ParseDate(c);
    ASSERT_TRUE(d.ok()) << c << ": " << d.status().ToString();
    EXPECT_EQ(FormatDate(*d), c);
  }
  EXPECT_EQ(DateKind(*ParseDate("0000-00-00")), TemporalKind::kZeroDate);
  EXPECT_EQ(DateKind(*ParseDate("infinity")), TemporalKind::kPosInfinity);
  EXPECT_FALSE(ParseDate("2023-02-29").ok());
  EXPECT_FALSE(ParseDate("2023-13-01").ok());
  EXPECT_FALSE(ParseDate("yesterday").ok());
  EXPECT_FALSE(ParseDate("2023-01-01x").ok());
}

TEST(Temporal, ZeroDatesNeverCollideWithRealDates) {
  int32_t min_real = *ParseDate("4713-11-24 BC");
  for (const char* z : {"0000-00-00", "9999-12-00", "9999-00-31"}) {
    int32_t e = *ParseDate(z);
    EXPECT_LT(e, min_real);
    EXPECT_GT(e, kDateNegInfinity);
  }
}

TEST(Temporal, TimestampsKeepMicrosecondsAndSpecials) {
  const char* cases[] = {"2024-02-29 13:45:00",
                         "2024-02-29 13:45:00.123456",
                         "1969-12-31 23:59:59.999999",
                         "0001-01-01 00:00:00",
                         "0044-03-15 12:00:00 BC",
                         "294276-12-31 23:59:59.999999",
                         "0000-00-00 00:00:00",
                         "2021-00-00 10:11:12.5",
                         "infinity",
                         "-infinity"};
  for (const char* c : cases) {
    auto t = ParseTimestamp(c);
    ASSERT_TRUE(t.ok()) << c << ": " << t.status().ToString();
    EXPECT_EQ(FormatTimestamp(*t), c);
  }
  EXPECT_EQ(*ParseTimestamp("2000-01-01 00:00:01"), 1'000'000);
  EXPECT_EQ(*ParseTimestamp("1999-12-31T23:59:59.5"), -500'000);
  EXPECT_EQ(*ParseTimestamp("1970-01-01 00:00:00"), -kUnixToEpochMicros);
  EXPECT_EQ(*ParseDate("2000-01-02"), 1);
  EXPECT_FALSE(ParseTimestamp("2024-01-01 24:00:00").ok());
  EXPECT_FALSE(ParseTimestamp("2024-01-01 10:00:00.1234567").ok());  // no silent rounding
}

TEST(Temporal, TimestampTzNormalizesToUtc) {
  EXPECT_EQ(*ParseTimestampTz("2000-01-01 02:00:00+02"), 0);
  EXPECT_EQ(*ParseTimestampTz("2000-01-01 00:00:00-05:30"), 19'800'000'000);
  EXPECT_EQ(*ParseTimestampTz("2000-01-01T00:00:00Z"), 0);
  EXPECT_EQ(FormatTimestampTz(0), "2000-01-01 00:00:00+00");
  EXPECT_EQ(*ParseTimestampTz("infinity"), kTimestampPosInfinity);
}

TEST(Temporal, TimesSpanMysqlRange) {
  EXPECT_EQ(*ParseTime("-838:59:59"), -(838LL * 3600 + 59 * 60 + 59) * 1'000'000);
  EXPECT_EQ(FormatTime(*ParseTime("-838:59:59.000001")), "-838:59:59.000001");
  EXPECT_EQ(FormatTime(*ParseTime("24:00:00")), "24:00:00");
  EXPECT_EQ(FormatTimeTz(*ParseTime("13:45:00.25"), -(3 * 3600 + 1800)), "13:45:00.25-03:30");
  EXPECT_FALSE(ParseTime("12:61:00").ok());
}

}  // namespace
}  // namespace dbs

namespace dbs {
namespace {

// PostgreSQL's own interval output (IntervalStyle postgres), as `SELECT 'x'::interval` prints.
TEST(PgIntervalText, MatchesPostgresOutput) {
  const int64_t h = 3600LL * 1000000;
  EXPECT_EQ(FormatPgInterval(0, 0, 0), "00:00:00");
  EXPECT_EQ(FormatPgInterval(14, 3, 4 * h + 5 * 60000000LL + 6500000),
            "1 year 2 mons 3 days 04:05:06.5");
  EXPECT_EQ(FormatPgInterval(-14, 3, -(4 * h + 5 * 60000000LL + 6000000)),
            "-1 years -2 mons +3 days -04:05:06");
  EXPECT_EQ(FormatPgInterval(0, -1, 1000000), "-1 days +00:00:01");
  EXPECT_EQ(FormatPgInterval(1, 0, -1000000), "1 mon -00:00:01");
  EXPECT_EQ(FormatPgInterval(0, -3, 0), "-3 days");
  EXPECT_EQ(FormatPgInterval(12, 1, 0), "1 year 1 day");
  EXPECT_EQ(FormatPgInterval(-2136000000, 0, 0), "-178000000 years");
  EXPECT_EQ(FormatPgInterval(0, 0, INT64_MAX), "2562047788:00:54.775807");
  EXPECT_EQ(FormatPgInterval(0, 0, INT64_MIN), "-2562047788:00:54.775808");
  EXPECT_EQ(FormatPgInterval(0, 0, 1), "00:00:00.000001");
}

}  // namespace
}  // namespace dbs

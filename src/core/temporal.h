// Date and time encodings shared by every source and sink.
//
// The epoch is 2000-01-01, PostgreSQL's: its whole range (4713 BC .. 294276 AD for timestamps)
// fits, and its binary COPY format needs no conversion.
// DATE        i32 days since 2000-01-01 (proleptic Gregorian, astronomical years: 0 is 1 BC).
//             INT32_MAX / INT32_MIN are +infinity / -infinity (PostgreSQL).
//             MySQL "zero" dates with a zero month or day ('0000-00-00', '2020-00-15') are kept
//             exactly in a reserved range just above INT32_MIN, far below any real date.
// TIMESTAMP   i64 microseconds since 2000-01-01 00:00:00 (TIMESTAMPTZ: UTC). INT64_MAX /
//             INT64_MIN are ±infinity; MySQL zero datetimes use a reserved range above INT64_MIN.
// TIME        i64 microseconds, signed (MySQL TIME is an interval up to ±838:59:59.999999;
//             PostgreSQL allows 24:00:00).
//
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "core/result.h"

namespace dbs {

inline constexpr int32_t kDatePosInfinity = std::numeric_limits<int32_t>::max();
inline constexpr int32_t kDateNegInfinity = std::numeric_limits<int32_t>::min();
inline constexpr int64_t kTimestampPosInfinity = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kTimestampNegInfinity = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kMicrosPerSecond = 1'000'000;
inline constexpr int64_t kMicrosPerDay = 86'400LL * kMicrosPerSecond;
// Days from 1970-01-01 (Unix epoch) to 2000-01-01 (our epoch).
inline constexpr int64_t kUnixToEpochDays = 10'957;
inline constexpr int64_t kUnixToEpochMicros = kUnixToEpochDays * kMicrosPerDay;

// A calendar date or date-time as written, which may be a MySQL zero date.
struct CivilDateTime {
  int32_t year = 1970;  // astronomical: 0 is 1 BC, -1 is 2 BC
  uint8_t month = 1;    // 1..12, or 0 in a MySQL zero date
  uint8_t day = 1;      // 1..31, or 0 in a MySQL zero date
  uint8_t hour = 0;
  uint8_t minute = 0;
  uint8_t second = 0;
  uint32_t micros = 0;  // 0..999999
  friend bool operator==(const CivilDateTime&, const CivilDateTime&) = default;
};

enum class TemporalKind : uint8_t { kFinite, kPosInfinity, kNegInfinity, kZeroDate };

// Days since 1970-01-01 (Unix) of a valid proleptic Gregorian date.
int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day);
// Inverse of DaysFromCivil.
void CivilFromDays(int64_t days, int64_t* year, unsigned* month, unsigned* day);
bool IsValidCivilDate(int64_t year, unsigned month, unsigned day);

// Encodes a date. Zero dates (month or day 0, year 0..9999) are accepted; anything else
// that is not a real calendar date is InvalidArgument.
Result<int32_t> EncodeDate(const CivilDateTime& c);
TemporalKind DateKind(int32_t encoded);
// The civil date of a finite or zero date (hour..micros are zero).
CivilDateTime DecodeDate(int32_t encoded);

Result<int64_t> EncodeTimestamp(const CivilDateTime& c);
TemporalKind TimestampKind(int64_t encoded);
CivilDateTime DecodeTimestamp(int64_t encoded);

// Text forms, as PostgreSQL and MySQL print them:
//  date       "2024-02-29", "0044-03-15 BC", "infinity", "-infinity", "0000-00-00"
//  timestamp  "2024-02-29 13:45:00" plus ".ffffff" trimmed of trailing zeros when non-zero
//  time       "-838:59:59.5", "24:00:00"
//  timetz     "13:45:00+02", "13:45:00.25-03:30"
std::string FormatDate(int32_t encoded);
std::string FormatTimestamp(int64_t encoded);
// Timestamp with zone, printed in UTC with a "+00" suffix.
std::string FormatTimestampTz(int64_t encoded);
std::string FormatTime(int64_t micros);
std::string FormatTimeTz(int64_t micros, int32_t offset_seconds);
// An interval as PostgreSQL prints it with its default IntervalStyle (postgres):
// "1 year 2 mons -3 days +04:05:06.5", "00:00:00", "-1 days -00:00:01". PostgreSQL reads this
// form back as the same interval, whatever its IntervalStyle.
std::string FormatPgInterval(int32_t months, int32_t days, int64_t micros);

// Parsers accept the forms above (ISO 'T' separator too, an optional " BC" suffix and, for
// timestamptz, a zone offset like "+02", "+05:30", "Z"). Errors name the text.
Result<int32_t> ParseDate(std::string_view text);
Result<int64_t> ParseTimestamp(std::string_view text);
Result<int64_t> ParseTimestampTz(std::string_view text);
Result<int64_t> ParseTime(std::string_view text);

}  // namespace dbs

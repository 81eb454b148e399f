// Logical types: the database-independent types every value travels as.
//
// Each logical type has one in-memory and on-wire representation (see docs/bundle-format.md).
// Sources map their native types onto these losslessly; sinks map them back
// (src/typemap/). The numeric values of the enum are part of the wire format: append only.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace dbs {

enum class LogicalType : uint8_t {
  kNone = 0,  // "no element type" for non-array columns
  kBool = 1,
  kInt8 = 2,
  kInt16 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kUInt8 = 6,
  kUInt16 = 7,
  kUInt32 = 8,
  kUInt64 = 9,
  kFloat32 = 10,
  kFloat64 = 11,
  kDecimal = 12,    // exact decimal as canonical text: [-]digits[.digits], NaN, Infinity, -Infinity
  kText = 13,       // UTF-8 text
  kBytes = 14,      // arbitrary bytes
  kJson = 15,       // JSON document as UTF-8 text
  kUuid = 16,       // 16 bytes, RFC 4122 byte order
  kEnum = 17,       // the label as UTF-8 text
  kSet = 18,        // MySQL SET: labels joined with ','
  kBit = 19,        // bit string: u32 LE bit count, then bits packed MSB first
  kDate = 20,       // i32 days since 2000-01-01; see temporal.h for infinities and zero dates
  kTime = 21,       // i64 microseconds (signed: MySQL TIME spans -838:59:59..838:59:59)
  kTimeTz = 22,     // i64 microseconds of day + i32 zone offset, seconds east of UTC
  kTimestamp = 23,  // i64 microseconds since 2000-01-01 00:00:00, no zone
  kTimestampTz = 24,  // i64 microseconds since 2000-01-01 00:00:00 UTC
  kInterval = 25,     // i32 months, i32 days, i64 microseconds
  kGeometry = 26,     // u32 LE SRID followed by OGC WKB
  kArray = 27,        // nested encoding, see array.h; the column states the element type
};

inline constexpr uint8_t kMaxLogicalType = 27;

std::string_view LogicalTypeName(LogicalType t);
std::optional<LogicalType> LogicalTypeFromName(std::string_view name);

// Byte width of a fixed-width type's value, or 0 for variable-length types.
constexpr uint32_t FixedWidth(LogicalType t) {
  switch (t) {
    case LogicalType::kBool:
    case LogicalType::kInt8:
    case LogicalType::kUInt8:
      return 1;
    case LogicalType::kInt16:
    case LogicalType::kUInt16:
      return 2;
    case LogicalType::kInt32:
    case LogicalType::kUInt32:
    case LogicalType::kFloat32:
    case LogicalType::kDate:
      return 4;
    case LogicalType::kInt64:
    case LogicalType::kUInt64:
    case LogicalType::kFloat64:
    case LogicalType::kTime:
    case LogicalType::kTimestamp:
    case LogicalType::kTimestampTz:
      return 8;
    case LogicalType::kTimeTz:
      return 12;
    case LogicalType::kInterval:
    case LogicalType::kUuid:
      return 16;
    default:
      return 0;
  }
}

constexpr bool IsSignedInt(LogicalType t) {
  return t == LogicalType::kInt8 || t == LogicalType::kInt16 || t == LogicalType::kInt32 ||
         t == LogicalType::kInt64;
}
constexpr bool IsUnsignedInt(LogicalType t) {
  return t == LogicalType::kUInt8 || t == LogicalType::kUInt16 || t == LogicalType::kUInt32 ||
         t == LogicalType::kUInt64;
}
constexpr bool IsValidLogicalType(uint8_t v) { return v >= 1 && v <= kMaxLogicalType; }
// Types held as bytes in a column's heap (everything that is not fixed-width).
constexpr bool IsVarLen(LogicalType t) { return t != LogicalType::kNone && FixedWidth(t) == 0; }

// Fixed-layout helper structs for the multi-field fixed-width types.
struct TimeTz {
  int64_t micros = 0;          // microseconds since midnight
  int32_t offset_seconds = 0;  // zone offset, seconds east of UTC (+02:00 is 7200)
  friend bool operator==(const TimeTz&, const TimeTz&) = default;
};

struct Interval {
  int32_t months = 0;
  int32_t days = 0;
  int64_t micros = 0;
  friend bool operator==(const Interval&, const Interval&) = default;
};

struct Uuid {
  uint8_t bytes[16] = {};
  friend bool operator==(const Uuid&, const Uuid&) = default;
};

}  // namespace dbs

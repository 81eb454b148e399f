// Value: one typed, possibly-null cell, for row-at-a-time code (CDC apply, checksums, tests).
// Bulk paths use ColumnVector (column.h) directly and never build Values per cell.
//
// The payload held for each logical type:
//   bool                          bool
//   int8..int64                   int64_t
//   uint8..uint64                 uint64_t
//   float32 / float64             float / double (bit patterns, incl. NaN payloads, preserved)
//   date                          int64_t holding the i32 encoding of temporal.h
//   time, timestamp, timestamptz  int64_t microseconds (temporal.h)
//   timetz / interval / uuid      TimeTz / Interval / Uuid
//   every variable-length type    std::string holding the type's bytes (types.h)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "core/types.h"

namespace dbs {

class Value {
 public:
  Value() = default;  // a NULL of type kNone

  static Value Null(LogicalType t) { return Value(t, std::monostate{}); }
  static Value Bool(bool b) { return Value(LogicalType::kBool, b); }
  static Value Int(LogicalType t, int64_t v) { return Value(t, v); }
  static Value UInt(LogicalType t, uint64_t v) { return Value(t, v); }
  static Value Float32(float v) { return Value(LogicalType::kFloat32, v); }
  static Value Float64(double v) { return Value(LogicalType::kFloat64, v); }
  static Value Date(int32_t encoded) { return Value(LogicalType::kDate, int64_t{encoded}); }
  // For kTime, kTimestamp and kTimestampTz.
  static Value Micros(LogicalType t, int64_t micros) { return Value(t, micros); }
  static Value TimeTzValue(TimeTz v) { return Value(LogicalType::kTimeTz, v); }
  static Value IntervalValue(Interval v) { return Value(LogicalType::kInterval, v); }
  static Value UuidValue(Uuid v) { return Value(LogicalType::kUuid, v); }
  // For every variable-length type (text, bytes, decimal, json, enum, set, bit, geometry, array).
  static Value Bytes(LogicalType t, std::string bytes) { return Value(t, std::move(bytes)); }

  LogicalType type() const { return type_; }
  bool is_null() const { return v_.index() == 0; }

  bool AsBool() const { return std::get<bool>(v_); }
  int64_t AsInt() const { return std::get<int64_t>(v_); }
  uint64_t AsUInt() const { return std::get<uint64_t>(v_); }
  float AsFloat32() const { return std::get<float>(v_); }
  double AsFloat64() const { return std::get<double>(v_); }
  int32_t AsDate() const { return static_cast<int32_t>(std::get<int64_t>(v_)); }
  int64_t AsMicros() const { return std::get<int64_t>(v_); }
  TimeTz AsTimeTz() const { return std::get<TimeTz>(v_); }
  Interval AsInterval() const { return std::get<Interval>(v_); }
  const Uuid& AsUuid() const { return std::get<Uuid>(v_); }
  const std::string& AsBytes() const { return std::get<std::string>(v_); }

  // A readable form: the SQL-ish text of the value, "NULL" for null. Bytes and WKB print as
  // \x-hex; bit strings as 0/1 digits.
  std::string ToString() const;

  // Exact equality: same type, same nullness, same bits (NaN equals NaN with the same bits).
  friend bool operator==(const Value& a, const Value& b);

 private:
  using Payload = std::variant<std::monostate, bool, int64_t, uint64_t, float, double, std::string,
                               TimeTz, Interval, Uuid>;
  template <typename T>
  Value(LogicalType t, T v) : type_(t), v_(std::move(v)) {}

  LogicalType type_ = LogicalType::kNone;
  Payload v_;
};

// Bit strings (kBit): u32 LE bit count, then the bits packed MSB first.
std::string EncodeBits(std::string_view digits01);  // "10110" -> encoded bytes
// Returns the '0'/'1' digits, or an empty string with *ok=false for malformed input.
std::string DecodeBits(std::string_view encoded, bool* ok);

// Geometry (kGeometry): u32 LE SRID, then OGC WKB.
std::string EncodeGeometry(uint32_t srid, std::string_view wkb);

std::string HexEncode(std::string_view bytes);
std::string UuidToString(const Uuid& u);
// Accepts the 8-4-4-4-12 form, with or without braces and hyphens.
bool ParseUuid(std::string_view text, Uuid* out);

}  // namespace dbs

// Decoding PostgreSQL binary values (the types' *send formats, as binary COPY delivers them)
// straight into ColumnVectors, in the logical types' encodings (docs/bundle-format.md).
//
// The reader decides per column which binary form the server sends (FieldPlan, chosen from the
// column's logical type and the wire type); DecodeField then only checks lengths and converts:
// big-endian to little-endian, numeric to canonical text, timetz zone west -> east, interval
// field order, jsonb's version byte, bit-string headers, and PostgreSQL arrays to our array
// encoding. Everything else (date/timestamp epochs and infinities) maps 1:1.
//
// Pure and thread-safe. Bytes come from the server, so every length is checked: malformed input
// gives Corruption, never a read past the buffer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/bundle.h"
#include "core/column.h"
#include "core/result.h"
#include "core/schema.h"
#include "core/status.h"
#include "core/types.h"

namespace dbs::pg {

// The binary wire forms the decoder understands.
enum class Wire : uint8_t {
  kBool,       // bool
  kInt2,       // int2
  kInt4,       // int4
  kInt8,       // int8
  kUInt32,     // oid, xid, cid: 4 bytes unsigned
  kUInt64,     // xid8: 8 bytes unsigned
  kFloat4,     // float4
  kFloat8,     // float8
  kNumeric,    // numeric
  kRaw,        // bytes as they are: text types, bytea, json, enum labels
  kBpchar,     // char(n): the text without its pad spaces, which PostgreSQL ignores too
  kJsonb,      // version byte 1, then the text
  kUuid,       // 16 bytes
  kBit,        // bit/varbit: i32 bit count, then the bits
  kDate,       // i32 days since 2000-01-01
  kTime,       // i64 microseconds
  kTimeTz,     // i64 microseconds, i32 zone offset in seconds WEST of UTC
  kTimestamp,  // i64 microseconds since 2000-01-01 (timestamp and timestamptz)
  kInterval,   // i64 microseconds, i32 days, i32 months
  kGeometry,   // bytea holding i32 SRID (big-endian) then WKB (the reader's SQL builds it)
  kArray,      // a PostgreSQL binary array whose elements have `element_wire`
};

struct FieldPlan {
  LogicalType type = LogicalType::kText;  // the column's logical type
  Wire wire = Wire::kRaw;
  LogicalType element_type = LogicalType::kNone;  // arrays
  Wire element_wire = Wire::kRaw;                 // arrays
};

// Buffers reused between DecodeField calls so decoding does not allocate per value.
struct DecodeScratch {
  std::string value;    // a converted value (numeric text, bit string, geometry, array)
  std::string element;  // a converted array element
};

// Appends one non-NULL field to `col` (whose type is plan.type). On error nothing was appended.
Status DecodeField(const FieldPlan& plan, std::string_view bytes, ColumnVector* col,
                   DecodeScratch* scratch);

// Whether `wire` produces values of logical type `type` (the pairs DecodeField supports).
bool WireFits(Wire wire, LogicalType type);

// The wire form of a built-in scalar type (an OID below 10000, the same on every server) that
// binary COPY sends as is; nullopt for other types, arrays and user-defined types.
std::optional<Wire> BuiltinWire(uint32_t oid);

// Turns a bundle of COPY tuples (Bundle::pg_copy) into a bundle of columns of `columns`' logical
// types: what a sink does when its target cannot take the tuples as they are. InvalidArgument
// when the column counts differ or a type does not fit; Corruption for malformed tuples.
Result<Bundle> DecodeCopyRows(const PgCopyRows& rows, const std::vector<Column>& columns);

}  // namespace dbs::pg

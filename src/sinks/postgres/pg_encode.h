// Encoding bundle values (docs/bundle-format.md) into PostgreSQL's binary COPY format, i.e. the
// *recv input of the TARGET column's type.
//
// ChooseEncoder pairs a logical type with the target column's (domain-resolved) type. Pairs
// with a direct binary encoding:
//   bool                      <- bool
//   int2 / int4 / int8        <- any integer (range-checked: out-of-range is an error)
//   oid, xid, cid / xid8      <- any integer (range-checked)
//   numeric                   <- any integer, decimal text (NaN, ±Infinity included)
//   float4 / float8           <- float32, float64
//   text, varchar, bpchar, name, citext, enum types  <- text, enum, set (and json for text)
//   bytea                     <- bytes; geometry (its wire bytes: u32 LE SRID + WKB, which
//                                write back to MySQL unchanged; docs/type-mapping.md)
//   json / jsonb              <- json (jsonb gets its version byte)
//   uuid <- uuid; bit, varbit <- bit (i32 big-endian bit count + bytes)
//   date <- date; time <- time; interval <- interval, time (MySQL TIME beyond 24h)
//   timetz <- timetz (zone negated: PostgreSQL counts seconds west of UTC)
//   timestamp, timestamptz    <- timestamp, timestamptz (1:1, same epoch and infinities)
//   PostGIS geometry          <- geometry (sent as EWKB)
//   arrays of any of these    <- arrays (PostgreSQL binary arrays with the element type OID)
// Anything else (inet, cidr, macaddr, xml, money, ranges, composites, a text value into a
// uuid column, ...) has no direct encoding: the sink stages such columns as StageType() and
// casts them in SQL (see postgres_sink.h).
//
// MySQL zero dates follow the ZeroDatePolicy: NULL, an error, or -infinity.
// Pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/stream_config.h"
#include "core/column.h"
#include "postgres/pg_types.h"

namespace dbs::pg {

enum class Enc : uint8_t {
  kBool,
  kInt2,
  kInt4,
  kInt8,
  kUInt32,
  kUInt64,
  kIntNumeric,
  kFloat4,
  kFloat8,
  kDecimalNumeric,
  kRaw,
  kJsonb,
  kUuid,
  kBit,
  kDate,
  kTime,
  kTimeInterval,
  kTimeTz,
  kTimestamp,
  kInterval,
  kGeometryEwkb,
  kArray,
};

struct Encoder {
  Enc enc = Enc::kRaw;
  LogicalType type = LogicalType::kText;          // the values' logical type
  LogicalType element_type = LogicalType::kNone;  // arrays
  Enc element_enc = Enc::kRaw;                    // arrays
  uint32_t element_oid = 0;                       // arrays: the target's element type OID
};

// The direct binary encoding of `type` (arrays: of `element_type`) into a column of type
// `target` (a non-domain type; for arrays its element is looked up in `types`), or nullopt.
std::optional<Encoder> ChooseEncoder(LogicalType type, LogicalType element_type,
                                     const TypeInfo& target, const TypeCache& types);

// The PostgreSQL type a value of `type` is staged as when its target column has no direct
// encoding; a cast from it to the target type then does the conversion in SQL.
std::string StageType(LogicalType type, LogicalType element_type);

// Appends one cell of `col` (row `row`) as a binary COPY field: i32 length and bytes, or -1
// for NULL. Errors (a value the target type cannot hold, a zero date under kError, malformed
// bytes) are InvalidArgument/Corruption with a short reason; the caller adds table and column.
Status EncodeCell(const Encoder& e, const ColumnVector& col, size_t row, ZeroDatePolicy zero_date,
                  std::string* out);

}  // namespace dbs::pg

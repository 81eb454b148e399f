// Decoding MySQL text-protocol cells straight into ColumnVectors.
//
// The reader selects every column so that its text is exact (see mysql_source.h for how FLOAT
// columns are selected), and hands each cell's bytes (pointer + length from
// mysql_fetch_lengths) to DecodeCell. Nothing here allocates per cell: integers are parsed by
// hand, floats with std::from_chars, dates with the temporal.h parsers, bit strings through a
// small stack buffer.
//
// All functions are pure and thread-safe. The bytes come from the server, so they are checked:
// a cell that does not parse is InvalidArgument naming the text (the caller adds the table and
// column), never undefined behaviour.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/column.h"
#include "core/result.h"
#include "core/schema.h"

namespace dbs::mysql {

// How one selected column's text becomes a cell of its logical type.
enum class CellKind : uint8_t {
  kSigned,     // [-]digits -> int8..int64 (range-checked against the column's width)
  kUnsigned,   // digits -> uint8..uint64 (range-checked)
  kBool,       // 0 / 1 (any non-zero integer is true)
  kFloat32,    // shortest round-trip text of the value widened to double -> float (exact)
  kFloat64,    // shortest round-trip double text -> double (exact)
  kVarBytes,   // decimal, text, bytes, json, enum, set: the bytes as they are
  kBit,        // BIT(n): ceil(n/8) big-endian bytes -> u32 bit count + bits MSB first
  kDate,       // YYYY-MM-DD, zero dates kept
  kTimestamp,  // YYYY-MM-DD hh:mm:ss[.ffffff] (kTimestamp and, in UTC, kTimestampTz)
  kTime,       // [-]h:mm:ss[.ffffff], up to +-838:59:59.999999
  kUuid,       // MariaDB UUID text
  kGeometry,   // MySQL's internal geometry value: u32 LE SRID + WKB, kept as it is
};

struct CellDecoder {
  CellKind kind = CellKind::kVarBytes;
  LogicalType type = LogicalType::kText;
  uint32_t bits = 0;  // kBit: the column's bit count (1..64)
};

// The decoder for a column of the schema model. Unsupported (naming the column and type) for
// logical types a MySQL server never produces (interval, timetz, arrays).
Result<CellDecoder> DecoderFor(const Column& column);

// Appends the cell `text` to *out (whose type is decoder.type).
Status DecodeCell(const CellDecoder& decoder, std::string_view text, ColumnVector* out);

// Whether v fits integer type t (int8..int32, uint8..uint32; wider types always fit).
bool FitsSigned(LogicalType t, int64_t v);
bool FitsUnsigned(LogicalType t, uint64_t v);

// Exposed for tests: strict decimal integer parsing with overflow detection.
bool ParseInt64(std::string_view text, int64_t* out);
bool ParseUInt64(std::string_view text, uint64_t* out);

}  // namespace dbs::mysql

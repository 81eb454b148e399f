// Decoding PostgreSQL text output (the types' *out functions, as pgoutput sends values when
// the stream is not in binary mode) into ColumnVectors, in the logical types' encodings
// (docs/bundle-format.md) — the same values the binary snapshot reader (pg_decode.h) produces.
//
// The session must use the settings of pg_client's kSessionSettingsSql (ISO dates, UTC,
// extra_float_digits = 3, hex bytea) with IntervalStyle = iso_8601.
//
// Pure and thread-safe. Text comes from the server: malformed input gives Corruption (or
// InvalidArgument from the temporal parsers), never a read past the buffer.
#pragma once

#include <string>
#include <string_view>

#include "core/column.h"
#include "core/status.h"
#include "core/types.h"

namespace dbs::pg {

struct TextPlan {
  LogicalType type = LogicalType::kText;
  LogicalType element_type = LogicalType::kNone;  // arrays
  bool bpchar = false;  // char(n) (or an array of it): pad spaces are dropped
  bool money = false;   // money (or an array of it): "$1,234.56" -> decimal 1234.56
};

// Appends one non-NULL value to `col` (whose type is plan.type). On error nothing was appended.
Status DecodeTextField(const TextPlan& plan, std::string_view text, ColumnVector* col);

// Whether text values of `type` can be decoded (everything but geometry).
bool TextDecodable(LogicalType type, LogicalType element_type);

}  // namespace dbs::pg

// Turning bundle cells into the text a MySQL target takes, for LOAD DATA LOCAL INFILE (streamed
// from memory) and, when the server has local_infile off, for multi-row INSERT statements.
//
// Per target column the writer picks a ColumnWriter (WriterFor): which text to produce from the
// source cell, and an SQL expression that turns that text into the column's value ("?" stands
// for the text: a user variable in LOAD DATA's SET clause, a quoted literal in an INSERT):
//   numbers           shortest exact text (floats: the shortest text that reads back as the same
//                     IEEE value; NaN and infinities are rejected: MySQL cannot store them)
//   YEAR              zero-padded to four digits ('0' would mean 2000, '0000' is year 0)
//   text, enum, set,  the bytes as they are (the file's character set is utf8mb4, so the server
//   json, decimal     converts to the column's character set and rejects invalid UTF-8)
//   binary/blob       hex digits, UNHEX(?)
//   BIT(n)            '0'/'1' digits, CAST(CONV(?, 2, 10) AS UNSIGNED)
//   geometry          hex of MySQL's internal value (u32 LE SRID + WKB = the kGeometry bytes),
//                     UNHEX(?)
//   date/time types   'YYYY-MM-DD[ hh:mm:ss[.ffffff]]', '[-]h:mm:ss[.ffffff]'; zero dates as
//                     they are (the session's sql_mode accepts them); timestamptz in UTC
//   arrays into JSON  a JSON array (NULL -> null, nested arrays for several dimensions)
//   anything else into a text column: Value::ToString() — the cross-type contract of
//                     verify/checksum.h (interval, timetz, uuid, inet, bool as true/false, ...)
//
// Pure functions, thread-safe. Errors are InvalidArgument naming the column; the caller adds
// the table and row.
#pragma once

#include <string>
#include <string_view>

#include "core/column.h"
#include "core/result.h"
#include "core/schema.h"
#include "core/temporal.h"

namespace dbs::mysql {

enum class TextKind : uint8_t {
  kSigned,
  kUnsigned,
  kBool,       // 1 / 0
  kYear,       // integer, zero-padded to 4 digits
  kFloat,      // float32 / float64, shortest round-trip text
  kRaw,        // variable-length bytes as they are (decimal, text, json, enum, set)
  kHex,        // variable-length bytes (or the 16 uuid bytes) as hex digits
  kBitDigits,  // bit string as 0/1 digits
  kDate,
  kDateTime,  // timestamp / timestamptz (UTC)
  kTime,
  kUuidText,   // 8-4-4-4-12
  kJsonArray,  // array as JSON text
  kValueText,  // Value::ToString()
};

struct ColumnWriter {
  TextKind kind = TextKind::kRaw;
  std::string name;       // target column name
  std::string data_type;  // target DATA_TYPE, lower case
  // SQL turning the text into the value, with "?" for the text; empty: the text itself.
  std::string expression;
};

// Target column kinds, by information_schema DATA_TYPE (lower case).
bool IsBinaryType(const std::string& data_type);    // binary, varbinary, *blob
bool IsGeometryType(const std::string& data_type);  // geometry and its subtypes
bool IsIntegralType(const std::string& data_type);  // tinyint .. bigint
bool IsFloatingType(const std::string& data_type);  // float, double, real
bool IsNumericType(const std::string& data_type);   // the above, decimal, numeric, year
bool IsTemporalType(const std::string& data_type);  // date, datetime, timestamp

// Chooses how a source column of logical type `source` is written into a target column whose
// information_schema DATA_TYPE is `target_data_type`. Unsupported when it cannot be.
Result<ColumnWriter> WriterFor(const Column& source, const std::string& target_name,
                               const std::string& target_data_type);

// Appends the text of cell `row` (not NULL) to *out, unescaped.
Status CellText(const ColumnWriter& w, const ColumnVector& col, size_t row, std::string* out);

// The civil date and time of cell `row` (not NULL) for a kDate or kDateTime writer: rejected
// when MySQL cannot hold it (infinities, years outside 0..9999); zero dates kept.
Status CellCivil(const ColumnWriter& w, const ColumnVector& col, size_t row, CivilDateTime* out);

// The value of float cell `row` (not NULL; kFloat32 widened exactly) for a kFloat writer:
// rejected when a FLOAT/DOUBLE column cannot store it as it is (NaN, infinities, -0).
Status CellDouble(const ColumnWriter& w, const ColumnVector& col, size_t row, double* out);

// Appends `text` escaped for LOAD DATA with FIELDS ESCAPED BY '\\' TERMINATED BY '\t' and
// LINES TERMINATED BY '\n': backslash, tab, newline, carriage return and NUL become \\, \t,
// \n, \r, \0.
void AppendLoadEscaped(std::string_view text, std::string* out);

// The JSON text of an encoded kArray value.
Result<std::string> ArrayToJson(std::string_view encoded);

}  // namespace dbs::mysql

// Small parsers for type names and default expressions, shared by the typemap sources.
// Internal to src/typemap/; pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dbs {

// A type as printed by a catalog, split in three:
//   "int(10) unsigned zerofill"   -> base "int", args {"10"}, modifiers "unsigned zerofill"
//   "decimal(12,2)"               -> base "decimal", args {"12", "2"}
//   "bigint unsigned"             -> base "bigint", modifiers "unsigned"
//   "timestamp(3) with time zone" -> base "timestamp", args {"3"}, modifiers "with time zone"
// base and modifiers are lower-cased and trimmed; args keep their text (trimmed). Without
// parentheses the base is the first word.
struct TypeText {
  std::string base;
  std::vector<std::string> args;
  std::string modifiers;
};
TypeText SplitTypeText(std::string_view text);

// The type name in a PostgreSQL format_type() text without typmods, array brackets, quotes
// and schema: "timestamp(3) with time zone" -> "timestamp with time zone",
// "public.geometry(Point,4326)" -> "geometry", "\"char\"" -> "char".
std::string PgBaseName(std::string_view formatted);
// The base name of a MySQL COLUMN_TYPE: "int(10) unsigned" -> "int".
std::string MysqlBaseName(std::string_view column_type);

std::optional<uint32_t> ParseUInt32(std::string_view s);
std::optional<int64_t> ParseInt64(std::string_view s);

// CURRENT_TIMESTAMP, current_timestamp(), CURRENT_TIMESTAMP(3), now(), now(6), LOCALTIME[()],
// LOCALTIMESTAMP[()] (any case) -> "CURRENT_TIMESTAMP" or "CURRENT_TIMESTAMP(p)" for p > 0.
// Anything else -> nullopt.
std::optional<std::string> NormalizeCurrentTimestamp(std::string_view text);

// The fractional-seconds precision of a normalized CURRENT_TIMESTAMP[(p)], 0 when absent.
uint32_t CurrentTimestampPrecision(std::string_view normalized);

// [+-]digits[.digits][e[+-]digits] (also .5 and 5.): a plain SQL number.
bool IsNumericLiteral(std::string_view text);
// b'0101', B'..', 0x1F, x'1f', X'1F'.
bool IsBitOrHexLiteral(std::string_view text);
// True when `text` starts with '(' whose matching ')' is its last character. Quoted strings and
// identifiers are skipped; `backslash_escapes` says whether \ escapes inside them (MySQL).
bool WrapsWhole(std::string_view text, bool backslash_escapes = true);
// "(text)" unless WrapsWhole(text) already.
std::string WrapInParens(std::string_view text, bool backslash_escapes = true);
// The index just past the quoted token starting at text[i] (a quote character), or npos when
// it is not closed. A doubled quote stands for itself; `backslash` makes \ escape too.
size_t SkipQuotedText(std::string_view text, size_t i, bool backslash);
// `text` with any number of wrapping parentheses removed (and trimmed).
std::string_view StripParens(std::string_view text, bool backslash_escapes = true);

}  // namespace dbs

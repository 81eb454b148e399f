// Text in a MySQL/MariaDB character set -> UTF-8, for values the server does not convert for us
// (binlog row images carry each column's bytes in the column's own character set).
//
// Exact or an error: a byte sequence without a Unicode mapping (cp1251 0x98, an unassigned gbk
// code, a byte above 0x7f in ascii) is InvalidArgument naming the character set, never '?'.
// latin1 is MySQL's: Windows-1252 with 0x81, 0x8D, 0x8F, 0x90, 0x9D mapped to U+0081 ... as the
// server maps them; the other character sets go through iconv with their standard tables.
// Thread-safe (converters are per thread).
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace dbs::mysql {

// True for character sets whose bytes are already UTF-8 (utf8mb4, utf8mb3, utf8) or that hold
// bytes, not text (binary); empty (unknown) counts as UTF-8.
bool IsUtf8OrBinaryCharset(std::string_view charset);

// The UTF-8 text of `bytes` in `charset`. Unsupported for a character set without a converter.
Result<std::string> CharsetToUtf8(std::string_view charset, std::string_view bytes);

}  // namespace dbs::mysql

// PostgreSQL binary wire helpers: the numeric send/recv format (big-endian integers: core/bytes.h).
//
// The binary formats are those of the types' *send/*recv functions (binary COPY, binary
// parameters and results). All functions are pure and thread-safe; decoders of server bytes
// check every length and return Corruption instead of reading past their input.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/bytes.h"
#include "core/status.h"

namespace dbs::pg {

// The big-endian helpers live in core/bytes.h; pg:: names them too.
using dbs::AppendBE16;
using dbs::AppendBE32;
using dbs::AppendBE64;
using dbs::LoadBE16;
using dbs::LoadBE32;
using dbs::LoadBE64;
using dbs::StoreBE16;
using dbs::StoreBE32;
using dbs::StoreBE64;

// numeric's binary form: i16 ndigits, i16 weight, u16 sign, u16 dscale, then ndigits base-10000
// digits (i16 each, most significant first); the value is sum(digit[i] * 10000^(weight - i)).
inline constexpr uint16_t kNumericPos = 0x0000;
inline constexpr uint16_t kNumericNeg = 0x4000;
inline constexpr uint16_t kNumericNaN = 0xC000;
inline constexpr uint16_t kNumericPInf = 0xD000;
inline constexpr uint16_t kNumericNInf = 0xF000;

// Appends the canonical text of a binary numeric, exactly as PostgreSQL prints it
// ([-]digits[.digits] with dscale fractional digits, NaN, Infinity, -Infinity).
// Corruption when the bytes are not a valid numeric.
Status AppendNumericText(std::string_view binary, std::string* out);

// Appends the binary numeric of a decimal text: [+|-]digits[.digits][e[+|-]digits] (at least
// one digit), NaN, Infinity, -Infinity (also inf, +Infinity; case-insensitive). The display
// scale is the number of fractional digits the text has (after the exponent is applied), so
// "1.50" keeps its trailing zero. InvalidArgument names the text when it is malformed or out of
// numeric's range (weight above 32767 base-10000 digits, more than 16383 fractional digits).
Status AppendNumericBinary(std::string_view text, std::string* out);

// Binary numerics of integers (display scale 0).
void AppendNumericFromUInt64(uint64_t v, bool negative, std::string* out);
inline void AppendNumericFromInt64(int64_t v, std::string* out) {
  const bool neg = v < 0;
  const uint64_t mag = neg ? ~static_cast<uint64_t>(v) + 1 : static_cast<uint64_t>(v);
  AppendNumericFromUInt64(mag, neg, out);
}

}  // namespace dbs::pg

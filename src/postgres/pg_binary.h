// PostgreSQL binary wire helpers: big-endian integers and the numeric send/recv format.
//
// The binary formats are those of the types' *send/*recv functions (binary COPY, binary
// parameters and results). All functions are pure and thread-safe; decoders of server bytes
// check every length and return Corruption instead of reading past their input.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/status.h"

namespace dbs::pg {

inline uint16_t LoadBE16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return __builtin_bswap16(v);
}
inline uint32_t LoadBE32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}
inline uint64_t LoadBE64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}
inline void StoreBE16(char* p, uint16_t v) {
  v = __builtin_bswap16(v);
  std::memcpy(p, &v, 2);
}
inline void StoreBE32(char* p, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
inline void StoreBE64(char* p, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
inline void AppendBE16(std::string* out, uint16_t v) {
  char b[2];
  StoreBE16(b, v);
  out->append(b, 2);
}
inline void AppendBE32(std::string* out, uint32_t v) {
  char b[4];
  StoreBE32(b, v);
  out->append(b, 4);
}
inline void AppendBE64(std::string* out, uint64_t v) {
  char b[8];
  StoreBE64(b, v);
  out->append(b, 8);
}

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

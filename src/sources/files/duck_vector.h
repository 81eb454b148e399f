// Filling DuckDB vectors from our column vectors: what the file targets' staging
// (sinks/files/stage.cc) and the federated table functions (federated/federated.cc) share.
// Header-only: both link the DuckDB library already, and nothing else is needed.
//
// Contract: `dst` is a flat vector of the DuckDB type that DuckType-style mapping gives the
// column (BOOLEAN, TINYINT..UBIGINT, FLOAT, DOUBLE, DECIMAL(p,s) by its width); rows are
// written at index r; NULLs are the caller's (validity) business.
#pragma once

#include <duckdb.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/column.h"
#include "core/types.h"

namespace dbs {

template <typename T>
T* VectorData(duckdb_vector v) {
  return static_cast<T*>(duckdb_vector_get_data(v));
}

// "[-]digits[.digits]" as an integer scaled by 10^scale; false for anything else (NaN,
// infinities, more fractional digits than the scale that are not zeros, more than 38 digits).
inline bool ScaledDecimal(std::string_view s, uint32_t scale, __int128* out) {
  bool neg = false;
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
  __int128 v = 0;
  int digits = 0;
  bool any = false;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    v = v * 10 + (s[i] - '0');
    any = true;
    if (v != 0 && ++digits > 38) return false;
  }
  uint32_t frac = 0;
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      if (frac == scale) {
        if (s[i] != '0') return false;  // more digits than the scale: not exact
        continue;
      }
      v = v * 10 + (s[i] - '0');
      ++frac;
      any = true;
      if (v != 0 && ++digits > 38) return false;
    }
  }
  if (!any || i != s.size()) return false;
  for (; frac < scale; ++frac) {
    v *= 10;
    if (++digits > 38) return false;
  }
  *out = neg ? -v : v;
  return true;
}

// Stores a scaled decimal at row r of a DECIMAL(precision, ·) vector (its physical width
// follows the precision, 1..38).
inline void PutDecimal(duckdb_vector dst, size_t r, uint32_t precision, __int128 v) {
  if (precision <= 4) {
    VectorData<int16_t>(dst)[r] = static_cast<int16_t>(v);
  } else if (precision <= 9) {
    VectorData<int32_t>(dst)[r] = static_cast<int32_t>(v);
  } else if (precision <= 18) {
    VectorData<int64_t>(dst)[r] = static_cast<int64_t>(v);
  } else {
    duckdb_hugeint h;
    h.lower = static_cast<uint64_t>(v);
    h.upper = static_cast<int64_t>(v >> 64);
    VectorData<duckdb_hugeint>(dst)[r] = h;
  }
}

// A UUID's 16 bytes (RFC 4122 order) as DuckDB stores a UUID: a hugeint whose upper half is
// the first 8 bytes read big-endian with the top bit flipped (so that signed order is the
// UUIDs' byte order) and whose lower half is the last 8 bytes read big-endian.
inline duckdb_hugeint DuckUuid(const char* bytes) {
  uint64_t hi = 0, lo = 0;
  for (int i = 0; i < 8; ++i) {
    hi = (hi << 8) | static_cast<uint8_t>(bytes[i]);
    lo = (lo << 8) | static_cast<uint8_t>(bytes[8 + i]);
  }
  duckdb_hugeint h;
  h.lower = lo;
  h.upper = static_cast<int64_t>(hi ^ (uint64_t{1} << 63));
  return h;
}

// Copies row `row` of `src` to row r of `dst` when `type` is a boolean, an integer or a float;
// false (nothing written) for every other type.
inline bool PutFixedWidth(LogicalType type, const ColumnVector& src, size_t row, duckdb_vector dst,
                          size_t r) {
  switch (type) {
    case LogicalType::kBool:
      VectorData<bool>(dst)[r] = src.GetBool(row);
      return true;
    case LogicalType::kInt8:
      VectorData<int8_t>(dst)[r] = static_cast<int8_t>(src.GetInt(row));
      return true;
    case LogicalType::kInt16:
      VectorData<int16_t>(dst)[r] = static_cast<int16_t>(src.GetInt(row));
      return true;
    case LogicalType::kInt32:
      VectorData<int32_t>(dst)[r] = static_cast<int32_t>(src.GetInt(row));
      return true;
    case LogicalType::kInt64:
      VectorData<int64_t>(dst)[r] = src.GetInt(row);
      return true;
    case LogicalType::kUInt8:
      VectorData<uint8_t>(dst)[r] = static_cast<uint8_t>(src.GetUInt(row));
      return true;
    case LogicalType::kUInt16:
      VectorData<uint16_t>(dst)[r] = static_cast<uint16_t>(src.GetUInt(row));
      return true;
    case LogicalType::kUInt32:
      VectorData<uint32_t>(dst)[r] = static_cast<uint32_t>(src.GetUInt(row));
      return true;
    case LogicalType::kUInt64:
      VectorData<uint64_t>(dst)[r] = src.GetUInt(row);
      return true;
    case LogicalType::kFloat32:
      VectorData<float>(dst)[r] = src.GetFloat32(row);
      return true;
    case LogicalType::kFloat64:
      VectorData<double>(dst)[r] = src.GetFloat64(row);
      return true;
    default:
      return false;
  }
}

}  // namespace dbs

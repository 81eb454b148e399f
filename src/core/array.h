// Arrays (kArray): PostgreSQL-style, possibly multi-dimensional arrays of one scalar type.
//
// Encoding of one array value (the bytes a kArray cell holds):
//   u8  element logical type (never kArray or kNone)
//   u8  number of dimensions (0..6; 0 is the empty array)
//   per dimension: i32 length (>= 0), i32 lower bound
//   per element, in row-major order: u8 flag (0 = NULL, 1 = value), then for a value the
//   fixed-width bytes of the element type, or u32 length + bytes for a variable-length type.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/value.h"

namespace dbs {

inline constexpr int kMaxArrayDims = 6;

struct ArrayDim {
  int32_t length = 0;
  int32_t lower_bound = 1;
  friend bool operator==(const ArrayDim&, const ArrayDim&) = default;
};

struct ArrayValue {
  LogicalType element_type = LogicalType::kText;
  std::vector<ArrayDim> dims;   // empty: the empty array
  std::vector<Value> elements;  // product of the dim lengths, row-major
  friend bool operator==(const ArrayValue&, const ArrayValue&) = default;
};

// Fails with InvalidArgument when the element count does not match the dimensions, an
// element has another type than element_type, or the element type is not allowed.
Result<std::string> EncodeArray(const ArrayValue& a);
// Validates fully; Corruption on any inconsistency.
Result<ArrayValue> DecodeArray(std::string_view bytes);
// Validation without materializing elements (used by the bundle decoder).
Status ValidateArray(std::string_view bytes);
// PostgreSQL's text form: {1,2,NULL} or {{1,2},{3,4}}, with "[0:1]=" bounds when not 1-based;
// elements quoted as array_out quotes them ({"a,b","",NULL,"q\"t"}), so the text is exact.
// Elements are written by Value::ToString, which may differ from the type's own output
// function (true for t) but reads back into the same value.
std::string ArrayToString(const ArrayValue& a);

// Fixed-width element bytes of v (v must be non-null, of a fixed-width type) appended to out.
void AppendFixedValue(const Value& v, std::string* out);
// Builds a Value of fixed-width type t from exactly FixedWidth(t) bytes.
Value ReadFixedValue(LogicalType t, const char* bytes);

}  // namespace dbs

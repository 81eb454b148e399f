#include "core/types.h"

#include <array>

namespace dbs {
namespace {
constexpr std::array<std::string_view, kMaxLogicalType + 1> kNames = {
    "none",   "bool",   "int8",      "int16",       "int32",    "int64",    "uint8",
    "uint16", "uint32", "uint64",    "float32",     "float64",  "decimal",  "text",
    "bytes",  "json",   "uuid",      "enum",        "set",      "bit",      "date",
    "time",   "timetz", "timestamp", "timestamptz", "interval", "geometry", "array",
};
}  // namespace

std::string_view LogicalTypeName(LogicalType t) {
  auto i = static_cast<size_t>(t);
  return i < kNames.size() ? kNames[i] : "invalid";
}

std::optional<LogicalType> LogicalTypeFromName(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<LogicalType>(i);
  }
  return std::nullopt;
}

}  // namespace dbs

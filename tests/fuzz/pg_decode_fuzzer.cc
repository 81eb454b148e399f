// libFuzzer target: PostgreSQL binary values from the server (pg_decode.h) and numeric text
// (pg_binary.h) on arbitrary bytes must give a Status, never crash or read out of bounds; what
// decodes must be a valid value of its logical type (arrays validate, numerics re-encode).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/array.h"
#include "postgres/pg_binary.h"
#include "postgres/pg_decode.h"

namespace {

using dbs::LogicalType;
using dbs::pg::Wire;

struct Pair {
  Wire wire;
  LogicalType type;
};
constexpr Pair kPairs[] = {
    {Wire::kBool, LogicalType::kBool},
    {Wire::kInt2, LogicalType::kInt16},
    {Wire::kInt4, LogicalType::kInt32},
    {Wire::kInt8, LogicalType::kInt64},
    {Wire::kUInt32, LogicalType::kUInt32},
    {Wire::kUInt64, LogicalType::kUInt64},
    {Wire::kFloat4, LogicalType::kFloat32},
    {Wire::kFloat8, LogicalType::kFloat64},
    {Wire::kNumeric, LogicalType::kDecimal},
    {Wire::kRaw, LogicalType::kText},
    {Wire::kJsonb, LogicalType::kJson},
    {Wire::kUuid, LogicalType::kUuid},
    {Wire::kBit, LogicalType::kBit},
    {Wire::kDate, LogicalType::kDate},
    {Wire::kTime, LogicalType::kTime},
    {Wire::kTimeTz, LogicalType::kTimeTz},
    {Wire::kTimestamp, LogicalType::kTimestampTz},
    {Wire::kInterval, LogicalType::kInterval},
    {Wire::kGeometry, LogicalType::kGeometry},
};
constexpr size_t kNumPairs = sizeof(kPairs) / sizeof(kPairs[0]);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 2, size - 2);
  const Pair& p = kPairs[data[1] % kNumPairs];
  dbs::pg::FieldPlan plan;
  if (data[0] & 1) {
    plan = {LogicalType::kArray, Wire::kArray, p.type, p.wire};
  } else {
    plan = {p.type, p.wire, LogicalType::kNone, Wire::kRaw};
  }
  dbs::ColumnVector col(plan.type, plan.element_type);
  dbs::pg::DecodeScratch scratch;
  if (dbs::pg::DecodeField(plan, in, &col, &scratch).ok()) {
    if (col.size() != 1) std::abort();
    if (plan.type == LogicalType::kArray && !dbs::ValidateArray(col.GetBytes(0)).ok()) {
      std::abort();
    }
    if (plan.type == LogicalType::kDecimal) {
      std::string bin;
      if (!dbs::pg::AppendNumericBinary(col.GetBytes(0), &bin).ok()) std::abort();
    }
  } else if (col.size() != 0) {
    std::abort();
  }
  // The same bytes as decimal text.
  std::string bin, text;
  if (dbs::pg::AppendNumericBinary(in, &bin).ok() && !dbs::pg::AppendNumericText(bin, &text).ok()) {
    std::abort();
  }
  return 0;
}

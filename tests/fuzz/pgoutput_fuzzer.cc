// libFuzzer target: pgoutput messages (sources/postgres/pgoutput.h) and text values
// (pg_text.h) on arbitrary bytes must give a Status, never crash or read out of bounds; what
// decodes must be consistent (views inside the input, arrays that validate).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/array.h"
#include "core/column.h"
#include "sources/postgres/pg_text.h"
#include "sources/postgres/pgoutput.h"

namespace {

using dbs::LogicalType;

bool Inside(std::string_view outer, std::string_view v) {
  return v.empty() ||
         (v.data() >= outer.data() && v.data() + v.size() <= outer.data() + outer.size());
}

constexpr LogicalType kTextTypes[] = {
    LogicalType::kBool,     LogicalType::kInt16,     LogicalType::kInt32,
    LogicalType::kInt64,    LogicalType::kUInt32,    LogicalType::kFloat32,
    LogicalType::kFloat64,  LogicalType::kDecimal,   LogicalType::kText,
    LogicalType::kBytes,    LogicalType::kJson,      LogicalType::kUuid,
    LogicalType::kBit,      LogicalType::kDate,      LogicalType::kTime,
    LogicalType::kTimeTz,   LogicalType::kTimestamp, LogicalType::kTimestampTz,
    LogicalType::kInterval,
};
constexpr size_t kNumTextTypes = sizeof(kTextTypes) / sizeof(kTextTypes[0]);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((mode & 0x80) == 0) {
    dbs::pg::PgoutputMessage m;
    const int proto = (mode & 1) ? 2 : 1;
    const bool in_stream = proto == 2 && (mode & 2);
    if (dbs::pg::DecodePgoutput(in, proto, in_stream, &m).ok()) {
      if (!Inside(in, m.nspname) || !Inside(in, m.name) || !Inside(in, m.content)) std::abort();
      for (const auto& c : m.columns) {
        if (!Inside(in, c.name)) std::abort();
      }
      for (const auto* t : {&m.old_tuple, &m.new_tuple}) {
        for (const auto& c : *t) {
          if (!Inside(in, c.data)) std::abort();
        }
      }
    }
    return 0;
  }
  if (in.empty()) return 0;
  dbs::pg::TextPlan plan;
  const LogicalType t = kTextTypes[static_cast<uint8_t>(in[0]) % kNumTextTypes];
  in.remove_prefix(1);
  plan.money = (mode & 4) != 0;
  plan.bpchar = (mode & 8) != 0;
  if (mode & 1) {
    plan.type = LogicalType::kArray;
    plan.element_type = t;
  } else {
    plan.type = t;
  }
  dbs::ColumnVector col(plan.type, plan.element_type);
  if (dbs::pg::DecodeTextField(plan, in, &col).ok()) {
    if (col.size() != 1) std::abort();
    if (plan.type == LogicalType::kArray && !dbs::ValidateArray(col.GetBytes(0)).ok()) {
      std::abort();
    }
  } else if (col.size() != 0) {
    std::abort();
  }
  return 0;
}

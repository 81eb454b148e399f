// libFuzzer target: DecodeChangeMessage on arbitrary bytes must return a Status, never crash,
// leak or read out of bounds; what decodes must re-encode to a message that decodes the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "core/change_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  dbs::DecodeLimits limits;
  limits.max_body_bytes = 16u << 20;
  auto m = dbs::DecodeChangeMessage(in, limits);
  if (!m.ok()) return 0;
  dbs::ChangeMessageWriter w({dbs::Compression::kNone, 1, 0});
  for (const auto& r : m->records) {
    if (const auto* t = std::get_if<dbs::ChangeTxn>(&r)) {
      if (!w.AddTxn(*t).ok()) std::abort();
    } else if (!w.AddSchemaChange(std::get<dbs::SchemaChangeRecord>(r)).ok()) {
      std::abort();
    }
  }
  auto again = dbs::DecodeChangeMessage(w.Finish(m->seq, m->resume), limits);
  if (!again.ok() || again->records.size() != m->records.size() || again->seq != m->seq) {
    std::abort();
  }
  return 0;
}

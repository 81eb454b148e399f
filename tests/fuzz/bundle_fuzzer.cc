// libFuzzer target: DecodeBundle on arbitrary bytes must return a Status, never crash, leak
// or read out of bounds; whatever decodes must re-encode and decode to the same cells.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  dbs::DecodeLimits limits;
  limits.max_body_bytes = 16u << 20;  // keep single inputs cheap
  auto b = dbs::DecodeBundle(in, limits);
  if (!b.ok()) return 0;
  std::string again;
  if (!dbs::EncodeBundle(*b, {dbs::Compression::kNone, 1, 0}, &again).ok()) std::abort();
  auto c = dbs::DecodeBundle(again, limits);
  if (!c.ok() || c->rows() != b->rows() || c->columns.size() != b->columns.size()) std::abort();
  for (size_t i = 0; i < b->columns.size(); ++i) {
    for (size_t r = 0; r < b->rows(); ++r) {
      if (!(b->columns[i].Get(r) == c->columns[i].Get(r))) std::abort();
    }
  }
  return 0;
}

// Bundle codec throughput: encode and decode of the typical 16-column row, per core.
// Reports bytes/s (uncompressed column bytes) and rows/s (items/s).
#include <benchmark/benchmark.h>

#include "core/bundle.h"
#include "support/sample_bundles.h"

namespace {

void Args(benchmark::internal::Benchmark* b) {
  for (int c : {0, 1, 2}) {
    for (int rows : {100, 1000, 10000}) b->Args({c, rows});
  }
  b->ArgNames({"comp", "rows"});
}

void BM_Encode(benchmark::State& state) {
  const auto comp = static_cast<dbs::Compression>(state.range(0));
  const auto rows = static_cast<size_t>(state.range(1));
  dbs::Bundle b = dbs::testing::MakeTypicalBundle(rows, 1);
  std::string out;
  size_t encoded = 0;
  for (auto _ : state) {
    out.clear();
    if (!dbs::EncodeBundle(b, {comp, 1, 0}, &out).ok()) state.SkipWithError("encode failed");
    encoded = out.size();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * b.ByteSize()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * rows));
  state.counters["ratio"] = static_cast<double>(b.ByteSize()) / static_cast<double>(encoded);
  state.SetLabel(std::string(dbs::CompressionName(comp)));
}

void BM_Decode(benchmark::State& state) {
  const auto comp = static_cast<dbs::Compression>(state.range(0));
  const auto rows = static_cast<size_t>(state.range(1));
  dbs::Bundle b = dbs::testing::MakeTypicalBundle(rows, 1);
  std::string bytes;
  if (!dbs::EncodeBundle(b, {comp, 1, 0}, &bytes).ok()) state.SkipWithError("encode failed");
  for (auto _ : state) {
    auto d = dbs::DecodeBundle(bytes);
    if (!d.ok()) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(d);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * b.ByteSize()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * rows));
  state.SetLabel(std::string(dbs::CompressionName(comp)));
}

BENCHMARK(BM_Encode)->Apply(Args);
BENCHMARK(BM_Decode)->Apply(Args);

}  // namespace

BENCHMARK_MAIN();

// Bundles with known content for codec tests, the fuzzer's seed corpus and benchmarks.
#pragma once

#include <cstdint>
#include <vector>

#include "core/bundle.h"

namespace dbs::testing {

// One column per logical type (and arrays of several element types), `rows` rows with NULLs,
// extremes (min/max ints, NaN, ±Inf, -0.0, infinities, zero dates), empty vs NULL strings,
// 4-byte UTF-8 and large values. Deterministic for a given seed.
Bundle MakeZooBundle(size_t rows, uint32_t seed);

// The "typical" 16-column row used by the benchmarks (~200 bytes): ids, ints, a decimal,
// doubles, short and medium text, a timestamp, a date, a bool, a uuid, a json document.
Bundle MakeTypicalBundle(size_t rows, uint32_t seed);

// Every cell of a bundle as Values, row-major (for comparisons in tests).
std::vector<std::vector<Value>> BundleRows(const Bundle& b);

}  // namespace dbs::testing

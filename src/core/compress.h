// Block compression used by the bundle codec (zstd, lz4). Thread-safe; contexts are reused
// per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace dbs {

enum class Compression : uint8_t { kNone = 0, kZstd = 1, kLz4 = 2 };

std::string_view CompressionName(Compression c);
// "none", "zstd", "lz4"; InvalidArgument otherwise.
Result<Compression> CompressionFromName(std::string_view name);

// Appends the compressed form of `in` to *out.
Status CompressBlock(Compression c, int level, std::string_view in, std::string* out);
// Decompresses exactly `expected_size` bytes into *out (replacing its content). Corruption
// when the input does not decode to exactly that many bytes.
Status DecompressBlock(Compression c, std::string_view in, size_t expected_size, std::string* out);

}  // namespace dbs

#include "core/compress.h"

#include <lz4.h>
#include <zstd.h>

#include <limits>
#include <memory>

#include <cstring>

namespace dbs {
namespace {

struct ZstdCCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct ZstdDCtxFree {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

ZSTD_CCtx* ThreadCCtx() {
  thread_local std::unique_ptr<ZSTD_CCtx, ZstdCCtxFree> ctx(ZSTD_createCCtx());
  return ctx.get();
}
ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, ZstdDCtxFree> ctx(ZSTD_createDCtx());
  return ctx.get();
}

}  // namespace

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "none";
    case Compression::kZstd:
      return "zstd";
    case Compression::kLz4:
      return "lz4";
  }
  return "unknown";
}

Result<Compression> CompressionFromName(std::string_view name) {
  if (name == "none") return Compression::kNone;
  if (name == "zstd") return Compression::kZstd;
  if (name == "lz4") return Compression::kLz4;
  return Status::InvalidArgument("unknown compression '" + std::string(name) +
                                 "' (expected none, zstd or lz4)");
}

Status CompressBlock(Compression c, int level, std::string_view in, std::string* out) {
  size_t base = out->size();
  switch (c) {
    case Compression::kNone:
      out->append(in);
      return Status::Ok();
    case Compression::kZstd: {
      size_t bound = ZSTD_compressBound(in.size());
      out->resize(base + bound);
      size_t n =
          ZSTD_compressCCtx(ThreadCCtx(), out->data() + base, bound, in.data(), in.size(), level);
      if (ZSTD_isError(n)) {
        out->resize(base);
        return Status::Internal(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
      }
      out->resize(base + n);
      return Status::Ok();
    }
    case Compression::kLz4: {
      if (in.size() > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)) {
        return Status::ResourceExhausted("block too large for lz4");
      }
      int bound = LZ4_compressBound(static_cast<int>(in.size()));
      out->resize(base + static_cast<size_t>(bound));
      int n =
          LZ4_compress_default(in.data(), out->data() + base, static_cast<int>(in.size()), bound);
      if (n <= 0) {
        out->resize(base);
        return Status::Internal("lz4 compression failed");
      }
      out->resize(base + static_cast<size_t>(n));
      return Status::Ok();
    }
  }
  return Status::InvalidArgument("unknown compression");
}

Status DecompressBlock(Compression c, std::string_view in, size_t expected_size, std::string* out) {
  out->resize(expected_size);
  switch (c) {
    case Compression::kNone:
      if (in.size() != expected_size) return Status::Corruption("stored size mismatch");
      if (expected_size) std::memcpy(out->data(), in.data(), expected_size);
      return Status::Ok();
    case Compression::kZstd: {
      size_t n =
          ZSTD_decompressDCtx(ThreadDCtx(), out->data(), expected_size, in.data(), in.size());
      if (ZSTD_isError(n) || n != expected_size) {
        return Status::Corruption("zstd block does not decode to its stated size");
      }
      return Status::Ok();
    }
    case Compression::kLz4: {
      if (expected_size > static_cast<size_t>(std::numeric_limits<int>::max()) ||
          in.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
        return Status::Corruption("lz4 block too large");
      }
      int n = LZ4_decompress_safe(in.data(), out->data(), static_cast<int>(in.size()),
                                  static_cast<int>(expected_size));
      if (n < 0 || static_cast<size_t>(n) != expected_size) {
        return Status::Corruption("lz4 block does not decode to its stated size");
      }
      return Status::Ok();
    }
  }
  return Status::Corruption("unknown compression");
}

}  // namespace dbs

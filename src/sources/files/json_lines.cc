#include "sources/files/json_lines.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace dbs::files {

namespace {

constexpr size_t kReadBytes = 1 << 16;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

class PlainLines : public LineReader {
 public:
  PlainLines(std::FILE* f, std::string display) : LineReader(std::move(display)), f_(f) {}
  ~PlainLines() override { std::fclose(f_); }

 protected:
  Result<size_t> Read(char* buf, size_t n) override {
    const size_t got = std::fread(buf, 1, n, f_);
    if (got == 0 && std::ferror(f_)) {
      return Status::IoError("reading " + display_ + ": " + std::strerror(errno));
    }
    return got;
  }

 private:
  std::FILE* f_;
};

class GzipLines : public LineReader {
 public:
  GzipLines(gzFile f, std::string display) : LineReader(std::move(display)), f_(f) {}
  ~GzipLines() override { gzclose(f_); }

 protected:
  Result<size_t> Read(char* buf, size_t n) override {
    const int got = gzread(f_, buf, static_cast<unsigned>(n));
    if (got < 0) {
      int err = 0;
      const char* msg = gzerror(f_, &err);
      return Status::Corruption(display_ +
                                " does not decompress (gzip): " + (msg != nullptr ? msg : "error"));
    }
    return static_cast<size_t>(got);
  }

 private:
  gzFile f_;
};

class ZstdLines : public LineReader {
 public:
  ZstdLines(std::FILE* f, std::string display)
      : LineReader(std::move(display)), f_(f), ctx_(ZSTD_createDCtx()), in_(kReadBytes) {}
  ~ZstdLines() override {
    ZSTD_freeDCtx(ctx_);
    std::fclose(f_);
  }

 protected:
  Result<size_t> Read(char* buf, size_t n) override {
    ZSTD_outBuffer out{buf, n, 0};
    while (out.pos == 0) {
      if (input_.pos == input_.size) {
        const size_t got = std::fread(in_.data(), 1, in_.size(), f_);
        if (got == 0) {
          if (std::ferror(f_)) {
            return Status::IoError("reading " + display_ + ": " + std::strerror(errno));
          }
          if (!frame_done_) return Status::Corruption(display_ + " ends inside a zstd frame");
          return size_t{0};
        }
        input_ = ZSTD_inBuffer{in_.data(), got, 0};
      }
      const size_t rc = ZSTD_decompressStream(ctx_, &out, &input_);
      if (ZSTD_isError(rc)) {
        return Status::Corruption(display_ +
                                  " does not decompress (zstd): " + ZSTD_getErrorName(rc));
      }
      frame_done_ = rc == 0;
    }
    return out.pos;
  }

 private:
  std::FILE* f_;
  ZSTD_DCtx* ctx_;
  std::vector<char> in_;
  ZSTD_inBuffer input_{nullptr, 0, 0};
  bool frame_done_ = true;
};

}  // namespace

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      const unsigned char x = static_cast<unsigned char>(s[i + k]);
      if ((x & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (x & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

Result<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path,
                                                     const std::string& display) {
  if (EndsWith(display, ".gz")) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (f == nullptr)
      return Status::IoError("cannot read " + display + ": " + std::strerror(errno));
    gzbuffer(f, kReadBytes);
    return std::unique_ptr<LineReader>(new GzipLines(f, display));
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::IoError("cannot read " + display + ": " + std::strerror(errno));
  if (EndsWith(display, ".zst")) return std::unique_ptr<LineReader>(new ZstdLines(f, display));
  return std::unique_ptr<LineReader>(new PlainLines(f, display));
}

Result<bool> LineReader::Next(std::string* line, uint64_t* number, bool* too_long) {
  line->clear();
  *too_long = false;
  while (true) {
    const size_t nl = buf_.find('\n', pos_);
    const size_t end = nl == std::string::npos ? buf_.size() : nl;
    const size_t take = std::min(end - pos_, kMaxLineBytes - line->size());
    line->append(buf_, pos_, take);
    if (take < end - pos_) *too_long = true;
    if (nl != std::string::npos) {
      pos_ = nl + 1;
      break;
    }
    buf_.clear();
    pos_ = 0;
    if (eof_) {
      if (line->empty() && !*too_long) return false;
      break;
    }
    buf_.resize(kReadBytes);
    DBS_ASSIGN_OR_RETURN(size_t got, Read(buf_.data(), buf_.size()));
    buf_.resize(got);
    if (got == 0) eof_ = true;
  }
  if (!line->empty() && line->back() == '\r') line->pop_back();
  *number = ++number_;
  return true;
}

}  // namespace dbs::files

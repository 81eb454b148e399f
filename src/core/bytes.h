// Bounds-checked reading and little-endian writing of binary buffers.
//
// ByteReader never reads past its input: every getter returns false (and leaves the reader
// failed) when the bytes are not there, so decoders of untrusted input can check once at the
// end with ok(). Not thread-safe; cheap to copy.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace dbs {

static_assert(std::endian::native == std::endian::little,
              "the wire formats are little-endian and so is every supported host");

// Big-endian integers (PostgreSQL's wire and binary COPY formats).
inline uint16_t LoadBE16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return __builtin_bswap16(v);
}
inline uint32_t LoadBE32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}
inline uint64_t LoadBE64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}
inline void StoreBE16(char* p, uint16_t v) {
  v = __builtin_bswap16(v);
  std::memcpy(p, &v, 2);
}
inline void StoreBE32(char* p, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
inline void StoreBE64(char* p, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
inline void AppendBE16(std::string* out, uint16_t v) {
  char b[2];
  StoreBE16(b, v);
  out->append(b, 2);
}
inline void AppendBE32(std::string* out, uint32_t v) {
  char b[4];
  StoreBE32(b, v);
  out->append(b, 4);
}
inline void AppendBE64(std::string* out, uint64_t v) {
  char b[8];
  StoreBE64(b, v);
  out->append(b, 8);
}

class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}

  bool ok() const { return ok_; }
  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }

  template <typename T>
  bool Read(T* out) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (!ok_ || remaining() < sizeof(T)) return Fail();
    std::memcpy(out, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  // A view of the next n bytes (valid while the underlying buffer lives).
  bool Bytes(size_t n, std::string_view* out) {
    if (!ok_ || remaining() < n) return Fail();
    *out = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool Skip(size_t n) {
    if (!ok_ || remaining() < n) return Fail();
    pos_ += n;
    return true;
  }
  bool Fail() {
    ok_ = false;
    return false;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

template <typename T>
inline void AppendLE(std::string* out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out->append(buf, sizeof(T));
}

}  // namespace dbs

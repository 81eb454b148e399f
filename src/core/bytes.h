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

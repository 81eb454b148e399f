// ColumnVector: the values of one column for a run of rows, in the layout the bundle codec
// writes (see docs/bundle-format.md), so encoding is mostly memcpy.
//
//  - every row has a slot: fixed-width types keep FixedWidth(type) bytes per row (zeros for
//    NULL); variable-length types keep an offsets array (size()+1 entries) into one heap;
//  - NULL and "unchanged" (a CDC cell whose value the source did not send, e.g. an unchanged
//    TOASTed PostgreSQL column) are bitmaps, allocated only once a row needs them.
//
// Appenders must match the column's type: AppendInt for signed ints, AppendUInt for unsigned
// ints, AppendBytes for variable-length types, AppendFixed for any fixed-width type. A
// mismatch is a bug (asserted in debug builds). Not thread-safe.
#pragma once

#include <cassert>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/types.h"
#include "core/value.h"

namespace dbs {

class ColumnVector {
 public:
  explicit ColumnVector(LogicalType type, LogicalType element_type = LogicalType::kNone);

  LogicalType type() const { return type_; }
  LogicalType element_type() const { return element_type_; }
  size_t size() const { return rows_; }
  uint32_t width() const { return width_; }

  void Reserve(size_t rows, size_t heap_bytes = 0);
  void Clear();

  // --- appending ---
  void AppendNull();
  // A cell the source did not send (CDC only); reads as NULL with IsUnchanged() true.
  void AppendUnchanged();
  void AppendBool(bool v) { AppendRaw<uint8_t>(v ? 1 : 0); }
  void AppendInt(int64_t v);
  void AppendUInt(uint64_t v);
  void AppendFloat32(float v) { AppendRaw(v); }
  void AppendFloat64(double v) { AppendRaw(v); }
  void AppendDate(int32_t v) { AppendRaw(v); }
  void AppendMicros(int64_t v) { AppendRaw(v); }  // time, timestamp, timestamptz
  void AppendTimeTz(TimeTz v);
  void AppendInterval(Interval v);
  void AppendUuid(const Uuid& v);
  void AppendBytes(std::string_view v);  // every variable-length type
  // Appends a value of any type; InvalidArgument when its type differs from the column's.
  Status Append(const Value& v);
  // Appends a copy of src's row (value, NULL or unchanged). src must have this column's type.
  void AppendFrom(const ColumnVector& src, size_t row);

  // --- reading (row < size()) ---
  bool IsNull(size_t row) const { return has_nulls_ && Bit(nulls_, row); }
  bool IsUnchanged(size_t row) const { return has_unchanged_ && Bit(unchanged_, row); }
  bool has_nulls() const { return has_nulls_; }
  bool has_unchanged() const { return has_unchanged_; }
  bool GetBool(size_t row) const { return Get<uint8_t>(row) != 0; }
  // Any signed int type, widened.
  int64_t GetInt(size_t row) const;
  uint64_t GetUInt(size_t row) const;
  float GetFloat32(size_t row) const { return Get<float>(row); }
  double GetFloat64(size_t row) const { return Get<double>(row); }
  int32_t GetDate(size_t row) const { return Get<int32_t>(row); }
  int64_t GetMicros(size_t row) const { return Get<int64_t>(row); }
  TimeTz GetTimeTz(size_t row) const;
  Interval GetInterval(size_t row) const;
  Uuid GetUuid(size_t row) const;
  std::string_view GetBytes(size_t row) const {
    return std::string_view(heap_.data() + offsets_[row], offsets_[row + 1] - offsets_[row]);
  }
  // Fixed-width slot bytes of a row (width() bytes).
  const char* FixedSlot(size_t row) const { return fixed_.data() + row * width_; }
  Value Get(size_t row) const;

  // Approximate bytes held (for bundle sizing against NATS max_payload).
  size_t ByteSize() const;

  // --- raw access for the codec ---
  const std::string& fixed_data() const { return fixed_; }
  const std::vector<uint32_t>& offsets() const { return offsets_; }
  const std::string& heap() const { return heap_; }
  const std::vector<uint8_t>& null_bitmap() const { return nulls_; }
  const std::vector<uint8_t>& unchanged_bitmap() const { return unchanged_; }

 private:
  friend class BundleDecoder;

  static bool Bit(const std::vector<uint8_t>& bits, size_t row) {
    return (bits[row >> 3] >> (row & 7)) & 1;
  }
  void PushBits();
  void MarkLast(std::vector<uint8_t>* bits, bool* flag);
  template <typename T>
  void AppendRaw(T v) {
    assert(sizeof(T) == width_);
    char buf[sizeof(T)];
    std::memcpy(buf, &v, sizeof(T));
    fixed_.append(buf, sizeof(T));
    PushBits();
    ++rows_;
  }
  template <typename T>
  T Get(size_t row) const {
    T v;
    std::memcpy(&v, fixed_.data() + row * sizeof(T), sizeof(T));
    return v;
  }

  LogicalType type_;
  LogicalType element_type_;
  uint32_t width_;
  size_t rows_ = 0;
  bool has_nulls_ = false;
  bool has_unchanged_ = false;
  std::vector<uint8_t> nulls_;      // bit set = NULL; sized once has_nulls_
  std::vector<uint8_t> unchanged_;  // bit set = unchanged; sized once has_unchanged_
  std::string fixed_;
  std::vector<uint32_t> offsets_;  // varlen only: size() + 1 entries
  std::string heap_;
};

}  // namespace dbs

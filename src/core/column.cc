#include "core/column.h"

#include "core/array.h"

namespace dbs {

ColumnVector::ColumnVector(LogicalType type, LogicalType element_type)
    : type_(type), element_type_(element_type), width_(FixedWidth(type)) {
  if (width_ == 0) offsets_.push_back(0);
}

void ColumnVector::Reserve(size_t rows, size_t heap_bytes) {
  if (width_ != 0) {
    fixed_.reserve(rows * width_);
  } else {
    offsets_.reserve(rows + 1);
    heap_.reserve(heap_bytes);
  }
}

void ColumnVector::Clear() {
  rows_ = 0;
  has_nulls_ = has_unchanged_ = false;
  nulls_.clear();
  unchanged_.clear();
  fixed_.clear();
  heap_.clear();
  offsets_.clear();
  if (width_ == 0) offsets_.push_back(0);
}

void ColumnVector::PushBits() {
  // Keep the bitmaps covering row rows_ (the row being appended) once they exist.
  if ((rows_ & 7) == 0) {
    if (has_nulls_) nulls_.push_back(0);
    if (has_unchanged_) unchanged_.push_back(0);
  }
}

void ColumnVector::MarkLast(std::vector<uint8_t>* bits, bool* flag) {
  size_t row = rows_ - 1;
  if (!*flag) {
    *flag = true;
    bits->assign((rows_ + 7) / 8, 0);
  }
  (*bits)[row >> 3] = static_cast<uint8_t>((*bits)[row >> 3] | (1u << (row & 7)));
}

void ColumnVector::AppendNull() {
  if (width_ != 0) {
    fixed_.append(width_, '\0');
  } else {
    offsets_.push_back(static_cast<uint32_t>(heap_.size()));
  }
  PushBits();
  ++rows_;
  MarkLast(&nulls_, &has_nulls_);
}

void ColumnVector::AppendUnchanged() {
  AppendNull();
  MarkLast(&unchanged_, &has_unchanged_);
}

void ColumnVector::AppendInt(int64_t v) {
  switch (type_) {
    case LogicalType::kInt8:
      AppendRaw(static_cast<int8_t>(v));
      break;
    case LogicalType::kInt16:
      AppendRaw(static_cast<int16_t>(v));
      break;
    case LogicalType::kInt32:
      AppendRaw(static_cast<int32_t>(v));
      break;
    default:
      AppendRaw(v);
      break;
  }
}

void ColumnVector::AppendUInt(uint64_t v) {
  switch (type_) {
    case LogicalType::kUInt8:
      AppendRaw(static_cast<uint8_t>(v));
      break;
    case LogicalType::kUInt16:
      AppendRaw(static_cast<uint16_t>(v));
      break;
    case LogicalType::kUInt32:
      AppendRaw(static_cast<uint32_t>(v));
      break;
    default:
      AppendRaw(v);
      break;
  }
}

void ColumnVector::AppendTimeTz(TimeTz v) {
  assert(width_ == 12);
  char buf[12];
  std::memcpy(buf, &v.micros, 8);
  std::memcpy(buf + 8, &v.offset_seconds, 4);
  fixed_.append(buf, 12);
  PushBits();
  ++rows_;
}

void ColumnVector::AppendInterval(Interval v) {
  assert(width_ == 16);
  char buf[16];
  std::memcpy(buf, &v.months, 4);
  std::memcpy(buf + 4, &v.days, 4);
  std::memcpy(buf + 8, &v.micros, 8);
  fixed_.append(buf, 16);
  PushBits();
  ++rows_;
}

void ColumnVector::AppendUuid(const Uuid& v) {
  assert(width_ == 16);
  fixed_.append(reinterpret_cast<const char*>(v.bytes), 16);
  PushBits();
  ++rows_;
}

void ColumnVector::AppendFrom(const ColumnVector& src, size_t row) {
  assert(src.type_ == type_);
  if (src.IsUnchanged(row)) return AppendUnchanged();
  if (src.IsNull(row)) return AppendNull();
  if (width_ == 0) return AppendBytes(src.GetBytes(row));
  fixed_.append(src.FixedSlot(row), width_);
  PushBits();
  ++rows_;
}

void ColumnVector::AppendBytes(std::string_view v) {
  assert(width_ == 0);
  heap_.append(v);
  offsets_.push_back(static_cast<uint32_t>(heap_.size()));
  PushBits();
  ++rows_;
}

Status ColumnVector::Append(const Value& v) {
  if (v.type() != type_) {
    return Status::InvalidArgument("value of type " + std::string(LogicalTypeName(v.type())) +
                                   " appended to a " + std::string(LogicalTypeName(type_)) +
                                   " column");
  }
  if (v.is_null()) {
    AppendNull();
    return Status::Ok();
  }
  if (width_ == 0) {
    AppendBytes(v.AsBytes());
    return Status::Ok();
  }
  AppendFixedValue(v, &fixed_);
  PushBits();
  ++rows_;
  return Status::Ok();
}

int64_t ColumnVector::GetInt(size_t row) const {
  switch (type_) {
    case LogicalType::kInt8:
      return Get<int8_t>(row);
    case LogicalType::kInt16:
      return Get<int16_t>(row);
    case LogicalType::kInt32:
      return Get<int32_t>(row);
    default:
      return Get<int64_t>(row);
  }
}

uint64_t ColumnVector::GetUInt(size_t row) const {
  switch (type_) {
    case LogicalType::kUInt8:
      return Get<uint8_t>(row);
    case LogicalType::kUInt16:
      return Get<uint16_t>(row);
    case LogicalType::kUInt32:
      return Get<uint32_t>(row);
    default:
      return Get<uint64_t>(row);
  }
}

TimeTz ColumnVector::GetTimeTz(size_t row) const {
  TimeTz v;
  const char* p = FixedSlot(row);
  std::memcpy(&v.micros, p, 8);
  std::memcpy(&v.offset_seconds, p + 8, 4);
  return v;
}

Interval ColumnVector::GetInterval(size_t row) const {
  Interval v;
  const char* p = FixedSlot(row);
  std::memcpy(&v.months, p, 4);
  std::memcpy(&v.days, p + 4, 4);
  std::memcpy(&v.micros, p + 8, 8);
  return v;
}

Uuid ColumnVector::GetUuid(size_t row) const {
  Uuid u;
  std::memcpy(u.bytes, FixedSlot(row), 16);
  return u;
}

Value ColumnVector::Get(size_t row) const {
  if (IsNull(row)) return Value::Null(type_);
  if (width_ == 0) return Value::Bytes(type_, std::string(GetBytes(row)));
  return ReadFixedValue(type_, FixedSlot(row));
}

size_t ColumnVector::ByteSize() const {
  return fixed_.size() + heap_.size() + offsets_.size() * 4 + nulls_.size() + unchanged_.size();
}

}  // namespace dbs

#include "core/array.h"

#include <strings.h>

#include "core/bytes.h"

namespace dbs {

void AppendFixedValue(const Value& v, std::string* out) {
  switch (v.type()) {
    case LogicalType::kBool:
      AppendLE<uint8_t>(out, v.AsBool() ? 1 : 0);
      break;
    case LogicalType::kInt8:
      AppendLE<int8_t>(out, static_cast<int8_t>(v.AsInt()));
      break;
    case LogicalType::kInt16:
      AppendLE<int16_t>(out, static_cast<int16_t>(v.AsInt()));
      break;
    case LogicalType::kInt32:
      AppendLE<int32_t>(out, static_cast<int32_t>(v.AsInt()));
      break;
    case LogicalType::kInt64:
      AppendLE<int64_t>(out, v.AsInt());
      break;
    case LogicalType::kUInt8:
      AppendLE<uint8_t>(out, static_cast<uint8_t>(v.AsUInt()));
      break;
    case LogicalType::kUInt16:
      AppendLE<uint16_t>(out, static_cast<uint16_t>(v.AsUInt()));
      break;
    case LogicalType::kUInt32:
      AppendLE<uint32_t>(out, static_cast<uint32_t>(v.AsUInt()));
      break;
    case LogicalType::kUInt64:
      AppendLE<uint64_t>(out, v.AsUInt());
      break;
    case LogicalType::kFloat32:
      AppendLE<float>(out, v.AsFloat32());
      break;
    case LogicalType::kFloat64:
      AppendLE<double>(out, v.AsFloat64());
      break;
    case LogicalType::kDate:
      AppendLE<int32_t>(out, v.AsDate());
      break;
    case LogicalType::kTime:
    case LogicalType::kTimestamp:
    case LogicalType::kTimestampTz:
      AppendLE<int64_t>(out, v.AsMicros());
      break;
    case LogicalType::kTimeTz:
      AppendLE<int64_t>(out, v.AsTimeTz().micros);
      AppendLE<int32_t>(out, v.AsTimeTz().offset_seconds);
      break;
    case LogicalType::kInterval:
      AppendLE<int32_t>(out, v.AsInterval().months);
      AppendLE<int32_t>(out, v.AsInterval().days);
      AppendLE<int64_t>(out, v.AsInterval().micros);
      break;
    case LogicalType::kUuid:
      out->append(reinterpret_cast<const char*>(v.AsUuid().bytes), 16);
      break;
    default:
      break;
  }
}

namespace {
template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
}  // namespace

Value ReadFixedValue(LogicalType t, const char* p) {
  switch (t) {
    case LogicalType::kBool:
      return Value::Bool(Load<uint8_t>(p) != 0);
    case LogicalType::kInt8:
      return Value::Int(t, Load<int8_t>(p));
    case LogicalType::kInt16:
      return Value::Int(t, Load<int16_t>(p));
    case LogicalType::kInt32:
      return Value::Int(t, Load<int32_t>(p));
    case LogicalType::kInt64:
      return Value::Int(t, Load<int64_t>(p));
    case LogicalType::kUInt8:
      return Value::UInt(t, Load<uint8_t>(p));
    case LogicalType::kUInt16:
      return Value::UInt(t, Load<uint16_t>(p));
    case LogicalType::kUInt32:
      return Value::UInt(t, Load<uint32_t>(p));
    case LogicalType::kUInt64:
      return Value::UInt(t, Load<uint64_t>(p));
    case LogicalType::kFloat32:
      return Value::Float32(Load<float>(p));
    case LogicalType::kFloat64:
      return Value::Float64(Load<double>(p));
    case LogicalType::kDate:
      return Value::Date(Load<int32_t>(p));
    case LogicalType::kTime:
    case LogicalType::kTimestamp:
    case LogicalType::kTimestampTz:
      return Value::Micros(t, Load<int64_t>(p));
    case LogicalType::kTimeTz:
      return Value::TimeTzValue(TimeTz{Load<int64_t>(p), Load<int32_t>(p + 8)});
    case LogicalType::kInterval:
      return Value::IntervalValue(
          Interval{Load<int32_t>(p), Load<int32_t>(p + 4), Load<int64_t>(p + 8)});
    case LogicalType::kUuid: {
      Uuid u;
      std::memcpy(u.bytes, p, 16);
      return Value::UuidValue(u);
    }
    default:
      return Value::Null(t);
  }
}

namespace {

bool ElementTypeAllowed(LogicalType t) {
  return t != LogicalType::kNone && t != LogicalType::kArray;
}

// Reads the header; on success *count is the element count.
Status ReadHeader(ByteReader* r, LogicalType* elem, std::vector<ArrayDim>* dims, uint64_t* count) {
  uint8_t et, nd;
  if (!r->Read(&et) || !r->Read(&nd)) return Status::Corruption("array: truncated header");
  if (!IsValidLogicalType(et) || !ElementTypeAllowed(static_cast<LogicalType>(et))) {
    return Status::Corruption("array: bad element type");
  }
  if (nd > kMaxArrayDims) return Status::Corruption("array: too many dimensions");
  *elem = static_cast<LogicalType>(et);
  ArrayDim read[kMaxArrayDims];
  bool empty = nd == 0;
  for (int i = 0; i < nd; ++i) {
    ArrayDim& d = read[i];
    if (!r->Read(&d.length) || !r->Read(&d.lower_bound)) {
      return Status::Corruption("array: truncated dimensions");
    }
    if (d.length < 0) return Status::Corruption("array: negative dimension");
    empty = empty || d.length == 0;
  }
  // A zero-length dimension anywhere makes the array empty, whatever the others say.
  uint64_t n = empty ? 0 : 1;
  for (int i = 0; i < nd && !empty; ++i) {
    n *= static_cast<uint64_t>(read[i].length);
    // Each element needs at least its flag byte: bounds the count (and each product on the
    // way) by the input size.
    if (n > r->remaining()) return Status::Corruption("array: more elements than bytes");
  }
  if (dims) dims->insert(dims->end(), read, read + nd);
  *count = n;
  return Status::Ok();
}

// Reads one element; when `out` is null only validates.
Status ReadElement(ByteReader* r, LogicalType elem, Value* out) {
  uint8_t flag;
  if (!r->Read(&flag)) return Status::Corruption("array: truncated element");
  if (flag == 0) {
    if (out) *out = Value::Null(elem);
    return Status::Ok();
  }
  if (flag != 1) return Status::Corruption("array: bad element flag");
  uint32_t w = FixedWidth(elem);
  std::string_view bytes;
  if (w != 0) {
    if (!r->Bytes(w, &bytes)) return Status::Corruption("array: truncated element");
    if (out) *out = ReadFixedValue(elem, bytes.data());
    return Status::Ok();
  }
  uint32_t len;
  if (!r->Read(&len) || !r->Bytes(len, &bytes)) {
    return Status::Corruption("array: truncated element");
  }
  if (out) *out = Value::Bytes(elem, std::string(bytes));
  return Status::Ok();
}

}  // namespace

Result<std::string> EncodeArray(const ArrayValue& a) {
  if (!ElementTypeAllowed(a.element_type)) {
    return Status::InvalidArgument("array element type must be a scalar type");
  }
  if (a.dims.size() > kMaxArrayDims) return Status::InvalidArgument("array has too many dims");
  uint64_t n = a.dims.empty() ? 0 : 1;
  for (const ArrayDim& d : a.dims) {
    if (d.length < 0) return Status::InvalidArgument("negative array dimension");
    n *= static_cast<uint64_t>(d.length);
  }
  if (n != a.elements.size()) {
    return Status::InvalidArgument("array element count does not match its dimensions");
  }
  std::string out;
  AppendLE<uint8_t>(&out, static_cast<uint8_t>(a.element_type));
  AppendLE<uint8_t>(&out, static_cast<uint8_t>(a.dims.size()));
  for (const ArrayDim& d : a.dims) {
    AppendLE<int32_t>(&out, d.length);
    AppendLE<int32_t>(&out, d.lower_bound);
  }
  const bool fixed = FixedWidth(a.element_type) != 0;
  for (const Value& v : a.elements) {
    if (v.type() != a.element_type) {
      return Status::InvalidArgument("array element of another type");
    }
    if (v.is_null()) {
      AppendLE<uint8_t>(&out, 0);
      continue;
    }
    AppendLE<uint8_t>(&out, 1);
    if (fixed) {
      AppendFixedValue(v, &out);
    } else {
      AppendLE<uint32_t>(&out, static_cast<uint32_t>(v.AsBytes().size()));
      out.append(v.AsBytes());
    }
  }
  return out;
}

Result<ArrayValue> DecodeArray(std::string_view bytes) {
  ByteReader r(bytes);
  ArrayValue a;
  uint64_t n;
  DBS_RETURN_IF_ERROR(ReadHeader(&r, &a.element_type, &a.dims, &n));
  a.elements.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    DBS_RETURN_IF_ERROR(ReadElement(&r, a.element_type, &a.elements[i]));
  }
  if (r.remaining() != 0) return Status::Corruption("array: trailing bytes");
  return a;
}

Status ValidateArray(std::string_view bytes) {
  ByteReader r(bytes);
  LogicalType elem;
  uint64_t n;
  DBS_RETURN_IF_ERROR(ReadHeader(&r, &elem, nullptr, &n));
  for (uint64_t i = 0; i < n; ++i) DBS_RETURN_IF_ERROR(ReadElement(&r, elem, nullptr));
  if (r.remaining() != 0) return Status::Corruption("array: trailing bytes");
  return Status::Ok();
}

namespace {
// One element as PostgreSQL's array_out writes it: in double quotes (with \" and \\ escaped)
// when it is empty, spells NULL, or holds a quote, a backslash, a brace, the ',' delimiter or
// white space; bare otherwise.
void AppendElement(const std::string& text, std::string* out) {
  bool quote = text.empty() || (text.size() == 4 && strncasecmp(text.c_str(), "NULL", 4) == 0);
  for (char c : text) {
    if (c == '"' || c == '\\' || c == '{' || c == '}' || c == ',' || c == ' ' || c == '\t' ||
        c == '\n' || c == '\r' || c == '\v' || c == '\f') {
      quote = true;
      break;
    }
  }
  if (!quote) {
    *out += text;
    return;
  }
  *out += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') *out += '\\';
    *out += c;
  }
  *out += '"';
}

void AppendLevel(const ArrayValue& a, size_t dim, size_t* next, std::string* out) {
  *out += '{';
  for (int32_t i = 0; i < a.dims[dim].length; ++i) {
    if (i) *out += ',';
    if (dim + 1 < a.dims.size()) {
      AppendLevel(a, dim + 1, next, out);
    } else {
      const Value& v = a.elements[(*next)++];
      if (v.is_null()) {
        *out += "NULL";
      } else {
        AppendElement(v.ToString(), out);
      }
    }
  }
  *out += '}';
}
}  // namespace

std::string ArrayToString(const ArrayValue& a) {
  if (a.dims.empty()) return "{}";
  std::string out;
  bool default_bounds = true;
  for (const ArrayDim& d : a.dims) default_bounds &= d.lower_bound == 1;
  if (!default_bounds) {
    for (const ArrayDim& d : a.dims) {
      out += '[' + std::to_string(d.lower_bound) + ':' +
             std::to_string(int64_t{d.lower_bound} + d.length - 1) + ']';
    }
    out += '=';
  }
  size_t next = 0;
  AppendLevel(a, 0, &next, &out);
  return out;
}

}  // namespace dbs

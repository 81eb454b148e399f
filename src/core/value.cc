#include "core/value.h"

#include <cstdio>
#include <cstring>

#include "core/array.h"
#include "core/temporal.h"

namespace dbs {

namespace {
constexpr char kHex[] = "0123456789abcdef";

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string HexEncode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string UuidToString(const Uuid& u) {
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[u.bytes[i] >> 4];
    out += kHex[u.bytes[i] & 15];
  }
  return out;
}

bool ParseUuid(std::string_view text, Uuid* out) {
  if (!text.empty() && text.front() == '{' && text.back() == '}') {
    text = text.substr(1, text.size() - 2);
  }
  int n = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '-') continue;
    if (i + 1 >= text.size() || n >= 16) return false;
    int hi = HexDigit(text[i]), lo = HexDigit(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->bytes[n++] = static_cast<uint8_t>(hi << 4 | lo);
    ++i;
  }
  return n == 16;
}

std::string EncodeBits(std::string_view digits) {
  uint32_t n = static_cast<uint32_t>(digits.size());
  std::string out(4 + (n + 7) / 8, '\0');
  std::memcpy(out.data(), &n, 4);
  for (uint32_t i = 0; i < n; ++i) {
    if (digits[i] == '1') out[4 + i / 8] = static_cast<char>(out[4 + i / 8] | (0x80 >> (i % 8)));
  }
  return out;
}

std::string DecodeBits(std::string_view enc, bool* ok) {
  *ok = false;
  if (enc.size() < 4) return {};
  uint32_t n;
  std::memcpy(&n, enc.data(), 4);
  if (enc.size() - 4 != (uint64_t{n} + 7) / 8) return {};
  std::string out(n, '0');
  for (uint32_t i = 0; i < n; ++i) {
    if (static_cast<uint8_t>(enc[4 + i / 8]) & (0x80 >> (i % 8))) out[i] = '1';
  }
  *ok = true;
  return out;
}

std::string EncodeGeometry(uint32_t srid, std::string_view wkb) {
  std::string out(4, '\0');
  std::memcpy(out.data(), &srid, 4);
  out.append(wkb);
  return out;
}

std::string Value::ToString() const {
  if (is_null()) return "NULL";
  char buf[64];
  switch (type_) {
    case LogicalType::kBool:
      return AsBool() ? "true" : "false";
    case LogicalType::kInt8:
    case LogicalType::kInt16:
    case LogicalType::kInt32:
    case LogicalType::kInt64:
      return std::to_string(AsInt());
    case LogicalType::kUInt8:
    case LogicalType::kUInt16:
    case LogicalType::kUInt32:
    case LogicalType::kUInt64:
      return std::to_string(AsUInt());
    case LogicalType::kFloat32:
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(AsFloat32()));
      return buf;
    case LogicalType::kFloat64:
      std::snprintf(buf, sizeof buf, "%.17g", AsFloat64());
      return buf;
    case LogicalType::kDate:
      return FormatDate(AsDate());
    case LogicalType::kTime:
      return FormatTime(AsMicros());
    case LogicalType::kTimestamp:
      return FormatTimestamp(AsMicros());
    case LogicalType::kTimestampTz:
      return FormatTimestampTz(AsMicros());
    case LogicalType::kTimeTz:
      return FormatTimeTz(AsTimeTz().micros, AsTimeTz().offset_seconds);
    case LogicalType::kInterval: {
      Interval iv = AsInterval();
      return FormatPgInterval(iv.months, iv.days, iv.micros);
    }
    case LogicalType::kUuid:
      return UuidToString(AsUuid());
    case LogicalType::kBytes:
    case LogicalType::kGeometry:
      return "\\x" + HexEncode(AsBytes());
    case LogicalType::kBit: {
      bool ok;
      std::string d = DecodeBits(AsBytes(), &ok);
      return ok ? d : "<bad bit string>";
    }
    case LogicalType::kArray: {
      auto a = DecodeArray(AsBytes());
      return a.ok() ? ArrayToString(*a) : "<bad array>";
    }
    default:
      return AsBytes();
  }
}

bool operator==(const Value& a, const Value& b) {
  if (a.type_ != b.type_ || a.v_.index() != b.v_.index()) return false;
  if (auto* f = std::get_if<float>(&a.v_)) {
    return std::memcmp(f, &std::get<float>(b.v_), sizeof(float)) == 0;
  }
  if (auto* d = std::get_if<double>(&a.v_)) {
    return std::memcmp(d, &std::get<double>(b.v_), sizeof(double)) == 0;
  }
  return a.v_ == b.v_;
}

}  // namespace dbs

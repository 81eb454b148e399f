#include "sources/mysql/mysql_text_decode.h"

#include <charconv>
#include <limits>
#include <string>

#include "core/temporal.h"

namespace dbs::mysql {

namespace {

Status Bad(std::string_view text, std::string_view what) {
  std::string shown(text.substr(0, 64));
  if (text.size() > 64) shown += "...";
  return Status::InvalidArgument("'" + shown + "' is not a valid " + std::string(what));
}

// Shortest round-trip text (MySQL's my_gcvt) -> double, exactly (std::from_chars rounds
// correctly). Accepts the forms MySQL prints: "-1.5", "1e23", "1.7976931348623157e308".
bool ParseDouble(std::string_view text, double* out) {
  if (text.empty()) return false;
  const char* begin = text.data();
  const char* end = begin + text.size();
  // from_chars does not take a leading '+'; MySQL never prints one, but be lenient.
  if (*begin == '+') ++begin;
  auto [p, ec] = std::from_chars(begin, end, *out, std::chars_format::general);
  return ec == std::errc() && p == end;
}

}  // namespace

bool FitsSigned(LogicalType t, int64_t v) {
  switch (t) {
    case LogicalType::kInt8:
      return v >= INT8_MIN && v <= INT8_MAX;
    case LogicalType::kInt16:
      return v >= INT16_MIN && v <= INT16_MAX;
    case LogicalType::kInt32:
      return v >= INT32_MIN && v <= INT32_MAX;
    default:
      return true;
  }
}

bool FitsUnsigned(LogicalType t, uint64_t v) {
  switch (t) {
    case LogicalType::kUInt8:
      return v <= UINT8_MAX;
    case LogicalType::kUInt16:
      return v <= UINT16_MAX;
    case LogicalType::kUInt32:
      return v <= UINT32_MAX;
    default:
      return true;
  }
}

bool ParseUInt64(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t v = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return false;
    const uint64_t d = static_cast<uint64_t>(ch - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool ParseInt64(std::string_view text, int64_t* out) {
  bool neg = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    neg = text[0] == '-';
    text.remove_prefix(1);
  }
  uint64_t mag;
  if (!ParseUInt64(text, &mag)) return false;
  if (neg) {
    if (mag > uint64_t{1} << 63) return false;
    *out = static_cast<int64_t>(0 - mag);  // two's complement; INT64_MIN included
  } else {
    if (mag > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(mag);
  }
  return true;
}

Result<CellDecoder> DecoderFor(const Column& c) {
  CellDecoder d;
  d.type = c.type;
  switch (c.type) {
    case LogicalType::kInt8:
    case LogicalType::kInt16:
    case LogicalType::kInt32:
    case LogicalType::kInt64:
      d.kind = CellKind::kSigned;
      return d;
    case LogicalType::kUInt8:
    case LogicalType::kUInt16:
    case LogicalType::kUInt32:
    case LogicalType::kUInt64:
      d.kind = CellKind::kUnsigned;
      return d;
    case LogicalType::kBool:
      d.kind = CellKind::kBool;
      return d;
    case LogicalType::kFloat32:
      d.kind = CellKind::kFloat32;
      return d;
    case LogicalType::kFloat64:
      d.kind = CellKind::kFloat64;
      return d;
    case LogicalType::kDecimal:
    case LogicalType::kText:
    case LogicalType::kBytes:
    case LogicalType::kJson:
    case LogicalType::kEnum:
    case LogicalType::kSet:
      d.kind = CellKind::kVarBytes;
      return d;
    case LogicalType::kBit:
      d.kind = CellKind::kBit;
      d.bits = c.length.value_or(1);
      if (d.bits < 1 || d.bits > 64) {
        return Status::Unsupported("column '" + c.name + "' (" + c.source_type +
                                   "): a MySQL BIT column has 1 to 64 bits, not " +
                                   std::to_string(d.bits));
      }
      return d;
    case LogicalType::kDate:
      d.kind = CellKind::kDate;
      return d;
    case LogicalType::kTimestamp:
    case LogicalType::kTimestampTz:
      d.kind = CellKind::kTimestamp;
      return d;
    case LogicalType::kTime:
      d.kind = CellKind::kTime;
      return d;
    case LogicalType::kUuid:
      d.kind = CellKind::kUuid;
      return d;
    case LogicalType::kGeometry:
      d.kind = CellKind::kGeometry;
      return d;
    default:
      break;
  }
  return Status::Unsupported("column '" + c.name + "' has type " + c.source_type + " (" +
                             std::string(LogicalTypeName(c.type)) +
                             "), which a MySQL source cannot read");
}

Status DecodeCell(const CellDecoder& d, std::string_view text, ColumnVector* out) {
  switch (d.kind) {
    case CellKind::kSigned: {
      int64_t v;
      if (!ParseInt64(text, &v) || !FitsSigned(d.type, v)) {
        return Bad(text, LogicalTypeName(d.type));
      }
      out->AppendInt(v);
      return Status::Ok();
    }
    case CellKind::kUnsigned: {
      uint64_t v;
      if (!ParseUInt64(text, &v) || !FitsUnsigned(d.type, v)) {
        return Bad(text, LogicalTypeName(d.type));
      }
      out->AppendUInt(v);
      return Status::Ok();
    }
    case CellKind::kBool: {
      int64_t v;
      if (!ParseInt64(text, &v)) return Bad(text, "boolean");
      out->AppendBool(v != 0);
      return Status::Ok();
    }
    case CellKind::kFloat32: {
      double v;
      if (!ParseDouble(text, &v)) return Bad(text, "float");
      // The text is the float widened to double, so the narrowing is exact.
      out->AppendFloat32(static_cast<float>(v));
      return Status::Ok();
    }
    case CellKind::kFloat64: {
      double v;
      if (!ParseDouble(text, &v)) return Bad(text, "double");
      out->AppendFloat64(v);
      return Status::Ok();
    }
    case CellKind::kVarBytes:
      out->AppendBytes(text);
      return Status::Ok();
    case CellKind::kBit: {
      // The server sends ceil(n/8) big-endian bytes; a leading zero byte more or less is
      // tolerated as long as the value fits n bits.
      if (text.size() > 8 && text.find_first_not_of('\0') < text.size() - 8) {
        return Bad("(binary)", "BIT value");
      }
      uint64_t v = 0;
      for (unsigned char ch : text) v = (v << 8) | ch;
      if (d.bits < 64 && (v >> d.bits) != 0) return Bad("(binary)", "BIT value");
      const uint32_t nbytes = (d.bits + 7) / 8;
      char buf[4 + 8];
      for (int i = 0; i < 4; ++i) buf[i] = static_cast<char>((d.bits >> (8 * i)) & 0xff);
      // The n-bit value, left-aligned in nbytes bytes (MSB first).
      const uint64_t aligned = v << (nbytes * 8 - d.bits);
      for (uint32_t i = 0; i < nbytes; ++i) {
        buf[4 + i] = static_cast<char>((aligned >> (8 * (nbytes - 1 - i))) & 0xff);
      }
      out->AppendBytes(std::string_view(buf, 4 + nbytes));
      return Status::Ok();
    }
    case CellKind::kDate: {
      auto v = ParseDate(text);
      if (!v.ok()) return v.status();
      out->AppendDate(*v);
      return Status::Ok();
    }
    case CellKind::kTimestamp: {
      auto v = ParseTimestamp(text);
      if (!v.ok()) return v.status();
      out->AppendMicros(*v);
      return Status::Ok();
    }
    case CellKind::kTime: {
      auto v = ParseTime(text);
      if (!v.ok()) return v.status();
      out->AppendMicros(*v);
      return Status::Ok();
    }
    case CellKind::kUuid: {
      Uuid u;
      if (!ParseUuid(text, &u)) return Bad(text, "UUID");
      out->AppendUuid(u);
      return Status::Ok();
    }
    case CellKind::kGeometry:
      if (text.size() < 4 + 5) return Bad("(binary)", "geometry value (SRID + WKB)");
      out->AppendBytes(text);
      return Status::Ok();
  }
  return Status::Internal("unknown cell kind");
}

}  // namespace dbs::mysql

#include "sinks/mysql/mysql_load_encoder.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "core/array.h"
#include "core/temporal.h"

namespace dbs::mysql {

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

bool In(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (s == n) return true;
  }
  return false;
}

}  // namespace

bool IsBinaryType(const std::string& t) {
  return In(t, {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"});
}
bool IsGeometryType(const std::string& t) {
  return In(t, {"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
                "multipolygon", "geometrycollection", "geomcollection"});
}
bool IsIntegralType(const std::string& t) {
  return In(t, {"tinyint", "smallint", "mediumint", "int", "integer", "bigint"});
}
bool IsFloatingType(const std::string& t) { return In(t, {"float", "double", "real"}); }
bool IsNumericType(const std::string& t) {
  return IsIntegralType(t) || IsFloatingType(t) || In(t, {"decimal", "numeric", "year"});
}
bool IsTemporalType(const std::string& t) { return In(t, {"date", "datetime", "timestamp"}); }

namespace {

template <typename T>
void AppendNumber(T v, std::string* out) {
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, static_cast<size_t>(p - buf));
}

// Shortest text that reads back as exactly `v` (a float widened to double is exact, so this
// also serves floats: MySQL parses the text as a double and narrows it for FLOAT columns).
bool AppendShortestDouble(double v, std::string* out) {
  if (!std::isfinite(v)) return false;
  char buf[40];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, static_cast<size_t>(p - buf));
  return true;
}

void AppendHex(std::string_view bytes, std::string* out) {
  const size_t at = out->size();
  out->resize(at + bytes.size() * 2);
  char* d = out->data() + at;
  for (unsigned char c : bytes) {
    *d++ = kHexDigits[c >> 4];
    *d++ = kHexDigits[c & 15];
  }
}

void AppendDigits(unsigned v, int width, std::string* out) {
  char buf[12];
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (int i = n; i < width; ++i) *out += '0';
  while (n > 0) *out += buf[--n];
}

Status Reject(const ColumnWriter& w, const std::string& why) {
  return Status::InvalidArgument("column '" + w.name + "': " + why);
}

// YYYY-MM-DD of a civil date MySQL can hold (years 0..9999, checked by CellCivil; MySQL's
// year 0 is our astronomical year 0), zero months and days kept.
void AppendYmd(const CivilDateTime& c, std::string* out) {
  AppendDigits(static_cast<unsigned>(c.year), 4, out);
  *out += '-';
  AppendDigits(c.month, 2, out);
  *out += '-';
  AppendDigits(c.day, 2, out);
}

void AppendHmsMicros(const CivilDateTime& c, std::string* out) {
  AppendDigits(c.hour, 2, out);
  *out += ':';
  AppendDigits(c.minute, 2, out);
  *out += ':';
  AppendDigits(c.second, 2, out);
  if (c.micros != 0) {
    *out += '.';
    AppendDigits(c.micros, 6, out);
  }
}

void AppendJsonString(std::string_view s, std::string* out) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      default:
        if (c < 0x20) {
          *out += "\\u00";
          *out += kHexDigits[c >> 4];
          *out += kHexDigits[c & 15];
        } else {
          *out += static_cast<char>(c);
        }
    }
  }
  *out += '"';
}

bool IsJsonNumber(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  size_t digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (digits == 0 || (digits > 1 && s[s[0] == '-' ? 1 : 0] == '0')) return false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t frac = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++frac;
    if (frac == 0) return false;
  }
  return i == s.size();
}

void AppendJsonElement(const Value& v, std::string* out) {
  if (v.is_null()) {
    *out += "null";
    return;
  }
  switch (v.type()) {
    case LogicalType::kBool:
      *out += v.AsBool() ? "true" : "false";
      return;
    case LogicalType::kInt8:
    case LogicalType::kInt16:
    case LogicalType::kInt32:
    case LogicalType::kInt64:
      AppendNumber(v.AsInt(), out);
      return;
    case LogicalType::kUInt8:
    case LogicalType::kUInt16:
    case LogicalType::kUInt32:
    case LogicalType::kUInt64:
      AppendNumber(v.AsUInt(), out);
      return;
    case LogicalType::kFloat32:
      if (!AppendShortestDouble(static_cast<double>(v.AsFloat32()), out)) {
        AppendJsonString(v.ToString(), out);
      }
      return;
    case LogicalType::kFloat64:
      if (!AppendShortestDouble(v.AsFloat64(), out)) AppendJsonString(v.ToString(), out);
      return;
    case LogicalType::kDecimal:
      if (IsJsonNumber(v.AsBytes())) {
        *out += v.AsBytes();
      } else {
        AppendJsonString(v.AsBytes(), out);
      }
      return;
    case LogicalType::kJson:
      *out += v.AsBytes();
      return;
    default:
      AppendJsonString(v.ToString(), out);
      return;
  }
}

void AppendJsonLevel(const ArrayValue& a, size_t dim, size_t* next, std::string* out) {
  *out += '[';
  const int32_t n = a.dims[dim].length;
  for (int32_t i = 0; i < n; ++i) {
    if (i > 0) *out += ',';
    if (dim + 1 < a.dims.size()) {
      AppendJsonLevel(a, dim + 1, next, out);
    } else {
      AppendJsonElement(a.elements[(*next)++], out);
    }
  }
  *out += ']';
}

}  // namespace

Result<std::string> ArrayToJson(std::string_view encoded) {
  DBS_ASSIGN_OR_RETURN(ArrayValue a, DecodeArray(encoded));
  if (a.dims.empty()) return std::string("[]");
  std::string out;
  size_t next = 0;
  AppendJsonLevel(a, 0, &next, &out);
  return out;
}

Result<ColumnWriter> WriterFor(const Column& src, const std::string& target_name,
                               const std::string& dt) {
  ColumnWriter w;
  w.name = target_name;
  w.data_type = dt;
  const bool binary = IsBinaryType(dt);
  const bool numeric = IsNumericType(dt) || dt == "bit";
  const bool unhex_target = binary || IsGeometryType(dt);
  switch (src.type) {
    case LogicalType::kInt8:
    case LogicalType::kInt16:
    case LogicalType::kInt32:
    case LogicalType::kInt64:
    case LogicalType::kUInt8:
    case LogicalType::kUInt16:
    case LogicalType::kUInt32:
    case LogicalType::kUInt64:
      w.kind = dt == "year"            ? TextKind::kYear
               : IsSignedInt(src.type) ? TextKind::kSigned
                                       : TextKind::kUnsigned;
      if (dt == "bit") w.expression = "CAST(? AS UNSIGNED)";
      return w;
    case LogicalType::kBool:
      w.kind = numeric ? TextKind::kBool : TextKind::kValueText;
      if (dt == "bit") w.expression = "CAST(? AS UNSIGNED)";
      return w;
    case LogicalType::kFloat32:
    case LogicalType::kFloat64:
      w.kind = numeric ? TextKind::kFloat : TextKind::kValueText;
      return w;
    case LogicalType::kDecimal:
    case LogicalType::kText:
    case LogicalType::kEnum:
    case LogicalType::kSet:
    case LogicalType::kJson:
      if (binary) {
        w.kind = TextKind::kHex;
        w.expression = "UNHEX(?)";
      } else {
        w.kind = TextKind::kRaw;
      }
      return w;
    case LogicalType::kBytes:
    case LogicalType::kGeometry:
      if (unhex_target) {
        w.kind = TextKind::kHex;
        w.expression = "UNHEX(?)";
      } else {
        w.kind = TextKind::kValueText;
      }
      return w;
    case LogicalType::kUuid:
      if (binary) {
        w.kind = TextKind::kHex;
        w.expression = "UNHEX(?)";
      } else {
        w.kind = TextKind::kUuidText;
      }
      return w;
    case LogicalType::kBit:
      w.kind = TextKind::kBitDigits;
      if (dt == "bit" || IsIntegralType(dt)) w.expression = "CAST(CONV(?, 2, 10) AS UNSIGNED)";
      return w;
    case LogicalType::kDate:
      w.kind = IsTemporalType(dt) ? TextKind::kDate : TextKind::kValueText;
      return w;
    case LogicalType::kTimestamp:
    case LogicalType::kTimestampTz:
      w.kind = IsTemporalType(dt) ? TextKind::kDateTime : TextKind::kValueText;
      return w;
    case LogicalType::kTime:
      w.kind = TextKind::kTime;
      return w;
    case LogicalType::kTimeTz:
    case LogicalType::kInterval:
      w.kind = TextKind::kValueText;
      return w;
    case LogicalType::kArray:
      // Arrays always travel as JSON (docs/type-mapping.md); MariaDB reports its JSON type as
      // longtext, so the target type name cannot decide this.
      w.kind = TextKind::kJsonArray;
      return w;
    default:
      break;
  }
  return Status::Unsupported("column '" + src.name + "' of type " +
                             std::string(LogicalTypeName(src.type)) +
                             " cannot be written into a MySQL " + dt + " column");
}

Status CellCivil(const ColumnWriter& w, const ColumnVector& col, size_t row, CivilDateTime* out) {
  if (w.kind == TextKind::kDate) {
    const int32_t v = col.GetDate(row);
    const TemporalKind k = DateKind(v);
    if (k == TemporalKind::kPosInfinity || k == TemporalKind::kNegInfinity) {
      return Reject(w, "the date " + FormatDate(v) + " cannot be stored in MySQL");
    }
    *out = DecodeDate(v);
    if (out->year < 0 || out->year > 9999) {
      return Reject(w, "the date " + FormatDate(v) + " is outside MySQL's years 0000-9999");
    }
    return Status::Ok();
  }
  if (w.kind != TextKind::kDateTime) return Status::Internal("not a date or timestamp writer");
  const int64_t v = col.GetMicros(row);
  const TemporalKind k = TimestampKind(v);
  if (k == TemporalKind::kPosInfinity || k == TemporalKind::kNegInfinity) {
    return Reject(w, "the timestamp " + FormatTimestamp(v) + " cannot be stored in MySQL");
  }
  *out = DecodeTimestamp(v);
  if (out->year < 0 || out->year > 9999) {
    return Reject(w, "the timestamp " + FormatTimestamp(v) + " is outside MySQL's years 0000-9999");
  }
  return Status::Ok();
}

Status CellDouble(const ColumnWriter& w, const ColumnVector& col, size_t row, double* out) {
  const double v = col.type() == LogicalType::kFloat32 ? static_cast<double>(col.GetFloat32(row))
                                                       : col.GetFloat64(row);
  if (!std::isfinite(v)) {
    return Reject(w, col.Get(row).ToString() +
                         " cannot be stored in MySQL (no NaN or infinity in FLOAT/DOUBLE)");
  }
  if (v == 0 && std::signbit(v)) {
    // MySQL and MariaDB store -0 as 0 whatever the input form: refuse rather than change it.
    return Reject(w, "-0 cannot be stored in MySQL (FLOAT/DOUBLE store it as 0)");
  }
  *out = v;
  return Status::Ok();
}

Status CellText(const ColumnWriter& w, const ColumnVector& col, size_t row, std::string* out) {
  switch (w.kind) {
    case TextKind::kSigned:
      AppendNumber(col.GetInt(row), out);
      return Status::Ok();
    case TextKind::kUnsigned:
      AppendNumber(col.GetUInt(row), out);
      return Status::Ok();
    case TextKind::kBool:
      *out += col.GetBool(row) ? '1' : '0';
      return Status::Ok();
    case TextKind::kYear: {
      if (IsSignedInt(col.type())) {
        const int64_t v = col.GetInt(row);
        if (v >= 0 && v < 10000) {
          AppendDigits(static_cast<unsigned>(v), 4, out);
        } else {
          AppendNumber(v, out);
        }
      } else {
        const uint64_t v = col.GetUInt(row);
        if (v < 10000) {
          AppendDigits(static_cast<unsigned>(v), 4, out);
        } else {
          AppendNumber(v, out);
        }
      }
      return Status::Ok();
    }
    case TextKind::kFloat: {
      double v;
      DBS_RETURN_IF_ERROR(CellDouble(w, col, row, &v));
      AppendShortestDouble(v, out);
      return Status::Ok();
    }
    case TextKind::kRaw:
      out->append(col.GetBytes(row));
      return Status::Ok();
    case TextKind::kHex:
      if (col.type() == LogicalType::kUuid) {
        AppendHex(std::string_view(col.FixedSlot(row), 16), out);
      } else {
        AppendHex(col.GetBytes(row), out);
      }
      return Status::Ok();
    case TextKind::kBitDigits: {
      std::string_view b = col.GetBytes(row);
      uint32_t n = 0;
      if (b.size() >= 4) std::memcpy(&n, b.data(), 4);
      if (b.size() < 4 || b.size() - 4 != (uint64_t{n} + 7) / 8) {
        return Reject(w, "malformed bit string");
      }
      const size_t at = out->size();
      out->resize(at + n);
      char* d = out->data() + at;
      for (uint32_t i = 0; i < n; ++i) {
        d[i] = (static_cast<uint8_t>(b[4 + i / 8]) & (0x80 >> (i % 8))) ? '1' : '0';
      }
      return Status::Ok();
    }
    case TextKind::kDate:
    case TextKind::kDateTime: {
      CivilDateTime c;
      DBS_RETURN_IF_ERROR(CellCivil(w, col, row, &c));
      AppendYmd(c, out);
      if (w.kind == TextKind::kDateTime) {
        *out += ' ';
        AppendHmsMicros(c, out);
      }
      return Status::Ok();
    }
    case TextKind::kTime:
      out->append(FormatTime(col.GetMicros(row)));
      return Status::Ok();
    case TextKind::kUuidText:
      out->append(UuidToString(col.GetUuid(row)));
      return Status::Ok();
    case TextKind::kJsonArray: {
      // A JSON array has no lower bounds: an array that does not start at 1 ([0:2]={1,2,3})
      // would silently change its subscripts (docs/type-mapping.md).
      const std::string_view a = col.GetBytes(row);
      const size_t ndims = a.size() >= 2 ? static_cast<uint8_t>(a[1]) : 0;
      for (size_t d = 0; d < ndims && 2 + d * 8 + 8 <= a.size(); ++d) {
        int32_t lower;
        std::memcpy(&lower, a.data() + 2 + d * 8 + 4, 4);
        if (lower != 1) {
          auto v = DecodeArray(a);
          return Reject(w, "the array " + (v.ok() ? ArrayToString(*v) : std::string("value")) +
                               " has a lower bound of " + std::to_string(lower) +
                               ", which a MySQL JSON array cannot keep");
        }
      }
      auto j = ArrayToJson(a);
      if (!j.ok()) return Reject(w, j.status().message());
      out->append(*j);
      return Status::Ok();
    }
    case TextKind::kValueText:
      out->append(col.Get(row).ToString());
      return Status::Ok();
  }
  return Status::Internal("unknown text kind");
}

void AppendLoadEscaped(std::string_view text, std::string* out) {
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    char esc;
    switch (c) {
      case '\\':
        esc = '\\';
        break;
      case '\t':
        esc = 't';
        break;
      case '\n':
        esc = 'n';
        break;
      case '\r':
        esc = 'r';
        break;
      case '\0':
        esc = '0';
        break;
      default:
        continue;
    }
    out->append(text.data() + start, i - start);
    *out += '\\';
    *out += esc;
    start = i + 1;
  }
  out->append(text.data() + start, text.size() - start);
}

}  // namespace dbs::mysql

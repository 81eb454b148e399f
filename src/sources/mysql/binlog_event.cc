#include "sources/mysql/binlog_event.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/temporal.h"
#include "sources/mysql/charset.h"
#include "sources/mysql/mysql_text_decode.h"

namespace dbs::mysql::binlog {

namespace {

// A bounds-checked little/big-endian cursor. After a failed read every later read returns
// zero/empty and ok() stays false, so callers check ok() once after a group of reads.
class Reader {
 public:
  explicit Reader(std::string_view data, size_t pos = 0) : d_(data), pos_(pos) {
    if (pos_ > d_.size()) ok_ = false;
  }
  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }
  size_t left() const { return ok_ ? d_.size() - pos_ : 0; }
  bool Need(size_t n) {
    if (!ok_ || d_.size() - pos_ < n) ok_ = false;
    return ok_;
  }
  uint64_t LE(size_t n) {
    if (!Need(n)) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(d_[pos_ + i])} << (8 * i);
    pos_ += n;
    return v;
  }
  uint64_t BE(size_t n) {
    if (!Need(n)) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(d_[pos_ + i]);
    pos_ += n;
    return v;
  }
  uint8_t U8() { return static_cast<uint8_t>(LE(1)); }
  std::string_view Bytes(size_t n) {
    if (!Need(n)) return {};
    std::string_view v = d_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  std::string_view Rest() { return Bytes(left()); }
  // MySQL length-encoded integer (251 = NULL reads as 0).
  uint64_t Packed() {
    const uint8_t b = U8();
    if (b < 251) return b;
    if (b == 251) return 0;
    if (b == 252) return LE(2);
    if (b == 253) return LE(3);
    if (b == 254) return LE(8);
    ok_ = false;
    return 0;
  }
  void Skip(size_t n) { (void)Bytes(n); }

 private:
  std::string_view d_;
  size_t pos_;
  bool ok_ = true;
};

Status Corrupt(const std::string& what) {
  return Status::Corruption("binlog: " + what + " (corrupt or truncated event)");
}

std::string TypeName(uint8_t t) { return "binlog column type " + std::to_string(t); }

Status Mismatch(const Column& c, uint8_t type) {
  return Status::InvalidArgument("column '" + c.name + "' is " +
                                 std::string(LogicalTypeName(c.type)) + " (" + c.source_type +
                                 ") in the table's schema but the binlog sends " + TypeName(type) +
                                 ": the table changed since it was described");
}

const std::array<uint32_t, 256>& CrcTable() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

std::vector<bool> ReadBitmap(Reader* r, size_t bits) {
  std::string_view b = r->Bytes((bits + 7) / 8);
  std::vector<bool> out(bits, false);
  if (!r->ok()) return out;
  for (size_t i = 0; i < bits; ++i) out[i] = (static_cast<uint8_t>(b[i / 8]) >> (i % 8)) & 1;
  return out;
}

size_t CountSet(const std::vector<bool>& v) {
  size_t n = 0;
  for (bool b : v) n += b ? 1 : 0;
  return n;
}

// Appends one date-time cell of the column's type from civil fields.
Status AppendCivilTimestamp(const CivilDateTime& c, ColumnVector* out) {
  auto v = EncodeTimestamp(c);
  if (!v.ok()) return Corrupt("bad date-time value: " + v.status().message());
  out->AppendMicros(*v);
  return Status::Ok();
}

// Fractional seconds of TIME2/DATETIME2/TIMESTAMP2: (fsp+1)/2 big-endian bytes, scaled to
// microseconds.
int64_t ReadFraction(Reader* r, unsigned fsp) {
  switch (fsp) {
    case 1:
    case 2:
      return static_cast<int64_t>(r->BE(1)) * 10000;
    case 3:
    case 4:
      return static_cast<int64_t>(r->BE(2)) * 100;
    case 5:
    case 6:
      return static_cast<int64_t>(r->BE(3));
    default:
      return 0;
  }
}

Status DecodeTime2(Reader* r, unsigned fsp, ColumnVector* out) {
  // Packed form: (intpart << 24) + microseconds, offset so that it sorts as unsigned.
  int64_t packed;
  if (fsp >= 5) {
    packed = static_cast<int64_t>(r->BE(6)) - 0x800000000000LL;
  } else {
    int64_t intpart = static_cast<int64_t>(r->BE(3)) - 0x800000LL;
    int64_t frac = 0;
    if (fsp == 1 || fsp == 2) {
      frac = static_cast<int64_t>(r->BE(1));
      if (intpart < 0 && frac != 0) {
        intpart++;
        frac -= 0x100;
      }
      frac *= 10000;
    } else if (fsp == 3 || fsp == 4) {
      frac = static_cast<int64_t>(r->BE(2));
      if (intpart < 0 && frac != 0) {
        intpart++;
        frac -= 0x10000;
      }
      frac *= 100;
    }
    packed = intpart * (int64_t{1} << 24) + frac;
  }
  if (!r->ok()) return Corrupt("truncated TIME value");
  const bool neg = packed < 0;
  const uint64_t mag = neg ? 0 - static_cast<uint64_t>(packed) : static_cast<uint64_t>(packed);
  const uint64_t hms = mag >> 24;
  const uint64_t micros = mag & 0xFFFFFF;
  const uint64_t hour = (hms >> 12) & 0x3FF, minute = (hms >> 6) & 0x3F, second = hms & 0x3F;
  if (minute > 59 || second > 59 || micros > 999999) return Corrupt("bad TIME value");
  const int64_t total =
      static_cast<int64_t>(((hour * 60 + minute) * 60 + second) * 1'000'000 + micros);
  out->AppendMicros(neg ? -total : total);
  return Status::Ok();
}

Status DecodeDateTime2(Reader* r, unsigned fsp, ColumnVector* out) {
  const int64_t intpart = static_cast<int64_t>(r->BE(5)) - 0x8000000000LL;
  const int64_t frac = ReadFraction(r, fsp);
  if (!r->ok()) return Corrupt("truncated DATETIME value");
  if (intpart < 0) return Corrupt("negative DATETIME value");
  const uint64_t ymd = static_cast<uint64_t>(intpart) >> 17;
  const uint64_t ym = ymd >> 5;
  const uint64_t hms = static_cast<uint64_t>(intpart) & 0x1FFFF;
  CivilDateTime c;
  c.year = static_cast<int32_t>(ym / 13);
  c.month = static_cast<uint8_t>(ym % 13);
  c.day = static_cast<uint8_t>(ymd & 0x1F);
  c.hour = static_cast<uint8_t>(hms >> 12);
  c.minute = static_cast<uint8_t>((hms >> 6) & 0x3F);
  c.second = static_cast<uint8_t>(hms & 0x3F);
  c.micros = static_cast<uint32_t>(frac);
  if (c.year > 9999 || c.hour > 23 || c.minute > 59 || c.second > 59 || frac > 999999) {
    return Corrupt("bad DATETIME value");
  }
  return AppendCivilTimestamp(c, out);
}

// Seconds + microseconds since the Unix epoch (UTC) -> TIMESTAMP cell; 0 is the zero date.
Status AppendUnixTimestamp(int64_t seconds, int64_t micros, ColumnVector* out) {
  if (seconds == 0 && micros == 0) {
    CivilDateTime zero{0, 0, 0, 0, 0, 0, 0};
    return AppendCivilTimestamp(zero, out);
  }
  out->AppendMicros(seconds * kMicrosPerSecond + micros - kUnixToEpochMicros);
  return Status::Ok();
}

// ENUM/SET/STRING metadata: (real type, max length).
void StringMeta(uint16_t meta, uint8_t* real_type, uint32_t* max_len) {
  const uint8_t b0 = static_cast<uint8_t>(meta >> 8), b1 = static_cast<uint8_t>(meta & 0xFF);
  if ((b0 & 0x30) != 0x30) {
    *real_type = static_cast<uint8_t>(b0 | 0x30);
    *max_len = b1 | (static_cast<uint32_t>((b0 & 0x30) ^ 0x30) << 4);
  } else {
    *real_type = b0;
    *max_len = b1;
  }
}

// The bytes of a string-like value into a text/bytes/json column.
Status AppendStringLike(const Column& c, uint8_t type, std::string_view v, ColumnVector* out) {
  switch (c.type) {
    case LogicalType::kText:
    case LogicalType::kJson:
    case LogicalType::kEnum:
    case LogicalType::kSet:
    case LogicalType::kDecimal:
      if (c.source_type == "inet4" || c.source_type == "inet6") {
        return Status::Unsupported("column '" + c.name + "' (" + c.source_type +
                                   "): MariaDB inet4/inet6 values cannot be read from the binlog "
                                   "yet; exclude the table from CDC");
      }
      if (c.type == LogicalType::kText && !IsUtf8OrBinaryCharset(c.charset)) {
        // Row images carry the column's own character set; the snapshot gets UTF-8 from the
        // server. Convert exactly or fail (charset.h).
        auto text = CharsetToUtf8(c.charset, v);
        if (!text.ok()) return text.status().WithContext("column '" + c.name + "'");
        out->AppendBytes(*text);
        return Status::Ok();
      }
      out->AppendBytes(v);
      return Status::Ok();
    case LogicalType::kBytes: {
      // BINARY(n) values are padded with zero bytes to n; the binlog may strip them.
      if (c.length && *c.length > v.size() && c.source_type.rfind("binary(", 0) == 0) {
        std::string padded(v);
        padded.resize(*c.length, '\0');
        out->AppendBytes(padded);
      } else {
        out->AppendBytes(v);
      }
      return Status::Ok();
    }
    case LogicalType::kGeometry:
      if (v.size() < 4 + 5) return Corrupt("geometry value shorter than SRID + WKB");
      out->AppendBytes(v);
      return Status::Ok();
    case LogicalType::kUuid:
      return Status::Unsupported("column '" + c.name +
                                 "' (uuid): MariaDB UUID values cannot be read from the binlog "
                                 "yet; exclude the table from CDC");
    default:
      return Mismatch(c, type);
  }
}

const char* const kDig2Bytes = "\0\1\1\2\2\3\3\4\4\4";

// --- MySQL binary JSON -------------------------------------------------------------------------

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
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
      default:
        if (u < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", u);
          *out += buf;
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

// A double as MySQL's JSON printer writes it: the shortest round-trip digits, in fixed notation
// (".0" added to integral values) for exponents -5..14, else as "1.5e23".
void AppendJsonDouble(double d, std::string* out) {
  char buf[64];
  auto sci = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string s(buf, sci.ec == std::errc() ? sci.ptr : buf);
  const size_t e = s.find('e');
  if (e == std::string::npos) {  // inf/nan cannot be in JSON; print what we have
    *out += s;
    return;
  }
  const int exp = std::atoi(s.c_str() + e + 1);
  if (exp >= -5 && exp < 15) {
    auto fx = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::fixed);
    std::string f(buf, fx.ec == std::errc() ? fx.ptr : buf);
    if (f.find('.') == std::string::npos) f += ".0";
    *out += f;
    return;
  }
  // Scientific as MySQL writes it: "1e23", "1.5e-7" (no '+', no leading exponent zeros).
  *out += s.substr(0, e) + "e" + std::to_string(exp);
}

enum : uint8_t {
  kJsonSmallObject = 0,
  kJsonLargeObject = 1,
  kJsonSmallArray = 2,
  kJsonLargeArray = 3,
  kJsonLiteral = 4,
  kJsonInt16 = 5,
  kJsonUInt16 = 6,
  kJsonInt32 = 7,
  kJsonUInt32 = 8,
  kJsonInt64 = 9,
  kJsonUInt64 = 10,
  kJsonDouble = 11,
  kJsonString = 12,
  kJsonOpaque = 15,
};

Status JsonValue(uint8_t type, std::string_view data, int depth, std::string* out);

bool ReadVarLen(Reader* r, uint64_t* len) {
  uint64_t v = 0;
  for (int i = 0; i < 5; ++i) {
    const uint8_t b = r->U8();
    if (!r->ok()) return false;
    v |= uint64_t{b & 0x7Fu} << (7 * i);
    if ((b & 0x80) == 0) {
      *len = v;
      return true;
    }
  }
  return false;
}

Status JsonContainer(bool object, bool large, std::string_view data, int depth, std::string* out) {
  if (depth > 100) return Corrupt("JSON nested too deeply");
  const size_t w = large ? 4 : 2;
  Reader r(data);
  const uint64_t count = r.LE(w);
  const uint64_t size = r.LE(w);
  if (!r.ok() || size > data.size()) return Corrupt("JSON container header");
  const size_t key_entry = w + 2, value_entry = 1 + w;
  const size_t header = 2 * w + (object ? count * key_entry : 0) + count * value_entry;
  if (count > size || header > size) return Corrupt("JSON container entries");
  data = data.substr(0, size);
  out->push_back(object ? '{' : '[');
  for (uint64_t i = 0; i < count; ++i) {
    if (i > 0) *out += ", ";
    if (object) {
      Reader k(data, 2 * w + i * key_entry);
      const uint64_t koff = k.LE(w), klen = k.LE(2);
      if (!k.ok() || koff > size || klen > size - koff) return Corrupt("JSON object key");
      AppendJsonString(data.substr(koff, klen), out);
      *out += ": ";
    }
    Reader v(data, 2 * w + (object ? count * key_entry : 0) + i * value_entry);
    const uint8_t t = v.U8();
    if (!v.ok()) return Corrupt("JSON value entry");
    const bool inlined = t == kJsonLiteral || t == kJsonInt16 || t == kJsonUInt16 ||
                         (large && (t == kJsonInt32 || t == kJsonUInt32));
    if (inlined) {
      DBS_RETURN_IF_ERROR(JsonValue(t, v.Bytes(w), depth + 1, out));
    } else {
      const uint64_t off = v.LE(w);
      if (!v.ok() || off > size) return Corrupt("JSON value offset");
      DBS_RETURN_IF_ERROR(JsonValue(t, data.substr(off), depth + 1, out));
    }
  }
  out->push_back(object ? '}' : ']');
  return Status::Ok();
}

Status JsonValue(uint8_t type, std::string_view data, int depth, std::string* out) {
  Reader r(data);
  switch (type) {
    case kJsonSmallObject:
    case kJsonLargeObject:
      return JsonContainer(true, type == kJsonLargeObject, data, depth, out);
    case kJsonSmallArray:
    case kJsonLargeArray:
      return JsonContainer(false, type == kJsonLargeArray, data, depth, out);
    case kJsonLiteral: {
      const uint8_t v = r.U8();
      if (!r.ok() || v > 2) return Corrupt("JSON literal");
      *out += v == 0 ? "null" : (v == 1 ? "true" : "false");
      return Status::Ok();
    }
    case kJsonInt16:
      *out += std::to_string(static_cast<int16_t>(r.LE(2)));
      break;
    case kJsonUInt16:
      *out += std::to_string(static_cast<uint16_t>(r.LE(2)));
      break;
    case kJsonInt32:
      *out += std::to_string(static_cast<int32_t>(r.LE(4)));
      break;
    case kJsonUInt32:
      *out += std::to_string(static_cast<uint32_t>(r.LE(4)));
      break;
    case kJsonInt64:
      *out += std::to_string(static_cast<int64_t>(r.LE(8)));
      break;
    case kJsonUInt64:
      *out += std::to_string(r.LE(8));
      break;
    case kJsonDouble: {
      const uint64_t bits = r.LE(8);
      if (!r.ok()) return Corrupt("JSON double");
      double d;
      std::memcpy(&d, &bits, sizeof d);
      AppendJsonDouble(d, out);
      return Status::Ok();
    }
    case kJsonString: {
      uint64_t len = 0;
      if (!ReadVarLen(&r, &len) || len > r.left()) return Corrupt("JSON string");
      AppendJsonString(r.Bytes(len), out);
      return Status::Ok();
    }
    case kJsonOpaque: {
      const uint8_t field_type = r.U8();
      uint64_t len = 0;
      if (!r.ok() || !ReadVarLen(&r, &len) || len > r.left()) return Corrupt("JSON opaque");
      std::string_view v = r.Bytes(len);
      if (field_type == kTypeNewDecimal && v.size() >= 2) {
        size_t used = 0;
        auto text = DecimalToText(v.substr(2), static_cast<uint8_t>(v[0]),
                                  static_cast<uint8_t>(v[1]), &used);
        if (!text.ok()) return text.status();
        *out += *text;
        return Status::Ok();
      }
      if ((field_type == kTypeDate || field_type == kTypeDateTime || field_type == kTypeTimestamp ||
           field_type == kTypeTime) &&
          v.size() >= 8) {
        // Packed int64: (intpart << 24) + microseconds, as MySQL's TIME_to_longlong_packed.
        Reader p(v);
        const int64_t packed = static_cast<int64_t>(p.LE(8));
        const bool neg = packed < 0;
        const uint64_t mag =
            neg ? 0 - static_cast<uint64_t>(packed) : static_cast<uint64_t>(packed);
        const uint64_t intpart = mag >> 24, micros = mag & 0xFFFFFF;
        std::string s;
        char buf[64];
        if (field_type == kTypeTime) {
          const uint64_t h = (intpart >> 12) & 0x3FF, m = (intpart >> 6) & 0x3F,
                         sec = intpart & 0x3F;
          std::snprintf(buf, sizeof buf, "%s%02u:%02u:%02u", neg ? "-" : "",
                        static_cast<unsigned>(h), static_cast<unsigned>(m),
                        static_cast<unsigned>(sec));
        } else {
          const uint64_t ymd = intpart >> 17, ym = ymd >> 5, hms = intpart & 0x1FFFF;
          if (field_type == kTypeDate) {
            std::snprintf(buf, sizeof buf, "%04u-%02u-%02u", static_cast<unsigned>(ym / 13),
                          static_cast<unsigned>(ym % 13), static_cast<unsigned>(ymd & 0x1F));
          } else {
            std::snprintf(buf, sizeof buf, "%04u-%02u-%02u %02u:%02u:%02u",
                          static_cast<unsigned>(ym / 13), static_cast<unsigned>(ym % 13),
                          static_cast<unsigned>(ymd & 0x1F), static_cast<unsigned>(hms >> 12),
                          static_cast<unsigned>((hms >> 6) & 0x3F),
                          static_cast<unsigned>(hms & 0x3F));
          }
        }
        s = buf;
        if (micros != 0 && field_type != kTypeDate) {
          std::snprintf(buf, sizeof buf, ".%06u", static_cast<unsigned>(micros % 1000000));
          s += buf;
        }
        AppendJsonString(s, out);
        return Status::Ok();
      }
      // Other opaque values print as MySQL does: "base64:typeN:<base64>".
      static const char* kB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
      std::string s = "base64:type" + std::to_string(field_type) + ":";
      for (size_t i = 0; i < v.size(); i += 3) {
        uint32_t n = static_cast<uint8_t>(v[i]) << 16;
        if (i + 1 < v.size()) n |= static_cast<uint8_t>(v[i + 1]) << 8;
        if (i + 2 < v.size()) n |= static_cast<uint8_t>(v[i + 2]);
        s += kB64[(n >> 18) & 63];
        s += kB64[(n >> 12) & 63];
        s += i + 1 < v.size() ? kB64[(n >> 6) & 63] : '=';
        s += i + 2 < v.size() ? kB64[n & 63] : '=';
      }
      AppendJsonString(s, out);
      return Status::Ok();
    }
    default:
      return Corrupt("unknown JSON value type " + std::to_string(type));
  }
  if (!r.ok()) return Corrupt("truncated JSON number");
  return Status::Ok();
}

// Reads the optional metadata of a table map (TLV fields after the null bitmap).
Status ParseOptionalMetadata(Reader* r, TableMap* m) {
  const size_t n = m->column_count();
  auto is_numeric = [&](size_t i) {
    switch (m->types[i]) {
      case kTypeTiny:
      case kTypeShort:
      case kTypeInt24:
      case kTypeLong:
      case kTypeLongLong:
      case kTypeFloat:
      case kTypeDouble:
      case kTypeNewDecimal:
      case kTypeDecimal:
        return true;
      default:
        return false;
    }
  };
  auto is_string = [&](size_t i) {
    const uint8_t t = m->RealType(i);
    return t == kTypeString || t == kTypeVarchar || t == kTypeVarString || t == kTypeBlob ||
           t == kTypeTinyBlob || t == kTypeMediumBlob || t == kTypeLongBlob;
  };
  std::vector<size_t> enums, sets, strings;
  for (size_t i = 0; i < n; ++i) {
    if (m->RealType(i) == kTypeEnum) enums.push_back(i);
    if (m->RealType(i) == kTypeSet) sets.push_back(i);
    if (is_string(i)) strings.push_back(i);
  }
  while (r->ok() && r->left() > 0) {
    const uint8_t field = r->U8();
    const uint64_t len = r->Packed();
    if (!r->ok() || len > r->left()) return Corrupt("table map optional metadata length");
    Reader f(r->Bytes(len));
    switch (field) {
      case 1: {  // SIGNEDNESS: one bit per numeric column, most significant bit first
        m->unsigned_flags.assign(n, false);
        m->has_signedness = true;
        size_t bit = 0;
        std::string_view bits = f.Rest();
        for (size_t i = 0; i < n; ++i) {
          if (!is_numeric(i)) continue;
          if (bit / 8 >= bits.size()) return Corrupt("table map signedness");
          m->unsigned_flags[i] = (static_cast<uint8_t>(bits[bit / 8]) >> (7 - bit % 8)) & 1;
          ++bit;
        }
        break;
      }
      case 2: {  // DEFAULT_CHARSET: default, then (column index among strings, charset) pairs
        const uint64_t def = f.Packed();
        m->charsets.assign(n, 0);
        for (size_t s : strings) m->charsets[s] = static_cast<uint32_t>(def);
        while (f.ok() && f.left() > 0) {
          const uint64_t idx = f.Packed(), cs = f.Packed();
          if (f.ok() && idx < strings.size()) m->charsets[strings[idx]] = static_cast<uint32_t>(cs);
        }
        break;
      }
      case 3: {  // COLUMN_CHARSET: one per string column
        m->charsets.assign(n, 0);
        for (size_t s : strings) m->charsets[s] = static_cast<uint32_t>(f.Packed());
        break;
      }
      case 4: {  // COLUMN_NAME
        m->column_names.clear();
        for (size_t i = 0; i < n && f.ok(); ++i) {
          const uint64_t l = f.Packed();
          m->column_names.emplace_back(f.Bytes(l));
        }
        break;
      }
      case 5:    // SET_STR_VALUE
      case 6: {  // ENUM_STR_VALUE
        auto& labels = field == 5 ? m->set_labels : m->enum_labels;
        const auto& cols = field == 5 ? sets : enums;
        labels.assign(n, {});
        for (size_t c : cols) {
          const uint64_t count = f.Packed();
          if (!f.ok() || count > f.left()) return Corrupt("table map enum/set labels");
          for (uint64_t k = 0; k < count && f.ok(); ++k) {
            const uint64_t l = f.Packed();
            labels[c].emplace_back(f.Bytes(l));
          }
        }
        break;
      }
      case 8: {  // SIMPLE_PRIMARY_KEY
        while (f.ok() && f.left() > 0) m->primary_key.push_back(static_cast<uint32_t>(f.Packed()));
        break;
      }
      case 9: {  // PRIMARY_KEY_WITH_PREFIX
        while (f.ok() && f.left() > 0) {
          m->primary_key.push_back(static_cast<uint32_t>(f.Packed()));
          (void)f.Packed();
        }
        break;
      }
      default:  // geometry types, enum/set charsets, visibility: not needed
        break;
    }
    if (!f.ok()) return Corrupt("table map optional metadata field " + std::to_string(field));
  }
  for (uint32_t k : m->primary_key) {
    if (k >= n) return Corrupt("table map primary key column out of range");
  }
  if (!m->column_names.empty() && m->column_names.size() != n) {
    return Corrupt("table map column names");
  }
  return Status::Ok();
}

}  // namespace

uint32_t Crc32(std::string_view data) {
  const auto& t = CrcTable();
  uint32_t c = 0xFFFFFFFFu;
  for (char ch : data) c = t[(c ^ static_cast<uint8_t>(ch)) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

Result<Event> ParseEvent(std::string_view raw, ChecksumAlg alg, bool verify) {
  Reader r(raw);
  Event ev;
  ev.header.timestamp = static_cast<uint32_t>(r.LE(4));
  ev.header.type = r.U8();
  ev.header.server_id = static_cast<uint32_t>(r.LE(4));
  ev.header.event_length = static_cast<uint32_t>(r.LE(4));
  ev.header.next_position = static_cast<uint32_t>(r.LE(4));
  ev.header.flags = static_cast<uint16_t>(r.LE(2));
  if (!r.ok()) return Corrupt("event shorter than its 19-byte header");
  if (ev.header.event_length != raw.size()) {
    return Corrupt("event length " + std::to_string(ev.header.event_length) + " but " +
                   std::to_string(raw.size()) + " bytes received");
  }
  size_t body_end = raw.size();
  if (alg == ChecksumAlg::kCrc32) {
    if (raw.size() < kHeaderSize + 4) return Corrupt("event too short for its checksum");
    body_end -= 4;
    if (verify) {
      Reader c(raw, body_end);
      const uint32_t want = static_cast<uint32_t>(c.LE(4));
      const uint32_t got = Crc32(raw.substr(0, body_end));
      if (want != got) {
        return Status::Corruption("binlog: CRC32 mismatch in event type " +
                                  std::to_string(ev.header.type) + " ending at offset " +
                                  std::to_string(ev.header.next_position));
      }
    }
  }
  ev.body = raw.substr(kHeaderSize, body_end - kHeaderSize);
  return ev;
}

Result<FormatDescription> ParseFormatDescription(std::string_view raw) {
  // The event carries its own checksum algorithm in its last 5 bytes (alg + CRC32), or in the
  // last byte when the algorithm is OFF (alg byte 0, no checksum... servers still append a
  // 4-byte placeholder only when the alg is not OFF).
  Reader h(raw);
  h.Skip(4);
  const uint8_t type = h.U8();
  h.Skip(4);
  const uint32_t len = static_cast<uint32_t>(h.LE(4));
  if (!h.ok() || type != kFormatDescriptionEvent || len != raw.size()) {
    return Corrupt("format description event header");
  }
  constexpr size_t kFixed = 2 + 50 + 4 + 1;
  if (raw.size() < kHeaderSize + kFixed + 1) return Corrupt("format description event too short");
  FormatDescription fd;
  // With a checksum: ... alg(1) crc(4). Without: ... alg(1) = 0.
  const uint8_t alg_if_crc = static_cast<uint8_t>(raw[raw.size() - 5]);
  const uint8_t alg_if_off = static_cast<uint8_t>(raw[raw.size() - 1]);
  size_t lengths_end;
  if (raw.size() >= kHeaderSize + kFixed + 5 && alg_if_crc == 1) {
    fd.checksum = ChecksumAlg::kCrc32;
    Reader c(raw, raw.size() - 4);
    const uint32_t want = static_cast<uint32_t>(c.LE(4));
    if (want != Crc32(raw.substr(0, raw.size() - 4))) {
      return Status::Corruption("binlog: CRC32 mismatch in the format description event");
    }
    lengths_end = raw.size() - 5;
  } else if (alg_if_off == 0) {
    fd.checksum = ChecksumAlg::kOff;
    lengths_end = raw.size() - 1;
  } else {
    return Corrupt("format description event: unknown checksum algorithm");
  }
  Reader r(raw, kHeaderSize);
  fd.binlog_version = static_cast<uint16_t>(r.LE(2));
  std::string_view ver = r.Bytes(50);
  fd.server_version = std::string(ver.substr(0, std::min(ver.find('\0'), ver.size())));
  r.Skip(4);
  fd.header_length = r.U8();
  if (!r.ok() || r.pos() > lengths_end) return Corrupt("format description event");
  if (fd.header_length < kHeaderSize) return Corrupt("format description header length");
  std::string_view lens = raw.substr(r.pos(), lengths_end - r.pos());
  fd.post_header_lengths.assign(lens.begin(), lens.end());
  return fd;
}

uint8_t TableMap::RealType(size_t column) const {
  const uint8_t t = types[column];
  if (t != kTypeString) return t;
  uint8_t real;
  uint32_t len;
  StringMeta(metadata[column], &real, &len);
  return real == kTypeEnum || real == kTypeSet ? real : t;
}

Result<Rotate> ParseRotate(const Event& ev) {
  Reader r(ev.body);
  Rotate rot;
  rot.position = r.LE(8);
  rot.file = std::string(r.Rest());
  if (!r.ok() || rot.file.empty()) return Corrupt("rotate event");
  return rot;
}

Result<Query> ParseQuery(const Event& ev, const FormatDescription& fd) {
  Reader r(ev.body);
  Query q;
  q.thread_id = static_cast<uint32_t>(r.LE(4));
  r.Skip(4);  // execution time
  const uint8_t db_len = r.U8();
  q.error_code = static_cast<uint16_t>(r.LE(2));
  const uint16_t status_len = static_cast<uint16_t>(r.LE(2));
  const uint8_t post = fd.PostHeaderLength(kQueryEvent);
  if (post > 13) r.Skip(post - 13);
  r.Skip(status_len);
  q.database = std::string(r.Bytes(db_len));
  r.Skip(1);  // NUL
  q.statement = std::string(r.Rest());
  if (!r.ok()) return Corrupt("query event");
  return q;
}

Result<uint64_t> ParseXid(const Event& ev) {
  Reader r(ev.body);
  const uint64_t xid = r.LE(8);
  if (!r.ok()) return Corrupt("xid event");
  return xid;
}

std::string MariaGtid::ToString() const {
  return std::to_string(domain_id) + "-" + std::to_string(server_id) + "-" +
         std::to_string(sequence);
}

Result<MariaGtid> ParseMariaGtid(const Event& ev) {
  Reader r(ev.body);
  MariaGtid g;
  g.sequence = r.LE(8);
  g.domain_id = static_cast<uint32_t>(r.LE(4));
  g.flags = r.U8();
  g.server_id = ev.header.server_id;
  if (!r.ok()) return Corrupt("MariaDB GTID event");
  return g;
}

Result<std::vector<MariaGtid>> ParseMariaGtidList(const Event& ev) {
  Reader r(ev.body);
  const uint32_t count = static_cast<uint32_t>(r.LE(4)) & 0x0FFFFFFF;
  if (!r.ok() || count > r.left() / 16) return Corrupt("MariaDB GTID list event");
  std::vector<MariaGtid> out;
  for (uint32_t i = 0; i < count; ++i) {
    MariaGtid g;
    g.domain_id = static_cast<uint32_t>(r.LE(4));
    g.server_id = static_cast<uint32_t>(r.LE(4));
    g.sequence = r.LE(8);
    out.push_back(g);
  }
  if (!r.ok()) return Corrupt("MariaDB GTID list event");
  return out;
}

std::string MysqlGtid::ToString() const { return uuid + ":" + std::to_string(gno); }

Result<MysqlGtid> ParseMysqlGtid(const Event& ev) {
  Reader r(ev.body);
  r.Skip(1);  // flags
  std::string_view sid = r.Bytes(16);
  MysqlGtid g;
  g.gno = r.LE(8);
  if (!r.ok()) return Corrupt("MySQL GTID event");
  static const char* kHex = "0123456789abcdef";
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) g.uuid += '-';
    const auto b = static_cast<uint8_t>(sid[i]);
    g.uuid += kHex[b >> 4];
    g.uuid += kHex[b & 15];
  }
  return g;
}

Result<Heartbeat> ParseHeartbeat(const Event& ev) {
  Heartbeat h;
  h.file = std::string(ev.body);
  h.position = ev.header.next_position;
  return h;
}

Result<TableMap> ParseTableMap(const Event& ev, const FormatDescription& fd) {
  Reader r(ev.body);
  TableMap m;
  const uint8_t post = fd.PostHeaderLength(kTableMapEvent);
  if (post == 6) {
    m.table_id = r.LE(4);
    r.Skip(2);
  } else {
    m.table_id = r.LE(6);
    r.Skip(2);
    if (post > 8) r.Skip(post - 8);
  }
  const uint8_t db_len = r.U8();
  m.database = std::string(r.Bytes(db_len));
  r.Skip(1);
  const uint8_t t_len = r.U8();
  m.table = std::string(r.Bytes(t_len));
  r.Skip(1);
  const uint64_t n = r.Packed();
  if (!r.ok() || n > r.left()) return Corrupt("table map event");
  std::string_view types = r.Bytes(n);
  m.types.assign(types.begin(), types.end());
  const uint64_t meta_len = r.Packed();
  if (!r.ok() || meta_len > r.left()) return Corrupt("table map metadata length");
  Reader meta(r.Bytes(meta_len));
  m.metadata.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    switch (m.types[i]) {
      case kTypeFloat:
      case kTypeDouble:
      case kTypeBlob:
      case kTypeTinyBlob:
      case kTypeMediumBlob:
      case kTypeLongBlob:
      case kTypeGeometry:
      case kTypeJson:
      case kTypeTimestamp2:
      case kTypeDateTime2:
      case kTypeTime2:
        m.metadata[i] = meta.U8();
        break;
      case kTypeVarchar:
      case kTypeVarString:
      case kTypeBit:
        m.metadata[i] = static_cast<uint16_t>(meta.LE(2));
        break;
      case kTypeNewDecimal:
      case kTypeString:
      case kTypeEnum:
      case kTypeSet:
        m.metadata[i] = static_cast<uint16_t>(meta.BE(2));
        break;
      default:
        break;
    }
  }
  if (!meta.ok() || !r.ok()) return Corrupt("table map column metadata");
  m.nullable = ReadBitmap(&r, n);
  if (!r.ok()) return Corrupt("table map null bitmap");
  DBS_RETURN_IF_ERROR(ParseOptionalMetadata(&r, &m));
  return m;
}

bool IsRowsEvent(uint8_t t) {
  return (t >= kWriteRowsV1 && t <= kDeleteRowsV1) || (t >= kWriteRowsV2 && t <= kDeleteRowsV2);
}

Result<RowsEvent> ParseRowsEvent(const Event& ev, const FormatDescription& fd) {
  const uint8_t t = ev.header.type;
  if (t >= kMariaWriteRowsCompressedV1 && t <= kMariaDeleteRowsCompressedV2) {
    return Status::Unsupported(
        "compressed MariaDB row events are not supported: set log_bin_compress=OFF");
  }
  if (t == kMysqlPartialUpdateRowsEvent) {
    return Status::Unsupported(
        "MySQL partial JSON update events are not supported: set binlog_row_value_options=''");
  }
  if (!IsRowsEvent(t)) return Status::InvalidArgument("not a rows event");
  RowsEvent e;
  e.v2 = t >= kWriteRowsV2;
  const uint8_t base = e.v2 ? kWriteRowsV2 : kWriteRowsV1;
  e.kind = static_cast<RowsKind>(t - base);
  Reader r(ev.body);
  const uint8_t post = fd.PostHeaderLength(t);
  if (post == 6) {
    e.table_id = r.LE(4);
  } else {
    e.table_id = r.LE(6);
  }
  e.flags = static_cast<uint16_t>(r.LE(2));
  if (e.v2) {
    const uint16_t extra_len = static_cast<uint16_t>(r.LE(2));
    if (!r.ok() || extra_len < 2) return Corrupt("rows event extra data length");
    e.extra = r.Bytes(extra_len - 2u);
  }
  const uint64_t n = r.Packed();
  if (!r.ok() || n > 8 * r.left() + 8) return Corrupt("rows event column count");
  e.column_count = n;
  e.present = ReadBitmap(&r, n);
  if (e.kind == RowsKind::kUpdate) e.present_after = ReadBitmap(&r, n);
  if (!r.ok()) return Corrupt("rows event column bitmaps");
  e.rows = r.Rest();
  return e;
}

Result<std::string> DecimalToText(std::string_view bytes, int precision, int scale,
                                  size_t* consumed) {
  if (precision < 1 || precision > 65 || scale < 0 || scale > 30 || scale > precision) {
    return Corrupt("decimal precision " + std::to_string(precision) + ", scale " +
                   std::to_string(scale));
  }
  const int intg = precision - scale;
  const int intg0 = intg / 9, intg0x = intg % 9, frac0 = scale / 9, frac0x = scale % 9;
  const size_t size =
      static_cast<size_t>(intg0 * 4 + kDig2Bytes[intg0x] + frac0 * 4 + kDig2Bytes[frac0x]);
  if (bytes.size() < size) return Corrupt("truncated DECIMAL value");
  std::string buf(bytes.substr(0, size));
  const bool neg = (static_cast<uint8_t>(buf[0]) & 0x80) == 0;
  buf[0] = static_cast<char>(buf[0] ^ 0x80);
  if (neg) {
    for (char& c : buf) c = static_cast<char>(~c);
  }
  Reader r(buf);
  std::string ip, fp;
  auto group = [&](int digits, std::string* out) -> bool {
    const size_t nb = digits == 9 ? 4 : static_cast<size_t>(kDig2Bytes[digits]);
    uint64_t v = r.BE(nb);
    uint64_t limit = 1;
    for (int i = 0; i < digits; ++i) limit *= 10;
    if (v >= limit) return false;
    std::string s = std::to_string(v);
    out->append(static_cast<size_t>(digits) - s.size(), '0');
    *out += s;
    return true;
  };
  bool ok = true;
  if (intg0x > 0) ok = ok && group(intg0x, &ip);
  for (int i = 0; i < intg0; ++i) ok = ok && group(9, &ip);
  for (int i = 0; i < frac0; ++i) ok = ok && group(9, &fp);
  if (frac0x > 0) ok = ok && group(frac0x, &fp);
  if (!ok || !r.ok()) return Corrupt("DECIMAL digit group out of range");
  size_t nz = ip.find_first_not_of('0');
  ip = nz == std::string::npos ? "0" : ip.substr(nz);
  const bool zero = ip == "0" && fp.find_first_not_of('0') == std::string::npos;
  std::string out = neg && !zero ? "-" : "";
  out += ip;
  if (scale > 0) out += "." + fp;
  *consumed = size;
  return out;
}

Result<std::string> MysqlJsonToText(std::string_view bytes) {
  if (bytes.empty()) return std::string("null");
  std::string out;
  DBS_RETURN_IF_ERROR(JsonValue(static_cast<uint8_t>(bytes[0]), bytes.substr(1), 0, &out));
  return out;
}

Status DecodeValue(uint8_t type, uint16_t meta, const Column& c, std::string_view data, size_t* pos,
                   ColumnVector* out) {
  Reader r(data, *pos);
  auto done = [&](const char* what) -> Status {
    if (!r.ok())
      return Corrupt(std::string("truncated ") + what + " value of column '" + c.name + "'");
    *pos = r.pos();
    return Status::Ok();
  };
  auto append_int = [&](uint64_t raw, int bytes) -> Status {
    if (IsUnsignedInt(c.type)) {
      out->AppendUInt(raw);
    } else if (IsSignedInt(c.type)) {
      const int shift = 64 - 8 * bytes;
      out->AppendInt(static_cast<int64_t>(raw << shift) >> shift);
    } else if (c.type == LogicalType::kBool) {
      out->AppendBool(raw != 0);
    } else {
      return Mismatch(c, type);
    }
    return Status::Ok();
  };
  switch (type) {
    case kTypeTiny:
    case kTypeShort:
    case kTypeInt24:
    case kTypeLong:
    case kTypeLongLong: {
      const int bytes = type == kTypeTiny    ? 1
                        : type == kTypeShort ? 2
                        : type == kTypeInt24 ? 3
                        : type == kTypeLong  ? 4
                                             : 8;
      const uint64_t raw = r.LE(static_cast<size_t>(bytes));
      if (!r.ok()) return done("integer");
      DBS_RETURN_IF_ERROR(append_int(raw, bytes));
      return done("integer");
    }
    case kTypeYear: {
      const uint8_t y = r.U8();
      if (!r.ok()) return done("YEAR");
      if (!IsSignedInt(c.type) && !IsUnsignedInt(c.type)) return Mismatch(c, type);
      DBS_RETURN_IF_ERROR(append_int(y == 0 ? 0 : 1900u + y, 8));
      return done("YEAR");
    }
    case kTypeFloat: {
      const uint32_t bits = static_cast<uint32_t>(r.LE(4));
      if (!r.ok()) return done("FLOAT");
      float f;
      std::memcpy(&f, &bits, sizeof f);
      if (c.type == LogicalType::kFloat32) {
        out->AppendFloat32(f);
      } else if (c.type == LogicalType::kFloat64) {
        out->AppendFloat64(f);
      } else {
        return Mismatch(c, type);
      }
      return done("FLOAT");
    }
    case kTypeDouble: {
      const uint64_t bits = r.LE(8);
      if (!r.ok()) return done("DOUBLE");
      if (c.type != LogicalType::kFloat64) return Mismatch(c, type);
      double d;
      std::memcpy(&d, &bits, sizeof d);
      out->AppendFloat64(d);
      return done("DOUBLE");
    }
    case kTypeNewDecimal: {
      if (c.type != LogicalType::kDecimal) return Mismatch(c, type);
      size_t used = 0;
      auto text =
          DecimalToText(data.substr(std::min(*pos, data.size())), meta >> 8, meta & 0xFF, &used);
      if (!text.ok()) return text.status().WithContext("column '" + c.name + "'");
      out->AppendBytes(*text);
      *pos += used;
      return Status::Ok();
    }
    case kTypeDate:
    case kTypeNewDate: {
      const uint32_t v = static_cast<uint32_t>(r.LE(3));
      if (!r.ok()) return done("DATE");
      if (c.type != LogicalType::kDate) return Mismatch(c, type);
      CivilDateTime d;
      d.year = static_cast<int32_t>(v >> 9);
      d.month = static_cast<uint8_t>((v >> 5) & 15);
      d.day = static_cast<uint8_t>(v & 31);
      auto e = EncodeDate(d);
      if (!e.ok()) return Corrupt("bad DATE value of column '" + c.name + "'");
      out->AppendDate(*e);
      return done("DATE");
    }
    case kTypeTime: {
      // Old TIME: signed 3-byte integer [-]HHMMSS.
      const uint32_t raw = static_cast<uint32_t>(r.LE(3));
      if (!r.ok()) return done("TIME");
      if (c.type != LogicalType::kTime) return Mismatch(c, type);
      int32_t v = static_cast<int32_t>(raw << 8) >> 8;
      const bool neg = v < 0;
      const int64_t a = neg ? -static_cast<int64_t>(v) : v;
      const int64_t secs = (a / 10000) * 3600 + (a / 100 % 100) * 60 + a % 100;
      out->AppendMicros((neg ? -secs : secs) * kMicrosPerSecond);
      return done("TIME");
    }
    case kTypeTime2:
      if (c.type != LogicalType::kTime) return Mismatch(c, type);
      DBS_RETURN_IF_ERROR(DecodeTime2(&r, meta, out));
      return done("TIME");
    case kTypeDateTime: {
      // Old DATETIME: YYYYMMDDhhmmss as a little-endian u64.
      const uint64_t v = r.LE(8);
      if (!r.ok()) return done("DATETIME");
      if (c.type != LogicalType::kTimestamp && c.type != LogicalType::kTimestampTz) {
        return Mismatch(c, type);
      }
      const uint64_t d = v / 1000000, t = v % 1000000;
      CivilDateTime cd;
      cd.year = static_cast<int32_t>(d / 10000);
      cd.month = static_cast<uint8_t>(d / 100 % 100);
      cd.day = static_cast<uint8_t>(d % 100);
      cd.hour = static_cast<uint8_t>(t / 10000);
      cd.minute = static_cast<uint8_t>(t / 100 % 100);
      cd.second = static_cast<uint8_t>(t % 100);
      if (cd.year > 9999) return Corrupt("bad DATETIME value of column '" + c.name + "'");
      DBS_RETURN_IF_ERROR(AppendCivilTimestamp(cd, out));
      return done("DATETIME");
    }
    case kTypeDateTime2:
      if (c.type != LogicalType::kTimestamp && c.type != LogicalType::kTimestampTz) {
        return Mismatch(c, type);
      }
      DBS_RETURN_IF_ERROR(DecodeDateTime2(&r, meta, out));
      return done("DATETIME");
    case kTypeTimestamp:
    case kTypeTimestamp2: {
      const int64_t secs =
          type == kTypeTimestamp ? static_cast<int64_t>(r.LE(4)) : static_cast<int64_t>(r.BE(4));
      const int64_t frac = type == kTypeTimestamp2 ? ReadFraction(&r, meta) : 0;
      if (!r.ok()) return done("TIMESTAMP");
      if (c.type != LogicalType::kTimestampTz && c.type != LogicalType::kTimestamp) {
        return Mismatch(c, type);
      }
      DBS_RETURN_IF_ERROR(AppendUnixTimestamp(secs, frac, out));
      return done("TIMESTAMP");
    }
    case kTypeVarchar:
    case kTypeVarString: {
      const uint64_t len = r.LE(meta < 256 ? 1 : 2);
      std::string_view v = r.Bytes(len);
      if (!r.ok()) return done("VARCHAR");
      DBS_RETURN_IF_ERROR(AppendStringLike(c, type, v, out));
      return done("VARCHAR");
    }
    case kTypeString:
    case kTypeEnum:
    case kTypeSet: {
      uint8_t real = static_cast<uint8_t>(type);
      uint32_t max_len = 0;
      if (type == kTypeString) StringMeta(meta, &real, &max_len);
      if (type != kTypeString) max_len = meta & 0xFF;
      if (real == kTypeEnum) {
        if (max_len != 1 && max_len != 2) return Corrupt("ENUM pack length");
        const uint64_t idx = r.LE(max_len);
        if (!r.ok()) return done("ENUM");
        if (c.type != LogicalType::kEnum && c.type != LogicalType::kText) {
          return Mismatch(c, type);
        }
        if (c.enum_values.empty()) {
          out->AppendBytes(std::to_string(idx));  // labels unknown (no schema, no metadata)
        } else if (idx == 0) {
          out->AppendBytes("");
        } else if (idx <= c.enum_values.size()) {
          out->AppendBytes(c.enum_values[idx - 1]);
        } else {
          return Corrupt("ENUM index " + std::to_string(idx) + " out of range for column '" +
                         c.name + "'");
        }
        return done("ENUM");
      }
      if (real == kTypeSet) {
        if (max_len < 1 || max_len > 8) return Corrupt("SET pack length");
        const uint64_t bits = r.LE(max_len);
        if (!r.ok()) return done("SET");
        if (c.type != LogicalType::kSet && c.type != LogicalType::kText) return Mismatch(c, type);
        if (c.enum_values.empty()) {
          out->AppendBytes(std::to_string(bits));  // labels unknown (no schema, no metadata)
          return done("SET");
        }
        std::string s;
        for (size_t i = 0; i < 64 && i < c.enum_values.size(); ++i) {
          if ((bits >> i) & 1) {
            if (!s.empty()) s += ',';
            s += c.enum_values[i];
          }
        }
        if (c.enum_values.size() < 64 && (bits >> c.enum_values.size()) != 0) {
          return Corrupt("SET bits out of range for column '" + c.name + "'");
        }
        out->AppendBytes(s);
        return done("SET");
      }
      const uint64_t len = r.LE(max_len < 256 ? 1 : 2);
      std::string_view v = r.Bytes(len);
      if (!r.ok()) return done("CHAR");
      DBS_RETURN_IF_ERROR(AppendStringLike(c, type, v, out));
      return done("CHAR");
    }
    case kTypeBit: {
      const uint32_t bits = (meta >> 8) * 8u + (meta & 0xFF);
      const size_t nbytes = (bits + 7) / 8;
      std::string_view v = r.Bytes(nbytes);
      if (!r.ok()) return done("BIT");
      if (c.type != LogicalType::kBit) return Mismatch(c, type);
      CellDecoder d;
      d.kind = CellKind::kBit;
      d.type = LogicalType::kBit;
      d.bits = c.length.value_or(bits == 0 ? 1 : bits);
      if (d.bits < 1 || d.bits > 64) return Corrupt("BIT width");
      Status s = DecodeCell(d, v, out);
      if (!s.ok()) return Corrupt("bad BIT value of column '" + c.name + "'");
      return done("BIT");
    }
    case kTypeBlob:
    case kTypeTinyBlob:
    case kTypeMediumBlob:
    case kTypeLongBlob:
    case kTypeGeometry:
    case kTypeJson: {
      const size_t lb = meta;
      if (lb < 1 || lb > 4) return Corrupt("BLOB length bytes " + std::to_string(lb));
      const uint64_t len = r.LE(lb);
      std::string_view v = r.Bytes(len);
      if (!r.ok()) return done("BLOB");
      if (type == kTypeJson) {
        if (c.type != LogicalType::kJson && c.type != LogicalType::kText) {
          return Mismatch(c, type);
        }
        auto text = MysqlJsonToText(v);
        if (!text.ok()) return text.status().WithContext("column '" + c.name + "'");
        out->AppendBytes(*text);
        return done("JSON");
      }
      DBS_RETURN_IF_ERROR(AppendStringLike(c, type, v, out));
      return done("BLOB");
    }
    default:
      return Status::Unsupported("column '" + c.name + "': " + TypeName(type) +
                                 " cannot be decoded");
  }
}

Status DecodeRow(const TableMap& map, const std::vector<bool>& present, std::string_view rows,
                 size_t* pos, const std::vector<ColumnTarget>& targets) {
  const size_t n = map.column_count();
  if (present.size() != n || targets.size() != n) {
    return Corrupt("rows event has " + std::to_string(present.size()) + " columns, the table map " +
                   std::to_string(n));
  }
  Reader r(rows, *pos);
  const std::vector<bool> nulls = ReadBitmap(&r, CountSet(present));
  if (!r.ok()) return Corrupt("truncated row null bitmap");
  size_t p = r.pos(), k = 0;
  for (size_t i = 0; i < n; ++i) {
    const ColumnTarget& t = targets[i];
    if (!present[i]) {
      if (t.out != nullptr) t.out->AppendUnchanged();
      continue;
    }
    const bool is_null = nulls[k++];
    if (is_null) {
      if (t.out != nullptr) t.out->AppendNull();
      continue;
    }
    if (t.out != nullptr && t.column != nullptr) {
      DBS_RETURN_IF_ERROR(DecodeValue(map.types[i], map.metadata[i], *t.column, rows, &p, t.out));
    } else {
      // Skipped column: decode into a scratch vector of its natural type to advance.
      Column scratch = ColumnForTableMap(map, i);
      ColumnVector v(scratch.type);
      DBS_RETURN_IF_ERROR(DecodeValue(map.types[i], map.metadata[i], scratch, rows, &p, &v));
    }
  }
  *pos = p;
  return Status::Ok();
}

Column ColumnForTableMap(const TableMap& map, size_t i) {
  Column c;
  c.name = i < map.column_names.size() ? map.column_names[i] : "col" + std::to_string(i + 1);
  const bool uns = map.has_signedness && i < map.unsigned_flags.size() && map.unsigned_flags[i];
  const uint16_t meta = map.metadata[i];
  c.source_type = TypeName(map.types[i]);
  switch (map.RealType(i)) {
    case kTypeTiny:
      c.type = uns ? LogicalType::kUInt8 : LogicalType::kInt8;
      break;
    case kTypeShort:
      c.type = uns ? LogicalType::kUInt16 : LogicalType::kInt16;
      break;
    case kTypeInt24:
    case kTypeLong:
      c.type = uns ? LogicalType::kUInt32 : LogicalType::kInt32;
      break;
    case kTypeLongLong:
      c.type = uns ? LogicalType::kUInt64 : LogicalType::kInt64;
      break;
    case kTypeYear:
      c.type = LogicalType::kInt16;
      break;
    case kTypeFloat:
      c.type = LogicalType::kFloat32;
      break;
    case kTypeDouble:
      c.type = LogicalType::kFloat64;
      break;
    case kTypeNewDecimal:
      c.type = LogicalType::kDecimal;
      break;
    case kTypeDate:
    case kTypeNewDate:
      c.type = LogicalType::kDate;
      break;
    case kTypeTime:
    case kTypeTime2:
      c.type = LogicalType::kTime;
      break;
    case kTypeDateTime:
    case kTypeDateTime2:
      c.type = LogicalType::kTimestamp;
      break;
    case kTypeTimestamp:
    case kTypeTimestamp2:
      c.type = LogicalType::kTimestampTz;
      break;
    case kTypeBit:
      c.type = LogicalType::kBit;
      c.length = std::max<uint32_t>(1, (meta >> 8) * 8u + (meta & 0xFF));
      if (*c.length > 64) c.length = 64;
      break;
    case kTypeEnum:
      c.type = LogicalType::kEnum;
      if (i < map.enum_labels.size()) c.enum_values = map.enum_labels[i];
      break;
    case kTypeSet:
      c.type = LogicalType::kSet;
      if (i < map.set_labels.size()) c.enum_values = map.set_labels[i];
      break;
    case kTypeJson:
      c.type = LogicalType::kJson;
      break;
    case kTypeGeometry:
      c.type = LogicalType::kGeometry;
      break;
    default:
      c.type = LogicalType::kBytes;
      break;
  }
  return c;
}

}  // namespace dbs::mysql::binlog

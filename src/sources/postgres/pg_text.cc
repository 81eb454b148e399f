#include "sources/postgres/pg_text.h"

#include <charconv>
#include <limits>
#include <optional>
#include <vector>

#include "core/array.h"
#include "core/bytes.h"
#include "core/temporal.h"
#include "core/value.h"

namespace dbs::pg {

namespace {

Status Bad(LogicalType type, std::string_view text) {
  constexpr size_t kShow = 60;
  std::string shown(text.substr(0, kShow));
  if (text.size() > kShow) shown += "...";
  return Status::Corruption("malformed " + std::string(LogicalTypeName(type)) +
                            " text from the server: '" + shown + "'");
}

template <typename T>
bool ParseInt(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 10);
  return ec == std::errc() && p == s.data() + s.size();
}

template <typename T>
bool ParseFloat(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "\x0a1b" (bytea_output = hex).
bool ParseBytea(std::string_view s, std::string* out) {
  if (s.size() < 2 || s[0] != '\\' || s[1] != 'x' || (s.size() - 2) % 2 != 0) return false;
  out->clear();
  out->reserve((s.size() - 2) / 2);
  for (size_t i = 2; i < s.size(); i += 2) {
    const int hi = HexDigit(s[i]), lo = HexDigit(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

// "13:45:00.25+05:30" (the zone is [+-]hh[:mm[:ss]]).
bool ParseTimeTz(std::string_view s, TimeTz* out) {
  const size_t z = s.find_last_of("+-");
  if (z == std::string_view::npos || z == 0) return false;
  Result<int64_t> t = ParseTime(s.substr(0, z));
  if (!t.ok()) return false;
  const bool neg = s[z] == '-';
  std::string_view zone = s.substr(z + 1);
  int32_t parts[3] = {0, 0, 0};
  for (int i = 0; i < 3 && !zone.empty(); ++i) {
    const size_t colon = zone.find(':');
    std::string_view p = zone.substr(0, colon);
    if (p.size() != 2 || !ParseInt(p, &parts[i])) return false;
    zone = colon == std::string_view::npos ? std::string_view() : zone.substr(colon + 1);
    if (colon != std::string_view::npos && zone.empty()) return false;
  }
  if (!zone.empty()) return false;
  const int32_t secs = parts[0] * 3600 + parts[1] * 60 + parts[2];
  *out = TimeTz{*t, neg ? -secs : secs};
  return true;
}

// ISO 8601 intervals as PostgreSQL prints them with IntervalStyle = iso_8601:
// "P1Y2M3DT4H5M6.789S", "P-1DT2H", "PT0S"; every field may carry its own sign.
bool ParseInterval(std::string_view s, Interval* out) {
  if (s.empty() || s[0] != 'P') return false;
  __int128 months = 0, days = 0, micros = 0;
  bool time = false;
  size_t i = 1;
  if (i == s.size()) return false;
  while (i < s.size()) {
    if (s[i] == 'T') {
      if (time) return false;
      time = true;
      ++i;
      continue;
    }
    bool neg = false;
    if (s[i] == '-' || s[i] == '+') neg = s[i++] == '-';
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start || i - start > 18) return false;
    int64_t whole = 0;
    if (!ParseInt(s.substr(start, i - start), &whole)) return false;
    int64_t frac_us = 0;
    if (i < s.size() && s[i] == '.') {
      ++i;
      const size_t fs = i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
      if (i == fs) return false;
      int64_t scale = 100000;
      for (size_t k = fs; k < i && scale > 0; ++k, scale /= 10) frac_us += (s[k] - '0') * scale;
    }
    if (i == s.size()) return false;
    const char unit = s[i++];
    const __int128 sign = neg ? -1 : 1;
    if (frac_us != 0 && !(time && unit == 'S')) return false;
    if (!time) {
      switch (unit) {
        case 'Y':
          months += sign * whole * 12;
          break;
        case 'M':
          months += sign * whole;
          break;
        case 'W':
          days += sign * whole * 7;
          break;
        case 'D':
          days += sign * whole;
          break;
        default:
          return false;
      }
    } else {
      switch (unit) {
        case 'H':
          micros += sign * whole * 3600 * kMicrosPerSecond;
          break;
        case 'M':
          micros += sign * whole * 60 * kMicrosPerSecond;
          break;
        case 'S':
          micros += sign * (static_cast<__int128>(whole) * kMicrosPerSecond + frac_us);
          break;
        default:
          return false;
      }
    }
  }
  constexpr auto i32min = std::numeric_limits<int32_t>::min();
  constexpr auto i32max = std::numeric_limits<int32_t>::max();
  constexpr auto i64min = std::numeric_limits<int64_t>::min();
  constexpr auto i64max = std::numeric_limits<int64_t>::max();
  if (months < i32min || months > i32max || days < i32min || days > i32max || micros < i64min ||
      micros > i64max) {
    return false;
  }
  *out = Interval{static_cast<int32_t>(months), static_cast<int32_t>(days),
                  static_cast<int64_t>(micros)};
  return true;
}

// money as printed with lc_monetary C: "-$1,234.56" -> "-1234.56".
bool CleanMoney(std::string_view s, std::string* out) {
  out->clear();
  bool digits = false;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      out->push_back(c);
      digits = true;
    } else if (c == '.' || (c == '-' && out->empty())) {
      out->push_back(c);
    } else if (c != '$' && c != ',' && c != ' ') {
      return false;
    }
  }
  return digits;
}

// One scalar value of `type` from its text.
Status ParseScalar(LogicalType type, const TextPlan& plan, std::string_view s, Value* v) {
  const bool bpchar = plan.bpchar;
  const bool money = plan.money;
  using L = LogicalType;
  switch (type) {
    case L::kBool:
      if (s == "t" || s == "true") {
        *v = Value::Bool(true);
      } else if (s == "f" || s == "false") {
        *v = Value::Bool(false);
      } else {
        return Bad(type, s);
      }
      return Status::Ok();
    case L::kInt8:
    case L::kInt16:
    case L::kInt32:
    case L::kInt64: {
      int64_t x = 0;
      if (!ParseInt(s, &x)) return Bad(type, s);
      const int bits = type == L::kInt8 ? 8 : type == L::kInt16 ? 16 : type == L::kInt32 ? 32 : 64;
      if (bits < 64 && (x < -(int64_t{1} << (bits - 1)) || x >= (int64_t{1} << (bits - 1)))) {
        return Bad(type, s);
      }
      *v = Value::Int(type, x);
      return Status::Ok();
    }
    case L::kUInt8:
    case L::kUInt16:
    case L::kUInt32:
    case L::kUInt64: {
      uint64_t x = 0;
      if (!ParseInt(s, &x)) return Bad(type, s);
      const int bits = type == L::kUInt8    ? 8
                       : type == L::kUInt16 ? 16
                       : type == L::kUInt32 ? 32
                                            : 64;
      if (bits < 64 && x >= (uint64_t{1} << bits)) return Bad(type, s);
      *v = Value::UInt(type, x);
      return Status::Ok();
    }
    case L::kFloat32: {
      float f = 0;
      if (!ParseFloat(s, &f)) return Bad(type, s);
      *v = Value::Float32(f);
      return Status::Ok();
    }
    case L::kFloat64: {
      double d = 0;
      if (!ParseFloat(s, &d)) return Bad(type, s);
      *v = Value::Float64(d);
      return Status::Ok();
    }
    case L::kDecimal: {
      if (!money) {
        if (s.empty()) return Bad(type, s);
        *v = Value::Bytes(type, std::string(s));
        return Status::Ok();
      }
      std::string clean;
      if (!CleanMoney(s, &clean)) return Bad(type, s);
      *v = Value::Bytes(type, std::move(clean));
      return Status::Ok();
    }
    case L::kText:
      if (bpchar) {
        while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
      }
      *v = Value::Bytes(type, std::string(s));
      return Status::Ok();
    case L::kJson:
    case L::kEnum:
    case L::kSet:
      *v = Value::Bytes(type, std::string(s));
      return Status::Ok();
    case L::kBytes: {
      std::string b;
      if (!ParseBytea(s, &b)) return Bad(type, s);
      *v = Value::Bytes(type, std::move(b));
      return Status::Ok();
    }
    case L::kUuid: {
      Uuid u;
      if (!ParseUuid(s, &u)) return Bad(type, s);
      *v = Value::UuidValue(u);
      return Status::Ok();
    }
    case L::kBit:
      for (char c : s) {
        if (c != '0' && c != '1') return Bad(type, s);
      }
      *v = Value::Bytes(type, EncodeBits(s));
      return Status::Ok();
    case L::kDate: {
      Result<int32_t> d = ParseDate(s);
      if (!d.ok()) return Bad(type, s);
      *v = Value::Date(*d);
      return Status::Ok();
    }
    case L::kTime:
    case L::kTimestamp:
    case L::kTimestampTz: {
      Result<int64_t> t = type == L::kTime        ? ParseTime(s)
                          : type == L::kTimestamp ? ParseTimestamp(s)
                                                  : ParseTimestampTz(s);
      if (!t.ok()) return Bad(type, s);
      *v = Value::Micros(type, *t);
      return Status::Ok();
    }
    case L::kTimeTz: {
      TimeTz t;
      if (!ParseTimeTz(s, &t)) return Bad(type, s);
      *v = Value::TimeTzValue(t);
      return Status::Ok();
    }
    case L::kInterval: {
      Interval iv;
      if (!ParseInterval(s, &iv)) return Bad(type, s);
      *v = Value::IntervalValue(iv);
      return Status::Ok();
    }
    default:
      return Status::Unsupported("values of type " + std::string(LogicalTypeName(type)) +
                                 " cannot be decoded from PostgreSQL text output");
  }
}

// PostgreSQL array text: optional "[l:u][l:u]=" bounds, then nested braces; elements are
// unquoted (NULL means null) or double-quoted with backslash escapes.
class ArrayTextParser {
 public:
  explicit ArrayTextParser(std::string_view s) : s_(s) {}

  bool Parse() {
    std::vector<int32_t> lowers;
    if (pos_ < s_.size() && s_[pos_] == '[') {
      while (pos_ < s_.size() && s_[pos_] == '[') {
        ++pos_;
        int32_t lo = 0, hi = 0;
        if (!Int(&lo) || !Consume(':') || !Int(&hi) || !Consume(']')) return false;
        if (hi < lo - 1) return false;
        lowers.push_back(lo);
      }
      if (!Consume('=')) return false;
    }
    if (!Consume('{')) return false;
    if (pos_ < s_.size() && s_[pos_] == '}') {  // empty array
      ++pos_;
      return pos_ == s_.size() && lowers.empty();
    }
    if (!Level(0)) return false;
    if (pos_ != s_.size()) return false;
    if (!lowers.empty() && lowers.size() != dims_.size()) return false;
    lowers_ = lowers.empty() ? std::vector<int32_t>(dims_.size(), 1) : lowers;
    return true;
  }

  const std::vector<int32_t>& dims() const { return dims_; }
  const std::vector<int32_t>& lowers() const { return lowers_; }
  const std::vector<std::optional<std::string>>& elements() const { return elements_; }

 private:
  bool Consume(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Int(int32_t* v) {
    const size_t start = pos_;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    std::string_view t = s_.substr(start, pos_ - start);
    if (!t.empty() && t[0] == '+') t.remove_prefix(1);
    return ParseInt(t, v);
  }
  // Parses the items after '{' at `depth` through the matching '}'.
  bool Level(size_t depth) {
    if (depth >= static_cast<size_t>(kMaxArrayDims)) return false;
    const bool nested = pos_ < s_.size() && s_[pos_] == '{';
    if (depth == dims_.size()) {
      if (depth > 0 && leaf_depth_ >= 0 && static_cast<int>(depth) > leaf_depth_) return false;
      dims_.push_back(-1);
    }
    int32_t count = 0;
    while (true) {
      if (nested) {
        if (!Consume('{') || !Level(depth + 1)) return false;
      } else {
        if (leaf_depth_ < 0) leaf_depth_ = static_cast<int>(depth);
        if (leaf_depth_ != static_cast<int>(depth)) return false;
        if (!Element()) return false;
      }
      ++count;
      if (Consume(',')) continue;
      if (Consume('}')) break;
      return false;
    }
    if (dims_[depth] == -1) {
      dims_[depth] = count;
    } else if (dims_[depth] != count) {
      return false;  // ragged
    }
    return true;
  }
  bool Element() {
    if (pos_ >= s_.size()) return false;
    if (s_[pos_] == '"') {
      ++pos_;
      std::string v;
      while (true) {
        if (pos_ >= s_.size()) return false;
        char c = s_[pos_++];
        if (c == '"') break;
        if (c == '\\') {
          if (pos_ >= s_.size()) return false;
          c = s_[pos_++];
        }
        v.push_back(c);
      }
      elements_.emplace_back(std::move(v));
      return true;
    }
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != '}' && s_[pos_] != '{' &&
           s_[pos_] != '"') {
      ++pos_;
    }
    std::string_view t = s_.substr(start, pos_ - start);
    if (t.empty()) return false;
    if (t.size() == 4 && (t[0] == 'N' || t[0] == 'n') && (t[1] == 'U' || t[1] == 'u') &&
        (t[2] == 'L' || t[2] == 'l') && (t[3] == 'L' || t[3] == 'l')) {
      elements_.emplace_back(std::nullopt);
    } else {
      elements_.emplace_back(std::string(t));
    }
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  int leaf_depth_ = -1;
  std::vector<int32_t> dims_;
  std::vector<int32_t> lowers_;
  std::vector<std::optional<std::string>> elements_;
};

Status ParseArray(const TextPlan& plan, std::string_view s, std::string* out) {
  ArrayTextParser p(s);
  if (!p.Parse()) return Bad(LogicalType::kArray, s);
  if (plan.element_type == LogicalType::kArray || plan.element_type == LogicalType::kNone) {
    return Status::Internal("array plan without an element type");
  }
  out->clear();
  out->push_back(static_cast<char>(plan.element_type));
  out->push_back(static_cast<char>(p.dims().size()));
  uint64_t count = p.dims().empty() ? 0 : 1;
  for (size_t d = 0; d < p.dims().size(); ++d) {
    AppendLE<int32_t>(out, p.dims()[d]);
    AppendLE<int32_t>(out, p.lowers()[d]);
    count *= static_cast<uint64_t>(p.dims()[d]);
  }
  if (count != p.elements().size()) return Bad(LogicalType::kArray, s);
  const bool fixed = FixedWidth(plan.element_type) != 0;
  Value v;
  for (const auto& e : p.elements()) {
    if (!e) {
      out->push_back(0);
      continue;
    }
    DBS_RETURN_IF_ERROR(ParseScalar(plan.element_type, plan, *e, &v));
    out->push_back(1);
    if (fixed) {
      AppendFixedValue(v, out);
    } else {
      AppendLE<uint32_t>(out, static_cast<uint32_t>(v.AsBytes().size()));
      out->append(v.AsBytes());
    }
  }
  return Status::Ok();
}

}  // namespace

bool TextDecodable(LogicalType type, LogicalType element_type) {
  if (type == LogicalType::kArray) return TextDecodable(element_type, LogicalType::kNone);
  return type != LogicalType::kGeometry && type != LogicalType::kNone;
}

Status DecodeTextField(const TextPlan& plan, std::string_view text, ColumnVector* col) {
  if (plan.type == LogicalType::kArray) {
    std::string enc;
    DBS_RETURN_IF_ERROR(ParseArray(plan, text, &enc));
    col->AppendBytes(enc);
    return Status::Ok();
  }
  Value v;
  DBS_RETURN_IF_ERROR(ParseScalar(plan.type, plan, text, &v));
  return col->Append(v);
}

}  // namespace dbs::pg

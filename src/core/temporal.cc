#include "core/temporal.h"

#include <cstdio>
#include <cstdlib>

namespace dbs {
namespace {

// Zero dates are packed as (year * 13 + month) * 32 + day above this base.
constexpr int32_t kDateZeroBase = kDateNegInfinity + 1;
constexpr int32_t kDateZeroSpan = 10000 * 13 * 32;
constexpr int64_t kTsZeroBase = kTimestampNegInfinity + 1;
constexpr int64_t kTsZeroSpan = int64_t{kDateZeroSpan} * kMicrosPerDay;
// Finite timestamps stay clear of the reserved range and of overflow.
constexpr int64_t kMinTsDays = (kTsZeroBase + kTsZeroSpan) / kMicrosPerDay + 1;
constexpr int64_t kMaxTsDays = kTimestampPosInfinity / kMicrosPerDay - 1;

bool IsZeroDate(const CivilDateTime& c) { return c.month == 0 || c.day == 0; }

bool ZeroDateInRange(const CivilDateTime& c) {
  return c.year >= 0 && c.year <= 9999 && c.month <= 12 && c.day <= 31;
}

int64_t PackZero(const CivilDateTime& c) { return (int64_t{c.year} * 13 + c.month) * 32 + c.day; }

void UnpackZero(int64_t packed, CivilDateTime* c) {
  c->day = static_cast<uint8_t>(packed % 32);
  packed /= 32;
  c->month = static_cast<uint8_t>(packed % 13);
  c->year = static_cast<int32_t>(packed / 13);
}

Status TimeOfDayValid(const CivilDateTime& c) {
  if (c.hour > 23 || c.minute > 59 || c.second > 59 || c.micros > 999999) {
    return Status::InvalidArgument("time of day out of range");
  }
  return Status::Ok();
}

int64_t MicrosOfDay(const CivilDateTime& c) {
  return ((int64_t{c.hour} * 60 + c.minute) * 60 + c.second) * kMicrosPerSecond + c.micros;
}

void SetMicrosOfDay(int64_t us, CivilDateTime* c) {
  c->micros = static_cast<uint32_t>(us % kMicrosPerSecond);
  us /= kMicrosPerSecond;
  c->second = static_cast<uint8_t>(us % 60);
  us /= 60;
  c->minute = static_cast<uint8_t>(us % 60);
  c->hour = static_cast<uint8_t>(us / 60);
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Appends "YYYY-MM-DD" (with " BC" handled by the caller).
void AppendYmd(std::string* out, const CivilDateTime& c) {
  char buf[48];
  int32_t y = c.year <= 0 && !(c.month == 0 || c.day == 0) ? 1 - c.year : c.year;
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u", y, unsigned{c.month}, unsigned{c.day});
  out->append(buf);
}

bool IsBc(const CivilDateTime& c) { return c.year <= 0 && c.month != 0 && c.day != 0; }

void AppendFraction(std::string* out, uint32_t micros) {
  if (micros == 0) return;
  char buf[16];
  std::snprintf(buf, sizeof buf, ".%06u", micros);
  std::string_view f(buf);
  while (f.back() == '0') f.remove_suffix(1);
  out->append(f);
}

void AppendHms(std::string* out, const CivilDateTime& c) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02u:%02u:%02u", unsigned{c.hour}, unsigned{c.minute},
                unsigned{c.second});
  out->append(buf);
  AppendFraction(out, c.micros);
}

// --- parsing helpers -------------------------------------------------------------------------

class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}
  bool Done() const { return pos_ >= s_.size(); }
  char Peek() const { return Done() ? '\0' : s_[pos_]; }
  bool Consume(char ch) {
    if (Peek() != ch) return false;
    ++pos_;
    return true;
  }
  // Reads 1..max_digits decimal digits.
  bool Number(int64_t* v, int min_digits, int max_digits) {
    int n = 0;
    int64_t acc = 0;
    while (!Done() && n < max_digits && s_[pos_] >= '0' && s_[pos_] <= '9') {
      acc = acc * 10 + (s_[pos_] - '0');
      ++pos_;
      ++n;
    }
    *v = acc;
    return n >= min_digits;
  }
  // Fraction after '.', up to 6 digits kept (more digits must be zero-padded input; extra
  // digits are rejected to avoid silent rounding).
  bool Fraction(uint32_t* micros) {
    int n = 0;
    uint32_t acc = 0;
    while (!Done() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      if (n >= 6) {
        if (s_[pos_] != '0') return false;
      } else {
        acc = acc * 10 + static_cast<uint32_t>(s_[pos_] - '0');
      }
      ++pos_;
      ++n;
    }
    for (int i = n; i < 6; ++i) acc *= 10;
    *micros = acc;
    return n > 0;
  }
  std::string_view Rest() const { return s_.substr(pos_); }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parses "YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]]" with an optional trailing " BC"; the zone
// suffix (if `zone` is not null) is parsed into seconds east of UTC.
Status ParseCivil(std::string_view text, bool with_time, CivilDateTime* c, int32_t* zone) {
  std::string_view t = Trim(text);
  bool bc = false;
  if (t.size() > 3 && EqualsIgnoreCase(t.substr(t.size() - 3), " BC")) {
    bc = true;
    t = Trim(t.substr(0, t.size() - 3));
  }
  auto bad = [&] {
    return Status::InvalidArgument("'" + std::string(text) + "' is not a valid " +
                                   (with_time ? "timestamp" : "date"));
  };
  Scanner s(t);
  int64_t y, mo, d;
  if (!s.Number(&y, 1, 9) || !s.Consume('-') || !s.Number(&mo, 1, 2) || !s.Consume('-') ||
      !s.Number(&d, 1, 2)) {
    return bad();
  }
  c->year = static_cast<int32_t>(bc ? 1 - y : y);
  c->month = static_cast<uint8_t>(mo);
  c->day = static_cast<uint8_t>(d);
  c->hour = c->minute = c->second = 0;
  c->micros = 0;
  if (!s.Done() && with_time) {
    if (!s.Consume(' ') && !s.Consume('T')) return bad();
    int64_t h, mi, sec = 0;
    if (!s.Number(&h, 1, 2) || !s.Consume(':') || !s.Number(&mi, 2, 2)) return bad();
    if (s.Consume(':')) {
      if (!s.Number(&sec, 2, 2)) return bad();
      if (s.Consume('.') && !s.Fraction(&c->micros)) return bad();
    }
    c->hour = static_cast<uint8_t>(h);
    c->minute = static_cast<uint8_t>(mi);
    c->second = static_cast<uint8_t>(sec);
  }
  if (zone != nullptr) {
    *zone = 0;
    if (s.Consume('Z') || s.Consume('z')) {
    } else if (s.Peek() == '+' || s.Peek() == '-') {
      int sign = s.Peek() == '-' ? -1 : 1;
      s.Consume(s.Peek());
      int64_t zh, zm = 0, zs = 0;
      if (!s.Number(&zh, 1, 2)) return bad();
      if (s.Consume(':')) {
        if (!s.Number(&zm, 2, 2)) return bad();
        if (s.Consume(':') && !s.Number(&zs, 2, 2)) return bad();
      } else if (s.Number(&zm, 2, 2)) {
      }
      *zone = static_cast<int32_t>(sign * (zh * 3600 + zm * 60 + zs));
    }
  }
  if (!s.Done()) return bad();
  return Status::Ok();
}

}  // namespace

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = FloorDiv(y, 400);
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t* year, unsigned* month, unsigned* day) {
  z += 719468;
  const int64_t era = FloorDiv(z, 146097);
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t y = yoe + era * 400;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const unsigned d = static_cast<unsigned>(doy - (153 * mp + 2) / 5 + 1);
  const unsigned m = static_cast<unsigned>(mp < 10 ? mp + 3 : mp - 9);
  *year = y + (m <= 2);
  *month = m;
  *day = d;
}

bool IsValidCivilDate(int64_t year, unsigned month, unsigned day) {
  if (month < 1 || month > 12 || day < 1) return false;
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  unsigned max = kDays[month - 1] + (month == 2 && leap ? 1 : 0);
  return day <= max;
}

Result<int32_t> EncodeDate(const CivilDateTime& c) {
  if (IsZeroDate(c)) {
    if (!ZeroDateInRange(c)) return Status::InvalidArgument("zero date out of range");
    return static_cast<int32_t>(kDateZeroBase + PackZero(c));
  }
  if (!IsValidCivilDate(c.year, c.month, c.day)) {
    return Status::InvalidArgument("not a calendar date");
  }
  int64_t days = DaysFromCivil(c.year, c.month, c.day) - kUnixToEpochDays;
  if (days <= kDateZeroBase + kDateZeroSpan || days >= kDatePosInfinity) {
    return Status::InvalidArgument("date out of range");
  }
  return static_cast<int32_t>(days);
}

TemporalKind DateKind(int32_t e) {
  if (e == kDatePosInfinity) return TemporalKind::kPosInfinity;
  if (e == kDateNegInfinity) return TemporalKind::kNegInfinity;
  if (e >= kDateZeroBase && e < kDateZeroBase + kDateZeroSpan) return TemporalKind::kZeroDate;
  return TemporalKind::kFinite;
}

CivilDateTime DecodeDate(int32_t e) {
  CivilDateTime c;
  switch (DateKind(e)) {
    case TemporalKind::kZeroDate:
      UnpackZero(int64_t{e} - kDateZeroBase, &c);
      return c;
    case TemporalKind::kFinite: {
      int64_t y;
      unsigned m, d;
      CivilFromDays(int64_t{e} + kUnixToEpochDays, &y, &m, &d);
      c.year = static_cast<int32_t>(y);
      c.month = static_cast<uint8_t>(m);
      c.day = static_cast<uint8_t>(d);
      return c;
    }
    default:
      return c;
  }
}

Result<int64_t> EncodeTimestamp(const CivilDateTime& c) {
  DBS_RETURN_IF_ERROR(TimeOfDayValid(c));
  if (IsZeroDate(c)) {
    if (!ZeroDateInRange(c)) return Status::InvalidArgument("zero date out of range");
    return kTsZeroBase + PackZero(c) * kMicrosPerDay + MicrosOfDay(c);
  }
  if (!IsValidCivilDate(c.year, c.month, c.day)) {
    return Status::InvalidArgument("not a calendar date");
  }
  if (c.year < -300000 || c.year > 300000) return Status::InvalidArgument("year out of range");
  int64_t days = DaysFromCivil(c.year, c.month, c.day) - kUnixToEpochDays;
  if (days < kMinTsDays || days > kMaxTsDays) return Status::InvalidArgument("year out of range");
  return days * kMicrosPerDay + MicrosOfDay(c);
}

TemporalKind TimestampKind(int64_t e) {
  if (e == kTimestampPosInfinity) return TemporalKind::kPosInfinity;
  if (e == kTimestampNegInfinity) return TemporalKind::kNegInfinity;
  if (e >= kTsZeroBase && e < kTsZeroBase + kTsZeroSpan) return TemporalKind::kZeroDate;
  return TemporalKind::kFinite;
}

CivilDateTime DecodeTimestamp(int64_t e) {
  CivilDateTime c;
  switch (TimestampKind(e)) {
    case TemporalKind::kZeroDate: {
      int64_t rel = e - kTsZeroBase;
      UnpackZero(rel / kMicrosPerDay, &c);
      SetMicrosOfDay(rel % kMicrosPerDay, &c);
      return c;
    }
    case TemporalKind::kFinite: {
      int64_t days = FloorDiv(e, kMicrosPerDay);
      int64_t y;
      unsigned m, d;
      CivilFromDays(days + kUnixToEpochDays, &y, &m, &d);
      c.year = static_cast<int32_t>(y);
      c.month = static_cast<uint8_t>(m);
      c.day = static_cast<uint8_t>(d);
      SetMicrosOfDay(e - days * kMicrosPerDay, &c);
      return c;
    }
    default:
      return c;
  }
}

std::string FormatDate(int32_t e) {
  switch (DateKind(e)) {
    case TemporalKind::kPosInfinity:
      return "infinity";
    case TemporalKind::kNegInfinity:
      return "-infinity";
    default:
      break;
  }
  CivilDateTime c = DecodeDate(e);
  std::string out;
  AppendYmd(&out, c);
  if (IsBc(c)) out += " BC";
  return out;
}

std::string FormatTimestamp(int64_t e) {
  switch (TimestampKind(e)) {
    case TemporalKind::kPosInfinity:
      return "infinity";
    case TemporalKind::kNegInfinity:
      return "-infinity";
    default:
      break;
  }
  CivilDateTime c = DecodeTimestamp(e);
  std::string out;
  AppendYmd(&out, c);
  out += ' ';
  AppendHms(&out, c);
  if (IsBc(c)) out += " BC";
  return out;
}

std::string FormatTimestampTz(int64_t e) {
  TemporalKind k = TimestampKind(e);
  if (k != TemporalKind::kFinite) return FormatTimestamp(e);
  CivilDateTime c = DecodeTimestamp(e);
  std::string out;
  AppendYmd(&out, c);
  out += ' ';
  AppendHms(&out, c);
  out += "+00";
  if (IsBc(c)) out += " BC";
  return out;
}

std::string FormatTime(int64_t micros) {
  std::string out;
  uint64_t u = micros < 0 ? 0 - static_cast<uint64_t>(micros) : static_cast<uint64_t>(micros);
  if (micros < 0) out += '-';
  uint64_t frac = u % kMicrosPerSecond;
  uint64_t secs = u / kMicrosPerSecond;
  char buf[48];
  std::snprintf(
      buf, sizeof buf, "%02llu:%02llu:%02llu", static_cast<unsigned long long>(secs / 3600),
      static_cast<unsigned long long>(secs / 60 % 60), static_cast<unsigned long long>(secs % 60));
  out += buf;
  AppendFraction(&out, static_cast<uint32_t>(frac));
  return out;
}

namespace {
// One "<n> <unit>[s]" part of FormatPgInterval (PostgreSQL's AddPostgresIntPart).
void AddPgIntervalPart(int64_t value, const char* unit, bool* is_zero, bool* is_before,
                       std::string* out) {
  if (value == 0) return;
  if (!*is_zero) *out += ' ';
  if (*is_before && value > 0) *out += '+';
  *out += std::to_string(value);
  *out += ' ';
  *out += unit;
  if (value != 1) *out += 's';
  *is_before = value < 0;
  *is_zero = false;
}
}  // namespace

std::string FormatPgInterval(int32_t months, int32_t days, int64_t micros) {
  std::string out;
  bool is_zero = true, is_before = false;
  AddPgIntervalPart(months / 12, "year", &is_zero, &is_before, &out);
  AddPgIntervalPart(months % 12, "mon", &is_zero, &is_before, &out);
  AddPgIntervalPart(days, "day", &is_zero, &is_before, &out);
  if (is_zero || micros != 0) {
    // All of hours, minutes, seconds and fraction carry the sign of micros.
    const bool minus = micros < 0;
    const uint64_t u = minus ? 0 - static_cast<uint64_t>(micros) : static_cast<uint64_t>(micros);
    const uint64_t secs = u / kMicrosPerSecond;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s%02llu:%02llu:%02llu", is_zero ? "" : " ",
                  minus ? "-" : (is_before ? "+" : ""),
                  static_cast<unsigned long long>(secs / 3600),
                  static_cast<unsigned long long>(secs / 60 % 60),
                  static_cast<unsigned long long>(secs % 60));
    out += buf;
    AppendFraction(&out, static_cast<uint32_t>(u % kMicrosPerSecond));
  }
  return out;
}

std::string FormatTimeTz(int64_t micros, int32_t offset_seconds) {
  std::string out = FormatTime(micros);
  int32_t o = offset_seconds;
  out += o < 0 ? '-' : '+';
  if (o < 0) o = -o;
  char buf[24];
  if (o % 60 != 0) {
    std::snprintf(buf, sizeof buf, "%02d:%02d:%02d", o / 3600, o / 60 % 60, o % 60);
  } else if (o % 3600 != 0) {
    std::snprintf(buf, sizeof buf, "%02d:%02d", o / 3600, o / 60 % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%02d", o / 3600);
  }
  out += buf;
  return out;
}

Result<int32_t> ParseDate(std::string_view text) {
  std::string_view t = Trim(text);
  if (EqualsIgnoreCase(t, "infinity") || EqualsIgnoreCase(t, "+infinity")) {
    return kDatePosInfinity;
  }
  if (EqualsIgnoreCase(t, "-infinity")) return kDateNegInfinity;
  CivilDateTime c;
  DBS_RETURN_IF_ERROR(ParseCivil(text, false, &c, nullptr));
  auto r = EncodeDate(c);
  if (!r.ok()) return r.status().WithContext("'" + std::string(text) + "'");
  return r;
}

Result<int64_t> ParseTimestamp(std::string_view text) {
  std::string_view t = Trim(text);
  if (EqualsIgnoreCase(t, "infinity") || EqualsIgnoreCase(t, "+infinity")) {
    return kTimestampPosInfinity;
  }
  if (EqualsIgnoreCase(t, "-infinity")) return kTimestampNegInfinity;
  CivilDateTime c;
  DBS_RETURN_IF_ERROR(ParseCivil(text, true, &c, nullptr));
  auto r = EncodeTimestamp(c);
  if (!r.ok()) return r.status().WithContext("'" + std::string(text) + "'");
  return r;
}

Result<int64_t> ParseTimestampTz(std::string_view text) {
  std::string_view t = Trim(text);
  if (EqualsIgnoreCase(t, "infinity") || EqualsIgnoreCase(t, "+infinity")) {
    return kTimestampPosInfinity;
  }
  if (EqualsIgnoreCase(t, "-infinity")) return kTimestampNegInfinity;
  CivilDateTime c;
  int32_t zone = 0;
  DBS_RETURN_IF_ERROR(ParseCivil(text, true, &c, &zone));
  auto r = EncodeTimestamp(c);
  if (!r.ok()) return r.status().WithContext("'" + std::string(text) + "'");
  if (TimestampKind(*r) != TemporalKind::kFinite) return r;
  int64_t utc = *r - int64_t{zone} * kMicrosPerSecond;
  if (TimestampKind(utc) != TemporalKind::kFinite) {
    return Status::InvalidArgument("'" + std::string(text) + "': out of range");
  }
  return utc;
}

Result<int64_t> ParseTime(std::string_view text) {
  std::string_view t = Trim(text);
  Scanner s(t);
  bool neg = s.Consume('-');
  int64_t h, m, sec = 0;
  uint32_t frac = 0;
  auto bad = [&] {
    return Status::InvalidArgument("'" + std::string(text) + "' is not a valid time");
  };
  if (!s.Number(&h, 1, 4) || !s.Consume(':') || !s.Number(&m, 2, 2)) return bad();
  if (s.Consume(':')) {
    if (!s.Number(&sec, 2, 2)) return bad();
    if (s.Consume('.') && !s.Fraction(&frac)) return bad();
  }
  if (!s.Done() || m > 59 || sec > 59) return bad();
  int64_t v = ((h * 60 + m) * 60 + sec) * kMicrosPerSecond + frac;
  return neg ? -v : v;
}

}  // namespace dbs

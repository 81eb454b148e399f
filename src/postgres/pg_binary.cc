#include "postgres/pg_binary.h"

#include <cstdlib>
#include <vector>

namespace dbs::pg {

namespace {

constexpr int kNumericMaxWeight = 32767;
constexpr int kNumericMaxDscale = 0x3FFF;

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

void AppendHeader(std::string* out, int ndigits, int weight, uint16_t sign, int dscale) {
  AppendBE16(out, static_cast<uint16_t>(ndigits));
  AppendBE16(out, static_cast<uint16_t>(static_cast<int16_t>(weight)));
  AppendBE16(out, sign);
  AppendBE16(out, static_cast<uint16_t>(dscale));
}

// Floor division for possibly negative numerators and a positive divisor.
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

void AppendGroup(std::string* out, int d, bool pad) {
  char buf[4];
  for (int i = 3; i >= 0; --i) {
    buf[i] = static_cast<char>('0' + d % 10);
    d /= 10;
  }
  int start = 0;
  if (!pad) {
    while (start < 3 && buf[start] == '0') ++start;
  }
  out->append(buf + start, static_cast<size_t>(4 - start));
}

}  // namespace

Status AppendNumericText(std::string_view b, std::string* out) {
  if (b.size() < 8) return Status::Corruption("numeric: truncated header");
  const int ndigits = static_cast<int16_t>(LoadBE16(b.data()));
  const int weight = static_cast<int16_t>(LoadBE16(b.data() + 2));
  const uint16_t sign = LoadBE16(b.data() + 4);
  const int dscale = LoadBE16(b.data() + 6);
  if (sign == kNumericNaN) {
    out->append("NaN");
    return Status::Ok();
  }
  if (sign == kNumericPInf) {
    out->append("Infinity");
    return Status::Ok();
  }
  if (sign == kNumericNInf) {
    out->append("-Infinity");
    return Status::Ok();
  }
  if (sign != kNumericPos && sign != kNumericNeg) return Status::Corruption("numeric: bad sign");
  if (ndigits < 0 || b.size() != 8 + 2 * static_cast<size_t>(ndigits)) {
    return Status::Corruption("numeric: length does not match its digit count");
  }
  if (dscale > kNumericMaxDscale) return Status::Corruption("numeric: bad display scale");
  const char* digits = b.data() + 8;
  auto digit = [&](int i) -> int {  // i-th base-10000 digit, 0 outside the stored ones
    if (i < 0 || i >= ndigits) return 0;
    return LoadBE16(digits + 2 * i);
  };
  for (int i = 0; i < ndigits; ++i) {
    if (digit(i) > 9999) return Status::Corruption("numeric: digit out of range");
  }
  if (sign == kNumericNeg) out->push_back('-');
  if (weight < 0) {
    out->push_back('0');
  } else {
    for (int i = 0; i <= weight; ++i) AppendGroup(out, digit(i), i > 0);
  }
  if (dscale > 0) {
    out->push_back('.');
    int remaining = dscale;
    for (int i = weight + 1; remaining > 0; ++i) {
      char buf[5];
      int d = digit(i);
      for (int k = 3; k >= 0; --k) {
        buf[k] = static_cast<char>('0' + d % 10);
        d /= 10;
      }
      int n = remaining < 4 ? remaining : 4;
      out->append(buf, static_cast<size_t>(n));
      remaining -= n;
    }
  }
  return Status::Ok();
}

Status AppendNumericBinary(std::string_view text, std::string* out) {
  auto bad = [&](std::string_view why) {
    std::string shown(text.substr(0, 64));
    if (text.size() > 64) shown += "...";
    return Status::InvalidArgument("'" + shown +
                                   "' is not a valid numeric value: " + std::string(why));
  };
  std::string_view s = text;
  if (EqualsIgnoreCase(s, "NaN")) {
    AppendHeader(out, 0, 0, kNumericNaN, 0);
    return Status::Ok();
  }
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (EqualsIgnoreCase(s, "Infinity") || EqualsIgnoreCase(s, "inf")) {
    AppendHeader(out, 0, 0, neg ? kNumericNInf : kNumericPInf, 0);
    return Status::Ok();
  }
  // Mantissa digits (without the point) and the number of digits before the point.
  size_t i = 0;
  const size_t mant_begin = i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return bad("no digits");
  int64_t exp = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool eneg = false;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) eneg = s[i++] == '-';
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      exp = exp * 10 + (s[i] - '0');
      if (exp > 1'000'000) return bad("exponent out of range");
      ++i;
    }
    if (i == start) return bad("exponent without digits");
    if (eneg) exp = -exp;
  }
  if (i != s.size()) return bad("unexpected character");

  const int64_t ndig = static_cast<int64_t>(int_digits + frac_digits);
  const int64_t point = static_cast<int64_t>(int_digits) + exp;  // digits before the point
  // Decimal exponent of the first and last mantissa digit.
  const int64_t e_max = point - 1;
  const int64_t e_min = point - ndig;
  const int64_t dscale = e_min < 0 ? -e_min : 0;
  if (dscale > kNumericMaxDscale) return bad("too many fractional digits");
  auto mant_digit = [&](int64_t k) -> int {  // k-th digit of the mantissa, skipping the point
    size_t pos = mant_begin + static_cast<size_t>(k);
    if (static_cast<size_t>(k) >= int_digits) ++pos;
    return s[pos] - '0';
  };
  // Skip leading zero mantissa digits so huge exponents of zero-padded values stay small.
  int64_t first = 0;
  while (first < ndig && mant_digit(first) == 0) ++first;
  int64_t last = ndig - 1;
  while (last >= first && mant_digit(last) == 0) --last;
  if (first > last) {  // zero
    AppendHeader(out, 0, 0, kNumericPos, static_cast<int>(dscale));
    return Status::Ok();
  }
  const int64_t g_max = FloorDiv(e_max - first, 4);
  const int64_t g_min = FloorDiv(e_max - last, 4);
  if (g_max > kNumericMaxWeight) return bad("value out of range");
  if (g_min < -kNumericMaxWeight) return bad("value out of range");
  const int64_t ngroups = g_max - g_min + 1;
  std::vector<int> groups(static_cast<size_t>(ngroups), 0);
  static constexpr int kPow10[4] = {1, 10, 100, 1000};
  for (int64_t k = first; k <= last; ++k) {
    const int64_t e = e_max - k;
    const int64_t g = FloorDiv(e, 4);
    groups[static_cast<size_t>(g_max - g)] += mant_digit(k) * kPow10[e - 4 * g];
  }
  // Leading and trailing groups are non-zero by construction (first/last digits non-zero).
  AppendHeader(out, static_cast<int>(ngroups), static_cast<int>(g_max),
               neg ? kNumericNeg : kNumericPos, static_cast<int>(dscale));
  for (int g : groups) AppendBE16(out, static_cast<uint16_t>(g));
  return Status::Ok();
}

void AppendNumericFromUInt64(uint64_t v, bool negative, std::string* out) {
  if (v == 0) {
    AppendHeader(out, 0, 0, kNumericPos, 0);
    return;
  }
  uint16_t groups[5];
  int n = 0;
  while (v != 0) {
    groups[n++] = static_cast<uint16_t>(v % 10000);
    v /= 10000;
  }
  const int weight = n - 1;
  int low = 0;  // trailing zero groups are not stored
  while (groups[low] == 0) ++low;
  AppendHeader(out, n - low, weight, negative ? kNumericNeg : kNumericPos, 0);
  for (int i = n - 1; i >= low; --i) AppendBE16(out, groups[i]);
}

}  // namespace dbs::pg

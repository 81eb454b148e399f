#include "typemap/type_text.h"

#include <cctype>
#include <charconv>

#include "typemap/sql.h"

namespace dbs {

namespace {

// Index of the ')' matching the '(' at text[open], or npos.
size_t MatchParen(std::string_view text, size_t open, bool backslash_escapes) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\'' || c == '"' || c == '`') {
      size_t j = i + 1;
      for (; j < text.size(); ++j) {
        if (backslash_escapes && c != '`' && text[j] == '\\') {
          ++j;
        } else if (text[j] == c) {
          if (j + 1 < text.size() && text[j + 1] == c) {
            ++j;
          } else {
            break;
          }
        }
      }
      if (j >= text.size()) return std::string_view::npos;
      i = j;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (--depth == 0) return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

size_t SkipQuotedText(std::string_view text, size_t i, bool backslash) {
  const char q = text[i];
  for (size_t j = i + 1; j < text.size(); ++j) {
    if (backslash && text[j] == '\\') {
      ++j;
      continue;
    }
    if (text[j] == q) {
      if (j + 1 < text.size() && text[j + 1] == q) {
        ++j;
        continue;
      }
      return j + 1;
    }
  }
  return std::string_view::npos;
}

TypeText SplitTypeText(std::string_view text) {
  TypeText out;
  text = TrimSpace(text);
  size_t open = text.find('(');
  if (open == std::string_view::npos) {
    size_t sp = text.find_first_of(" \t\n");
    out.base = AsciiLower(TrimSpace(text.substr(0, sp)));
    if (sp != std::string_view::npos) out.modifiers = AsciiLower(TrimSpace(text.substr(sp)));
    return out;
  }
  out.base = AsciiLower(TrimSpace(text.substr(0, open)));
  size_t close = MatchParen(text, open, true);
  if (close == std::string_view::npos) close = text.size();
  std::string_view inner = text.substr(open + 1, close - open - 1);
  // Split on top-level commas, skipping quoted text.
  size_t start = 0;
  char quote = 0;
  int depth = 0;
  for (size_t i = 0; i <= inner.size(); ++i) {
    if (i == inner.size() || (quote == 0 && depth == 0 && inner[i] == ',')) {
      std::string_view piece = TrimSpace(inner.substr(start, i - start));
      if (!piece.empty() || i < inner.size()) out.args.emplace_back(piece);
      start = i + 1;
      continue;
    }
    char c = inner[i];
    if (quote != 0) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      --depth;
    }
  }
  if (close < text.size()) out.modifiers = AsciiLower(TrimSpace(text.substr(close + 1)));
  return out;
}

std::optional<uint32_t> ParseUInt32(std::string_view s) {
  s = TrimSpace(s);
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<int64_t> ParseInt64(std::string_view s) {
  s = TrimSpace(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<std::string> NormalizeCurrentTimestamp(std::string_view text) {
  std::string t = AsciiLower(TrimSpace(text));
  std::string name = t;
  std::string arg;
  bool parens = false;
  if (size_t open = t.find('('); open != std::string::npos) {
    if (t.back() != ')') return std::nullopt;
    name = std::string(TrimSpace(std::string_view(t).substr(0, open)));
    arg = std::string(TrimSpace(std::string_view(t).substr(open + 1, t.size() - open - 2)));
    parens = true;
  }
  const bool known = name == "current_timestamp" || name == "localtimestamp" ||
                     name == "localtime" || name == "now";
  if (!known || (name == "now" && !parens)) return std::nullopt;
  if (arg.empty()) return std::string("CURRENT_TIMESTAMP");
  auto p = ParseUInt32(arg);
  if (!p || *p > 6) return std::nullopt;
  if (*p == 0) return std::string("CURRENT_TIMESTAMP");
  return "CURRENT_TIMESTAMP(" + std::to_string(*p) + ")";
}

uint32_t CurrentTimestampPrecision(std::string_view normalized) {
  size_t open = normalized.find('(');
  if (open == std::string_view::npos) return 0;
  return ParseUInt32(normalized.substr(open + 1, normalized.size() - open - 2)).value_or(0);
}

bool IsNumericLiteral(std::string_view t) {
  t = TrimSpace(t);
  size_t i = 0;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
  size_t digits = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i, ++digits;
  if (i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    size_t exp = 0;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i, ++exp;
    if (exp == 0) return false;
  }
  return i == t.size();
}

bool IsBitOrHexLiteral(std::string_view t) {
  t = TrimSpace(t);
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    for (size_t i = 2; i < t.size(); ++i) {
      if (!std::isxdigit(static_cast<unsigned char>(t[i]))) return false;
    }
    return true;
  }
  if (t.size() < 3 || t[1] != '\'' || t.back() != '\'') return false;
  const char k = static_cast<char>(std::tolower(static_cast<unsigned char>(t[0])));
  if (k != 'b' && k != 'x') return false;
  for (size_t i = 2; i + 1 < t.size(); ++i) {
    if (k == 'b' && t[i] != '0' && t[i] != '1') return false;
    if (k == 'x' && !std::isxdigit(static_cast<unsigned char>(t[i]))) return false;
  }
  return true;
}

bool WrapsWhole(std::string_view text, bool backslash_escapes) {
  return !text.empty() && text.front() == '(' &&
         MatchParen(text, 0, backslash_escapes) == text.size() - 1;
}

std::string WrapInParens(std::string_view text, bool backslash_escapes) {
  text = TrimSpace(text);
  if (WrapsWhole(text, backslash_escapes)) return std::string(text);
  return "(" + std::string(text) + ")";
}

std::string_view StripParens(std::string_view text, bool backslash_escapes) {
  text = TrimSpace(text);
  while (WrapsWhole(text, backslash_escapes)) text = TrimSpace(text.substr(1, text.size() - 2));
  return text;
}

std::string PgBaseName(std::string_view formatted) {
  std::string s;
  int depth = 0;
  for (char ch : formatted) {
    if (ch == '"') continue;
    if (ch == '(') {
      ++depth;
      continue;
    }
    if (ch == ')') {
      --depth;
      continue;
    }
    if (depth == 0) s.push_back(ch);
  }
  std::string_view v = TrimSpace(s);
  while (v.size() >= 2 && v.substr(v.size() - 2) == "[]") v = TrimSpace(v.substr(0, v.size() - 2));
  std::string out;
  for (char ch : v) {
    if (ch == ' ' && !out.empty() && out.back() == ' ') continue;
    out.push_back(ch);
  }
  if (size_t dot = out.rfind('.'); dot != std::string::npos) out = out.substr(dot + 1);
  return AsciiLower(out);
}

std::string MysqlBaseName(std::string_view column_type) { return SplitTypeText(column_type).base; }

}  // namespace dbs

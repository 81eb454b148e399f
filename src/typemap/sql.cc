#include "typemap/sql.h"

#include <cctype>

namespace dbs {

namespace {

bool IsIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// Number of UTF-8 code points (continuation bytes are not counted).
size_t Utf8Length(std::string_view s) {
  size_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

// Scans the quoted token that starts at text[i] (a quote character) and returns the index just
// past its closing quote, or npos when it is not closed. `backslash` makes \ escape the next
// character; a doubled quote character always stands for itself.
size_t SkipQuoted(std::string_view text, size_t i, bool backslash) {
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

// At text[i] == '$' in PostgreSQL: when a dollar quote opens here, the index past its end (or
// npos if unterminated) and *is_quote = true; otherwise *is_quote = false.
size_t SkipDollarQuote(std::string_view text, size_t i, bool* is_quote) {
  *is_quote = false;
  if (i > 0 && IsIdentChar(text[i - 1])) return i + 1;  // part of an identifier like a$b
  size_t j = i + 1;
  if (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) return i + 1;  // $1
  while (j < text.size() && IsIdentChar(text[j])) ++j;
  if (j >= text.size() || text[j] != '$') return i + 1;
  *is_quote = true;
  std::string_view tag = text.substr(i, j - i + 1);
  size_t end = text.find(tag, j + 1);
  if (end == std::string_view::npos) return end;
  return end + tag.size();
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes the body (the text between the quotes) of a literal that takes backslash escapes.
bool DecodeEscaped(std::string_view body, char quote, bool mysql, std::string* out) {
  out->clear();
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == quote) {
      // Only a doubled quote can appear inside the body.
      if (i + 1 >= body.size() || body[i + 1] != quote) return false;
      out->push_back(quote);
      ++i;
      continue;
    }
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    if (i + 1 >= body.size()) return false;
    char e = body[++i];
    switch (e) {
      case 'n':
        out->push_back('\n');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 'b':
        out->push_back('\b');
        break;
      case '0':
        if (!mysql) return false;  // PG octal escapes are not produced by the catalogs
        out->push_back('\0');
        break;
      case 'Z':
        out->push_back(mysql ? '\x1a' : 'Z');
        break;
      case 'f':
        out->push_back(mysql ? 'f' : '\f');
        break;
      case 'x': {
        if (mysql) {
          out->push_back('x');
          break;
        }
        int v = 0, n = 0;
        while (n < 2 && i + 1 < body.size() && HexValue(body[i + 1]) >= 0) {
          v = v * 16 + HexValue(body[++i]);
          ++n;
        }
        if (n == 0) return false;
        out->push_back(static_cast<char>(v));
        break;
      }
      default:
        // MySQL keeps \% and \_ as two characters; everything else stands for itself.
        if (mysql && (e == '%' || e == '_')) out->push_back('\\');
        out->push_back(e);
        break;
    }
  }
  return true;
}

}  // namespace

std::string_view DialectName(Dialect d) { return d == Dialect::kPostgres ? "postgres" : "mysql"; }

std::string QuoteIdent(std::string_view name, Dialect d) {
  const char q = d == Dialect::kPostgres ? '"' : '`';
  std::string out;
  out.reserve(name.size() + 2);
  out.push_back(q);
  for (char c : name) {
    if (c == q) out.push_back(q);
    out.push_back(c);
  }
  out.push_back(q);
  return out;
}

std::string QuoteLiteral(std::string_view text, Dialect d) {
  std::string out;
  out.reserve(text.size() + 3);
  if (d == Dialect::kPostgres) {
    const bool escape = text.find('\\') != std::string_view::npos;
    if (escape) out.push_back('E');
    out.push_back('\'');
    for (char c : text) {
      if (c == '\'' || (escape && c == '\\')) out.push_back(c);
      out.push_back(c);
    }
    out.push_back('\'');
    return out;
  }
  out.push_back('\'');
  for (char c : text) {
    if (c == '\'') {
      out += "''";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\0') {
      out += "\\0";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

std::string QualifiedName(std::string_view schema, std::string_view name, Dialect d) {
  if (schema.empty()) return QuoteIdent(name, d);
  return QuoteIdent(schema, d) + "." + QuoteIdent(name, d);
}

Status CheckIdentifier(std::string_view name, Dialect d) {
  const std::string shown(name.substr(0, 80));
  if (name.empty()) return Status::InvalidArgument("empty identifier");
  if (name.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("identifier '" + shown + "' contains a NUL character");
  }
  if (d == Dialect::kPostgres && name.size() > 63) {
    return Status::InvalidArgument("identifier '" + shown +
                                   "' is longer than PostgreSQL's 63 bytes; rename it");
  }
  if (d == Dialect::kMysql) {
    if (Utf8Length(name) > 64) {
      return Status::InvalidArgument("identifier '" + shown +
                                     "' is longer than MySQL's 64 characters; rename it");
    }
    if (name.back() == ' ') {
      return Status::InvalidArgument("identifier '" + shown +
                                     "' ends with a space, which MySQL does not allow");
    }
  }
  return Status::Ok();
}

Status CheckSqlFragment(std::string_view text, Dialect d, std::string_view what) {
  auto fail = [&](std::string_view why) {
    return Status::InvalidArgument(std::string(what) + " is not a single SQL fragment (" +
                                   std::string(why) + "): " + std::string(text.substr(0, 200)));
  };
  const bool mysql = d == Dialect::kMysql;
  int depth = 0;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\'' || c == '"' || (mysql && c == '`')) {
      bool backslash = false;
      if (mysql) {
        backslash = c != '`';
      } else if (c == '\'' && i > 0 && (text[i - 1] == 'E' || text[i - 1] == 'e') &&
                 (i < 2 || !IsIdentChar(text[i - 2]))) {
        backslash = true;  // E'...'
      }
      size_t end = SkipQuoted(text, i, backslash);
      if (end == std::string_view::npos) return fail("unterminated quote");
      i = end;
      continue;
    }
    if (!mysql && c == '$') {
      bool is_quote = false;
      size_t end = SkipDollarQuote(text, i, &is_quote);
      if (end == std::string_view::npos) return fail("unterminated dollar quote");
      i = end;
      continue;
    }
    if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (--depth < 0) return fail("unbalanced parentheses");
    } else if (c == ';') {
      return fail("statement separator");
    } else if (c == '\0') {
      return fail("NUL character");
    } else if ((c == '-' && i + 1 < text.size() && text[i + 1] == '-') ||
               (c == '/' && i + 1 < text.size() && text[i + 1] == '*') || (mysql && c == '#')) {
      return fail("comment");
    }
    ++i;
  }
  if (depth != 0) return fail("unbalanced parentheses");
  return Status::Ok();
}

bool UnquoteLiteral(std::string_view text, Dialect d, std::string* out) {
  text = TrimSpace(text);
  if (d == Dialect::kMysql) {
    // Optional introducer: _charset'...'
    if (!text.empty() && text[0] == '_') {
      size_t j = 1;
      while (j < text.size() && IsIdentChar(text[j])) ++j;
      text.remove_prefix(j);
      text = TrimSpace(text);
    }
    if (text.size() < 2 || (text[0] != '\'' && text[0] != '"')) return false;
    if (SkipQuoted(text, 0, true) != text.size()) return false;
    return DecodeEscaped(text.substr(1, text.size() - 2), text[0], true, out);
  }
  bool escape = false;
  if (!text.empty() && (text[0] == 'E' || text[0] == 'e')) {
    escape = true;
    text.remove_prefix(1);
  }
  if (text.size() < 2 || text[0] != '\'') return false;
  if (SkipQuoted(text, 0, escape) != text.size()) return false;
  std::string_view body = text.substr(1, text.size() - 2);
  if (escape) return DecodeEscaped(body, '\'', false, out);
  out->clear();
  for (size_t i = 0; i < body.size(); ++i) {
    out->push_back(body[i]);
    if (body[i] == '\'') ++i;  // '' -> '
  }
  return true;
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

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

}  // namespace dbs

#include "explorer/sql_text.h"

#include <cctype>

namespace dbs::explorer {

namespace {

// Skips blanks and comments from `i`; returns the new position.
size_t SkipBlanks(std::string_view s, size_t i) {
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '#' || (c == '-' && i + 1 < s.size() && s[i + 1] == '-')) {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      int depth = 1;
      i += 2;
      while (i < s.size() && depth > 0) {
        if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '*') {
          ++depth;
          i += 2;
        } else if (s[i] == '*' && i + 1 < s.size() && s[i + 1] == '/') {
          --depth;
          i += 2;
        } else {
          ++i;
        }
      }
    } else {
      break;
    }
  }
  return i;
}

}  // namespace

std::string FirstKeyword(std::string_view sql) {
  size_t i = SkipBlanks(sql, 0);
  while (i < sql.size() && sql[i] == '(') i = SkipBlanks(sql, i + 1);
  std::string out;
  while (i < sql.size() && (std::isalpha(static_cast<unsigned char>(sql[i])) || sql[i] == '_')) {
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(sql[i])));
    ++i;
  }
  return out;
}

bool IsSelectLike(std::string_view sql) {
  const std::string k = FirstKeyword(sql);
  return k == "SELECT" || k == "WITH" || k == "VALUES" || k == "TABLE";
}

std::string TrimStatement(std::string_view sql) {
  size_t e = sql.size();
  while (e > 0 && (std::isspace(static_cast<unsigned char>(sql[e - 1])) || sql[e - 1] == ';')) --e;
  size_t b = 0;
  while (b < e && std::isspace(static_cast<unsigned char>(sql[b]))) ++b;
  return std::string(sql.substr(b, e - b));
}

bool HasSeveralStatements(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\'' || c == '"' || c == '`') {
      // A quoted string or identifier; a doubled quote stays inside, a backslash escapes in
      // MySQL strings (reading it as an escape everywhere only makes the check stricter).
      ++i;
      while (i < s.size()) {
        if (c == '\'' && s[i] == '\\') {
          i += 2;
          continue;
        }
        if (s[i] == c) {
          if (i + 1 < s.size() && s[i + 1] == c) {
            i += 2;
            continue;
          }
          break;
        }
        ++i;
      }
      ++i;
    } else if (c == '$') {
      // PostgreSQL dollar quoting: $tag$ ... $tag$.
      size_t e = i + 1;
      while (e < s.size() && (std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '_')) ++e;
      if (e < s.size() && s[e] == '$') {
        const std::string_view tag = s.substr(i, e - i + 1);
        const size_t close = s.find(tag, e + 1);
        i = close == std::string_view::npos ? s.size() : close + tag.size();
      } else {
        ++i;
      }
    } else if (c == '#' || c == '-' || c == '/') {
      const size_t n = SkipBlanks(s, i);
      i = n == i ? i + 1 : n;
    } else if (c == ';') {
      size_t j = i + 1;
      while (true) {
        j = SkipBlanks(s, j);
        if (j < s.size() && s[j] == ';') {
          ++j;
          continue;
        }
        break;
      }
      if (j < s.size()) return true;
      i = j;
    } else {
      ++i;
    }
  }
  return false;
}

Status CheckSelectOnly(std::string_view sql) {
  const std::string k = FirstKeyword(sql);
  if (k != "SELECT" && k != "WITH") {
    return Status::InvalidArgument("only a read-only SELECT or WITH ... SELECT is allowed, not " +
                                   (k.empty() ? std::string("this statement") : k));
  }
  if (HasSeveralStatements(sql)) {
    return Status::InvalidArgument("only one statement is allowed");
  }
  return Status::Ok();
}

}  // namespace dbs::explorer

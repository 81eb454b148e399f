#include "mcp/redact.h"

#include <algorithm>
#include <regex>

namespace dbs::mcp {

using nlohmann::json;

namespace {

constexpr const char kRedacted[] = "[redacted]";

bool SecretName(std::string k) {
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::tolower(c); });
  k.erase(std::remove_if(k.begin(), k.end(), [](char c) { return c == '_' || c == '-'; }), k.end());
  static const char* const kWords[] = {
      "password",  "passwd",     "pwd",        "secret",        "token", "apikey",
      "accesskey", "privatekey", "credential", "authorization", "dsn",   "connectionstring",
      "conninfo",  "sealed",     "buskey",     "masterkey",     "sslkey"};
  for (const char* w : kWords) {
    if (k.find(w) != std::string::npos) return true;
  }
  return k == "key" || k == "pass";
}

}  // namespace

std::string RedactText(const std::string& in) {
  static const std::regex url_password(R"(([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@'"]*:)[^\s@'"]*@)");
  static const std::regex pairs(
      R"((\b(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key|)"
      R"(private[_-]?key|authorization|x-api-key|master[_-]?key|bus[_-]?key)\b\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;&'"]+))",
      std::regex::icase);
  static const std::regex bearer(R"(\b(Bearer)\s+[A-Za-z0-9._~+/=-]+)", std::regex::icase);
  static const std::regex api_key(R"(\bdbs_[0-9a-f]{16,}\b)");
  static const std::regex aws_key(R"(\b(AKIA|ASIA)[0-9A-Z]{16}\b)");
  std::string s = std::regex_replace(in, url_password, std::string("$1") + kRedacted + "@");
  s = std::regex_replace(s, pairs, std::string("$1") + kRedacted);
  s = std::regex_replace(s, bearer, std::string("$1 ") + kRedacted);
  s = std::regex_replace(s, api_key, kRedacted);
  s = std::regex_replace(s, aws_key, kRedacted);
  return s;
}

json Redact(const json& v) {
  if (v.is_string()) return RedactText(v.get<std::string>());
  if (v.is_array()) {
    json out = json::array();
    for (const auto& x : v) out.push_back(Redact(x));
    return out;
  }
  if (v.is_object()) {
    json out = json::object();
    for (const auto& [k, x] : v.items()) {
      out[k] = SecretName(k) && !x.is_null() && !x.is_boolean() ? json(kRedacted) : Redact(x);
    }
    return out;
  }
  return v;
}

}  // namespace dbs::mcp

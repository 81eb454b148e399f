// Redaction of secrets in what the MCP server shows (log records, run errors): passwords,
// keys, tokens and connection strings.
//
// Contract: pure, thread-safe. In objects, the value of any field whose name says it holds a
// secret (password, passwd, pwd, secret, token, key, apikey, credentials, authorization, dsn,
// connectionString, sealed, busKey, ...) becomes "[redacted]". In every string: the password
// of a URL (scheme://user:PASSWORD@host), key=value and key: value pairs of such names
// (libpq conninfo, headers), "Bearer <token>", our API keys (dbs_<hex>) and AWS access key
// ids are replaced. Over-redacting is preferred to leaking.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dbs::mcp {

std::string RedactText(const std::string& text);
nlohmann::json Redact(const nlohmann::json& value);

}  // namespace dbs::mcp

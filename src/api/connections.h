// Connection records for the API: validation of request bodies, the stored (secret-free) spec,
// and catalog browsing through the PostgreSQL and MySQL clients and the Source classes.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/connection.h"
#include "core/result.h"
#include "store/config_store.h"

namespace dbs::api {

// What a body says about a credential stored apart from the spec: an inline TLS client key
// (ssl.key given as PEM text rather than a path on the server) or an S3 session token. The
// config store holds only a marker in its place (kStoredSslKey, kStoredSessionToken), and the
// value itself goes to the secrets store (SslKeyRef(id), SessionTokenRef(id)).
inline constexpr const char* kStoredSslKey = "<stored key>";
inline constexpr const char* kStoredSessionToken = "<stored token>";
enum class SecretInput {
  kNone,    // not given (or, for ssl.key, a file path: not a secret, kept in the spec)
  kInline,  // the value itself, in ConnectionInput::ssl_key or ::session_token
  kKeep,    // the marker: keep the value already stored for this connection
};

struct ConnectionInput {
  std::string name;
  // engine, host, port, user, database, ssl, params (no password; an inline ssl.key is replaced
  // by kStoredSslKey, a session token by kStoredSessionToken)
  nlohmann::json spec;
  std::optional<std::string> password;  // given in the body (or the URL)
  SecretInput ssl_key_input = SecretInput::kNone;
  std::string ssl_key;  // the PEM text when kInline
  SecretInput session_token_input = SecretInput::kNone;
  std::string session_token;  // the token when kInline
};

// The secrets-store references of a connection's inline TLS client key and S3 session token.
std::string SslKeyRef(const std::string& connection_id);
std::string SessionTokenRef(const std::string& connection_id);

// An engine file connection's folder: absolute, without '..', inside one of the server's
// DBS_FILE_ROOTS once links are resolved (it may not exist yet); the folder as stored, or
// InvalidArgument naming the field `path`.
Result<std::string> FolderInFileRoots(const std::string& path);

// Validates a connection body (strict: unknown fields and wrong types are errors naming the
// field). `require_name`: create/update need a name; the test route does not.
Result<ConnectionInput> ParseConnectionBody(const nlohmann::json& body, bool require_name);
// The stream-config form of a spec: {"url", "user", "database", "ssl"} plus "password" when
// given, and "sessionToken" when the spec holds one (not its marker). Never logged: it may
// carry credentials.
nlohmann::json ConnectionJson(const nlohmann::json& spec, const std::string* password);
Result<ConnectionConfig> ConnectionFromSpec(const nlohmann::json& spec,
                                            const std::string& password);
// The API view of a record: never a password, never an inline TLS key (kStoredSslKey stands in
// for it, also for a record saved before keys went to the secrets store), never a session
// token (kStoredSessionToken stands in for it).
nlohmann::json ConnectionOut(const store::ConnectionRecord& r);

// Connects and runs a trivial query: {"ok", "latencyMs", "serverVersion"|"error"}.
nlohmann::json TestConnection(const ConnectionConfig& c);
// Catalog: kind is "databases", "schemas", "tables" or "views"; schema filters tables/views.
Result<nlohmann::json> Browse(const ConnectionConfig& c, const std::string& kind,
                              const std::string& schema);
// Columns, keys, indexes, foreign keys of one table; NotFound when it does not exist.
Result<nlohmann::json> DescribeTable(const ConnectionConfig& c, const std::string& schema,
                                     const std::string& table);
// Exact row count (identifiers quoted); NotFound when the table does not exist.
Result<uint64_t> CountRows(const ConnectionConfig& c, const std::string& schema,
                           const std::string& table);

}  // namespace dbs::api

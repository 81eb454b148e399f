// Connection settings for sources and targets, from a URL or a JSON object.
//
//   mysql://user:pass@host:3306/db?ssl-mode=REQUIRED&ssl-ca=/path/ca.pem
//   mariadb://...                       (same as mysql://)
//   postgres://user:pass@host:5432/db?sslmode=verify-full&sslrootcert=/path/ca.pem
//   postgresql://...                    (same as postgres://)
//   file:///abs/folder?format=parquet&compression=zstd&rowsPerFile=1000000
//                                       (files: CSV, JSONL, Parquet; the path is `database`)
//   s3://ACCESS_KEY:SECRET@bucket/prefix?endpoint=https://host:9000&region=us-east-1
//        &addressing=path|virtual&format=parquet&sslrootcert=/path/ca.pem
//                                       (files in an S3-compatible bucket: engine kFile with
//                                        s3 = true, the bucket in `host`, the prefix in
//                                        `database`, the access key in `user`, the secret
//                                        key in `password`; the object form also takes
//                                        "sessionToken", a secret like the password)
//   {"url": "...", "password": "...", "ssl": {"mode": "require", "ca": "...", "cert": "...",
//    "key": "..."}}
//   {"federated": [{"alias": "pg1", "url": "postgres://..."}, ...]}   (see `federated`)
//
// The password never appears in ToString()/Redacted() output. Percent-escapes in user,
// password and database are decoded.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"

namespace dbs {

// kFederated: a federated SELECT over several connections as a stream's source
// (src/federated/federated_source.h); the connections are in ConnectionConfig::federated.
enum class Engine { kMysql, kPostgres, kFile, kFederated };

struct SslSettings {
  // PostgreSQL sslmode names: disable, allow, prefer, require, verify-ca, verify-full.
  // MySQL ssl-mode names are mapped onto them (DISABLED, PREFERRED, REQUIRED, VERIFY_CA,
  // VERIFY_IDENTITY).
  std::string mode;  // empty: the client library's default
  // Each a file path, or the PEM text itself (IsInlinePem: the web UI's upload); the client
  // libraries read paths, so PemFiles writes inline text to private files while connecting.
  std::string ca;
  std::string cert;
  std::string key;
};

// Whether an ssl value is PEM text (it has a "-----BEGIN" line) rather than a file path.
bool IsInlinePem(const std::string& value);

// The inline PEM values of an SslSettings written to private temporary files (a fresh 0700
// folder under $TMPDIR, files 0600), for libpq and Connector/C, which read certificates and
// keys from paths while a connection is opened. settings() is the input with those values
// replaced by the files' paths (paths are passed through unchanged). The files and the folder
// are removed when the object is destroyed: keep it alive until the connection is open. Not
// thread-safe; move-only.
class PemFiles {
 public:
  static Result<PemFiles> Write(const SslSettings& ssl);
  PemFiles(PemFiles&& o) noexcept;
  PemFiles& operator=(PemFiles&&) = delete;
  PemFiles(const PemFiles&) = delete;
  ~PemFiles();
  const SslSettings& settings() const { return settings_; }

 private:
  PemFiles() = default;
  SslSettings settings_;
  std::string dir_;                 // "" when nothing was inline
  std::vector<std::string> files_;  // written, to remove
};

struct FederatedMember;

struct ConnectionConfig {
  Engine engine = Engine::kPostgres;
  std::string host = "127.0.0.1";
  int port = 0;  // 0: the engine's default
  std::string user;
  std::string password;
  std::string database;
  SslSettings ssl;
  std::map<std::string, std::string> params;  // other URL query parameters
  // kFile only: the files are in an S3-compatible bucket (see above), not a local folder.
  bool s3 = false;
  std::string session_token;  // S3 temporary credentials; a secret, never in Redacted()
  // kFederated only: the sources a federated SELECT names by alias, in order:
  //   {"federated": [{"alias": "pg1", "url": "postgres://..."}, {"alias": "my1", ...}]}
  // (each member a connection object as above plus its alias).
  std::vector<FederatedMember> federated;

  // kFile: the absolute folder (or file) path, percent-decoded; `params` hold the file options
  // (src/sources/files/file_common.h).
  int EffectivePort() const { return port != 0 ? port : (engine == Engine::kMysql ? 3306 : 5432); }
  // "postgres://user@host:5432/db" — without the password.
  std::string Redacted() const;
  // libpq keyword/value connection string (engine must be kPostgres), values quoted.
  std::string LibpqConninfo(bool replication = false) const;
};

struct FederatedMember {
  std::string alias;  // a letter, then letters, digits or '_' (at most 63)
  ConnectionConfig connection;
};

Result<ConnectionConfig> ParseConnectionUrl(const std::string& url);
// Accepts a URL string or an object (see above). `path` names the field in errors.
Result<ConnectionConfig> ParseConnection(const nlohmann::json& j, const std::string& path);

std::string_view EngineName(Engine e);

}  // namespace dbs

// Config store: connections (without secrets), stream configs, runs, usage per day and API key
// hashes. Backends are chosen by name (CONFIG_BACKEND); "sqlite" is the default and the only
// one today (a file in the data folder with versioned schema migrations).
//
// Contract:
//  - Every method is thread-safe (a backend serializes as it needs to).
//  - Records never hold secrets: a connection keeps a reference into the SecretsStore.
//  - Errors: NotFound names the missing id; AlreadyExists names the clashing name; storage
//    failures are IoError (retryable when the database was busy or locked).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace dbs::store {

struct ConnectionRecord {
  std::string id;
  std::string name;
  nlohmann::json spec;     // engine, host, port, user, database, ssl, params: never a password
  std::string secret_ref;  // "" when the connection has no password
  int64_t created_at = 0;  // unix seconds
  int64_t updated_at = 0;
};

struct StreamRecord {
  std::string id;
  std::string name;       // the stream config's "name" (unique)
  nlohmann::json config;  // the API form: source/target are {"connection": "<id>"}
  int64_t created_at = 0;
  int64_t updated_at = 0;
};

struct RunRecord {
  std::string id;
  std::string stream_id;
  std::string stream_name;
  std::string state;  // starting, running, paused, stopping, completed, failed, stopped
  std::string error;
  std::string reader_service;  // the reader service that accepted the run
  int64_t started_at = 0;      // unix milliseconds
  int64_t ended_at = 0;        // 0 while active
  uint64_t rows = 0;
  uint64_t bytes = 0;
  // JSON of the run's last live figures (per table rows and progress, rates, CDC lag and
  // changes), kept so a finished run shows what it did; "" when none were recorded.
  std::string details;
  bool active() const {
    return state == "starting" || state == "running" || state == "paused" || state == "stopping";
  }
};

struct UsageDay {
  std::string day;  // YYYY-MM-DD (UTC)
  uint64_t bytes = 0;
  uint64_t cdc_seconds = 0;
};

struct ApiKeyRecord {
  std::string id;      // public id (shown in lists, used to revoke)
  std::string name;    // what it is for
  std::string hash;    // hex SHA-256 of the key
  std::string prefix;  // the first characters of the key, to recognize it
  int64_t created_at = 0;
  int64_t revoked_at = 0;  // 0: not revoked
  int64_t expires_at = 0;  // unix seconds; 0: never expires
  bool expired(int64_t now) const { return expires_at != 0 && expires_at <= now; }
};

// One statement run through the explorer's SQL console (query history, per API key).
struct QueryHistoryRecord {
  std::string id;
  std::string api_key_id;     // the key that ran it
  std::string connection_id;  // the saved connection it ran on
  std::string kind;           // "run", "explain", "download"
  std::string statement;      // as sent (at most 64 KiB kept)
  bool read_only = true;
  int64_t started_at = 0;  // unix milliseconds
  int64_t duration_ms = 0;
  int64_t rows = 0;   // rows returned (or affected)
  std::string error;  // "" when it succeeded
};

struct QueryHistoryFilter {
  std::string api_key_id;     // required: history is per key
  std::string search;         // case-insensitive substring of the statement; "" = any
  std::string connection_id;  // "" = any
};

class ConfigStore {
 public:
  // Opens the backend named `backend` ("sqlite") with its data under `data_dir`. Unknown names
  // are InvalidArgument errors listing the known backends.
  static Result<std::unique_ptr<ConfigStore>> Open(const std::string& backend,
                                                   const std::string& data_dir);
  virtual ~ConfigStore() = default;

  // --- connections
  // Case-insensitive substring search on the name; "" lists all, ordered by name. One page:
  // at most `limit` records from `offset`; `total` (optional) receives the number matching.
  virtual Result<std::vector<ConnectionRecord>> ListConnections(const std::string& search,
                                                                int offset, int limit,
                                                                int64_t* total) = 0;
  virtual Result<ConnectionRecord> GetConnection(const std::string& id) = 0;
  // Inserts (create) or replaces (update, NotFound when absent) by id; names are unique.
  virtual Status PutConnection(const ConnectionRecord& r, bool create) = 0;
  virtual Status DeleteConnection(const std::string& id) = 0;

  // --- stream configs
  virtual Result<std::vector<StreamRecord>> ListStreams(const std::string& search, int offset,
                                                        int limit, int64_t* total) = 0;
  virtual Result<StreamRecord> GetStream(const std::string& id) = 0;
  virtual Status PutStream(const StreamRecord& r, bool create) = 0;
  virtual Status DeleteStream(const std::string& id) = 0;
  // Stream ids whose config references the connection.
  virtual Result<std::vector<std::string>> StreamsUsingConnection(const std::string& conn_id) = 0;

  // --- runs
  virtual Status PutRun(const RunRecord& r) = 0;  // insert or replace
  virtual Result<RunRecord> GetRun(const std::string& id) = 0;
  // Newest first.
  virtual Result<std::vector<RunRecord>> ListRuns(const std::string& stream_id, int limit) = 0;
  // One page of the same order; `total` (optional) receives the stream's number of runs.
  virtual Result<std::vector<RunRecord>> ListRuns(const std::string& stream_id, int offset,
                                                  int limit, int64_t* total) = 0;
  virtual Result<std::vector<RunRecord>> ListActiveRuns() = 0;

  // --- usage
  virtual Status AddUsage(const std::string& day, uint64_t bytes, uint64_t cdc_seconds) = 0;
  virtual Result<std::vector<UsageDay>> ListUsage() = 0;

  // --- API keys
  // Stores id, name, hash, prefix, created_at and expires_at (revoked_at starts at 0).
  virtual Status CreateApiKey(const ApiKeyRecord& r) = 0;
  // Every key (revoked and expired ones too), oldest first.
  virtual Result<std::vector<ApiKeyRecord>> ListApiKeys() = 0;
  // One page of the same order; `total` (optional) receives the number of keys.
  virtual Result<std::vector<ApiKeyRecord>> ListApiKeys(int offset, int limit, int64_t* total) = 0;
  // NotFound when the id does not exist or was already revoked.
  virtual Status RevokeApiKey(const std::string& id) = 0;
  // The valid (not revoked, not expired at NowSeconds()) key with this hash; NotFound
  // otherwise.
  virtual Result<ApiKeyRecord> FindApiKey(const std::string& hash) = 0;

  // --- query history (the explorer's SQL console)
  virtual Status AddQueryHistory(const QueryHistoryRecord& r) = 0;
  // Newest first; `total` (optional) receives the number matching.
  virtual Result<std::vector<QueryHistoryRecord>> ListQueryHistory(const QueryHistoryFilter& f,
                                                                   int offset, int limit,
                                                                   int64_t* total) = 0;
};

// Unix time helpers.
int64_t NowSeconds();
int64_t NowMillis();
std::string TodayUtc();
// A random id: prefix + 16 hex digits (from libsodium's CSPRNG).
std::string NewId(const std::string& prefix);

}  // namespace dbs::store

// MySQL / MariaDB client helpers shared by the MySQL source and sink (libmariadb, <mysql.h>).
//
// Contract:
//  - MysqlConnection owns one MYSQL* (closed by its destructor). It is used from one thread at a
//    time; different connections may be used from different threads at once (the library is
//    initialized once, thread-safely, on the first Open()).
//  - Open() connects with utf8mb4, the SSL settings of the ConnectionConfig, and session settings
//    that make reads and writes exact (see SessionRole). It fails with a Status whose code says
//    what went wrong: Unavailable (retryable) when the server cannot be reached,
//    Unauthenticated for a wrong user or password (1045), NotFound for an unknown database
//    (1049), PermissionDenied for a database the user may not use (1044).
//  - Every other call returns the server's error classified by MysqlError(): the message names
//    the context the caller passed ("reading db.t") and the server's code and text. Errors that
//    lose the connection (2006, 2013, ...) mark the connection broken(); such a connection
//    must not be reused.
#pragma once

#include <mysql.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/connection.h"
#include "core/result.h"

namespace dbs::mysql {

struct MysqlCloser {
  void operator()(MYSQL* m) const { mysql_close(m); }
};
struct ResultFreer {
  void operator()(MYSQL_RES* r) const { mysql_free_result(r); }
};
using MysqlHandle = std::unique_ptr<MYSQL, MysqlCloser>;
using ResultHandle = std::unique_ptr<MYSQL_RES, ResultFreer>;

// One row of a small result: the server's text of each column, nullopt for SQL NULL.
using TextRow = std::vector<std::optional<std::string>>;

// Which session settings Open() applies (both: time_zone '+00:00' so TIMESTAMP values travel
// in UTC, generous net_read/net_write timeouts, a large group_concat_max_len, foreign keys
// unchecked only for writers):
//  kRead   sql_mode 'NO_ENGINE_SUBSTITUTION' (no ANSI_QUOTES or NO_BACKSLASH_ESCAPES surprises)
//  kWrite  sql_mode 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION,NO_AUTO_VALUE_ON_ZERO': bad values
//          are errors, zero dates are accepted as they are, an explicit 0 in an AUTO_INCREMENT
//          column stays 0; foreign_key_checks=0.
enum class SessionRole { kRead, kWrite };

struct ConnectOptions {
  SessionRole role = SessionRole::kRead;
  // Enables LOAD DATA LOCAL INFILE on the client side (MYSQL_OPT_LOCAL_INFILE). The caller
  // must install its own handler (mysql_set_local_infile_handler) so the server can never make
  // the client read a local file.
  bool local_infile = false;
  // Connect with config.database as the default database (when not empty).
  bool use_database = true;
  unsigned connect_timeout_seconds = 20;
};

// Classifies a server or client error. `context` says what was being done ("describing
// db.t"); the message is "<context>: <what it means> (MySQL error <code> [<sqlstate>]:
// <server text>)". Retryable: connection loss and refusal (2002, 2003, 2006, 2013, 2055,
// 1040, 1053, 1927, 4031), lock wait timeout 1205 and deadlock 1213. Not retryable: access
// (1044, 1045, 1142, 1143, 1227), missing objects (1049, 1146, 1054), data the server rejects
// (out of range, too long, bad string, bad date, duplicate key, foreign key, check).
Status MysqlError(unsigned code, std::string_view sqlstate, std::string_view server_message,
                  std::string_view context);

// `name` with backticks around it and every backtick doubled.
std::string QuoteName(std::string_view name);

// True for the errors of a server that will not prepare a statement: max_prepared_stmt_count
// reached or 0 (ER_MAX_PREPARED_STMT_COUNT_REACHED, 1461), or no prepared statements at all,
// as behind some proxies (ER_UNSUPPORTED_PS, 1295). The caller goes on without one.
inline bool RefusesPreparedStatements(unsigned code) { return code == 1461 || code == 1295; }
// `schema`.`name`, or `name` when schema is empty.
std::string QuoteQualified(std::string_view schema, std::string_view name);

class MysqlConnection {
 public:
  static Result<std::unique_ptr<MysqlConnection>> Open(const ConnectionConfig& config,
                                                       const ConnectOptions& options);
  MysqlConnection(const MysqlConnection&) = delete;
  MysqlConnection& operator=(const MysqlConnection&) = delete;

  MYSQL* handle() { return mysql_.get(); }
  bool is_mariadb() const { return is_mariadb_; }
  // mysql_get_server_version(): major * 10000 + minor * 100 + patch (MariaDB: its own number,
  // e.g. 101119 for 10.11.19).
  unsigned long server_version() const { return version_; }
  // "mysql://user@host:port/db" without the password, for messages.
  const std::string& endpoint() const { return endpoint_; }
  // True once an error lost the connection.
  bool broken() const { return broken_; }

  // Runs one statement and discards any result.
  Status Exec(std::string_view sql, std::string_view context);
  // Runs one statement and returns all its rows (for small results only).
  Result<std::vector<TextRow>> Query(std::string_view sql, std::string_view context);
  // Streams the rows of one statement (mysql_use_result): the caller fetches every row (or
  // frees the result, which drains the rest) before using the connection again.
  Result<ResultHandle> StreamQuery(std::string_view sql, std::string_view context);
  // The Status for the connection's last error, classified (marks the connection broken when
  // the error lost it).
  Status LastError(std::string_view context);
  // The same for the last error of prepared statement `stmt` (of this connection).
  Status StmtError(MYSQL_STMT* stmt, std::string_view context);

  // A quoted string literal for this connection ('...' with mysql_real_escape_string).
  std::string Literal(std::string_view text);
  uint64_t affected_rows() { return mysql_affected_rows(mysql_.get()); }

 private:
  MysqlConnection() = default;

  MysqlHandle mysql_;
  bool is_mariadb_ = false;
  unsigned long version_ = 0;
  bool broken_ = false;
  std::string endpoint_;
};

}  // namespace dbs::mysql

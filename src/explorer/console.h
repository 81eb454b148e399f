// The SQL console: one statement on one saved PostgreSQL or MySQL/MariaDB connection, with typed
// columns, a row cap, paging through a server-side cursor, cancellation and plans.
//
// Contract:
//  - A QuerySession owns one database connection and runs one statement on it. It is driven by
//    one thread at a time (Execute, Fetch, Explain, Close); Cancel() may be called from any
//    thread at any time and cancels what runs on the server (PostgreSQL: the protocol's cancel
//    request, what pg_cancel_backend does; MySQL/MariaDB: KILL QUERY <thread id> from a second
//    connection). A cancelled or timed-out statement fails with Aborted / Timeout.
//  - Read-only (the default) is enforced by the database: PostgreSQL runs the statement in
//    BEGIN TRANSACTION READ ONLY (after a first query has taken the snapshot, so SET
//    TRANSACTION READ WRITE cannot undo it); MySQL/MariaDB in SET SESSION TRANSACTION READ
//    ONLY + START TRANSACTION READ ONLY (the session setting also covers the transaction a DDL
//    statement's implicit commit would start). The transaction is rolled back at the end.
//    Only one statement is ever sent per call (PostgreSQL: the extended protocol; MySQL: no
//    multi-statement flag), so a "COMMIT; UPDATE ..." cannot slip out of it.
//  - With read_only false the statement runs as written (autocommit; a SELECT runs in a
//    transaction for its cursor, committed at Close).
//  - Rows: a SELECT-like statement on PostgreSQL is read through DECLARE ... NO SCROLL CURSOR
//    and FETCH; other statements that return rows, and every MySQL/MariaDB result, stream
//    (libpq single-row mode, mysql_use_result). Memory is a page of rows whatever the result
//    size. Values: booleans, integers up to 64 bits and finite floats are JSON booleans and
//    numbers; everything else is the server's text form (exact), binary as "\x<hex>".
//  - Errors: the database's own error (code and message); statement errors are
//    InvalidArgument/NotFound/PermissionDenied as the engine's client classifies them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/connection.h"
#include "core/result.h"

namespace dbs::explorer {

struct ConsoleColumn {
  std::string name;
  std::string type;  // the engine's type name: "integer", "character varying(20)", "BIGINT"
};

struct ConsolePage {
  std::vector<ConsoleColumn> columns;             // empty for a statement without rows
  nlohmann::json rows = nlohmann::json::array();  // arrays of values, one per row
  bool has_more = false;                          // more rows wait in the cursor
  int64_t rows_affected = -1;                     // INSERT/UPDATE/DELETE...; -1: not told
  std::string command;                            // PostgreSQL's command tag ("UPDATE 3")
};

struct ConsolePlan {
  std::string text;     // the engine's text plan
  nlohmann::json json;  // the engine's JSON plan
};

class QuerySession {
 public:
  // Connects. `read_only` picks the transaction (see above); `timeout_ms` > 0 also sets the
  // server's own statement timeout where there is one (PostgreSQL statement_timeout).
  static Result<std::unique_ptr<QuerySession>> Open(const ConnectionConfig& config, bool read_only,
                                                    int64_t timeout_ms);
  virtual ~QuerySession() = default;  // closes: rolls back (read-only) or commits

  // Runs `sql` (one statement) and returns its first page of at most `max_rows` rows.
  virtual Result<ConsolePage> Execute(const std::string& sql, int64_t max_rows) = 0;
  // The next page of the same statement; has_more false at the end.
  virtual Result<ConsolePage> Fetch(int64_t max_rows) = 0;
  // The plan of `sql` (not run unless `analyze`; ANALYZE runs it in a transaction that is
  // rolled back on PostgreSQL).
  virtual Result<ConsolePlan> Explain(const std::string& sql, bool analyze) = 0;
  // Thread-safe: cancels what runs on the server now. `timeout`: say "timeout" in the error.
  virtual void Cancel(bool timeout) = 0;
  // Ends the statement and the transaction now (rollback when read-only, else commit).
  virtual Status Close() = 0;
  // The server's id of this session's connection (PostgreSQL backend pid, MySQL thread id).
  virtual int64_t server_session_id() const = 0;
  virtual bool read_only() const = 0;
};

}  // namespace dbs::explorer

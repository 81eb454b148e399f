// libpq helpers shared by the PostgreSQL source, sink and CDC code: RAII handles, connecting
// with classified errors, running statements, and mapping server errors onto Status.
//
// Contract:
//  - Connections are owned by ConnPtr (PQfinish on destruction), results by ResultPtr (PQclear),
//    libpq-allocated buffers by FreePtr (PQfreemem). Nothing here is shared between threads:
//    a connection is used by one thread at a time (libpq's own rule).
//  - Every session gets the same settings (SessionSettingsSql): UTF-8, ISO dates, UTC, exact
//    floats, hex bytea, so text forms read from any server are the same.
//  - Errors: the SQLSTATE decides code and retry class (ErrorStatus); connection failures have
//    no SQLSTATE and are classified from libpq's message (Connect). Connection loss, serialization
//    failures, deadlocks, lock timeouts and "too many connections" are retryable; bad
//    credentials, missing objects, missing privileges and rejected data are not.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/connection.h"
#include "core/result.h"

namespace dbs::pg {

struct ConnDeleter {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
struct FreeDeleter {
  void operator()(char* p) const { PQfreemem(p); }
};
using ConnPtr = std::unique_ptr<PGconn, ConnDeleter>;
using ResultPtr = std::unique_ptr<PGresult, ResultDeleter>;
using FreePtr = std::unique_ptr<char, FreeDeleter>;

// The SET statements every session runs after connecting.
extern const char kSessionSettingsSql[];

// Opens a connection and applies the session settings; server notices are dropped. Errors name the
// server (without the password): Unavailable (retryable) when it cannot be reached, is starting up
// or shutting down, or has too many clients; Unauthenticated for a wrong password, unknown role or
// no pg_hba.conf entry; NotFound when the database does not exist; PermissionDenied without CONNECT
// privilege; FailedPrecondition for SSL set-up errors.
// `replication`: a logical replication connection (replication=database), which also runs SQL.
Result<ConnPtr> Connect(const ConnectionConfig& config, bool replication = false);

// The Status of a failed statement. `res` may be null (then the connection's error message is
// used). The message is "<context>: <server message>" followed by what the server names: schema
// and table, column, constraint, the DETAIL, HINT and CONTEXT lines. Codes by SQLSTATE:
//   08*, 57P0*, 53300 Unavailable (retry)   40001, 40P01, 40* Aborted (retry)
//   55P03, 57014 Timeout (retry)            53* ResourceExhausted (retry)
//   28* Unauthenticated   42501 PermissionDenied   3D000, 3F000, 42P01, 42703, 42704 NotFound
//   42P06, 42P07, 42710 AlreadyExists       23* FailedPrecondition   22* InvalidArgument
//   0A000 Unsupported     XX* Internal      other 42* InvalidArgument
// A result without an SQLSTATE on a broken connection is Unavailable (retry).
Status ErrorStatus(PGconn* conn, const PGresult* res, std::string_view context);

// The SQLSTATE of a failed result ("" when none).
std::string_view SqlState(const PGresult* res);

// Runs `sql` (one or more statements; the last one's result is returned) and checks that it
// succeeded with a command or rows.
Result<ResultPtr> Exec(PGconn* conn, const std::string& sql, std::string_view context);
Status Command(PGconn* conn, const std::string& sql, std::string_view context);
// One statement with text parameters $1..$n (nullopt is NULL), extended protocol.
Result<ResultPtr> ExecParams(PGconn* conn, const std::string& sql,
                             const std::vector<std::optional<std::string>>& params,
                             std::string_view context);

// ROLLBACK when the connection is in a transaction (idle-in-transaction or failed); errors are
// ignored (the caller already has the error it reports).
void RollbackQuietly(PGconn* conn);

// A field as text ("" for NULL); a view into `res`.
inline std::string_view Text(const PGresult* res, int row, int col) {
  return std::string_view(PQgetvalue(res, row, col),
                          static_cast<size_t>(PQgetlength(res, row, col)));
}
inline bool IsNull(const PGresult* res, int row, int col) {
  return PQgetisnull(res, row, col) != 0;
}
// Parses an integer/boolean field; 0 / false for NULL or malformed text.
int64_t Int(const PGresult* res, int row, int col);
bool Bool(const PGresult* res, int row, int col);

// typemap's quoting (typemap/sql.h) for PostgreSQL: "name" with " doubled; "schema"."name";
// 'text' with ' doubled (E'...' when it holds a backslash).
std::string QuoteIdent(std::string_view name);
std::string QualifiedName(std::string_view schema, std::string_view name);
std::string QuoteLiteral(std::string_view text);
// A text[] literal ({"a","b\"c"}) for passing a list as one parameter.
std::string TextArrayLiteral(const std::vector<std::string>& items);

}  // namespace dbs::pg

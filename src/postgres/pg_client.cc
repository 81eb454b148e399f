#include "postgres/pg_client.h"

#include <charconv>
#include <cstring>

#include "typemap/sql.h"

namespace dbs::pg {

const char kSessionSettingsSql[] =
    "SET client_encoding = 'UTF8'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres'; "
    "SET TimeZone = 'UTC'; SET extra_float_digits = 3; SET bytea_output = 'hex'";

namespace {

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// libpq messages end with a newline and may span lines: one line, trimmed.
std::string OneLine(std::string_view msg) {
  std::string out;
  out.reserve(msg.size());
  bool space = false;
  for (char c : msg) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

StatusCode CodeForSqlState(std::string_view s, Retry* retry) {
  *retry = Retry::kFail;
  auto is = [&](std::string_view p) { return s.substr(0, p.size()) == p; };
  if (is("08") || is("57P01") || is("57P02") || is("57P03") || s == "53300") {
    *retry = Retry::kRetry;
    return StatusCode::kUnavailable;
  }
  if (is("40")) {
    *retry = Retry::kRetry;
    return StatusCode::kAborted;
  }
  if (s == "55P03" || s == "57014") {
    *retry = Retry::kRetry;
    return StatusCode::kTimeout;
  }
  if (is("53")) {
    *retry = Retry::kRetry;
    return StatusCode::kResourceExhausted;
  }
  if (is("28")) return StatusCode::kUnauthenticated;
  if (s == "42501") return StatusCode::kPermissionDenied;
  if (s == "3D000" || s == "3F000" || s == "42P01" || s == "42703" || s == "42704" ||
      s == "42883") {
    return StatusCode::kNotFound;
  }
  if (s == "42P06" || s == "42P07" || s == "42710") return StatusCode::kAlreadyExists;
  if (is("23")) return StatusCode::kFailedPrecondition;
  if (is("22")) return StatusCode::kInvalidArgument;
  if (s == "0A000") return StatusCode::kUnsupported;
  if (is("XX")) return StatusCode::kInternal;
  if (is("42")) return StatusCode::kInvalidArgument;
  return StatusCode::kInternal;
}

}  // namespace

Result<ConnPtr> Connect(const ConnectionConfig& config, bool replication) {
  const std::string where = "PostgreSQL at " + config.Redacted();
  // libpq reads the TLS files by path while connecting: inline PEM goes to private files.
  DBS_ASSIGN_OR_RETURN(PemFiles pem, PemFiles::Write(config.ssl));
  ConnectionConfig with_files = config;
  with_files.ssl = pem.settings();
  ConnPtr conn(PQconnectdb(with_files.LibpqConninfo(replication).c_str()));
  if (!conn) return Status::ResourceExhausted("cannot allocate a libpq connection");
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    const std::string msg = OneLine(PQerrorMessage(conn.get()));
    const std::string text = "cannot connect to " + where + ": " + msg;
    if (Contains(msg, "password authentication failed") || Contains(msg, "no password supplied") ||
        Contains(msg, "authentication failed") || Contains(msg, "no pg_hba.conf entry") ||
        (Contains(msg, "role \"") && Contains(msg, "does not exist"))) {
      return Status::Unauthenticated(text + " (check the user name and password)");
    }
    if (Contains(msg, "database \"") && Contains(msg, "does not exist")) {
      return Status::NotFound(text);
    }
    if (Contains(msg, "permission denied for database") || Contains(msg, "CONNECT privilege")) {
      return Status::PermissionDenied(text);
    }
    if (Contains(msg, "SSL") && !Contains(msg, "SSL SYSCALL")) {
      return Status::FailedPrecondition(text + " (check the SSL settings)");
    }
    // Refused, unreachable, DNS failure, timeout, starting up, shutting down, too many
    // clients: the same call may succeed later.
    return Status(StatusCode::kUnavailable, Retry::kRetry, text);
  }
  // Notices ("relation already exists, skipping", ...) are not errors: keep them off stderr.
  PQsetNoticeProcessor(
      conn.get(), [](void*, const char*) {}, nullptr);
  ResultPtr res(PQexec(conn.get(), kSessionSettingsSql));
  if (PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
    return ErrorStatus(conn.get(), res.get(), "setting up the session on " + where);
  }
  return conn;
}

std::string_view SqlState(const PGresult* res) {
  const char* s = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
  return s ? std::string_view(s) : std::string_view();
}

Status ErrorStatus(PGconn* conn, const PGresult* res, std::string_view context) {
  std::string msg(context);
  msg += ": ";
  const char* primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  if (primary) {
    msg += primary;
  } else {
    const char* e = res ? PQresultErrorMessage(res) : "";
    if (e == nullptr || *e == '\0') e = conn ? PQerrorMessage(conn) : "";
    msg += OneLine(e);
  }
  const std::string_view state = SqlState(res);
  if (res) {
    const char* schema = PQresultErrorField(res, PG_DIAG_SCHEMA_NAME);
    const char* table = PQresultErrorField(res, PG_DIAG_TABLE_NAME);
    const char* column = PQresultErrorField(res, PG_DIAG_COLUMN_NAME);
    const char* constraint = PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME);
    const char* detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
    const char* hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);
    const char* where = PQresultErrorField(res, PG_DIAG_CONTEXT);
    if (table) {
      msg += "; table ";
      if (schema) msg += std::string(schema) + ".";
      msg += table;
    }
    if (column) msg += std::string("; column ") + column;
    if (constraint) msg += std::string("; constraint ") + constraint;
    if (detail) msg += std::string("; DETAIL: ") + OneLine(detail);
    if (hint) msg += std::string("; HINT: ") + OneLine(hint);
    if (where) msg += std::string("; CONTEXT: ") + OneLine(where);
  }
  if (!state.empty()) {
    msg += " (SQLSTATE " + std::string(state) + ")";
    Retry retry;
    StatusCode code = CodeForSqlState(state, &retry);
    return Status(code, retry, std::move(msg));
  }
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    return Status(StatusCode::kUnavailable, Retry::kRetry, std::move(msg));
  }
  return Status::Internal(std::move(msg));
}

Result<ResultPtr> Exec(PGconn* conn, const std::string& sql, std::string_view context) {
  ResultPtr res(PQexec(conn, sql.c_str()));
  ExecStatusType st = PQresultStatus(res.get());
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return ErrorStatus(conn, res.get(), context);
  }
  return res;
}

Status Command(PGconn* conn, const std::string& sql, std::string_view context) {
  return Exec(conn, sql, context).status();
}

Result<ResultPtr> ExecParams(PGconn* conn, const std::string& sql,
                             const std::vector<std::optional<std::string>>& params,
                             std::string_view context) {
  std::vector<const char*> values(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    values[i] = params[i] ? params[i]->c_str() : nullptr;
  }
  ResultPtr res(PQexecParams(conn, sql.c_str(), static_cast<int>(params.size()), nullptr,
                             values.data(), nullptr, nullptr, 0));
  ExecStatusType st = PQresultStatus(res.get());
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return ErrorStatus(conn, res.get(), context);
  }
  return res;
}

void RollbackQuietly(PGconn* conn) {
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) return;
  PGTransactionStatusType ts = PQtransactionStatus(conn);
  if (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR) {
    ResultPtr res(PQexec(conn, "ROLLBACK"));
  }
}

int64_t Int(const PGresult* res, int row, int col) {
  std::string_view t = Text(res, row, col);
  int64_t v = 0;
  std::from_chars(t.data(), t.data() + t.size(), v);
  return v;
}

bool Bool(const PGresult* res, int row, int col) { return Text(res, row, col) == "t"; }

std::string QuoteIdent(std::string_view name) { return dbs::QuoteIdent(name, Dialect::kPostgres); }

std::string QualifiedName(std::string_view schema, std::string_view name) {
  return dbs::QualifiedName(schema, name, Dialect::kPostgres);
}

std::string QuoteLiteral(std::string_view text) {
  return dbs::QuoteLiteral(text, Dialect::kPostgres);
}

std::string TextArrayLiteral(const std::vector<std::string>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += '"';
    for (char c : items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace dbs::pg

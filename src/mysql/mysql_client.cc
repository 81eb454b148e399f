#include "mysql/mysql_client.h"

#include <mutex>

namespace dbs::mysql {

namespace {

std::once_flag g_library_once;

// What an error means for the operator, and how it is classified.
struct ErrorClass {
  StatusCode code;
  Retry retry;
  const char* meaning;  // may be empty
  bool breaks_connection = false;
};

ErrorClass Classify(unsigned code) {
  switch (code) {
    // Connection refused, lost or killed: retry with a new connection.
    case 2002:  // CR_CONNECTION_ERROR
    case 2003:  // CR_CONN_HOST_ERROR
    case 2005:  // CR_UNKNOWN_HOST
      return {StatusCode::kUnavailable, Retry::kRetry,
              "the server cannot be reached (check host, port and that it is running)", true};
    case 2006:  // CR_SERVER_GONE_ERROR
    case 2013:  // CR_SERVER_LOST
    case 2055:  // CR_SERVER_LOST_EXTENDED
    case 1927:  // ER_CONNECTION_KILLED (MariaDB)
    case 4031:  // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8)
      return {StatusCode::kUnavailable, Retry::kRetry, "the connection to the server was lost",
              true};
    case 1053:  // ER_SERVER_SHUTDOWN
      return {StatusCode::kUnavailable, Retry::kRetry, "the server is shutting down", true};
    case 1040:  // ER_CON_COUNT_ERROR
      return {StatusCode::kUnavailable, Retry::kRetry, "the server has too many connections"};
    case 1226:  // ER_USER_LIMIT_REACHED
      return {StatusCode::kResourceExhausted, Retry::kRetry, "a per-user resource limit was hit"};
    case 1205:  // ER_LOCK_WAIT_TIMEOUT
      return {StatusCode::kTimeout, Retry::kRetry, "a lock wait timed out"};
    case 1213:  // ER_LOCK_DEADLOCK
      return {StatusCode::kAborted, Retry::kRetry, "a deadlock rolled the transaction back"};
    case 1317:  // ER_QUERY_INTERRUPTED
      return {StatusCode::kCancelled, Retry::kRetry, "the statement was interrupted"};
    case 3024:  // ER_QUERY_TIMEOUT (MySQL max_execution_time)
    case 1969:  // ER_STATEMENT_TIMEOUT (MariaDB max_statement_time)
      return {StatusCode::kTimeout, Retry::kFail,
              "the statement exceeded the server's execution time limit"};

    // Credentials and privileges.
    case 1045:  // ER_ACCESS_DENIED_ERROR
      return {StatusCode::kUnauthenticated, Retry::kFail,
              "wrong user name or password (or the user may not connect from this host)"};
    case 1044:  // ER_DBACCESS_DENIED_ERROR
      return {StatusCode::kPermissionDenied, Retry::kFail, "the user may not use this database"};
    case 1142:  // ER_TABLEACCESS_DENIED_ERROR
    case 1143:  // ER_COLUMNACCESS_DENIED_ERROR
      return {StatusCode::kPermissionDenied, Retry::kFail,
              "the user lacks a privilege on the table (grant it, e.g. GRANT SELECT ON db.* TO "
              "user)"};
    case 1227:  // ER_SPECIFIC_ACCESS_DENIED_ERROR
    case 1370:  // ER_PROCACCESS_DENIED_ERROR
      return {StatusCode::kPermissionDenied, Retry::kFail, "the user lacks a privilege"};
    case 2059:  // CR_AUTH_PLUGIN_CANNOT_LOAD
      return {StatusCode::kUnsupported, Retry::kFail,
              "the server asks for an authentication plugin the client does not have"};
    case 2026:  // CR_SSL_CONNECTION_ERROR
      return {StatusCode::kFailedPrecondition, Retry::kFail,
              "the TLS connection failed (check ssl-mode, the CA and the certificates)"};

    // Missing or existing objects, bad SQL.
    case 1049:  // ER_BAD_DB_ERROR
      return {StatusCode::kNotFound, Retry::kFail, "the database does not exist"};
    case 1146:  // ER_NO_SUCH_TABLE
    case 1051:  // ER_BAD_TABLE_ERROR
      return {StatusCode::kNotFound, Retry::kFail, "the table does not exist"};
    case 1054:  // ER_BAD_FIELD_ERROR
      return {StatusCode::kInvalidArgument, Retry::kFail, "an unknown column is referenced"};
    case 1064:  // ER_PARSE_ERROR
    case 1149:  // ER_SYNTAX_ERROR
      return {StatusCode::kInvalidArgument, Retry::kFail, "the SQL does not parse"};
    case 1050:  // ER_TABLE_EXISTS_ERROR
    case 1007:  // ER_DB_CREATE_EXISTS
      return {StatusCode::kAlreadyExists, Retry::kFail, "the object already exists"};

    // Data the target rejects: the bundle can never be written as it is.
    case 1048:  // ER_BAD_NULL_ERROR
    case 1263:  // ER_WARN_NULL_TO_NOTNULL
    case 1062:  // ER_DUP_ENTRY
    case 1022:  // ER_DUP_KEY
    case 1261:  // ER_WARN_TOO_FEW_RECORDS
    case 1262:  // ER_WARN_TOO_MANY_RECORDS
    case 1264:  // ER_WARN_DATA_OUT_OF_RANGE
    case 1265:  // WARN_DATA_TRUNCATED
    case 1292:  // ER_TRUNCATED_WRONG_VALUE
    case 1300:  // ER_INVALID_CHARACTER_STRING
    case 1366:  // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
    case 1367:  // ER_ILLEGAL_VALUE_FOR_TYPE
    case 1406:  // ER_DATA_TOO_LONG
    case 1411:  // ER_WRONG_VALUE_FOR_TYPE
    case 1416:  // ER_CANT_CREATE_GEOMETRY_OBJECT
    case 1690:  // ER_DATA_OUT_OF_RANGE
    case 3140:  // ER_INVALID_JSON_TEXT (MySQL)
    case 3037:  // ER_GIS_INVALID_DATA (MySQL)
    case 3819:  // ER_CHECK_CONSTRAINT_VIOLATED (MySQL)
    case 4025:  // ER_CONSTRAINT_FAILED (MariaDB)
    case 1451:  // ER_ROW_IS_REFERENCED_2
    case 1452:  // ER_NO_REFERENCED_ROW_2
      return {StatusCode::kInvalidArgument, Retry::kFail, "the target rejected a value"};
    case 1118:  // ER_TOO_BIG_ROWSIZE
    case 1071:  // ER_TOO_LONG_KEY
      return {StatusCode::kInvalidArgument, Retry::kFail, "the table definition exceeds a limit"};

    // Server state and configuration.
    case 1148:  // ER_NOT_ALLOWED_COMMAND
    case 3948:  // ER_CLIENT_LOCAL_FILES_DISABLED (MySQL 8)
    case 2068:  // CR_LOAD_DATA_LOCAL_INFILE_REJECTED
      return {StatusCode::kFailedPrecondition, Retry::kFail,
              "LOAD DATA LOCAL INFILE is disabled (server option local_infile)"};
    case 1290:  // ER_OPTION_PREVENTS_STATEMENT
      return {StatusCode::kFailedPrecondition, Retry::kFail,
              "a server option prevents the statement (read-only server?)"};
    case 1021:  // ER_DISK_FULL
    case 1114:  // ER_RECORD_FILE_FULL
      return {StatusCode::kResourceExhausted, Retry::kFail, "the target is out of space"};
    default:
      break;
  }
  if (code >= 2000 && code < 3000) {
    return {StatusCode::kInternal, Retry::kFail, "client library error"};
  }
  return {StatusCode::kFailedPrecondition, Retry::kFail, ""};
}

bool BreaksConnection(unsigned code) { return Classify(code).breaks_connection; }

}  // namespace

Status MysqlError(unsigned code, std::string_view sqlstate, std::string_view server_message,
                  std::string_view context) {
  ErrorClass c = Classify(code);
  std::string msg(context);
  if (!msg.empty()) msg += ": ";
  if (c.meaning[0] != '\0') {
    msg += c.meaning;
    msg += " (";
  }
  msg += "MySQL error " + std::to_string(code);
  if (!sqlstate.empty()) {
    msg += " [";
    msg += sqlstate;
    msg += "]";
  }
  msg += ": ";
  msg += server_message;
  if (c.meaning[0] != '\0') msg += ")";
  return Status(c.code, c.retry, std::move(msg));
}

std::string QuoteName(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 2);
  out += '`';
  for (char ch : name) {
    if (ch == '`') out += '`';
    out += ch;
  }
  out += '`';
  return out;
}

std::string QuoteQualified(std::string_view schema, std::string_view name) {
  if (schema.empty()) return QuoteName(name);
  return QuoteName(schema) + "." + QuoteName(name);
}

Result<std::unique_ptr<MysqlConnection>> MysqlConnection::Open(const ConnectionConfig& config,
                                                               const ConnectOptions& options) {
  std::call_once(g_library_once, [] { mysql_library_init(0, nullptr, nullptr); });
  std::unique_ptr<MysqlConnection> conn(new MysqlConnection());
  conn->endpoint_ = "mysql://" + config.user + "@" + config.host + ":" +
                    std::to_string(config.EffectivePort()) + "/" +
                    (options.use_database ? config.database : "");
  conn->mysql_.reset(mysql_init(nullptr));
  MYSQL* m = conn->mysql_.get();
  if (m == nullptr) return Status::ResourceExhausted("mysql_init failed: out of memory");

  mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  unsigned int timeout = options.connect_timeout_seconds;
  mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  unsigned int local_infile = options.local_infile ? 1 : 0;
  mysql_options(m, MYSQL_OPT_LOCAL_INFILE, &local_infile);

  // SSL: PostgreSQL-style mode names (connection.h) onto Connector/C options. Connector/C
  // verifies the host name together with the chain, so verify-ca is as strict as verify-full;
  // without certificate files, allow/prefer connect without TLS.
  // Connector/C reads the TLS files by path in mysql_real_connect: inline PEM goes to private
  // files, which `pem` keeps until this function returns.
  DBS_ASSIGN_OR_RETURN(PemFiles pem, PemFiles::Write(config.ssl));
  const SslSettings& ssl = pem.settings();
  const std::string& mode = ssl.mode;
  if (mode != "disable") {
    if (!ssl.ca.empty()) mysql_options(m, MYSQL_OPT_SSL_CA, ssl.ca.c_str());
    if (!ssl.cert.empty()) mysql_options(m, MYSQL_OPT_SSL_CERT, ssl.cert.c_str());
    if (!ssl.key.empty()) mysql_options(m, MYSQL_OPT_SSL_KEY, ssl.key.c_str());
    my_bool enforce = 0, verify = 0;
    if (mode == "require") {
      enforce = 1;
    } else if (mode == "verify-ca" || mode == "verify-full") {
      enforce = 1;
      verify = 1;
    }
    if (enforce) mysql_options(m, MYSQL_OPT_SSL_ENFORCE, &enforce);
    mysql_options(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
  }

  std::string socket;
  if (auto it = config.params.find("socket"); it != config.params.end()) socket = it->second;
  const char* db =
      options.use_database && !config.database.empty() ? config.database.c_str() : nullptr;
  if (mysql_real_connect(m, config.host.c_str(), config.user.c_str(), config.password.c_str(), db,
                         static_cast<unsigned>(config.EffectivePort()),
                         socket.empty() ? nullptr : socket.c_str(), 0) == nullptr) {
    const unsigned code = mysql_errno(m);
    std::string where = "connecting to " + conn->endpoint_;
    switch (code) {
      case 1045:
        where = "cannot log in to " + conn->endpoint_ + " as '" + config.user + "'";
        break;
      case 1049:
        where = "database '" + config.database + "' does not exist on " + config.host + ":" +
                std::to_string(config.EffectivePort());
        break;
      case 1044:
        where = "user '" + config.user + "' may not use database '" + config.database + "'";
        break;
      default:
        break;
    }
    return MysqlError(code, mysql_sqlstate(m), mysql_error(m), where);
  }
  // Connector/C 3.3 goes on without TLS when the server offers none, even when told to
  // enforce it: check, so "require" never means "plain text".
  const bool tls_required = mode == "require" || mode == "verify-ca" || mode == "verify-full";
  if (tls_required && mysql_get_ssl_cipher(m) == nullptr) {
    return Status::FailedPrecondition(
        "connecting to " + conn->endpoint_ + ": ssl mode '" + mode +
        "' requires TLS, but the server did not offer it (is have_ssl YES on the server?)");
  }
  conn->is_mariadb_ = mariadb_connection(m) != 0;
  conn->version_ = mysql_get_server_version(m);

  std::string session =
      "SET SESSION time_zone = '+00:00', net_read_timeout = 3600, net_write_timeout = 3600, "
      "group_concat_max_len = 1073741824, ";
  if (options.role == SessionRole::kWrite) {
    session +=
        "sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION,NO_AUTO_VALUE_ON_ZERO', "
        "foreign_key_checks = 0";
  } else {
    session += "sql_mode = 'NO_ENGINE_SUBSTITUTION'";
  }
  DBS_RETURN_IF_ERROR(conn->Exec(session, "setting up the session on " + conn->endpoint_));
  return conn;
}

Status MysqlConnection::LastError(std::string_view context) {
  MYSQL* m = mysql_.get();
  const unsigned code = mysql_errno(m);
  if (code == 0)
    return Status::Internal(std::string(context) + ": MySQL call failed without error");
  if (BreaksConnection(code)) broken_ = true;
  return MysqlError(code, mysql_sqlstate(m), mysql_error(m), context);
}

Status MysqlConnection::StmtError(MYSQL_STMT* stmt, std::string_view context) {
  const unsigned code = mysql_stmt_errno(stmt);
  if (code == 0) return LastError(context);
  if (BreaksConnection(code)) broken_ = true;
  return MysqlError(code, mysql_stmt_sqlstate(stmt), mysql_stmt_error(stmt), context);
}

Status MysqlConnection::Exec(std::string_view sql, std::string_view context) {
  MYSQL* m = mysql_.get();
  if (mysql_real_query(m, sql.data(), static_cast<unsigned long>(sql.size())) != 0) {
    return LastError(context);
  }
  // Discard any result set (and further results of a multi-result statement). Only calls
  // mysql_next_result when there is one: it resets mysql_affected_rows().
  while (true) {
    if (mysql_field_count(m) != 0) {
      ResultHandle r(mysql_store_result(m));
      if (r == nullptr) return LastError(context);
    }
    if (!mysql_more_results(m)) break;
    const int rc = mysql_next_result(m);
    if (rc > 0) return LastError(context);
    if (rc < 0) break;
  }
  return Status::Ok();
}

Result<std::vector<TextRow>> MysqlConnection::Query(std::string_view sql,
                                                    std::string_view context) {
  MYSQL* m = mysql_.get();
  if (mysql_real_query(m, sql.data(), static_cast<unsigned long>(sql.size())) != 0) {
    return LastError(context);
  }
  ResultHandle r(mysql_store_result(m));
  std::vector<TextRow> rows;
  if (r == nullptr) {
    if (mysql_field_count(m) != 0) return LastError(context);
    return rows;
  }
  const unsigned n = mysql_num_fields(r.get());
  rows.reserve(mysql_num_rows(r.get()));
  while (MYSQL_ROW row = mysql_fetch_row(r.get())) {
    const unsigned long* lengths = mysql_fetch_lengths(r.get());
    TextRow out(n);
    for (unsigned i = 0; i < n; ++i) {
      if (row[i] != nullptr) out[i].emplace(row[i], lengths[i]);
    }
    rows.push_back(std::move(out));
  }
  return rows;
}

Result<ResultHandle> MysqlConnection::StreamQuery(std::string_view sql, std::string_view context) {
  MYSQL* m = mysql_.get();
  if (mysql_real_query(m, sql.data(), static_cast<unsigned long>(sql.size())) != 0) {
    return LastError(context);
  }
  ResultHandle r(mysql_use_result(m));
  if (r == nullptr) {
    if (mysql_errno(m) != 0) return LastError(context);
    return Status::Internal(std::string(context) + ": the statement returned no result set");
  }
  return r;
}

std::string MysqlConnection::Literal(std::string_view text) {
  std::string out;
  out.resize(text.size() * 2 + 3);
  out[0] = '\'';
  unsigned long n = mysql_real_escape_string(mysql_.get(), out.data() + 1, text.data(),
                                             static_cast<unsigned long>(text.size()));
  out.resize(n + 1);
  out += '\'';
  return out;
}

}  // namespace dbs::mysql

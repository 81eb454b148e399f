// Engine implementations of QuerySession (console.h) and what they share.
#pragma once

#include <libpq-fe.h>
#include <mysql.h>

#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/connection.h"
#include "core/result.h"
#include "explorer/console.h"

namespace dbs::explorer {

Result<std::unique_ptr<QuerySession>> OpenPostgresSession(const ConnectionConfig& config,
                                                          bool read_only, int64_t timeout_ms);
Result<std::unique_ptr<QuerySession>> OpenMysqlSession(const ConnectionConfig& config,
                                                       bool read_only, int64_t timeout_ms);

// A refusal by the database's read-only transaction becomes PermissionDenied saying how to
// write; any other error is returned as it is.
Status ClassifyReadOnly(bool refused_as_read_only, const Status& s);

// A PostgreSQL field as JSON (console.h's value rules), by the column's type OID.
nlohmann::json PgValue(const PGresult* res, int row, int col);
// The name of a built-in PostgreSQL type ("oid N" for others).
std::string PgBuiltinTypeName(Oid oid);

// A MySQL/MariaDB result column's type name ("BIGINT UNSIGNED", "VARCHAR", "DECIMAL(10,2)").
std::string MysqlTypeName(const MYSQL_FIELD& f);
// A MySQL/MariaDB field (the server's text form, `len` bytes; null: SQL NULL) as JSON.
nlohmann::json MysqlValue(const MYSQL_FIELD& f, const char* data, unsigned long len);

}  // namespace dbs::explorer

// Reading a PostgreSQL table's structure from the system catalogs into the schema model.
//
// Internal to the PostgreSQL source. Each function runs catalog queries on `conn` (which may be
// inside a transaction; nothing is written) and uses `types` to resolve type OIDs. Errors name
// the table: NotFound when it does not exist, PermissionDenied when the role may not read it,
// Unsupported (naming the column and its type) for a type dbstreams cannot carry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/schema.h"
#include "postgres/pg_client.h"
#include "postgres/pg_types.h"
#include "sources/source.h"

namespace dbs::pg {

// Schemas never listed: the system's and dbstreams' own bookkeeping schema.
inline constexpr const char* kDbstreamsSchema = "_dbstreams";

// Base and partitioned tables outside system schemas; partitions of a partitioned table and
// tables owned by extensions are left out (the parent is read as a whole).
Result<std::vector<TableRef>> ListTables(PGconn* conn);

// A relation resolved by name: OID, real schema and name, relkind.
struct RelationInfo {
  uint32_t oid = 0;
  std::string schema;
  std::string name;
  char kind = 'r';  // r table, p partitioned, v view, m materialized view, f foreign table
  double reltuples = -1;
  std::string comment;
};
// `table.schema` empty: the search path decides. NotFound when there is no such relation;
// PermissionDenied (naming the table and the role) without SELECT privilege on any column.
Result<RelationInfo> ResolveRelation(PGconn* conn, const TableRef& table);

// Everything: columns (types through typemap's ColumnFromPostgres), primary key, unique and
// secondary indexes, foreign keys, checks, the row estimate and comments.
Result<TableSchema> DescribeTable(PGconn* conn, TypeCache* types, const TableRef& table);

// The result columns of a query (prepared, never run), named `name`. InvalidArgument when the
// query does not parse or repeats a column name.
Result<TableSchema> DescribeQuery(PGconn* conn, TypeCache* types, const std::string& query,
                                  const TableRef& name);

// `query` without trailing semicolons and white space (so it can be wrapped in a subquery).
std::string TrimQuery(const std::string& query);

}  // namespace dbs::pg

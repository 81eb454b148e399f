// The schema objects of a PostgreSQL database besides its tables (core/schema.h, SchemaObject):
// what a writer may recreate on a PostgreSQL target and what a plan lists.
//
// Internal to the PostgreSQL source. Reads the catalogs on `conn` (nothing is written; the
// session's search_path is changed while definitions are printed and restored before return).
// Objects owned by extensions are left out (the extension stands for them), and so are the
// triggers PostgreSQL makes for foreign keys.
#pragma once

#include <vector>

#include "core/result.h"
#include "core/schema.h"
#include "postgres/pg_client.h"

namespace dbs::pg {

// For the schemas of `tables`: views and materialized views, functions, procedures and
// aggregates, standalone sequences with their values, and every extension of the database;
// for `tables` themselves: triggers, row-level security policies and rules; and the domains
// their columns use (reported: the columns get the base type). Definitions name objects of their
// own schema unqualified.
Result<std::vector<SchemaObject>> DescribeObjects(PGconn* conn,
                                                  const std::vector<TableSchema>& tables);

}  // namespace dbs::pg

// Proves the pinned DuckDB library and header installed by scripts/setup.sh match: opens an
// in-memory database through the C API and runs a query.
#include <duckdb.h>
#include <gtest/gtest.h>

namespace {

TEST(DuckDb, CApiRunsAQuery) {
  duckdb_database db;
  duckdb_connection con;
  ASSERT_EQ(duckdb_open(nullptr, &db), DuckDBSuccess);
  ASSERT_EQ(duckdb_connect(db, &con), DuckDBSuccess);
  duckdb_result res;
  ASSERT_EQ(duckdb_query(con, "SELECT 40 + 2 AS answer, 'dbstreams' AS name", &res), DuckDBSuccess);
  EXPECT_EQ(duckdb_column_count(&res), 2u);
  EXPECT_EQ(duckdb_value_int64(&res, 0, 0), 42);
  char* name = duckdb_value_varchar(&res, 1, 0);
  EXPECT_STREQ(name, "dbstreams");
  duckdb_free(name);
  duckdb_destroy_result(&res);
  duckdb_disconnect(&con);
  duckdb_close(&db);
}

}  // namespace

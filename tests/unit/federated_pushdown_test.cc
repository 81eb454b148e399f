// Which source tables a statement names and which WHERE conditions may be sent to them
// (federated/pushdown.h), on syntax trees from DuckDB's own parser.
#include <duckdb.h>
#include <gtest/gtest.h>

#include "federated/pushdown.h"

namespace dbs::federated {
namespace {

using nlohmann::json;

json Ast(const std::string& sql) {
  duckdb_database db;
  duckdb_connection con;
  EXPECT_EQ(duckdb_open(nullptr, &db), DuckDBSuccess);
  EXPECT_EQ(duckdb_connect(db, &con), DuckDBSuccess);
  duckdb_prepared_statement st;
  EXPECT_EQ(duckdb_prepare(con, "SELECT json_serialize_sql($1::VARCHAR)", &st), DuckDBSuccess);
  duckdb_bind_varchar(st, 1, sql.c_str());
  duckdb_result res;
  EXPECT_EQ(duckdb_execute_prepared(st, &res), DuckDBSuccess);
  char* v = duckdb_value_varchar(&res, 0, 0);
  json out = json::parse(v);
  duckdb_free(v);
  duckdb_destroy_result(&res);
  duckdb_destroy_prepare(&st);
  duckdb_disconnect(&con);
  duckdb_close(&db);
  return out;
}

const std::set<std::string> kAliases = {"pg1", "my1"};

// "alias.schema.table:column op value..." per pushed predicate, every column taken to exist
// unless named "missing".
std::vector<std::string> Pushed(const std::string& sql) {
  auto preds = CollectPredicates(
      Ast(sql), kAliases, [](const TableKey&, const std::string& c) { return c != "missing"; });
  std::vector<std::string> out;
  for (const auto& [k, list] : preds) {
    for (const auto& p : list) {
      std::string s = k.alias + "." + k.schema + "." + k.table + ":" + p.column;
      switch (p.kind) {
        case Predicate::Kind::kCompare:
          s += " " + p.op;
          break;
        case Predicate::Kind::kIn:
          s += " in";
          break;
        case Predicate::Kind::kIsNull:
          s += " is null";
          break;
        case Predicate::Kind::kIsNotNull:
          s += " is not null";
          break;
      }
      for (const auto& v : p.values) s += " " + v["value"].dump();
      out.push_back(s);
    }
  }
  return out;
}

TEST(FederatedPushdown, CollectsSourceTablesAndCountsReferences) {
  auto t = CollectTables(Ast("WITH x AS (SELECT * FROM pg1.public.users) "
                             "SELECT * FROM x JOIN PG1.Public.Users u2 ON true "
                             "JOIN my1.orders o ON true JOIN other.s.t ON true JOIN x.y ON true"),
                         kAliases);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].key, (TableKey{"pg1", "public", "users"}));
  EXPECT_EQ(t[0].references, 2);
  EXPECT_EQ(t[0].table_as_written, "users");
  EXPECT_EQ(t[1].key, (TableKey{"my1", "", "orders"}));  // alias.table: the default schema
  EXPECT_EQ(t[1].references, 1);
}

TEST(FederatedPushdown, TakesSimpleConditionsOnOneTable) {
  EXPECT_EQ(Pushed("SELECT * FROM pg1.public.users u WHERE u.id >= 5 AND 10 > u.id "
                   "AND u.name IN ('a', 'b') AND u.x IS NULL AND u.y IS NOT NULL "
                   "AND u.id BETWEEN 1 AND 9 AND u.z <> 2.5"),
            (std::vector<std::string>{"pg1.public.users:id >= 5", "pg1.public.users:id < 10",
                                      "pg1.public.users:name in \"a\" \"b\"",
                                      "pg1.public.users:x is null",
                                      "pg1.public.users:y is not null", "pg1.public.users:id >= 1",
                                      "pg1.public.users:id <= 9", "pg1.public.users:z <> 25"}));
  // Unqualified columns: only when the FROM holds one table.
  EXPECT_EQ(Pushed("SELECT * FROM pg1.public.users WHERE id = 1").size(), 1u);
  EXPECT_TRUE(Pushed("SELECT * FROM pg1.public.users, my1.s.t WHERE id = 1").empty());
}

TEST(FederatedPushdown, LeavesOutWhatIsNotSafeOrNotSimple) {
  // OR, NOT IN, functions, column-to-column, NULL constants, LIKE.
  EXPECT_TRUE(Pushed("SELECT * FROM pg1.public.users u WHERE (u.id = 1 OR u.id = 2) "
                     "AND u.id NOT IN (3) AND lower(u.name) = 'a' AND u.a = u.b "
                     "AND u.c = NULL AND u.name LIKE 'x%'")
                  .empty());
  // IS NULL on the NULL-extended side of an outer join stays in DuckDB; IS NOT NULL goes.
  EXPECT_EQ(Pushed("SELECT * FROM pg1.public.users u LEFT JOIN my1.s.o o ON o.uid = u.id "
                   "WHERE o.note IS NULL AND o.x IS NOT NULL AND u.y IS NULL"),
            (std::vector<std::string>{"my1.s.o:x is not null", "pg1.public.users:y is null"}));
  EXPECT_EQ(Pushed("SELECT * FROM pg1.public.users u RIGHT JOIN my1.s.o o ON o.uid = u.id "
                   "WHERE u.note IS NULL"),
            std::vector<std::string>{});
  // A column the table does not have belongs to an outer query (correlated): not taken.
  EXPECT_TRUE(Pushed("SELECT * FROM my1.s.o o WHERE EXISTS (SELECT 1 FROM pg1.public.users "
                     "WHERE missing = 1)")
                  .empty());
  // A subquery's own WHERE is taken for its own FROM.
  EXPECT_EQ(Pushed("SELECT * FROM (SELECT * FROM pg1.public.users WHERE id < 3) q"),
            std::vector<std::string>{"pg1.public.users:id < 3"});
}

TEST(FederatedPushdown, TakesJoinConditionsForTheSideTheyNarrow) {
  // Inner join: both sides; LEFT: the right side only; FULL: none; bare names: none.
  EXPECT_EQ(Pushed("SELECT * FROM pg1.public.users u JOIN my1.s.o o "
                   "ON o.uid = u.id AND u.id < 5 AND o.status = 'paid' AND id = 3"),
            (std::vector<std::string>{"my1.s.o:status = \"paid\"", "pg1.public.users:id < 5"}));
  EXPECT_EQ(Pushed("SELECT * FROM pg1.public.users u LEFT JOIN my1.s.o o "
                   "ON o.uid = u.id AND u.id < 5 AND o.status = 'paid' AND o.note IS NULL"),
            (std::vector<std::string>{"my1.s.o:status = \"paid\"", "my1.s.o:note is null"}));
  EXPECT_EQ(Pushed("SELECT * FROM pg1.public.users u RIGHT JOIN my1.s.o o "
                   "ON o.uid = u.id AND u.id < 5 AND o.status = 'paid'"),
            (std::vector<std::string>{"pg1.public.users:id < 5"}));
  EXPECT_TRUE(Pushed("SELECT * FROM pg1.public.users u FULL JOIN my1.s.o o "
                     "ON o.uid = u.id AND u.id < 5 AND o.status = 'paid'")
                  .empty());
  // IS NULL on a table NULL-extended inside the joined side is not taken.
  EXPECT_TRUE(Pushed("SELECT * FROM pg1.public.a a JOIN (my1.s.b b LEFT JOIN my1.s.c c "
                     "ON c.id = b.id) ON a.id = b.id AND c.x IS NULL")
                  .empty());
}

}  // namespace
}  // namespace dbs::federated

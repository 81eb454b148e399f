// Which source tables a statement names and which WHERE conditions may be sent to them
// (federated/pushdown.h), on syntax trees from DuckDB's own parser.
#include <duckdb.h>
#include <gtest/gtest.h>

#include "federated/pushdown.h"
#include "federated/s3_urls.h"

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

// s3:// URLs (s3_urls.h): found where the parser puts them as file function arguments, at
// their exact bytes, and nowhere else.
std::vector<std::string> Urls(const std::string& sql) {
  auto found = FindS3Urls(Ast(sql), sql);
  EXPECT_TRUE(found.ok()) << found.status().ToString();
  std::vector<std::string> out;
  for (const auto& l : found.ok() ? *found : std::vector<S3UrlLiteral>()) {
    EXPECT_EQ(sql.substr(l.begin, 1), "'");
    out.push_back(sql.substr(l.begin, l.end - l.begin) + "=" + l.url);
  }
  return out;
}

TEST(FederatedS3Urls, FindsFileFunctionArgumentsOnly) {
  EXPECT_EQ(Urls("SELECT 's3://b/not/an/argument' AS u, x FROM read_parquet('s3://b/e/*.parquet') "
                 "e WHERE x <> 's3://b/also/data'"),
            std::vector<std::string>{"'s3://b/e/*.parquet'=s3://b/e/*.parquet"});
  EXPECT_EQ(Urls("WITH t AS (SELECT * FROM read_csv(['s3://b/a.csv', 's3://b/it''s.csv'], "
                 "header = true)) SELECT * FROM t JOIN pg1.public.u ON true"),
            (std::vector<std::string>{"'s3://b/a.csv'=s3://b/a.csv",
                                      "'s3://b/it''s.csv'=s3://b/it's.csv"}));
  EXPECT_EQ(Urls("SELECT * FROM (SELECT * FROM read_json('s3://b/x.jsonl')) q UNION ALL "
                 "SELECT * FROM read_json_auto('s3://b/y.jsonl')"),
            (std::vector<std::string>{"'s3://b/x.jsonl'=s3://b/x.jsonl",
                                      "'s3://b/y.jsonl'=s3://b/y.jsonl"}));
  EXPECT_TRUE(Urls("SELECT * FROM read_parquet('/data/x.parquet')").empty());
  const std::string table = "SELECT * FROM 's3://b/x.parquet'";
  auto refused = FindS3Urls(Ast(table), table);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("read_parquet('s3://b/x.parquet')"), std::string::npos)
      << refused.status().ToString();
}

TEST(FederatedS3Urls, SplicesReplacementsAsLiterals) {
  const std::string sql = "SELECT * FROM read_csv(['s3://b/a.csv', 's3://b/c.csv']) x";
  auto found = FindS3Urls(Ast(sql), sql);
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ(SpliceLiterals(sql, *found, {"/m/a.csv", "/m/it's.csv"}),
            "SELECT * FROM read_csv(['/m/a.csv', '/m/it''s.csv']) x");
}

TEST(FederatedS3Urls, ParsesUrlsAndMatchesGlobs) {
  std::string bucket, key;
  ASSERT_TRUE(ParseS3Url("s3://lake/events/2026-*/*.parquet", &bucket, &key).ok());
  EXPECT_EQ(bucket, "lake");
  EXPECT_EQ(key, "events/2026-*/*.parquet");
  EXPECT_FALSE(ParseS3Url("s3://lake", &bucket, &key).ok());
  EXPECT_FALSE(ParseS3Url("s3://lake/events/", &bucket, &key).ok());
  EXPECT_FALSE(ParseS3Url("s3://lake/a/../b.csv", &bucket, &key).ok());
  EXPECT_FALSE(ParseS3Url("https://lake/a.csv", &bucket, &key).ok());
  EXPECT_TRUE(MatchKeyGlob("events/2026-*/*.parquet", "events/2026-11/a.parquet"));
  EXPECT_FALSE(MatchKeyGlob("events/2026-*/*.parquet", "events/2026-11/x/a.parquet"));
  EXPECT_FALSE(MatchKeyGlob("events/*.parquet", "events/2026/a.parquet"));
  EXPECT_TRUE(MatchKeyGlob("events/**/*.parquet", "events/y=1/m=2/a.parquet"));
  EXPECT_TRUE(MatchKeyGlob("events/m=1?/[ab].csv", "events/m=12/b.csv"));
}

}  // namespace
}  // namespace dbs::federated

// The table browser and ER diagrams over real HTTP: keyset and offset paging, sorting, filters
// with hostile values and names that can only ever be data, counts, DDL, column profiles,
// and the filters seen as parameters in the servers' own statement logs.
#include <fstream>
#include <sstream>

#include "explorer_fixture.h"

namespace dbs {
namespace {

using nlohmann::json;
using testing::ExplorerEnv;

// A value and a name no string-built SQL would survive.
const std::string kHostile = "x'); DROP TABLE accounts; -- `\" \\ ; 日本 🦆";
const std::string kHostileTable = "we'ird `t\"; DROP TABLE accounts; -- ü";
const std::string kHostileColumn = "na\"me`; --";

class Browse : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ExplorerEnv::SetUp();
    auto pg = testing::SharedServers::Postgres();
    auto my = testing::SharedServers::MariaDb();
    ASSERT_TRUE((*pg)
                    ->Exec("CREATE TABLE numbers AS SELECT g AS id, g % 7 AS m FROM "
                           "generate_series(1, 2500) g; ALTER TABLE numbers ADD PRIMARY KEY (id);"
                           "ALTER TABLE numbers ALTER COLUMN m SET NOT NULL;"
                           "CREATE TABLE orders (id int PRIMARY KEY, account_id int NOT NULL "
                           "REFERENCES accounts (id), note text);"
                           "COMMENT ON TABLE accounts IS 'who has what';"
                           "CREATE INDEX accounts_owner ON accounts (owner);",
                           "explorer_db")
                    .ok());
    ASSERT_TRUE((*my)
                    ->Exec("ALTER TABLE numbers ADD COLUMN m int NOT NULL DEFAULT 0;"
                           "UPDATE numbers SET m = id % 7;"
                           "CREATE TABLE orders (id int PRIMARY KEY, account_id int NOT NULL, "
                           "note text, FOREIGN KEY fk_account (account_id) REFERENCES accounts "
                           "(id))",
                           "explorer_db")
                    .ok());
    // A table whose name and column are hostile, with a hostile value.
    auto qpg = [](const std::string& s) {
      std::string o = "\"";
      for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
      return o + "\"";
    };
    auto qmy = [](const std::string& s) {
      std::string o = "`";
      for (char c : s) o += c == '`' ? std::string("``") : std::string(1, c);
      return o + "`";
    };
    auto lit = [](const std::string& s, bool my) {
      std::string o = "'";
      for (char c : s) {
        if (c == '\'')
          o += "''";
        else if (my && c == '\\')
          o += "\\\\";
        else
          o += c;
      }
      return o + "'";
    };
    ASSERT_TRUE((*pg)
                    ->Exec("CREATE TABLE " + qpg(kHostileTable) + " (id int PRIMARY KEY, " +
                               qpg(kHostileColumn) + " text); INSERT INTO " + qpg(kHostileTable) +
                               " VALUES (1, " + lit(kHostile, false) + "), (2, 'plain')",
                           "explorer_db")
                    .ok());
    ASSERT_TRUE((*my)
                    ->Exec("CREATE TABLE " + qmy(kHostileTable) + " (id int PRIMARY KEY, " +
                               qmy(kHostileColumn) + " text); INSERT INTO " + qmy(kHostileTable) +
                               " VALUES (1, " + lit(kHostile, true) + "), (2, 'plain')",
                           "explorer_db")
                    .ok());
  }
  static void TearDownTestSuite() { ExplorerEnv::TearDown(); }
  ExplorerEnv& env() { return *ExplorerEnv::Get(); }
  std::string SchemaOf(const std::string& conn) {
    return conn == env().pg_id ? "public" : "explorer_db";
  }
  json Table(const std::string& conn, const std::string& table, json extra = json::object()) {
    extra["connectionId"] = conn;
    extra["schema"] = SchemaOf(conn);
    extra["table"] = table;
    return extra;
  }
};

TEST_F(Browse, KeysetPagingWithSortAndFilter) {
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    json req = Table(conn, "numbers",
                     {{"limit", 400},
                      {"sort", {{{"column", "m"}, {"desc", true}}}},
                      {"filters", {{{"column", "id"}, {"op", ">"}, {"value", 100}}}}});
    std::vector<std::pair<int64_t, int64_t>> seen;
    json after = nullptr;
    for (int page = 0; page < 20; ++page) {
      if (!after.is_null()) req["after"] = after;
      auto r = env().Post("/api/v1/explorer/table/rows", req);
      ASSERT_EQ(r.first, 200) << r.second.dump();
      EXPECT_EQ(r.second["paging"], "keyset");
      EXPECT_EQ(r.second["primaryKey"], json::array({"id"}));
      for (const auto& row : r.second["rows"]) seen.push_back({row[1], row[0]});
      after = r.second["nextCursor"];
      if (after.is_null()) break;
    }
    ASSERT_EQ(seen.size(), 2400u);
    for (size_t i = 1; i < seen.size(); ++i) {
      // m descending, then id ascending.
      EXPECT_TRUE(seen[i - 1].first > seen[i].first ||
                  (seen[i - 1].first == seen[i].first && seen[i - 1].second < seen[i].second))
          << i;
    }
  }
}

TEST_F(Browse, OffsetPagingOnANullableSort) {
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    auto r =
        env().Post("/api/v1/explorer/table/rows",
                   Table(conn, "accounts", {{"limit", 2}, {"sort", {{{"column", "balance"}}}}}));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    EXPECT_EQ(r.second["paging"], "offset");
    EXPECT_EQ(r.second["rows"].size(), 2u);
    EXPECT_EQ(r.second["nextOffset"], 2);
    r = env().Post("/api/v1/explorer/table/rows",
                   Table(conn, "accounts",
                         {{"limit", 2}, {"offset", 2}, {"sort", {{{"column", "balance"}}}}}));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    EXPECT_EQ(r.second["rows"].size(), 1u);
    EXPECT_TRUE(r.second["nextOffset"].is_null());
  }
}

TEST_F(Browse, FilterOperators) {
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    auto ids = [&](const json& filters) {
      auto r = env().Post("/api/v1/explorer/table/rows",
                          Table(conn, "accounts", {{"filters", filters}}));
      EXPECT_EQ(r.first, 200) << r.second.dump();
      std::vector<int64_t> out;
      for (const auto& row : r.second["rows"]) out.push_back(row[0]);
      return out;
    };
    EXPECT_EQ(ids({{{"column", "id"}, {"op", "in"}, {"value", {1, 3}}}}),
              (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(ids({{{"column", "balance"}, {"op", "is null"}}}), (std::vector<int64_t>{3}));
    EXPECT_EQ(ids({{{"column", "owner"}, {"op", "like"}, {"value", "G%"}}}),
              (std::vector<int64_t>{2}));
    EXPECT_EQ(ids({{{"column", "owner"}, {"op", "contains"}, {"value", "%"}}}),
              (std::vector<int64_t>{}))
        << "contains takes % literally";
    EXPECT_EQ(ids({{{"column", "owner"}, {"op", "contains"}, {"value", "inu"}}}),
              (std::vector<int64_t>{3}));
    EXPECT_EQ(ids({{{"column", "balance"}, {"op", ">="}, {"value", "150"}},
                   {{"column", "id"}, {"op", "<>"}, {"value", 9}}}),
              (std::vector<int64_t>{2}));
    auto bad = env().Post(
        "/api/v1/explorer/table/rows",
        Table(conn, "accounts", {{"filters", {{{"column", "id"}, {"op", "~~"}, {"value", 1}}}}}));
    EXPECT_EQ(bad.first, 400) << bad.second.dump();
  }
}

TEST_F(Browse, HostileInputIsOnlyEverData) {
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    // A hostile value finds exactly its row; it never reaches the SQL text.
    auto r = env().Post(
        "/api/v1/explorer/table/rows",
        Table(conn, kHostileTable,
              {{"filters", {{{"column", kHostileColumn}, {"op", "="}, {"value", kHostile}}}}}));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    ASSERT_EQ(r.second["rows"].size(), 1u) << r.second.dump();
    EXPECT_EQ(r.second["rows"][0][1], kHostile);
    EXPECT_EQ(r.second["statement"].get<std::string>().find("DROP TABLE accounts; -- `\""),
              std::string::npos)
        << "only the quoted table name may hold the text: " << r.second["statement"];
    // As a sort column, in contains and in; the keyset cursor of a hostile value.
    r = env().Post(
        "/api/v1/explorer/table/rows",
        Table(conn, kHostileTable,
              {{"limit", 1},
               {"filters",
                {{{"column", kHostileColumn}, {"op", "contains"}, {"value", "; --"}},
                 {{"column", kHostileColumn}, {"op", "in"}, {"value", {kHostile, "a'b"}}}}}}));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    EXPECT_EQ(r.second["rows"].size(), 1u);
    // Names are checked against the described table.
    r = env().Post(
        "/api/v1/explorer/table/rows",
        Table(conn, kHostileTable, {{"sort", {{{"column", "id; DROP TABLE accounts"}}}}}));
    EXPECT_EQ(r.first, 400) << r.second.dump();
    r = env().Post("/api/v1/explorer/table/rows",
                   Table(conn, "accounts`; DROP TABLE accounts; --"));
    EXPECT_EQ(r.first, 404) << r.second.dump();
    // Everything is still there.
    r = env().Post("/api/v1/explorer/table/count", Table(conn, "accounts"));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    EXPECT_EQ(r.second["rows"], 3);
    r = env().Post("/api/v1/explorer/table/count", Table(conn, kHostileTable));
    EXPECT_EQ(r.second["rows"], 2) << r.second.dump();
  }
}

TEST_F(Browse, CountsExactAndEstimated) {
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    auto r = env().Post(
        "/api/v1/explorer/table/count",
        Table(conn, "numbers", {{"filters", {{{"column", "m"}, {"op", "="}, {"value", 0}}}}}));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    EXPECT_EQ(r.second["rows"], 357);
    EXPECT_EQ(r.second["exact"], true);
    r = env().Post("/api/v1/explorer/table/count", Table(conn, "numbers", {{"exact", false}}));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    EXPECT_EQ(r.second["exact"], false);
    EXPECT_GT(r.second["rows"].get<int64_t>(), 0);
  }
}

TEST_F(Browse, DdlAsTheEnginePrintsIt) {
  auto r = env().Post("/api/v1/explorer/table/ddl", Table(env().pg_id, "orders"));
  ASSERT_EQ(r.first, 200) << r.second.dump();
  const std::string pg = r.second["ddl"];
  EXPECT_NE(pg.find("CREATE TABLE \"public\".\"orders\" ("), std::string::npos) << pg;
  EXPECT_NE(pg.find("\"account_id\" integer NOT NULL"), std::string::npos) << pg;
  EXPECT_NE(pg.find("PRIMARY KEY (id)"), std::string::npos) << pg;
  EXPECT_NE(pg.find("FOREIGN KEY (account_id) REFERENCES accounts(id)"), std::string::npos) << pg;
  r = env().Post("/api/v1/explorer/table/ddl", Table(env().pg_id, "accounts"));
  EXPECT_NE(
      r.second["ddl"].get<std::string>().find("CREATE INDEX accounts_owner ON public.accounts"),
      std::string::npos)
      << r.second.dump();
  EXPECT_NE(r.second["ddl"].get<std::string>().find(
                "COMMENT ON TABLE \"public\".\"accounts\" IS 'who has what'"),
            std::string::npos)
      << r.second.dump();
  r = env().Post("/api/v1/explorer/table/ddl", Table(env().my_id, "orders"));
  ASSERT_EQ(r.first, 200) << r.second.dump();
  const std::string my = r.second["ddl"];
  EXPECT_EQ(my.rfind("CREATE TABLE `orders` (", 0), 0u) << my;
  EXPECT_NE(
      my.find("CONSTRAINT `fk_account` FOREIGN KEY (`account_id`) REFERENCES `accounts` (`id`)"),
      std::string::npos)
      << my;
}

TEST_F(Browse, ColumnProfile) {
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    auto r =
        env().Post("/api/v1/explorer/table/profile", Table(conn, "accounts", {{"sampleRows", 0}}));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    EXPECT_EQ(r.second["rows"], 3);
    EXPECT_EQ(r.second["sampled"], false);
    const json& bal = r.second["columns"][2];
    EXPECT_EQ(bal["name"], "balance");
    EXPECT_EQ(bal["nulls"], 1);
    EXPECT_NEAR(bal["nullsPercent"].get<double>(), 33.33, 0.01);
    EXPECT_EQ(bal["min"], "100");
    EXPECT_EQ(bal["max"], "200");
    EXPECT_EQ(bal["approxDistinct"], 2);
    const json& owner = r.second["columns"][1];
    EXPECT_NEAR(owner["avgLength"].get<double>(), 13.0 / 3, 0.01)
        << owner.dump();  // Ada Grace Linus
    r = env().Post("/api/v1/explorer/table/profile", Table(conn, "numbers", {{"sampleRows", 100}}));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    EXPECT_EQ(r.second["rows"], 100);
    EXPECT_EQ(r.second["sampled"], true);
  }
}

TEST_F(Browse, ErDiagram) {
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    auto r =
        env().Post("/api/v1/explorer/er", {{"connectionId", conn}, {"schema", SchemaOf(conn)}});
    ASSERT_EQ(r.first, 200) << r.second.dump();
    const std::string s = SchemaOf(conn);
    json accounts, edge;
    for (const auto& n : r.second["nodes"]) {
      if (n["id"] == s + ".accounts") accounts = n;
    }
    for (const auto& e : r.second["edges"]) {
      if (e["from"] == s + ".orders") edge = e;
    }
    ASSERT_FALSE(accounts.is_null()) << r.second.dump();
    EXPECT_EQ(accounts["columns"][0], json({{"name", "id"},
                                            {"type", conn == env().pg_id ? "integer" : "int(11)"},
                                            {"nullable", false},
                                            {"primaryKey", true}}));
    ASSERT_FALSE(edge.is_null()) << r.second.dump();
    EXPECT_EQ(edge["to"], s + ".accounts");
    EXPECT_EQ(edge["fromColumns"], json::array({"account_id"}));
    EXPECT_EQ(edge["toColumns"], json::array({"id"}));
  }
}

TEST_F(Browse, FilesInTheConfiguredFolders) {
  const std::string root = env().file_root;
  auto r = env().Get("/api/v1/explorer/files/roots");
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["roots"], json::array({root}));
  r = env().Post("/api/v1/explorer/files/list", {{"root", root}});
  ASSERT_EQ(r.first, 200) << r.second.dump();
  ASSERT_EQ(r.second["entries"].size(), 2u) << r.second.dump();
  EXPECT_EQ(r.second["entries"][0]["name"], "data");
  EXPECT_EQ(r.second["entries"][0]["kind"], "folder");
  EXPECT_EQ(r.second["entries"][1]["path"], "top.csv");
  EXPECT_EQ(r.second["entries"][1]["size"], 4);
  r = env().Post("/api/v1/explorer/files/list", {{"root", root}, {"path", "data/../.."}});
  EXPECT_EQ(r.first, 400) << r.second.dump();
  r = env().Post("/api/v1/explorer/files/list", {{"root", "/etc"}});
  EXPECT_EQ(r.first, 400) << r.second.dump();
  // A file's schema and first rows.
  r = env().Post("/api/v1/explorer/files/sample",
                 {{"root", root}, {"path", "data/scores.csv"}, {"rows", 2}});
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["columns"],
            json::parse(R"j([{"name":"id","type":"BIGINT"},{"name":"score","type":"DOUBLE"}])j"));
  EXPECT_EQ(r.second["rows"], json::parse("[[1, 9.5], [2, 7.25]]"));
  r = env().Post("/api/v1/explorer/files/sample",
                 {{"root", root}, {"path", "data/events.jsonl"}, {"rows", 0}});
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["columns"].size(), 2u);
  EXPECT_EQ(r.second["rows"].size(), 0u);
  // A Parquet file (the console's download), then a SELECT joining a connection and files.
  {
    httplib::Client c("127.0.0.1", env().server->port());
    auto d = c.Post("/api/v1/explorer/console/download", {{"X-API-Key", env().key}},
                    json({{"connectionId", env().pg_id},
                          {"sql", "SELECT id, owner FROM accounts"},
                          {"format", "parquet"}})
                        .dump(),
                    "application/json");
    ASSERT_TRUE(d && d->status == 200);
    std::ofstream(root + "/data/owners.parquet", std::ios::binary) << d->body;
  }
  const std::string sql =
      "SELECT a.owner, s.score, e.kind, o.owner AS from_parquet FROM pg1.public.accounts a "
      "JOIN read_csv('" +
      root +
      "/data/scores.csv') s ON s.id = a.id "
      "LEFT JOIN read_json('" +
      root +
      "/data/*.jsonl') e ON e.id = a.id "
      "JOIN read_parquet('" +
      root + "/data/*.parquet') o ON o.id = a.id ORDER BY a.id";
  r = env().Post("/api/v1/explorer/files/query",
                 {{"sql", sql}, {"sources", {{{"alias", "pg1"}, {"connectionId", env().pg_id}}}}});
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["rows"], json::parse(R"j([["Ada", 9.5, "login", "Ada"],
      ["Grace", 7.25, null, "Grace"], ["Linus", 8.0, "logout", "Linus"]])j"));
  // Nothing outside the roots.
  r = env().Post("/api/v1/explorer/files/query",
                 {{"sql", "SELECT * FROM read_csv('/etc/passwd')"}});
  EXPECT_EQ(r.first, 400) << r.second.dump();
}

// The filters reach the servers as parameters: PostgreSQL's statement log (a server of its
// own, log_min_duration_statement = 0) shows $1 and the value apart; MariaDB's general log
// shows the prepared statement with ?.
TEST_F(Browse, FiltersArriveAsParametersInTheServersLogs) {
  testing::PostgresServerOptions o;
  o.settings = {{"log_min_duration_statement", "0"}};
  auto own = testing::PostgresServer::Start(o);
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  ASSERT_TRUE((*own)->Exec("CREATE TABLE logged (id int PRIMARY KEY, owner text)").ok());
  auto c = env().Post("/api/v1/connections", {{"name", "logged-pg"}, {"url", (*own)->url()}});
  ASSERT_EQ(c.first, 201) << c.second.dump();
  auto r =
      env().Post("/api/v1/explorer/table/rows",
                 {{"connectionId", c.second["id"]},
                  {"schema", "public"},
                  {"table", "logged"},
                  {"filters", {{{"column", "owner"}, {"op", "="}, {"value", "probe'); --"}}}}});
  ASSERT_EQ(r.first, 200) << r.second.dump();
  std::ifstream in((*own)->dir() + "/server.log");
  std::stringstream log;
  log << in.rdbuf();
  EXPECT_NE(
      log.str().find("SELECT \"id\", \"owner\" FROM \"public\".\"logged\" WHERE \"owner\" = $1"),
      std::string::npos)
      << log.str().substr(log.str().size() > 4000 ? log.str().size() - 4000 : 0);
  EXPECT_NE(log.str().find("parameters: $1 = 'probe''); --'"), std::string::npos);

  auto my = testing::SharedServers::MariaDb();
  ASSERT_TRUE((*my)
                  ->Exec("SET GLOBAL log_output = 'TABLE'; SET GLOBAL general_log = 1; "
                         "TRUNCATE TABLE mysql.general_log")
                  .ok());
  r = env().Post(
      "/api/v1/explorer/table/rows",
      Table(env().my_id, "accounts",
            {{"filters", {{{"column", "owner"}, {"op", "="}, {"value", "probe'); --"}}}}}));
  ASSERT_TRUE((*my)->Exec("SET GLOBAL general_log = 0").ok());
  ASSERT_EQ(r.first, 200) << r.second.dump();
  auto rows = (*my)->Query(
      "SELECT argument FROM mysql.general_log WHERE command_type = 'Prepare' AND argument LIKE "
      "'%`accounts`%'");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_NE((*rows)[0][0]->find("WHERE `owner` = ?"), std::string::npos) << *(*rows)[0][0];
}

}  // namespace
}  // namespace dbs

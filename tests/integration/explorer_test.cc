// The Data Explorer over real HTTP against the fixture's PostgreSQL and MariaDB: the SQL
// console (typed rows, row cap and cursor paging, read-only refusals, timeouts and real
// cancellation seen gone from pg_stat_activity / the processlist, plans, history), and the
// table browser and ER diagrams (explorer_browse_test.cc).
#include "explorer_fixture.h"

#include <duckdb.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

namespace dbs {
namespace {

using nlohmann::json;
using testing::ExplorerEnv;

class Console : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ExplorerEnv::SetUp(); }
  static void TearDownTestSuite() { ExplorerEnv::TearDown(); }
  ExplorerEnv& env() { return *ExplorerEnv::Get(); }
  json Run(const std::string& conn, const std::string& sql, json extra = json::object()) {
    extra["connectionId"] = conn;
    extra["sql"] = sql;
    return extra;
  }
};

TEST_F(Console, TypedColumnsAndRowsOnPostgres) {
  auto r = env().Post("/api/v1/explorer/console",
                      Run(env().pg_id,
                          "SELECT 1::int AS i, 9007199254740993::bigint AS big, 1.5::float8 AS f, "
                          "12.340::numeric(10,3) AS n, 'ü''x'::text AS t, true AS b, NULL::date "
                          "AS d, '\\x00ff'::bytea AS raw"));
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["columns"],
            json::parse(R"j([{"name":"i","type":"integer"},{"name":"big","type":"bigint"},)j"
                        R"j({"name":"f","type":"double precision"},)j"
                        R"j({"name":"n","type":"numeric(10,3)"},{"name":"t","type":"text"},)j"
                        R"j({"name":"b","type":"boolean"},{"name":"d","type":"date"},)j"
                        R"j({"name":"raw","type":"bytea"}])j"));
  EXPECT_EQ(
      r.second["rows"],
      json::parse(R"j([[1, 9007199254740993, 1.5, "12.340", "ü'x", true, null, "\\x00ff"]])j"));
  EXPECT_EQ(r.second["hasMore"], false);
  EXPECT_EQ(r.second["readOnly"], true);
  EXPECT_TRUE(r.second["elapsedMs"].is_number_integer());
}

TEST_F(Console, TypedColumnsAndRowsOnMariaDb) {
  auto r = env().Post("/api/v1/explorer/console",
                      Run(env().my_id,
                          "SELECT CAST(1 AS SIGNED) AS i, CAST(18446744073709551615 AS UNSIGNED) "
                          "AS u, CAST(12.340 AS DECIMAL(10,3)) AS n, 'ü''x' AS t, NULL AS z, "
                          "CAST(0x00ff AS BINARY) AS raw"));
  ASSERT_EQ(r.first, 200) << r.second.dump();
  std::vector<std::string> types;
  for (const auto& c : r.second["columns"]) types.push_back(c["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"INT", "BIGINT UNSIGNED", "DECIMAL(10,3)", "VARCHAR",
                                             "NULL", "VARBINARY"}))
      << r.second.dump();
  EXPECT_EQ(r.second["rows"],
            json::parse(R"j([[1, 18446744073709551615, "12.340", "ü'x", null, "\\x00ff"]])j"));
}

TEST_F(Console, RowCapAndCursorPaging) {
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    const bool pg = conn == env().pg_id;
    const std::string sql = pg ? "SELECT g FROM generate_series(1, 2500) g ORDER BY g"
                               : "SELECT id FROM explorer_db.numbers ORDER BY id";
    auto r = env().Post("/api/v1/explorer/console", Run(conn, sql));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    ASSERT_EQ(r.second["rows"].size(), 1000u) << "default row cap";
    EXPECT_EQ(r.second["hasMore"], true);
    const std::string id = r.second["queryId"];
    auto list = env().Get("/api/v1/explorer/queries");
    ASSERT_EQ(list.first, 200);
    bool open = false;
    for (const auto& q : list.second["items"])
      open = open || (q["queryId"] == id && q["state"] == "open");
    EXPECT_TRUE(open) << list.second.dump();
    int64_t expect = 1, seen = 0;
    json page = r.second;
    while (true) {
      for (const auto& row : page["rows"]) {
        EXPECT_EQ(row[0].get<int64_t>(), expect++);
        ++seen;
      }
      if (!page["hasMore"].get<bool>()) break;
      auto n = env().Post("/api/v1/explorer/queries/" + id + "/next", {{"maxRows", 700}});
      ASSERT_EQ(n.first, 200) << n.second.dump();
      page = n.second;
    }
    EXPECT_EQ(seen, 2500);
    // The cursor is gone once read to the end.
    auto again = env().Post("/api/v1/explorer/queries/" + id + "/next", json::object());
    EXPECT_EQ(again.first, 404) << again.second.dump();
    // A cursor can be closed early; another key cannot see it.
    r = env().Post("/api/v1/explorer/console", Run(conn, sql, {{"maxRows", 10}}));
    ASSERT_EQ(r.first, 200);
    const std::string id2 = r.second["queryId"];
    EXPECT_EQ(env().Delete("/api/v1/explorer/queries/" + id2, env().other_key).first, 404);
    EXPECT_EQ(env().Delete("/api/v1/explorer/queries/" + id2).first, 204);
    EXPECT_EQ(env().Post("/api/v1/explorer/queries/" + id2 + "/next", json::object()).first, 404);
  }
}

TEST_F(Console, ReadOnlyByDefaultEnforcedByTheServer) {
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    const bool pg = conn == env().pg_id;
    const std::string table = pg ? "public.accounts" : "explorer_db.accounts";
    auto r = env().Post("/api/v1/explorer/console",
                        Run(conn, "UPDATE " + table + " SET balance = 0 WHERE id = 1"));
    EXPECT_EQ(r.first, 403) << r.second.dump();
    EXPECT_EQ(r.second["error"]["code"], "permission_denied");
    // A second statement cannot leave the read-only transaction.
    r = env().Post("/api/v1/explorer/console",
                   Run(conn, "COMMIT; UPDATE " + table + " SET balance = 0 WHERE id = 1"));
    EXPECT_EQ(r.first, 400) << r.second.dump();
    // DDL, whose implicit commit would start a new transaction on MySQL, is refused too.
    r = env().Post("/api/v1/explorer/console", Run(conn, "CREATE TABLE " + table + "_x (i int)"));
    EXPECT_EQ(r.first, 403) << r.second.dump();
    r = env().Post("/api/v1/explorer/console", Run(conn, "DROP TABLE " + table));
    EXPECT_EQ(r.first, 403) << r.second.dump();
    if (pg) {
      r = env().Post("/api/v1/explorer/console", Run(conn, "SET TRANSACTION READ WRITE"));
      EXPECT_NE(r.first, 200) << r.second.dump();
    }
    r = env().Post("/api/v1/explorer/console",
                   Run(conn, "SELECT balance FROM " + table + " WHERE id = 1"));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    EXPECT_EQ(r.second["rows"], json::parse("[[100]]")) << "the data is untouched";
    // Writing needs readOnly false, per request.
    r = env().Post("/api/v1/explorer/console",
                   Run(conn, "UPDATE " + table + " SET balance = balance + 1 WHERE id = 2",
                       {{"readOnly", false}}));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    EXPECT_EQ(r.second["rowsAffected"], 1);
    EXPECT_EQ(r.second["readOnly"], false);
    r = env().Post("/api/v1/explorer/console",
                   Run(conn, "SELECT balance FROM " + table + " WHERE id = 2"));
    EXPECT_EQ(r.second["rows"], json::parse("[[201]]")) << r.second.dump();
    ASSERT_EQ(env()
                  .Post("/api/v1/explorer/console",
                        Run(conn, "UPDATE " + table + " SET balance = 200 WHERE id = 2",
                            {{"readOnly", false}}))
                  .first,
              200);
  }
}

// Polls `query` (a count of the server's sessions running the test's statement) until it is 0.
bool GoneWithin(const std::function<int64_t()>& query, int ms) {
  for (int waited = 0; waited <= ms; waited += 50) {
    if (query() == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

int64_t PgRunning(const std::string& marker) {
  auto pg = testing::SharedServers::Postgres();
  // A SELECT runs behind the console's cursor: the server shows the FETCH.
  auto rows = (*pg)->Query(
      "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND (query LIKE '%" + marker +
      "%' OR query LIKE 'FETCH FORWARD % FROM dbs_console_cursor') AND pid <> pg_backend_pid()");
  return rows.ok() ? std::stoll(*(*rows)[0][0]) : -1;
}
int64_t MyRunning(const std::string& marker) {
  auto my = testing::SharedServers::MariaDb();
  auto rows =
      (*my)->Query("SELECT count(*) FROM information_schema.processlist WHERE info LIKE '%" +
                   marker + "%' AND id <> connection_id()");
  return rows.ok() ? std::stoll(*(*rows)[0][0]) : -1;
}

std::string SleepSql(bool pg, const std::string& marker) {
  return pg ? "SELECT pg_sleep(30) AS " + marker
            : "SELECT SLEEP(30) AS " + marker + " FROM explorer_db.accounts";
}

TEST_F(Console, TimeoutCancelsOnTheServer) {
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    const bool pg = conn == env().pg_id;
    const std::string marker = pg ? "pg_timeout_marker" : "my_timeout_marker";
    auto r = env().Post("/api/v1/explorer/console",
                        Run(conn, SleepSql(pg, marker), {{"timeoutMs", 500}}));
    EXPECT_EQ(r.first, 503) << r.second.dump();
    EXPECT_EQ(r.second["error"]["code"], "timeout") << r.second.dump();
    EXPECT_TRUE(GoneWithin([&] { return pg ? PgRunning(marker) : MyRunning(marker); }, 5000));
  }
}

TEST_F(Console, DeleteCancelsTheRunningStatementOnTheServer) {
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    const bool pg = conn == env().pg_id;
    const std::string marker = pg ? "pg_cancel_marker" : "my_cancel_marker";
    const std::string id = pg ? "test-cancel-pg" : "test-cancel-my";
    std::pair<int, json> answer;
    std::thread t([&] {
      answer = env().Post("/api/v1/explorer/console",
                          Run(conn, SleepSql(pg, marker), {{"queryId", id}}));
    });
    // Wait until the server runs it, then cancel through the API.
    bool running = false;
    for (int i = 0; i < 200 && !running; ++i) {
      running = (pg ? PgRunning(marker) : MyRunning(marker)) > 0;
      if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_TRUE(running);
    auto list = env().Get("/api/v1/explorer/queries");
    bool listed = false;
    for (const auto& q : list.second["items"]) listed = listed || q["queryId"] == id;
    EXPECT_TRUE(listed) << list.second.dump();
    EXPECT_EQ(env().Delete("/api/v1/explorer/queries/" + id, env().other_key).first, 404);
    EXPECT_EQ(env().Delete("/api/v1/explorer/queries/" + id).first, 204);
    t.join();
    EXPECT_EQ(answer.first, 409) << answer.second.dump();
    EXPECT_EQ(answer.second["error"]["code"], "cancelled") << answer.second.dump();
    EXPECT_EQ(pg ? PgRunning(marker) : MyRunning(marker), 0);
  }
}

TEST_F(Console, ClosingTheRequestCancelsTheStatement) {
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    const bool pg = conn == env().pg_id;
    const std::string marker = pg ? "pg_close_marker" : "my_close_marker";
    httplib::Client c("127.0.0.1", env().server->port());
    c.set_read_timeout(1, 0);  // gives up after a second and closes the connection
    auto r = c.Post("/api/v1/explorer/console", {{"X-API-Key", env().key}},
                    Run(conn, SleepSql(pg, marker)).dump(), "application/json");
    EXPECT_FALSE(r) << "the client gave up";
    c.stop();
    EXPECT_TRUE(GoneWithin([&] { return pg ? PgRunning(marker) : MyRunning(marker); }, 5000))
        << "the statement still runs on the server";
  }
}

TEST_F(Console, ExplainAsTextAndJson) {
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    const bool pg = conn == env().pg_id;
    const std::string table = pg ? "public.accounts" : "explorer_db.accounts";
    auto r = env().Post("/api/v1/explorer/console/explain",
                        Run(conn, "SELECT * FROM " + table + " WHERE id = 1"));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    EXPECT_FALSE(r.second["text"].get<std::string>().empty());
    EXPECT_FALSE(r.second["json"].is_null()) << r.second.dump();
    // ANALYZE runs the statement: not in read-only mode.
    r = env().Post("/api/v1/explorer/console/explain",
                   Run(conn, "SELECT * FROM " + table, {{"analyze", true}}));
    EXPECT_EQ(r.first, 400) << r.second.dump();
    r = env().Post("/api/v1/explorer/console/explain",
                   Run(conn, "UPDATE " + table + " SET balance = 7 WHERE id = 1",
                       {{"analyze", true}, {"readOnly", false}}));
    ASSERT_EQ(r.first, 200) << r.second.dump();
    auto check = env().Post("/api/v1/explorer/console",
                            Run(conn, "SELECT balance FROM " + table + " WHERE id = 1"));
    EXPECT_EQ(check.second["rows"], json::parse("[[100]]")) << "ANALYZE was rolled back";
  }
}

TEST_F(Console, HistoryPerKeySearchable) {
  auto r = env().Post("/api/v1/explorer/console", Run(env().pg_id, "SELECT 'history_probe_1'"));
  ASSERT_EQ(r.first, 200);
  r = env().Post("/api/v1/explorer/console", Run(env().my_id, "SELECT nonsense_history_col"));
  EXPECT_EQ(r.first, 400) << r.second.dump();
  auto h = env().Get("/api/v1/explorer/history?search=HISTORY_PROBE");
  ASSERT_EQ(h.first, 200) << h.second.dump();
  ASSERT_EQ(h.second["total"], 1) << h.second.dump();
  EXPECT_EQ(h.second["items"][0]["connectionId"], env().pg_id);
  EXPECT_EQ(h.second["items"][0]["rows"], 1);
  EXPECT_TRUE(h.second["items"][0]["error"].is_null());
  h = env().Get("/api/v1/explorer/history?search=nonsense_history&connectionId=" + env().my_id);
  ASSERT_EQ(h.second["total"], 1) << h.second.dump();
  EXPECT_FALSE(h.second["items"][0]["error"].is_null());
  h = env().Get("/api/v1/explorer/history?search=history_probe", env().other_key);
  EXPECT_EQ(h.second["total"], 0) << "history is per key";
}

// The raw answer of a download.
std::pair<int, std::string> Download(ExplorerEnv& env, const json& body) {
  httplib::Client c("127.0.0.1", env.server->port());
  c.set_read_timeout(60, 0);
  auto r = c.Post("/api/v1/explorer/console/download", {{"X-API-Key", env.key}}, body.dump(),
                  "application/json");
  if (!r) return {-1, ""};
  return {r->status, r->body};
}

TEST_F(Console, DownloadsAsCsvJsonlAndParquet) {
  auto r = Download(env(), Run(env().pg_id,
                               "SELECT 1 AS id, 'a,b' AS t UNION ALL SELECT 2, 'q\"x\nz' UNION "
                               "ALL SELECT 3, NULL ORDER BY 1",
                               {{"format", "csv"}}));
  ASSERT_EQ(r.first, 200) << r.second;
  EXPECT_EQ(r.second, "id,t\r\n1,\"a,b\"\r\n2,\"q\"\"x\nz\"\r\n3,\r\n");
  for (const std::string& conn : {env().pg_id, env().my_id}) {
    const std::string sql = conn == env().pg_id
                                ? "SELECT g AS id FROM generate_series(1, 2500) g ORDER BY g"
                                : "SELECT id FROM explorer_db.numbers ORDER BY id";
    r = Download(env(), Run(conn, sql, {{"format", "jsonl"}}));
    ASSERT_EQ(r.first, 200) << r.second;
    std::istringstream lines(r.second);
    std::string line;
    int64_t n = 0;
    while (std::getline(lines, line)) {
      ASSERT_EQ(json::parse(line), json({{"id", ++n}}));
    }
    EXPECT_EQ(n, 2500);
    r = Download(env(), Run(conn, sql, {{"format", "parquet"}}));
    ASSERT_EQ(r.first, 200) << r.second.substr(0, 500);
    const std::string file = env().dir + "/download.parquet";
    std::ofstream(file, std::ios::binary) << r.second;
    duckdb_database db;
    duckdb_connection con;
    ASSERT_EQ(duckdb_open(nullptr, &db), DuckDBSuccess);
    ASSERT_EQ(duckdb_connect(db, &con), DuckDBSuccess);
    duckdb_result res;
    ASSERT_EQ(
        duckdb_query(con, ("SELECT count(*), sum(id) FROM read_parquet('" + file + "')").c_str(),
                     &res),
        DuckDBSuccess)
        << duckdb_result_error(&res);
    EXPECT_EQ(duckdb_value_int64(&res, 0, 0), 2500);
    EXPECT_EQ(duckdb_value_int64(&res, 1, 0), 3126250);
    duckdb_destroy_result(&res);
    duckdb_disconnect(&con);
    duckdb_close(&db);
  }
  // A statement error is an error status, not a broken download.
  r = Download(env(), Run(env().pg_id, "SELECT * FROM nope_table", {{"format", "csv"}}));
  EXPECT_EQ(r.first, 404) << r.second;
  r = Download(env(), Run(env().pg_id, "SELECT 1", {{"format", "xlsx"}}));
  EXPECT_EQ(r.first, 400) << r.second;
}

TEST_F(Console, BadRequests) {
  auto r = env().Post("/api/v1/explorer/console", {{"connectionId", env().pg_id}});
  EXPECT_EQ(r.first, 400);
  r = env().Post("/api/v1/explorer/console", Run("c_missing", "SELECT 1"));
  EXPECT_EQ(r.first, 404);
  r = env().Post("/api/v1/explorer/console", Run(env().pg_id, "SELECT 1", {{"colour", 1}}));
  EXPECT_EQ(r.first, 400);
  r = env().Post("/api/v1/explorer/console", Run(env().pg_id, "SELECT 1", {{"maxRows", 0}}));
  EXPECT_EQ(r.first, 400);
  r = env().Post("/api/v1/explorer/console", Run(env().pg_id, "SELECT * FROM nope_table"));
  EXPECT_EQ(r.first, 404) << r.second.dump();
}

}  // namespace
}  // namespace dbs

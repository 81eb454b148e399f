// The federated SQL routes over real HTTP: saved PostgreSQL and MariaDB connections joined by
// POST /api/v1/explorer/federated, the explain route, request validation and read-only refusal.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/api_server.h"
#include "bus/jetstream.h"
#include "store/config_store.h"
#include "store/secrets_store.h"
#include "support/servers.h"

namespace dbs {
namespace {

using nlohmann::json;
using testing::SharedServers;

struct Env {
  std::string dir;
  std::unique_ptr<bus::NatsConnection> nats;
  std::unique_ptr<store::ConfigStore> config;
  std::unique_ptr<store::SecretsStore> secrets;
  std::unique_ptr<api::ApiServer> server;
  std::string key;
  std::string pg_id, my_id;
};
Env* env = nullptr;

class FederatedApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    env = new Env();
    auto nats = SharedServers::Nats();
    ASSERT_TRUE(nats.ok()) << nats.status().ToString();
    auto pg = SharedServers::Postgres();
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    auto my = SharedServers::MariaDb();
    ASSERT_TRUE(my.ok()) << my.status().ToString();
    env->dir = "/tmp/dbstreams-test/federated-api-" + std::to_string(getpid());
    std::filesystem::create_directories(env->dir);
    bus::NatsOptions no;
    no.url = (*nats)->url();
    no.name = "federated-api-test";
    auto c = bus::NatsConnection::Connect(no);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    env->nats = std::move(c).value();
    auto cs = store::ConfigStore::Open("sqlite", env->dir);
    ASSERT_TRUE(cs.ok()) << cs.status().ToString();
    env->config = std::move(cs).value();
    auto ss = store::SecretsStore::Open("file", env->dir, "");
    ASSERT_TRUE(ss.ok()) << ss.status().ToString();
    env->secrets = std::move(ss).value();
    auto key = api::CreateApiKey(env->config.get(), "test");
    ASSERT_TRUE(key.ok());
    env->key = *key;
    api::ApiServerOptions ao;
    ao.port = 0;
    auto s = api::ApiServer::Start(ao, env->nats.get(), env->config.get(), env->secrets.get());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    env->server = std::move(s).value();

    ASSERT_TRUE((*pg)->Exec("DROP DATABASE IF EXISTS fedapi").ok());
    ASSERT_TRUE((*pg)->CreateDatabase("fedapi").ok());
    ASSERT_TRUE((*pg)
                    ->Exec("CREATE TABLE customers (id int PRIMARY KEY, name text);"
                           "INSERT INTO customers VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Linus')",
                           "fedapi")
                    .ok());
    ASSERT_TRUE(
        (*my)->Exec("DROP DATABASE IF EXISTS fedapi_shop; CREATE DATABASE fedapi_shop").ok());
    ASSERT_TRUE((*my)
                    ->Exec("CREATE TABLE orders (id int PRIMARY KEY, customer_id int, "
                           "total decimal(8,2));"
                           "INSERT INTO orders VALUES (10, 1, 5.25), (11, 1, 4.75), (12, 3, 1.00)",
                           "fedapi_shop")
                    .ok());
    auto r = Post("/api/v1/connections", {{"name", "pg"}, {"url", (*pg)->UrlFor("fedapi")}});
    ASSERT_EQ(r.first, 201) << r.second.dump();
    env->pg_id = r.second["id"];
    r = Post("/api/v1/connections", {{"name", "my"}, {"url", (*my)->url() + "fedapi_shop"}});
    ASSERT_EQ(r.first, 201) << r.second.dump();
    env->my_id = r.second["id"];
  }
  static void TearDownTestSuite() {
    if (env == nullptr) return;
    if (env->server) env->server->Stop();
    std::error_code ec;
    std::filesystem::remove_all(env->dir, ec);
    delete env;
    env = nullptr;
  }

  static std::pair<int, json> Post(const std::string& path, const json& body) {
    httplib::Client c("127.0.0.1", env->server->port());
    c.set_read_timeout(60, 0);
    auto r = c.Post(path.c_str(), {{"X-API-Key", env->key}}, body.dump(), "application/json");
    if (!r) return {-1, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  static std::pair<int, json> Send(const std::string& method, const std::string& path) {
    httplib::Client c("127.0.0.1", env->server->port());
    c.set_read_timeout(60, 0);
    auto r = method == "GET" ? c.Get(path.c_str(), {{"X-API-Key", env->key}})
                             : c.Delete(path.c_str(), {{"X-API-Key", env->key}});
    if (!r) return {-1, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  static json Body(const std::string& sql) {
    return {{"sources",
             {{{"alias", "pg1"}, {"connectionId", env->pg_id}},
              {{"alias", "my1"}, {"connectionId", env->my_id}}}},
            {"sql", sql}};
  }
};

constexpr const char kJoin[] =
    "SELECT c.name, count(o.id) AS orders, sum(o.total) AS total FROM pg1.public.customers c "
    "LEFT JOIN my1.fedapi_shop.orders o ON o.customer_id = c.id GROUP BY c.name ORDER BY c.name";

TEST_F(FederatedApi, JoinsTwoSavedConnections) {
  auto r = Post("/api/v1/explorer/federated", Body(kJoin));
  ASSERT_EQ(r.first, 200) << r.second.dump();
  const json columns =
      json::parse(R"j([{"name":"name","type":"VARCHAR"},{"name":"orders","type":"BIGINT"},)j"
                  R"j({"name":"total","type":"DECIMAL(38,2)"}])j");
  EXPECT_EQ(r.second["columns"], columns);
  EXPECT_EQ(r.second["rows"],
            json::parse(R"([["Ada",2,"10.00"],["Grace",0,null],["Linus",1,"1.00"]])"));
  EXPECT_EQ(r.second["truncated"], false);
  EXPECT_TRUE(r.second["elapsedMs"].is_number_integer());

  json capped = Body(kJoin);
  capped["maxRows"] = 1;
  r = Post("/api/v1/explorer/federated", capped);
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["rows"].size(), 1u);
  EXPECT_EQ(r.second["truncated"], true);
}

// "Save as stream": the SELECT becomes a load stream whose source is federated; the statement
// is checked first (columns come back), bad bodies are 400, and the connections it names
// cannot be deleted while the stream exists.
TEST_F(FederatedApi, SavesASelectAsAStream) {
  json body = Body(kJoin);
  body["name"] = "fed-saved";
  body["target"] = env->pg_id;
  body["table"] = "customer_totals";
  auto r = Post("/api/v1/explorer/federated/stream", body);
  ASSERT_EQ(r.first, 201) << r.second.dump();
  EXPECT_EQ(r.second["name"], "fed-saved");
  const json& cfg = r.second["config"];
  EXPECT_EQ(cfg["source"]["federated"][0], json({{"alias", "pg1"}, {"connection", env->pg_id}}));
  EXPECT_EQ(cfg["source"]["federated"][1], json({{"alias", "my1"}, {"connection", env->my_id}}));
  EXPECT_EQ(cfg["target"], json({{"connection", env->pg_id}}));
  EXPECT_EQ(cfg["tables"][0]["name"], "customer_totals");
  EXPECT_EQ(cfg["tables"][0]["query"], kJoin);
  ASSERT_EQ(r.second["columns"].size(), 3u);
  EXPECT_EQ(r.second["columns"][0], json({{"name", "name"}, {"type", "text"}}));
  EXPECT_EQ(r.second["columns"][1]["name"], "orders");
  // The stored stream, through the streams API.
  auto got = Post("/api/v1/explorer/federated/stream", body);
  EXPECT_EQ(got.first, 409) << got.second.dump();  // the name is taken
  json bad = body;
  bad["name"] = "fed-bad";
  bad["sql"] = "UPDATE pg1.public.customers SET name = 'x'";
  EXPECT_EQ(Post("/api/v1/explorer/federated/stream", bad).first, 400);
  bad = body;
  bad["name"] = "fed-bad";
  bad.erase("target");
  EXPECT_EQ(Post("/api/v1/explorer/federated/stream", bad).first, 400);
  bad = body;
  bad["name"] = "fed-bad";
  bad["colour"] = "red";
  EXPECT_EQ(Post("/api/v1/explorer/federated/stream", bad).first, 400);
  // The MariaDB connection is used by the stream's federated source.
  httplib::Client c("127.0.0.1", env->server->port());
  auto del = c.Delete(("/api/v1/connections/" + env->my_id).c_str(), {{"X-API-Key", env->key}});
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 409) << del->body;
  auto del_stream = c.Delete(("/api/v1/streams/" + r.second["id"].get<std::string>()).c_str(),
                             {{"X-API-Key", env->key}});
  ASSERT_TRUE(del_stream);
  EXPECT_EQ(del_stream->status, 204) << del_stream->body;
}

TEST_F(FederatedApi, ExplainNamesEachSourcesStatement) {
  auto r = Post("/api/v1/explorer/federated/explain",
                Body("SELECT c.name FROM pg1.public.customers c JOIN my1.fedapi_shop.orders o "
                     "ON o.customer_id = c.id WHERE o.total > 2 AND c.id IN (1, 2)"));
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_FALSE(r.second["text"].get<std::string>().empty());
  std::set<std::string> statements;
  for (const auto& s : r.second["sources"]) {
    statements.insert(s["alias"].get<std::string>() + ": " + s["statement"].get<std::string>());
  }
  EXPECT_EQ(
      statements,
      (std::set<std::string>{
          "pg1: SELECT \"id\", \"name\" FROM \"public\".\"customers\" WHERE (\"id\" IN (1, 2))",
          "my1: SELECT `customer_id`, `total` FROM `fedapi_shop`.`orders` WHERE (`total` > 2)"}))
      << r.second.dump();
}

TEST_F(FederatedApi, RefusesWritesAndBadRequests) {
  auto r = Post("/api/v1/explorer/federated", Body("DELETE FROM pg1.public.customers"));
  EXPECT_EQ(r.first, 400) << r.second.dump();
  json bad = Body("SELECT 1");
  bad["sources"][0]["alias"] = "1pg";
  r = Post("/api/v1/explorer/federated", bad);
  EXPECT_EQ(r.first, 400);
  EXPECT_NE(r.second["error"]["message"].get<std::string>().find("sources[0].alias"),
            std::string::npos)
      << r.second.dump();
  json unknown = Body("SELECT 1");
  unknown["colour"] = "red";
  r = Post("/api/v1/explorer/federated", unknown);
  EXPECT_EQ(r.first, 400);
  json missing = Body("SELECT 1");
  missing["sources"][1]["connectionId"] = "c_missing";
  r = Post("/api/v1/explorer/federated", missing);
  EXPECT_EQ(r.first, 400) << r.second.dump();
  r = Post("/api/v1/explorer/federated", Body("SELECT * FROM pg1.public.nope"));
  EXPECT_EQ(r.first, 404) << r.second.dump();
  // The data is untouched.
  auto still = Post("/api/v1/explorer/federated", Body("SELECT count(*) FROM pg1.customers"));
  ASSERT_EQ(still.first, 200);
  EXPECT_EQ(still.second["rows"], json::parse("[[3]]"));
}

// The console over federated sources (explorer/federated_session.h): the console's query ids,
// pages through /queries/{id}/next, EXPLAIN with each source's statement, history, cancel and
// timeout by interrupting DuckDB, and the refusals.
TEST_F(FederatedApi, ConsolePagesAFederatedStatement) {
  json body = Body(kJoin);
  body["maxRows"] = 1;
  body["queryId"] = "fed-pages";
  auto r = Post("/api/v1/explorer/console", body);
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["queryId"], "fed-pages");
  EXPECT_EQ(r.second["readOnly"], true);
  EXPECT_EQ(r.second["columns"][2], json::parse(R"j({"name":"total","type":"DECIMAL(38,2)"})j"));
  EXPECT_EQ(r.second["rows"], json::parse(R"([["Ada",2,"10.00"]])"));
  EXPECT_EQ(r.second["hasMore"], true);
  r = Post("/api/v1/explorer/queries/fed-pages/next", {{"maxRows", 1}});
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["rows"], json::parse(R"([["Grace",0,null]])"));
  EXPECT_EQ(r.second["hasMore"], true);
  r = Post("/api/v1/explorer/queries/fed-pages/next", {{"maxRows", 10}});
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["rows"], json::parse(R"([["Linus",1,"1.00"]])"));
  EXPECT_EQ(r.second["hasMore"], false);
  EXPECT_EQ(Post("/api/v1/explorer/queries/fed-pages/next", json::object()).first, 404);

  // A page that ends exactly at the last row says there is no more.
  body = Body(kJoin);
  body["maxRows"] = 3;
  r = Post("/api/v1/explorer/console", body);
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["rows"].size(), 3u);
  EXPECT_EQ(r.second["hasMore"], false);

  // The history names the statement and its connections.
  auto h = Send("GET", "/api/v1/explorer/history?connectionId=" + env->pg_id + "," + env->my_id);
  ASSERT_EQ(h.first, 200) << h.second.dump();
  ASSERT_FALSE(h.second["items"].empty()) << h.second.dump();
  EXPECT_EQ(h.second["items"][0]["statement"], kJoin);

  r = Post("/api/v1/explorer/console/explain", Body("SELECT name FROM pg1.public.customers"));
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_FALSE(r.second["text"].get<std::string>().empty());
  ASSERT_EQ(r.second["json"]["sources"].size(), 1u) << r.second.dump();
  EXPECT_EQ(r.second["json"]["sources"][0]["alias"], "pg1");
  EXPECT_NE(r.second["json"]["sources"][0]["statement"].get<std::string>().find("customers"),
            std::string::npos);
}

TEST_F(FederatedApi, ConsoleCancelsAndTimesOutAFederatedStatement) {
  // Long enough to still run when cancelled (a cross join DuckDB cannot shortcut).
  const std::string slow =
      "SELECT count(*) FROM pg1.public.customers c, range(40000000000) r WHERE r.range % 7 = c.id";
  json body = Body(slow);
  body["queryId"] = "fed-cancel";
  std::pair<int, json> answer;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread t([&] { answer = Post("/api/v1/explorer/console", body); });
  bool listed = false;
  for (int i = 0; i < 200 && !listed; ++i) {
    auto list = Send("GET", "/api/v1/explorer/queries");
    for (const auto& q : list.second["items"]) listed = listed || q["queryId"] == "fed-cancel";
    if (!listed) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(listed);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(Send("DELETE", "/api/v1/explorer/queries/fed-cancel").first, 204);
  t.join();
  EXPECT_EQ(answer.first, 409) << answer.second.dump();
  EXPECT_EQ(answer.second["error"]["code"], "cancelled") << answer.second.dump();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  auto list = Send("GET", "/api/v1/explorer/queries");
  for (const auto& q : list.second["items"]) EXPECT_NE(q["queryId"], "fed-cancel");

  body = Body(slow);
  body["timeoutMs"] = 1000;
  auto r = Post("/api/v1/explorer/console", body);
  EXPECT_EQ(r.first, 503) << r.second.dump();
  EXPECT_EQ(r.second["error"]["code"], "timeout") << r.second.dump();
}

TEST_F(FederatedApi, ConsoleRefusesWhatAFederatedStatementCannotBe) {
  json body = Body("SELECT 1");
  body["readOnly"] = false;
  EXPECT_EQ(Post("/api/v1/explorer/console", body).first, 400);
  body = Body("SELECT 1");
  body["connectionId"] = env->pg_id;
  EXPECT_EQ(Post("/api/v1/explorer/console", body).first, 400);
  body = Body("SELECT 1");
  body["analyze"] = true;
  EXPECT_EQ(Post("/api/v1/explorer/console/explain", body).first, 400);
  auto r = Post("/api/v1/explorer/console", Body("DELETE FROM pg1.public.customers"));
  EXPECT_EQ(r.first, 400) << r.second.dump();
  r = Post("/api/v1/explorer/console", Body("SELECT count(*) FROM pg1.public.customers"));
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["rows"], json::parse("[[3]]"));
}

TEST_F(FederatedApi, AliasesDefaultByKind) {
  json body = {{"sources",
                {{{"connectionId", env->pg_id}},
                 {{"connectionId", env->my_id}},
                 {{"alias", "pg1"}, {"connectionId", env->my_id}}}},
               {"sql",
                "SELECT (SELECT count(*) FROM pg2.customers) + (SELECT count(*) FROM "
                "my1.orders) + (SELECT count(*) FROM pg1.orders) AS n"}};
  auto r = Post("/api/v1/explorer/federated", body);
  ASSERT_EQ(r.first, 200) << r.second.dump();
  EXPECT_EQ(r.second["aliases"], json::array({"pg2", "my1", "pg1"})) << "pg1 was taken";
  EXPECT_EQ(r.second["rows"], json::parse("[[9]]"));
}

TEST_F(FederatedApi, RoutesAreInTheOpenApiDocument) {
  std::set<std::string> routes;
  for (const auto& r : api::ApiServer::Routes()) routes.insert(r.method + " " + r.path);
  EXPECT_TRUE(routes.count("POST /api/v1/explorer/federated"));
  EXPECT_TRUE(routes.count("POST /api/v1/explorer/federated/explain"));
  json doc = json::parse(api::ApiServer::OpenApiDocument());
  EXPECT_TRUE(doc["paths"].contains("/api/v1/explorer/federated"));
  EXPECT_TRUE(doc["paths"].contains("/api/v1/explorer/federated/explain"));
}

}  // namespace
}  // namespace dbs

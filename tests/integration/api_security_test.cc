// API hardening over real HTTP on loopback (issue 16, API part): body handling (empty bodies,
// any Content-Type), field limits and paging, the failed-authentication backoff and its log,
// the metrics scrape token, API keys over REST (expiry, revocation) and the DBConvert Streams
// compatibility aliases. Real NATS and PostgreSQL from the fixture, the SQLite store and the
// secrets file; no service agents (runs are not started here: api_test covers them).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/api_server.h"
#include "bus/jetstream.h"
#include "core/logging.h"
#include "store/config_store.h"
#include "store/secrets_store.h"
#include "support/servers.h"

namespace dbs {
namespace {

using nlohmann::json;
using testing::SharedServers;
using Clock = std::chrono::steady_clock;

const char kMetricsToken[] = "scrape-token-0123456789abcdef";

// Keeps the records of one component ("api") for the log assertions.
class CaptureSink : public LogSink {
 public:
  void Write(const LogRecord& r) override {
    if (r.component != "api") return;
    std::lock_guard<std::mutex> l(mu_);
    records_.push_back(r);
  }
  std::vector<LogRecord> Take() {
    std::lock_guard<std::mutex> l(mu_);
    return std::move(records_);
  }

 private:
  std::mutex mu_;
  std::vector<LogRecord> records_;
};

struct Env {
  std::string dir;
  std::unique_ptr<bus::NatsConnection> nats;
  std::unique_ptr<store::ConfigStore> config;
  std::unique_ptr<store::SecretsStore> secrets;
  std::unique_ptr<api::ApiServer> server;
  testing::PostgresServer* pg = nullptr;
  CaptureSink* sink = nullptr;
  std::string key;
};
Env* env = nullptr;

struct Reply {
  int status = -1;
  json body;
  std::string raw;
  httplib::Headers headers;
};

class ApiSecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    env = new Env();
    auto nats = SharedServers::Nats();
    ASSERT_TRUE(nats.ok()) << nats.status().ToString();
    auto pg = SharedServers::Postgres();
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    env->pg = *pg;
    env->dir = "/tmp/dbstreams-test/api-security-" + std::to_string(getpid());
    std::filesystem::create_directories(env->dir);
    bus::NatsOptions o;
    o.url = (*nats)->url();
    o.name = "api-security";
    auto c = bus::NatsConnection::Connect(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    env->nats = std::move(c).value();
    auto cs = store::ConfigStore::Open("sqlite", env->dir);
    ASSERT_TRUE(cs.ok()) << cs.status().ToString();
    env->config = std::move(cs).value();
    auto ss = store::SecretsStore::Open("file", env->dir, "");
    ASSERT_TRUE(ss.ok()) << ss.status().ToString();
    env->secrets = std::move(ss).value();
    auto key = api::CreateApiKey(env->config.get(), "security-test");
    ASSERT_TRUE(key.ok());
    env->key = *key;
    env->sink =
        static_cast<CaptureSink*>(Logger::Global().AddSink(std::make_unique<CaptureSink>()));
    api::ApiServerOptions ao;
    ao.port = 0;
    ao.metrics_token = kMetricsToken;
    ao.metrics_listen = "127.0.0.1:0";
    ao.auth_backoff.max_failures = 5;
    ao.auth_backoff.first_block = std::chrono::milliseconds(1000);
    ao.auth_backoff.max_block = std::chrono::milliseconds(4000);
    auto s = api::ApiServer::Start(ao, env->nats.get(), env->config.get(), env->secrets.get());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    env->server = std::move(s).value();
  }
  static void TearDownTestSuite() {
    if (env == nullptr) return;
    if (env->server) env->server->Stop();
    if (env->sink) Logger::Global().RemoveSink(env->sink);
    std::error_code ec;
    std::filesystem::remove_all(env->dir, ec);
    delete env;
    env = nullptr;
  }

  static httplib::Client Client() {
    httplib::Client c("127.0.0.1", env->server->port());
    c.set_read_timeout(30, 0);
    return c;
  }
  static Reply From(const httplib::Result& r) {
    Reply out;
    if (!r) return out;
    out.status = r->status;
    out.raw = r->body;
    out.headers = r->headers;
    out.body = r->body.empty() ? json() : json::parse(r->body, nullptr, false);
    return out;
  }
  static httplib::Headers Auth(const std::string& key = "") {
    return {{"X-API-Key", key.empty() ? env->key : key}};
  }
  static Reply Get(const std::string& path, const std::string& key = "") {
    auto c = Client();
    return From(c.Get(path.c_str(), Auth(key)));
  }
  static Reply Post(const std::string& path, const json& body, const std::string& key = "") {
    auto c = Client();
    return From(c.Post(path.c_str(), Auth(key), body.dump(), "application/json"));
  }
  static Reply Put(const std::string& path, const json& body) {
    auto c = Client();
    return From(c.Put(path.c_str(), Auth(), body.dump(), "application/json"));
  }
  static Reply Delete(const std::string& path, const std::string& key = "") {
    auto c = Client();
    return From(c.Delete(path.c_str(), Auth(key)));
  }
  // Sends `request` as is on a new connection; returns the status of the answer (-1 without
  // one) and how long it took.
  static std::pair<int, double> Raw(const std::string& request) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(env->server->port()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{15, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    auto start = Clock::now();
    int status = -1;
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      std::string head(buf, n > 0 ? static_cast<size_t>(n) : 0);
      if (head.rfind("HTTP/1.1 ", 0) == 0) status = std::atoi(head.c_str() + 9);
    }
    close(fd);
    return {status, std::chrono::duration<double>(Clock::now() - start).count()};
  }
  // A saved connection to the fixture's PostgreSQL.
  static std::string PgConnection(const std::string& name) {
    auto r = Post("/api/v1/connections", {{"name", name},
                                          {"engine", "postgres"},
                                          {"host", "127.0.0.1"},
                                          {"port", env->pg->port()},
                                          {"user", env->pg->user()},
                                          {"password", env->pg->password()},
                                          {"database", "postgres"}});
    EXPECT_EQ(r.status, 201) << r.raw;
    return r.body.value("id", "");
  }
};

// A POST without a body (no Content-Length, as `curl -X POST` sends it) to an action route is
// answered at once with the route's result; it used to wait for the 10 s read timeout, then 400.
TEST_F(ApiSecurityTest, EmptyBodyActionRoutesAnswerAtOnce) {
  const std::string id = PgConnection("empty-body-pg");
  ASSERT_FALSE(id.empty());
  auto [status, secs] = Raw("POST /api/v1/connections/" + id +
                            "/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: " + env->key +
                            "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status, 200);
  EXPECT_LT(secs, 3.0);
  // Empty bodies on the other action routes: the route's own answer (404: no such run), fast.
  for (const char* action : {"pause", "resume", "stop"}) {
    std::tie(status, secs) = Raw(std::string("POST /api/v1/runs/r_missing/") + action +
                                 " HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: " + env->key +
                                 "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status, 404) << action;
    EXPECT_LT(secs, 3.0) << action;
  }
  // Content-Length: 0 and a body of blanks mean {} too.
  std::tie(status, secs) = Raw("POST /api/v1/connections/" + id +
                               "/clone HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: " + env->key +
                               "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status, 201);
  EXPECT_LT(secs, 3.0);
  auto c = Client();
  auto blank = From(
      c.Post(("/api/v1/connections/" + id + "/ping").c_str(), Auth(), "  \n", "application/json"));
  EXPECT_EQ(blank.status, 200) << blank.raw;
  EXPECT_EQ(blank.body["ok"], true) << blank.raw;
  // An unknown POST route is 404 at once as well.
  std::tie(status, secs) =
      Raw("POST /api/v1/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: " + env->key +
          "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status, 404);
  EXPECT_LT(secs, 3.0);
}

// curl -d sends application/x-www-form-urlencoded: the body is still JSON, and the 1 MiB limit
// holds (httplib's own limit for such bodies is 8 KiB).
TEST_F(ApiSecurityTest, FormEncodedJsonBodyUpToTheLimit) {
  json params = json::object();
  for (int i = 0; i < 20; ++i) params["p" + std::to_string(i)] = std::string(1000, 'a' + i);
  json body = {
      {"name", "form-encoded"}, {"engine", "postgres"}, {"host", "db.example"}, {"params", params}};
  ASSERT_GT(body.dump().size(), 20000u);
  auto c = Client();
  auto r =
      From(c.Post("/api/v1/connections", Auth(), body.dump(), "application/x-www-form-urlencoded"));
  EXPECT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.body["params"]["p19"], std::string(1000, 'a' + 19));
  // No Content-Type at all: JSON too.
  body["name"] = "no-content-type";
  r = From(c.Post("/api/v1/connections", Auth(), body.dump(), ""));
  EXPECT_EQ(r.status, 201) << r.raw;
  // Over 1 MiB is still 413, whatever the type.
  std::string big = "{\"name\": \"" + std::string(1100000, 'a') + "\"}";
  r = From(c.Post("/api/v1/connections", Auth(), big, "application/x-www-form-urlencoded"));
  EXPECT_EQ(r.status, 413) << r.raw;
  EXPECT_EQ(r.body["error"]["code"], "payload_too_large");
}

TEST_F(ApiSecurityTest, FieldLimitsNameTheField) {
  json base = {{"name", "limits"}, {"engine", "postgres"}, {"host", "db.example"}};
  auto field_of = [](const Reply& r) {
    return r.body["error"]["fields"][0].value("field", std::string());
  };
  struct Case {
    std::string field;
    json value;
    std::string reported;
  };
  json many = json::object();
  for (int i = 0; i < 33; ++i) many["k" + std::to_string(i)] = "v";
  const std::vector<Case> cases = {
      {"name", std::string(129, 'n'), "name"},
      {"host", std::string(254, 'h'), "host"},
      {"user", std::string(129, 'u'), "user"},
      {"database", std::string(129, 'd'), "database"},
      {"password", std::string(1025, 'p'), "password"},
      {"params", many, "params"},
      {"params", {{"big", std::string(1025, 'v')}}, "params.big"},
      {"params", {{std::string(65, 'k'), "v"}}, "params"},
      {"ssl", {{"ca", std::string(16385, 'c')}}, "ssl.ca"},
  };
  for (const Case& k : cases) {
    json b = base;
    b[k.field] = k.value;
    auto r = Post("/api/v1/connections", b);
    EXPECT_EQ(r.status, 400) << k.field << ": " << r.raw.substr(0, 300);
    EXPECT_EQ(field_of(r), k.reported) << r.raw.substr(0, 300);
  }
  // At the limits: accepted.
  json ok = base;
  ok["name"] = std::string(128, 'n');
  ok["host"] = std::string(253, 'h');
  EXPECT_EQ(Post("/api/v1/connections", ok).status, 201);
  // Unknown huge field names are not echoed whole.
  json odd = base;
  odd[std::string(5000, 'z')] = 1;
  auto r = Post("/api/v1/connections", odd);
  EXPECT_EQ(r.status, 400);
  EXPECT_LT(r.raw.size(), 1000u);
  // Streams: the name, a string inside the config, the clone name.
  const std::string src = PgConnection("limits-src");
  json s = {{"name", std::string(129, 's')},
            {"source", {{"connection", src}}},
            {"target", {{"connection", src}}}};
  r = Post("/api/v1/streams", s);
  EXPECT_EQ(r.status, 400) << r.raw.substr(0, 300);
  EXPECT_EQ(field_of(r), "name");
  s["name"] = "limits-stream";
  s["tables"] = {"ok", std::string(16385, 't')};
  r = Post("/api/v1/streams", s);
  EXPECT_EQ(r.status, 400) << r.raw.substr(0, 300);
  EXPECT_EQ(field_of(r), "tables[1]");
  s.erase("tables");
  s["busKey"] = std::string(64, 'a');  // a secret: never stored by the API
  r = Post("/api/v1/streams", s);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(field_of(r), "busKey");
  s.erase("busKey");
  r = Post("/api/v1/streams", s);
  ASSERT_EQ(r.status, 201) << r.raw;
  r = Post("/api/v1/streams/" + r.body["id"].get<std::string>() + "/clone",
           {{"name", std::string(200, 'c')}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(field_of(r), "name");
}

TEST_F(ApiSecurityTest, EveryListIsPaged) {
  for (int i = 0; i < 5; ++i) {
    auto r =
        Post("/api/v1/connections",
             {{"name", "paged-" + std::to_string(i)}, {"engine", "mysql"}, {"host", "db.example"}});
    ASSERT_EQ(r.status, 201) << r.raw;
  }
  auto p = Get("/api/v1/connections?search=paged-&offset=1&limit=2");
  ASSERT_EQ(p.status, 200) << p.raw;
  EXPECT_EQ(p.body["total"], 5);
  EXPECT_EQ(p.body["offset"], 1);
  EXPECT_EQ(p.body["limit"], 2);
  ASSERT_EQ(p.body["items"].size(), 2u);
  EXPECT_EQ(p.body["items"][0]["name"], "paged-1");
  EXPECT_EQ(p.body["items"][1]["name"], "paged-2");
  EXPECT_EQ(Get("/api/v1/connections?search=paged-&offset=4").body["items"].size(), 1u);
  // Every list route takes offset/limit and answers {items, total, offset, limit}.
  const std::string conn = PgConnection("paged-pg");
  json st = {{"name", "paged-stream"},
             {"source", {{"connection", conn}}},
             {"target", {{"connection", conn}}}};
  auto s = Post("/api/v1/streams", st);
  ASSERT_EQ(s.status, 201) << s.raw;
  for (const std::string& route :
       {std::string("/api/v1/connections"), std::string("/api/v1/streams"),
        "/api/v1/streams/" + s.body["id"].get<std::string>() + "/runs",
        std::string("/api/v1/services"), std::string("/api/v1/usage"),
        std::string("/api/v1/apikeys"), "/api/v1/connections/" + conn + "/databases",
        "/api/v1/connections/" + conn + "/schemas"}) {
    auto r = Get(route + "?offset=0&limit=1");
    EXPECT_EQ(r.status, 200) << route << " " << r.raw;
    EXPECT_EQ(r.body["limit"], 1) << route;
    EXPECT_EQ(r.body["offset"], 0) << route;
    EXPECT_TRUE(r.body["total"].is_number_integer()) << route;
    EXPECT_LE(r.body["items"].size(), 1u) << route;
    EXPECT_EQ(Get(route + "?limit=501").status, 400) << route;
    EXPECT_EQ(Get(route + "?offset=-1").status, 400) << route;
  }
  auto dbs = Get("/api/v1/connections/" + conn + "/databases?limit=500");
  EXPECT_GE(dbs.body["total"].get<int>(), 1);
  EXPECT_NE(dbs.body["items"].dump().find("postgres"), std::string::npos);
}

TEST_F(ApiSecurityTest, MetricsScrapeToken) {
  auto c = Client();
  auto r = c.Get("/metrics", {{"Authorization", std::string("Bearer ") + kMetricsToken}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("dbs_http_requests_total"), std::string::npos);
  // The token opens /metrics only.
  r = c.Get("/api/v1/version", {{"Authorization", std::string("Bearer ") + kMetricsToken}});
  EXPECT_EQ(r->status, 401);
  r = c.Get("/metrics", {{"Authorization", "Bearer wrong-token-wrong-token"}});
  EXPECT_EQ(r->status, 401);
  // An API key still works.
  r = c.Get("/metrics", Auth());
  EXPECT_EQ(r->status, 200);
  // The separate metrics listener: /metrics only, with the token.
  ASSERT_GT(env->server->metrics_port(), 0);
  ASSERT_NE(env->server->metrics_port(), env->server->port());
  httplib::Client m("127.0.0.1", env->server->metrics_port());
  r = m.Get("/metrics", {{"Authorization", std::string("Bearer ") + kMetricsToken}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("dbs_http_requests_total"), std::string::npos);
  EXPECT_EQ(m.Get("/metrics")->status, 401);
  EXPECT_EQ(m.Get("/metrics", Auth())->status, 401);  // an API key is not the token
  EXPECT_EQ(m.Get("/api/v1/version", Auth())->status, 404);
  EXPECT_EQ(m.Get("/metrics", {{"Authorization", std::string("Bearer ") + kMetricsToken}})->status,
            200);
}

TEST_F(ApiSecurityTest, ApiKeyLifecycle) {
  auto created = Post("/api/v1/apikeys", {{"name", "ci"}, {"expiresInDays", 30}});
  ASSERT_EQ(created.status, 201) << created.raw;
  const std::string key = created.body["key"];
  const std::string id = created.body["id"];
  EXPECT_EQ(key.rfind("dbs_", 0), 0u);
  EXPECT_EQ(created.body["state"], "active");
  EXPECT_NEAR(created.body["expiresAt"].get<double>(), store::NowSeconds() + 30 * 86400, 5);
  // The new key works; the list never shows a key or a hash.
  EXPECT_EQ(Get("/api/v1/version", key).status, 200);
  auto list = Get("/api/v1/apikeys?limit=500");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.raw.find(key), std::string::npos);
  EXPECT_EQ(list.raw.find(store::Sha256Hex(key)), std::string::npos);
  bool listed = false;
  for (const auto& k : list.body["items"]) {
    EXPECT_FALSE(k.contains("key"));
    EXPECT_FALSE(k.contains("hash"));
    listed = listed || k["id"] == id;
  }
  EXPECT_TRUE(listed);
  // Revoked: refused at once (this server forgets its cache), listed as revoked; twice is 404.
  EXPECT_EQ(Delete("/api/v1/apikeys/" + id).status, 204);
  EXPECT_EQ(Get("/api/v1/version", key).status, 401);
  EXPECT_EQ(Delete("/api/v1/apikeys/" + id).status, 404);
  list = Get("/api/v1/apikeys?limit=500");
  for (const auto& k : list.body["items"]) {
    if (k["id"] == id) {
      EXPECT_EQ(k["state"], "revoked");
    }
  }
  // Expiry: a key that expires in 2 s works, then is refused.
  auto soon = Post("/api/v1/apikeys", {{"name", "short"}, {"expiresAt", store::NowSeconds() + 2}});
  ASSERT_EQ(soon.status, 201) << soon.raw;
  const std::string short_key = soon.body["key"];
  EXPECT_EQ(Get("/api/v1/version", short_key).status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(3100));
  EXPECT_EQ(Get("/api/v1/version", short_key).status, 401);
  for (const auto& k : Get("/api/v1/apikeys?limit=500").body["items"]) {
    if (k["id"] == soon.body["id"]) {
      EXPECT_EQ(k["state"], "expired");
    }
  }
  // RFC 3339 expiry, and validation.
  auto dated = Post("/api/v1/apikeys", {{"name", "dated"}, {"expiresAt", "2099-01-31T00:00:00Z"}});
  EXPECT_EQ(dated.status, 201) << dated.raw;
  EXPECT_EQ(dated.body["expiresAt"], 4073500800);
  EXPECT_EQ(Post("/api/v1/apikeys", {{"name", "past"}, {"expiresAt", 1000}}).status, 400);
  EXPECT_EQ(Post("/api/v1/apikeys", {{"name", "x"}, {"expiresInDays", 0}}).status, 400);
  EXPECT_EQ(Post("/api/v1/apikeys", json::object()).status, 400);
  EXPECT_EQ(Post("/api/v1/apikeys", {{"name", "x"}, {"scope", "all"}}).status, 400);
  // The store keeps the expiry across a reopen (migration 2).
  auto reopened = store::ConfigStore::Open("sqlite", env->dir);
  ASSERT_TRUE(reopened.ok());
  auto found = (*reopened)->FindApiKey(store::Sha256Hex(dated.body["key"].get<std::string>()));
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->expires_at, 4073500800);
}

// DBConvert Streams names: stream-configs are our streams, their "streams" are our runs.
TEST_F(ApiSecurityTest, CompatibilityAliases) {
  const std::string conn = PgConnection("alias-pg");
  // CRUD through /stream-configs, with DBConvert's plain connection ids.
  auto created =
      Post("/api/v1/stream-configs",
           {{"name", "alias-stream"}, {"mode", "convert"}, {"source", conn}, {"target", conn}});
  ASSERT_EQ(created.status, 201) << created.raw;
  const std::string id = created.body["id"];
  EXPECT_EQ(created.body["config"]["source"]["connection"], conn);
  EXPECT_EQ(created.body["config"]["mode"], "load");
  // Our route keeps its own form.
  EXPECT_EQ(
      Post("/api/v1/streams", {{"name", "alias-own"}, {"source", conn}, {"target", conn}}).status,
      400);
  auto ours = Get("/api/v1/streams/" + id);
  auto theirs = Get("/api/v1/stream-configs/" + id);
  EXPECT_EQ(theirs.status, 200);
  EXPECT_EQ(ours.body, theirs.body);
  auto list = Get("/api/v1/stream-configs?search=alias-");
  EXPECT_EQ(list.body["total"], 1);
  auto updated =
      Put("/api/v1/stream-configs/" + id,
          {{"name", "alias-stream-2"}, {"source", {{"connection", conn}}}, {"target", conn}});
  EXPECT_EQ(updated.status, 200) << updated.raw;
  EXPECT_EQ(Get("/api/v1/streams/" + id).body["name"], "alias-stream-2");
  // Start: the same answer as ours (no reader or writer service runs in this test: 503).
  auto start_ours = Post("/api/v1/streams/" + id + "/start", json::object());
  auto start_theirs = Post("/api/v1/stream-configs/" + id + "/start", json::object());
  EXPECT_EQ(start_theirs.status, start_ours.status) << start_theirs.raw;
  EXPECT_EQ(start_theirs.body["error"]["code"], start_ours.body["error"]["code"]);
  // Run routes: same answers for an unknown run.
  for (const char* action : {"pause", "resume", "stop"}) {
    auto a = Post(std::string("/api/v1/streams/r_missing/") + action, json::object());
    auto b = Post(std::string("/api/v1/runs/r_missing/") + action, json::object());
    EXPECT_EQ(a.status, 404) << action;
    EXPECT_EQ(a.body, b.body) << action;
  }
  auto stats = Get("/api/v1/streams/r_missing/stats");
  EXPECT_EQ(stats.status, 404);
  EXPECT_EQ(stats.body, Get("/api/v1/runs/r_missing").body);
  // Connection test of a saved connection = ping.
  auto test = Post("/api/v1/connections/" + conn + "/test", json::object());
  EXPECT_EQ(test.status, 200) << test.raw;
  EXPECT_EQ(test.body["ok"], true) << test.raw;
  EXPECT_EQ(Delete("/api/v1/stream-configs/" + id).status, 204);
  EXPECT_EQ(Get("/api/v1/streams/" + id).status, 404);
}

// Last: it blocks this test's address for a while. Five 401s, then 429 with Retry-After
// (doubling per further failure, capped), a success after the block resets; every failure is
// logged with the client and the reason, never the key.
TEST_F(ApiSecurityTest, FailedAuthenticationBackoff) {
  env->sink->Take();
  const std::string wrong = "dbs_wrong_key_material_0123456789";
  auto c = Client();
  for (int i = 0; i < 5; ++i) {
    auto r = c.Get("/api/v1/version", Auth(wrong));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << i;
  }
  auto r = c.Get("/api/v1/version", Auth());  // even the right key waits
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "too_many_requests");
  // After the block, a failure blocks twice as long.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(c.Get("/api/v1/version", Auth(wrong))->status, 401);
  r = c.Get("/api/v1/version", Auth());
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->get_header_value("Retry-After"), "2");
  // A POST with a body is refused before its body is read.
  auto p = From(c.Post("/api/v1/connections", Auth(), "{}", "application/json"));
  EXPECT_EQ(p.status, 429);
  // The logs: one record per 401, with the client address and the reason, no key bytes.
  auto records = env->sink->Take();
  int failures = 0, blocks = 0;
  for (const auto& rec : records) {
    std::string all = rec.message;
    for (const auto& f : rec.fields) all += " " + f.key + "=" + f.value;
    EXPECT_EQ(all.find("wrong_key"), std::string::npos) << all;
    EXPECT_EQ(all.find(env->key), std::string::npos) << all;
    if (rec.message == "authentication failed") {
      ++failures;
      EXPECT_NE(all.find("client=127.0.0.1"), std::string::npos) << all;
      EXPECT_NE(all.find("reason=an unknown, revoked or expired key"), std::string::npos) << all;
    }
    if (rec.message == "client blocked after repeated authentication failures") ++blocks;
  }
  EXPECT_EQ(failures, 6);
  EXPECT_EQ(blocks, 2);
  // Once the block is over, the right key works and resets the count.
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  EXPECT_EQ(c.Get("/api/v1/version", Auth())->status, 200);
  EXPECT_EQ(c.Get("/api/v1/version", Auth(wrong))->status, 401);
  EXPECT_EQ(c.Get("/api/v1/version", Auth())->status, 200);
  // Counted in /metrics.
  auto m = c.Get("/metrics", Auth());
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("dbs_auth_blocks_total 2\n"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("dbs_auth_failures_total "), std::string::npos);
}

}  // namespace
}  // namespace dbs

// The REST API over real HTTP on loopback, with the fixture's NATS, MariaDB and PostgreSQL,
// an in-process reader and writer service agent, the SQLite store and the secrets file.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/api_server.h"
#include "api/connections.h"
#include "bus/jetstream.h"
#include "core/logging.h"
#include "objstore/object_store.h"
#include "postgres/pg_client.h"
#include "service/nats_log_sink.h"
#include "service/service_agent.h"
#include "store/config_store.h"
#include "store/secrets_store.h"
#include "support/servers.h"

namespace dbs {
namespace {

using nlohmann::json;
using testing::SharedServers;

std::string Pct(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '-') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// A password no fixture uses: searched for in files, responses and logs.
const char kSecret[] = "S3cr3t-pw-Zq9!x";

struct Env {
  std::string dir;
  std::unique_ptr<bus::NatsConnection> api_conn, reader_conn, writer_conn;
  std::unique_ptr<store::ConfigStore> config;
  std::unique_ptr<store::SecretsStore> secrets;
  std::unique_ptr<service::ServiceAgent> reader, writer;
  std::unique_ptr<api::ApiServer> server;
  LogSink* sink = nullptr;
  std::string key;
  testing::PostgresServer* pg = nullptr;
  testing::MariaDbServer* my = nullptr;
  std::string nats_url;
  std::mutex seen_mu;
  std::string seen;  // every response body, for the secret search
};
Env* env = nullptr;

class ApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    env = new Env();
    auto nats = SharedServers::Nats();
    ASSERT_TRUE(nats.ok()) << nats.status().ToString();
    auto pg = SharedServers::Postgres();
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    auto my = SharedServers::MariaDb();
    ASSERT_TRUE(my.ok()) << my.status().ToString();
    env->pg = *pg;
    env->my = *my;
    env->nats_url = (*nats)->url();
    env->dir = "/tmp/dbstreams-test/api-" + std::to_string(getpid());
    std::filesystem::create_directories(env->dir);
    // The folder engine file connections may use (FileConnectionsStayInsideTheRoots).
    std::filesystem::create_directories(env->dir + "/roots/lake");
    ::setenv("DBS_FILE_ROOTS", (env->dir + "/roots/lake").c_str(), 1);
    auto connect = [](const char* name) {
      bus::NatsOptions o;
      o.url = env->nats_url;
      o.name = name;
      o.request_timeout = std::chrono::seconds(30);
      auto c = bus::NatsConnection::Connect(o);
      EXPECT_TRUE(c.ok()) << c.status().ToString();
      return c.ok() ? std::move(c).value() : nullptr;
    };
    env->api_conn = connect("api");
    env->reader_conn = connect("reader");
    env->writer_conn = connect("writer");
    auto cs = store::ConfigStore::Open("sqlite", env->dir);
    ASSERT_TRUE(cs.ok()) << cs.status().ToString();
    env->config = std::move(cs).value();
    auto ss = store::SecretsStore::Open("file", env->dir, "");
    ASSERT_TRUE(ss.ok()) << ss.status().ToString();
    env->secrets = std::move(ss).value();
    env->sink = Logger::Global().AddSink(
        std::make_unique<service::NatsLogSink>(env->api_conn.get(), "api-test", "test"));
    service::AgentOptions ro, wo;
    ro.kind = "reader";
    wo.kind = "writer";
    ro.id = "reader-inproc";
    wo.id = "writer-inproc";
    ro.heartbeat_interval = wo.heartbeat_interval = std::chrono::milliseconds(1000);
    auto r = service::ServiceAgent::Start(env->reader_conn.get(), ro);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    env->reader = std::move(r).value();
    auto w = service::ServiceAgent::Start(env->writer_conn.get(), wo);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    env->writer = std::move(w).value();
    auto key = api::CreateApiKey(env->config.get(), "test");
    ASSERT_TRUE(key.ok());
    env->key = *key;
    api::ApiServerOptions ao;
    ao.port = 0;
    ao.cors_origins = {"http://ui.example"};
    ao.orchestrator.heartbeat_timeout = std::chrono::milliseconds(5000);
    auto s = api::ApiServer::Start(ao, env->api_conn.get(), env->config.get(), env->secrets.get());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    env->server = std::move(s).value();
    // Wait until both services were seen.
    for (int i = 0; i < 50; ++i) {
      auto h = Get("/api/v1/health");
      if (h.first == 200 && h.second["readers"] == 1 && h.second["writers"] == 1) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  static void TearDownTestSuite() {
    if (env == nullptr) return;
    if (env->server) env->server->Stop();
    if (env->reader) env->reader->Shutdown();
    if (env->writer) env->writer->Shutdown();
    if (env->sink) Logger::Global().RemoveSink(env->sink);
    std::error_code ec;
    std::filesystem::remove_all(env->dir, ec);
    delete env;
    env = nullptr;
  }

  static httplib::Client Client() {
    httplib::Client c("127.0.0.1", env->server->port());
    c.set_read_timeout(60, 0);
    return c;
  }
  static std::pair<int, json> Parse(const httplib::Result& r) {
    if (!r) return {-1, json()};
    {
      std::lock_guard<std::mutex> l(env->seen_mu);
      env->seen += r->body;
    }
    json j = r->body.empty() ? json() : json::parse(r->body, nullptr, false);
    return {r->status, j};
  }
  static httplib::Headers Auth() { return {{"X-API-Key", env->key}}; }
  static std::pair<int, json> Get(const std::string& path) {
    auto c = Client();
    return Parse(c.Get(path.c_str(), Auth()));
  }
  static std::pair<int, json> Send(const std::string& method, const std::string& path,
                                   const std::string& body) {
    auto c = Client();
    if (method == "POST") return Parse(c.Post(path.c_str(), Auth(), body, "application/json"));
    if (method == "PUT") return Parse(c.Put(path.c_str(), Auth(), body, "application/json"));
    return Parse(c.Delete(path.c_str(), Auth()));
  }
  static std::pair<int, json> Post(const std::string& path, const json& body) {
    return Send("POST", path, body.dump());
  }

  // Creates a PostgreSQL connection to `db` with the secret password set on a fresh role.
  static std::string PgConnection(const std::string& name, const std::string& db) {
    (void)env->pg->Exec("DO $$BEGIN CREATE ROLE apitest LOGIN SUPERUSER PASSWORD '" +
                        std::string(kSecret) +
                        "'; EXCEPTION WHEN duplicate_object THEN NULL; END$$");
    auto r = Post("/api/v1/connections", {{"name", name},
                                          {"engine", "postgres"},
                                          {"host", "127.0.0.1"},
                                          {"port", env->pg->port()},
                                          {"user", "apitest"},
                                          {"password", kSecret},
                                          {"database", db}});
    EXPECT_EQ(r.first, 201) << r.second.dump();
    return r.second.value("id", "");
  }
  static std::string MyConnection(const std::string& name, const std::string& db) {
    (void)env->my->Exec("CREATE USER IF NOT EXISTS 'apitest'@'%' IDENTIFIED BY '" +
                        std::string(kSecret) + "'; GRANT ALL ON *.* TO 'apitest'@'%'");
    auto r = Post("/api/v1/connections",
                  {{"name", name},
                   {"url", "mysql://apitest:" + std::string("S3cr3t-pw-Zq9%21x") +
                               "@127.0.0.1:" + std::to_string(env->my->port()) + "/" + db}});
    EXPECT_EQ(r.first, 201) << r.second.dump();
    return r.second.value("id", "");
  }
  // Creates the stream `body`, starts it, and follows it to "completed"; returns the run id.
  static std::string RunToCompletion(const json& body) {
    auto st = Post("/api/v1/streams", body);
    EXPECT_EQ(st.first, 201) << st.second.dump();
    auto run = Post("/api/v1/streams/" + st.second.value("id", "") + "/start", json::object());
    EXPECT_EQ(run.first, 202) << run.second.dump();
    int events = 0;
    const std::string rid = run.second.value("id", "");
    EXPECT_EQ(WatchProgress(rid, &events), "completed") << Get("/api/v1/runs/" + rid).second.dump();
    return rid;
  }
  // Follows the run's progress SSE stream until its end event; returns the last state.
  static std::string WatchProgress(const std::string& run, int* events) {
    auto c = Client();
    std::string buf, state;
    *events = 0;
    c.Get(("/api/v1/runs/" + run + "/progress").c_str(), Auth(), [&](const char* data, size_t n) {
      buf.append(data, n);
      size_t p;
      while ((p = buf.find("\n\n")) != std::string::npos) {
        std::string ev = buf.substr(0, p);
        buf.erase(0, p + 2);
        size_t d = ev.find("data: ");
        if (d == std::string::npos) continue;
        json j = json::parse(ev.substr(d + 6), nullptr, false);
        if (ev.rfind("event: progress", 0) == 0) ++*events;
        if (ev.rfind("event: end", 0) == 0) {
          state = j.value("state", "");
          return false;
        }
      }
      return true;
    });
    return state;
  }
};

TEST_F(ApiTest, RequiresApiKey) {
  auto c = Client();
  auto r = c.Get("/api/v1/version");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_NE(r->body.find("X-API-Key"), std::string::npos);
  r = c.Get("/api/v1/connections", {{"X-API-Key", "dbs_wrong"}});
  EXPECT_EQ(r->status, 401);
  r = c.Get("/metrics");
  EXPECT_EQ(r->status, 401);
  // Revoked keys stop working (the cache holds a key for at most 5 s).
  auto k = api::CreateApiKey(env->config.get(), "short-lived");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(c.Get("/api/v1/version", {{"X-API-Key", *k}})->status, 200);
  auto keys = env->config->ListApiKeys();
  ASSERT_TRUE(keys.ok());
  ASSERT_TRUE(env->config->RevokeApiKey(keys->back().id).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5200));
  EXPECT_EQ(c.Get("/api/v1/version", {{"X-API-Key", *k}})->status, 401);
  // CORS preflight for the configured origin.
  auto o = c.Options("/api/v1/streams", {{"Origin", "http://ui.example"}});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->status, 204);
  EXPECT_EQ(o->get_header_value("Access-Control-Allow-Origin"), "http://ui.example");
}

TEST_F(ApiTest, OpenApiMatchesRoutes) {
  json doc = json::parse(api::ApiServer::OpenApiDocument(), nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_EQ(doc["openapi"].get<std::string>().substr(0, 2), "3.");
  std::set<std::string> routes, documented;
  for (const auto& r : api::ApiServer::Routes()) routes.insert(r.method + " " + r.path);
  for (const auto& [path, ops] : doc["paths"].items()) {
    for (const auto& [m, op] : ops.items()) {
      std::string up = m;
      for (char& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      documented.insert(up + " " + path);
    }
  }
  for (const auto& r : routes) EXPECT_TRUE(documented.count(r)) << r << " is not documented";
  for (const auto& d : documented) EXPECT_TRUE(routes.count(d)) << d << " is not a route";
  auto served = Get("/api/v1/openapi.json");
  EXPECT_EQ(served.first, 200);
  EXPECT_EQ(served.second, doc);
}

// S3 connections: validated fields, the secret key stored as a secret and never returned, a
// ping that lists the prefix, files as tables (described and counted), and streams from and to
// the bucket started through the API.
// engine file connections: folders inside DBS_FILE_ROOTS only (links resolved, no '..'), and
// streams from PostgreSQL into such a folder and from it back into PostgreSQL.
TEST_F(ApiTest, FileConnectionsStayInsideTheRoots) {
  const std::string root = env->dir + "/roots/lake";
  std::filesystem::create_symlink("/tmp", root + "/escape");
  for (const std::string& bad :
       {std::string("/tmp/elsewhere"), root + "/../x", std::string("rel"), root + "/escape/x"}) {
    auto r = Post("/api/v1/connections", {{"name", "f"}, {"engine", "file"}, {"path", bad}});
    EXPECT_EQ(r.first, 400) << bad;
    EXPECT_EQ(r.second["error"]["fields"][0]["field"], "path") << bad << r.second.dump();
  }
  EXPECT_EQ(Post("/api/v1/connections",
                 {{"name", "f"}, {"engine", "file"}, {"path", root}, {"host", "h"}})
                .first,
            400);
  auto created = Post("/api/v1/connections", {{"name", "folder"},
                                              {"engine", "file"},
                                              {"path", root + "/exports"},
                                              {"params", {{"format", "jsonl"}}}});
  ASSERT_EQ(created.first, 201) << created.second.dump();
  const std::string id = created.second["id"];
  EXPECT_EQ(created.second["engine"], "file");
  EXPECT_EQ(created.second["path"], root + "/exports");
  auto ping = Post("/api/v1/connections/" + id + "/ping", json::object());
  EXPECT_FALSE(ping.second.value("ok", true)) << "the folder does not exist yet";

  ASSERT_TRUE(env->pg->Exec("DROP DATABASE IF EXISTS api_file WITH (FORCE)").ok());
  ASSERT_TRUE(env->pg->CreateDatabase("api_file").ok());
  ASSERT_TRUE(
      env->pg
          ->Exec("CREATE TABLE public.notes (id int PRIMARY KEY, body text, n numeric(9,3));"
                 "INSERT INTO public.notes VALUES (1, 'a\nb', 1.5), (2, NULL, -0.001)",
                 "api_file")
          .ok());
  const std::string pg = PgConnection("pg-file", "api_file");
  RunToCompletion({{"name", "to-folder"},
                   {"source", {{"connection", pg}}},
                   {"target", {{"connection", id}}},
                   {"tables", {"notes"}}});
  EXPECT_TRUE(std::filesystem::exists(root + "/exports/notes/_manifest.json"));
  ping = Post("/api/v1/connections/" + id + "/ping", json::object());
  EXPECT_TRUE(ping.second.value("ok", false)) << ping.second.dump();
  EXPECT_EQ(ping.second["objects"], 1);
  auto tables = Get("/api/v1/connections/" + id + "/tables");
  ASSERT_EQ(tables.first, 200) << tables.second.dump();
  EXPECT_NE(tables.second.dump().find("notes"), std::string::npos) << tables.second.dump();
  // The explorer lists and samples the folder by connection, relative to it, never above it.
  auto listed = Post("/api/v1/explorer/files/list", {{"connectionId", id}});
  ASSERT_EQ(listed.first, 200) << listed.second.dump();
  EXPECT_EQ(listed.second["connectionId"], id);
  ASSERT_EQ(listed.second["entries"].size(), 1u) << "no .dbs: " << listed.second.dump();
  EXPECT_EQ(listed.second["entries"][0]["path"], "notes");
  EXPECT_EQ(listed.second["entries"][0]["kind"], "folder");
  auto inner = Post("/api/v1/explorer/files/list", {{"connectionId", id}, {"path", "notes"}});
  ASSERT_EQ(inner.first, 200) << inner.second.dump();
  std::string part;
  for (const json& e : inner.second["entries"]) {
    if (e["name"].get<std::string>().rfind("part-", 0) == 0) part = e["path"];
  }
  ASSERT_FALSE(part.empty()) << inner.second.dump();
  auto sample = Post("/api/v1/explorer/files/sample", {{"connectionId", id}, {"path", part}});
  ASSERT_EQ(sample.first, 200) << sample.second.dump();
  EXPECT_EQ(sample.second["rows"].size(), 2u) << sample.second.dump();
  for (const std::string& bad : {std::string(".."), std::string("../exports"), root}) {
    EXPECT_EQ(Post("/api/v1/explorer/files/list", {{"connectionId", id}, {"path", bad}}).first, 400)
        << bad;
    EXPECT_EQ(Post("/api/v1/explorer/files/sample", {{"connectionId", id}, {"path", bad}}).first,
              400)
        << bad;
  }
  RunToCompletion({{"name", "from-folder"},
                   {"source", {{"connection", id}}},
                   {"target", {{"connection", pg}}},
                   {"targetSchema", "copy"}});
  auto rows = env->pg->Query(
      "SELECT string_agg(id || ':' || coalesce(body, '~') || ':' || n, ',' ORDER BY id) "
      "FROM copy.notes",
      "api_file");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ((*rows)[0][0].value_or(""), "1:a\nb:1.500,2:~:-0.001");

  // malformedRows skip from a folder: the run record counts and names the rows left out.
  std::filesystem::create_directories(root + "/in");
  std::ofstream(root + "/in/scores.csv") << "id,score\n1,10\n2,oops\n3,30\n";
  auto in = Post("/api/v1/connections",
                 {{"name", "folder-in"}, {"engine", "file"}, {"path", root + "/in"}});
  ASSERT_EQ(in.first, 201) << in.second.dump();
  const std::string rid =
      RunToCompletion({{"name", "skip-bad"},
                       {"source", {{"connection", in.second["id"]}}},
                       {"target", {{"connection", pg}}},
                       {"targetSchema", "scores"},
                       {"tables", {{{"name", "scores"}, {"columnTypes", {{"score", "BIGINT"}}}}}},
                       {"malformedRows", "skip"}});
  auto rec = Get("/api/v1/runs/" + rid);
  ASSERT_EQ(rec.first, 200);
  ASSERT_TRUE(rec.second["skipped"].is_object()) << rec.second.dump();
  const json& skip = rec.second["skipped"]["public.scores"];
  EXPECT_EQ(skip["count"], 1) << rec.second.dump();
  ASSERT_EQ(skip["rows"].size(), 1u);
  EXPECT_NE(skip["rows"][0].dump().find("scores.csv"), std::string::npos) << skip.dump();
  auto copied = env->pg->Query(
      "SELECT string_agg(id || ':' || score, ',' ORDER BY id) FROM "
      "scores.scores",
      "api_file");
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ((*copied)[0][0].value_or(""), "1:10,3:30");

  // A table folder that mixes formats: browsing says so, as a state of the folder (409), not
  // as an outage to retry (503).
  std::filesystem::create_directories(root + "/mixed/events");
  std::ofstream(root + "/mixed/events/a.csv") << "id\n1\n";
  std::ofstream(root + "/mixed/events/b.jsonl") << "{\"id\": 2}\n";
  auto mixed = Post("/api/v1/connections",
                    {{"name", "folder-mixed"}, {"engine", "file"}, {"path", root + "/mixed"}});
  ASSERT_EQ(mixed.first, 201) << mixed.second.dump();
  auto mixed_tables =
      Get("/api/v1/connections/" + mixed.second["id"].get<std::string>() + "/tables");
  EXPECT_EQ(mixed_tables.first, 409) << mixed_tables.second.dump();
  EXPECT_NE(mixed_tables.second.dump().find("mixes file formats"), std::string::npos)
      << mixed_tables.second.dump();
}

TEST_F(ApiTest, S3ConnectionsBrowseAndStreams) {
  auto s3 = testing::S3Server::Start();
  ASSERT_TRUE(s3.ok()) << s3.status().ToString();
  ASSERT_TRUE((*s3)->CreateBucket("api-lake").ok());
  S3Settings so;
  so.endpoint = (*s3)->endpoint();
  so.bucket = "api-lake";
  so.access_key = (*s3)->access_key();
  so.secret_key = (*s3)->secret_key();
  auto store = OpenS3Store(so);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  {
    auto w = (*store)->Create("in/people.csv");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write("id,name\n1,Ann\n2,Bob\n3,Zoë\n").ok());
    ASSERT_TRUE((*w)->Commit().ok());
  }
  json body = {{"name", "lake"},
               {"engine", "s3"},
               {"bucket", "API_lake"},
               {"prefix", "in"},
               {"endpoint", (*s3)->endpoint()},
               {"user", (*s3)->access_key()},
               {"password", (*s3)->secret_key()}};
  auto bad = Post("/api/v1/connections", body);
  EXPECT_EQ(bad.first, 400);
  EXPECT_NE(bad.second.dump().find("bucket"), std::string::npos) << bad.second.dump();
  body["bucket"] = "api-lake";
  body["host"] = "h";
  EXPECT_EQ(Post("/api/v1/connections", body).first, 400);
  body.erase("host");
  auto created = Post("/api/v1/connections", body);
  ASSERT_EQ(created.first, 201) << created.second.dump();
  const std::string id = created.second["id"];
  auto got = Get("/api/v1/connections/" + id);
  EXPECT_EQ(got.second["engine"], "s3");
  EXPECT_EQ(got.second["bucket"], "api-lake");
  EXPECT_EQ(got.second["prefix"], "in");
  EXPECT_EQ(got.second["endpoint"], (*s3)->endpoint());
  EXPECT_EQ(got.second["hasPassword"], true);
  auto ping = Post("/api/v1/connections/" + id + "/ping", json::object());
  EXPECT_EQ(ping.second["ok"], true) << ping.second.dump();
  EXPECT_EQ(ping.second["objects"], 1);
  // A prefix with characters that URLs escape survives saving and reading back.
  json odd = body;
  odd["name"] = "lake-odd";
  odd["prefix"] = "a b/100%?#x";
  auto odd_created = Post("/api/v1/connections", odd);
  ASSERT_EQ(odd_created.first, 201) << odd_created.second.dump();
  EXPECT_EQ(odd_created.second["prefix"], "a b/100%?#x");
  auto odd_ping =
      Post("/api/v1/connections/" + odd_created.second["id"].get<std::string>() + "/ping",
           json::object());
  EXPECT_EQ(odd_ping.second["ok"], true) << odd_ping.second.dump();
  EXPECT_EQ(odd_ping.second["objects"], 0);
  auto tables = Get("/api/v1/connections/" + id + "/tables");
  ASSERT_EQ(tables.second["items"].size(), 1u) << tables.second.dump();
  EXPECT_EQ(tables.second["items"][0]["name"], "people");
  auto meta = Get("/api/v1/connections/" + id + "/tables/public/people");
  EXPECT_EQ(meta.first, 200) << meta.second.dump();
  EXPECT_EQ(meta.second["columns"].size(), 2u);
  auto count = Get("/api/v1/connections/" + id + "/tables/public/people/count");
  EXPECT_EQ(count.second["rows"], 3) << count.second.dump();

  // The explorer lists the bucket and samples an object.
  auto listed = Post("/api/v1/explorer/files/list", {{"connectionId", id}});
  ASSERT_EQ(listed.first, 200) << listed.second.dump();
  ASSERT_EQ(listed.second["entries"].size(), 1u) << listed.second.dump();
  EXPECT_EQ(listed.second["entries"][0]["name"], "people.csv");
  EXPECT_EQ(listed.second["entries"][0]["kind"], "file");
  auto sample =
      Post("/api/v1/explorer/files/sample", {{"connectionId", id}, {"path", "people.csv"}});
  ASSERT_EQ(sample.first, 200) << sample.second.dump();
  EXPECT_EQ(sample.second["columns"].size(), 2u) << sample.second.dump();
  EXPECT_EQ(sample.second["rows"].size(), 3u) << sample.second.dump();
  EXPECT_EQ(
      Post("/api/v1/explorer/files/sample", {{"connectionId", id}, {"path", "../x.csv"}}).first,
      400);
  EXPECT_EQ(Post("/api/v1/explorer/files/list", {{"connectionId", "c_nope"}}).first, 404);

  // The bucket as a source, then as a target.
  ASSERT_TRUE(env->pg->Exec("DROP DATABASE IF EXISTS api_s3 WITH (FORCE)").ok());
  ASSERT_TRUE(env->pg->CreateDatabase("api_s3").ok());
  const std::string pg = PgConnection("pg-s3", "api_s3");
  RunToCompletion(
      {{"name", "s3-in"}, {"source", {{"connection", id}}}, {"target", {{"connection", pg}}}});
  auto rows =
      env->pg->Query("SELECT string_agg(name, ',' ORDER BY id) FROM public.people", "api_s3");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ((*rows)[0][0].value_or(""), "Ann,Bob,Zoë");
  json out = body;
  out["name"] = "lake-out";
  out["prefix"] = "out";
  out["params"] = {{"format", "parquet"}};
  auto target = Post("/api/v1/connections", out);
  ASSERT_EQ(target.first, 201) << target.second.dump();
  RunToCompletion({{"name", "s3-out"},
                   {"source", {{"connection", pg}}},
                   {"target", {{"connection", target.second["id"]}}},
                   {"tables", {"people"}}});
  auto manifest = (*store)->Stat("out/people/_manifest.json");
  EXPECT_TRUE(manifest.ok()) << manifest.status().ToString();
  // A federated query over the bucket: its default alias is s3.
  auto fed = Post("/api/v1/explorer/federated",
                  {{"sources", {{{"connectionId", id}}}},
                   {"sql", "SELECT count(*) AS n, max(name) AS last FROM s3.public.people"}});
  ASSERT_EQ(fed.first, 200) << fed.second.dump();
  EXPECT_EQ(fed.second["aliases"], json::array({"s3"}));
  EXPECT_EQ(fed.second["rows"], json::parse(R"([[3, "Zoë"]])"));
  // The object by its s3:// URL, read with the connection's credentials; EXPLAIN names it.
  const json by_url = {
      {"sources", {{{"connectionId", id}}}},
      {"sql", "SELECT count(*) AS n FROM read_csv('s3://api-lake/in/people.csv')"}};
  auto url = Post("/api/v1/explorer/federated", by_url);
  ASSERT_EQ(url.first, 200) << url.second.dump();
  EXPECT_EQ(url.second["rows"], json::parse("[[3]]"));
  auto explained = Post("/api/v1/explorer/federated/explain", by_url);
  ASSERT_EQ(explained.first, 200) << explained.second.dump();
  EXPECT_NE(explained.second.dump().find("people.csv"), std::string::npos)
      << explained.second.dump();

  // Temporary credentials: the session token is a secret like the password. It goes to the
  // secrets store, the spec and every response hold only its marker, the connection still
  // works with it, the marker keeps it, leaving it out drops it; clone copies it, delete
  // deletes it.
  const std::string token = "FQoGZXIvYXdzEJr-Zq9SessionToken+/=";
  auto StoredToken = [](const std::string& cid) {
    auto t = env->secrets->Get(api::SessionTokenRef(cid));
    return t.ok() ? *t : "(none: " + t.status().ToString() + ")";
  };
  json temp = body;
  temp["name"] = "lake-temp";
  temp["sessionToken"] = token;
  json probe = temp;
  probe.erase("name");
  EXPECT_EQ(Post("/api/v1/connections/test", probe).second["ok"], true);
  auto with_token = Post("/api/v1/connections", temp);
  ASSERT_EQ(with_token.first, 201) << with_token.second.dump();
  const std::string tid = with_token.second["id"];
  EXPECT_EQ(with_token.second["sessionToken"], api::kStoredSessionToken);
  EXPECT_EQ(StoredToken(tid), token);
  auto trec = env->config->GetConnection(tid);
  ASSERT_TRUE(trec.ok());
  EXPECT_EQ(trec->spec.dump().find(token), std::string::npos) << "the config store holds it";
  EXPECT_EQ(Post("/api/v1/connections/" + tid + "/ping", json::object()).second["ok"], true);
  RunToCompletion({{"name", "s3-temp"},
                   {"source", {{"connection", tid}}},
                   {"target", {{"connection", pg}}},
                   {"tables", {{{"name", "people"}, {"target", "people_temp"}}}}});
  auto temp_rows = env->pg->Query("SELECT count(*) FROM public.people_temp", "api_s3");
  ASSERT_TRUE(temp_rows.ok()) << temp_rows.status().ToString();
  EXPECT_EQ((*temp_rows)[0][0].value_or(""), "3");
  json loaded = Get("/api/v1/connections/" + tid).second;
  EXPECT_EQ(loaded["sessionToken"], api::kStoredSessionToken);
  for (const char* k : {"id", "hasPassword", "createdAt", "updatedAt"}) loaded.erase(k);
  auto kept = Send("PUT", "/api/v1/connections/" + tid, loaded.dump());
  ASSERT_EQ(kept.first, 200) << kept.second.dump();
  EXPECT_EQ(StoredToken(tid), token);
  auto copy = Post("/api/v1/connections/" + tid + "/clone", {{"name", "lake-temp-copy"}});
  ASSERT_EQ(copy.first, 201) << copy.second.dump();
  EXPECT_EQ(StoredToken(copy.second["id"].get<std::string>()), token);
  loaded.erase("sessionToken");
  auto dropped = Send("PUT", "/api/v1/connections/" + tid, loaded.dump());
  ASSERT_EQ(dropped.first, 200) << dropped.second.dump();
  EXPECT_FALSE(dropped.second.contains("sessionToken")) << dropped.second.dump();
  EXPECT_EQ(env->secrets->Get(api::SessionTokenRef(tid)).status().code(), StatusCode::kNotFound);
  // The marker keeps nothing now; a token on a database connection is refused.
  loaded["sessionToken"] = api::kStoredSessionToken;
  auto no_token = Send("PUT", "/api/v1/connections/" + tid, loaded.dump());
  EXPECT_EQ(no_token.first, 400) << no_token.second.dump();
  EXPECT_NE(no_token.second.dump().find("sessionToken"), std::string::npos);
  EXPECT_EQ(Post("/api/v1/connections", {{"name", "pg-token"},
                                         {"engine", "postgres"},
                                         {"host", "127.0.0.1"},
                                         {"sessionToken", "x"}})
                .first,
            400);
  const std::string cid = copy.second["id"];
  EXPECT_EQ(Send("DELETE", "/api/v1/connections/" + cid, "").first, 204);
  EXPECT_EQ(env->secrets->Get(api::SessionTokenRef(cid)).status().code(), StatusCode::kNotFound);
  for (const auto& e : std::filesystem::directory_iterator(env->dir)) {
    std::ifstream f(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    EXPECT_EQ(ss.str().find(token), std::string::npos) << e.path() << " holds the token";
  }

  std::lock_guard<std::mutex> l(env->seen_mu);
  EXPECT_EQ(env->seen.find((*s3)->secret_key()), std::string::npos) << "a response held the key";
  EXPECT_EQ(env->seen.find(token), std::string::npos) << "a response held the session token";
}

TEST_F(ApiTest, StrictBodies) {
  auto r = Send("POST", "/api/v1/connections", "{\"name\": ");
  EXPECT_EQ(r.first, 400);
  EXPECT_EQ(r.second["error"]["code"], "invalid_json");
  EXPECT_NE(r.second["error"]["message"].get<std::string>().find("not valid JSON"),
            std::string::npos);
  r = Send("POST", "/api/v1/connections", "[1,2]");
  EXPECT_EQ(r.first, 400);
  r = Post("/api/v1/connections", {{"name", "x"}, {"url", "postgres://h/db"}, {"colour", "red"}});
  EXPECT_EQ(r.first, 400);
  EXPECT_NE(r.second["error"]["message"].get<std::string>().find("colour is not a known field"),
            std::string::npos);
  r = Post("/api/v1/connections",
           {{"name", "x"}, {"engine", "postgres"}, {"host", "h"}, {"port", "5432"}});
  EXPECT_EQ(r.first, 400);
  EXPECT_EQ(r.second["error"]["fields"][0]["field"], "port");
  // A folder of the server is not a connection an API key may create (it could write anywhere).
  r = Post("/api/v1/connections", {{"name", "x"}, {"url", "file:///tmp/anywhere"}});
  EXPECT_EQ(r.first, 400);
  EXPECT_EQ(r.second["error"]["fields"][0]["field"], "url");
  std::string big = "{\"name\": \"" + std::string(2 << 20, 'a') + "\"}";
  r = Send("POST", "/api/v1/connections", big);
  EXPECT_EQ(r.first, 413);
  EXPECT_EQ(r.second["error"]["code"], "payload_too_large");
  r = Get("/api/v1/connections/c_missing");
  EXPECT_EQ(r.first, 404);
  EXPECT_NE(r.second["error"]["message"].get<std::string>().find("c_missing"), std::string::npos);
  r = Get("/api/v1/nothing");
  EXPECT_EQ(r.first, 404);
  r = Get("/api/v1/streams?limit=abc");
  EXPECT_EQ(r.first, 400);
}

TEST_F(ApiTest, LoadEndToEnd) {
  ASSERT_TRUE(env->my->Exec("DROP DATABASE IF EXISTS api_src; CREATE DATABASE api_src").ok());
  ASSERT_TRUE(env->my
                  ->Exec("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40), "
                         "price DECIMAL(10,2), KEY by_name (name))",
                         "api_src")
                  .ok());
  std::string ins = "INSERT INTO items VALUES ";
  for (int i = 1; i <= 500; ++i) {
    ins += (i > 1 ? "," : "") + ("(" + std::to_string(i) + ",'item " + std::to_string(i) + "'," +
                                 std::to_string(i) + ".5)");
  }
  ASSERT_TRUE(env->my->Exec(ins, "api_src").ok());
  ASSERT_TRUE(env->pg->CreateDatabase("api_dst").ok());

  // Test an unsaved connection (wrong password, then right), then save both.
  auto t = Post("/api/v1/connections/test", {{"engine", "mysql"},
                                             {"host", "127.0.0.1"},
                                             {"port", env->my->port()},
                                             {"user", "root"},
                                             {"password", "wrong-password"}});
  EXPECT_EQ(t.first, 200);
  EXPECT_EQ(t.second["ok"], false);
  std::string src = MyConnection("maria-src", "api_src");
  std::string dst = PgConnection("pg-dst", "api_dst");
  ASSERT_FALSE(src.empty());
  ASSERT_FALSE(dst.empty());
  auto got = Get("/api/v1/connections/" + src);
  EXPECT_EQ(got.first, 200);
  EXPECT_EQ(got.second["hasPassword"], true);
  EXPECT_FALSE(got.second.contains("password"));
  auto ping = Post("/api/v1/connections/" + src + "/ping", json::object());
  EXPECT_EQ(ping.second["ok"], true) << ping.second.dump();
  auto dup = Post("/api/v1/connections", {{"name", "maria-src"}, {"url", "mysql://h/db"}});
  EXPECT_EQ(dup.first, 409);
  auto list = Get("/api/v1/connections?search=MARIA");
  EXPECT_EQ(list.second["total"], 1);

  // Browse.
  auto dbs = Get("/api/v1/connections/" + src + "/databases");
  EXPECT_NE(dbs.second["items"].dump().find("api_src"), std::string::npos);
  auto tables = Get("/api/v1/connections/" + src + "/tables?schema=api_src");
  EXPECT_EQ(tables.second["items"].size(), 1u);
  auto meta = Get("/api/v1/connections/" + src + "/tables/api_src/items");
  EXPECT_EQ(meta.first, 200) << meta.second.dump();
  EXPECT_EQ(meta.second["columns"].size(), 3u);
  auto count = Get("/api/v1/connections/" + src + "/tables/api_src/items/count");
  EXPECT_EQ(count.second["rows"], 500);
  // Injection attempts: names are checked against the catalog and quoted.
  auto inj = Get("/api/v1/connections/" + src + "/tables/api_src/" +
                 Pct("items`; DROP TABLE items; --") + "/count");
  EXPECT_EQ(inj.first, 404);
  inj = Get("/api/v1/connections/" + dst + "/tables/public/" +
            Pct("x\"; DROP DATABASE api_dst; --") + "/count");
  EXPECT_EQ(inj.first, 404);
  auto still = env->my->Query("SELECT count(*) FROM items", "api_src");
  ASSERT_TRUE(still.ok());
  EXPECT_EQ((*still)[0][0].value_or(""), "500");

  // Stream configs: validation with field errors, then a valid one.
  json bad = {
      {"name", "api-load"},  {"source", {{"connection", src}}},  {"target", {{"connection", dst}}},
      {"tables", {"items"}}, {"writeMode", "truncate_and_load"}, {"readers", "two"}};
  auto b = Post("/api/v1/streams", bad);
  EXPECT_EQ(b.first, 400);
  EXPECT_EQ(b.second["error"]["fields"][0]["field"], "readers") << b.second.dump();
  bad["readers"] = 1;
  bad["source"] = {{"connection", "c_nope"}};
  b = Post("/api/v1/streams", bad);
  EXPECT_EQ(b.first, 400);
  bad["source"] = {{"connection", src}};
  bad["name"] = "logs";
  EXPECT_EQ(Post("/api/v1/streams", bad).first, 400);
  bad["name"] = "api-load";
  auto s = Post("/api/v1/streams", bad);
  ASSERT_EQ(s.first, 201) << s.second.dump();
  const std::string sid = s.second["id"];
  EXPECT_EQ(Post("/api/v1/streams", bad).first, 409);
  auto del = Send("DELETE", "/api/v1/connections/" + src, "");
  EXPECT_EQ(del.first, 409);
  auto page = Get("/api/v1/streams?search=api-&limit=1&offset=0");
  EXPECT_EQ(page.second["items"].size(), 1u);

  // Start, follow progress to completion, read history.
  auto run = Post("/api/v1/streams/" + sid + "/start", json::object());
  ASSERT_EQ(run.first, 202) << run.second.dump();
  const std::string rid = run.second["id"];
  auto again = Post("/api/v1/streams/" + sid + "/start", json::object());
  EXPECT_TRUE(again.first == 409 || again.first == 202) << again.second.dump();
  // A load pauses and resumes (409 when it already finished).
  auto pause = Post("/api/v1/runs/" + rid + "/pause", json::object());
  EXPECT_TRUE(pause.first == 200 || pause.first == 409) << pause.second.dump();
  if (pause.first == 200) {
    auto resumed = Post("/api/v1/runs/" + rid + "/resume", json::object());
    EXPECT_TRUE(resumed.first == 200 || resumed.first == 409) << resumed.second.dump();
  }
  int events = 0;
  std::string state = WatchProgress(rid, &events);
  EXPECT_EQ(state, "completed");
  EXPECT_GE(events, 1);
  auto st = Get("/api/v1/runs/" + rid);
  EXPECT_EQ(st.second["state"], "completed") << st.second.dump();
  auto hist = Get("/api/v1/streams/" + sid + "/runs");
  ASSERT_GE(hist.second["items"].size(), 1u);
  EXPECT_EQ(hist.second["items"][0]["id"], rid);
  auto rows = env->pg->Query("SELECT count(*) FROM api_src.items", "api_dst");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ((*rows)[0][0].value_or(""), "500");
  // A finished run can be started again.
  auto run2 = Post("/api/v1/streams/" + sid + "/start", json::object());
  EXPECT_EQ(run2.first, 202) << run2.second.dump();
  if (run2.first == 202) {
    EXPECT_EQ(WatchProgress(run2.second["id"], &events), "completed")
        << Get("/api/v1/runs/" + run2.second["id"].get<std::string>()).second.dump();
  }
  auto usage = Get("/api/v1/usage");
  EXPECT_GE(usage.second["items"].size(), 1u);
  auto metrics = Client().Get("/metrics", Auth());
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("dbs_http_requests_total"), std::string::npos);
}

// The plan of a stream config before it is saved (the editor's Preview plan): validated like
// POST /streams, the same document as the saved stream's plan, and nothing saved or written.
TEST_F(ApiTest, PlanBeforeSaving) {
  ASSERT_TRUE(
      env->my->Exec("DROP DATABASE IF EXISTS api_plan_src; CREATE DATABASE api_plan_src").ok());
  ASSERT_TRUE(env->my
                  ->Exec("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40), "
                         "price DECIMAL(10,2), KEY by_name (name)); "
                         "INSERT INTO items VALUES (1, 'one', 1.5), (2, 'two', 2.5)",
                         "api_plan_src")
                  .ok());
  ASSERT_TRUE(env->pg->CreateDatabase("api_plan_dst").ok());
  const std::string src = MyConnection("maria-plan", "api_plan_src");
  const std::string dst = PgConnection("pg-plan", "api_plan_dst");
  ASSERT_FALSE(src.empty());
  ASSERT_FALSE(dst.empty());
  json cfg = {{"name", "api-plan"},
              {"source", {{"connection", src}}},
              {"target", {{"connection", dst}}},
              {"tables", {"items"}},
              {"readers", "two"}};

  // The same validation as POST /streams, with the same per-field error.
  auto bad = Post("/api/v1/streams/plan", cfg);
  EXPECT_EQ(bad.first, 400);
  EXPECT_EQ(bad.second["error"]["fields"][0]["field"], "readers") << bad.second.dump();
  EXPECT_EQ(bad.second, Post("/api/v1/streams", cfg).second);
  cfg.erase("readers");
  cfg["source"] = {{"connection", "c_nope"}};
  bad = Post("/api/v1/streams/plan", cfg);
  EXPECT_EQ(bad.first, 400);
  EXPECT_NE(bad.second["error"]["message"].get<std::string>().find("source.connection"),
            std::string::npos)
      << bad.second.dump();
  cfg["source"] = {{"connection", src}};
  EXPECT_EQ(Send("POST", "/api/v1/streams/plan", "[1]").first, 400);

  auto plan = Post("/api/v1/streams/plan", cfg);
  ASSERT_EQ(plan.first, 200) << plan.second.dump();
  ASSERT_EQ(plan.second["tables"].size(), 1u) << plan.second.dump();
  const json& t = plan.second["tables"][0];
  EXPECT_EQ(t["source"], "api_plan_src.items") << t.dump();
  EXPECT_EQ(t["target"], "api_plan_src.items") << t.dump();
  EXPECT_EQ(t["action"], "create") << t.dump();
  EXPECT_NE(t["statements"].dump().find("CREATE TABLE"), std::string::npos) << t.dump();
  EXPECT_TRUE(plan.second["objects"].is_array());

  // Nothing was saved and nothing was written to the target.
  EXPECT_EQ(Get("/api/v1/streams?search=api-plan").second["total"], 0);
  auto tables = env->pg->Query(
      "SELECT count(*) FROM information_schema.tables WHERE table_schema NOT IN "
      "('pg_catalog', 'information_schema')",
      "api_plan_dst");
  ASSERT_TRUE(tables.ok()) << tables.status().ToString();
  EXPECT_EQ((*tables)[0][0].value_or(""), "0");
  auto schemas = env->pg->Query("SELECT count(*) FROM pg_namespace WHERE nspname = 'api_plan_src'",
                                "api_plan_dst");
  ASSERT_TRUE(schemas.ok()) << schemas.status().ToString();
  EXPECT_EQ((*schemas)[0][0].value_or(""), "0");

  // Once saved, the stream's own plan is the same document.
  auto saved = Post("/api/v1/streams", cfg);
  ASSERT_EQ(saved.first, 201) << saved.second.dump();
  const std::string sid = saved.second["id"];
  auto again = Post("/api/v1/streams/" + sid + "/plan", json::object());
  EXPECT_EQ(again.first, 200) << again.second.dump();
  EXPECT_EQ(again.second, plan.second);
  EXPECT_EQ(Send("DELETE", "/api/v1/streams/" + sid, "").first, 204);
}

// A load+cdc stream through the API: loaded, then changes follow; pause holds new changes back,
// resume lets them through, stop drains (everything committed before it is applied).
TEST_F(ApiTest, CdcStreamPauseResumeStop) {
  ASSERT_TRUE(env->pg->CreateDatabase("api_cdc_src").ok());
  ASSERT_TRUE(env->pg->CreateDatabase("api_cdc_dst").ok());
  ASSERT_TRUE(env->pg
                  ->Exec("CREATE TABLE t (id int PRIMARY KEY, v text);"
                         "INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g",
                         "api_cdc_src")
                  .ok());
  std::string src = PgConnection("pg-cdc-src", "api_cdc_src");
  std::string dst = PgConnection("pg-cdc-dst", "api_cdc_dst");
  auto s = Post("/api/v1/streams", {{"name", "api-cdc"},
                                    {"mode", "load+cdc"},
                                    {"source", {{"connection", src}}},
                                    {"target", {{"connection", dst}}},
                                    {"verify", false}});
  ASSERT_EQ(s.first, 201) << s.second.dump();
  auto run =
      Post("/api/v1/streams/" + s.second["id"].get<std::string>() + "/start", json::object());
  ASSERT_EQ(run.first, 202) << run.second.dump();
  const std::string rid = run.second["id"];
  auto count = [&]() -> int64_t {
    auto r = env->pg->Query("SELECT count(*) FROM t", "api_cdc_dst");
    return r.ok() && !r->empty() && (*r)[0][0] ? std::stoll(*(*r)[0][0]) : -1;
  };
  auto wait_for = [&](int64_t n) {
    for (int i = 0; i < 300 && count() != n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return count();
  };
  EXPECT_EQ(wait_for(100), 100);
  ASSERT_TRUE(env->pg->Exec("INSERT INTO t VALUES (101, 'live')", "api_cdc_src").ok());
  EXPECT_EQ(wait_for(101), 101);
  auto pause = Post("/api/v1/runs/" + rid + "/pause", json::object());
  EXPECT_EQ(pause.first, 200) << pause.second.dump();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(env->pg->Exec("INSERT INTO t VALUES (102, 'while paused')", "api_cdc_src").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(count(), 101);  // held back while paused
  auto resume = Post("/api/v1/runs/" + rid + "/resume", json::object());
  EXPECT_EQ(resume.first, 200) << resume.second.dump();
  EXPECT_EQ(wait_for(102), 102);
  // Live stats carry the change stream's lag and applied changes.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  auto live = Get("/api/v1/runs/" + rid);
  EXPECT_TRUE(live.second["cdcLagMs"].is_number_integer()) << live.second.dump();
  EXPECT_GE(live.second.value("cdcChanges", 0), 2) << live.second.dump();
  ASSERT_TRUE(env->pg->Exec("INSERT INTO t VALUES (103, 'before stop')", "api_cdc_src").ok());
  auto stop = Post("/api/v1/runs/" + rid + "/stop", json::object());
  EXPECT_EQ(stop.first, 200) << stop.second.dump();
  int events = 0;
  std::string state = WatchProgress(rid, &events);
  EXPECT_TRUE(state == "stopped" || state == "completed") << state;
  EXPECT_EQ(wait_for(103), 103);  // the stop drained: the last change arrived
  auto usage = Get("/api/v1/usage");
  int64_t cdc_seconds = 0;
  for (const auto& d : usage.second["items"]) cdc_seconds += d.value("cdcSeconds", 0);
  EXPECT_GT(cdc_seconds, 0) << usage.second.dump();
  (void)env->pg->Exec(
      "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
      "WHERE slot_name = 'dbs_api_cdc' AND NOT active");
}

TEST_F(ApiTest, LogStreamFilters) {
  auto c = Client();
  std::atomic<bool> got{false};
  std::thread th([&] {
    c.Get("/api/v1/logs/stream?level=warn&service=api-test", Auth(),
          [&](const char* data, size_t n) {
            std::string s(data, n);
            if (s.find("sse-marker-warn") != std::string::npos) got = true;
            EXPECT_EQ(s.find("sse-marker-info"), std::string::npos);
            return !got.load();
          });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int i = 0; i < 20 && !got.load(); ++i) {
    Log(LogLevel::kInfo, "test", "sse-marker-info");
    Log(LogLevel::kWarn, "test", "sse-marker-warn");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  th.join();
  EXPECT_TRUE(got.load());
}

TEST_F(ApiTest, Burst) {
  std::atomic<int> ok{0}, bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 20; ++t) {
    threads.emplace_back([&] {
      auto c = Client();
      for (int i = 0; i < 25; ++i) {
        auto r = c.Get("/api/v1/streams?limit=5", Auth());
        (r && r->status == 200 ? ok : bad)++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 500);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(Get("/api/v1/health").first, 200);
}

TEST_F(ApiTest, SecretsNeverLeak) {
  // Make sure at least one connection with the secret exists.
  if (Get("/api/v1/connections?search=pg-dst").second["total"] == 0)
    PgConnection("pg-dst", "postgres");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (const auto& e : std::filesystem::directory_iterator(env->dir)) {
    std::ifstream f(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    EXPECT_EQ(ss.str().find(kSecret), std::string::npos) << e.path() << " holds the password";
  }
  {
    std::lock_guard<std::mutex> l(env->seen_mu);
    EXPECT_EQ(env->seen.find(kSecret), std::string::npos) << "a response held the password";
    EXPECT_EQ(env->seen.find("S3cr3t-pw-Zq9%21x"), std::string::npos);
  }
  // Logs (as published on NATS and kept by the API).
  auto c = Client();
  std::string logs;
  auto rs = Get("/api/v1/streams?search=api-load");
  if (!rs.second["items"].empty() && !rs.second["items"][0]["lastRun"].is_null()) {
    logs = Get("/api/v1/runs/" + rs.second["items"][0]["lastRun"]["id"].get<std::string>())
               .second["recentLogs"]
               .dump();
    EXPECT_FALSE(logs.empty());
  }
  EXPECT_EQ(logs.find(kSecret), std::string::npos);
}

// A TLS client key given inline (PEM text, as the connection form's upload sends it) is a
// credential: kept in the secrets store, never returned (a marker says a key is stored), kept
// when the form is saved again with the marker, replaced by a new key, dropped when the body
// names none, copied by clone and deleted with the connection.
TEST_F(ApiTest, InlineSslKeyIsASecret) {
  auto StoredKey = [](const std::string& id) {
    auto k = env->secrets->Get(api::SslKeyRef(id));
    return k.ok() ? *k : "(none: " + k.status().ToString() + ")";
  };
  const std::string token = "Zq9InlineKeyBody";
  const std::string pem =
      "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN" + token + "\n-----END PRIVATE KEY-----\n";
  const std::string pem2 =
      "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN" + token + "Two\n-----END PRIVATE KEY-----\n";
  const std::string ca =
      "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n";
  (void)env->pg->Exec("DO $$BEGIN CREATE ROLE apitest LOGIN SUPERUSER PASSWORD '" +
                      std::string(kSecret) + "'; EXCEPTION WHEN duplicate_object THEN NULL; END$$");
  json form = {{"name", "pg-tls"},       {"engine", "postgres"},
               {"host", "127.0.0.1"},    {"port", env->pg->port()},
               {"user", "apitest"},      {"password", kSecret},
               {"database", "postgres"}, {"ssl", {{"mode", "disable"}, {"ca", ca}, {"key", pem}}}};
  auto created = Post("/api/v1/connections", form);
  ASSERT_EQ(created.first, 201) << created.second.dump();
  const std::string id = created.second["id"];
  EXPECT_EQ(created.second["ssl"]["key"], api::kStoredSslKey);
  EXPECT_EQ(created.second["ssl"]["ca"], ca);  // a certificate is public
  auto stored = env->secrets->Get(api::SslKeyRef(id));
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(*stored, pem);
  auto rec = env->config->GetConnection(id);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->spec.dump().find(token), std::string::npos) << "the config store holds the key";

  auto got = Get("/api/v1/connections/" + id);
  EXPECT_EQ(got.first, 200);
  EXPECT_EQ(got.second["ssl"]["key"], api::kStoredSslKey);
  EXPECT_EQ(got.second.dump().find(token), std::string::npos);
  auto list = Get("/api/v1/connections?search=pg-tls");
  EXPECT_EQ(list.second["total"], 1);
  EXPECT_EQ(list.second.dump().find(token), std::string::npos);
  // The stored key is used: the connection still works (sslmode=disable: the key is not read).
  EXPECT_EQ(Post("/api/v1/connections/" + id + "/ping", json::object()).second["ok"], true);

  // The form saved again as it was loaded (the marker, no password): the key stays.
  json again = got.second;
  for (const char* k : {"id", "hasPassword", "createdAt", "updatedAt"}) again.erase(k);
  again["name"] = "pg-tls-renamed";
  auto put = Send("PUT", "/api/v1/connections/" + id, again.dump());
  ASSERT_EQ(put.first, 200) << put.second.dump();
  EXPECT_EQ(put.second["ssl"]["key"], api::kStoredSslKey);
  EXPECT_EQ(StoredKey(id), pem);
  EXPECT_EQ(put.second["hasPassword"], true);

  // A clone has its own copy of the key.
  auto clone = Post("/api/v1/connections/" + id + "/clone", {{"name", "pg-tls-clone"}});
  ASSERT_EQ(clone.first, 201) << clone.second.dump();
  const std::string cid = clone.second["id"];
  EXPECT_EQ(clone.second["ssl"]["key"], api::kStoredSslKey);
  EXPECT_EQ(StoredKey(cid), pem);

  // A new key replaces it; a body without a key drops it.
  again["ssl"]["key"] = pem2;
  put = Send("PUT", "/api/v1/connections/" + id, again.dump());
  ASSERT_EQ(put.first, 200) << put.second.dump();
  EXPECT_EQ(put.second["ssl"]["key"], api::kStoredSslKey);
  EXPECT_EQ(StoredKey(id), pem2);
  again["ssl"].erase("key");
  put = Send("PUT", "/api/v1/connections/" + id, again.dump());
  ASSERT_EQ(put.first, 200) << put.second.dump();
  EXPECT_FALSE(put.second["ssl"].contains("key")) << put.second.dump();
  EXPECT_EQ(env->secrets->Get(api::SslKeyRef(id)).status().code(), StatusCode::kNotFound);
  // The marker then keeps nothing: refused with its field, as for a new connection and a test.
  again["ssl"]["key"] = api::kStoredSslKey;
  put = Send("PUT", "/api/v1/connections/" + id, again.dump());
  EXPECT_EQ(put.first, 400);
  EXPECT_EQ(put.second["error"]["fields"][0]["field"], "ssl.key") << put.second.dump();
  json fresh = form;
  fresh["name"] = "pg-tls-marker";
  fresh["ssl"]["key"] = api::kStoredSslKey;
  EXPECT_EQ(Post("/api/v1/connections", fresh).first, 400);
  fresh.erase("name");
  EXPECT_EQ(Post("/api/v1/connections/test", fresh).first, 400);
  // A key given as a file path on the server is not a secret: returned as it is.
  again["ssl"]["key"] = "/etc/ssl/private/client.key";
  put = Send("PUT", "/api/v1/connections/" + id, again.dump());
  ASSERT_EQ(put.first, 200) << put.second.dump();
  EXPECT_EQ(put.second["ssl"]["key"], "/etc/ssl/private/client.key");

  // Deleting the clone deletes its key.
  EXPECT_EQ(Send("DELETE", "/api/v1/connections/" + cid, "").first, 204);
  EXPECT_EQ(env->secrets->Get(api::SslKeyRef(cid)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Send("DELETE", "/api/v1/connections/" + id, "").first, 204);

  // Never in a response or a file of the data folder (the secrets file is sealed).
  {
    std::lock_guard<std::mutex> l(env->seen_mu);
    EXPECT_EQ(env->seen.find(token), std::string::npos) << "a response held the key";
  }
  for (const auto& e : std::filesystem::directory_iterator(env->dir)) {
    std::ifstream f(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    EXPECT_EQ(ss.str().find(token), std::string::npos) << e.path() << " holds the key";
  }
}

// A load stopped through the API mid-load is abandoned in the target like a failed run: the
// target table keeps its old rows and no shadow schema stays (issue 11 section 3).
TEST_F(ApiTest, LoadStoppedMidwayLeavesTheTargetAsItWas) {
  ASSERT_TRUE(env->pg->CreateDatabase("api_stop_src").ok());
  ASSERT_TRUE(env->pg->CreateDatabase("api_stop_dst").ok());
  ASSERT_TRUE(env->pg
                  ->Exec("CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t SELECT "
                         "g, repeat('x', 200) FROM generate_series(1, 400000) g",
                         "api_stop_src")
                  .ok());
  ASSERT_TRUE(env->pg
                  ->Exec("CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t SELECT "
                         "g, 'old' FROM generate_series(1, 10) g",
                         "api_stop_dst")
                  .ok());
  std::string src = PgConnection("pg-stop-src", "api_stop_src");
  std::string dst = PgConnection("pg-stop-dst", "api_stop_dst");
  auto s = Post("/api/v1/streams", {{"name", "api-stop"},
                                    {"source", {{"connection", src}}},
                                    {"target", {{"connection", dst}}},
                                    {"schemaPolicy", "drop_and_recreate"}});
  ASSERT_EQ(s.first, 201) << s.second.dump();
  auto run =
      Post("/api/v1/streams/" + s.second["id"].get<std::string>() + "/start", json::object());
  ASSERT_EQ(run.first, 202) << run.second.dump();
  const std::string rid = run.second["id"];
  // Stop once some bundles are committed into the shadow copy.
  int64_t n = 0;
  for (int i = 0; i < 600 && n == 0; ++i) {
    auto q = env->pg->Query("SELECT count(*) FROM _dbstreams.applied", "api_stop_dst");
    n = q.ok() && !q->empty() && (*q)[0][0] ? std::stoll(*(*q)[0][0]) : 0;
    if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(n, 0);
  auto stop = Post("/api/v1/runs/" + rid + "/stop", json::object());
  ASSERT_EQ(stop.first, 200) << stop.second.dump();
  int events = 0;
  const std::string state = WatchProgress(rid, &events);
  EXPECT_TRUE(state == "stopped" || state == "failed") << state;
  auto gone = [&] {
    auto q =
        env->pg->Query("SELECT count(*) FROM pg_namespace WHERE nspname LIKE '\\_dbs\\_shadow\\_%'",
                       "api_stop_dst");
    return q.ok() && !q->empty() && (*q)[0][0] && *(*q)[0][0] == "0";
  };
  for (int i = 0; i < 100 && !gone(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone()) << "the stopped run's shadow schema stayed";
  auto rows = env->pg->Query("SELECT count(*), min(v), max(v) FROM t", "api_stop_dst");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ((*rows)[0][0].value_or(""), "10");
  EXPECT_EQ((*rows)[0][1].value_or(""), "old");
}

TEST_F(ApiTest, KilledReaderFailsTheRun) {
  // A source table locked by this test: the reader blocks reading it until it is killed.
  ASSERT_TRUE(env->pg->CreateDatabase("api_lock_src").ok());
  ASSERT_TRUE(env->pg->CreateDatabase("api_lock_dst").ok());
  ASSERT_TRUE(
      env->pg->Exec("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)", "api_lock_src")
          .ok());
  std::string src = PgConnection("pg-lock-src", "api_lock_src");
  std::string dst = PgConnection("pg-lock-dst", "api_lock_dst");
  auto s = Post("/api/v1/streams", {{"name", "api-kill"},
                                    {"source", {{"connection", src}}},
                                    {"target", {{"connection", dst}}},
                                    {"verify", false}});
  ASSERT_EQ(s.first, 201) << s.second.dump();
  ConnectionConfig lc;
  lc.engine = Engine::kPostgres;
  lc.port = env->pg->port();
  lc.user = env->pg->user();
  lc.password = env->pg->password();
  lc.database = "api_lock_src";
  auto lock = pg::Connect(lc);
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  ASSERT_TRUE(
      pg::Command(lock->get(), "BEGIN; LOCK TABLE t IN ACCESS EXCLUSIVE MODE", "lock").ok());

  // Replace the in-process reader by a stream-reader --service child process.
  env->reader->Shutdown();
  pid_t child = fork();
  if (child == 0) {
    execl(DBS_READER_BIN, DBS_READER_BIN, "--service", "--service-id", "reader-child", "--nats-url",
          env->nats_url.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(child, 0);
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    seen = Get("/api/v1/services").second.dump().find("reader-child") != std::string::npos;
  }
  ASSERT_TRUE(seen);
  // The in-process reader is gone from the queue group; wait until its heartbeat expired so
  // the child is the only live reader.
  std::this_thread::sleep_for(std::chrono::milliseconds(5500));
  auto run =
      Post("/api/v1/streams/" + s.second["id"].get<std::string>() + "/start", json::object());
  ASSERT_EQ(run.first, 202) << run.second.dump();
  EXPECT_EQ(run.second["readerService"], "reader-child");
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  int events = 0;
  const std::string rid = run.second["id"];
  std::string state = WatchProgress(rid, &events);
  EXPECT_EQ(state, "failed");
  auto st = Get("/api/v1/runs/" + rid);
  EXPECT_NE(st.second["error"].get<std::string>().find("reader service reader-child stopped "
                                                       "sending heartbeats"),
            std::string::npos)
      << st.second.dump();
  pg::RollbackQuietly(lock->get());
  // The writer task of the failed run is stopped by a stop of the (finished) run? It is not
  // active any more: stop returns 409.
  EXPECT_EQ(Post("/api/v1/runs/" + rid + "/stop", json::object()).first, 409);
  // Stop the orphaned writer task so the suite ends cleanly.
  std::string stop = json({{"op", "stop"}, {"run", rid}, {"force", true}}).dump();
  (void)env->api_conn->PublishCore("dbs.control.run", stop);
}

// Runs last (it replaces the in-process services by child processes): the writer that
// completed a verified load dies while verifying it (test hook DBS_TEST_VERIFY_PAUSE_SECONDS);
// the run fails saying so instead of staying "running" for ever.
TEST_F(ApiTest, VerifierDyingFailsTheRun) {
  ASSERT_TRUE(env->pg->CreateDatabase("api_verif_src").ok());
  ASSERT_TRUE(env->pg->CreateDatabase("api_verif_dst").ok());
  ASSERT_TRUE(env->pg
                  ->Exec("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t SELECT g FROM "
                         "generate_series(1, 1000) g",
                         "api_verif_src")
                  .ok());
  std::string src = PgConnection("pg-verif-src", "api_verif_src");
  std::string dst = PgConnection("pg-verif-dst", "api_verif_dst");
  auto s = Post("/api/v1/streams", {{"name", "api-verif"},
                                    {"source", {{"connection", src}}},
                                    {"target", {{"connection", dst}}}});
  ASSERT_EQ(s.first, 201) << s.second.dump();
  if (env->reader) env->reader->Shutdown();
  env->writer->Shutdown();
  auto spawn = [&](const char* bin, const char* id, const char* env_var) {
    pid_t child = fork();
    if (child == 0) {
      if (env_var != nullptr) putenv(const_cast<char*>(env_var));
      execl(bin, bin, "--service", "--service-id", id, "--nats-url", env->nats_url.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    return child;
  };
  pid_t reader = spawn(DBS_READER_BIN, "reader-verif", nullptr);
  pid_t writer = spawn(DBS_WRITER_BIN, "writer-verif", "DBS_TEST_VERIFY_PAUSE_SECONDS=300");
  ASSERT_GT(reader, 0);
  ASSERT_GT(writer, 0);
  // Only the children hold the queue groups once the in-process services' heartbeats expired.
  std::this_thread::sleep_for(std::chrono::milliseconds(5500));
  auto run =
      Post("/api/v1/streams/" + s.second["id"].get<std::string>() + "/start", json::object());
  ASSERT_EQ(run.first, 202) << run.second.dump();
  const std::string rid = run.second["id"];
  // Swapped in: the writer is now in its verification pause.
  bool swapped = false;
  for (int i = 0; i < 600 && !swapped; ++i) {
    auto q = env->pg->Query(
        "SELECT count(*) FROM _dbstreams.dbstreams_state WHERE tbl = '' AND "
        "phase = 'swapped'",
        "api_verif_dst");
    swapped = q.ok() && !q->empty() && (*q)[0][0] && *(*q)[0][0] == "1";
    if (!swapped) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(swapped);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // the status is read each 1 s
  EXPECT_EQ(Get("/api/v1/runs/" + rid).second.value("state", ""), "running");
  kill(writer, SIGKILL);
  waitpid(writer, nullptr, 0);
  int events = 0;
  EXPECT_EQ(WatchProgress(rid, &events), "failed");
  auto st = Get("/api/v1/runs/" + rid);
  EXPECT_NE(st.second.value("error", "").find("while it verified the load"), std::string::npos)
      << st.second.dump();
  kill(reader, SIGTERM);
  waitpid(reader, nullptr, 0);
}

}  // namespace
}  // namespace dbs

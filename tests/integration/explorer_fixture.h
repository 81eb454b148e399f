// The explorer tests' fixture: an API server on the fixture's shared NATS, PostgreSQL and
// MariaDB, with two API keys, saved connections and a few tables.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "api/api_server.h"
#include "bus/jetstream.h"
#include "store/config_store.h"
#include "store/secrets_store.h"
#include "support/servers.h"

namespace dbs::testing {

struct ExplorerEnv {
  std::string dir;
  std::unique_ptr<bus::NatsConnection> nats;
  std::unique_ptr<store::ConfigStore> config;
  std::unique_ptr<store::SecretsStore> secrets;
  std::unique_ptr<api::ApiServer> server;
  std::string key, other_key;
  std::string pg_id, my_id;
  std::string file_root;  // DBS_FILE_ROOTS of the server: data/scores.csv, data/events.jsonl

  static ExplorerEnv*& Instance() {
    static ExplorerEnv* e = nullptr;
    return e;
  }
  static ExplorerEnv* Get() { return Instance(); }

  static void SetUp() {
    auto* env = new ExplorerEnv();
    Instance() = env;
    auto nats = SharedServers::Nats();
    ASSERT_TRUE(nats.ok()) << nats.status().ToString();
    auto pg = SharedServers::Postgres();
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    auto my = SharedServers::MariaDb();
    ASSERT_TRUE(my.ok()) << my.status().ToString();
    env->dir = "/tmp/dbstreams-test/explorer-" + std::to_string(getpid());
    std::filesystem::create_directories(env->dir);
    bus::NatsOptions no;
    no.url = (*nats)->url();
    no.name = "explorer-test";
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
    auto other = api::CreateApiKey(env->config.get(), "other");
    ASSERT_TRUE(other.ok());
    env->other_key = *other;
    // The server's file root, with a CSV and a JSON Lines file.
    env->file_root = std::filesystem::canonical(env->dir).string() + "/files";
    std::filesystem::create_directories(env->file_root + "/data");
    std::ofstream(env->file_root + "/data/scores.csv") << "id,score\n1,9.5\n2,7.25\n3,8\n";
    std::ofstream(env->file_root + "/data/events.jsonl")
        << "{\"id\": 1, \"kind\": \"login\"}\n{\"id\": 3, \"kind\": \"logout\"}\n";
    std::ofstream(env->file_root + "/top.csv") << "a\n1\n";
    setenv("DBS_FILE_ROOTS", env->file_root.c_str(), 1);
    api::ApiServerOptions ao;
    ao.port = 0;
    auto s = api::ApiServer::Start(ao, env->nats.get(), env->config.get(), env->secrets.get());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    env->server = std::move(s).value();

    ASSERT_TRUE((*pg)->Exec("DROP DATABASE IF EXISTS explorer_db").ok());
    ASSERT_TRUE((*pg)->CreateDatabase("explorer_db").ok());
    ASSERT_TRUE((*pg)
                    ->Exec("CREATE TABLE accounts (id int PRIMARY KEY, owner text NOT NULL, "
                           "balance int);"
                           "INSERT INTO accounts VALUES (1, 'Ada', 100), (2, 'Grace', 200), "
                           "(3, 'Linus', NULL)",
                           "explorer_db")
                    .ok());
    ASSERT_TRUE(
        (*my)->Exec("DROP DATABASE IF EXISTS explorer_db; CREATE DATABASE explorer_db").ok());
    ASSERT_TRUE(
        (*my)
            ->Exec("CREATE TABLE accounts (id int PRIMARY KEY, owner varchar(50) NOT NULL, "
                   "balance int);"
                   "INSERT INTO accounts VALUES (1, 'Ada', 100), (2, 'Grace', 200), "
                   "(3, 'Linus', NULL);"
                   "CREATE TABLE numbers (id int PRIMARY KEY); SET SESSION "
                   "max_recursive_iterations = 100000;"
                   "INSERT INTO numbers WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 "
                   "FROM s WHERE n < 2500) SELECT n FROM s",
                   "explorer_db")
            .ok());
    auto r =
        env->Post("/api/v1/connections", {{"name", "pg"}, {"url", (*pg)->UrlFor("explorer_db")}});
    ASSERT_EQ(r.first, 201) << r.second.dump();
    env->pg_id = r.second["id"];
    r = env->Post("/api/v1/connections", {{"name", "my"}, {"url", (*my)->url() + "explorer_db"}});
    ASSERT_EQ(r.first, 201) << r.second.dump();
    env->my_id = r.second["id"];
  }

  static void TearDown() {
    ExplorerEnv* env = Instance();
    if (env == nullptr) return;
    if (env->server) env->server->Stop();
    std::error_code ec;
    std::filesystem::remove_all(env->dir, ec);
    delete env;
    Instance() = nullptr;
  }

  std::pair<int, nlohmann::json> Post(const std::string& path, const nlohmann::json& body,
                                      const std::string& with_key = "") {
    httplib::Client c("127.0.0.1", server->port());
    c.set_read_timeout(60, 0);
    auto r = c.Post(path.c_str(), {{"X-API-Key", with_key.empty() ? key : with_key}}, body.dump(),
                    "application/json");
    if (!r) return {-1, nlohmann::json()};
    return {r->status, nlohmann::json::parse(r->body, nullptr, false)};
  }
  std::pair<int, nlohmann::json> Get(const std::string& path, const std::string& with_key = "") {
    httplib::Client c("127.0.0.1", server->port());
    c.set_read_timeout(60, 0);
    auto r = c.Get(path.c_str(), {{"X-API-Key", with_key.empty() ? key : with_key}});
    if (!r) return {-1, nlohmann::json()};
    return {r->status, nlohmann::json::parse(r->body, nullptr, false)};
  }
  std::pair<int, nlohmann::json> Delete(const std::string& path, const std::string& with_key = "") {
    httplib::Client c("127.0.0.1", server->port());
    auto r = c.Delete(path.c_str(), {{"X-API-Key", with_key.empty() ? key : with_key}});
    if (!r) return {-1, nlohmann::json()};
    return {r->status, nlohmann::json::parse(r->body, nullptr, false)};
  }
};

}  // namespace dbs::testing

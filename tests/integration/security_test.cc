// Security of the bus, the data folder and the logs (docs/security.md), against real servers:
// the embedded nats-server refuses strangers and enforces each role's permissions, with or
// without TLS; no NATS message carries a password (a sniffer subscribed to ">" during a load
// and a change stream started through the API); a finished load leaves no data on the bus; a
// data folder copied without its master key reveals no secret; text logs escape control
// characters; and `dbstreams serve` runs a load end to end on its authenticated bus.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nats/nats.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/api_server.h"
#include "bus/embedded_nats.h"
#include "bus/jetstream.h"
#include "bus/protocol.h"
#include "config/stream_config.h"
#include "core/logging.h"
#include "run/local_run.h"
#include "service/service_agent.h"
#include "store/config_store.h"
#include "store/data_dir.h"
#include "store/secrets_store.h"
#include "support/servers.h"
#include "support/subprocess.h"

namespace dbs {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::SharedServers;

// A password no fixture uses: searched for on the bus and in files.
const char kSecret[] = "Bus-Secret-7Qz!pw";

std::string TempDir(const std::string& name) {
  std::string d =
      std::string(testing::kTestRoot) + "/security-" + std::to_string(getpid()) + "-" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Every byte of every regular file under `dir`.
std::string AllBytes(const std::string& dir) {
  std::string all;
  std::error_code ec;
  for (auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    std::ifstream f(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    all += ss.str();
  }
  return all;
}

// Files and folders under `dir` (and `dir` itself) that others can read or write.
std::vector<std::string> OpenToOthers(const std::string& dir) {
  std::vector<std::string> bad;
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && (st.st_mode & 077) != 0) bad.push_back(dir);
  std::error_code ec;
  for (auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (::lstat(e.path().c_str(), &st) == 0 && !S_ISLNK(st.st_mode) && (st.st_mode & 077) != 0) {
      bad.push_back(e.path().string());
    }
  }
  return bad;
}

Result<std::unique_ptr<bus::NatsConnection>> Connect(bus::NatsOptions o) {
  o.max_reconnects = 0;
  o.connect_timeout = std::chrono::milliseconds(3000);
  return bus::NatsConnection::Connect(o);
}

// Counts what arrives on a subscription.
struct Seen {
  std::mutex mu;
  std::vector<std::string> data;
  size_t count() {
    std::lock_guard<std::mutex> l(mu);
    return data.size();
  }
};

std::unique_ptr<bus::Subscription> Watch(bus::NatsConnection* c, const std::string& subject,
                                         Seen* seen) {
  auto s = bus::Subscription::Create(c, subject, [seen](std::string_view, std::string_view d) {
    std::lock_guard<std::mutex> l(seen->mu);
    seen->data.emplace_back(d);
  });
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

TEST(SecurityBus, EmbeddedServerRefusesStrangersAndEnforcesRoles) {
  const std::string dir = TempDir("roles");
  bus::EmbeddedNatsOptions eo;
  eo.data_dir = dir + "/nats";
  auto server = bus::EmbeddedNats::Start(eo);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const bus::EmbeddedNats& s = **server;

  bus::NatsOptions anon;
  anon.url = s.url();
  EXPECT_FALSE(Connect(anon).ok()) << "a client without credentials was accepted";
  bus::NatsOptions wrong = s.ClientOptions(bus::NatsRole::kReader, "wrong");
  wrong.password = "not-the-password";
  EXPECT_FALSE(Connect(wrong).ok()) << "a wrong password was accepted";

  auto api = Connect(s.ClientOptions(bus::NatsRole::kApi, "api"));
  auto reader = Connect(s.ClientOptions(bus::NatsRole::kReader, "reader"));
  auto writer = Connect(s.ClientOptions(bus::NatsRole::kWriter, "writer"));
  ASSERT_TRUE(api.ok() && reader.ok() && writer.ok());

  // A writer listens for control messages: only the API's arrive. A reader cannot listen to
  // everything, nor to the writers' control subject.
  Seen writer_control, reader_everything, reader_writer_control, api_everything;
  auto w1 = Watch(writer->get(), bus::SubjectControl("run"), &writer_control);
  auto r1 = Watch(reader->get(), ">", &reader_everything);
  auto r2 = Watch(reader->get(), bus::SubjectControl("writer"), &reader_writer_control);
  auto a1 = Watch(api->get(), ">", &api_everything);
  for (auto* c : {api->get(), reader->get(), writer->get()}) {
    ASSERT_TRUE(c->Flush(std::chrono::seconds(2)).ok());
  }
  ASSERT_TRUE((*reader)->PublishCore(bus::SubjectControl("run"), "forged by a reader").ok());
  ASSERT_TRUE((*writer)->PublishCore(bus::SubjectControl("run"), "forged by a writer").ok());
  ASSERT_TRUE((*api)->PublishCore(bus::SubjectControl("run"), "from the api").ok());
  ASSERT_TRUE((*api)->PublishCore(bus::SubjectControl("writer"), "start from the api").ok());
  ASSERT_TRUE((*reader)->PublishCore("dbs.s1.data.0", "row data").ok());
  for (auto* c : {api->get(), reader->get(), writer->get()}) {
    ASSERT_TRUE(c->Flush(std::chrono::seconds(2)).ok());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  {
    std::lock_guard<std::mutex> l(writer_control.mu);
    ASSERT_EQ(writer_control.data.size(), 1u);
    EXPECT_EQ(writer_control.data[0], "from the api");
  }
  EXPECT_EQ(reader_everything.count(), 0u);
  EXPECT_EQ(reader_writer_control.count(), 0u);
  EXPECT_EQ(api_everything.count(), 0u);

  // The server's folder is private and holds no password (only bcrypt hashes).
  EXPECT_EQ(OpenToOthers(eo.data_dir), std::vector<std::string>{});
  const std::string files = AllBytes(eo.data_dir);
  EXPECT_NE(files.find("$2a$"), std::string::npos);
  for (auto role : {bus::NatsRole::kApi, bus::NatsRole::kReader, bus::NatsRole::kWriter}) {
    EXPECT_EQ(files.find(s.users().For(role).password), std::string::npos)
        << bus::RoleName(role) << "'s password is in the server's files";
  }
  fs::remove_all(dir);
}

TEST(SecurityBus, EmbeddedServerWithTls) {
  const std::string dir = TempDir("tls");
  bus::EmbeddedNatsOptions eo;
  eo.data_dir = dir + "/nats";
  eo.tls = "on";
  auto server = bus::EmbeddedNats::Start(eo);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_EQ((*server)->url().rfind("tls://", 0), 0u) << (*server)->url();
  auto ok = Connect((*server)->ClientOptions(bus::NatsRole::kApi, "tls"));
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
  // Plain text is refused, and so is TLS that does not trust the server's certificate.
  bus::NatsOptions plain = (*server)->ClientOptions(bus::NatsRole::kApi, "plain");
  plain.url = "nats://127.0.0.1:" + std::to_string((*server)->port());
  plain.tls = false;
  plain.ca_file.clear();
  EXPECT_FALSE(Connect(plain).ok());
  bus::NatsOptions untrusted = (*server)->ClientOptions(bus::NatsRole::kApi, "untrusted");
  untrusted.ca_file.clear();
  EXPECT_FALSE(Connect(untrusted).ok());
  // Beyond loopback, TLS is the default.
  EXPECT_TRUE(bus::IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(bus::IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(bus::IsLoopbackHost("::1"));
  EXPECT_FALSE(bus::IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(bus::IsLoopbackHost("0.0.0.0"));
  fs::remove_all(dir);
}

// busEncryption: the rows of a load and of a change stream cross the bus encrypted (a sniffer
// on ">" finds none of them), and arrive exactly. The same stream without it shows the rows in
// clear, so the sniffer does see them when they are there.
TEST(SecurityBus, RowDataEncryptedOnTheBus) {
  auto nats = SharedServers::Nats();
  ASSERT_TRUE(nats.ok()) << nats.status().ToString();
  auto pg = SharedServers::Postgres();
  ASSERT_TRUE(pg.ok()) << pg.status().ToString();
  ASSERT_TRUE((*pg)->CreateDatabase("enc_src").ok());
  ASSERT_TRUE((*pg)
                  ->Exec("CREATE TABLE t (id int PRIMARY KEY, v text);"
                         "INSERT INTO t SELECT g, 'clear-row-' || md5(g::text) "
                         "FROM generate_series(1, 2000) g",
                         "enc_src")
                  .ok());
  bus::NatsOptions no;
  no.url = (*nats)->url();
  auto sniff_conn = Connect(no);
  ASSERT_TRUE(sniff_conn.ok());
  std::mutex mu;
  std::string sniffed;
  auto sniffer = bus::Subscription::Create(sniff_conn->get(), "dbs.>",
                                           [&](std::string_view, std::string_view d) {
                                             std::lock_guard<std::mutex> l(mu);
                                             sniffed.append(d);
                                           });
  ASSERT_TRUE(sniffer.ok());
  ASSERT_TRUE((*sniff_conn)->Flush(std::chrono::seconds(2)).ok());
  const std::string url = "postgres://" + (*pg)->user() + ":" + (*pg)->password() +
                          "@127.0.0.1:" + std::to_string((*pg)->port()) + "/";
  const std::string data_dir = TempDir("enc");
  for (bool encrypted : {false, true}) {
    const std::string dst = encrypted ? "enc_dst_on" : "enc_dst_off";
    ASSERT_TRUE((*pg)->CreateDatabase(dst).ok());
    auto config = ParseStreamConfig({{"name", encrypted ? "enc-on" : "enc-off"},
                                     {"mode", "load+cdc"},
                                     {"source", url + "enc_src"},
                                     {"target", url + dst},
                                     {"busEncryption", encrypted},
                                     {"cdc", {{"slotName", encrypted ? "enc_on" : "enc_off"}}}});
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    {
      std::lock_guard<std::mutex> l(mu);
      sniffed.clear();
    }
    std::atomic<bool> done{false};
    LocalRunOptions o;
    o.writers = 1;
    o.nats_url = (*nats)->url();
    o.data_dir = data_dir;
    o.drain_when = [&] { return done.load(); };
    Result<RunSummary> result = Status::Internal("not run");
    std::thread run([&] { result = RunLocal(*config, o, nullptr); });
    auto src_count = (*pg)->Query("SELECT count(*) FROM t", "enc_src");
    ASSERT_TRUE(src_count.ok() && !src_count->empty() && (*src_count)[0][0]);
    const std::string loaded = *(*src_count)[0][0];
    for (int i = 0; i < 300; ++i) {
      auto r = (*pg)->Query("SELECT count(*) FROM public.t", dst);
      if (r.ok() && !r->empty() && (*r)[0][0] && *(*r)[0][0] == loaded) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE((*pg)
                    ->Exec("INSERT INTO t VALUES (" + std::string(encrypted ? "2002" : "2001") +
                               ", 'clear-change-row')",
                           "enc_src")
                    .ok());
    done.store(true);
    run.join();
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    for (const TableVerdict& v : result->verdicts) EXPECT_TRUE(v.match()) << v.source_table;
    EXPECT_GT(result->cdc.applied, 0u);
    std::lock_guard<std::mutex> l(mu);
    if (encrypted) {
      EXPECT_EQ(sniffed.find("clear-row-"), std::string::npos) << "a loaded row crossed in clear";
      EXPECT_EQ(sniffed.find("clear-change-row"), std::string::npos)
          << "a changed row crossed in clear";
    } else {
      EXPECT_NE(sniffed.find("clear-row-"), std::string::npos);
      EXPECT_NE(sniffed.find("clear-change-row"), std::string::npos);
    }
    (void)(*pg)->Exec(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
        "WHERE slot_name IN ('enc_on', 'enc_off') AND NOT active");
  }
  fs::remove_all(data_dir);
}

TEST(SecurityStore, LeakedDataFolderWithoutTheKeyRevealsNoSecret) {
  const std::string root = TempDir("leak");
  const std::string data = root + "/data";
  const std::string keys = root + "/keys";
  fs::create_directories(data + "/old");
  fs::create_directories(keys);
  { std::ofstream(data + "/old/loose.txt") << "made by an older version"; }
  ::chmod((data + "/old").c_str(), 0755);
  ::chmod((data + "/old/loose.txt").c_str(), 0644);
  ::chmod(data.c_str(), 0755);
  ASSERT_TRUE(store::PrepareDataDir(data).ok());
  EXPECT_EQ(OpenToOthers(data), std::vector<std::string>{});

  const std::string key_file = keys + "/master.key";
  {
    auto s = store::SecretsStore::Open("file", data, "", key_file);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE((*s)->Put("connection/c1/password", kSecret).ok());
  }
  EXPECT_FALSE(fs::exists(data + "/master.key"));
  EXPECT_TRUE(fs::exists(key_file));
  std::ifstream kf(key_file);
  std::string key_hex;
  kf >> key_hex;
  const std::string files = AllBytes(data);
  EXPECT_EQ(files.find(kSecret), std::string::npos);
  EXPECT_EQ(files.find(key_hex), std::string::npos);
  EXPECT_EQ(OpenToOthers(data), std::vector<std::string>{});

  // Someone with only the folder: a new key (or none) does not open the secrets.
  auto other = store::SecretsStore::Open("file", data, std::string(64, 'a'));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kCorruption) << other.status().ToString();
  // With the key, the secret is there.
  auto mine = store::SecretsStore::Open("file", data, "", key_file);
  ASSERT_TRUE(mine.ok());
  auto got = (*mine)->Get("connection/c1/password");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, kSecret);
  fs::remove_all(root);
}

TEST(SecurityLogs, TextLogEscapesControlCharacters) {
  LogRecord r;
  r.component = "api";
  r.message = "connection created";
  r.fields = {F("name", std::string("evil\n2026-01-01T00:00:00.000Z INFO  [api] forged")),
              F("nul", std::string("a\0b", 3)), F("quote", "say \"hi\"\\")};
  const std::string line = LogRecordToText(r);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(line.find('\0'), std::string::npos);
  EXPECT_NE(line.find("name=\"evil\\n2026"), std::string::npos) << line;
  EXPECT_NE(line.find("nul=\"a\\x00b\""), std::string::npos) << line;
  EXPECT_NE(line.find("quote=\"say \\\"hi\\\"\\\\\""), std::string::npos) << line;
}

// The API and in-process services on the fixture's open NATS server, with a sniffer on ">"
// that keeps every subject, header and payload.
class SecurityApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto nats = SharedServers::Nats();
    ASSERT_TRUE(nats.ok()) << nats.status().ToString();
    auto pg = SharedServers::Postgres();
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    pg_ = *pg;
    nats_url_ = (*nats)->url();
    dir_ = TempDir("api");
    auto conn = [&](const char* name) {
      bus::NatsOptions o;
      o.url = nats_url_;
      o.name = name;
      o.request_timeout = std::chrono::seconds(30);
      auto c = bus::NatsConnection::Connect(o);
      EXPECT_TRUE(c.ok()) << c.status().ToString();
      return c.ok() ? std::move(c).value() : nullptr;
    };
    api_conn_ = conn("api");
    reader_conn_ = conn("reader");
    writer_conn_ = conn("writer");
    sniff_conn_ = conn("sniffer");
    ASSERT_TRUE(api_conn_ && reader_conn_ && writer_conn_ && sniff_conn_);
    ASSERT_EQ(natsConnection_Subscribe(&sniff_, sniff_conn_->raw(), ">", &OnSniff, this), NATS_OK);
    ASSERT_TRUE(sniff_conn_->Flush(std::chrono::seconds(2)).ok());
    auto cs = store::ConfigStore::Open("sqlite", dir_);
    ASSERT_TRUE(cs.ok());
    config_ = std::move(cs).value();
    auto ss = store::SecretsStore::Open("file", dir_, "");
    ASSERT_TRUE(ss.ok());
    secrets_ = std::move(ss).value();
    service::AgentOptions ro, wo;
    ro.kind = "reader";
    wo.kind = "writer";
    ro.id = "sec-reader";
    wo.id = "sec-writer";
    ro.heartbeat_interval = wo.heartbeat_interval = std::chrono::milliseconds(1000);
    auto r = service::ServiceAgent::Start(reader_conn_.get(), ro);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    reader_ = std::move(r).value();
    auto w = service::ServiceAgent::Start(writer_conn_.get(), wo);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    writer_ = std::move(w).value();
    auto key = api::CreateApiKey(config_.get(), "test");
    ASSERT_TRUE(key.ok());
    key_ = *key;
    api::ApiServerOptions ao;
    ao.port = 0;
    // Short, so the orchestrator's checks (heartbeats, the stream status on the bus) start
    // within the tests' runs.
    ao.orchestrator.heartbeat_timeout = std::chrono::milliseconds(3000);
    auto s = api::ApiServer::Start(ao, api_conn_.get(), config_.get(), secrets_.get());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
    for (int i = 0; i < 50; ++i) {
      auto h = Call("GET", "/api/v1/health", json());
      if (h.first == 200 && h.second.value("readers", 0) >= 1 && h.second.value("writers", 0) >= 1)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (reader_) reader_->Shutdown();
    if (writer_) writer_->Shutdown();
    if (sniff_ != nullptr) {
      natsSubscription_Unsubscribe(sniff_);
      natsSubscription_Destroy(sniff_);
    }
    fs::remove_all(dir_);
  }

  static void OnSniff(natsConnection*, natsSubscription*, natsMsg* m, void* self_ptr) {
    auto* self = static_cast<SecurityApiTest*>(self_ptr);
    std::string rec = natsMsg_GetSubject(m);
    rec += '\n';
    const char** keys = nullptr;
    int n = 0;
    if (natsMsgHeader_Keys(m, &keys, &n) == NATS_OK) {
      for (int i = 0; i < n; ++i) {
        const char* v = nullptr;
        rec += std::string(keys[i]) + ": ";
        if (natsMsgHeader_Get(m, keys[i], &v) == NATS_OK && v != nullptr) rec += v;
        rec += '\n';
      }
      free(keys);
    }
    rec.append(natsMsg_GetData(m), static_cast<size_t>(natsMsg_GetDataLength(m)));
    {
      std::lock_guard<std::mutex> l(self->sniff_mu_);
      self->sniffed_ += rec + "\n\n";
      ++self->sniffed_count_;
    }
    natsMsg_Destroy(m);
  }

  std::pair<int, json> Call(const std::string& method, const std::string& path, const json& body) {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(60, 0);
    httplib::Headers h = {{"X-API-Key", key_}};
    httplib::Result r = method == "GET" ? c.Get(path.c_str(), h)
                                        : c.Post(path.c_str(), h, body.dump(), "application/json");
    if (!r) return {-1, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  std::string PgConnection(const std::string& name, const std::string& db) {
    (void)pg_->Exec("DO $$BEGIN CREATE ROLE sectest LOGIN SUPERUSER PASSWORD '" +
                    std::string(kSecret) + "'; EXCEPTION WHEN duplicate_object THEN NULL; END$$");
    auto r = Call("POST", "/api/v1/connections",
                  {{"name", name},
                   {"engine", "postgres"},
                   {"host", "127.0.0.1"},
                   {"port", pg_->port()},
                   {"user", "sectest"},
                   {"password", kSecret},
                   {"database", db}});
    EXPECT_EQ(r.first, 201) << r.second.dump();
    return r.second.value("id", "");
  }
  std::string WaitForState(const std::string& run, const std::set<std::string>& states,
                           int seconds = 120) {
    std::string state;
    for (int i = 0; i < seconds * 10; ++i) {
      state = Call("GET", "/api/v1/runs/" + run, json()).second.value("state", "");
      if (states.count(state)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return state;
  }
  int64_t Count(const std::string& db, const std::string& table) {
    auto r = pg_->Query("SELECT count(*) FROM " + table, db);
    return r.ok() && !r->empty() && (*r)[0][0] ? std::stoll(*(*r)[0][0]) : -1;
  }

  testing::PostgresServer* pg_ = nullptr;
  std::string nats_url_, dir_, key_;
  std::unique_ptr<bus::NatsConnection> api_conn_, reader_conn_, writer_conn_, sniff_conn_;
  natsSubscription* sniff_ = nullptr;
  std::unique_ptr<store::ConfigStore> config_;
  std::unique_ptr<store::SecretsStore> secrets_;
  std::unique_ptr<service::ServiceAgent> reader_, writer_;
  std::unique_ptr<api::ApiServer> server_;
  std::mutex sniff_mu_;
  std::string sniffed_;
  size_t sniffed_count_ = 0;
};

TEST_F(SecurityApiTest, NoPasswordOnTheBusAndNoDataLeftAfterALoad) {
  ASSERT_TRUE(pg_->CreateDatabase("sec_src").ok());
  ASSERT_TRUE(pg_->CreateDatabase("sec_dst").ok());
  ASSERT_TRUE(pg_->Exec("CREATE TABLE t (id int PRIMARY KEY, v text);"
                        "INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 3000) g",
                        "sec_src")
                  .ok());
  const std::string src = PgConnection("sec-src", "sec_src");
  const std::string dst = PgConnection("sec-dst", "sec_dst");

  // A load.
  auto s = Call("POST", "/api/v1/streams",
                {{"name", "sec-load"},
                 {"source", {{"connection", src}}},
                 {"target", {{"connection", dst}}},
                 {"verify", false}});
  ASSERT_EQ(s.first, 201) << s.second.dump();
  auto run = Call("POST", "/api/v1/streams/" + s.second["id"].get<std::string>() + "/start",
                  json::object());
  ASSERT_EQ(run.first, 202) << run.second.dump();
  EXPECT_EQ(WaitForState(run.second["id"], {"completed", "failed", "stopped"}), "completed")
      << Call("GET", "/api/v1/runs/" + run.second["id"].get<std::string>(), json()).second.dump();
  EXPECT_EQ(Count("sec_dst", "public.t"), 3000);
  // Issue 11 (run states): a finished run keeps its final figures (read from the store once the
  // orchestrator forgot the run).
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto done = Call("GET", "/api/v1/runs/" + run.second["id"].get<std::string>(), json());
  ASSERT_EQ(done.second["tables"].size(), 1u) << done.second.dump();
  EXPECT_EQ(done.second["tables"][0].value("rowsWritten", 0), 3000) << done.second.dump();
  EXPECT_EQ(done.second.value("rows", 0), 3000);
  EXPECT_GT(done.second.value("rowsPerSecond", 0.0), 0.0) << done.second.dump();

  // The finished load's data is removed from the bus.
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !api_conn_->GetLastMessage(bus::JetStreamName("sec-load"), bus::SubjectPlan("sec-load"))
                .ok();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "the JetStream stream of a finished load is still there";

  // A change stream.
  ASSERT_TRUE(pg_->CreateDatabase("sec_cdc_dst").ok());
  const std::string dst2 = PgConnection("sec-cdc-dst", "sec_cdc_dst");
  auto c = Call("POST", "/api/v1/streams",
                {{"name", "sec-cdc"},
                 {"mode", "load+cdc"},
                 {"source", {{"connection", src}}},
                 {"target", {{"connection", dst2}}},
                 {"verify", false}});
  ASSERT_EQ(c.first, 201) << c.second.dump();
  auto crun = Call("POST", "/api/v1/streams/" + c.second["id"].get<std::string>() + "/start",
                   json::object());
  ASSERT_EQ(crun.first, 202) << crun.second.dump();
  const std::string rid = crun.second["id"];
  for (int i = 0; i < 300 && Count("sec_cdc_dst", "public.t") != 3000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(pg_->Exec("INSERT INTO t VALUES (3001, 'live')", "sec_src").ok());
  for (int i = 0; i < 300 && Count("sec_cdc_dst", "public.t") != 3001; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(Count("sec_cdc_dst", "public.t"), 3001);
  EXPECT_EQ(Call("POST", "/api/v1/runs/" + rid + "/stop", json::object()).first, 200);
  EXPECT_NE(WaitForState(rid, {"completed", "stopped", "failed"}), "failed");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto cdc_done = Call("GET", "/api/v1/runs/" + rid, json());
  EXPECT_GE(cdc_done.second.value("cdcChanges", 0), 1) << cdc_done.second.dump();
  (void)pg_->Exec(
      "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
      "WHERE slot_name = 'dbs_sec_cdc' AND NOT active");

  std::lock_guard<std::mutex> l(sniff_mu_);
  EXPECT_GT(sniffed_count_, 20u);
  // The starts went out, with sealed credentials, and the rows travelled.
  EXPECT_NE(sniffed_.find("dbs.control.reader\n"), std::string::npos);
  EXPECT_NE(sniffed_.find("\"sealed\""), std::string::npos);
  EXPECT_NE(sniffed_.find("dbs.sec-cdc.cdc."), std::string::npos);
  EXPECT_EQ(sniffed_.find(kSecret), std::string::npos) << "a password travelled on the bus";
}

// busEncryption through the API: the key is the stream's, kept in the secrets store and sent
// sealed; rows cross the bus encrypted; /metrics reports the bus's storage.
TEST_F(SecurityApiTest, EncryptedStreamThroughTheApi) {
  ASSERT_TRUE(pg_->CreateDatabase("encapi_src").ok());
  ASSERT_TRUE(pg_->CreateDatabase("encapi_dst").ok());
  ASSERT_TRUE(pg_->Exec("CREATE TABLE t (id int PRIMARY KEY, v text);"
                        "INSERT INTO t SELECT g, 'api-clear-row-' || md5(g::text) "
                        "FROM generate_series(1, 1000) g",
                        "encapi_src")
                  .ok());
  const std::string src = PgConnection("encapi-src", "encapi_src");
  const std::string dst = PgConnection("encapi-dst", "encapi_dst");
  json body = {{"name", "encapi"},
               {"source", {{"connection", src}}},
               {"target", {{"connection", dst}}},
               {"busEncryption", true}};
  body["busKey"] = std::string(64, 'a');
  EXPECT_EQ(Call("POST", "/api/v1/streams", body).first, 400);  // a key is never stored
  body.erase("busKey");
  auto s = Call("POST", "/api/v1/streams", body);
  ASSERT_EQ(s.first, 201) << s.second.dump();
  const std::string sid = s.second["id"];
  auto run = Call("POST", "/api/v1/streams/" + sid + "/start", json::object());
  ASSERT_EQ(run.first, 202) << run.second.dump();
  EXPECT_EQ(WaitForState(run.second["id"], {"completed", "failed", "stopped"}), "completed");
  EXPECT_EQ(Count("encapi_dst", "public.t"), 1000);
  // Issue 11 (honest verification): a load started through the API is verified by default and
  // the result is part of the run.
  auto verified = Call("GET", "/api/v1/runs/" + run.second["id"].get<std::string>(), json());
  ASSERT_TRUE(verified.second["verification"].is_object()) << verified.second.dump();
  EXPECT_EQ(verified.second["verification"].value("ok", false), true) << verified.second.dump();
  EXPECT_EQ(verified.second["verification"]["tables"].size(), 1u);
  auto key = secrets_->Get("stream/" + sid + "/bus-key");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  {
    std::lock_guard<std::mutex> l(sniff_mu_);
    EXPECT_EQ(sniffed_.find("api-clear-row-"), std::string::npos) << "a row crossed in clear";
    EXPECT_EQ(sniffed_.find(*key), std::string::npos) << "the bus key crossed in clear";
  }
  httplib::Client c("127.0.0.1", server_->port());
  auto m = c.Get("/metrics", {{"X-API-Key", key_}});
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("dbs_bus_storage_bytes "), std::string::npos) << m->body;
}

// Issue 11 (run states): a change stream started again after a drained stop follows its own
// run's state, not the status the earlier run left on the bus; it stays running, can be paused
// and stopped, and no second run of it can start meanwhile.
TEST_F(SecurityApiTest, RestartedChangeStreamReportsItsRealState) {
  ASSERT_TRUE(pg_->CreateDatabase("rs_src").ok());
  ASSERT_TRUE(pg_->CreateDatabase("rs_dst").ok());
  ASSERT_TRUE(pg_->Exec("CREATE TABLE t (id int PRIMARY KEY, v text);"
                        "INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 100) g",
                        "rs_src")
                  .ok());
  const std::string src = PgConnection("rs-src", "rs_src");
  const std::string dst = PgConnection("rs-dst", "rs_dst");
  auto s = Call("POST", "/api/v1/streams",
                {{"name", "rs-cdc"},
                 {"mode", "load+cdc"},
                 {"source", {{"connection", src}}},
                 {"target", {{"connection", dst}}},
                 {"verify", false}});
  ASSERT_EQ(s.first, 201) << s.second.dump();
  const std::string start = "/api/v1/streams/" + s.second["id"].get<std::string>() + "/start";
  auto wait_count = [&](int64_t n) {
    // A deadline a busy CI machine meets (the count is the check, not the time).
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (Count("rs_dst", "public.t") != n && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return Count("rs_dst", "public.t");
  };
  auto run1 = Call("POST", start, json::object());
  ASSERT_EQ(run1.first, 202) << run1.second.dump();
  EXPECT_EQ(wait_count(100), 100);
  EXPECT_EQ(
      Call("POST", "/api/v1/runs/" + run1.second["id"].get<std::string>() + "/stop", json::object())
          .first,
      200);
  EXPECT_NE(WaitForState(run1.second["id"], {"completed", "stopped", "failed"}), "failed");

  auto run2 = Call("POST", start, json::object());
  ASSERT_EQ(run2.first, 202) << run2.second.dump();
  const std::string rid = run2.second["id"];
  // Once its services took it (starting, however long that is on a busy machine), the run is
  // running, and stays so: not "completed" from an earlier run's status.
  EXPECT_EQ(WaitForState(rid, {"running", "completed", "stopped", "failed"}), "running");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(Call("GET", "/api/v1/runs/" + rid, json()).second.value("state", ""), "running");
  ASSERT_TRUE(pg_->Exec("INSERT INTO t VALUES (101, 'after the restart')", "rs_src").ok());
  EXPECT_EQ(wait_count(101), 101);
  EXPECT_EQ(Call("POST", start, json::object()).first, 409);  // never two runs at once
  EXPECT_EQ(Call("POST", "/api/v1/runs/" + rid + "/pause", json::object()).first, 200);
  EXPECT_EQ(Call("POST", "/api/v1/runs/" + rid + "/resume", json::object()).first, 200);
  EXPECT_EQ(Call("GET", "/api/v1/runs/" + rid, json()).second.value("state", ""), "running");
  ASSERT_TRUE(pg_->Exec("INSERT INTO t VALUES (102, 'before the stop')", "rs_src").ok());
  EXPECT_EQ(Call("POST", "/api/v1/runs/" + rid + "/stop", json::object()).first, 200);
  EXPECT_NE(WaitForState(rid, {"completed", "stopped", "failed"}), "failed");
  EXPECT_EQ(wait_count(102), 102);
  (void)pg_->Exec(
      "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
      "WHERE slot_name = 'dbs_rs_cdc' AND NOT active");
}

// `dbstreams serve` end to end: the embedded bus refuses strangers, the data folder is private
// and a load runs through the authenticated bus.
TEST(SecurityServe, ServeRunsALoadOnItsAuthenticatedBus) {
  auto pg = SharedServers::Postgres();
  ASSERT_TRUE(pg.ok()) << pg.status().ToString();
  const std::string root = TempDir("serve");
  const std::string data = root + "/data";
  const std::string log = root + "/serve.log";
  testing::SpawnSpec spec;
  spec.argv = {DBS_DBSTREAMS_BIN,
               "serve",
               "--data-dir",
               data,
               "--port",
               "0",
               "--nats-port",
               "0",
               "--master-key-file",
               root + "/master.key"};
  spec.log_path = log;
  spec.death_signal = SIGTERM;
  auto pid = testing::Spawn(spec);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  std::string out, api_url, nats_url, key;
  for (int i = 0; i < 300 && key.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream f(log);
    std::stringstream ss;
    ss << f.rdbuf();
    out = ss.str();
    std::smatch m;
    if (std::regex_search(out, m, std::regex("API: +(http://[^ \\n]+)/api/v1"))) api_url = m[1];
    if (std::regex_search(out, m, std::regex("NATS JetStream: +(nats://[^ \\n]+)")))
      nats_url = m[1];
    if (std::regex_search(out, m, std::regex("keep it\\): ([A-Za-z0-9_]+)"))) key = m[1];
  }
  ASSERT_FALSE(key.empty()) << out;
  bus::NatsOptions anon;
  anon.url = nats_url;
  EXPECT_FALSE(Connect(anon).ok()) << "serve's NATS accepted a client without credentials";

  ASSERT_TRUE((*pg)->CreateDatabase("serve_src").ok());
  ASSERT_TRUE((*pg)->CreateDatabase("serve_dst").ok());
  ASSERT_TRUE((*pg)
                  ->Exec("CREATE TABLE t (id int PRIMARY KEY, v text);"
                         "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 2000) g",
                         "serve_src")
                  .ok());
  httplib::Client c(api_url);
  c.set_read_timeout(60, 0);
  httplib::Headers h = {{"X-API-Key", key}};
  auto post = [&](const std::string& path, const json& body) {
    auto r = c.Post(path.c_str(), h, body.dump(), "application/json");
    return r ? std::make_pair(r->status, json::parse(r->body, nullptr, false))
             : std::make_pair(-1, json());
  };
  auto conn = [&](const std::string& name, const std::string& db) {
    auto r = post("/api/v1/connections", {{"name", name},
                                          {"engine", "postgres"},
                                          {"host", "127.0.0.1"},
                                          {"port", (*pg)->port()},
                                          {"user", (*pg)->user()},
                                          {"password", (*pg)->password()},
                                          {"database", db}});
    EXPECT_EQ(r.first, 201) << r.second.dump();
    return r.second.value("id", "");
  };
  const std::string src = conn("src", "serve_src"), dst = conn("dst", "serve_dst");
  // Services announce themselves within a heartbeat or two.
  std::pair<int, json> run;
  auto s = post("/api/v1/streams", {{"name", "serve-load"},
                                    {"source", {{"connection", src}}},
                                    {"target", {{"connection", dst}}}});
  ASSERT_EQ(s.first, 201) << s.second.dump();
  for (int i = 0; i < 50; ++i) {
    run = post("/api/v1/streams/" + s.second["id"].get<std::string>() + "/start", json::object());
    if (run.first != 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(run.first, 202) << run.second.dump();
  std::string state;
  for (int i = 0; i < 600; ++i) {
    auto r = c.Get(("/api/v1/runs/" + run.second["id"].get<std::string>()).c_str(), h);
    if (r) state = json::parse(r->body, nullptr, false).value("state", "");
    if (state == "completed" || state == "failed") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(state, "completed");
  auto rows = (*pg)->Query("SELECT count(*) FROM public.t", "serve_dst");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0][0].value_or(""), "2000");

  // Private folder; no password in it; a warning only when the key is inside (it is not here).
  EXPECT_EQ(OpenToOthers(data), std::vector<std::string>{});
  EXPECT_EQ(AllBytes(data).find((*pg)->password()), std::string::npos);
  EXPECT_EQ(out.find("the master key is in the data folder"), std::string::npos);
  const int status = testing::TerminateChild(*pid, SIGTERM, std::chrono::seconds(30));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << testing::DescribeWaitStatus(status) << "\n"
      << out;
  fs::remove_all(root);
}

}  // namespace
}  // namespace dbs

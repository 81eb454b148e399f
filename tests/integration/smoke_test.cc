// Integration smoke test: the real-server fixture starts NATS (JetStream), MariaDB and
// PostgreSQL, each answers, JetStream publishing/consuming works through dbs::bus, restarts keep
// data, the servers stop cleanly, and a killed owner leaves no servers behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <nats/nats.h>

#include "bus/jetstream.h"
#include "support/servers.h"
#include "support/subprocess.h"

namespace dbs::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

#define ASSERT_OK(expr)                                       \
  do {                                                        \
    const ::dbs::Status st_ = (expr);                         \
    ASSERT_TRUE(st_.ok()) << #expr << ": " << st_.ToString(); \
  } while (0)

#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                  \
  auto DBS_CONCAT_(r_, __LINE__) = (expr);                               \
  ASSERT_TRUE(DBS_CONCAT_(r_, __LINE__).ok())                            \
      << #expr << ": " << DBS_CONCAT_(r_, __LINE__).status().ToString(); \
  lhs = std::move(DBS_CONCAT_(r_, __LINE__)).value()

// The only cell of a one-row, one-column result ("<NULL>" for NULL).
std::string Cell(const Rows& rows, size_t row = 0, size_t col = 0) {
  if (rows.size() <= row || rows[row].size() <= col) return "<missing>";
  return rows[row][col].value_or("<NULL>");
}

std::unique_ptr<bus::NatsConnection> ConnectOrDie(const std::string& url) {
  bus::NatsOptions o;
  o.url = url;
  o.name = "integration-smoke";
  Result<std::unique_ptr<bus::NatsConnection>> c = bus::NatsConnection::Connect(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c).value() : nullptr;
}

// Folders /tmp/dbstreams-test/<owner>-*.
std::vector<std::string> DirsOf(pid_t owner) {
  std::vector<std::string> out;
  std::error_code ec;
  const std::string prefix = std::to_string(owner) + "-";
  for (const fs::directory_entry& e : fs::directory_iterator(kTestRoot, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().string());
  }
  return out;
}

// Publishes one message with a de-duplication id twice, then reads it through a durable pull
// consumer and acks it.
void PublishAndConsumeOnce(bus::NatsConnection* conn, const std::string& stream, int replicas) {
  bus::StreamSpec spec;
  spec.name = stream;
  spec.subjects = {stream + ".>"};
  spec.replicas = replicas;
  ASSERT_OK(conn->EnsureStream(spec));
  ASSERT_OK(conn->EnsureStream(spec));  // idempotent

  const std::string subject = stream + ".orders";
  ASSERT_OK_AND_ASSIGN(bus::PublishAck first,
                       conn->Publish(subject, "payload-1", "msg-1", {{"X-Test", "yes"}}));
  EXPECT_EQ(first.sequence, 1u);
  EXPECT_FALSE(first.duplicate);
  ASSERT_OK_AND_ASSIGN(bus::PublishAck again, conn->Publish(subject, "payload-1", "msg-1"));
  EXPECT_TRUE(again.duplicate);
  EXPECT_EQ(again.sequence, 1u);

  bus::ConsumerSpec cs;
  cs.stream = stream;
  cs.durable = "reader";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<bus::PullConsumer> consumer,
                       bus::PullConsumer::Create(conn, cs));
  ASSERT_OK_AND_ASSIGN(auto msgs, consumer->Fetch(10, seconds(5)));
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0]->subject(), subject);
  EXPECT_EQ(msgs[0]->data(), "payload-1");
  EXPECT_EQ(msgs[0]->header("Nats-Msg-Id"), "msg-1");
  EXPECT_EQ(msgs[0]->header("X-Test"), "yes");
  EXPECT_EQ(msgs[0]->header("Absent"), "");
  EXPECT_EQ(msgs[0]->stream_sequence(), 1u);
  EXPECT_EQ(msgs[0]->num_delivered(), 1u);
  ASSERT_OK(msgs[0]->Ack());
  ASSERT_OK(conn->Flush(seconds(5)));
  ASSERT_OK_AND_ASSIGN(auto none, consumer->Fetch(10, milliseconds(300)));
  EXPECT_TRUE(none.empty());

  // The durable outlives the local subscription: a new one continues after the ack.
  consumer.reset();
  ASSERT_OK_AND_ASSIGN(consumer, bus::PullConsumer::Create(conn, cs));
  ASSERT_OK_AND_ASSIGN(bus::PublishAck second, conn->Publish(subject, "payload-2", "msg-2"));
  EXPECT_EQ(second.sequence, 2u);
  ASSERT_OK_AND_ASSIGN(msgs, consumer->Fetch(10, seconds(5)));
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0]->data(), "payload-2");
  ASSERT_OK(msgs[0]->Ack());
}

TEST(SmokeTest, ServersAnswerAndStopCleanly) {
  // Started concurrently: the fixture forks on its own launcher thread.
  auto nats_f = std::async(std::launch::async, [] { return NatsServer::Start(); });
  auto maria_f = std::async(std::launch::async, [] { return MariaDbServer::Start(); });
  auto pg_f = std::async(std::launch::async, [] { return PostgresServer::Start(); });
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NatsServer> nats, nats_f.get());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<MariaDbServer> maria, maria_f.get());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PostgresServer> pg, pg_f.get());

  // MariaDB: versions and the settings CDC relies on.
  ASSERT_OK_AND_ASSIGN(Rows v, maria->Query("SELECT VERSION()"));
  EXPECT_NE(Cell(v).find("MariaDB"), std::string::npos) << Cell(v);
  ASSERT_OK_AND_ASSIGN(
      Rows vars,
      maria->Query("SELECT @@binlog_format, @@log_bin, @@binlog_row_image, @@binlog_row_metadata, "
                   "@@character_set_server, @@collation_server, @@gtid_strict_mode, "
                   "@@log_slave_updates, @@local_infile, @@max_allowed_packet, @@server_id, "
                   "@@innodb_flush_log_at_trx_commit, @@sync_binlog, @@bind_address, "
                   "@@skip_name_resolve"));
  EXPECT_EQ(Cell(vars, 0, 0), "ROW");
  EXPECT_EQ(Cell(vars, 0, 1), "1");
  EXPECT_EQ(Cell(vars, 0, 2), "FULL");
  EXPECT_EQ(Cell(vars, 0, 3), "FULL");
  EXPECT_EQ(Cell(vars, 0, 4), "utf8mb4");
  EXPECT_EQ(Cell(vars, 0, 5), "utf8mb4_unicode_ci");
  EXPECT_EQ(Cell(vars, 0, 6), "1");
  EXPECT_EQ(Cell(vars, 0, 7), "1");
  EXPECT_EQ(Cell(vars, 0, 8), "1");
  EXPECT_EQ(Cell(vars, 0, 9), std::to_string(256 << 20));
  EXPECT_EQ(Cell(vars, 0, 10), "1");
  EXPECT_EQ(Cell(vars, 0, 11), "2");
  EXPECT_EQ(Cell(vars, 0, 12), "0");
  EXPECT_EQ(Cell(vars, 0, 13), "127.0.0.1");
  EXPECT_EQ(Cell(vars, 0, 14), "1");
  // Multi-statement Exec/Query, NULLs and non-ASCII text.
  const std::string text = "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x98\x80";  // héllo ✓ 😀
  ASSERT_OK(
      maria->Exec("CREATE DATABASE smoke; CREATE TABLE smoke.t (id INT PRIMARY KEY, "
                  "v TEXT, n INT); INSERT INTO smoke.t VALUES (1, '" +
                  text + "', NULL)"));
  ASSERT_OK_AND_ASSIGN(Rows rows, maria->Query("SELECT 0; SELECT v, n FROM t", "smoke"));
  EXPECT_EQ(Cell(rows, 0, 0), text);
  EXPECT_EQ(Cell(rows, 0, 1), "<NULL>");
  Status bad = maria->Exec("SELEKT 1");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("1064"), std::string::npos) << bad.ToString();
  EXPECT_EQ(maria->url(), "mysql://root:" + maria->password() +
                              "@127.0.0.1:" + std::to_string(maria->port()) + "/");

  // PostgreSQL.
  ASSERT_OK_AND_ASSIGN(v, pg->Query("SELECT version()"));
  EXPECT_NE(Cell(v).find("PostgreSQL"), std::string::npos) << Cell(v);
  ASSERT_OK_AND_ASSIGN(v, pg->Query("SHOW wal_level"));
  EXPECT_EQ(Cell(v), "logical");
  ASSERT_OK_AND_ASSIGN(v, pg->Query("SHOW server_encoding"));
  EXPECT_EQ(Cell(v), "UTF8");
  ASSERT_OK_AND_ASSIGN(
      v, pg->Query("SELECT current_setting('max_replication_slots'), "
                   "current_setting('max_wal_senders'), current_setting('fsync'), "
                   "current_setting('listen_addresses'), current_setting('shared_buffers')"));
  EXPECT_EQ(Cell(v, 0, 0), "20");
  EXPECT_EQ(Cell(v, 0, 1), "20");
  EXPECT_EQ(Cell(v, 0, 2), "off");
  EXPECT_EQ(Cell(v, 0, 3), "127.0.0.1");
  EXPECT_EQ(Cell(v, 0, 4), "128MB");
  ASSERT_OK(pg->CreateDatabase("smoke db"));
  ASSERT_OK(
      pg->Exec("CREATE TABLE t (id int PRIMARY KEY, v text, n int); "
               "INSERT INTO t VALUES (1, '" +
                   text + "', NULL)",
               "smoke db"));
  ASSERT_OK_AND_ASSIGN(rows, pg->Query("SELECT 0; SELECT v, n FROM t", "smoke db"));
  EXPECT_EQ(Cell(rows, 0, 0), text);
  EXPECT_EQ(Cell(rows, 0, 1), "<NULL>");
  bad = pg->Exec("SELEKT 1");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("42601"), std::string::npos) << bad.ToString();
  EXPECT_EQ(pg->url(), "postgres://postgres:" + pg->password() +
                           "@127.0.0.1:" + std::to_string(pg->port()) + "/postgres");
  // A replication slot with pgoutput works (wal_level=logical).
  ASSERT_OK_AND_ASSIGN(
      v, pg->Query("SELECT slot_name FROM pg_create_logical_replication_slot('s', 'pgoutput')"));
  EXPECT_EQ(Cell(v), "s");
  ASSERT_OK(pg->Exec("SELECT pg_drop_replication_slot('s')"));

  // NATS JetStream through dbs::bus.
  {
    std::unique_ptr<bus::NatsConnection> conn = ConnectOrDie(nats->url());
    ASSERT_NE(conn, nullptr);
    EXPECT_TRUE(conn->connected());
    EXPECT_EQ(conn->max_payload(), 1 << 20);
    PublishAndConsumeOnce(conn.get(), "SMOKE", 1);
  }

  // Stop: ports closed, folders gone.
  const int ports[] = {nats->port(), nats->monitor_port(), maria->port(), pg->port()};
  const std::string dirs[] = {nats->dir(), maria->dir(), pg->dir()};
  for (const std::string& d : dirs) EXPECT_TRUE(fs::is_directory(d)) << d;
  nats.reset();
  maria.reset();
  pg.reset();
  for (int port : ports) EXPECT_FALSE(CanConnect(port)) << "port " << port << " still open";
  for (const std::string& d : dirs) EXPECT_FALSE(fs::exists(d)) << d << " not removed";
}

TEST(RestartTest, MariaDbKeepsData) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<MariaDbServer> s, MariaDbServer::Start());
  const int port = s->port();
  ASSERT_OK(
      s->Exec("CREATE DATABASE r; CREATE TABLE r.t (id INT PRIMARY KEY, v TEXT);"
              "INSERT INTO r.t VALUES (1, 'before restart')"));
  ASSERT_OK(s->Restart());
  EXPECT_EQ(s->port(), port);
  ASSERT_OK_AND_ASSIGN(Rows rows, s->Query("SELECT v FROM r.t WHERE id = 1"));
  EXPECT_EQ(Cell(rows), "before restart");

  // A crash: committed rows survive InnoDB recovery; the binlog position moves on.
  ASSERT_OK(s->Exec("INSERT INTO r.t VALUES (2, 'before kill')"));
  s->Kill();
  EXPECT_FALSE(s->running());
  EXPECT_FALSE(CanConnect(port));
  ASSERT_OK(s->Restart());
  ASSERT_OK_AND_ASSIGN(rows, s->Query("SELECT COUNT(*) FROM r.t"));
  EXPECT_EQ(Cell(rows), "2");

  ASSERT_OK(s->Stop());
  EXPECT_FALSE(s->running());
  EXPECT_FALSE(s->Query("SELECT 1").ok());
  ASSERT_OK(s->Restart());  // also starts a stopped server
  ASSERT_OK_AND_ASSIGN(rows, s->Query("SELECT COUNT(*) FROM r.t"));
  EXPECT_EQ(Cell(rows), "2");
}

TEST(RestartTest, PostgresKeepsData) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PostgresServer> s, PostgresServer::Start());
  const int port = s->port();
  ASSERT_OK(
      s->Exec("CREATE TABLE t (id int PRIMARY KEY, v text);"
              "INSERT INTO t VALUES (1, 'before restart')"));
  ASSERT_OK(s->Restart());
  EXPECT_EQ(s->port(), port);
  ASSERT_OK_AND_ASSIGN(Rows rows, s->Query("SELECT v FROM t WHERE id = 1"));
  EXPECT_EQ(Cell(rows), "before restart");

  // synchronous_commit=off: a commit reaches the WAL on disk within wal_writer_delay (200 ms),
  // so a crash right after it may lose it. CHECKPOINT (after the commit) flushes the WAL.
  ASSERT_OK(s->Exec("INSERT INTO t VALUES (2, 'before kill')"));
  ASSERT_OK(s->Exec("CHECKPOINT"));
  s->Kill();
  EXPECT_FALSE(s->running());
  EXPECT_FALSE(CanConnect(port));
  ASSERT_OK(s->Restart());  // crash recovery
  ASSERT_OK_AND_ASSIGN(rows, s->Query("SELECT count(*) FROM t"));
  EXPECT_EQ(Cell(rows), "2");
}

TEST(RestartTest, NatsKeepsStreamMessages) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NatsServer> s, NatsServer::Start());
  const int port = s->port();
  std::unique_ptr<bus::NatsConnection> conn = ConnectOrDie(s->url());
  ASSERT_NE(conn, nullptr);
  bus::StreamSpec spec;
  spec.name = "KEEP";
  spec.subjects = {"keep.>"};
  ASSERT_OK(conn->EnsureStream(spec));
  ASSERT_OK(conn->Publish("keep.a", "one", "id-1").status());
  bus::ConsumerSpec cs;
  cs.stream = "KEEP";
  cs.durable = "keeper";
  ASSERT_OK(bus::PullConsumer::Create(conn.get(), cs).status());

  ASSERT_OK(s->Restart());
  EXPECT_EQ(s->port(), port);
  ASSERT_OK(conn->Publish("keep.a", "two", "id-2").status());  // the client reconnected
  s->Kill();
  ASSERT_OK(s->Restart());

  // The old connection reconnects by itself; a fresh one must work too.
  std::unique_ptr<bus::NatsConnection> fresh = ConnectOrDie(s->url());
  ASSERT_NE(fresh, nullptr);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<bus::PullConsumer> consumer,
                       bus::PullConsumer::Create(fresh.get(), cs));
  ASSERT_OK_AND_ASSIGN(auto msgs, consumer->Fetch(10, seconds(5)));
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0]->data(), "one");
  EXPECT_EQ(msgs[1]->data(), "two");
  // De-duplication state survives too (within the window).
  ASSERT_OK_AND_ASSIGN(bus::PublishAck dup, fresh->Publish("keep.a", "one", "id-1"));
  EXPECT_TRUE(dup.duplicate);
}

// Deliveries that arrive after a fetch returned (its request was still being served) are
// taken by the next fetch, each once, and a fetch never returns more than its batch. libnats
// 3.4.1's own fetch wrote past the end of its array in exactly this case (more than half a
// batch already pending), which corrupted the writers' heaps; PullConsumer pulls by itself.
TEST(NatsTest, PullConsumerTakesLateDeliveriesOnce) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NatsServer> s, NatsServer::Start());
  std::unique_ptr<bus::NatsConnection> conn = ConnectOrDie(s->url());
  ASSERT_NE(conn, nullptr);
  bus::StreamSpec spec;
  spec.name = "LATE";
  spec.subjects = {"late.>"};
  ASSERT_OK(conn->EnsureStream(spec));
  constexpr int kMessages = 3000;
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_OK(conn->PublishAsync("late.a", std::string(2000, static_cast<char>('a' + i % 26)),
                                 "late-" + std::to_string(i)));
  }
  ASSERT_OK(conn->WaitPublished(seconds(30)));
  bus::ConsumerSpec cs;
  cs.stream = "LATE";
  cs.durable = "late";
  cs.max_ack_pending = 100000;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<bus::PullConsumer> consumer,
                       bus::PullConsumer::Create(conn.get(), cs));
  std::set<uint64_t> seen;
  int fetches = 0;
  while (static_cast<int>(seen.size()) < kMessages && fetches < 2000) {
    // Alternate tiny waits (the request outlives the fetch: its deliveries arrive later) with
    // large batches that start with those late deliveries pending.
    const bool tiny = fetches % 2 == 0;
    const int batch = tiny ? 200 : 128;
    ASSERT_OK_AND_ASSIGN(auto msgs, consumer->Fetch(batch, milliseconds(tiny ? 1 : 2000)));
    ++fetches;
    ASSERT_LE(static_cast<int>(msgs.size()), batch);
    for (auto& m : msgs) {
      EXPECT_TRUE(seen.insert(m->stream_sequence()).second) << m->stream_sequence();
      EXPECT_EQ(m->num_delivered(), 1u);
      ASSERT_OK(m->Ack());
    }
  }
  EXPECT_EQ(static_cast<int>(seen.size()), kMessages);
  EXPECT_EQ(*seen.begin(), 1u);
  EXPECT_EQ(*seen.rbegin(), static_cast<uint64_t>(kMessages));
  ASSERT_OK(conn->Flush(seconds(5)));
  ASSERT_OK_AND_ASSIGN(auto none, consumer->Fetch(10, milliseconds(300)));
  EXPECT_TRUE(none.empty());
  // Acks reached the server: a new consumer object on the durable gets nothing again.
  consumer.reset();
  ASSERT_OK_AND_ASSIGN(consumer, bus::PullConsumer::Create(conn.get(), cs));
  ASSERT_OK_AND_ASSIGN(none, consumer->Fetch(10, milliseconds(300)));
  EXPECT_TRUE(none.empty());
  // Not acknowledged: delivered again (Nak), with its delivery count.
  ASSERT_OK(conn->Publish("late.a", "again", "late-again").status());
  ASSERT_OK_AND_ASSIGN(auto one, consumer->Fetch(10, seconds(5)));
  ASSERT_EQ(one.size(), 1u);
  ASSERT_OK(one[0]->Nak());
  ASSERT_OK_AND_ASSIGN(auto redelivered, consumer->Fetch(10, seconds(5)));
  ASSERT_EQ(redelivered.size(), 1u);
  EXPECT_EQ(redelivered[0]->data(), "again");
  EXPECT_EQ(redelivered[0]->num_delivered(), 2u);
  ASSERT_OK(redelivered[0]->Ack());
}

// A prefetch request's messages travel while the caller works and are the next fetch's: each
// message once, at most the prefetched batch, none lost when fewer were there, and a fetch
// after an empty prefetch still waits for what comes.
TEST(NatsTest, PullConsumerPrefetch) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NatsServer> s, NatsServer::Start());
  std::unique_ptr<bus::NatsConnection> conn = ConnectOrDie(s->url());
  ASSERT_NE(conn, nullptr);
  bus::StreamSpec spec;
  spec.name = "PRE";
  spec.subjects = {"pre.>"};
  ASSERT_OK(conn->EnsureStream(spec));
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK(conn->Publish("pre.a", "m" + std::to_string(i), "pre-" + std::to_string(i)).status());
  }
  bus::ConsumerSpec cs;
  cs.stream = "PRE";
  cs.durable = "pre";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<bus::PullConsumer> consumer,
                       bus::PullConsumer::Create(conn.get(), cs));
  std::set<uint64_t> seen;
  auto take = [&](std::vector<std::unique_ptr<bus::Message>>& msgs) {
    for (auto& m : msgs) {
      EXPECT_TRUE(seen.insert(m->stream_sequence()).second) << m->stream_sequence();
      ASSERT_OK(m->Ack());
    }
  };
  // Four prefetched; the fetch names a larger batch and gets the four, at once.
  ASSERT_OK(consumer->Prefetch(4));
  ASSERT_OK(consumer->Prefetch(4));  // one outstanding at most: no second request
  std::this_thread::sleep_for(milliseconds(100));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(auto msgs, consumer->Fetch(8, seconds(5)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(2));
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[0]->data(), "m0");
  // The second Prefetch sent nothing: only the four are out, unacknowledged.
  ASSERT_OK_AND_ASSIGN(bus::NatsConnection::ConsumerState st, conn->GetConsumerState("PRE", "pre"));
  EXPECT_EQ(st.num_ack_pending, 4);
  EXPECT_EQ(st.num_pending, 6u);
  take(msgs);
  // More asked for than there are: the six that are there, then the request ends.
  ASSERT_OK(consumer->Prefetch(50));
  ASSERT_OK_AND_ASSIGN(msgs, consumer->Fetch(50, seconds(5)));
  ASSERT_EQ(msgs.size(), 6u);
  take(msgs);
  EXPECT_EQ(seen.size(), 10u);
  // Nothing there: the fetch after the empty prefetch waits for the next message.
  ASSERT_OK(consumer->Prefetch(8));
  std::thread later([&] {
    std::this_thread::sleep_for(milliseconds(300));
    (void)conn->Publish("pre.a", "late", "pre-late");
  });
  ASSERT_OK_AND_ASSIGN(msgs, consumer->Fetch(8, seconds(1)));
  later.join();
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0]->data(), "late");
  take(msgs);
  ASSERT_OK(conn->Flush(seconds(5)));
  ASSERT_OK_AND_ASSIGN(auto none, consumer->Fetch(10, milliseconds(300)));
  EXPECT_TRUE(none.empty());
}

TEST(NatsTest, MaxPayloadAndErrors) {
  NatsServerOptions o;
  o.max_payload = 8 << 20;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NatsServer> s, NatsServer::Start(o));
  std::unique_ptr<bus::NatsConnection> conn = ConnectOrDie(s->url());
  ASSERT_NE(conn, nullptr);
  EXPECT_EQ(conn->max_payload(), 8 << 20);
  bus::StreamSpec spec;
  spec.name = "BIG";
  spec.subjects = {"big.>"};
  ASSERT_OK(conn->EnsureStream(spec));
  ASSERT_OK(conn->Publish("big.a", std::string(4 << 20, 'x')).status());
  Result<bus::PublishAck> too_big = conn->Publish("big.a", std::string((8 << 20) + 1, 'x'));
  EXPECT_FALSE(too_big.ok());
  // No stream for the subject: an error, not a hang.
  Result<bus::PublishAck> nowhere = conn->Publish("nowhere.a", "x");
  EXPECT_FALSE(nowhere.ok());
  // Asynchronous publishing reports acks, and failures.
  for (int i = 0; i < 100; ++i) {
    ASSERT_OK(conn->PublishAsync("big.b", "m" + std::to_string(i), "async-" + std::to_string(i)));
  }
  ASSERT_OK(conn->WaitPublished(seconds(10)));
  ASSERT_OK(conn->PublishAsync("nowhere.b", "x"));
  EXPECT_FALSE(conn->WaitPublished(seconds(10)).ok());
  // A consumer on a stream that does not exist.
  bus::ConsumerSpec cs;
  cs.stream = "MISSING";
  cs.durable = "d";
  Result<std::unique_ptr<bus::PullConsumer>> missing = bus::PullConsumer::Create(conn.get(), cs);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
  EXPECT_FALSE(missing.status().retryable());
  EXPECT_EQ(conn->DeleteStream("MISSING").code(), StatusCode::kNotFound);
}

// nats-server 2.9 registers a stream before its store exists and clears the store while
// deleting it; a message get in that window crashes the whole server. A writer waiting for the
// reader's plan polls the stream's last message while the reader (another process) creates it.
// Here a raw libnats connection, which the process-wide stream lock does not order, creates,
// fills and deletes a stream over and over while GetLastMessage polls it: the server survives,
// and every answer is the message, NotFound or a timeout (the stream went away mid-read).
TEST(NatsTest, LastMessageReadsSurviveAnotherProcessCreatingAndDeletingTheStream) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NatsServer> s, NatsServer::Start());
  natsConnection* raw = nullptr;
  ASSERT_EQ(natsConnection_ConnectTo(&raw, s->url().c_str()), NATS_OK);
  jsCtx* raw_js = nullptr;
  ASSERT_EQ(natsConnection_JetStream(&raw_js, raw, nullptr), NATS_OK);
  bus::NatsOptions o;
  o.url = s->url();
  o.request_timeout = milliseconds(250);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<bus::NatsConnection> conn, bus::NatsConnection::Connect(o));

  std::atomic<bool> done{false};
  std::string creator_error;
  std::thread creator([&] {
    const char* subjects[] = {"race.>"};
    for (int i = 0; i < 600 && creator_error.empty(); ++i) {
      jsStreamConfig cfg;
      jsStreamConfig_Init(&cfg);
      cfg.Name = "RACE";
      cfg.Subjects = subjects;
      cfg.SubjectsLen = 1;
      cfg.AllowDirect = true;  // as EnsureStream creates them
      jsErrCode jerr = static_cast<jsErrCode>(0);
      jsStreamInfo* si = nullptr;
      natsStatus st = js_AddStream(&si, raw_js, &cfg, nullptr, &jerr);
      if (si != nullptr) jsStreamInfo_Destroy(si);
      jsPubAck* pa = nullptr;
      if (st == NATS_OK) st = js_Publish(&pa, raw_js, "race.plan", "plan", 4, nullptr, &jerr);
      if (pa != nullptr) jsPubAck_Destroy(pa);
      if (st == NATS_OK) std::this_thread::sleep_for(milliseconds(i % 3));
      if (st == NATS_OK) st = js_DeleteStream(raw_js, "RACE", nullptr, &jerr);
      if (st != NATS_OK) {
        creator_error = "cycle " + std::to_string(i) + ": " + natsStatus_GetText(st) + " " +
                        std::to_string(static_cast<int>(jerr)) + "\n" + s->LogTail();
      }
    }
    done.store(true);
  });
  int found = 0, polls = 0;
  std::string reader_error;
  while (!done.load() && reader_error.empty()) {
    ++polls;
    Result<std::string> m = conn->GetLastMessage("RACE", "race.plan");
    if (m.ok()) {
      ++found;
      if (*m != "plan") reader_error = "read " + *m;
    } else if (m.status().code() != StatusCode::kNotFound &&
               m.status().code() != StatusCode::kTimeout) {
      reader_error = m.status().ToString();
    }
  }
  creator.join();
  jsCtx_Destroy(raw_js);
  natsConnection_Destroy(raw);
  EXPECT_TRUE(s->running()) << s->LogTail();
  EXPECT_EQ(creator_error, "");
  EXPECT_EQ(reader_error, "") << s->LogTail();
  EXPECT_GT(found, 0) << polls << " polls";
  // The server still serves streams.
  bus::StreamSpec spec;
  spec.name = "AFTER";
  spec.subjects = {"after.>"};
  ASSERT_OK(conn->EnsureStream(spec));
  ASSERT_OK(conn->Publish("after.plan", "x").status());
  ASSERT_OK_AND_ASSIGN(std::string last, conn->GetLastMessage("AFTER", "after.plan"));
  EXPECT_EQ(last, "x");
  EXPECT_EQ(conn->GetLastMessage("AFTER", "after.none").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(conn->GetLastMessage("NONE", "none.plan").status().code(), StatusCode::kNotFound);
}

TEST(NatsTest, Tls) {
  Result<std::string> openssl = FindProgram("openssl");
  if (!openssl.ok()) GTEST_SKIP() << "openssl not installed";
  ASSERT_OK_AND_ASSIGN(std::string dir, CreateServerDir());
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), *openssl);
    SpawnSpec spec;
    spec.argv = std::move(args);
    spec.log_path = dir + "/openssl.log";
    spec.cwd = dir;
    return RunCommand(spec, seconds(60), "openssl");
  };
  ASSERT_OK(WriteFile(dir + "/san.ext", "subjectAltName=IP:127.0.0.1\n"));
  ASSERT_OK(
      run({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
           "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=dbs-test-ca"}));
  ASSERT_OK(run({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"}));
  ASSERT_OK(run({"x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext"}));
  NatsServerOptions o;
  o.tls_cert_file = dir + "/server.pem";
  o.tls_key_file = dir + "/server.key";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NatsServer> s, NatsServer::Start(o));
  EXPECT_EQ(s->url().rfind("tls://", 0), 0u) << s->url();

  bus::NatsOptions co;
  co.url = s->url();
  co.ca_file = dir + "/ca.pem";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<bus::NatsConnection> conn, bus::NatsConnection::Connect(co));
  bus::StreamSpec spec;
  spec.name = "TLS";
  spec.subjects = {"tls.>"};
  ASSERT_OK(conn->EnsureStream(spec));
  ASSERT_OK(conn->Publish("tls.a", "secret").status());
  // Without trusting the CA the handshake fails, quickly and not retryably.
  co.ca_file.clear();
  co.tls = true;
  co.max_reconnects = 0;
  Result<std::unique_ptr<bus::NatsConnection>> untrusted = bus::NatsConnection::Connect(co);
  EXPECT_FALSE(untrusted.ok());
  conn.reset();
  s.reset();
  ASSERT_OK(RemoveTree(dir));
}

TEST(FixtureTest, StartupFailuresAreQuickAndShowTheLog) {
  const auto start = std::chrono::steady_clock::now();
  const size_t dirs_before = DirsOf(getpid()).size();
  NatsServerOptions bad_nats;
  bad_nats.extra_config = {"this is { not a valid config"};
  Result<std::unique_ptr<NatsServer>> nats = NatsServer::Start(bad_nats);
  ASSERT_FALSE(nats.ok());
  EXPECT_NE(nats.status().message().find("exited during startup"), std::string::npos)
      << nats.status().ToString();
  EXPECT_NE(nats.status().message().find("last lines of"), std::string::npos);

  MariaDbServerOptions bad_maria;
  bad_maria.extra_args = {"--no-such-option-for-the-test"};
  Result<std::unique_ptr<MariaDbServer>> maria = MariaDbServer::Start(bad_maria);
  ASSERT_FALSE(maria.ok());
  EXPECT_NE(maria.status().message().find("no-such-option-for-the-test"), std::string::npos)
      << maria.status().ToString();

  PostgresServerOptions bad_pg;
  bad_pg.settings = {{"no_such_setting_for_the_test", "1"}};
  Result<std::unique_ptr<PostgresServer>> pg = PostgresServer::Start(bad_pg);
  ASSERT_FALSE(pg.ok());
  EXPECT_NE(pg.status().message().find("no_such_setting_for_the_test"), std::string::npos)
      << pg.status().ToString();

  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(20));
  EXPECT_EQ(DirsOf(getpid()).size(), dirs_before);  // failed servers leave no folders
}

TEST(SharedServersTest, OneInstancePerKind) {
  ASSERT_OK_AND_ASSIGN(NatsServer * a, SharedServers::Nats());
  ASSERT_OK_AND_ASSIGN(NatsServer * b, SharedServers::Nats());
  EXPECT_EQ(a, b);
  ASSERT_OK_AND_ASSIGN(PostgresServer * pg, SharedServers::Postgres());
  ASSERT_OK(pg->CreateDatabase("shared_test"));
  ASSERT_OK_AND_ASSIGN(PostgresServer * pg2, SharedServers::Postgres());
  EXPECT_EQ(pg, pg2);
  ASSERT_OK_AND_ASSIGN(Rows rows, pg2->Query("SELECT current_database()", "shared_test"));
  EXPECT_EQ(Cell(rows), "shared_test");
}

TEST(SharedServersTest, ExitInAForkedChildLeavesThemAlone) {
  ASSERT_OK_AND_ASSIGN(NatsServer * nats, SharedServers::Nats());
  // A "fast" death test forks this process; exit() there runs the atexit handlers, which must
  // not stop the parent's servers.
  GTEST_FLAG_SET(death_test_style, "fast");
  EXPECT_EXIT(std::exit(0), ::testing::ExitedWithCode(0), "");
  EXPECT_TRUE(nats->running());
  EXPECT_TRUE(CanConnect(nats->port()));
  EXPECT_TRUE(fs::is_directory(nats->dir()));
}

// --- dbstreams-testenv
// ----------------------------------------------------------------------------

struct TestEnv {
  pid_t pid = -1;
  std::map<std::string, std::string> vars;
};

// Starts dbstreams-testenv with every single-node server and waits for its env file.
void StartTestEnv(const std::string& work, TestEnv* env) {
  const std::string env_file = work + "/env";
  SpawnSpec spec;
  spec.argv = {DBS_TESTENV_PATH, "--nats", "--mariadb", "--postgres", "--env-file", env_file};
  spec.log_path = work + "/testenv.log";
  ASSERT_OK_AND_ASSIGN(env->pid, Spawn(spec));
  const auto deadline = std::chrono::steady_clock::now() + seconds(120);
  Result<std::string> text = Status::NotFound("env file");
  while (std::chrono::steady_clock::now() < deadline) {
    text = ReadFile(env_file);
    if (text.ok()) break;
    int st = 0;
    ASSERT_FALSE(TryReap(env->pid, &st)) << "dbstreams-testenv " << DescribeWaitStatus(st) << "\n"
                                         << ReadFileTail(spec.log_path);
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_TRUE(text.ok()) << "no env file; log:\n" << ReadFileTail(spec.log_path);
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) env->vars[line.substr(0, eq)] = line.substr(eq + 1);
  }
  for (const char* key :
       {"NATS_URL", "MYSQL_URL", "PG_URL", "MYSQL_PORT", "PGPORT", "PGPASSWORD"}) {
    EXPECT_TRUE(env->vars.count(key)) << key << " missing in\n" << *text;
  }
  EXPECT_EQ(env->vars["MYSQL_URL"], "mysql://root:" + env->vars["MYSQL_PASSWORD"] +
                                        "@127.0.0.1:" + env->vars["MYSQL_PORT"] + "/");
  EXPECT_EQ(env->vars["PG_URL"], "postgres://postgres:" + env->vars["PGPASSWORD"] +
                                     "@127.0.0.1:" + env->vars["PGPORT"] + "/postgres");
}

// The port in VALUE, or at the end of a URL VALUE ("nats://127.0.0.1:4222").
int PortOf(const std::map<std::string, std::string>& vars, const std::string& key) {
  auto it = vars.find(key);
  if (it == vars.end()) return -1;
  const size_t colon = it->second.rfind(':');
  return std::atoi(it->second.c_str() + (colon == std::string::npos ? 0 : colon + 1));
}

TEST(TestEnvTest, PrintsUrlsAndStopsOnSigterm) {
  ASSERT_OK_AND_ASSIGN(std::string work, CreateServerDir());
  TestEnv env;
  StartTestEnv(work, &env);
  ASSERT_GT(env.pid, 0);
  std::unique_ptr<bus::NatsConnection> conn = ConnectOrDie(env.vars["NATS_URL"]);
  EXPECT_NE(conn, nullptr);
  conn.reset();
  const int ports[] = {PortOf(env.vars, "NATS_URL"), PortOf(env.vars, "MYSQL_PORT"),
                       PortOf(env.vars, "PGPORT")};
  for (int p : ports) EXPECT_TRUE(CanConnect(p)) << p;
  EXPECT_EQ(DirsOf(env.pid).size(), 3u);

  kill(env.pid, SIGTERM);
  ASSERT_OK_AND_ASSIGN(int st, WaitForExit(env.pid, seconds(120)));
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << DescribeWaitStatus(st) << "\n"
                                                     << ReadFileTail(work + "/testenv.log");
  for (int p : ports) EXPECT_FALSE(CanConnect(p)) << p;
  EXPECT_TRUE(DirsOf(env.pid).empty());
  EXPECT_FALSE(fs::exists(work + "/env"));
  ASSERT_OK(RemoveTree(work));
}

TEST(TestEnvTest, KilledOwnerLeavesNoServers) {
  ASSERT_OK_AND_ASSIGN(std::string work, CreateServerDir());
  TestEnv env;
  StartTestEnv(work, &env);
  ASSERT_GT(env.pid, 0);
  const std::vector<pid_t> servers = ChildrenOf(env.pid);
  EXPECT_EQ(servers.size(), 3u);
  const int ports[] = {PortOf(env.vars, "NATS_URL"), PortOf(env.vars, "MYSQL_PORT"),
                       PortOf(env.vars, "PGPORT")};

  // SIGKILL: no destructor runs; the kernel's parent-death signal must stop the servers.
  kill(env.pid, SIGKILL);
  ASSERT_OK(WaitForExit(env.pid, seconds(10)).status());
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (std::chrono::steady_clock::now() < deadline &&
         std::any_of(servers.begin(), servers.end(), ProcessAlive)) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  for (pid_t p : servers) EXPECT_FALSE(ProcessAlive(p)) << "server " << p << " survived";
  for (int p : ports) {
    for (int i = 0; i < 100 && CanConnect(p); ++i) std::this_thread::sleep_for(milliseconds(50));
    EXPECT_FALSE(CanConnect(p)) << "port " << p << " still open";
  }

  // Its folders are left behind; the next sweep removes them.
  EXPECT_EQ(DirsOf(env.pid).size(), 3u);
  SweepStaleDirs();
  EXPECT_TRUE(DirsOf(env.pid).empty());
  ASSERT_OK(RemoveTree(work));
}

// --- NATS cluster
// ----------------------------------------------------------------------------------

TEST(NatsClusterTest, ReplicatedStreamSurvivesANodeRestart) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<NatsCluster> cluster, NatsCluster::Start());
  ASSERT_EQ(cluster->size(), 3);
  const std::string urls = cluster->urls();
  EXPECT_EQ(std::count(urls.begin(), urls.end(), ','), 2) << urls;
  std::unique_ptr<bus::NatsConnection> conn = ConnectOrDie(urls);
  ASSERT_NE(conn, nullptr);
  PublishAndConsumeOnce(conn.get(), "R3", 3);
  ASSERT_OK(conn->Flush(seconds(5)));

  // With one node down, the other two keep a quorum (after a possible leader election).
  ASSERT_OK(cluster->StopNode(0));
  EXPECT_FALSE(CanConnect(cluster->node(0).port()));
  Status published;
  for (int i = 0; i < 50; ++i) {
    published = conn->Publish("R3.orders", "while-down", "msg-down").status();
    if (published.ok()) break;
    std::this_thread::sleep_for(milliseconds(200));
  }
  ASSERT_OK(published);
  ASSERT_OK(cluster->StartNode(0));
  EXPECT_TRUE(CanConnect(cluster->node(0).port()));

  bus::ConsumerSpec cs;
  cs.stream = "R3";
  cs.durable = "reader";
  // Delivery is at least once: the last ack before the node stopped may not have reached a
  // quorum, so "payload-2" may come again (redelivered, never as a new message). The message
  // published while the node was down must arrive exactly with its sequence, and nothing else.
  std::vector<std::unique_ptr<bus::Message>> msgs;
  bool got_down = false;
  for (int i = 0; i < 50 && !got_down; ++i) {
    Result<std::unique_ptr<bus::PullConsumer>> consumer = bus::PullConsumer::Create(conn.get(), cs);
    if (!consumer.ok()) {
      std::this_thread::sleep_for(milliseconds(200));
      continue;
    }
    Result<std::vector<std::unique_ptr<bus::Message>>> got = (*consumer)->Fetch(10, seconds(2));
    if (!got.ok()) continue;
    for (std::unique_ptr<bus::Message>& m : *got) {
      if (m->data() == "while-down") got_down = true;
      ASSERT_OK(m->Ack());
      msgs.push_back(std::move(m));
    }
  }
  ASSERT_TRUE(got_down);
  int down_count = 0;
  for (const std::unique_ptr<bus::Message>& m : msgs) {
    if (m->data() == "while-down") {
      ++down_count;
      EXPECT_EQ(m->stream_sequence(), 3u);
    } else {
      EXPECT_EQ(m->data(), "payload-2");
      EXPECT_EQ(m->stream_sequence(), 2u);
      EXPECT_GE(m->num_delivered(), 2u) << "payload-2 came again, but not as a redelivery";
    }
  }
  EXPECT_EQ(down_count, 1);

  std::vector<std::string> dirs;
  for (int i = 0; i < cluster->size(); ++i) dirs.push_back(cluster->node(i).dir());
  conn.reset();
  cluster.reset();
  for (const std::string& d : dirs) EXPECT_FALSE(fs::exists(d)) << d;
}

}  // namespace
}  // namespace dbs::testing

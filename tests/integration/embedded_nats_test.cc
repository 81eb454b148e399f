// The embedded nats-server is watched: one that exits on its own (here SIGKILLed, as a crash
// would end it) is started again on the same port and store, a connected client carries on
// without reconnecting by hand, and the streams with their messages are still there.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "bus/embedded_nats.h"
#include "bus/jetstream.h"

namespace dbs {
namespace {

namespace fs = std::filesystem;

TEST(EmbeddedNats, CrashedServerIsStartedAgainWithItsStreams) {
  const std::string dir =
      (fs::temp_directory_path() / ("dbstreams-embedded-nats-" + std::to_string(getpid())))
          .string();
  fs::remove_all(dir);
  bus::EmbeddedNatsOptions eo;
  eo.data_dir = dir + "/nats";
  auto server = bus::EmbeddedNats::Start(eo);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  bus::NatsOptions co = (*server)->ClientOptions(bus::NatsRole::kReader, "watch-test");
  co.max_reconnects = -1;
  auto conn = bus::NatsConnection::Connect(co);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  bus::StreamSpec spec;
  spec.name = "DBS_watch";
  spec.subjects = {"dbs.watch.>"};
  ASSERT_TRUE((*conn)->EnsureStream(spec).ok());
  ASSERT_TRUE((*conn)->Publish("dbs.watch.ctl.plan", "before the crash", "m1").ok());

  const pid_t first = (*server)->pid();
  ASSERT_GT(first, 0);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  // Started again within a few watcher periods; the client reconnects by itself.
  Result<std::string> last = Status::Unavailable("not read");
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if ((*server)->restarts() < 1) continue;
    last = (*conn)->GetLastMessage("DBS_watch", "dbs.watch.ctl.plan");
    if (last.ok()) break;
  }
  EXPECT_EQ((*server)->restarts(), 1);
  EXPECT_NE((*server)->pid(), first);
  ASSERT_TRUE(last.ok()) << last.status().ToString() << "\n" << (*server)->Diagnosis();
  EXPECT_EQ(*last, "before the crash");
  // And it takes new messages.
  auto after = (*conn)->Publish("dbs.watch.ctl.plan", "after the crash", "m2");
  EXPECT_TRUE(after.ok()) << after.status().ToString();
  conn->reset();
  (*server)->Stop();
  EXPECT_EQ((*server)->pid(), -1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dbs

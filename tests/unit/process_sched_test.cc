#include "core/process_sched.h"

#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

extern char** environ;

namespace dbs {
namespace {

EnvLookup Env(std::optional<std::string> value) {
  return [value](const std::string& name) -> std::optional<std::string> {
    return name == "DBS_SCHED_POLICY" ? value : std::nullopt;
  };
}

// The scheduling policy of process `pid`: field 41 of /proc/<pid>/stat (after the command name
// in parentheses, which may hold spaces).
int PolicyOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = stat.rfind(')');
  if (at == std::string::npos) return -1;
  // Field 3 starts after ") "; field 41 is 38 fields further.
  at += 2;
  for (int field = 3; field < 41; ++field) {
    at = stat.find(' ', at);
    if (at == std::string::npos) return -1;
    ++at;
  }
  return std::stoi(stat.substr(at));
}

class ProcessSched : public ::testing::Test {
 protected:
  // Every test starts, and leaves the test process, in the kernel's default policy.
  void SetUp() override { Reset(); }
  void TearDown() override { Reset(); }
  static void Reset() {
    const sched_param p{};
    sched_setscheduler(0, SCHED_OTHER, &p);
  }
};

TEST_F(ProcessSched, BatchByDefaultForTheThreadAndWhatItStartsLater) {
  ASSERT_EQ(sched_getscheduler(0), SCHED_OTHER);  // SetUp
  ASSERT_TRUE(TuneProcessScheduling(Env(std::nullopt)).ok());
  EXPECT_EQ(sched_getscheduler(0), SCHED_BATCH);

  int in_thread = -1;
  std::thread([&] { in_thread = sched_getscheduler(0); }).join();
  EXPECT_EQ(in_thread, SCHED_BATCH);

  // A child process (as the embedded nats-server is started) inherits it too.
  pid_t child;
  char sleep_bin[] = "/bin/sleep";
  char seconds[] = "30";
  char* argv[] = {sleep_bin, seconds, nullptr};
  ASSERT_EQ(posix_spawn(&child, sleep_bin, nullptr, nullptr, argv, environ), 0);
  EXPECT_EQ(PolicyOf(child), SCHED_BATCH);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);

  // An empty value is the default too.
  Reset();
  ASSERT_TRUE(TuneProcessScheduling(Env(std::string())).ok());
  EXPECT_EQ(sched_getscheduler(0), SCHED_BATCH);
}

TEST_F(ProcessSched, NormalKeepsTheKernelsDefault) {
  ASSERT_TRUE(TuneProcessScheduling(Env("batch")).ok());
  ASSERT_EQ(sched_getscheduler(0), SCHED_BATCH);
  ASSERT_TRUE(TuneProcessScheduling(Env("normal")).ok());
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
  EXPECT_EQ(PolicyOf(getpid()), SCHED_OTHER);
}

TEST_F(ProcessSched, AnUnknownValueIsAnErrorAndChangesNothing) {
  Status s = TuneProcessScheduling(Env("fast"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "DBS_SCHED_POLICY is 'fast': use batch (the default) or normal");
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
}

}  // namespace
}  // namespace dbs

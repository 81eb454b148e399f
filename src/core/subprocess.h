// Child processes owned by RAII handles.
//
// Contract:
//  - Spawn() forks and execs; the child gets PR_SET_PDEATHSIG so it dies with the thread that
//    spawned it (even when this process is SIGKILLed). Spawn from a long-lived thread.
//  - The destructor terminates a still-running child (SIGTERM, then SIGKILL after the grace
//    period) and reaps it. Not thread-safe: one owner.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"

namespace dbs {

struct SpawnOptions {
  std::vector<std::string> argv;       // argv[0] is the program (PATH is searched)
  std::vector<std::string> env;        // extra "KEY=VALUE" entries added to the environment
  std::string working_dir;             // empty: inherit
  std::string output_file;             // stdout+stderr appended here; empty: /dev/null
  int death_signal = 9;                // sent to the child when its parent thread dies
  uid_t uid = static_cast<uid_t>(-1);  // run as this user (needs root); -1: unchanged
  gid_t gid = static_cast<gid_t>(-1);
  int umask = -1;  // the child's file mode mask (and the output file is 0600); -1: inherited
};

class ChildProcess {
 public:
  static Result<std::unique_ptr<ChildProcess>> Spawn(const SpawnOptions& options);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // True while the child has not exited (reaps it if it has).
  bool Running();
  // Sends `sig`; then waits up to `grace` for exit and SIGKILLs if still running. Returns the
  // exit status as waitpid reports it.
  int Terminate(int sig = 15, std::chrono::milliseconds grace = std::chrono::seconds(10));
  void Kill() { Terminate(9, std::chrono::seconds(5)); }
  // Waits up to `timeout` for exit; Timeout if it is still running.
  Result<int> Wait(std::chrono::milliseconds timeout);

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  bool exited_ = false;
  int status_ = 0;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read, close).
Result<int> FindFreePort();
// True when a TCP connection to host:port succeeds.
bool CanConnect(const std::string& host, int port);

}  // namespace dbs

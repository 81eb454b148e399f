// Process, port and folder helpers behind the real-server test fixture (servers.h).
//
// Contract:
//  - Every child is forked on one process-wide launcher thread that lives until the process
//    exits. The child sets PR_SET_PDEATHSIG (after any setgid/setuid, which would clear it), and
//    the "parent" the kernel watches is the forking thread, so the signal fires when the test
//    process dies (also by SIGKILL) and never because the thread that asked for the child ended.
//  - A child runs in its own process group with an empty signal mask, default signal
//    dispositions, stdin from /dev/null, stdout and stderr appended to a log file, and no other
//    inherited file descriptors.
//  - Children are reaped only by the calls here that name their pid; nothing installs a SIGCHLD
//    handler or reaps children it did not start.
//  - Every wait is bounded.
//  - Server folders are /tmp/dbstreams-test/<pid>-<n>/. The first CreateServerDir() of a process
//    sweeps folders whose owning process is gone: it kills the server recorded in them (pid
//    file), frees PostgreSQL shared memory left by a killed server, and removes the folder.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/status.h"

namespace dbs::testing {

inline constexpr char kTestRoot[] = "/tmp/dbstreams-test";
inline constexpr char kCacheRoot[] = "/tmp/dbstreams-fixture-cache";

// Credentials a child switches to before exec.
struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups
};

// The PostgreSQL service account ("postgres") when running as root; nullopt when not root (then
// servers run as the current user). NotFound when root and the account does not exist.
Result<std::optional<RunAs>> PostgresAccount();

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0]: absolute path of the program
  std::string log_path;           // stdout and stderr are appended here; empty: /dev/null
  std::string cwd;                // empty: inherit
  std::optional<RunAs> run_as;    // empty: keep our credentials
  int death_signal = SIGKILL;     // sent to the child when this process dies
  std::vector<std::string> env_drop_prefixes;  // environment variables to remove ("PG")
};

// Starts a child as described above. Fails (with errno text) when fork or exec fails.
Result<pid_t> Spawn(const SpawnSpec& spec);

// Reaps `pid` (our child) when it has exited: returns true and stores the wait status.
bool TryReap(pid_t pid, int* wait_status);
// Waits until `pid` (our child) exits and reaps it; Timeout when it is still running.
Result<int> WaitForExit(pid_t pid, std::chrono::milliseconds timeout);
// "exited with code 1", "killed by signal 9 (Killed)".
std::string DescribeWaitStatus(int wait_status);
// Sends `sig` to our child `pid`, waits up to `grace`, then SIGKILLs it; always reaps it.
// Returns the wait status.
int TerminateChild(pid_t pid, int sig, std::chrono::milliseconds grace);
// A crash of a whole server: stops `pid` (our child) with SIGSTOP, SIGKILLs its direct children
// (PostgreSQL backends run in their own sessions), then SIGKILLs and reaps it, and waits (bounded)
// until the children are gone.
void KillProcessTree(pid_t pid);

// Whether `pid` exists and is not a zombie (a zombie whose other threads are still exiting counts
// as alive: it may still hold its sockets).
bool ProcessAlive(pid_t pid);
// The direct children of `pid`, in any state (from /proc).
std::vector<pid_t> ChildrenOf(pid_t pid);

// Runs a command to completion (killed after `timeout`). OK when it exits with code 0; otherwise
// an error naming `what`, how it ended and the tail of its log.
Status RunCommand(const SpawnSpec& spec, std::chrono::milliseconds timeout, std::string_view what);
// Runs argv[0] with arguments and returns what it printed (stdout and stderr).
Result<std::string> CaptureOutput(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout);

// Absolute path of `name` found on PATH or in the usual bin/sbin folders; NotFound otherwise.
Result<std::string> FindProgram(const std::string& name);

// `count` distinct TCP ports on 127.0.0.1 that were free a moment ago (bound with port 0 and
// held together while choosing, so they differ). A server may still lose a race for one:
// servers retry with new ports when their log says "address already in use".
Result<std::vector<int>> PickFreePorts(int count);
// Whether a TCP connection to 127.0.0.1:`port` succeeds (within ~1 s).
bool CanConnect(int port);
// HTTP/1.0 GET http://127.0.0.1:`port``path`; the status code, or -1 when no answer arrived.
int HttpGetStatus(int port, const std::string& path, std::chrono::milliseconds timeout);
// Whether a server log says its listening port was taken.
bool LogSaysAddressInUse(const std::string& log_text);

// A fresh server folder /tmp/dbstreams-test/<pid>-<n> (mode 0755). Sweeps stale folders first
// (once per process).
Result<std::string> CreateServerDir();
// Removes stale folders of dead test processes now (see the contract above).
void SweepStaleDirs();
// Deletes a folder tree; OK when it did not exist.
Status RemoveTree(const std::string& path);
Status WriteFile(const std::string& path, const std::string& contents, mode_t mode = 0644);
Result<std::string> ReadFile(const std::string& path);
// The last `max_lines` lines of a text file (empty when missing).
std::string ReadFileTail(const std::string& path, size_t max_lines = 40);
// Frees the System V shared memory segment recorded in `data_dir`/postmaster.pid when no
// process is attached to it any more (a PostgreSQL server that was killed leaves it behind).
void RemoveStalePostgresShm(const std::string& data_dir);

// Builds a template folder once per machine: when `kCacheRoot`/`name` is missing, `build` fills a
// private temporary folder that is then renamed into place (atomic, so concurrent builders and
// killed builds never leave a half-made template). Returns the template's path.
Result<std::string> EnsureTemplate(const std::string& name,
                                   const std::function<Status(const std::string& dir)>& build);

// One long-running server child living in a server folder. Records its pid (with the signal to
// send and its start time) in `dir`/server.pid so a later sweep can stop it if we die.
// Not thread-safe.
class ServerProcess {
 public:
  // `stop_signal` asks for a clean shutdown; `death_signal` is sent when this process dies.
  ServerProcess(std::string name, std::string dir, int stop_signal, int death_signal);
  ~ServerProcess();  // KillProcessTree when still running (only in the owning process)
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts `spec` (its log_path and death_signal are filled in) after truncating the log.
  Status Start(SpawnSpec spec);
  // True while the child runs; reaps it once it has exited.
  bool Running();
  // Clean shutdown with stop_signal; SIGKILL after `grace`. OK when not running. An error when
  // the server had to be killed or exited with a failure.
  Status Stop(std::chrono::milliseconds grace);
  // SIGKILL (the whole tree, see KillProcessTree). No-op when not running.
  void Kill();
  // Polls `ready` (every 20-100 ms) until it returns true; fails when the child exits first or
  // `timeout` passes, with the log tail in the message.
  Status WaitUntilReady(std::chrono::milliseconds timeout, const std::function<bool()>& ready);

  // False in a process forked from the owner (a gtest death test, a child that calls exit()):
  // such a copy must neither signal the owner's server nor remove its folder.
  bool owned_here() const;

  const std::string& name() const { return name_; }
  const std::string& log_path() const { return log_path_; }
  pid_t pid() const { return pid_; }
  // How the last child ended ("exited with code 1"), empty while running or never started.
  const std::string& exit_description() const { return exit_description_; }
  std::string LogTail() const;

 private:
  std::string name_;
  std::string dir_;
  std::string log_path_;
  int stop_signal_;
  int death_signal_;
  pid_t owner_;  // the process that created this object
  pid_t pid_ = -1;
  std::string exit_description_;
};

}  // namespace dbs::testing

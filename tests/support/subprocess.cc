#include "support/subprocess.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

extern char** environ;

namespace dbs::testing {

bool ProcessAlive(pid_t pid);
std::vector<pid_t> ChildrenOf(pid_t parent);

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string ErrnoText(int err) { return std::strerror(err); }

// --- /proc ------------------------------------------------------------------------------------

struct ProcStat {
  char state = '?';
  pid_t ppid = 0;
  unsigned long long start_time = 0;  // clock ticks since boot
};

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  std::string f;
  while (rest >> f) fields.push_back(f);
  // After "(comm)": state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
  // utime stime cutime cstime priority nice num_threads itrealvalue starttime ...
  if (fields.size() < 20) return std::nullopt;
  ProcStat st;
  st.state = fields[0].empty() ? '?' : fields[0][0];
  st.ppid = static_cast<pid_t>(std::strtol(fields[1].c_str(), nullptr, 10));
  st.start_time = std::strtoull(fields[19].c_str(), nullptr, 10);
  return st;
}

// Waits (bounded) until none of `pids` is alive.
void WaitGone(const std::vector<pid_t>& pids, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (std::none_of(pids.begin(), pids.end(), ProcessAlive)) return;
    std::this_thread::sleep_for(milliseconds(10));
  }
}

// --- the launcher thread -----------------------------------------------------------------------

// Steps of the child reported back through the exec-error pipe.
enum ChildStep : int {
  kStepFds = 1,
  kStepChdir,
  kStepGroups,
  kStepGid,
  kStepUid,
  kStepPdeath,
  kStepParentGone,
  kStepExec
};

const char* ChildStepName(int step) {
  switch (step) {
    case kStepFds:
      return "redirecting stdio";
    case kStepChdir:
      return "chdir";
    case kStepGroups:
      return "setgroups";
    case kStepGid:
      return "setgid";
    case kStepUid:
      return "setuid";
    case kStepPdeath:
      return "prctl(PR_SET_PDEATHSIG)";
    case kStepParentGone:
      return "parent exited during start";
    case kStepExec:
      return "exec";
    default:
      return "?";
  }
}

// Everything the child needs, prepared before fork (the child may only make async-signal-safe
// calls).
struct ChildPlan {
  std::vector<char*> argv;
  std::vector<char*> envp;
  const char* cwd = nullptr;
  const RunAs* run_as = nullptr;
  int death_signal = SIGKILL;
  int null_fd = -1;
  int log_fd = -1;
  int err_fd = -1;
  pid_t parent = 0;
  long max_fd = 1024;
};

[[noreturn]] void ChildFail(int err_fd, int step) {
  int msg[2] = {step, errno};
  ssize_t ignored = write(err_fd, msg, sizeof(msg));
  (void)ignored;
  _exit(127);
}

[[noreturn]] void RunChild(const ChildPlan& p) {
  setpgid(0, 0);
  // The plan's fds are all >= 3 (see Above2), so these do not clobber each other.
  if (dup2(p.null_fd, 0) < 0 || dup2(p.log_fd, 1) < 0 || dup2(p.log_fd, 2) < 0) {
    ChildFail(p.err_fd, kStepFds);
  }
  int err_fd = p.err_fd;
  if (err_fd != 3) {
    if (dup3(err_fd, 3, O_CLOEXEC) < 0) ChildFail(err_fd, kStepFds);
    err_fd = 3;
  }
  if (syscall(SYS_close_range, 4U, ~0U, 0U) != 0) {
    for (long fd = 4; fd < p.max_fd; ++fd) close(static_cast<int>(fd));
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
  }
  if (p.cwd != nullptr && chdir(p.cwd) != 0) ChildFail(err_fd, kStepChdir);
  if (p.run_as != nullptr) {
    if (setgroups(p.run_as->groups.size(), p.run_as->groups.data()) != 0) {
      ChildFail(err_fd, kStepGroups);
    }
    if (setgid(p.run_as->gid) != 0) ChildFail(err_fd, kStepGid);
    if (setuid(p.run_as->uid) != 0) ChildFail(err_fd, kStepUid);
  }
  // After the credential change: changing credentials clears the parent-death signal.
  if (prctl(PR_SET_PDEATHSIG, p.death_signal) != 0) ChildFail(err_fd, kStepPdeath);
  if (getppid() != p.parent) ChildFail(err_fd, kStepParentGone);
  execve(p.argv[0], p.argv.data(), p.envp.data());
  ChildFail(err_fd, kStepExec);
}

// Moves a descriptor to a number >= 3 (close-on-exec), so the child's dup2 calls onto 0..2 can
// not clobber it even when this process runs with stdin/stdout/stderr closed.
int Above2(int fd) {
  if (fd < 0 || fd > 2) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

Result<pid_t> ForkExec(const SpawnSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty() || spec.argv[0][0] != '/') {
    return Status::InvalidArgument("spawn: argv[0] must be an absolute path");
  }
  std::vector<std::string> args = spec.argv;
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    bool drop = false;
    for (const std::string& prefix : spec.env_drop_prefixes) {
      if (kv.substr(0, prefix.size()) == prefix) drop = true;
    }
    if (!drop) env.emplace_back(kv);
  }
  ChildPlan plan;
  for (std::string& a : args) plan.argv.push_back(a.data());
  plan.argv.push_back(nullptr);
  for (std::string& e : env) plan.envp.push_back(e.data());
  plan.envp.push_back(nullptr);
  plan.cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  plan.run_as = spec.run_as ? &*spec.run_as : nullptr;
  plan.death_signal = spec.death_signal;
  plan.parent = getpid();
  long open_max = sysconf(_SC_OPEN_MAX);
  plan.max_fd = open_max > 0 ? std::min(open_max, 65536L) : 1024;

  const std::string log = spec.log_path.empty() ? "/dev/null" : spec.log_path;
  plan.log_fd = Above2(open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (plan.log_fd < 0) return Status::IoError("opening log " + log + ": " + ErrnoText(errno));
  plan.null_fd = Above2(open("/dev/null", O_RDONLY | O_CLOEXEC));
  int pipe_fds[2] = {-1, -1};
  if (plan.null_fd < 0 || pipe2(pipe_fds, O_CLOEXEC) != 0) {
    int err = errno;
    close(plan.log_fd);
    if (plan.null_fd >= 0) close(plan.null_fd);
    return Status::IoError("spawn: " + ErrnoText(err));
  }
  int read_fd = Above2(pipe_fds[0]);
  plan.err_fd = Above2(pipe_fds[1]);

  const pid_t pid = fork();
  if (pid == 0) RunChild(plan);
  const int fork_errno = errno;
  close(plan.err_fd);
  close(plan.log_fd);
  close(plan.null_fd);
  if (pid < 0) {
    close(read_fd);
    return Status::IoError("fork for " + spec.argv[0] + ": " + ErrnoText(fork_errno));
  }
  setpgid(pid, pid);  // also done by the child; whichever runs first wins the race harmlessly
  int msg[2] = {0, 0};
  ssize_t n;
  do {
    n = read(read_fd, msg, sizeof(msg));
  } while (n < 0 && errno == EINTR);
  close(read_fd);
  if (n == static_cast<ssize_t>(sizeof(msg))) {
    int status = 0;
    waitpid(pid, &status, 0);
    return Status::IoError("starting " + spec.argv[0] + ": " + ChildStepName(msg[0]) +
                           " failed: " + ErrnoText(msg[1]));
  }
  return pid;
}

class Launcher {
 public:
  static Launcher& Get() {
    // Never destroyed: its thread must outlive every child (PR_SET_PDEATHSIG watches it).
    static Launcher* launcher = new Launcher();
    return *launcher;
  }

  Result<pid_t> Spawn(const SpawnSpec& spec) {
    if (std::this_thread::get_id() == thread_id_) return ForkExec(spec);
    Request req;
    req.spec = &spec;
    std::unique_lock<std::mutex> lock(mu_);
    queue_.push_back(&req);
    work_cv_.notify_one();
    done_cv_.wait(lock, [&] { return req.result.has_value(); });
    return std::move(*req.result);
  }

 private:
  struct Request {
    const SpawnSpec* spec = nullptr;
    std::optional<Result<pid_t>> result;
  };

  Launcher() {
    std::thread t([this] { Loop(); });
    thread_id_ = t.get_id();
    t.detach();
  }

  [[noreturn]] void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [&] { return !queue_.empty(); });
      Request* req = queue_.front();
      queue_.pop_front();
      lock.unlock();
      Result<pid_t> result = ForkExec(*req->spec);
      lock.lock();
      req->result.emplace(std::move(result));
      done_cv_.notify_all();
    }
  }

  std::thread::id thread_id_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<Request*> queue_;
};

// --- sockets -----------------------------------------------------------------------------------

sockaddr_in Loopback(int port) {
  sockaddr_in addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// A connected socket to 127.0.0.1:port, or -1.
int ConnectWithin(int port, milliseconds timeout) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr = Loopback(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS) {
      close(fd);
      return -1;
    }
    pollfd pfd{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof(err);
    if (poll(&pfd, 1, static_cast<int>(timeout.count())) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

std::string ToLower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// --- folders -------------------------------------------------------------------------------------

std::atomic<int> g_dir_counter{0};

// server.pid: "<pid> <death signal> <start time>".
constexpr char kPidFile[] = "server.pid";
constexpr char kOwnerFile[] = "owner";

void KillRecordedServer(const std::string& dir) {
  Result<std::string> text = ReadFile(dir + "/" + kPidFile);
  if (!text.ok()) return;
  std::istringstream in(*text);
  long pid = 0;
  int sig = SIGKILL;
  unsigned long long start = 0;
  if (!(in >> pid >> sig >> start) || pid <= 0) return;
  std::optional<ProcStat> st = ReadProcStat(static_cast<pid_t>(pid));
  if (!st || st->start_time != start || !ProcessAlive(static_cast<pid_t>(pid))) return;
  const pid_t p = static_cast<pid_t>(pid);
  kill(p, sig);
  WaitGone({p}, std::chrono::seconds(10));
  if (ProcessAlive(p)) {
    kill(p, SIGSTOP);
    std::vector<pid_t> children = ChildrenOf(p);
    for (pid_t c : children) kill(c, SIGKILL);
    kill(p, SIGKILL);
    children.push_back(p);
    WaitGone(children, std::chrono::seconds(5));
  }
}

void SweepDir(const fs::path& dir) {
  KillRecordedServer(dir.string());
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec) && fs::exists(e.path() / "postmaster.pid", ec)) {
      RemoveStalePostgresShm(e.path().string());
    }
  }
  RemoveTree(dir.string()).ok();  // best effort: a concurrent sweeper may win
}

// Whether the process that created `dir` (named "<pid>-<n>") is gone.
bool OwnerGone(const fs::path& dir, pid_t owner) {
  if (!ProcessAlive(owner)) return true;
  Result<std::string> recorded = ReadFile((dir / kOwnerFile).string());
  if (!recorded.ok()) return false;  // being created right now
  std::optional<ProcStat> st = ReadProcStat(owner);
  return st && std::to_string(st->start_time) != *recorded;  // pid reused
}

}  // namespace

// --- public: processes
// ----------------------------------------------------------------------------

bool ProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  std::optional<ProcStat> st = ReadProcStat(pid);
  if (!st) return false;
  if (st->state != 'Z' && st->state != 'X') return true;
  // A killed multi-threaded process: its main thread turns zombie first while other threads
  // still exit, and only the last one releases its files (listening sockets).
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (d == nullptr) return false;
  bool alive = false;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long tid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || tid == pid) continue;
    std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + e->d_name + "/stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z' &&
        line[close + 2] != 'X') {
      alive = true;
      break;
    }
  }
  closedir(d);
  return alive;
}

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    std::optional<ProcStat> st = ReadProcStat(static_cast<pid_t>(pid));
    if (st && st->ppid == parent) out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

Result<std::optional<RunAs>> PostgresAccount() {
  if (geteuid() != 0) return std::optional<RunAs>();
  passwd pw;
  passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (getpwnam_r("postgres", &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return Status::NotFound(
        "PostgreSQL refuses to run as root and there is no 'postgres' system user: install the "
        "postgresql package or run the tests as a normal user");
  }
  RunAs r;
  r.uid = pw.pw_uid;
  r.gid = pw.pw_gid;
  int n = 64;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  if (getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &n) < 0) {
    groups.resize(static_cast<size_t>(n));
    getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &n);
  }
  groups.resize(static_cast<size_t>(std::max(n, 0)));
  r.groups = std::move(groups);
  return std::optional<RunAs>(std::move(r));
}

Result<pid_t> Spawn(const SpawnSpec& spec) { return Launcher::Get().Spawn(spec); }

bool TryReap(pid_t pid, int* wait_status) {
  int st = 0;
  pid_t r;
  do {
    r = waitpid(pid, &st, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid) {
    *wait_status = st;
    return true;
  }
  if (r < 0 && errno == ECHILD) {  // reaped by someone else
    *wait_status = 0;
    return true;
  }
  return false;
}

Result<int> WaitForExit(pid_t pid, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto nap = milliseconds(1);
  for (;;) {
    int st = 0;
    if (TryReap(pid, &st)) return st;
    if (Clock::now() >= deadline) {
      return Status::Timeout("process " + std::to_string(pid) + " still running after " +
                             std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, milliseconds(20));
  }
}

std::string DescribeWaitStatus(int st) {
  if (WIFEXITED(st)) return "exited with code " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    return "killed by signal " + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) +
           ")";
  }
  return "ended with wait status " + std::to_string(st);
}

int TerminateChild(pid_t pid, int sig, milliseconds grace) {
  kill(pid, sig);
  Result<int> st = WaitForExit(pid, grace);
  if (st.ok()) return *st;
  KillProcessTree(pid);
  return W_EXITCODE(0, SIGKILL);
}

void KillProcessTree(pid_t pid) {
  if (kill(pid, SIGSTOP) == 0) {
    // Wait (briefly) until it is stopped, so it can not fork while we collect its children.
    const auto deadline = Clock::now() + milliseconds(500);
    while (Clock::now() < deadline) {
      std::optional<ProcStat> st = ReadProcStat(pid);
      if (!st || st->state == 'T' || st->state == 'Z') break;
      std::this_thread::sleep_for(milliseconds(1));
    }
  }
  std::vector<pid_t> children = ChildrenOf(pid);
  for (pid_t c : children) kill(c, SIGKILL);
  kill(pid, SIGKILL);
  WaitForExit(pid, std::chrono::seconds(10)).status().ok();
  WaitGone(children, std::chrono::seconds(5));
}

Status RunCommand(const SpawnSpec& spec, milliseconds timeout, std::string_view what) {
  DBS_ASSIGN_OR_RETURN(pid_t pid, Spawn(spec));
  Result<int> st = WaitForExit(pid, timeout);
  std::string tail;
  if (!spec.log_path.empty()) {
    tail = "\n--- last lines of " + spec.log_path + " ---\n" + ReadFileTail(spec.log_path, 30);
  }
  if (!st.ok()) {
    KillProcessTree(pid);
    return Status::Timeout(std::string(what) + " did not finish within " +
                           std::to_string(timeout.count() / 1000) + " s" + tail);
  }
  if (!WIFEXITED(*st) || WEXITSTATUS(*st) != 0) {
    return Status(StatusCode::kUnavailable, Retry::kFail,
                  std::string(what) + " failed: " + DescribeWaitStatus(*st) + tail);
  }
  return Status::Ok();
}

Result<std::string> CaptureOutput(const std::vector<std::string>& argv, milliseconds timeout) {
  char path[] = "/tmp/dbstreams-capture-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return Status::IoError(std::string("mkstemp: ") + ErrnoText(errno));
  close(fd);
  SpawnSpec spec;
  spec.argv = argv;
  spec.log_path = path;
  Status st = RunCommand(spec, timeout, argv.empty() ? "command" : argv[0]);
  Result<std::string> out = ReadFile(path);
  unlink(path);
  if (!st.ok()) return st;
  return out;
}

Result<std::string> FindProgram(const std::string& name) {
  auto usable = [](const std::string& p) {
    struct stat sb;
    return stat(p.c_str(), &sb) == 0 && S_ISREG(sb.st_mode) && access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (usable(name)) return name;
    return Status::NotFound(name + " is not an executable file");
  }
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::istringstream in(path);
    std::string d;
    while (std::getline(in, d, ':')) {
      if (!d.empty()) dirs.push_back(d);
    }
  }
  for (const char* d :
       {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    dirs.emplace_back(d);
  }
  for (const std::string& d : dirs) {
    std::string p = d + "/" + name;
    if (usable(p)) return p;
  }
  return Status::NotFound(name + " not found on PATH or in /usr/sbin, /usr/bin: is it installed?");
}

// --- public: ports ----------------------------------------------------------------------------

Result<std::vector<int>> PickFreePorts(int count) {
  std::vector<int> fds;
  std::vector<int> ports;
  Status error;
  for (int i = 0; i < count && error.ok(); ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = Status::IoError("socket: " + ErrnoText(errno));
      break;
    }
    fds.push_back(fd);
    sockaddr_in addr = Loopback(0);
    socklen_t len = sizeof(addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      error = Status::IoError("choosing a free port: " + ErrnoText(errno));
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) close(fd);
  if (!error.ok()) return error;
  return ports;
}

bool CanConnect(int port) {
  int fd = ConnectWithin(port, milliseconds(1000));
  if (fd < 0) return false;
  close(fd);
  return true;
}

int HttpGetStatus(int port, const std::string& path, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  int fd = ConnectWithin(port, timeout);
  if (fd < 0) return -1;
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  size_t sent = 0;
  std::string resp;
  while (Clock::now() < deadline) {
    const int left =
        static_cast<int>(std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count());
    pollfd pfd{fd, static_cast<short>(sent < req.size() ? POLLOUT : POLLIN), 0};
    if (poll(&pfd, 1, std::max(left, 1)) <= 0) break;
    if (sent < req.size()) {
      ssize_t n = send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
      continue;
    }
    char buf[512];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
    if (resp.find("\r\n") != std::string::npos) break;
  }
  close(fd);
  // "HTTP/1.1 200 OK"
  if (resp.rfind("HTTP/", 0) != 0) return -1;
  const size_t sp = resp.find(' ');
  if (sp == std::string::npos) return -1;
  return std::atoi(resp.c_str() + sp + 1);
}

bool LogSaysAddressInUse(const std::string& log_text) {
  return ToLower(log_text).find("address already in use") != std::string::npos;
}

// --- public: folders ---------------------------------------------------------------------------

Result<std::string> CreateServerDir() {
  static std::once_flag swept;
  std::call_once(swept, [] { SweepStaleDirs(); });
  std::error_code ec;
  if (!fs::is_directory(kTestRoot, ec)) {
    fs::create_directories(kTestRoot, ec);
    if (ec && !fs::is_directory(kTestRoot)) {
      return Status::IoError(std::string("creating ") + kTestRoot + ": " + ec.message());
    }
    chmod(kTestRoot, 01777);  // shared like /tmp (best effort: another user may own it)
  }
  std::optional<ProcStat> me = ReadProcStat(getpid());
  for (int attempt = 0; attempt < 1000; ++attempt) {
    std::string dir = std::string(kTestRoot) + "/" + std::to_string(getpid()) + "-" +
                      std::to_string(g_dir_counter.fetch_add(1));
    if (mkdir(dir.c_str(), 0755) != 0) {
      if (errno == EEXIST) continue;  // left by a dead process with our pid
      return Status::IoError("creating " + dir + ": " + ErrnoText(errno));
    }
    chmod(dir.c_str(), 0755);  // PostgreSQL (another user) must reach its data folder
    DBS_RETURN_IF_ERROR(
        WriteFile(dir + "/" + kOwnerFile, me ? std::to_string(me->start_time) : "0"));
    return dir;
  }
  return Status::IoError(std::string("could not create a server folder in ") + kTestRoot);
}

void SweepStaleDirs() {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(kTestRoot, ec)) {
    const std::string name = e.path().filename().string();
    char* end = nullptr;
    long owner = std::strtol(name.c_str(), &end, 10);
    if (end == name.c_str() || *end != '-' || owner <= 0) continue;
    if (owner == getpid() || !OwnerGone(e.path(), static_cast<pid_t>(owner))) continue;
    SweepDir(e.path());
  }
  // Template builds of dead processes: "<name>.tmp-<pid>-<n>".
  for (const fs::directory_entry& e : fs::directory_iterator(kCacheRoot, ec)) {
    const std::string name = e.path().filename().string();
    const size_t at = name.find(".tmp-");
    if (at == std::string::npos) continue;
    long owner = std::strtol(name.c_str() + at + 5, nullptr, 10);
    if (owner > 0 && owner != getpid() && !ProcessAlive(static_cast<pid_t>(owner))) {
      RemoveTree(e.path().string()).ok();
    }
  }
}

Status RemoveTree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return Status::IoError("removing " + path + ": " + ec.message());
  }
  return Status::Ok();
}

Status WriteFile(const std::string& path, const std::string& contents, mode_t mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Status::IoError("writing " + path + ": " + ErrnoText(errno));
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t n = write(fd, contents.data() + off, contents.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      close(fd);
      return Status::IoError("writing " + path + ": " + ErrnoText(err));
    }
    off += static_cast<size_t>(n);
  }
  fchmod(fd, mode);
  close(fd);
  return Status::Ok();
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ReadFileTail(const std::string& path, size_t max_lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff start = std::max<std::streamoff>(0, size - 16384);
  in.seekg(start);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  size_t lines = 0;
  while (pos > 0) {
    if (text[pos - 1] == '\n' && ++lines == max_lines) break;
    --pos;
  }
  return text.substr(pos);
}

void RemoveStalePostgresShm(const std::string& data_dir) {
  Result<std::string> text = ReadFile(data_dir + "/postmaster.pid");
  if (!text.ok()) return;
  std::istringstream in(*text);
  std::string line;
  for (int i = 0; i < 7 && std::getline(in, line); ++i) {
    if (i != 6) continue;
    // Line 7: "<shm key> <shm id>".
    std::istringstream fields(line);
    long long key = 0;
    long long id = -1;
    if (!(fields >> key >> id) || id < 0) return;
    shmid_ds ds;
    if (shmctl(static_cast<int>(id), IPC_STAT, &ds) != 0) return;
    if (ds.shm_perm.__key == static_cast<key_t>(key) && ds.shm_nattch == 0) {
      shmctl(static_cast<int>(id), IPC_RMID, nullptr);
    }
  }
}

Result<std::string> EnsureTemplate(const std::string& name,
                                   const std::function<Status(const std::string& dir)>& build) {
  const std::string final_dir = std::string(kCacheRoot) + "/" + name;
  std::error_code ec;
  if (fs::is_directory(final_dir, ec)) return final_dir;
  if (!fs::is_directory(kCacheRoot, ec)) {
    fs::create_directories(kCacheRoot, ec);
    chmod(kCacheRoot, 0755);
  }
  const std::string tmp = final_dir + ".tmp-" + std::to_string(getpid()) + "-" +
                          std::to_string(g_dir_counter.fetch_add(1));
  DBS_RETURN_IF_ERROR(RemoveTree(tmp));
  if (mkdir(tmp.c_str(), 0755) != 0) {
    return Status::IoError("creating " + tmp + ": " + ErrnoText(errno));
  }
  chmod(tmp.c_str(), 0755);
  Status built = build(tmp);
  if (!built.ok()) {
    RemoveTree(tmp).ok();
    return built.WithContext("building the template " + final_dir);
  }
  if (rename(tmp.c_str(), final_dir.c_str()) != 0) {
    const int err = errno;
    RemoveTree(tmp).ok();
    // Another process finished first: use its template.
    if (!fs::is_directory(final_dir, ec)) {
      return Status::IoError("renaming " + tmp + " to " + final_dir + ": " + ErrnoText(err));
    }
  }
  return final_dir;
}

// --- ServerProcess ------------------------------------------------------------------------------

ServerProcess::ServerProcess(std::string name, std::string dir, int stop_signal, int death_signal)
    : name_(std::move(name)),
      dir_(std::move(dir)),
      log_path_(dir_ + "/server.log"),
      stop_signal_(stop_signal),
      death_signal_(death_signal),
      owner_(getpid()) {}

ServerProcess::~ServerProcess() { Kill(); }

bool ServerProcess::owned_here() const { return getpid() == owner_; }

Status ServerProcess::Start(SpawnSpec spec) {
  if (Running()) return Status::FailedPrecondition(name_ + " is already running");
  DBS_RETURN_IF_ERROR(WriteFile(log_path_, ""));
  spec.log_path = log_path_;
  spec.death_signal = death_signal_;
  DBS_ASSIGN_OR_RETURN(pid_, Spawn(spec));
  exit_description_.clear();
  std::optional<ProcStat> st = ReadProcStat(pid_);
  return WriteFile(dir_ + "/" + kPidFile, std::to_string(pid_) + " " +
                                              std::to_string(death_signal_) + " " +
                                              std::to_string(st ? st->start_time : 0) + "\n");
}

bool ServerProcess::Running() {
  if (pid_ <= 0 || !owned_here()) return false;
  int st = 0;
  if (!TryReap(pid_, &st)) return true;
  exit_description_ = DescribeWaitStatus(st);
  pid_ = -1;
  unlink((dir_ + "/" + kPidFile).c_str());
  return false;
}

Status ServerProcess::Stop(milliseconds grace) {
  if (!Running()) return Status::Ok();
  const int st = TerminateChild(pid_, stop_signal_, grace);
  exit_description_ = DescribeWaitStatus(st);
  pid_ = -1;
  unlink((dir_ + "/" + kPidFile).c_str());
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
    return Status::Timeout(name_ + " did not shut down within " +
                           std::to_string(grace.count() / 1000) + " s and was killed\n" +
                           "--- last lines of " + log_path_ + " ---\n" + LogTail());
  }
  return Status::Ok();
}

void ServerProcess::Kill() {
  if (!Running()) return;
  KillProcessTree(pid_);
  exit_description_ = "killed by signal 9 (Killed)";
  pid_ = -1;
  unlink((dir_ + "/" + kPidFile).c_str());
}

Status ServerProcess::WaitUntilReady(milliseconds timeout, const std::function<bool()>& ready) {
  const auto start = Clock::now();
  auto nap = milliseconds(20);
  for (;;) {
    if (!Running()) {
      return Status::Unavailable(name_ + " exited during startup (" + exit_description_ +
                                 ")\n--- last lines of " + log_path_ + " ---\n" + LogTail());
    }
    if (ready()) return Status::Ok();
    if (Clock::now() - start >= timeout) {
      return Status::Timeout(name_ + " was not ready after " +
                             std::to_string(timeout.count() / 1000) + " s\n--- last lines of " +
                             log_path_ + " ---\n" + LogTail());
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap + milliseconds(20), milliseconds(100));
  }
}

std::string ServerProcess::LogTail() const { return ReadFileTail(log_path_, 40); }

}  // namespace dbs::testing

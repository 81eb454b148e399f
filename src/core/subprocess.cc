#include "core/subprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace dbs {

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const SpawnOptions& o) {
  if (o.argv.empty()) return Status::InvalidArgument("spawn: empty argv");
  std::vector<char*> argv;
  for (const std::string& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) env_store.emplace_back(*e);
  for (const std::string& e : o.env) env_store.push_back(e);
  std::vector<char*> envp;
  for (std::string& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* out = o.output_file.empty() ? "/dev/null" : o.output_file.c_str();
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return Status::IoError("spawn: pipe failed");
  const pid_t parent = getpid();

  pid_t pid = fork();
  if (pid < 0) {
    close(err_pipe[0]);
    close(err_pipe[1]);
    return Status::IoError(std::string("spawn: fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    auto fail = [&](int code) {
      int e = errno;
      (void)!write(err_pipe[1], &code, sizeof code);
      (void)!write(err_pipe[1], &e, sizeof e);
      _exit(127);
    };
    setpgid(0, 0);
    if (o.umask >= 0) umask(static_cast<mode_t>(o.umask));
    int fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, o.umask >= 0 ? 0600 : 0644);
    if (fd < 0) fail(1);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) fail(2);
    if (o.gid != static_cast<gid_t>(-1) && (setgroups(0, nullptr) != 0 || setgid(o.gid) != 0)) {
      fail(3);
    }
    if (o.uid != static_cast<uid_t>(-1) && setuid(o.uid) != 0) fail(4);
    // After the credential change, which clears the death signal.
    if (o.death_signal != 0) {
      prctl(PR_SET_PDEATHSIG, o.death_signal);
      if (getppid() != parent) _exit(126);  // the parent died before prctl
    }
    if (!o.working_dir.empty() && chdir(o.working_dir.c_str()) != 0) fail(5);
    execvpe(argv[0], argv.data(), envp.data());
    fail(6);
  }
  close(err_pipe[1]);
  int code = 0, e = 0;
  ssize_t n = read(err_pipe[0], &code, sizeof code);
  if (n == sizeof code) (void)!read(err_pipe[0], &e, sizeof e);
  close(err_pipe[0]);
  if (n == sizeof code) {
    waitpid(pid, nullptr, 0);
    static const char* kSteps[] = {
        "", "opening the output file", "redirecting output", "setgid", "setuid", "chdir", "exec"};
    return Status::IoError("spawn " + o.argv[0] + ": " + kSteps[code] +
                           " failed: " + std::strerror(e));
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid));
}

ChildProcess::~ChildProcess() {
  if (!exited_) Terminate(SIGTERM, std::chrono::seconds(10));
}

bool ChildProcess::Running() {
  if (exited_) return false;
  int st;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    exited_ = true;
    status_ = st;
    return false;
  }
  return r == 0;
}

Result<int> ChildProcess::Wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  // Looked for every millisecond at first (a signalled process is often gone within a few),
  // then less often.
  std::chrono::microseconds poll{1000};
  while (Running()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Timeout("process " + std::to_string(pid_) + " still running");
    }
    std::this_thread::sleep_for(poll);
    poll = std::min(poll * 2, std::chrono::microseconds(10000));
  }
  return status_;
}

int ChildProcess::Terminate(int sig, std::chrono::milliseconds grace) {
  if (!Running()) return status_;
  kill(pid_, sig);
  if (Wait(grace).ok()) return status_;
  kill(pid_, SIGKILL);
  int st = 0;
  waitpid(pid_, &st, 0);
  exited_ = true;
  status_ = st;
  return status_;
}

Result<int> FindFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IoError("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return Status::IoError("cannot bind a free port");
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

bool CanConnect(const std::string& host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    close(fd);
    return false;
  }
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

}  // namespace dbs

#include "api/client_watch.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

namespace dbs::api {

namespace {

// "address" and port of a socket address, numeric.
bool NameOf(const sockaddr_storage& a, socklen_t len, std::string* host, int* port) {
  char h[NI_MAXHOST], s[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, h, sizeof h, s, sizeof s,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return false;
  }
  *host = h;
  *port = std::atoi(s);
  return true;
}

bool Matches(int fd, const httplib::Request& req) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  std::string host;
  int port = 0;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return false;
  if (!NameOf(a, len, &host, &port) || port != req.local_port || host != req.local_addr) {
    return false;
  }
  len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return false;
  return NameOf(a, len, &host, &port) && port == req.remote_port && host == req.remote_addr;
}

}  // namespace

ClientWatch::ClientWatch(const httplib::Request& req) {
  if (req.remote_port <= 0 || req.local_port <= 0) return;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(d)) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (Matches(static_cast<int>(fd), req)) {
      fd_ = static_cast<int>(fd);
      break;
    }
  }
  closedir(d);
}

bool ClientWatch::Gone() const {
  if (fd_ < 0) return false;
  pollfd p{};
  p.fd = fd_;
  p.events = POLLIN | POLLRDHUP;
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (p.revents & POLLIN) {
    char c;
    return recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;  // 0: orderly shutdown by the peer
  }
  return false;
}

}  // namespace dbs::api

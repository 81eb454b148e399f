// ClientWatch: tells whether the client of a request still being served closed its connection,
// so a long statement can be cancelled when nobody waits for its answer.
//
// Contract: constructed on the thread serving the request (cpp-httplib 0.11 does not hand the
// socket to a handler, so the socket is found among the process's descriptors by the request's
// local and peer addresses). Gone() only polls the socket (never reads or closes it) and may be
// called from any thread while the request is served. When the socket cannot be found, Gone()
// is always false.
#pragma once

#include <httplib.h>

namespace dbs::api {

class ClientWatch {
 public:
  explicit ClientWatch(const httplib::Request& req);
  // True once the peer closed or reset the connection.
  bool Gone() const;
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace dbs::api

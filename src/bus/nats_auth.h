// Who may do what on the bus. Three roles, each a NATS user with its own password and
// permissions (nats-server enforces them):
//
//   api     publishes control requests (dbs.control.>), its logs and JetStream API calls;
//           subscribes to heartbeats, run states, progress and logs.
//   reader  publishes a stream's subjects (dbs.<stream>.>), heartbeats, logs, run states and
//           JetStream API calls, never dbs.control.>; subscribes to dbs.control.reader,
//           dbs.control.run and writer feedback.
//   writer  like a reader, plus JetStream acknowledgements; subscribes to dbs.control.writer
//           and dbs.control.run.
//
// Every role may subscribe to _INBOX.> (request replies, JetStream fetches) and nothing else:
// no user can subscribe to ">" or to another role's control subject, and only the API can
// publish control messages. The embedded nats-server of `dbstreams serve` and `dbstreams run`
// always runs with these users; an external cluster can use AuthorizationConf as a template.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace dbs::bus {

enum class NatsRole { kApi, kReader, kWriter };
std::string_view RoleName(NatsRole role);

struct NatsUser {
  std::string user;
  std::string password;
};

struct NatsUsers {
  NatsUser api, reader, writer;
  // The passwords are random 256-bit secrets (Generate's), not chosen by a person: their
  // hashes need no slow bcrypt cost (below).
  bool random = false;
  // Fresh users "dbs-api", "dbs-reader", "dbs-writer" with random 256-bit passwords.
  static NatsUsers Generate();
  const NatsUser& For(NatsRole role) const;
  bool empty() const { return api.password.empty(); }
};

// The nats-server configuration block `authorization { users = [...] }` for `users`: bcrypt
// hashes instead of the passwords, and each role's permissions. Random passwords get bcrypt's
// lowest cost (4): a slow hash only protects guessable passwords, and nats-server pays the cost
// again on every connection (cost 10 made a small run 0.3 s slower and cost 0.5 CPU s).
Result<std::string> AuthorizationConf(const NatsUsers& users);

}  // namespace dbs::bus

#include "bus/nats_auth.h"

#include <sodium.h>

#include <vector>

#include "security/password_hash.h"
#include "security/sealed_box.h"

namespace dbs::bus {

namespace {

std::string RandomPassword() {
  (void)security::InitCrypto();
  unsigned char b[32];
  randombytes_buf(b, sizeof b);
  char hex[sizeof b * 2 + 1];
  sodium_bin2hex(hex, sizeof hex, b, sizeof b);
  sodium_memzero(b, sizeof b);
  return hex;
}

std::string List(const std::vector<std::string>& subjects) {
  std::string s = "[";
  for (size_t i = 0; i < subjects.size(); ++i) {
    s += (i ? ", \"" : "\"") + subjects[i] + "\"";
  }
  return s + "]";
}

struct Permissions {
  std::vector<std::string> pub_allow, pub_deny, sub_allow;
};

Permissions For(NatsRole role) {
  switch (role) {
    case NatsRole::kApi:
      return {{"dbs.control.>", "dbs.logs.>", "$JS.API.>", "_INBOX.>"},
              {},
              {"dbs.heartbeat.>", "dbs.runs.*.state", "dbs.*.progress", "dbs.logs.>", "_INBOX.>"}};
    case NatsRole::kReader:
      return {{"dbs.>", "$JS.API.>", "_INBOX.>"},
              {"dbs.control.>"},
              {"dbs.control.reader", "dbs.control.run", "dbs.feedback.>", "_INBOX.>"}};
    case NatsRole::kWriter:
      return {{"dbs.>", "$JS.API.>", "$JS.ACK.>", "_INBOX.>"},
              {"dbs.control.>"},
              {"dbs.control.writer", "dbs.control.run", "_INBOX.>"}};
  }
  return {};
}

}  // namespace

std::string_view RoleName(NatsRole role) {
  switch (role) {
    case NatsRole::kApi:
      return "api";
    case NatsRole::kReader:
      return "reader";
    case NatsRole::kWriter:
      return "writer";
  }
  return "?";
}

NatsUsers NatsUsers::Generate() {
  NatsUsers u;
  u.api = {"dbs-api", RandomPassword()};
  u.reader = {"dbs-reader", RandomPassword()};
  u.writer = {"dbs-writer", RandomPassword()};
  u.random = true;
  return u;
}

const NatsUser& NatsUsers::For(NatsRole role) const {
  switch (role) {
    case NatsRole::kApi:
      return api;
    case NatsRole::kReader:
      return reader;
    case NatsRole::kWriter:
      return writer;
  }
  return api;
}

Result<std::string> AuthorizationConf(const NatsUsers& users) {
  std::string out = "authorization {\n  users = [\n";
  for (NatsRole role : {NatsRole::kApi, NatsRole::kReader, NatsRole::kWriter}) {
    const NatsUser& u = users.For(role);
    if (u.user.empty() || u.password.empty()) {
      return Status::InvalidArgument("NATS user for role " + std::string(RoleName(role)) +
                                     " has no name or password");
    }
    DBS_ASSIGN_OR_RETURN(std::string hash,
                         security::HashPassword(u.password, users.random ? 4 : 10));
    const Permissions p = For(role);
    out += "    {user: \"" + u.user + "\", password: \"" + hash + "\", permissions: {\n";
    out += "      publish: {allow: " + List(p.pub_allow);
    if (!p.pub_deny.empty()) out += ", deny: " + List(p.pub_deny);
    out += "},\n      subscribe: {allow: " + List(p.sub_allow) + "}\n    }}\n";
  }
  return out + "  ]\n}\n";
}

}  // namespace dbs::bus

#include "security/password_hash.h"

#include <crypt.h>
#include <sodium.h>

#include <cstring>
#include <memory>

namespace dbs::security {

namespace {

// crypt_r's state is large (32 KiB+): keep it off the stack.
Result<std::string> Crypt(std::string_view password, const char* setting) {
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const std::string pw(password);
  const char* h = crypt_r(pw.c_str(), setting, data.get());
  if (h == nullptr || h[0] == '*') return Status::Internal("bcrypt is not available");
  std::string out(h);
  sodium_memzero(data.get(), sizeof(crypt_data));
  return out;
}

}  // namespace

Result<std::string> HashPassword(std::string_view password, int cost) {
  // "$2a$": nats-server recognizes a bcrypt hash by this prefix.
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (crypt_gensalt_rn("$2a$", static_cast<unsigned long>(cost), nullptr, 0, setting,
                       sizeof setting) == nullptr) {
    return Status::Internal(std::string("cannot make a bcrypt salt: ") + std::strerror(errno));
  }
  return Crypt(password, setting);
}

bool VerifyPassword(std::string_view password, const std::string& hash) {
  auto h = Crypt(password, hash.c_str());
  return h.ok() && h->size() == hash.size() &&
         sodium_memcmp(h->data(), hash.data(), hash.size()) == 0;
}

}  // namespace dbs::security

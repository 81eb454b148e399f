// bcrypt password hashes ("$2a$<cost>$..."), the form nats-server accepts in place of a plain
// password in its configuration, made with libxcrypt.
//
// Contract: HashPassword returns a fresh salted hash (Internal when the system has no bcrypt);
// VerifyPassword compares in constant time. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace dbs::security {

Result<std::string> HashPassword(std::string_view password, int cost = 10);
bool VerifyPassword(std::string_view password, const std::string& hash);

}  // namespace dbs::security

// The secrets' master key in the desktop keyring (the Secret Service over D-Bus, through
// libsecret: GNOME Keyring, KWallet), where a desktop session has one. The key then lives
// neither in the data folder nor in the environment, and the keyring's own login protects it.
//
// Contract: KeyringMasterKey returns the key (64 hex digits) stored for `data_dir` (made
// absolute), creating and storing a fresh one on first use. Unavailable, saying what to do,
// when there is no session bus or Secret Service, or the keyring is locked and cannot be
// unlocked. Blocking; thread-safe.
#pragma once

#include <string>

#include "core/result.h"

namespace dbs::store {

Result<std::string> KeyringMasterKey(const std::string& data_dir);

}  // namespace dbs::store

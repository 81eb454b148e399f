// Secrets store: write-only values (passwords, keys) addressed by a reference string. Backends
// are chosen by name (SECRETS_BACKEND); "file" is the default: one file in the data folder,
// encrypted and authenticated with XChaCha20-Poly1305 (libsodium), master key from
// DBS_MASTER_KEY (64 hex digits), or a key file (DBS_MASTER_KEY_FILE, best outside the data
// folder), or else data_dir/master.key; a key file is created (0600) on first start and refused
// when others can read it.
//
// Contract:
//  - Thread-safe. Values never appear in errors or logs (only references do).
//  - Get() of a missing reference is NotFound; a file that does not decrypt is Corruption
//    ("wrong master key or damaged file").
#pragma once

#include <memory>
#include <string>

#include "core/result.h"

namespace dbs::store {

class SecretsStore {
 public:
  // `master_key_hex`: DBS_MASTER_KEY's value; when "", the key file `master_key_file`; when
  // that is "" too, data_dir/master.key.
  static Result<std::unique_ptr<SecretsStore>> Open(const std::string& backend,
                                                    const std::string& data_dir,
                                                    const std::string& master_key_hex,
                                                    const std::string& master_key_file = "");
  virtual ~SecretsStore() = default;
  virtual Status Put(const std::string& ref, const std::string& value) = 0;
  virtual Result<std::string> Get(const std::string& ref) = 0;
  virtual Status Delete(const std::string& ref) = 0;  // missing refs are not an error
};

// Hex SHA-256 of `data` (API key hashes).
std::string Sha256Hex(const std::string& data);
// `n` random bytes as hex.
std::string RandomHex(size_t n);

}  // namespace dbs::store

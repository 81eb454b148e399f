// Anonymous sealed boxes (X25519 + XSalsa20-Poly1305, libsodium crypto_box_seal): anyone who
// knows a public key can seal a message that only the holder of the matching secret key can
// open, and no one can tell who sealed it.
//
// Contract:
//  - BoxKeyPair::Generate() never fails once libsodium is initialized (it initializes it).
//  - Keys and boxes travel as standard base64 (no padding stripped).
//  - Open() of a box not sealed to this key pair, or altered, is Corruption; nothing partial is
//    returned. The secret key is wiped when the pair is destroyed. Thread-safe (immutable).
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace dbs::security {

class BoxKeyPair {
 public:
  static BoxKeyPair Generate();
  ~BoxKeyPair();
  BoxKeyPair(BoxKeyPair&& other) noexcept;
  BoxKeyPair& operator=(BoxKeyPair&& other) noexcept;
  BoxKeyPair(const BoxKeyPair&) = delete;
  BoxKeyPair& operator=(const BoxKeyPair&) = delete;

  // The public key, base64.
  const std::string& public_key() const { return public_b64_; }
  // Opens a base64 box sealed to this pair's public key.
  Result<std::string> Open(std::string_view box_b64) const;

 private:
  BoxKeyPair() = default;
  std::string public_;  // raw bytes
  std::string secret_;  // raw bytes
  std::string public_b64_;
};

// Seals `plain` to the base64 public key `recipient`; InvalidArgument for a malformed key.
Result<std::string> SealTo(std::string_view recipient, std::string_view plain);

// Standard base64 of bytes, and back (InvalidArgument for bad input).
std::string Base64Encode(std::string_view bytes);
Result<std::string> Base64Decode(std::string_view b64);

// Initializes libsodium once (thread-safe); Internal when it cannot.
Status InitCrypto();

}  // namespace dbs::security

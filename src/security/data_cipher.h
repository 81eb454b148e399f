// Row data on the bus, encrypted (optional, per stream: `busEncryption`): XChaCha20-Poly1305
// with the stream's 256-bit data key. A sealed payload is "DBE1" | 24-byte random nonce |
// ciphertext | 16-byte tag. The associated data binds a payload to its place: the bundle id for
// load bundles (a writer de-duplicates by that id, so a payload replayed under another id does
// not open), the subject for change messages (which carry their own sequence number).
//
// Contract: Seal never fails; Open fails with Corruption (retry: fail) on a payload that is not
// sealed, sealed with another key or associated data, or altered. Thread-safe (immutable).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace dbs::security {

class DataCipher {
 public:
  // From 64 hex digits; InvalidArgument otherwise.
  static Result<DataCipher> FromHex(std::string_view key_hex);
  // A fresh random key, as 64 hex digits.
  static std::string NewKeyHex();
  ~DataCipher();
  DataCipher(const DataCipher& other) = default;
  DataCipher& operator=(const DataCipher& other) = default;

  // Replaces `*out` with the sealed form of `plain`.
  void Seal(std::string_view ad, std::string_view plain, std::string* out) const;
  // Replaces `*out` with the plain payload.
  Status Open(std::string_view ad, std::string_view sealed, std::string* out) const;
  // Bytes a sealed payload adds to the plain one.
  static constexpr size_t kOverhead = 4 + 24 + 16;

 private:
  DataCipher() = default;
  std::string key_;
};

// The cipher of a stream: nullopt when `enabled` is false; InvalidArgument when it is on without
// a key (a stream file run as separate reader/writer processes must name `busKey`).
Result<std::optional<DataCipher>> StreamCipher(bool enabled, const std::string& key_hex);

// Associated data of a load bundle and of a change message (see above).
inline std::string BundleAd(std::string_view bundle_id) {
  return "bundle:" + std::string(bundle_id);
}
inline std::string ChangeAd(std::string_view subject) { return "cdc:" + std::string(subject); }

}  // namespace dbs::security

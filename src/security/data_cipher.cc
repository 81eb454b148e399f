#include "security/data_cipher.h"

#include <sodium.h>

#include "security/sealed_box.h"

namespace dbs::security {

namespace {
constexpr char kMagic[] = "DBE1";
constexpr size_t kMagicLen = 4;
constexpr size_t kNonceLen = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
constexpr size_t kTagLen = crypto_aead_xchacha20poly1305_ietf_ABYTES;
static_assert(DataCipher::kOverhead == kMagicLen + kNonceLen + kTagLen);
}  // namespace

Result<DataCipher> DataCipher::FromHex(std::string_view key_hex) {
  DBS_RETURN_IF_ERROR(InitCrypto());
  DataCipher c;
  c.key_.resize(crypto_aead_xchacha20poly1305_ietf_KEYBYTES);
  size_t len = 0;
  if (key_hex.size() != c.key_.size() * 2 ||
      sodium_hex2bin(reinterpret_cast<unsigned char*>(c.key_.data()), c.key_.size(), key_hex.data(),
                     key_hex.size(), nullptr, &len, nullptr) != 0 ||
      len != c.key_.size()) {
    return Status::InvalidArgument("a bus data key must be 64 hex digits");
  }
  return c;
}

std::string DataCipher::NewKeyHex() {
  (void)InitCrypto();
  unsigned char k[crypto_aead_xchacha20poly1305_ietf_KEYBYTES];
  crypto_aead_xchacha20poly1305_ietf_keygen(k);
  char hex[sizeof k * 2 + 1];
  sodium_bin2hex(hex, sizeof hex, k, sizeof k);
  sodium_memzero(k, sizeof k);
  return hex;
}

DataCipher::~DataCipher() {
  if (!key_.empty()) sodium_memzero(key_.data(), key_.size());
}

void DataCipher::Seal(std::string_view ad, std::string_view plain, std::string* out) const {
  out->resize(kMagicLen + kNonceLen + plain.size() + kTagLen);
  auto* p = reinterpret_cast<unsigned char*>(out->data());
  std::copy(kMagic, kMagic + kMagicLen, p);
  randombytes_buf(p + kMagicLen, kNonceLen);
  unsigned long long n = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(
      p + kMagicLen + kNonceLen, &n, reinterpret_cast<const unsigned char*>(plain.data()),
      plain.size(), reinterpret_cast<const unsigned char*>(ad.data()), ad.size(), nullptr,
      p + kMagicLen, reinterpret_cast<const unsigned char*>(key_.data()));
}

Status DataCipher::Open(std::string_view ad, std::string_view sealed, std::string* out) const {
  if (sealed.size() < kOverhead || sealed.compare(0, kMagicLen, kMagic) != 0) {
    return Status::Corruption(
               "a payload on the bus is not encrypted although the stream's busEncryption is "
               "on")
        .WithRetry(Retry::kFail);
  }
  const auto* p = reinterpret_cast<const unsigned char*>(sealed.data());
  out->resize(sealed.size() - kOverhead);
  unsigned long long n = 0;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(
          reinterpret_cast<unsigned char*>(out->data()), &n, nullptr, p + kMagicLen + kNonceLen,
          sealed.size() - kMagicLen - kNonceLen, reinterpret_cast<const unsigned char*>(ad.data()),
          ad.size(), p + kMagicLen, reinterpret_cast<const unsigned char*>(key_.data())) != 0) {
    out->clear();
    return Status::Corruption(
               "a payload on the bus does not decrypt: another stream's key (busKey), or it was "
               "altered or moved")
        .WithRetry(Retry::kFail);
  }
  out->resize(n);
  return Status::Ok();
}

Result<std::optional<DataCipher>> StreamCipher(bool enabled, const std::string& key_hex) {
  if (!enabled) return std::optional<DataCipher>();
  if (key_hex.empty()) {
    return Status::InvalidArgument(
        "busEncryption is on but the stream has no busKey: the API and `dbstreams run` make one; "
        "separate stream-reader/stream-writer processes need the same 64 hex digits in busKey");
  }
  DBS_ASSIGN_OR_RETURN(DataCipher c, DataCipher::FromHex(key_hex));
  return std::optional<DataCipher>(std::move(c));
}

}  // namespace dbs::security

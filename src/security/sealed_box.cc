#include "security/sealed_box.h"

#include <sodium.h>

namespace dbs::security {

Status InitCrypto() {
  if (sodium_init() < 0) return Status::Internal("libsodium failed to initialize");
  return Status::Ok();
}

std::string Base64Encode(std::string_view bytes) {
  const int variant = sodium_base64_VARIANT_ORIGINAL;
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), variant), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                    bytes.size(), variant);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

Result<std::string> Base64Decode(std::string_view b64) {
  std::string out(b64.size() / 4 * 3 + 3, '\0');
  size_t len = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), b64.data(),
                        b64.size(), nullptr, &len, nullptr, sodium_base64_VARIANT_ORIGINAL) != 0) {
    return Status::InvalidArgument("not valid base64");
  }
  out.resize(len);
  return out;
}

BoxKeyPair BoxKeyPair::Generate() {
  (void)InitCrypto();
  BoxKeyPair p;
  p.public_.resize(crypto_box_PUBLICKEYBYTES);
  p.secret_.resize(crypto_box_SECRETKEYBYTES);
  crypto_box_keypair(reinterpret_cast<unsigned char*>(p.public_.data()),
                     reinterpret_cast<unsigned char*>(p.secret_.data()));
  p.public_b64_ = Base64Encode(p.public_);
  return p;
}

BoxKeyPair::~BoxKeyPair() {
  if (!secret_.empty()) sodium_memzero(secret_.data(), secret_.size());
}

BoxKeyPair::BoxKeyPair(BoxKeyPair&& o) noexcept
    : public_(std::move(o.public_)),
      secret_(std::move(o.secret_)),
      public_b64_(std::move(o.public_b64_)) {
  o.secret_.clear();
}

BoxKeyPair& BoxKeyPair::operator=(BoxKeyPair&& o) noexcept {
  if (this != &o) {
    if (!secret_.empty()) sodium_memzero(secret_.data(), secret_.size());
    public_ = std::move(o.public_);
    secret_ = std::move(o.secret_);
    public_b64_ = std::move(o.public_b64_);
    o.secret_.clear();
  }
  return *this;
}

Result<std::string> BoxKeyPair::Open(std::string_view box_b64) const {
  DBS_ASSIGN_OR_RETURN(std::string box, Base64Decode(box_b64));
  if (box.size() < crypto_box_SEALBYTES || secret_.empty()) {
    return Status::Corruption("sealed box too short");
  }
  std::string plain(box.size() - crypto_box_SEALBYTES, '\0');
  if (crypto_box_seal_open(reinterpret_cast<unsigned char*>(plain.data()),
                           reinterpret_cast<const unsigned char*>(box.data()), box.size(),
                           reinterpret_cast<const unsigned char*>(public_.data()),
                           reinterpret_cast<const unsigned char*>(secret_.data())) != 0) {
    return Status::Corruption("the sealed box does not open with this service's key");
  }
  return plain;
}

Result<std::string> SealTo(std::string_view recipient, std::string_view plain) {
  DBS_RETURN_IF_ERROR(InitCrypto());
  auto key = Base64Decode(recipient);
  if (!key.ok() || key->size() != crypto_box_PUBLICKEYBYTES) {
    return Status::InvalidArgument("not a sealing public key");
  }
  std::string box(plain.size() + crypto_box_SEALBYTES, '\0');
  crypto_box_seal(reinterpret_cast<unsigned char*>(box.data()),
                  reinterpret_cast<const unsigned char*>(plain.data()), plain.size(),
                  reinterpret_cast<const unsigned char*>(key->data()));
  return Base64Encode(box);
}

}  // namespace dbs::security

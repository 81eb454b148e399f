// The file secrets backend: data_dir/secrets.enc holds a JSON object {ref: value} sealed with
// XChaCha20-Poly1305 (libsodium AEAD). File layout: "DBSSEC1\n" | 24-byte nonce | ciphertext
// (with the 16-byte tag); the magic is the associated data. Every Put/Delete rewrites the file
// with a fresh nonce (temp file, fsync, rename), mode 0600.
#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/private_file.h"
#include "store/secrets_store.h"

namespace dbs::store {

namespace {

constexpr char kMagic[] = "DBSSEC1\n";
constexpr size_t kMagicLen = sizeof(kMagic) - 1;
constexpr size_t kKeyLen = crypto_aead_xchacha20poly1305_ietf_KEYBYTES;
constexpr size_t kNonceLen = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::NotFound(path + " does not exist");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result<std::string> HexDecode(const std::string& hex, const std::string& what) {
  std::string out(hex.size() / 2, '\0');
  size_t len = 0;
  if (hex.size() != kKeyLen * 2 ||
      sodium_hex2bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), hex.data(),
                     hex.size(), nullptr, &len, nullptr) != 0 ||
      len != kKeyLen) {
    return Status::InvalidArgument(what + " must be " + std::to_string(kKeyLen * 2) +
                                   " hex digits (a 256-bit key)");
  }
  return out;
}

class FileSecretsStore : public SecretsStore {
 public:
  FileSecretsStore(std::string path, std::string key)
      : path_(std::move(path)), key_(std::move(key)) {}
  ~FileSecretsStore() override {
    sodium_memzero(key_.data(), key_.size());
    for (auto& [k, v] : values_) sodium_memzero(v.data(), v.size());
  }

  Status Load() {
    auto data = ReadFile(path_);
    if (!data.ok()) return Status::Ok();  // no secrets yet
    const std::string& d = *data;
    if (d.size() < kMagicLen + kNonceLen + crypto_aead_xchacha20poly1305_ietf_ABYTES ||
        d.compare(0, kMagicLen, kMagic) != 0) {
      return Status::Corruption("secrets file " + path_ + " is not a dbstreams secrets file");
    }
    const auto* nonce = reinterpret_cast<const unsigned char*>(d.data() + kMagicLen);
    const auto* ct = nonce + kNonceLen;
    size_t ct_len = d.size() - kMagicLen - kNonceLen;
    std::string plain(ct_len, '\0');
    unsigned long long plain_len = 0;
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(
            reinterpret_cast<unsigned char*>(plain.data()), &plain_len, nullptr, ct, ct_len,
            reinterpret_cast<const unsigned char*>(kMagic), kMagicLen, nonce,
            reinterpret_cast<const unsigned char*>(key_.data())) != 0) {
      return Status::Corruption("secrets file " + path_ +
                                " does not decrypt: wrong master key (DBS_MASTER_KEY or "
                                "master.key) or a damaged file");
    }
    plain.resize(plain_len);
    nlohmann::json j = nlohmann::json::parse(plain, nullptr, false);
    sodium_memzero(plain.data(), plain.size());
    if (j.is_discarded() || !j.is_object()) {
      return Status::Corruption("secrets file " + path_ + " holds no secrets object");
    }
    for (auto& [k, v] : j.items()) {
      if (v.is_string()) values_[k] = v.get<std::string>();
    }
    return Status::Ok();
  }

  Status Put(const std::string& ref, const std::string& value) override {
    std::lock_guard<std::mutex> l(mu_);
    values_[ref] = value;
    return Save();
  }
  Result<std::string> Get(const std::string& ref) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = values_.find(ref);
    if (it == values_.end()) return Status::NotFound("secret " + ref + " does not exist");
    return it->second;
  }
  Status Delete(const std::string& ref) override {
    std::lock_guard<std::mutex> l(mu_);
    if (values_.erase(ref) == 0) return Status::Ok();
    return Save();
  }

 private:
  Status Save() {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : values_) j[k] = v;
    std::string plain = j.dump();
    std::string out(kMagic, kMagicLen);
    out.resize(kMagicLen + kNonceLen + plain.size() + crypto_aead_xchacha20poly1305_ietf_ABYTES);
    auto* nonce = reinterpret_cast<unsigned char*>(out.data() + kMagicLen);
    randombytes_buf(nonce, kNonceLen);
    unsigned long long ct_len = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(
        nonce + kNonceLen, &ct_len, reinterpret_cast<const unsigned char*>(plain.data()),
        plain.size(), reinterpret_cast<const unsigned char*>(kMagic), kMagicLen, nullptr, nonce,
        reinterpret_cast<const unsigned char*>(key_.data()));
    sodium_memzero(plain.data(), plain.size());
    out.resize(kMagicLen + kNonceLen + ct_len);
    return WritePrivateFile(path_, out);
  }

  std::mutex mu_;
  std::string path_;
  std::string key_;
  std::map<std::string, std::string> values_;
};

Result<std::string> LoadOrCreateKeyFile(const std::string& path) {
  auto existing = ReadFile(path);
  if (existing.ok()) {
    std::string hex = *existing;
    while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r' || hex.back() == ' ')) {
      hex.pop_back();
    }
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
      return Status::FailedPrecondition("master key file " + path +
                                        " is readable by others: chmod 600 it");
    }
    return HexDecode(hex, "master key file " + path);
  }
  std::string hex = RandomHex(kKeyLen);
  DBS_RETURN_IF_ERROR(WritePrivateFile(path, hex + "\n"));
  return HexDecode(hex, "master key file " + path);
}

}  // namespace

std::string Sha256Hex(const std::string& data) {
  unsigned char h[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(h, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  char hex[crypto_hash_sha256_BYTES * 2 + 1];
  sodium_bin2hex(hex, sizeof hex, h, sizeof h);
  return hex;
}

std::string RandomHex(size_t n) {
  std::string b(n, '\0');
  randombytes_buf(b.data(), n);
  std::string hex(n * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), reinterpret_cast<const unsigned char*>(b.data()), n);
  hex.resize(n * 2);
  return hex;
}

Result<std::unique_ptr<SecretsStore>> SecretsStore::Open(const std::string& backend,
                                                         const std::string& data_dir,
                                                         const std::string& master_key_hex,
                                                         const std::string& master_key_file) {
  if (sodium_init() < 0) return Status::Internal("libsodium failed to initialize");
  if (backend != "file") {
    return Status::InvalidArgument("unknown SECRETS_BACKEND '" + backend +
                                   "': the known secrets backends are: file");
  }
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return Status::IoError("cannot create the data folder " + data_dir + ": " + ec.message());
  std::string key;
  if (!master_key_hex.empty()) {
    DBS_ASSIGN_OR_RETURN(key, HexDecode(master_key_hex, "DBS_MASTER_KEY"));
  } else if (!master_key_file.empty()) {
    DBS_ASSIGN_OR_RETURN(key, LoadOrCreateKeyFile(master_key_file));
  } else {
    DBS_ASSIGN_OR_RETURN(key, LoadOrCreateKeyFile(data_dir + "/master.key"));
  }
  auto s = std::make_unique<FileSecretsStore>(data_dir + "/secrets.enc", std::move(key));
  DBS_RETURN_IF_ERROR(s->Load());
  return std::unique_ptr<SecretsStore>(std::move(s));
}

}  // namespace dbs::store

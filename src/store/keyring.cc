#include "store/keyring.h"

#include <libsecret/secret.h>

#include <filesystem>

#include "store/secrets_store.h"

namespace dbs::store {

namespace {

// One item per data folder: schema "org.dbstreams.MasterKey", attribute "data-dir".
const SecretSchema* Schema() {
  static const SecretSchema schema = [] {
    SecretSchema s{};
    s.name = "org.dbstreams.MasterKey";
    s.flags = SECRET_SCHEMA_NONE;
    s.attributes[0].name = "data-dir";
    s.attributes[0].type = SECRET_SCHEMA_ATTRIBUTE_STRING;
    return s;
  }();
  return &schema;
}

Status Unavailable(GError* error, const std::string& what) {
  std::string msg = what + ": " + (error != nullptr ? error->message : "unknown error") +
                    ". The keyring needs a desktop session with a Secret Service (GNOME "
                    "Keyring, KWallet); elsewhere use --master-key-file or DBS_MASTER_KEY";
  if (error != nullptr) g_error_free(error);
  return Status::Unavailable(msg);
}

bool IsHexKey(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

Result<std::string> KeyringMasterKey(const std::string& data_dir) {
  std::error_code ec;
  std::string dir = std::filesystem::absolute(data_dir, ec).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  GError* error = nullptr;
  gchar* found =
      secret_password_lookup_sync(Schema(), nullptr, &error, "data-dir", dir.c_str(), nullptr);
  if (error != nullptr) return Unavailable(error, "reading the master key from the keyring");
  if (found != nullptr) {
    std::string key(found);
    secret_password_free(found);
    if (!IsHexKey(key)) {
      return Status::Corruption("the keyring's dbstreams master key for " + dir +
                                " is not 64 hex digits");
    }
    return key;
  }
  std::string key = RandomHex(32);
  const std::string label = "dbstreams master key (" + dir + ")";
  if (!secret_password_store_sync(Schema(), SECRET_COLLECTION_DEFAULT, label.c_str(), key.c_str(),
                                  nullptr, &error, "data-dir", dir.c_str(), nullptr)) {
    return Unavailable(error, "storing a new master key in the keyring");
  }
  return key;
}

}  // namespace dbs::store

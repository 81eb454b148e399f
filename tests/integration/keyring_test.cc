// The master key in the desktop keyring (store/keyring.h) against a real Secret Service:
// ctest runs this under dbus-run-session with an unlocked gnome-keyring-daemon (KeyringTest),
// and once without a session bus (KeyringTest.NoSecretService).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "store/keyring.h"
#include "store/secrets_store.h"

namespace dbs::store {
namespace {

namespace fs = std::filesystem;

std::string Dir(const std::string& name) {
  std::string d = "/tmp/dbstreams-test/keyring-" + std::to_string(getpid()) + "-" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(KeyringTest, MasterKeyLivesInTheKeyringNotTheFolder) {
  const std::string data = Dir("data");
  auto key = KeyringMasterKey(data);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(key->size(), 64u);
  auto again = KeyringMasterKey(data + "/.");  // the same folder, spelt differently
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *key);
  auto other = KeyringMasterKey(Dir("other"));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *key);  // one key per data folder

  {
    auto s = SecretsStore::Open("file", data, *key);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE((*s)->Put("connection/c1/password", "Keyring-Secret-9").ok());
  }
  // Nothing in the folder holds the key or the secret.
  std::string all;
  for (auto& e : fs::recursive_directory_iterator(data)) {
    if (!e.is_regular_file()) continue;
    std::ifstream f(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    all += ss.str();
  }
  EXPECT_FALSE(fs::exists(data + "/master.key"));
  EXPECT_EQ(all.find(*key), std::string::npos);
  EXPECT_EQ(all.find("Keyring-Secret-9"), std::string::npos);
  auto reopened = SecretsStore::Open("file", data, *KeyringMasterKey(data));
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(*(*reopened)->Get("connection/c1/password"), "Keyring-Secret-9");
  fs::remove_all(data);
}

TEST(KeyringTest, NoSecretService) {
  auto key = KeyringMasterKey(Dir("none"));
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.status().code(), StatusCode::kUnavailable) << key.status().ToString();
  EXPECT_NE(key.status().message().find("--master-key-file"), std::string::npos);
}

}  // namespace
}  // namespace dbs::store

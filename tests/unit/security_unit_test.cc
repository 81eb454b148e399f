// Sealed boxes, the secrets of a stream config, and bcrypt hashes (src/security).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "security/password_hash.h"
#include "security/sealed_box.h"
#include "security/sealed_config.h"

namespace dbs::security {
namespace {

using nlohmann::json;

TEST(SealedBox, OnlyTheRecipientOpens) {
  BoxKeyPair alice = BoxKeyPair::Generate();
  BoxKeyPair bob = BoxKeyPair::Generate();
  EXPECT_NE(alice.public_key(), bob.public_key());
  auto box = SealTo(alice.public_key(), "the password");
  ASSERT_TRUE(box.ok()) << box.status().ToString();
  EXPECT_EQ(box->find("the password"), std::string::npos);
  auto opened = alice.Open(*box);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_EQ(*opened, "the password");
  EXPECT_EQ(bob.Open(*box).status().code(), StatusCode::kCorruption);
  // Altered boxes and junk do not open.
  std::string altered = *box;
  altered[10] = altered[10] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(alice.Open(altered).ok());
  EXPECT_FALSE(alice.Open("not base64 !").ok());
  EXPECT_FALSE(alice.Open("").ok());
  EXPECT_FALSE(SealTo("AAAA", "x").ok());
  // A moved-from pair keeps working in its new place.
  BoxKeyPair moved = std::move(alice);
  auto again = moved.Open(*box);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, "the password");
}

TEST(SealedConfig, TakesEveryPasswordAndPutsItBack) {
  const json original = {
      {"name", "s"},
      {"source", {{"url", "postgres://h:5432/"}, {"user", "u"}, {"password", "p1"}}},
      {"target",
       {{"url", "mysql://h:3306/"},
        {"password", "p2"},
        {"ssl", {{"key", "-----BEGIN PRIVATE KEY-----\nMII\n-----END PRIVATE KEY-----\n"}}}}},
      {"other", {{"ssl", {{"key", "/etc/ssl/client.key"}}}}},
      {"lake", {{"url", "s3://b/"}, {"password", "p3"}, {"sessionToken", "tok-Zq9"}}},
      {"tables", {"a", "b"}}};
  json config = original;
  json secrets = TakeSecrets(&config);
  EXPECT_EQ(secrets.size(), 5u) << secrets.dump();
  EXPECT_EQ(secrets["/lake/sessionToken"], "tok-Zq9");
  EXPECT_EQ(secrets["/source/password"], "p1");
  EXPECT_EQ(secrets["/target/password"], "p2");
  EXPECT_TRUE(secrets.contains("/target/ssl/key"));
  const std::string rest = config.dump();
  EXPECT_EQ(rest.find("p1"), std::string::npos);
  EXPECT_EQ(rest.find("tok-Zq9"), std::string::npos);
  EXPECT_EQ(rest.find("BEGIN"), std::string::npos);
  EXPECT_NE(rest.find("/etc/ssl/client.key"), std::string::npos);  // a path is no secret
  ASSERT_TRUE(PutSecrets(&config, secrets).ok());
  EXPECT_EQ(config, original);

  json none = {{"name", "x"}};
  EXPECT_TRUE(TakeSecrets(&none).empty());
  // Secrets that do not fit the config are refused, not invented.
  json c = {{"source", json::object()}};
  EXPECT_FALSE(PutSecrets(&c, {{"/nowhere/deep/password", "x"}}).ok());
  EXPECT_FALSE(PutSecrets(&c, {{"no-slash", "x"}}).ok());
  EXPECT_FALSE(PutSecrets(&c, {{"/source/~9", "x"}}).ok());
  EXPECT_FALSE(PutSecrets(&c, json::array()).ok());
  EXPECT_TRUE(PutSecrets(&c, {{"/source/password", "x"}}).ok());
  EXPECT_EQ(c["source"]["password"], "x");
}

TEST(PasswordHash, BcryptVerifies) {
  auto h = HashPassword("correct horse", 4);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->rfind("$2a$04$", 0), 0u) << *h;
  EXPECT_TRUE(VerifyPassword("correct horse", *h));
  EXPECT_FALSE(VerifyPassword("correct horsE", *h));
  auto h2 = HashPassword("correct horse", 4);
  ASSERT_TRUE(h2.ok());
  EXPECT_NE(*h, *h2);  // salted
}

}  // namespace
}  // namespace dbs::security

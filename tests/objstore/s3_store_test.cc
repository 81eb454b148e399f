// The S3 store against a real S3 server (s3rver, started by the fixture on loopback): the shared
// contract (contract.cc) in a bucket, each test under its own prefix, plus what only S3 has:
// multipart uploads, paged listings, credentials, a missing bucket, an unreachable endpoint, the
// server killed mid-upload, virtual-host addressing, TLS with a custom CA, session tokens.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "objstore/contract.h"
#include "security/self_signed.h"
#include "support/servers.h"
#include "support/subprocess.h"

namespace dbs::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kBucket[] = "dbs-objstore";
std::atomic<int> g_prefix{0};

// One server for the binary (started on first use, stopped at exit); tests that stop or kill a
// server start their own.
Result<S3Server*> Shared() {
  static std::mutex mu;
  static S3Server* server = nullptr;
  static std::optional<Status> error;
  std::lock_guard<std::mutex> lock(mu);
  if (server != nullptr) return server;
  if (error) return *error;
  Result<std::unique_ptr<S3Server>> s = S3Server::Start();
  if (s.ok()) {
    Status st = (*s)->CreateBucket(kBucket);
    if (!st.ok()) s = st;
  }
  if (!s.ok()) {
    error = s.status();
    return *error;
  }
  server = s->release();
  std::atexit([] { delete server; });
  return server;
}

S3Settings SettingsFor(const S3Server& s, const std::string& bucket = kBucket) {
  S3Settings o;
  o.endpoint = s.endpoint();
  o.region = s.region();
  o.bucket = bucket;
  o.access_key = s.access_key();
  o.secret_key = s.secret_key();
  o.part_size = 5ull << 20;
  o.read_chunk = 4ull << 20;
  return o;
}

Result<std::unique_ptr<ObjectStore>> FreshStore() {
  DBS_ASSIGN_OR_RETURN(S3Server * s, Shared());
  S3Settings o = SettingsFor(*s);
  o.prefix = "contract/t" + std::to_string(g_prefix++);
  return OpenS3Store(o);
}

INSTANTIATE_TEST_SUITE_P(S3, ObjectStoreContract,
                         ::testing::Values(StoreUnderTest{"S3", &FreshStore, 48ull << 20,
                                                          16ull << 20, 24ull << 20,
                                                          /*lists_incomplete=*/false}),
                         ContractTestName);

std::vector<std::string> Keys(const std::vector<ObjectInfo>& list) {
  std::vector<std::string> out;
  for (const ObjectInfo& o : list) out.push_back(o.key);
  return out;
}

Status PutBytes(ObjectStore* store, const std::string& key, const std::string& bytes) {
  DBS_ASSIGN_OR_RETURN(std::unique_ptr<ObjectWriter> w, store->Create(key));
  DBS_RETURN_IF_ERROR(w->Write(bytes));
  return w->Commit();
}

class S3StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<S3Server*> s = Shared();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = *s;
    prefix_ = "s3test/t" + std::to_string(g_prefix++);
  }
  std::unique_ptr<ObjectStore> Open(S3Settings o) {
    if (o.prefix.empty()) o.prefix = prefix_;
    Result<std::unique_ptr<ObjectStore>> st = OpenS3Store(o);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    return st.ok() ? std::move(st).value() : nullptr;
  }

  S3Server* server_ = nullptr;
  std::string prefix_;
};

TEST_F(S3StoreTest, MultipartUploadOfManyPartsKeepsEveryByte) {
  S3Settings o = SettingsFor(*server_);
  auto store = Open(o);
  ASSERT_TRUE(store);
  const uint64_t size = 5 * o.part_size - 12345;  // five parts, the last one short
  Sha256 sent;
  {
    Result<std::unique_ptr<ObjectWriter>> w = store->Create("big/multi.bin");
    ASSERT_TRUE(w.ok());
    for (uint64_t off = 0; off < size; off += 777777) {  // pieces that straddle part boundaries
      const std::string piece = PatternBytes(9, off, std::min<uint64_t>(777777, size - off));
      sent.Update(piece);
      ASSERT_TRUE((*w)->Write(piece).ok());
    }
    EXPECT_EQ(store->Stat("big/multi.bin").status().code(), StatusCode::kNotFound);
    Status st = (*w)->Commit();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  const std::string want = sent.HexDigest();
  // Read back through the store...
  Result<std::unique_ptr<ObjectReader>> r = store->Open("big/multi.bin");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Sha256 got;
  std::string piece;
  uint64_t total = 0;
  for (;;) {
    ASSERT_TRUE((*r)->Read(&piece, 1 << 20).ok());
    if (piece.empty()) break;
    got.Update(piece);
    total += piece.size();
  }
  EXPECT_EQ(total, size);
  EXPECT_EQ(got.HexDigest(), want);
  // ...and straight from the server's own file of the object, not through our reader.
  const std::string on_disk =
      server_->dir() + "/data/" + kBucket + "/" + prefix_ + "/big/multi.bin._S3rver_object";
  Result<std::string> file = ReadFile(on_disk);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  Sha256 disk;
  disk.Update(*file);
  EXPECT_EQ(disk.HexDigest(), want);
  // A range across the first part boundary.
  std::string across;
  ASSERT_TRUE(store->ReadRange("big/multi.bin", o.part_size - 3, 10, &across).ok());
  EXPECT_EQ(across, PatternBytes(9, o.part_size - 3, 10));
}

TEST_F(S3StoreTest, ListingPagesThroughContinuationTokens) {
  S3Settings o = SettingsFor(*server_);
  o.list_page_size = 3;  // many pages
  auto store = Open(o);
  ASSERT_TRUE(store);
  std::vector<std::string> want_all, want_top;
  for (int i = 0; i < 11; ++i) {
    const std::string k = "p/obj-" + std::to_string(100 + i) + ".csv";
    ASSERT_TRUE(PutBytes(store.get(), k, "x").ok());
    want_all.push_back(k);
    want_top.push_back(k);
  }
  for (const char* k : {"p/sub1/a", "p/sub1/b", "p/sub2/c", "p/sub2/deeper/d"}) {
    ASSERT_TRUE(PutBytes(store.get(), k, "y").ok());
    want_all.push_back(k);
  }
  want_top.push_back("p/sub1/");
  want_top.push_back("p/sub2/");
  std::sort(want_all.begin(), want_all.end());
  std::sort(want_top.begin(), want_top.end());
  Result<std::vector<ObjectInfo>> all = store->List("p", true);
  ASSERT_TRUE(all.ok()) << all.status().ToString() << "\n" << server_->LogTail();
  EXPECT_EQ(Keys(*all), want_all);
  Result<std::vector<ObjectInfo>> top = store->List("p/", false);
  ASSERT_TRUE(top.ok()) << top.status().ToString();
  EXPECT_EQ(Keys(*top), want_top);
  // The store's prefix is its root: another prefix in the same bucket sees none of it.
  S3Settings other = o;
  other.prefix = prefix_ + "-other";
  auto neighbour = Open(other);
  ASSERT_TRUE(neighbour);
  Result<std::vector<ObjectInfo>> none = neighbour->List("", true);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(S3StoreTest, WrongCredentialsAreAClearPermissionError) {
  {
    auto good = Open(SettingsFor(*server_));
    ASSERT_TRUE(good);
    ASSERT_TRUE(PutBytes(good.get(), "k.txt", "v").ok());
  }
  struct Case {
    const char* what;
    std::string access, secret;
  };
  for (const Case& c : {Case{"wrong secret", server_->access_key(), "not-the-secret-XYZ"},
                        Case{"unknown key", "no-such-access-key", "not-the-secret-XYZ"}}) {
    S3Settings o = SettingsFor(*server_);
    o.access_key = c.access;
    o.secret_key = c.secret;
    auto store = Open(o);
    ASSERT_TRUE(store);
    std::vector<Status> errors;
    errors.push_back(store->List("", true).status());
    errors.push_back(store->Stat("k.txt").status());
    errors.push_back(store->Open("k.txt").status());
    errors.push_back(PutBytes(store.get(), "new.txt", "v"));
    errors.push_back(store->Delete("k.txt"));
    for (const Status& st : errors) {
      EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << c.what << ": " << st.ToString();
      EXPECT_FALSE(st.retryable());
      EXPECT_NE(st.message().find(server_->endpoint()), std::string::npos) << st.ToString();
      EXPECT_NE(st.message().find(kBucket), std::string::npos) << st.ToString();
      EXPECT_NE(st.message().find("check the access key and secret key"), std::string::npos)
          << st.ToString();
      EXPECT_EQ(st.message().find("not-the-secret-XYZ"), std::string::npos) << st.ToString();
    }
  }
  auto good = Open(SettingsFor(*server_));
  EXPECT_TRUE(good->Stat("k.txt").ok());  // nothing was deleted
  EXPECT_EQ(good->Stat("new.txt").status().code(), StatusCode::kNotFound);
}

TEST_F(S3StoreTest, MissingBucketIsNotFoundNamingTheBucket) {
  auto store = Open(SettingsFor(*server_, "no-such-bucket"));
  ASSERT_TRUE(store);
  std::vector<Status> errors = {store->List("", false).status(), store->Stat("a/b.csv").status(),
                                store->Open("a/b.csv").status(),
                                PutBytes(store.get(), "a/b.csv", "v")};
  std::string out;
  errors.push_back(store->ReadRange("a/b.csv", 0, 10, &out));
  for (const Status& st : errors) {
    EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
    EXPECT_NE(st.message().find("bucket no-such-bucket does not exist"), std::string::npos)
        << st.ToString();
  }
  // A missing key in an existing bucket names the key instead.
  auto good = Open(SettingsFor(*server_));
  Status st = good->Stat("a/b.csv").status();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("no object a/b.csv"), std::string::npos) << st.ToString();
}

TEST_F(S3StoreTest, UnreachableEndpointIsUnavailableAndRetryable) {
  Result<std::vector<int>> ports = PickFreePorts(1);
  ASSERT_TRUE(ports.ok());
  S3Settings o = SettingsFor(*server_);
  o.endpoint = "http://127.0.0.1:" + std::to_string((*ports)[0]);  // nothing listens there
  o.max_attempts = 2;
  auto store = Open(o);
  ASSERT_TRUE(store);
  for (const Status& st : {store->List("", true).status(), store->Stat("x").status(),
                           PutBytes(store.get(), "x", "v")}) {
    EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
    EXPECT_TRUE(st.retryable()) << st.ToString();
    EXPECT_NE(st.message().find(o.endpoint), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find("cannot reach"), std::string::npos) << st.ToString();
  }
}

// The server dies while a multipart upload is under way: the writer fails cleanly, and after a
// restart no object is visible, neither the big one nor a small one whose PUT never arrived.
TEST_F(S3StoreTest, ServerKilledMidUploadLeavesNoObject) {
  Result<std::unique_ptr<S3Server>> own = S3Server::Start();
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  S3Server& srv = **own;
  ASSERT_TRUE(srv.CreateBucket(kBucket).ok());
  S3Settings o = SettingsFor(srv);
  o.max_attempts = 2;
  auto store = Open(o);
  ASSERT_TRUE(store);

  Result<std::unique_ptr<ObjectWriter>> big = store->Create("out/big.parquet");
  Result<std::unique_ptr<ObjectWriter>> small = store->Create("out/small.csv");
  ASSERT_TRUE(big.ok() && small.ok());
  const std::string part = PatternBytes(3, 0, static_cast<size_t>(o.part_size));
  ASSERT_TRUE((*big)->Write(part).ok());
  ASSERT_TRUE((*big)->Write(part).ok());  // part 1 sent
  ASSERT_TRUE((*big)->Write(part).ok());  // part 2 sent
  ASSERT_TRUE((*small)->Write("id\n1\n").ok());

  srv.Kill();
  Status w = (*big)->Write(part);  // part 3 cannot be sent
  EXPECT_EQ(w.code(), StatusCode::kUnavailable) << w.ToString();
  EXPECT_NE(w.message().find("out/big.parquet"), std::string::npos) << w.ToString();
  EXPECT_EQ((*big)->Commit().code(), StatusCode::kFailedPrecondition);  // already aborted
  Status c = (*small)->Commit();
  EXPECT_EQ(c.code(), StatusCode::kUnavailable) << c.ToString();
  big->reset();
  small->reset();

  ASSERT_TRUE(srv.Restart().ok()) << srv.LogTail();
  EXPECT_EQ(store->Stat("out/big.parquet").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->Stat("out/small.csv").status().code(), StatusCode::kNotFound);
  Result<std::vector<ObjectInfo>> listed = store->List("", true);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_TRUE(listed->empty()) << Keys(*listed).front();
  // The store works again after the restart.
  ASSERT_TRUE(PutBytes(store.get(), "out/after.csv", "ok").ok());
  EXPECT_TRUE(store->Stat("out/after.csv").ok());
}

// Abort sends AbortMultipartUpload. s3rver does not implement it: the client must say so
// plainly (the object never appears either way).
TEST_F(S3StoreTest, AbortOfAMultipartUploadAsksTheServerToDropIt) {
  S3Settings o = SettingsFor(*server_);
  auto store = Open(o);
  ASSERT_TRUE(store);
  Result<std::unique_ptr<ObjectWriter>> w = store->Create("out/aborted.bin");
  ASSERT_TRUE(w.ok());
  const std::string part = PatternBytes(4, 0, static_cast<size_t>(o.part_size));
  ASSERT_TRUE((*w)->Write(part).ok());
  ASSERT_TRUE((*w)->Write(part).ok());  // the upload has started: part 1 is on the server
  Status ab = (*w)->Abort();
  if (!ab.ok()) {
    EXPECT_EQ(ab.code(), StatusCode::kUnsupported) << ab.ToString();
    EXPECT_NE(ab.message().find("out/aborted.bin"), std::string::npos) << ab.ToString();
    EXPECT_NE(ab.message().find("does not support"), std::string::npos) << ab.ToString();
  }
  EXPECT_EQ(store->Stat("out/aborted.bin").status().code(), StatusCode::kNotFound);
  Result<std::vector<ObjectInfo>> inc = store->ListIncomplete("out");
  if (inc.ok()) {
    EXPECT_TRUE(inc->empty()) << Keys(*inc).front();
  } else {
    EXPECT_EQ(inc.status().code(), StatusCode::kUnsupported) << inc.status().ToString();
  }
}

TEST_F(S3StoreTest, VirtualHostAddressing) {
  // s3rver checks a virtual-host request's signature against "/bucket/key" (V2 style) where
  // AWS uses the path as sent ("/key"); our signer follows AWS (the SigV4 unit test's AWS
  // example is virtual-host style), so this server runs with signature checks relaxed and
  // proves the addressing: the request reaches the bucket named in the host.
  S3ServerOptions so;
  so.vhost = true;
  so.allow_mismatched_signatures = true;
  Result<std::unique_ptr<S3Server>> own = S3Server::Start(so);
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  ASSERT_TRUE((*own)->CreateBucket("vhost-bucket").ok());
  S3Settings o = SettingsFor(**own, "vhost-bucket");
  o.endpoint = (*own)->vhost_endpoint();
  o.path_style = false;
  o.prefix = "p";
  auto vhost = Open(o);
  ASSERT_TRUE(vhost);
  ASSERT_TRUE(PutBytes(vhost.get(), "a/b.csv", "through the host name").ok());
  Result<std::vector<ObjectInfo>> listed = vhost->List("", true);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(Keys(*listed), std::vector<std::string>{"a/b.csv"});
  // The same object, path-style.
  S3Settings p = SettingsFor(**own, "vhost-bucket");
  p.prefix = "p";
  auto path = Open(p);
  std::string out;
  ASSERT_TRUE(path->ReadRange("a/b.csv", 0, 100, &out).ok());
  EXPECT_EQ(out, "through the host name");
  EXPECT_TRUE(fs::exists((*own)->dir() + "/data/vhost-bucket/p/a/b.csv._S3rver_object"));
}

TEST_F(S3StoreTest, TlsWithACustomCa) {
  Result<std::string> dir = CreateServerDir();
  ASSERT_TRUE(dir.ok());
  const std::string cert = *dir + "/cert.pem", key = *dir + "/key.pem";
  ASSERT_TRUE(security::EnsureSelfSigned(cert, key, {"127.0.0.1"}).ok());
  S3ServerOptions so;
  so.tls_cert_file = cert;
  so.tls_key_file = key;
  Result<std::unique_ptr<S3Server>> own = S3Server::Start(so);
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  ASSERT_TRUE((*own)->CreateBucket(kBucket).ok());
  ASSERT_EQ((*own)->endpoint().rfind("https://", 0), 0u);

  S3Settings o = SettingsFor(**own);
  o.max_attempts = 1;
  auto untrusted = Open(o);  // verification on by default, the CA unknown
  Status st = PutBytes(untrusted.get(), "t.txt", "x");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("CA file"), std::string::npos) << st.ToString();
  EXPECT_FALSE(st.retryable());

  o.ca_file = cert;
  auto trusted = Open(o);
  ASSERT_TRUE(PutBytes(trusted.get(), "t.txt", "over TLS").ok());
  std::string out;
  ASSERT_TRUE(trusted->ReadRange("t.txt", 0, 100, &out).ok());
  EXPECT_EQ(out, "over TLS");

  S3Settings off = SettingsFor(**own);
  off.verify_tls = false;
  auto unverified = Open(off);
  EXPECT_TRUE(unverified->Stat("t.txt").ok());
  RemoveTree(*dir).ok();
}

TEST_F(S3StoreTest, SessionTokenIsSentSigned) {
  // The server verifies the signature over every signed header, x-amz-security-token included,
  // so a token that were sent differently from how it was signed would fail here.
  S3Settings o = SettingsFor(*server_);
  o.session_token = "FQoGZXIvYXdzEJr//////////wEaDOpRq+token=";
  auto store = Open(o);
  ASSERT_TRUE(PutBytes(store.get(), "tok.txt", "with a session token").ok());
  Result<std::vector<ObjectInfo>> listed = store->List("", false);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(Keys(*listed), std::vector<std::string>{"tok.txt"});
}

}  // namespace
}  // namespace dbs::testing

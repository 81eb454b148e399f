#include "objstore/contract.h"

#include <malloc.h>
#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace dbs::testing {
namespace {

std::vector<std::string> Keys(const std::vector<ObjectInfo>& list) {
  std::vector<std::string> out;
  for (const ObjectInfo& o : list) out.push_back(o.key + (o.is_prefix ? " (folder)" : ""));
  return out;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

}  // namespace

uint64_t HeapInUse() {
  if (kSanitized) return 0;
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

std::string PatternBytes(uint64_t seed, uint64_t offset, size_t n) {
  // splitmix64 of (seed, 8-byte word index): any range can be made without the ones before it.
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    const uint64_t pos = offset + i;
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + (pos / 8) + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    out[i] = static_cast<char>((z >> (8 * (pos % 8))) & 0xFF);
  }
  return out;
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr);
}
Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }
void Sha256::Update(std::string_view bytes) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size());
}
std::string Sha256::HexDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

void ObjectStoreContract::SetUp() {
  Result<std::unique_ptr<ObjectStore>> s = GetParam().make();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  store_ = std::move(s).value();
}

void ObjectStoreContract::Put(const std::string& key, const std::string& bytes) {
  Result<std::unique_ptr<ObjectWriter>> w = store_->Create(key);
  ASSERT_TRUE(w.ok()) << key << ": " << w.status().ToString();
  ASSERT_TRUE((*w)->Write(bytes).ok());
  Status st = (*w)->Commit();
  ASSERT_TRUE(st.ok()) << key << ": " << st.ToString();
}

std::string ObjectStoreContract::Get(const std::string& key) {
  Result<std::unique_ptr<ObjectReader>> r = store_->Open(key);
  EXPECT_TRUE(r.ok()) << key << ": " << r.status().ToString();
  if (!r.ok()) return {};
  std::string all, piece;
  for (;;) {
    Status st = (*r)->Read(&piece, 1 << 16);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok() || piece.empty()) break;
    all += piece;
  }
  return all;
}

TEST_P(ObjectStoreContract, ListsOneLevelAndRecursively) {
  Put("a/b.txt", "bb");
  Put("a/c/d.txt", "ddd");
  Put("ab.txt", "near the prefix a");
  Put("e.txt", "e");
  Put("z/y/x.bin", std::string(1000, 'x'));
  Put("z/top.bin", "t");  // s3rver omits folders that hold only folders from one-level lists

  Result<std::vector<ObjectInfo>> top = store_->List("", false);
  ASSERT_TRUE(top.ok()) << top.status().ToString();
  EXPECT_EQ(Keys(*top),
            (std::vector<std::string>{"a/ (folder)", "ab.txt", "e.txt", "z/ (folder)"}));
  for (const ObjectInfo& o : *top) {
    if (o.key == "e.txt") {
      EXPECT_EQ(o.size, 1u);
      EXPECT_GT(o.modified_ms, NowMs() - 24 * 3600 * 1000);  // a real time, not 0
    }
  }

  for (const char* folder : {"a", "a/"}) {
    Result<std::vector<ObjectInfo>> a = store_->List(folder, false);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(Keys(*a), (std::vector<std::string>{"a/b.txt", "a/c/ (folder)"})) << folder;
    Result<std::vector<ObjectInfo>> ar = store_->List(folder, true);
    ASSERT_TRUE(ar.ok()) << ar.status().ToString();
    EXPECT_EQ(Keys(*ar), (std::vector<std::string>{"a/b.txt", "a/c/d.txt"})) << folder;
  }

  Result<std::vector<ObjectInfo>> all = store_->List("", true);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(Keys(*all), (std::vector<std::string>{"a/b.txt", "a/c/d.txt", "ab.txt", "e.txt",
                                                  "z/top.bin", "z/y/x.bin"}));
  ASSERT_EQ(all->size(), 6u);
  EXPECT_EQ((*all)[5].size, 1000u);
  EXPECT_FALSE((*all)[5].is_prefix);

  Result<std::vector<ObjectInfo>> missing = store_->List("no/such/folder", true);
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_TRUE(missing->empty());
}

TEST_P(ObjectStoreContract, KeysWithSpacesAndUnicode) {
  // Characters that URL encoding and request signing must get right.
  const std::vector<std::string> keys = {"year=2026/month=11/part 0+1.csv",
                                         "données/été ü~*().json", "a=b/c%20d;e,f@g$h!.txt"};
  // '&' and '\'' are XML-escaped in listings; s3rver escapes them twice, so they are checked
  // without List.
  const std::vector<std::string> unlisted = {"x&y/it's.txt"};
  for (const std::string& k : keys) Put(k, "v:" + k);
  for (const std::string& k : unlisted) Put("u/" + k, "v:" + k);
  for (const std::string& k : unlisted) EXPECT_EQ(Get("u/" + k), "v:" + k) << k;
  for (const std::string& k : keys) {
    EXPECT_EQ(Get(k), "v:" + k) << k;
    Result<ObjectInfo> st = store_->Stat(k);
    ASSERT_TRUE(st.ok()) << k << ": " << st.status().ToString();
    EXPECT_EQ(st->size, k.size() + 2);
  }
  Result<std::vector<ObjectInfo>> part = store_->List("year=2026/month=11", false);
  ASSERT_TRUE(part.ok()) << part.status().ToString();
  EXPECT_EQ(Keys(*part), (std::vector<std::string>{"year=2026/month=11/part 0+1.csv"}));
  ASSERT_TRUE(store_->Delete("u/x&y/it's.txt").ok());
  Result<std::vector<ObjectInfo>> all = store_->List("", true);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(Keys(*all), sorted);
}

TEST_P(ObjectStoreContract, StatAndMissingKeys) {
  Put("dir/obj.bin", "12345");
  Result<ObjectInfo> st = store_->Stat("dir/obj.bin");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->key, "dir/obj.bin");
  EXPECT_EQ(st->size, 5u);
  EXPECT_FALSE(st->is_prefix);

  Result<ObjectInfo> none = store_->Stat("dir/none.bin");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound) << none.status().ToString();
  EXPECT_NE(none.status().message().find("dir/none.bin"), std::string::npos)
      << none.status().ToString();
  // A folder is not an object.
  EXPECT_EQ(store_->Stat("dir").status().code(), StatusCode::kNotFound);

  Result<std::unique_ptr<ObjectReader>> r = store_->Open("dir/none.bin");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  EXPECT_NE(r.status().message().find("dir/none.bin"), std::string::npos);
  std::string out = "stale";
  Status rr = store_->ReadRange("dir/none.bin", 0, 10, &out);
  EXPECT_EQ(rr.code(), StatusCode::kNotFound) << rr.ToString();
}

TEST_P(ObjectStoreContract, ReadsRanges) {
  const std::string data = PatternBytes(7, 0, 100000);
  Put("r.bin", data);
  struct Case {
    uint64_t offset, length;
  };
  for (Case c : {Case{0, 1}, Case{0, 100000}, Case{1, 99999}, Case{12345, 6789}, Case{99999, 1},
                 Case{99990, 100}, Case{0, 1ull << 40}}) {
    std::string out;
    Status st = store_->ReadRange("r.bin", c.offset, c.length, &out);
    ASSERT_TRUE(st.ok()) << c.offset << "+" << c.length << ": " << st.ToString();
    EXPECT_EQ(out, data.substr(c.offset, c.length)) << c.offset << "+" << c.length;
  }
  for (Case c : {Case{100000, 10}, Case{200000, 1}, Case{5, 0}}) {
    std::string out = "stale";
    Status st = store_->ReadRange("r.bin", c.offset, c.length, &out);
    ASSERT_TRUE(st.ok()) << c.offset << "+" << c.length << ": " << st.ToString();
    EXPECT_TRUE(out.empty()) << c.offset << "+" << c.length;
  }
}

TEST_P(ObjectStoreContract, EmptyObject) {
  Put("empty", "");
  Result<ObjectInfo> st = store_->Stat("empty");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->size, 0u);
  Result<std::unique_ptr<ObjectReader>> r = store_->Open("empty");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->size(), 0u);
  std::string out = "stale";
  ASSERT_TRUE((*r)->Read(&out, 100).ok());
  EXPECT_TRUE(out.empty());
  std::string range = "stale";
  ASSERT_TRUE(store_->ReadRange("empty", 0, 10, &range).ok());
  EXPECT_TRUE(range.empty());
}

// A large object written and read back in pieces, with the heap held by the writer and the
// reader bounded well below the object's size, and its checksum equal.
TEST_P(ObjectStoreContract, LargeObjectStreamsWithBoundedMemory) {
  const StoreUnderTest& p = GetParam();
  const uint64_t size = p.large_object + 12345;  // not a multiple of any part or chunk size
  constexpr size_t kPiece = 1 << 20;
  Sha256 written;
  {
    Result<std::unique_ptr<ObjectWriter>> w = store_->Create("big/object.bin");
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    const uint64_t base = HeapInUse();
    uint64_t peak = 0;
    for (uint64_t off = 0; off < size; off += kPiece) {
      const std::string piece = PatternBytes(42, off, std::min<uint64_t>(kPiece, size - off));
      written.Update(piece);
      Status st = (*w)->Write(piece);
      ASSERT_TRUE(st.ok()) << st.ToString();
      peak = std::max(peak, HeapInUse());
    }
    EXPECT_EQ((*w)->bytes_written(), size);
    // Not visible before Commit, even though most of it was sent.
    EXPECT_EQ(store_->Stat("big/object.bin").status().code(), StatusCode::kNotFound);
    Result<std::vector<ObjectInfo>> listed = store_->List("big", true);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    EXPECT_TRUE(listed->empty()) << Keys(*listed).size();
    Status st = (*w)->Commit();
    ASSERT_TRUE(st.ok()) << st.ToString();
    if (base != 0) {
      EXPECT_LT(peak - std::min(peak, base), p.writer_heap_bound)
          << "the writer held " << (peak - base) << " bytes of a " << size << "-byte object";
    }
  }
  Result<ObjectInfo> st = store_->Stat("big/object.bin");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->size, size);

  Result<std::unique_ptr<ObjectReader>> r = store_->Open("big/object.bin");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->size(), size);
  const uint64_t base = HeapInUse();
  uint64_t peak = 0;
  Sha256 read;
  uint64_t total = 0;
  std::string piece;
  for (;;) {
    Status rs = (*r)->Read(&piece, 300000);  // not aligned with the store's ranges
    ASSERT_TRUE(rs.ok()) << rs.ToString();
    peak = std::max(peak, HeapInUse());
    if (piece.empty()) break;
    ASSERT_LE(piece.size(), 300000u);
    if (total + piece.size() < size) {
      EXPECT_EQ(piece.size(), 300000u) << "short read at " << total;
    }
    read.Update(piece);
    total += piece.size();
  }
  EXPECT_EQ(total, size);
  EXPECT_EQ(read.HexDigest(), written.HexDigest());
  if (base != 0) {
    EXPECT_LT(peak - std::min(peak, base), p.reader_heap_bound)
        << "the reader held " << (peak - base) << " bytes of a " << size << "-byte object";
  }
}

TEST_P(ObjectStoreContract, CommitMakesVisibleAtomically) {
  Result<std::unique_ptr<ObjectWriter>> w = store_->Create("t/new.csv");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->Write("id,name\n").ok());
  ASSERT_TRUE((*w)->Write("1,one\n").ok());
  EXPECT_EQ((*w)->bytes_written(), 14u);
  EXPECT_EQ(store_->Stat("t/new.csv").status().code(), StatusCode::kNotFound);
  Result<std::vector<ObjectInfo>> before = store_->List("", true);
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->empty()) << Keys(*before).front();
  ASSERT_TRUE((*w)->Commit().ok());
  EXPECT_EQ(Get("t/new.csv"), "id,name\n1,one\n");
  // No more writes after Commit; Abort is then a no-op that keeps the object.
  EXPECT_FALSE((*w)->Write("x").ok());
  EXPECT_TRUE((*w)->Abort().ok());
  w->reset();
  EXPECT_EQ(Get("t/new.csv"), "id,name\n1,one\n");
  Result<std::vector<ObjectInfo>> after = store_->List("", true);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(Keys(*after), (std::vector<std::string>{"t/new.csv"}));
}

TEST_P(ObjectStoreContract, AbortAndDestructionLeaveNothing) {
  {
    Result<std::unique_ptr<ObjectWriter>> w = store_->Create("t/aborted.csv");
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->Write("partial").ok());
    ASSERT_TRUE((*w)->Abort().ok());
    EXPECT_FALSE((*w)->Commit().ok());
  }
  {
    Result<std::unique_ptr<ObjectWriter>> w = store_->Create("t/dropped.csv");
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->Write("partial").ok());
  }  // destroyed without Commit
  EXPECT_EQ(store_->Stat("t/aborted.csv").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Stat("t/dropped.csv").status().code(), StatusCode::kNotFound);
  Result<std::vector<ObjectInfo>> all = store_->List("", true);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_TRUE(all->empty()) << Keys(*all).front();
  if (GetParam().lists_incomplete) {
    Result<std::vector<ObjectInfo>> incomplete = store_->ListIncomplete("");
    ASSERT_TRUE(incomplete.ok()) << incomplete.status().ToString();
    EXPECT_TRUE(incomplete->empty()) << Keys(*incomplete).front();
  }
}

TEST_P(ObjectStoreContract, CommitReplacesAndReadersSeeOneVersion) {
  const std::string v1 = PatternBytes(1, 0, 9 << 20);  // more than one S3 read chunk
  const std::string v2 = PatternBytes(2, 0, 9 << 20);
  Put("v.bin", v1);
  Result<std::unique_ptr<ObjectReader>> r = store_->Open("v.bin");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string first;
  ASSERT_TRUE((*r)->Read(&first, 1000).ok());
  EXPECT_EQ(first, v1.substr(0, 1000));
  Put("v.bin", v2);
  EXPECT_EQ(Get("v.bin"), v2);
  // The reader opened before the replacement reads the old version to its end, or fails with
  // Aborted; it never mixes the two.
  std::string rest = first, piece;
  Status st;
  for (;;) {
    st = (*r)->Read(&piece, 1 << 20);
    if (!st.ok() || piece.empty()) break;
    rest += piece;
  }
  if (st.ok()) {
    EXPECT_EQ(rest.size(), v1.size());
    EXPECT_TRUE(rest == v1) << "the reader mixed two versions";
  } else {
    EXPECT_EQ(st.code(), StatusCode::kAborted) << st.ToString();
  }
}

TEST_P(ObjectStoreContract, DeletesObjects) {
  Put("d/one", "1");
  Put("d/two", "2");
  ASSERT_TRUE(store_->Delete("d/one").ok());
  EXPECT_EQ(store_->Stat("d/one").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->Delete("d/one").ok());  // already gone
  EXPECT_TRUE(store_->Delete("d/never").ok());
  Result<std::vector<ObjectInfo>> all = store_->List("", true);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(Keys(*all), (std::vector<std::string>{"d/two"}));
}

TEST_P(ObjectStoreContract, CopiesObjects) {
  std::string bytes(300000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131) % 251);
  Put("c/src one", bytes);
  Put("c/dst", "old");
  ASSERT_TRUE(store_->Copy("c/src one", "c/dst").ok());  // replaces
  EXPECT_EQ(Get("c/dst"), bytes);
  ASSERT_TRUE(store_->Copy("c/src one", "c/ünï/new").ok());
  EXPECT_EQ(Get("c/ünï/new"), bytes);
  EXPECT_EQ(Get("c/src one"), bytes) << "the source stays";
  Put("c/empty", "");
  ASSERT_TRUE(store_->Copy("c/empty", "c/empty2").ok());
  Result<ObjectInfo> st = store_->Stat("c/empty2");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->size, 0u);
  EXPECT_EQ(store_->Copy("c/missing", "c/x").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Stat("c/x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->Copy("c/dst", "../x").code(), StatusCode::kInvalidArgument);
}

TEST_P(ObjectStoreContract, RefusesInvalidKeys) {
  const std::vector<std::string> bad = {"",
                                        "/abs",
                                        "dir/",
                                        "a//b",
                                        "..",
                                        ".",
                                        "../escape",
                                        "a/../../b",
                                        "a/./b",
                                        "a/..",
                                        std::string("nul\0byte", 8),
                                        "tab\there",
                                        "bad\xff utf8",
                                        "\xc0\xaf overlong",
                                        std::string(1025, 'k'),
                                        "d/.x.csv.dbs-tmp-0123456789abcdef"};
  for (const std::string& key : bad) {
    EXPECT_EQ(store_->Stat(key).status().code(), StatusCode::kInvalidArgument) << key;
    EXPECT_EQ(store_->Open(key).status().code(), StatusCode::kInvalidArgument) << key;
    EXPECT_EQ(store_->Create(key).status().code(), StatusCode::kInvalidArgument) << key;
    EXPECT_EQ(store_->Delete(key).code(), StatusCode::kInvalidArgument) << key;
    std::string out;
    EXPECT_EQ(store_->ReadRange(key, 0, 1, &out).code(), StatusCode::kInvalidArgument) << key;
  }
  for (const char* prefix : {"../", "/", "a//", "..", "x/../.."}) {
    EXPECT_EQ(store_->List(prefix, true).status().code(), StatusCode::kInvalidArgument) << prefix;
    EXPECT_EQ(store_->ListIncomplete(prefix).status().code(), StatusCode::kInvalidArgument)
        << prefix;
  }
  Status st = store_->Stat("../escape").status();
  EXPECT_NE(st.message().find("../escape"), std::string::npos) << st.ToString();
  // A dot at the start of a name is fine when it is not a temporary name.
  Put(".hidden/.profile", "p");
  EXPECT_EQ(Get(".hidden/.profile"), "p");
}

TEST_P(ObjectStoreContract, DescribeNamesTheStore) {
  const std::string d = store_->Describe();
  EXPECT_TRUE(d.rfind("file://", 0) == 0 || d.rfind("s3://", 0) == 0) << d;
}

}  // namespace dbs::testing

// The ObjectStore contract (src/objstore/object_store.h) as one parameterized gtest suite,
// `ObjectStoreContract`, run against every store: each test binary instantiates it with its own
// StoreUnderTest (local_store_test.cc: a temporary folder; s3_store_test.cc: a real S3 server).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include <gtest/gtest.h>

#include "core/result.h"
#include "objstore/object_store.h"

namespace dbs::testing {

struct StoreUnderTest {
  std::string name;  // a gtest name part: letters and digits
  // A fresh, empty store for one test (a new folder, or a new prefix in a bucket).
  std::function<Result<std::unique_ptr<ObjectStore>>()> make;
  // Heap growth allowed while a sequential reader / a writer streams the large object (bytes);
  // the object is several times larger, so a store that holds it whole fails.
  uint64_t large_object = 48ull << 20;
  uint64_t reader_heap_bound = 16ull << 20;
  uint64_t writer_heap_bound = 24ull << 20;
  // Whether ListIncomplete works (S3 servers without ListMultipartUploads answer Unsupported).
  bool lists_incomplete = true;
};

inline std::ostream& operator<<(std::ostream& os, const StoreUnderTest& s) { return os << s.name; }

class ObjectStoreContract : public ::testing::TestWithParam<StoreUnderTest> {
 protected:
  void SetUp() override;
  // Writes `bytes` under `key` through Create/Write/Commit.
  void Put(const std::string& key, const std::string& bytes);
  std::string Get(const std::string& key);

  std::unique_ptr<ObjectStore> store_;
};

// Deterministic bytes: block `i` of a pseudo-random stream seeded by `seed`.
std::string PatternBytes(uint64_t seed, uint64_t offset, size_t n);
// Heap bytes in use now (glibc mallinfo2); 0 under sanitizers, where it means nothing.
uint64_t HeapInUse();
// SHA-256 hex of bytes, incrementally.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  void Update(std::string_view bytes);
  std::string HexDigest();

 private:
  void* ctx_;
};

inline std::string ContractTestName(const ::testing::TestParamInfo<StoreUnderTest>& info) {
  return info.param.name;
}

}  // namespace dbs::testing

// ObjectStore: files in a local folder or objects in an S3-compatible bucket, behind one small
// interface, so file sources and targets (src/files/) and the explorer do not care where the
// bytes live.
//
// Contract:
//  - Keys are '/'-separated paths relative to the store's root (a local folder, or a bucket plus
//    an optional prefix). A key never starts with '/' and never contains "." or ".." segments;
//    methods refuse such keys with InvalidArgument (no escape from the root).
//  - Reads never buffer a whole object: ReadRange reads one byte range (S3: a ranged GET), and
//    Open() returns a sequential reader that fetches bounded ranges as it goes.
//  - Writes are atomic: a writer's bytes become visible under the key only at Commit() (local: a
//    temporary name in the same folder, fsync, rename; S3: multipart upload completed at Commit,
//    a single PUT when small). Abort() (or destroying an uncommitted writer) removes every trace
//    (local: the temporary file; S3: AbortMultipartUpload). A reader sees no object or a
//    complete one.
//  - Errors are actionable: wrong credentials, a missing bucket or folder, a missing key
//    (NotFound) and network failures (Unavailable, retryable) are told apart and name the
//    endpoint/bucket/key, never the secret.
//  - A store is thread-safe; readers and writers it returns are used from one thread each.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/status.h"

namespace dbs {

struct ObjectInfo {
  std::string key;          // relative to the store's root
  uint64_t size = 0;        // bytes
  int64_t modified_ms = 0;  // last modification, Unix epoch milliseconds
  bool is_prefix = false;   // a folder / common prefix (List with recursive = false)
};

class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  // Reads up to `max` bytes into *out (replacing its content); an empty *out means end of object.
  virtual Status Read(std::string* out, size_t max) = 0;
  virtual uint64_t size() const = 0;
};

class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;  // aborts when not committed
  virtual Status Write(std::string_view bytes) = 0;
  // Makes the object visible under its key, complete. After Commit or Abort, no more calls.
  virtual Status Commit() = 0;
  virtual Status Abort() = 0;
  virtual uint64_t bytes_written() const = 0;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  // Objects under `prefix` (a folder key, "" for the root), sorted by key. recursive = false
  // lists one level: objects plus sub-folders as is_prefix entries. Pages through S3
  // continuation tokens internally.
  virtual Result<std::vector<ObjectInfo>> List(const std::string& prefix, bool recursive) = 0;
  // NotFound when the key does not exist.
  virtual Result<ObjectInfo> Stat(const std::string& key) = 0;
  // Bytes [offset, offset + length) of the object (fewer at its end) into *out.
  virtual Status ReadRange(const std::string& key, uint64_t offset, uint64_t length,
                           std::string* out) = 0;
  virtual Result<std::unique_ptr<ObjectReader>> Open(const std::string& key) = 0;
  virtual Result<std::unique_ptr<ObjectWriter>> Create(const std::string& key) = 0;
  // Removes the object; OK when it does not exist.
  virtual Status Delete(const std::string& key) = 0;
  // "file:///data/root" or "s3://bucket/prefix" with the endpoint: for messages, no secrets.
  virtual std::string Describe() const = 0;
};

// S3-compatible object storage (AWS Signature V4).
struct S3Settings {
  std::string endpoint;  // "https://s3.eu-west-1.amazonaws.com" or "http://127.0.0.1:9000"
  std::string region = "us-east-1";
  std::string bucket;
  std::string prefix;       // optional root inside the bucket, no leading/trailing '/'
  bool path_style = true;   // false: virtual-host addressing (bucket.endpoint-host)
  std::string access_key;   // secrets: never logged or returned
  std::string secret_key;
  std::string session_token;  // optional (temporary credentials)
  std::string ca_file;        // optional PEM bundle for a custom CA
  bool verify_tls = true;
};

// A local folder as a store; the folder must exist.
Result<std::unique_ptr<ObjectStore>> OpenLocalStore(const std::string& root);
// A bucket; checks nothing on the network until the first call.
Result<std::unique_ptr<ObjectStore>> OpenS3Store(const S3Settings& settings);

}  // namespace dbs

// ObjectStore: files in a local folder or objects in an S3-compatible bucket, behind one small
// interface, so file sources and targets (src/files/) and the explorer do not care where the
// bytes live.
//
// Contract:
//  - Keys are '/'-separated paths relative to the store's root (a local folder, or a bucket plus
//    an optional prefix): valid UTF-8, 1..1024 bytes, no leading or trailing '/', no empty, "."
//    or ".." segments, no control characters, and a last segment that is not a temporary name
//    of this library (see IsTemporaryName). Methods refuse other keys with InvalidArgument
//    (ValidateKey), so nothing escapes the root. Local stores also refuse keys that resolve,
//    through symbolic links, outside the root (PermissionDenied).
//  - Folders ("prefixes") are keys of folders: "" is the root; "a/b" and "a/b/" name the same
//    folder. List returns keys relative to the root, sorted bytewise; folder entries
//    (is_prefix) end with '/' ("a/b/c/"). A folder that does not exist lists as empty, as on S3.
//  - Reads never buffer a whole object: ReadRange reads one byte range (S3: a ranged GET), and
//    Open() returns a sequential reader that fetches bounded ranges as it goes (S3: at most
//    S3Settings::read_chunk bytes per request, held once). A reader sees one version of the
//    object: locally it keeps the file open; on S3 later ranges carry If-Match with the first
//    response's ETag, and a replaced object fails the read with Aborted instead of mixing bytes.
//  - Writes are atomic: a writer's bytes become visible under the key only at Commit(), which
//    replaces an existing object (local: a temporary name in the same folder, fsync, rename,
//    fsync of the folder; S3: a single PUT when the object fits one part, else a multipart
//    upload completed at Commit). Abort(), a failed Write/Commit, or destroying an uncommitted
//    writer removes every trace (local: the temporary file; S3: AbortMultipartUpload). A reader
//    sees no object or a complete one. What a writer killed by SIGKILL leaves (a temporary file,
//    an uncompleted multipart upload) is never visible as an object; RemoveIncomplete() sweeps it.
//  - Errors are actionable and say what failed where (Describe(), the key), never the secret:
//    wrong credentials PermissionDenied, a missing bucket or key NotFound, a server that cannot
//    be reached or keeps failing Unavailable (retryable; S3 requests that may be repeated are
//    retried with backoff first), other local failures IoError.
//  - A store is thread-safe; readers and writers it returns are used from one thread each, and
//    must not outlive the store.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/status.h"

namespace dbs {

struct ObjectInfo {
  std::string key;          // relative to the store's root; folders end with '/'
  uint64_t size = 0;        // bytes (0 for folders)
  int64_t modified_ms = 0;  // last modification, Unix epoch milliseconds (0 for S3 folders)
  bool is_prefix = false;   // a folder / common prefix (List with recursive = false)
  std::string etag;         // S3: the object's ETag without quotes; local: empty
};

class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  // Reads up to `max` bytes into *out (replacing its content); fewer only at the end of the
  // object; an empty *out means end of object.
  virtual Status Read(std::string* out, size_t max) = 0;
  virtual uint64_t size() const = 0;
};

class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;  // aborts when not committed
  virtual Status Write(std::string_view bytes) = 0;
  // Makes the object visible under its key, complete. After Commit or Abort, or after any
  // failed call (which has already aborted), no more calls but Abort (a no-op then).
  virtual Status Commit() = 0;
  virtual Status Abort() = 0;
  virtual uint64_t bytes_written() const = 0;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  // Objects under the folder `prefix` ("" for the root), sorted by key. recursive = false lists
  // one level: objects plus sub-folders as is_prefix entries. Pages through S3 continuation
  // tokens internally.
  virtual Result<std::vector<ObjectInfo>> List(const std::string& prefix, bool recursive) = 0;
  // NotFound when the key does not exist (a folder is not an object).
  virtual Result<ObjectInfo> Stat(const std::string& key) = 0;
  // Bytes [offset, offset + length) of the object (fewer at its end, none past it) into *out.
  virtual Status ReadRange(const std::string& key, uint64_t offset, uint64_t length,
                           std::string* out) = 0;
  // NotFound when the key does not exist.
  virtual Result<std::unique_ptr<ObjectReader>> Open(const std::string& key) = 0;
  virtual Result<std::unique_ptr<ObjectWriter>> Create(const std::string& key) = 0;
  // Removes the object; OK when it does not exist.
  virtual Status Delete(const std::string& key) = 0;
  // Makes `to` a copy of the object `from` (replacing what `to` held), as atomically as a
  // Create + Commit. NotFound when `from` does not exist. The default streams the bytes
  // through Open and Create (bounded memory); S3 copies on the server (CopyObject) when the
  // object fits one, without the bytes crossing the network.
  virtual Status Copy(const std::string& from, const std::string& to);
  // Writes under the folder `prefix` (recursively) that were started and never committed or
  // aborted, because their writer died (local: temporary files, key = the object they were
  // for; S3: multipart uploads in progress). modified_ms is the last write (local) or the
  // upload's start (S3). Unsupported when the server cannot list multipart uploads.
  virtual Result<std::vector<ObjectInfo>> ListIncomplete(const std::string& prefix) = 0;
  // Removes those of ListIncomplete whose modified_ms is at least `min_age` ago, and returns how
  // many. Writers still running elsewhere are safe only if min_age is longer than they take
  // (local: between two writes; S3: the whole upload).
  virtual Result<size_t> RemoveIncomplete(const std::string& prefix,
                                          std::chrono::milliseconds min_age) = 0;
  // "file:///data/root" or "s3://bucket/prefix at https://endpoint": for messages, no secrets.
  virtual std::string Describe() const = 0;
};

// S3-compatible object storage (AWS Signature V4).
struct S3Settings {
  std::string endpoint;  // "https://s3.eu-west-1.amazonaws.com" or "http://127.0.0.1:9000"
  std::string region = "us-east-1";
  std::string bucket;
  std::string prefix;      // optional root inside the bucket; leading/trailing '/' are ignored
  bool path_style = true;  // false: virtual-host addressing (bucket.endpoint-host)
  std::string access_key;  // secrets: never logged or returned
  std::string secret_key;
  std::string session_token;  // optional (temporary credentials): x-amz-security-token
  std::string ca_file;        // optional PEM bundle for a custom CA
  bool verify_tls = true;     // off only for testing: certificate and host name unchecked
  // Tuning. part_size: bytes per multipart part and the largest single PUT (S3: 5 MiB..5 GiB);
  // a writer holds one part in memory. read_chunk: bytes per ranged GET of a sequential reader.
  uint64_t part_size = 16ull << 20;
  uint64_t read_chunk = 8ull << 20;
  int max_attempts = 5;  // per request, for retryable failures of requests that may be repeated
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds request_timeout{300000};  // one HTTP request, body included
  int list_page_size = 1000;                          // max-keys per ListObjectsV2 page
};

// A local folder as a store; the folder must exist (NotFound otherwise).
Result<std::unique_ptr<ObjectStore>> OpenLocalStore(const std::string& root);
// A bucket; checks the settings (InvalidArgument: endpoint, bucket, credentials, sizes) and
// nothing on the network until the first call.
Result<std::unique_ptr<ObjectStore>> OpenS3Store(const S3Settings& settings);

// --- key helpers (object_store.cc) ---------------------------------------------------------------

// OK when `key` is a valid object key (see the contract above); InvalidArgument naming the key
// and the rule otherwise.
Status ValidateKey(std::string_view key);
// "" for the root, else the folder key with exactly one trailing '/' ("a/b" -> "a/b/"), or
// InvalidArgument.
Result<std::string> NormalizePrefix(std::string_view prefix);
// Whether a file name (one segment) is a temporary name of a local writer:
// "." + the object's name + ".dbs-tmp-" + 16 hex digits.
bool IsTemporaryName(std::string_view name);

}  // namespace dbs

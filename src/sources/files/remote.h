// Files in an S3-compatible bucket (s3:// connections) for the DuckDB-based file sources and
// targets: the bucket as an ObjectStore, and local copies of objects for DuckDB.
//
// Why copies: the embedded DuckDB cannot reach S3 here (its httpfs extension cannot be
// installed offline, and its C API has no file-system hook), so an object is streamed to a
// private spill file (ranged GETs of S3Settings::read_chunk bytes, one chunk in memory) and
// DuckDB reads that file. A reader holds one object's copy at a time; memory stays bounded,
// the spill folder holds at most the objects being read.
#pragma once

#include <memory>
#include <string>

#include "config/connection.h"
#include "core/result.h"
#include "objstore/object_store.h"
#include "sources/files/file_common.h"

namespace dbs::files {

// The bucket (and prefix) of an s3:// connection: endpoint (default
// https://s3.<region>.amazonaws.com), region (default us-east-1), addressing (path, the
// default, or virtual), the access key (user) and secret key (password), the session token,
// and TLS (ssl.ca a path or inline PEM; ssl.mode "require" encrypts without checking the
// certificate, as libpq's). InvalidArgument for a connection that is not s3://.
Result<std::unique_ptr<ObjectStore>> OpenS3Of(const ConnectionConfig& c);
// The defaults OpenS3Of applies (the API shows them in a saved connection).
inline constexpr char kDefaultS3Region[] = "us-east-1";
std::string DefaultS3Endpoint(const std::string& region);

// A private folder (0700, under $TMPDIR) for local copies, removed with everything in it when
// destroyed.
class SpillDir {
 public:
  static Result<std::unique_ptr<SpillDir>> Create(const std::string& purpose);
  ~SpillDir();
  SpillDir(const SpillDir&) = delete;
  SpillDir& operator=(const SpillDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  explicit SpillDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Streams object `key` of `store` into the local file `path` (created 0600, or truncated),
// one ranged GET's worth in memory at a time.
Status CopyObject(ObjectStore* store, const std::string& key, const std::string& path);

// A local copy of one object, removed when destroyed. It is written in a fresh sub-folder of
// the existing folder `dir` (a SpillDir's path, or a request's scratch folder), and its file
// name ends like the key's (".csv.gz"), so DuckDB recognizes the format and compression.
class LocalCopy {
 public:
  static Result<std::unique_ptr<LocalCopy>> Fetch(ObjectStore* store, const std::string& key,
                                                  const std::string& dir);
  ~LocalCopy();
  LocalCopy(const LocalCopy&) = delete;
  LocalCopy& operator=(const LocalCopy&) = delete;
  const std::string& path() const { return path_; }

 private:
  explicit LocalCopy(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The `_manifest.json` of the table folder `dir` of a store (file_common.h): NotFound when
// it has none, Corruption (naming the store and key) when it does not parse.
Result<Manifest> ReadManifestFrom(ObjectStore* store, const std::string& dir);

// Uploads the local file `path` as object `key` (atomic: visible complete at the end, see
// ObjectStore), streaming it in parts.
Status Upload(ObjectStore* store, const std::string& path, const std::string& key);

}  // namespace dbs::files

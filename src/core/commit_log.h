// CommitLog: small documents with compare-and-set, shared by every writer of a run, for
// targets that can neither lock nor compare-and-set themselves (a file target on S3 keeps the
// checkpoint of its change files there; sinks/files/changes.h). The writers back it with the
// run's JetStream stream (bus/commit_log.h), which lives exactly as long as the run's
// checkpoints do.
//
// Contract:
//  - Read returns the newest value of a key with its version; version 0 and "" when the key
//    has none yet.
//  - Write stores a new value only if the key's version is still `expected` (0: none yet) and
//    returns the new version, which is larger than every earlier one. When another writer
//    wrote in between it writes nothing and returns FailedPrecondition (retryable): read again
//    and redo the change on the newer value.
//  - A Write that fails otherwise (timeout, lost connection) may or may not have been stored:
//    read again before deciding.
//  - Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace dbs {

class CommitLog {
 public:
  struct Entry {
    std::string value;
    uint64_t version = 0;
  };
  virtual ~CommitLog() = default;
  // Keys: [A-Za-z0-9_-]+.
  virtual Result<Entry> Read(const std::string& key) = 0;
  virtual Result<uint64_t> Write(const std::string& key, std::string_view value,
                                 uint64_t expected) = 0;
};

}  // namespace dbs

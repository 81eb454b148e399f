// PartStager: the load half of a file target that writes each part file once, while the load
// runs (part_stream.h), shared by the local folder and the S3 target. Per table it keeps one
// open part that takes the table's new bundles, and it settles every bundle id Apply was given
// as committed or dropped (the Sink contract of DefersCommit, sink.h).
//
// Contract:
//  - The target implements PartTarget:
//     * Refresh(table, applied): adds to *applied the bundle ids of the table's committed
//       segments, another writer's too (it may lock, create folders, list); called before a
//       batch is staged.
//     * TempPath(table, first id): where a new part's file is written.
//     * CommitPart(table, part, rows, applied): makes the completed part (its stream closed,
//       `rows` rows in the file at part->stream->path()) a committed segment and returns true;
//       or, when *applied (refreshed by commit itself) holds one of the part's bundles, which
//       another writer committed meanwhile, writes nothing and returns false. Once the file at
//       the temporary path is gone (renamed, uploaded and removed), it resets part->stream,
//       so that a later drop does not touch it.
//  - Apply() skips ids in *applied (settled as committed at once) and ids already staged
//    (settled with their part), and commits a part before a bundle would take it past
//    rows_per_file, and once it reaches it; with bytes_per_file, bundles are handed to the
//    part one at a time and it is committed once its file (as written so far) reaches that
//    size. A part always takes at least one bundle.
//  - On any failure the part and the bundles not handed to it are settled as dropped (their
//    messages are redelivered) and the error is returned with the table as context.
//  - Destroying the stager drops what is staged (its temporary files are removed).
//  - Used from one thread (the sink's).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config/stream_config.h"
#include "core/result.h"
#include "sinks/files/part_stream.h"
#include "sinks/sink.h"

namespace dbs::files {

// A part being written: bundles stream into its file until it is full or committed.
struct OpenPart {
  std::unique_ptr<PartStream> stream;
  std::string first;             // the first bundle id, which names the segment
  std::vector<std::string> ids;  // the bundles in it, in order
  std::vector<uint64_t> counts;  // their row counts
  std::set<std::string> id_set;
};

// Where the parts of a PartStager go (see the contract above).
class PartTarget {
 public:
  virtual ~PartTarget() = default;
  virtual Status Refresh(const std::string& table, std::set<std::string>* applied) = 0;
  virtual std::string TempPath(const std::string& table, const std::string& first) = 0;
  virtual Result<bool> CommitPart(const std::string& table, OpenPart* part, uint64_t rows,
                                  std::set<std::string>* applied) = 0;
};

class PartStager {
 public:
  // `target` must outlive the stager.
  PartStager(PartTarget* target, FileOptions fo, ZeroDatePolicy zero_date)
      : target_(target), fo_(std::move(fo)), zero_date_(zero_date) {}
  ~PartStager() { DropAll(); }
  PartStager(const PartStager&) = delete;
  PartStager& operator=(const PartStager&) = delete;

  // Stages the bundles of one table (all of `refs` are of refs.front()->table); returns how
  // many were staged.
  Result<size_t> Apply(const std::vector<const BundleRef*>& refs);
  // Commits the open part of every table; the first error is returned, the other parts are
  // still tried.
  Status CommitAll();
  // Settles ids as dropped without staging them (a sink that refuses a batch).
  void Refuse(const std::vector<BundleRef>& bundles);
  void DropAll();
  Sink::Settled TakeSettled() { return std::exchange(settled_, Sink::Settled{}); }

 private:
  Status Commit(const std::string& table);
  void Drop(OpenPart* part);

  PartTarget* const target_;
  const FileOptions fo_;
  const ZeroDatePolicy zero_date_;
  std::map<std::string, std::set<std::string>> applied_;  // committed bundle ids, per table
  std::map<std::string, OpenPart> open_;                  // the open part of each table
  Sink::Settled settled_;                                 // since the last TakeSettled
};

}  // namespace dbs::files

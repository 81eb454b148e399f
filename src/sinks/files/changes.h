// Change files: CDC into a file target, a local folder or a bucket (docs/files.md "Changes
// into files").
//
// Every row change becomes a row of the table's change log, with the change columns first:
//   _op         insert | update | update_before | delete | truncate
//   _commit_ts  the source transaction's commit time (TIMESTAMPTZ, UTC)
//   _position   the source position just after that transaction (LSN, GTID set, file:offset)
//   _xid        the source transaction id
//   _unchanged  the columns the source did not send for this row (NULL cells here that are
//               not NULL in the source: PostgreSQL unchanged TOAST values, MySQL minimal
//               images, the non-key cells of a delete without a full old image); NULL: none
// followed by the table's columns as the load writes them (an update's new image, a delete's
// old image, update_before the old image that precedes its update; a truncate's cells NULL).
//
// Layout (keys under the target root):
//   <table>/_changes/changes-<epoch>-<first>-<last><ext>
//       published change files, complete only. <epoch> is when the run's first change was
//       staged (UTC, 20261203T054530123456Z), <first>-<last> the change messages of the run
//       the file holds (16 digits each): names sort in change order, across runs too (each
//       run of a stream numbers its messages from 1)
//   .dbs/cdc/<stream>/stage/<table>/c-<first>-<last>-<writer>.parquet
//       committed, not yet published; <writer> names the instance that staged it
// and the partition's checkpoint (last message, source position, staged segments, the
// publications under way, schemas), kept by the ChangeStore:
//   local folder: .dbs/cdc/<stream>/p<N>.json, replaced by rename under a flock that the
//                 host's writers share;
//   bucket:       the run's CommitLog (core/commit_log.h), replaced by compare-and-set; S3
//                 has neither rename nor locks, so writers on any host may race and the
//                 loser redoes its step.
//
// Contract:
//  - Apply() writes each table's rows of the batch as one staged Parquet segment, then
//    replaces the checkpoint (the commit point). A segment whose checkpoint never came is
//    never read, and swept (Flush(true)); a batch at or below the
//    checkpoint writes nothing; a gap, or another writer's checkpoint in between, is
//    FailedPrecondition (Sink::ApplyChanges).
//  - A table's staged segments are published as one change file when they hold rowsPerFile
//    changes (changeFileRows) or the oldest is changeFileSeconds old (checked by Apply and by
//    Flush), when the table's columns change, and by Flush(true) when the stream stops.
//    Publication has three steps: (1) the checkpoint moves the segments into a publication
//    that names its file (committed: from now on the file's name and rows are fixed); (2) the
//    file is written from the segments (a temporary name + rename, or one PUT / multipart
//    upload: complete or absent); (3) the checkpoint drops the publication, then the segments
//    are deleted. Whoever finds a publication in the checkpoint completes it; completing one
//    twice writes the same rows under the same name. Before step 1, a change file of this run
//    that starts at the first staged message (a publication of an older writer version that
//    died between its file and its checkpoint) already holds the segments up to its end.
//  - Schema changes: a file holds one set of columns; AddColumns publishes the table's staged
//    segments first, so the next file has the new columns.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/commit_log.h"
#include "core/result.h"
#include "objstore/object_store.h"
#include "sinks/sink.h"
#include "sources/files/duck.h"
#include "sources/files/file_common.h"

namespace dbs::files {

// Where a file target keeps its change log: objects by key (relative to the target root),
// and the partition checkpoints with compare-and-set.
class ChangeStore {
 public:
  struct Checkpoint {
    std::string text;      // "" when there is none yet
    uint64_t version = 0;  // 0 when there is none yet
  };
  // A local path of an object, valid while the handle lives.
  class Held {
   public:
    virtual ~Held() = default;
    virtual const std::string& path() const = 0;
  };
  virtual ~ChangeStore() = default;

  // "file:///root" or "s3://bucket/prefix at ..." (messages).
  virtual std::string Describe() const = 0;
  // Held across a read-modify-write of the partition's checkpoint by this host's writers
  // (local: a flock); null where nothing can be locked (compare-and-set alone).
  virtual Result<std::unique_ptr<FileLock>> Lock(const std::string& stream, int partition) = 0;
  virtual Result<Checkpoint> ReadCheckpoint(const std::string& stream, int partition) = 0;
  // Replaces the checkpoint if its version is still `expected` and returns the new version;
  // FailedPrecondition (retryable) when another writer replaced it in between.
  virtual Result<uint64_t> WriteCheckpoint(const std::string& stream, int partition,
                                           const std::string& text, uint64_t expected) = 0;
  // A folder for the temporary files Put takes.
  virtual Result<std::string> Scratch() = 0;
  // Makes the local file `path` (in Scratch(); consumed) the object `key`: complete or absent.
  virtual Status Put(const std::string& path, const std::string& key) = 0;
  // NotFound when the object does not exist.
  virtual Result<std::unique_ptr<Held>> Get(const std::string& key) = 0;
  // The names of the objects directly under the folder `dir` whose names start with `prefix`.
  virtual Result<std::vector<std::string>> List(const std::string& dir,
                                                const std::string& prefix) = 0;
  // The names of the sub-folders of `dir`.
  virtual Result<std::vector<std::string>> Folders(const std::string& dir) = 0;
  // OK when the object does not exist.
  virtual Status Delete(const std::string& key) = 0;
};

// The change store of a local folder target.
std::unique_ptr<ChangeStore> LocalChangeStore(std::string root);
// The change store of a bucket target: objects in `store` (not owned), checkpoints in `log`.
std::unique_ptr<ChangeStore> BucketChangeStore(ObjectStore* store, std::shared_ptr<CommitLog> log);

class ChangeFiles {
 public:
  // `db` hands out the sink's DuckDB (opened on first use).
  ChangeFiles(std::unique_ptr<ChangeStore> store, FileOptions fo, SinkOptions so,
              std::function<Result<Duck*>()> db);

  Result<CdcCheckpoint> ReadCheckpoint(int partition);
  Result<size_t> Apply(const ChangeBatch& batch);
  // Publishes the staged segments that are due (all: every one) in every partition this object
  // has applied or read; `all` also sweeps segments no checkpoint names.
  Status Flush(bool all);
  // Publishes the table's staged segments, so that changes with the new columns start a file.
  Status AddColumns(const TableSchema& new_schema);

 private:
  struct StagedSegment {
    std::string table;  // target table name
    uint64_t first = 0, last = 0;
    uint64_t rows = 0;
    int64_t since_us = 0;  // when it was staged (wall clock)
    // The ChangeFiles instance that staged it: two writers that stage one batch at the same
    // time write different objects, never one key at once (on some S3-compatible servers a
    // reader of a key being overwritten sees a partial object).
    std::string writer;
  };
  // A publication under way: its file and the segments it holds, in message order.
  struct Publication {
    std::string name;
    nlohmann::json schema;  // ToJson(TableSchema) of its segments
    std::vector<StagedSegment> segments;
  };
  struct State {
    uint64_t version = 0;  // ChangeStore::Checkpoint::version it was read at
    uint64_t seq = 0;
    std::string epoch;  // when the run's first change came (UTC): file names of this run
    SourcePosition position;
    std::vector<StagedSegment> staged;              // in message order
    std::map<std::string, Publication> publishing;  // by table
    std::map<std::string, nlohmann::json> schemas;  // table -> ToJson(TableSchema) of its segments
  };

  std::string Stream() const;
  std::string Dir() const;
  std::string StageDir(const std::string& table) const;
  std::string SegmentKey(const StagedSegment& s) const;
  Result<State> Load(int partition);
  // Replaces the checkpoint with st (FailedPrecondition when another writer replaced it since
  // st was read); st->version moves on.
  Status Save(int partition, State* st);
  // Publishes the table's staged segments (st is committed as it changes).
  Status Publish(int partition, State* st, const std::string& table);
  // Steps 2 and 3 of the table's publication in st.
  Status Complete(int partition, State* st, const std::string& table);
  Status Roll(int partition, State* st, bool all);
  // Runs `step` on the partition's checkpoint under the store's lock, reading it again and
  // retrying when another writer replaced it in between (a few times).
  Status WithState(int partition, const std::function<Status(State*)>& step);
  Status Sweep(int partition);

  const std::unique_ptr<ChangeStore> store_;
  const FileOptions fo_;
  const SinkOptions so_;
  std::function<Result<Duck*>()> db_;
  const std::string token_;      // StagedSegment::writer of the segments this instance stages
  std::vector<int> partitions_;  // seen, for Flush
};

// The change columns' names, in file order.
const std::vector<std::string>& ChangeColumns();

}  // namespace dbs::files

// Change files: CDC into a local file target (docs/files.md "Changes into files").
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
// Layout and delivery (under the target root):
//   <table>/_changes/changes-<epoch>-<first>-<last><ext>
//       published change files, complete only (temporary name + rename). <epoch> is when the
//       run's first change was staged (UTC, 20261203T054530123456Z), <first>-<last> the
//       change messages of the run the file holds (16 digits each): names sort in change
//       order, across runs too (each run of a stream numbers its messages from 1)
//   .dbs/cdc/<stream>/p<N>.json                   the partition's checkpoint: last message,
//                                                  source position, staged segments, schemas
//   .dbs/cdc/<stream>/stage/<table>/c-<first>-<last>.parquet   committed, not yet published
//
// Contract:
//  - Apply() holds the partition's lock (flock, shared by the host's writers). It writes each
//    table's rows of the batch as one staged Parquet segment, then moves the checkpoint
//    (atomic rename): the commit point. A segment whose checkpoint never came is overwritten
//    by the redelivery; a batch at or below the checkpoint writes nothing; a gap is
//    FailedPrecondition (Sink::ApplyChanges).
//  - A table's staged segments are published as one change file when they hold rowsPerFile
//    changes (changeFileRows) or the oldest is changeFileSeconds old (checked by Apply and by
//    Flush), when the table's columns change, and by Flush(true) when the stream stops. The
//    publication renames the file in, then drops the segments from the checkpoint. A crash in
//    between is healed by the next publication: a change file that starts at the first staged
//    message already holds the segments up to its end.
//  - Schema changes: a file holds one set of columns; AddColumns publishes the table's staged
//    segments first, so the next file has the new columns.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "sinks/sink.h"
#include "sources/files/duck.h"
#include "sources/files/file_common.h"

namespace dbs::files {

class ChangeFiles {
 public:
  // `db` hands out the sink's DuckDB (opened on first use).
  ChangeFiles(std::string root, FileOptions fo, SinkOptions so, std::function<Result<Duck*>()> db);

  Result<CdcCheckpoint> ReadCheckpoint(int partition);
  Result<size_t> Apply(const ChangeBatch& batch);
  // Publishes the staged segments that are due (all: every one) in every partition this object
  // has applied or read.
  Status Flush(bool all);
  // Publishes the table's staged segments, so that changes with the new columns start a file.
  Status AddColumns(const TableSchema& new_schema);

 private:
  struct StagedSegment {
    std::string table;  // target table name
    uint64_t first = 0, last = 0;
    uint64_t rows = 0;
    int64_t since_us = 0;  // when it was staged (wall clock)
  };
  struct State {
    uint64_t seq = 0;
    std::string epoch;  // when the run's first change came (UTC): file names of this run
    SourcePosition position;
    std::vector<StagedSegment> staged;              // in message order
    std::map<std::string, nlohmann::json> schemas;  // table -> ToJson(TableSchema) of its segments
  };

  std::string Dir() const;
  std::string StatePath(int partition) const;
  std::string LockPath(int partition) const;
  std::string StageDir(const std::string& table) const;
  std::string SegmentPath(const StagedSegment& s) const;
  Result<State> Load(int partition);
  Status Save(int partition, const State& st);
  // Publishes the table's staged segments (st is saved when it changes).
  Status Publish(int partition, State* st, const std::string& table);
  Status Roll(int partition, State* st, bool all);

  const std::string root_;
  const FileOptions fo_;
  const SinkOptions so_;
  std::function<Result<Duck*>()> db_;
  std::vector<int> partitions_;  // seen, for Flush
};

// The change columns' names, in file order.
const std::vector<std::string>& ChangeColumns();

}  // namespace dbs::files

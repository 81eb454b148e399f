// Sink: creates target structures and writes bundles, exactly once.
//
// Contract:
//  - A Sink owns one connection to the target and is used from one thread; several writer
//    processes/threads each open their own.
//  - Exactly-once: every bundle has a unique id. Apply() writes the given bundles and records
//    their ids in the target's checkpoint table in ONE transaction; ids already recorded are
//    skipped (a redelivery after a crash between commit and ack). Apply() returns the number of
//    bundles actually written.
//  - PrepareTable() applies the schema policy for one table exactly once across writers (a lock
//    in the target serializes concurrent callers; the outcome is recorded in the target), and
//    FinishStream() creates secondary indexes, foreign keys and checks after the data, once.
//  - A failed run never damages the target (with SinkOptions::shadow_tables, in sinks that
//    implement them; see the write mode table in docs/delivery.md): a table the run creates or
//    replaces (schema policies fail_if_exists, create_missing for a missing table,
//    drop_and_recreate; write mode truncate_and_load) is loaded into a shadow copy, and
//    FinishStream swaps every shadow in at the end, in one target transaction, by exactly one
//    writer. Until then the target tables are untouched. Appends and upserts into a table that
//    stays in place are committed batch by batch (each batch atomic, exactly once), so a failed run
//    leaves the committed batches.
//  - AbandonStream() is called once a run failed (by every writer that learns it; idempotent):
//    it drops the run's shadow tables (unless kept) and the bookkeeping a failed run created
//    in a target that had none, and marks the run failed so no writer prepares a table again.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/connection.h"
#include "config/stream_config.h"
#include "core/bundle.h"
#include "core/change.h"
#include "core/commit_log.h"
#include "core/result.h"
#include "core/schema.h"
#include "sinks/objects_plan.h"

namespace dbs {

// One bundle to write, with its identity.
struct BundleRef {
  std::string id;            // unique within the stream: "<table>:<chunk>:<seq>"
  const TableSchema* table;  // source description (as published in metadata)
  const Bundle* bundle;      // columns in table->columns order
};

// What the target looks like for a table, after PrepareTable.
struct TargetTable {
  std::string schema;
  std::string name;
  std::vector<std::string> warnings;  // lossy mappings, skipped defaults, ...
};

struct SinkOptions {
  std::string stream;         // "<stream>.<run id>": scopes checkpoint and state rows to one run
  std::string target_schema;  // empty: the source's schema name
  Engine source_engine = Engine::kPostgres;  // how to read source types, defaults, checks
  SchemaPolicy schema_policy = SchemaPolicy::kCreateMissing;
  WriteMode write_mode = WriteMode::kAppend;
  StructureOptions structure;
  ZeroDatePolicy zero_date = ZeroDatePolicy::kError;
  TypeMappingOptions type_mapping;  // the stream's `typeMapping` choices (typemap/ddl.h)
  // A table this sink creates (and writes other than upserts) may get its primary key only in
  // FinishStream, where a sink can build it in one pass after the data (PostgreSQL does).
  // Callers that set this must call FinishStream before anything needs the key (CDC apply,
  // upserts); the writers do.
  bool defer_primary_key = false;
  // Load into shadow copies and swap them in at the end of FinishStream (the writers set it;
  // see the contract above). Off: tables are created, dropped and truncated in place, at once.
  bool shadow_tables = false;
  // Schema objects of the run (core/schema.h): the writer that swaps the run in creates the
  // ones PlanObjects (sinks/objects_plan.h) marks migrated, in the same target transaction as
  // the swap where the target has transactional DDL, and records every outcome in the target.
  std::vector<SchemaObject> objects;
  StreamMode mode = StreamMode::kLoad;  // CDC modes: triggers and events are created disabled
  // Plan only (dbstreams plan): the sink reads the target and never writes, not even its
  // bookkeeping.
  bool plan_only = false;
  // CDC checkpoints are scoped by the stream name alone (not the run): a restarted CDC stream
  // resumes where the previous run stopped. Empty: derived from `stream` up to its last '.'.
  std::string cdc_stream;
  // Compare-and-set documents shared by every writer of the run (the writers pass the run's
  // JetStream stream, bus/commit_log.h). Targets that cannot lock or compare-and-set
  // themselves commit through it: a file target on S3 keeps its change checkpoint there, and
  // refuses CDC runs without it. May be null.
  std::shared_ptr<CommitLog> commit_log;
};

// What a run will do with one table, computed without writing anything (Sink::PlanTable).
struct TableDdlPlan {
  std::string target;  // "schema.table" in the target
  // What the schema policy and write mode do with the target table: "create", "replace"
  // (drop_and_recreate of an existing table), "append", "truncate and reload", "upsert",
  // "fail: exists", "fail: not empty", ...
  std::string action;
  std::vector<std::string> statements;  // the DDL the run would execute, in order
  std::vector<std::string> warnings;    // every lossy or skipped item, as the run logs them
};

// The action of TableDdlPlan for a table that exists in the target or not; *create: the run
// creates (or replaces) it.
std::string PlannedAction(SchemaPolicy policy, WriteMode mode, bool exists, bool* create);

// Whole source transactions to apply in one target transaction (ApplyChanges).
struct ChangeBatch {
  int partition = 0;
  // Reader-assigned change-message sequence numbers of this partition: contiguous, from 1.
  // The batch holds the transactions of messages first_seq..last_seq.
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
  SourcePosition position;             // after the last transaction of the batch
  int64_t commit_time_us = 0;          // of the last transaction
  std::vector<const ChangeTxn*> txns;  // in commit order; every part of each transaction
  // Source schemas of the tables named by the segments, by TableRef::QualifiedName(); each
  // segment's bundle columns are that schema's columns, in order. The sink writes to the
  // target table it derives from the schema's name, as for PrepareTable/Apply (a writer that
  // renames a table passes the schema with the target name, keyed by the source name).
  const std::map<std::string, TableSchema>* tables = nullptr;
};

// The last committed change batch of a partition.
struct CdcCheckpoint {
  uint64_t seq = 0;  // 0: nothing applied yet
  SourcePosition position;
};

class Sink {
 public:
  static Result<std::unique_ptr<Sink>> Open(const ConnectionConfig& config,
                                            const SinkOptions& options);
  virtual ~Sink() = default;

  // Before the first PrepareTable of a run (every writer calls it; idempotent): checks what the
  // tables need in the target besides themselves and creates it where allowed (PostgreSQL:
  // the extensions of SinkOptions::objects that the columns use). Fails before anything is
  // written, naming what is missing and how to provide it. Nothing to do by default.
  virtual Status PrepareRun() { return Status::Ok(); }
  // What PrepareTable and FinishStream would do with `source_table`, read from the target
  // without writing (the target DDL, the action on an existing table, every lossy decision).
  // By default: the source's name, action "write", no statements.
  virtual Result<TableDdlPlan> PlanTable(const TableSchema& source_table);
  // What becomes of SinkOptions::objects and of the tables' partitioning and inheritance
  // (sinks/objects_plan.h), without touching the target. By default (targets that hold only
  // rows): none is migrated.
  virtual std::vector<ObjectOutcome> PlanObjects(const std::vector<TableSchema>& tables,
                                                 const std::vector<SchemaObject>& objects);
  // After FinishStream: what the run did with each object, as recorded in the target by the
  // writer that swapped it in (empty before that, or when there were none).
  virtual Result<std::vector<ObjectOutcome>> ObjectOutcomes() {
    return std::vector<ObjectOutcome>();
  }

  virtual Result<TargetTable> PrepareTable(const TableSchema& source_table) = 0;
  virtual Result<size_t> Apply(const std::vector<BundleRef>& bundles) = 0;

  // --- Sinks that commit later than Apply (file targets: a batch goes into an open part
  // file, committed when the file is full or at CommitStaged). For them Apply() only stages
  // the new bundles (it still skips committed and already staged ids), and a bundle's message
  // may be acknowledged only once TakeSettled() lists its id as committed; ids listed as
  // dropped (a part that could not be committed) are redelivered (nak), then staged again or
  // skipped. Every id Apply() was given is listed exactly once per Apply call, sooner or later
  // (skipped ones as committed). A sink destroyed with staged bundles drops them silently:
  // their messages were never acknowledged.
  virtual bool DefersCommit() const { return false; }
  // Commits everything staged (retryable errors: the staged bundles are listed as dropped).
  virtual Status CommitStaged() { return Status::Ok(); }
  struct Settled {
    std::vector<std::string> committed, dropped;
  };
  // The ids settled since the last call.
  virtual Settled TakeSettled() { return {}; }
  // Drops everything staged (listed as dropped): before a retry.
  virtual void DropStaged() {}

  // Indexes, foreign keys and checks for all tables, once the data is in.
  virtual Status FinishStream(const std::vector<TableSchema>& tables) = 0;
  // Removes this run's applied-bundle records once every bundle is committed and acknowledged.
  // The per-table state rows stay (a late writer must see the run as finished).
  virtual Status ForgetStream() = 0;
  // The run failed: see the contract above. keep_partial keeps the shadow tables for inspection
  // (until the next run of the stream) and returns their names ("schema.table"); otherwise they
  // are dropped and an empty list is returned. A run already swapped in is left alone.
  virtual Result<std::vector<std::string>> AbandonStream(bool keep_partial) = 0;

  // --- Change data capture ---
  // The checkpoint of `partition` for SinkOptions::cdc_stream, read from the target.
  virtual Result<CdcCheckpoint> ReadCdcCheckpoint(int partition) = 0;
  // Applies the batch and moves the partition's checkpoint to (last_seq, position) in ONE
  // target transaction, after locking the checkpoint row:
  //  - last_seq <= checkpoint: already applied (a redelivery); writes nothing, returns 0;
  //  - first_seq != checkpoint + 1: FailedPrecondition (a gap: another writer is behind or
  //    ahead); writes nothing;
  //  - else applies every change in order and returns the number of row changes applied.
  // Inserts are upserts (a replayed insert is not an error), updates set the changed columns
  // (unchanged cells keep their target value) and delete the old key when the key changed,
  // deletes remove by key (all columns for tables without a key), truncates empty the table.
  virtual Result<size_t> ApplyChanges(const ChangeBatch& batch) = 0;
  // ADD COLUMN on the target for `added` columns of the table's new source schema.
  virtual Status AddColumns(const TableSchema& new_schema,
                            const std::vector<std::string>& added) = 0;
  // For targets that hold applied changes before they become visible (file targets roll
  // change files by size or time): makes visible what is due, or everything (`all`, when the
  // stream stops or reaches its end). The writers call it while idle. Nothing by default.
  virtual Status FlushChanges(bool all) {
    (void)all;
    return Status::Ok();
  }
};

}  // namespace dbs

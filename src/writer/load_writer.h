// The write side of a stream. Load phase: consumes bundles from the stream's shared durable
// consumer and applies them to the target exactly once (see Sink). Any number of LoadWriters —
// threads or processes — may consume one stream; each message goes to one of them.
//
// Contract:
//  - Run() returns OK once the stream is complete: the reader published its "done" event,
//    every bundle is acknowledged, and indexes/foreign keys were created (by whichever writer
//    got there first). It returns the error when the stream failed (here or elsewhere).
//  - A message is acknowledged only after the transaction that wrote it committed; retryable
//    errors leave it unacknowledged (it is redelivered), others fail the stream.
//  - Modes cdc and load+cdc: after the load phase, applies the change messages of partition 0
//    in order, whole source transactions per target transaction (Sink::ApplyChanges; the
//    target's checkpoint makes redeliveries and concurrent writers harmless), acknowledges them
//    after commit and reports the committed position on dbs.feedback.<stream>. Run() returns
//    once the reader's end-of-changes marker is applied, or on Stop().
//  - A failed run (a non-retryable error here, or a "failed" status from elsewhere) is
//    abandoned in the target (Sink::AbandonStream with the stream's keepPartial): the target
//    keeps its data from before the run; the error names shadow tables kept for inspection.
//  - Stop() may be called from another thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "bus/jetstream.h"
#include "config/stream_config.h"
#include "core/result.h"
#include "security/data_cipher.h"
#include "sinks/run_plan.h"
#include "sinks/sink.h"

namespace dbs {

struct WriterOptions {
  std::string writer_id = "writer";
  int fetch_batch = 128;  // messages per fetch, at most
  // Rows per fetch, about: large bundles are fetched fewer at a time, so a writer's memory
  // depends on neither the bundle size nor the table size (at least one bundle per fetch).
  uint32_t fetch_rows = 12'800;
  uint64_t fetch_bytes = 16u << 20;  // bytes per fetch, about (at least one bundle)
  // The longest a fetch waits for rows (an idle writer asks the broker this often); right after
  // rows a load writer waits 20 ms first, then twice as long each empty fetch up to this (20 ms
  // throughout while it holds staged rows).
  std::chrono::milliseconds fetch_wait{100};
  std::chrono::milliseconds plan_timeout{120000};  // wait for the reader's plan
  // How long a fetched bundle may stay unacknowledged before JetStream hands it to another
  // writer: bounds the stall after a writer dies; a batch must commit within it.
  std::chrono::milliseconds ack_wait{30000};
  // Sinks that commit later than Apply (Sink::DefersCommit, file targets): the bundles a writer
  // holds staged and unacknowledged are committed once they reach about this many bus bytes
  // or messages, once the oldest is ack_wait / 2 old, and before a pause. Two writers at the
  // defaults hold half of the reader's window (bus::kLoadWindowBytes) at most.
  uint64_t staged_bytes = 16u << 20;
  size_t staged_messages = 1024;
  // When a fetch finds nothing, they are committed if the oldest is this old, if the reader
  // has published everything, or if the messages the writers hold could be what keeps the
  // reader waiting (half its window); otherwise the writer keeps them and fetches again, so a
  // slow source does not leave a part file per bundle.
  std::chrono::milliseconds idle_commit{5000};
  // A writer started on its own (the stream-writer command) against a server that still holds
  // a finished run of the stream (a separate stream-reader leaves its stream behind) does not
  // join that run: it waits, up to plan_timeout, for the next reader's plan, and otherwise
  // fails saying so. Off in the all-in-one runner and the services, whose writers start with
  // the run they belong to (and may legitimately find it finished by the other writers).
  bool skip_finished_run = false;
};

// The sink options of a run's writers (run: the reader's run id); `dbstreams plan` uses the
// same, with plan_only set.
SinkOptions WriterSinkOptions(const StreamConfig& config, const std::string& run);

class LoadWriter {
 public:
  LoadWriter(const StreamConfig& config, bus::NatsConnection* nats, WriterOptions options);
  Status Run();
  // After Run() returned OK: this writer published the stream's completion (the first writer to
  // finish; exactly one of a run's writers does), so it is the one that verifies a load.
  bool won_completion() const { return won_completion_; }
  void Stop() { stop_.store(true); }
  // The load phase is over (swapped in by this writer or another); CDC may follow.
  bool load_finished() const { return load_finished_.load(); }
  // Load phase: stop fetching bundles until Resume() (nothing is lost: they wait in JetStream).
  void Pause() { paused_.store(true); }
  void Resume() { paused_.store(false); }
  // After Run() returned: the run failed outside the writers (the reader): publishes the failed
  // status (every writer of the stream stops) and abandons the run in the target as above.
  // Returns `cause`, extended by what was kept or what cleaning up failed with.
  Status Abandon(const Status& cause);
  // The run's report (sinks/run_plan.h): every table's target, action and lossy decisions as
  // planned when this writer started, and what the swap did with each schema object. Complete
  // once Run() returned OK; null before the plan was made.
  nlohmann::json report() const;

 private:
  struct TableState {
    TableSchema schema;  // source description, name replaced by the target name
    bool prepared = false;
  };
  Result<TableState*> Table(Sink* sink, int index);
  // Test hook: with DBS_TEST_WRITER_HOLD_AFTER_BATCHES=N in the environment, the writer stops
  // taking work after its Nth committed batch of the load (until stopped), so that a test can
  // kill it at a known point of the load.
  void HoldForTests(uint64_t committed_batches);
  // Table `index` as the reader described it, named by its target name; *source_name: its
  // source name.
  Result<TableSchema> ReadMeta(int index, std::string* source_name);
  // The run's report at its start (run_plan_): PlanRun over every table of the reader's plan.
  Status MakeReport(Sink* sink);
  // Returns OK(true) when the stream completed, OK(false) when not yet.
  Result<bool> CheckFinished(Sink* sink);
  // After a fetch that found nothing, whether the staged messages (the oldest staged at
  // `oldest`, about `message_bytes` each) are to be committed now (WriterOptions::idle_commit).
  bool IdleCommitDue(std::chrono::steady_clock::time_point oldest, uint64_t message_bytes);
  // `id`: the Nats-Msg-Id (one status per id: the first writer's wins).
  Status PublishStatus(const std::string& state, const std::string& error,
                       const std::string& id = "status");
  // The change-stream phase (modes cdc, load+cdc), after the load phase: writer/cdc_apply.cc.
  Status RunCdc(Sink* sink);
  // Abandons the failed run in the target (see the contract); returns `cause`, extended.
  Status Abandoned(const Status& cause);
  // A non-retryable error here: publishes the failed status, abandons the run and returns the
  // run's first failure (`own`, or the one another writer published before).
  Status FailRun(const Status& own);

  const StreamConfig& config_;
  bus::NatsConnection* nats_;
  WriterOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::map<int, TableState> tables_;
  std::unique_ptr<Sink> sink_;  // opened by Run(), kept for Abandon()
  std::atomic<bool> load_finished_{false};
  nlohmann::json plan_;
  std::optional<security::DataCipher> cipher_;  // set by Run() when busEncryption is on
  bool won_completion_ = false;
  // The reader's done event was seen: every bundle is on the bus, none will come later.
  bool reader_done_seen_ = false;
  std::optional<RunPlan> run_plan_;  // made at the start (tables), objects filled at the end
  std::vector<SchemaObject> objects_;
};

}  // namespace dbs

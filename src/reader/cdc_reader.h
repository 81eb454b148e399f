// The change-data-capture side of a stream's reader: follows the source's log from a position
// and publishes change messages (core/change_codec.h) on dbs.<stream>.cdc.0.
//
// Contract:
//  - Run() resumes by itself: when the partition already holds messages it continues after the
//    last completely published transaction (the last message's `resume` position) with the next
//    message number; otherwise it starts at `start` (the load's snapshot position, or the
//    position a cdc-only stream began at). Nats-Msg-Id "cdc.<p>.<n>" lets the broker drop a
//    message re-published after a crash.
//  - Transactions go out whole and in commit order; large ones in numbered parts. Many small
//    transactions share a message (at most cdc.batchChanges row changes or cdc.maxDelayMs of
//    waiting, and 3/4 of NATS max_payload).
//  - Source positions are confirmed to the source only as writers report them committed
//    (dbs.feedback.<stream>): the source never releases a change the target does not have.
//  - Run() returns OK after Stop(), after a drain completed (RequestDrain), or when a limit
//    (events, elapsed time) is reached; an error for a non-retryable failure (retryable ones
//    reconnect from the last published position with backoff). Stop/RequestDrain/Pause/Resume
//    may be called from other threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "bus/jetstream.h"
#include "config/stream_config.h"
#include "core/change_codec.h"
#include "core/result.h"
#include "reader/load_reader.h"
#include "sources/source.h"

namespace dbs {

// The newest change message the stream holds (records dropped): its number and resume
// position. Opens it with the stream's bus key when busEncryption is on. NotFound when none.
Result<ChangeMessage> LastPublishedChange(bus::NatsConnection* nats, const StreamConfig& config);

struct CdcReaderStats {
  uint64_t messages = 0;
  uint64_t transactions = 0;
  uint64_t changes = 0;     // row changes published
  SourcePosition position;  // the last completely published transaction
};

class CdcReader {
 public:
  CdcReader(const StreamConfig& config, bus::NatsConnection* nats);
  // `tables`: the planned tables (the followed set); `start`: see the contract above.
  Result<CdcReaderStats> Run(const std::vector<PlannedTable>& tables, const SourcePosition& start);
  void Stop() { stop_.store(true); }
  // Finish once every transaction committed at the source before this call is published.
  void RequestDrain() { drain_.store(true); }
  void Pause() { paused_.store(true); }
  void Resume() { paused_.store(false); }

 private:
  // One attempt; retryable errors make Run() start over from JetStream's state.
  Result<CdcReaderStats> RunOnce(const std::vector<PlannedTable>& tables,
                                 const SourcePosition& start);

  const StreamConfig& config_;
  bus::NatsConnection* nats_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> drain_{false};
  std::atomic<bool> paused_{false};
};

}  // namespace dbs

// The load (snapshot) side of a stream: resolves the tables to read, pins a consistent
// snapshot, and publishes metadata and bundles to JetStream.
//
// Contract:
//  - Run() blocks until every selected table was read and published (or the first error),
//    using `config.readers` parallel read connections. Memory is bounded: each reader holds
//    one bundle, and at most kMaxPendingPublishes publish acknowledgements are outstanding.
//  - The bus holds a bounded window of the table, not all of it: readers wait while the
//    bundles the writers have not acknowledged yet exceed `max_unacked_bytes`, and the data the
//    writers acknowledged is purged from the JetStream stream as they go. The broker's memory
//    and disk therefore stay flat whatever the table size.
//  - Bundle ids are "<table>.<chunk>.<seq>" — unique within a run; published as Nats-Msg-Id,
//    so a re-published bundle is dropped by the broker's de-duplication window.
//  - Stop() may be called from another thread; Run() then returns Cancelled soon after.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bus/jetstream.h"
#include "bus/protocol.h"
#include "config/stream_config.h"
#include "core/result.h"
#include "core/schema.h"
#include "sources/source.h"

namespace dbs {

// One table of a run: what is read, and under which number it travels.
struct PlannedTable {
  int index = 0;
  TableSchema schema;       // the read columns only, in read order
  TableSelector selector;   // the selector that chose it
  std::string target_name;  // target table name (selector.target or the source name)
};

// Resolves selectors against the source: wildcards, excludes, column selection, custom
// queries. Hands the source the stream's read settings first (Source::Configure). NotFound
// when a plain (non-wildcard) name does not exist or nothing matches.
Result<std::vector<PlannedTable>> PlanTables(Source* source, const StreamConfig& config);

// The rows a table's readers left out (StreamConfig::malformed_rows skip): how many, and the
// first ones in reading order.
struct SkipReport {
  static constexpr size_t kListed = 100;
  uint64_t count = 0;
  std::vector<SkippedRow> first;  // at most kListed
};
nlohmann::json ToJson(const SkipReport& r);  // {"count": n, "rows": [{file, line, reason}]}

struct ReaderStats {
  std::vector<uint64_t> rows;     // per planned table
  std::vector<uint64_t> bundles;  // per planned table
  // Per planned table. Each row left out is also logged (warn: file, line, reason), counted in
  // the progress samples ("skipped") and listed in the "done" event.
  std::vector<SkipReport> skipped;
  uint64_t bytes = 0;  // encoded bytes published
  std::vector<PlannedTable> tables;
  SourcePosition position;  // the snapshot's source position
};

struct LoadReaderOptions {
  // Pin the snapshot with Source::BeginCdcSnapshot, so a change stream can continue exactly
  // at its position (modes cdc and load+cdc).
  bool cdc_snapshot = false;
  // False: publish the plan, the metadata and "done" without reading rows (mode cdc).
  bool read_data = true;
  // Encoded bundle bytes allowed on the bus ahead of the writers' acknowledgements.
  uint64_t max_unacked_bytes = bus::kLoadWindowBytes;
};

class LoadReader {
 public:
  LoadReader(const StreamConfig& config, bus::NatsConnection* nats, LoadReaderOptions options = {});
  Result<ReaderStats> Run();
  void Stop() { stop_.store(true); }
  // Readers hold between bundles (the snapshot stays pinned) until Resume().
  void Pause() { paused_.store(true); }
  void Resume() { paused_.store(false); }

 private:
  const StreamConfig& config_;
  bus::NatsConnection* nats_;
  LoadReaderOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
};

}  // namespace dbs

// Runs one stream to completion on this machine: a reader and N writers in this process,
// talking through NATS JetStream — an embedded nats-server unless a URL is given.
// This is `dbstreams run`; the separate services run the same reader and writer code.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bus/jetstream.h"
#include "config/stream_config.h"
#include "core/result.h"
#include "reader/load_reader.h"
#include "sinks/run_plan.h"
#include "verify/checksum.h"

namespace dbs {

// Change-stream progress (modes cdc and load+cdc).
struct CdcProgress {
  uint64_t read = 0;     // row changes published by the reader
  uint64_t applied = 0;  // row changes committed by the writers
  int64_t lag_ms = 0;    // source commit -> target commit, of the last applied batch
  std::string position;  // the reader's last completely published source position
};

struct LocalRunOptions {
  int writers = 2;
  std::string nats_url;  // empty: start an embedded nats-server in `data_dir`
  // Credentials and TLS for `nats_url` (url and name are set per connection). The embedded
  // server makes its own users for the run, one per role (bus/nats_auth.h).
  bus::NatsOptions nats_client;
  std::string data_dir;  // for the embedded server's store (a fresh sub-folder per run)
  // CDC modes: polled every 200 ms; once it returns true the run drains — it ends after every
  // change committed at the source up to that moment is applied (a limit also ends it).
  std::function<bool()> drain_when;
  std::function<void(const CdcProgress&)> on_cdc_progress;
};

struct TableProgress {
  std::string name;
  uint64_t estimate = 0;  // source's row estimate (0: unknown)
  uint64_t read = 0;
  uint64_t written = 0;
};

struct RunSummary {
  std::vector<TableProgress> tables;
  uint64_t bytes = 0;  // encoded bytes that crossed the bus
  double seconds = 0;
  std::vector<TableVerdict> verdicts;  // empty when verification is off
  CdcProgress cdc;
  // What the run did with each table (target, action, lossy decisions) and each schema object
  // (sinks/run_plan.h); empty when no writer could plan it.
  RunPlan report;
  // Per table: the rows the file source left out (malformedRows skip), counted and the first
  // ones listed; empty counts otherwise.
  std::vector<SkipReport> skipped;
  // The tables whose values differ, each with the differing columns and a sample row
  // (TableVerdict::Describe), separated by "; "; empty when all match.
  std::string Mismatches() const;
};

using ProgressFn = std::function<void(const std::vector<TableProgress>&, double elapsed_s)>;

// Returns the summary (check Mismatches()); an error when reading, writing or reading for
// verification fails.
Result<RunSummary> RunLocal(const StreamConfig& config, const LocalRunOptions& options,
                            const ProgressFn& on_progress);

}  // namespace dbs

// Runs one stream to completion on this machine: a reader and N writers in this process,
// talking through NATS JetStream — an embedded nats-server unless a URL is given.
// This is `dbstreams run`; the separate services run the same reader and writer code.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/stream_config.h"
#include "core/result.h"
#include "verify/checksum.h"

namespace dbs {

struct LocalRunOptions {
  int writers = 2;
  std::string nats_url;  // empty: start an embedded nats-server in `data_dir`
  std::string data_dir;  // for the embedded server's store (a fresh sub-folder per run)
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
  // The tables whose checksums differ, comma-separated; empty when all match.
  std::string Mismatches() const;
};

using ProgressFn = std::function<void(const std::vector<TableProgress>&, double elapsed_s)>;

// Returns the summary (check Mismatches()); an error when reading, writing or reading for
// verification fails.
Result<RunSummary> RunLocal(const StreamConfig& config, const LocalRunOptions& options,
                            const ProgressFn& on_progress);

}  // namespace dbs

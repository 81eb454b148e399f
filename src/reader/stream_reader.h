// StreamReader: the reader side of one stream in any mode — what the stream-reader service and
// `dbstreams run` execute.
//
//  - load: LoadReader (a fresh JetStream stream, one consistent snapshot).
//  - cdc / load+cdc: when the stream's JetStream stream already holds a finished load phase
//    (its plan and "done" event), the load is not repeated: the change stream resumes after the
//    last published change. Otherwise the load phase runs first (mode cdc: structure only) on a
//    snapshot pinned where the change stream then starts — no gap, no duplicate.
//  - Column selection, filters and custom queries apply to mode load only (InvalidArgument
//    otherwise: a change stream carries whole rows).
// Stop/Pause/Resume/RequestDrain may be called from other threads.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "bus/jetstream.h"
#include "config/stream_config.h"
#include "reader/cdc_reader.h"
#include "reader/load_reader.h"

namespace dbs {

struct StreamReaderResult {
  ReaderStats load;  // empty when the load phase was skipped (resume)
  CdcReaderStats cdc;
};

class StreamReader {
 public:
  StreamReader(const StreamConfig& config, bus::NatsConnection* nats);
  Result<StreamReaderResult> Run();
  void Stop();
  void Pause();
  void Resume();
  // CDC modes: finish once everything committed at the source up to now is published.
  void RequestDrain();

 private:
  const StreamConfig& config_;
  bus::NatsConnection* nats_;
  std::mutex mu_;
  std::unique_ptr<LoadReader> load_;
  std::unique_ptr<CdcReader> cdc_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> paused_{false};
  std::atomic<bool> drain_{false};
};

}  // namespace dbs

// StreamTask: one run's reader or writer work, behind one small interface so the service
// agents do not know which engine (load, CDC) does it. stream_task.cc is the only place that
// knows LoadReader/LoadWriter; it picks the implementation from the stream's mode.
//
// Contract:
//  - Run() blocks until the work is done (OK), failed (the error) or was stopped (Cancelled).
//    It is called once, from one thread.
//  - Stop(), Pause() and Resume() may be called from any other thread while Run() runs.
//    Stop(false) asks the work to stop at its next safe point; Stop(true) additionally means
//    the caller will not wait for it (the agent reports the run stopped at once).
//  - Pause()/Resume() return Unsupported when the mode's engine has no pause point.
//  - A task owns a copy of the config; the NatsConnection must outlive it.
//  - Report() (after Run() returned) is what the task adds to its final state event, e.g. the
//    verification a writer ran; null when nothing.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "bus/jetstream.h"
#include "config/stream_config.h"
#include "core/result.h"

namespace dbs::service {

class StreamTask {
 public:
  virtual ~StreamTask() = default;
  virtual Status Run() = 0;
  virtual void Stop(bool force) = 0;
  virtual Status Pause() = 0;
  virtual Status Resume() = 0;
  virtual nlohmann::json Report() const { return nullptr; }
};

// The reader side of run `run_id`. Unsupported for modes this build cannot run yet.
Result<std::unique_ptr<StreamTask>> MakeReaderTask(const StreamConfig& config, std::string run_id,
                                                   bus::NatsConnection* nats);
// One writer of run `run_id`; `writer_id` names it in progress samples and logs.
Result<std::unique_ptr<StreamTask>> MakeWriterTask(const StreamConfig& config, std::string run_id,
                                                   bus::NatsConnection* nats,
                                                   std::string writer_id);

}  // namespace dbs::service

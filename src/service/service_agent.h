// ServiceAgent: makes a process a reader or writer service. It announces itself with
// heartbeats, takes start/stop/pause/resume requests from NATS and runs StreamTasks.
//
//   dbs.control.reader  (queue group "readers": exactly one reader takes a start)
//   dbs.control.writer  (every writer takes a start)
//   dbs.control.run     stop / pause / resume (every service; those holding the run act)
//   dbs.heartbeat.<id>  {"kind","id","host","pid","version","startedAt","ts","runs":[...]}
//   dbs.runs.<run>.state  {"run","stream","service","kind","state","error"}
//
// Contract:
//  - Start requests carry {"op":"start","run","config"} (config: a stream config JSON with
//    credentials). A start for a run id this agent already has (running or finished) is
//    acknowledged again and does nothing else: start is idempotent per run id.
//  - Replies: {"ok":true,"service":id} or {"ok":false,"error":"..."}; stop/pause/resume are
//    answered only by agents that hold the run.
//  - Stop(force=false) reports "stopped" when the task returned; force reports it at once.
//  - Thread-safe; the destructor stops every task and waits for them.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "bus/jetstream.h"
#include "core/result.h"

namespace dbs::service {

struct AgentOptions {
  std::string kind;  // "reader" or "writer"
  std::string id;    // unique service id; empty: "<kind>-<host>-<pid>"
  std::string version = "0.1.0";
  std::chrono::milliseconds heartbeat_interval{2000};
};

class ServiceAgent {
 public:
  // `nats` must outlive the agent.
  static Result<std::unique_ptr<ServiceAgent>> Start(bus::NatsConnection* nats,
                                                     AgentOptions options);
  ~ServiceAgent();
  ServiceAgent(const ServiceAgent&) = delete;
  ServiceAgent& operator=(const ServiceAgent&) = delete;
  const std::string& id() const;
  // Stops heartbeats and all tasks (force) and waits for them.
  void Shutdown();

 private:
  struct Impl;
  explicit ServiceAgent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dbs::service

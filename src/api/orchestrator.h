// Orchestrator: the API's side of running streams. It tracks reader/writer services from
// their heartbeats, starts runs by control requests over NATS, follows task state events and
// progress samples, and fails a run (with the reason) when its reader or all its writers stop
// heartbeating. It never talks to a service directly: all traffic is NATS (bus/protocol.h).
//
// Contract:
//  - Thread-safe. Start() subscribes and starts the monitor thread; Shutdown() stops it.
//  - Run states: starting -> running [-> paused] -> completed | failed | stopped; a stop
//    passes through "stopping" until the services confirm it (force: at once). A stream has
//    at most one active run; a finished run's stream can be started again (a new run id).
//  - Every state change is written to the ConfigStore; rows/bytes are recorded at the end and
//    added to the day's usage.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/log_hub.h"
#include "bus/jetstream.h"
#include "core/result.h"
#include "store/config_store.h"

namespace dbs::api {

struct OrchestratorOptions {
  std::chrono::milliseconds heartbeat_timeout{6000};  // a service is gone after this
  std::chrono::milliseconds request_timeout{5000};    // control request replies
  std::chrono::milliseconds stop_timeout{15000};      // "stopping" -> "stopped" at the latest
};

class Orchestrator {
 public:
  Orchestrator(bus::NatsConnection* nats, store::ConfigStore* store, LogHub* logs,
               OrchestratorOptions options = {});
  ~Orchestrator();
  Status Start();
  void Shutdown();

  // Starts a run of `stream` with `config` (the resolved stream config JSON, credentials
  // included; never stored or logged, and sent to the services only sealed to their keys).
  // FailedPrecondition when the stream has an active run; Unavailable when no reader or writer
  // service is alive.
  Result<store::RunRecord> StartRun(const store::StreamRecord& stream,
                                    const nlohmann::json& config);
  Status StopRun(const std::string& run_id, bool force);
  Status PauseRun(const std::string& run_id);
  Status ResumeRun(const std::string& run_id);

  // The run record plus live stats (per table rows/bytes/rate/progress, CDC lag) and recent
  // logs.
  Result<nlohmann::json> RunStatus(const std::string& run_id);
  // Services seen in heartbeats: {id, kind, host, version, alive, lastSeenMs, runs}.
  nlohmann::json Services();
  // Counters for /metrics.
  struct Counts {
    std::map<std::string, int> runs_by_state;  // active runs
    int readers_alive = 0;
    int writers_alive = 0;
    uint64_t rows_written = 0;  // of active runs
    uint64_t bytes = 0;
    int64_t bus_storage_bytes = -1;  // JetStream file storage of the account; -1: unknown
    int64_t bus_streams = -1;
  };
  Counts Snapshot();

 private:
  struct Table {
    std::string name;
    uint64_t estimate = 0;
    uint64_t read = 0;
    uint64_t written = 0;
    uint64_t skipped = 0;  // malformed rows a file source left out (malformedRows skip)
  };
  struct Sample {
    int64_t ms;
    uint64_t rows;
    uint64_t bytes;
  };
  struct Live {
    store::RunRecord rec;
    std::vector<Table> tables;
    uint64_t bytes = 0;
    bool plan_loaded = false;
    bool reader_done = false;
    std::set<std::string> writers;            // writer services that took the run
    std::set<std::string> finished_services;  // services that reported the run stopped
    std::deque<Sample> samples;
    int64_t stop_requested_ms = 0;
    int64_t lag_ms = -1;
    int64_t cdc_started_ms = 0;  // first change-stream progress sample (usage: CDC seconds)
    uint64_t cdc_changes = 0;    // row changes applied by the writers
    int64_t last_status_check_ms = 0;
    std::string mode;             // the stream's mode: load, cdc or load+cdc
    bool verify = false;          // a load verified by its writers before it completes
    nlohmann::json verification;  // the verifying writer's report (null until then)
    // The reader's final report of skipped malformed rows: table -> {count, rows} (null: none).
    nlohmann::json skipped;
    // The run report (sinks/run_plan.h): tables with their actions and lossy decisions, and
    // what became of each schema object; from the first writer that finished.
    nlohmann::json report;
    // The writer service that completed a verified load and is verifying it (from the stream
    // status): the run fails when that service dies before it reports.
    std::string verifier;
  };
  struct Service {
    nlohmann::json heartbeat;
    int64_t last_seen_ms = 0;
  };

  void OnHeartbeat(std::string_view data);
  void OnRunState(std::string_view data);
  void OnProgress(std::string_view subject, std::string_view data);
  void MonitorLoop();
  // Ends a run (under mu_): record, usage, log.
  void FinishLocked(Live* live, const std::string& state, const std::string& error);
  // Copies the live figures into live->rec.details (store::RunRecord).
  void KeepDetailsLocked(Live* live);
  bool AliveLocked(const std::string& service, int64_t now) const;
  nlohmann::json LiveJsonLocked(const Live& live) const;
  Result<nlohmann::json> Request(const std::string& subject, const nlohmann::json& body);
  // {service id: `plain` sealed to that service's key} for every live service of `kind`.
  Result<nlohmann::json> SealForServices(const std::string& kind, const std::string& plain);
  void LoadPlan(const std::string& run_id, const std::string& stream);

  bus::NatsConnection* nats_;
  store::ConfigStore* store_;
  LogHub* logs_;
  OrchestratorOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, Service> services_;
  std::map<std::string, std::unique_ptr<Live>> runs_;  // active runs by id
  // JetStream streams of finished load runs, to delete outside the lock (MonitorLoop): the
  // bus keeps no copy of the data once a load ended (CDC modes keep theirs for resumption).
  std::vector<std::string> to_delete_;
  std::vector<std::string> to_stop_;  // failed runs whose services must stop (MonitorLoop)
  // Held across a start (from its checks until the services took it) and across the deletion
  // of finished streams, so a deletion can never hit a stream a new run just created.
  std::mutex bus_mu_;
  int64_t storage_checked_ms_ = 0;
  bus::NatsConnection::StorageUsage storage_{};
  bool storage_known_ = false;
  std::vector<std::unique_ptr<bus::Subscription>> subs_;
  std::thread monitor_;
  int64_t started_ms_ = 0;
  int64_t last_persist_ms_ = 0;
};

// The stored form of a run as API JSON.
nlohmann::json RunRecordJson(const store::RunRecord& r);

}  // namespace dbs::api

// The stream protocol on NATS: subjects, message kinds and headers shared by the reader, the
// writers and the CLI/API. One JetStream stream per dbstreams stream holds everything that
// must survive a restart (metadata, data, control events); progress is core NATS.
//
//   dbs.<stream>.meta.<t>       JSON: table t's schema and read plan (last message wins)
//   dbs.<stream>.data.<t>       bundles of table t (binary, docs/bundle-format.md)
//   dbs.<stream>.ctl.plan       JSON: the tables of this run, the snapshot position
//   dbs.<stream>.ctl.done       JSON: the reader finished; rows and bundles per table
//   dbs.<stream>.ctl.status     JSON: {"state": "complete"|"failed", "error": ...}
//   dbs.<stream>.progress       JSON progress samples (core NATS)
//   dbs.<stream>.cdc.<p>        change messages of partition p (core/change_codec.h), in source
//                               commit order, numbered 1, 2, ... (Nats-Msg-Id "cdc.<p>.<n>")
//   dbs.<stream>.ctl.cdcdone    JSON: the change stream ended after message n / runs again
//   dbs.<stream>.ctl.commit.<k> a commit log value (bus/commit_log.h): the checkpoint of S3
//                               change files, moved by compare-and-set on its sequence
//   dbs.feedback.<stream>       JSON {"partition", "seq", "position"}: a writer committed up
//                               to there (core NATS; outside the stream's JetStream subjects)
//
// Services (core NATS, docs/api.md):
//   dbs.control.reader          start requests, queue group "readers" (one reader per run)
//   dbs.control.writer          start requests to every writer service
//   dbs.control.run             stop/pause/resume requests to every service
//   dbs.heartbeat.<service-id>  service heartbeats (every ~2 s)
//   dbs.logs.<service-id>       structured JSON log lines
//   dbs.runs.<run-id>.state     task state changes (running, completed, failed, stopped)
// Stream names "control", "heartbeat", "logs", "runs" and "feedback" are reserved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dbs::bus {

inline constexpr const char* kHeaderBundleId = "Dbs-Bundle";
inline constexpr const char* kHeaderTable = "Dbs-Table";
inline constexpr const char* kHeaderRows = "Dbs-Rows";
inline constexpr const char* kHeaderRun = "Dbs-Run";

// Encoded bundle bytes a load reader lets the bus hold ahead of the writers' acknowledgements
// (its window, LoadReaderOptions::max_unacked_bytes); writers that hold messages staged
// commit them before the window could fill.
inline constexpr uint64_t kLoadWindowBytes = 64ull << 20;

// JetStream stream name for a dbstreams stream name (validated: [A-Za-z0-9_-]).
inline std::string JetStreamName(const std::string& stream) { return "DBS_" + stream; }
// The subjects a stream's JetStream stream stores: everything above except the core NATS
// progress samples. Stored, those would land in every file-store block between the bundles, and
// a block whose bundles were purged would stay on disk for its one progress sample, so the
// store would grow with the table instead of staying within the reader's window.
inline std::vector<std::string> StoredSubjects(const std::string& stream) {
  const std::string p = "dbs." + stream + ".";
  return {p + "meta.>", p + "data.>", p + "ctl.>", p + "cdc.>"};
}
inline std::string SubjectMeta(const std::string& stream, int table) {
  return "dbs." + stream + ".meta." + std::to_string(table);
}
inline std::string SubjectData(const std::string& stream, int table) {
  return "dbs." + stream + ".data." + std::to_string(table);
}
inline std::string SubjectDataAll(const std::string& stream) { return "dbs." + stream + ".data.>"; }
inline std::string SubjectPlan(const std::string& stream) { return "dbs." + stream + ".ctl.plan"; }
inline std::string SubjectDone(const std::string& stream) { return "dbs." + stream + ".ctl.done"; }
inline std::string SubjectStatus(const std::string& stream) {
  return "dbs." + stream + ".ctl.status";
}
inline std::string SubjectProgress(const std::string& stream) {
  return "dbs." + stream + ".progress";
}
inline std::string SubjectCdc(const std::string& stream, int partition) {
  return "dbs." + stream + ".cdc." + std::to_string(partition);
}
// JSON {"done": true, "seq": n}: the change stream ended (drained or a limit) after message n;
// {"done": false}: it runs (again).
inline std::string SubjectCdcDone(const std::string& stream) {
  return "dbs." + stream + ".ctl.cdcdone";
}
inline std::string SubjectFeedback(const std::string& stream) { return "dbs.feedback." + stream; }
// The durable consumer of a CDC partition (one per partition; order is kept by the target's
// checkpoint, see sinks/sink.h ApplyChanges).
inline std::string CdcDurable(const std::string& stream, int partition) {
  return "cdc-" + stream + "-" + std::to_string(partition);
}
inline std::string SubjectControl(const std::string& kind) { return "dbs.control." + kind; }
inline std::string SubjectHeartbeat(const std::string& service) {
  return "dbs.heartbeat." + service;
}
inline constexpr const char* kSubjectHeartbeatAll = "dbs.heartbeat.>";
inline std::string SubjectLogs(const std::string& service) { return "dbs.logs." + service; }
inline constexpr const char* kSubjectLogsAll = "dbs.logs.>";
inline std::string SubjectRunState(const std::string& run) { return "dbs.runs." + run + ".state"; }
inline constexpr const char* kSubjectRunStateAll = "dbs.runs.*.state";
inline constexpr const char* kSubjectProgressAll = "dbs.*.progress";
inline bool IsReservedStreamName(const std::string& name) {
  return name == "control" || name == "heartbeat" || name == "logs" || name == "runs" ||
         name == "feedback";
}
// The durable consumer that all writers of a stream share.
inline std::string WritersDurable(const std::string& stream) { return "writers-" + stream; }

}  // namespace dbs::bus

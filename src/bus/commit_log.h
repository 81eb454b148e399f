// The CommitLog (core/commit_log.h) of a run, on its JetStream stream: key k is the subject
// dbs.<stream>.ctl.commit.<k>, a value is a message there, its version the message's stream
// sequence, and compare-and-set is JetStream's Nats-Expected-Last-Subject-Sequence. The
// stream is replaced by each new run, as the run's checkpoints are.
//
// Contract: values up to max_payload (larger: ResourceExhausted, naming the key); older
// values of a key are purged from time to time (every 32 writes of this object), so the
// subject holds few messages however long the run.
#pragma once

#include <atomic>
#include <string>

#include "bus/jetstream.h"
#include "core/commit_log.h"

namespace dbs::bus {

std::string SubjectCommit(const std::string& stream, const std::string& key);

class JetStreamCommitLog : public CommitLog {
 public:
  // `nats` must outlive this object; `stream` is the dbstreams stream name.
  JetStreamCommitLog(NatsConnection* nats, std::string stream)
      : nats_(nats), stream_(std::move(stream)) {}

  Result<Entry> Read(const std::string& key) override;
  Result<uint64_t> Write(const std::string& key, std::string_view value,
                         uint64_t expected) override;

 private:
  NatsConnection* const nats_;
  const std::string stream_;
  std::atomic<uint64_t> writes_{0};
};

}  // namespace dbs::bus

#include "bus/commit_log.h"

#include "bus/protocol.h"
#include "core/logging.h"

namespace dbs::bus {
namespace {

Status CheckKey(const std::string& key) {
  if (key.empty()) return Status::InvalidArgument("empty commit log key");
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok)
      return Status::InvalidArgument("commit log key " + key +
                                     " has a character other "
                                     "than letters, digits, '_' and '-'");
  }
  return Status::Ok();
}

}  // namespace

std::string SubjectCommit(const std::string& stream, const std::string& key) {
  return "dbs." + stream + ".ctl.commit." + key;
}

Result<CommitLog::Entry> JetStreamCommitLog::Read(const std::string& key) {
  DBS_RETURN_IF_ERROR(CheckKey(key));
  auto m = nats_->GetLastStored(JetStreamName(stream_), SubjectCommit(stream_, key));
  if (!m.ok()) {
    if (m.status().code() == StatusCode::kNotFound) return Entry{};
    return m.status().WithContext("reading " + key + " of stream " + stream_);
  }
  return Entry{std::move(m->data), m->sequence};
}

Result<uint64_t> JetStreamCommitLog::Write(const std::string& key, std::string_view value,
                                           uint64_t expected) {
  DBS_RETURN_IF_ERROR(CheckKey(key));
  if (static_cast<int64_t>(value.size()) + 1024 > nats_->max_payload()) {
    return Status::ResourceExhausted(key + " of stream " + stream_ + " has " +
                                     std::to_string(value.size()) +
                                     " bytes, more than the NATS server's max_payload allows");
  }
  const std::string subject = SubjectCommit(stream_, key);
  DBS_ASSIGN_OR_RETURN(
      PublishAck ack,
      nats_->Publish(subject, value, {},
                     {{"Nats-Expected-Last-Subject-Sequence", std::to_string(expected)}}));
  if (writes_.fetch_add(1) % 32 == 31) {
    Status purged = nats_->PurgeSubjectBelow(JetStreamName(stream_), subject, ack.sequence);
    if (!purged.ok()) {
      Log(LogLevel::kDebug, "writer", "could not purge old commit log values",
          {F("key", key), F("error", purged.ToString())});
    }
  }
  return ack.sequence;
}

}  // namespace dbs::bus

#include "reader/cdc_reader.h"

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "bus/protocol.h"
#include "core/change_codec.h"
#include "core/logging.h"
#include "security/data_cipher.h"
#include "sources/change_stream.h"

namespace dbs {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr int kPartition = 0;

// Drops the row changes the stream's operation filter excludes (an update keeps its
// kUpdateBefore row only when the update itself is kept). Truncates always pass.
void FilterOps(const CdcSettings& cdc, ChangeTxn* txn) {
  if (cdc.inserts && cdc.updates && cdc.deletes) return;
  for (auto& seg : txn->segments) {
    const Bundle& b = seg.rows;
    std::vector<size_t> keep;
    for (size_t r = 0; r < b.rows(); ++r) {
      RowOp op = b.ops[r];
      bool k = (op == RowOp::kInsert && cdc.inserts) || (op == RowOp::kDelete && cdc.deletes) ||
               ((op == RowOp::kUpdate || op == RowOp::kUpdateBefore) && cdc.updates);
      if (k) keep.push_back(r);
    }
    if (keep.size() == b.rows()) continue;
    Bundle out;
    for (const auto& c : b.columns) out.columns.emplace_back(c.type(), c.element_type());
    for (size_t r : keep) {
      for (size_t c = 0; c < b.columns.size(); ++c) out.columns[c].AppendFrom(b.columns[c], r);
      out.ops.push_back(b.ops[r]);
    }
    seg.rows = std::move(out);
  }
  std::erase_if(txn->segments,
                [](const ChangeSegment& s) { return !s.truncate && s.rows.rows() == 0; });
}

}  // namespace

Result<ChangeMessage> LastPublishedChange(bus::NatsConnection* nats, const StreamConfig& config) {
  const std::string subject = bus::SubjectCdc(config.name, kPartition);
  auto last = nats->GetLastMessage(bus::JetStreamName(config.name), subject);
  if (!last.ok()) return last.status();
  DBS_ASSIGN_OR_RETURN(const std::optional<security::DataCipher> cipher,
                       security::StreamCipher(config.bus_encryption, config.bus_key));
  std::string plain;
  if (cipher) DBS_RETURN_IF_ERROR(cipher->Open(security::ChangeAd(subject), *last, &plain));
  DecodeLimits limits;
  auto msg = DecodeChangeMessage(cipher ? plain : *last, limits);
  if (!msg.ok()) return msg.status().WithContext("reading the last published change message");
  msg->records.clear();
  return msg;
}

CdcReader::CdcReader(const StreamConfig& config, bus::NatsConnection* nats)
    : config_(config), nats_(nats) {}

Result<CdcReaderStats> CdcReader::Run(const std::vector<PlannedTable>& tables,
                                      const SourcePosition& start) {
  int backoff_ms = 500;
  while (true) {
    auto r = RunOnce(tables, start);
    if (r.ok() || !r.status().retryable() || stop_.load()) return r;
    // The bus or the source went away: start over from what JetStream holds.
    Log(LogLevel::kWarn, "cdc-reader", "interrupted; resuming after the last published change",
        {F("stream", config_.name), F("error", r.status().ToString())});
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min(backoff_ms * 2, 10'000);
  }
}

Result<CdcReaderStats> CdcReader::RunOnce(const std::vector<PlannedTable>& tables,
                                          const SourcePosition& start) {
  const std::string& name = config_.name;
  CdcReaderStats stats;
  uint64_t seq = 0;
  SourcePosition resume = start;
  {
    auto last = LastPublishedChange(nats_, config_);
    if (last.ok()) {
      seq = last->seq;
      if (!last->resume.empty()) resume = last->resume;
      Log(LogLevel::kInfo, "cdc-reader", "resuming after the last published change message",
          {F("stream", name), F("message", seq), F("position", resume.value)});
    } else if (last.status().code() != StatusCode::kNotFound) {
      return last.status().WithRetry(Retry::kRetry);
    }
  }
  stats.position = resume;

  CdcOptions opts;
  opts.stream = name;
  for (const PlannedTable& t : tables) {
    opts.tables.push_back({t.schema.schema, t.schema.name});
  }
  opts.slot_name = config_.cdc.slot_name;
  opts.publication_name = config_.cdc.publication_name;
  opts.server_id = config_.cdc.server_id;
  opts.max_part_rows = std::max<size_t>(100, config_.cdc.batch_changes);
  // A lone transaction is published maxDelayMs after it arrives, also on a quiet source.
  opts.wake_interval = config_.cdc.max_delay;

  // Writers report what they committed; the source may release up to there.
  std::mutex fb_mu;
  SourcePosition confirmed_by_writers;
  bool fb_new = false;
  auto feedback = bus::Subscription::Create(
      nats_, bus::SubjectFeedback(name), [&](std::string_view, std::string_view data) {
        json j = json::parse(data, nullptr, false);
        if (!j.is_object() || !j.contains("position")) return;
        SourcePosition p;
        p.kind = static_cast<SourcePosition::Kind>(j.value("kind", 0));
        p.value = j.value("position", "");
        p.file_pos = j.value("file_pos", "");
        std::lock_guard<std::mutex> l(fb_mu);
        confirmed_by_writers = p;
        fb_new = true;
      });
  if (!feedback.ok()) return feedback.status().WithRetry(Retry::kRetry);

  const size_t budget = static_cast<size_t>(nats_->max_payload()) * 3 / 4;
  DBS_ASSIGN_OR_RETURN(const std::optional<security::DataCipher> cipher,
                       security::StreamCipher(config_.bus_encryption, config_.bus_key));
  std::string sealed;
  EncodeOptions eo;
  eo.compression = config_.compression;
  ChangeMessageWriter writer(eo);
  size_t pending_changes = 0;
  Clock::time_point first_pending{};
  SourcePosition pending_resume = resume;  // resume position once `writer` is published
  uint32_t next_part = 0;
  std::string encoded;

  auto publish = [&]() -> Status {
    if (writer.records() == 0) return Status::Ok();
    ++seq;
    encoded = writer.Finish(seq, pending_resume);
    if (cipher) {
      cipher->Seal(security::ChangeAd(bus::SubjectCdc(name, kPartition)), encoded, &sealed);
      encoded.swap(sealed);
    }
    std::string id = "cdc." + std::to_string(kPartition) + "." + std::to_string(seq);
    // Synchronous, retried with the same id until stored: message n+1 is never stored
    // without message n (a pipelined publish could lose n and store n+1 across a NATS
    // restart, leaving the writers a gap). The broker drops a retry that was stored already.
    int retry_ms = 100;
    while (true) {
      auto ack = nats_->Publish(bus::SubjectCdc(name, kPartition), encoded, id,
                                {{bus::kHeaderBundleId, id}});
      if (ack.ok()) break;
      if (stop_.load()) return Status::Cancelled("stopped while publishing");
      Log(LogLevel::kWarn, "cdc-reader", "publishing a change message failed; retrying",
          {F("stream", name), F("message", seq), F("error", ack.status().ToString())});
      std::this_thread::sleep_for(std::chrono::milliseconds(retry_ms));
      retry_ms = std::min(retry_ms * 2, 5000);
    }
    ++stats.messages;
    pending_changes = 0;
    stats.position = pending_resume;
    return Status::Ok();
  };

  DBS_ASSIGN_OR_RETURN(auto source, Source::Open(config_.source));
  DBS_RETURN_IF_ERROR(source->CheckCdc(opts));
  std::unique_ptr<ChangeStream> stream;
  SourcePosition drain_target;
  bool drain_target_set = false;
  const auto started = Clock::now();
  auto last_progress = Clock::now();
  int64_t last_commit_us = 0;
  int backoff_ms = 200;
  SourcePosition seen;  // the furthest position the stream reported

  auto progress = [&](bool force) {
    auto now = Clock::now();
    if (!force && now - last_progress < std::chrono::seconds(1)) return;
    last_progress = now;
    int64_t lag_ms = 0;
    if (last_commit_us > 0) {
      lag_ms = (std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count() -
                last_commit_us) /
               1000;
    }
    json j = {{"kind", "cdc-read"},
              {"changes", stats.changes},
              {"transactions", stats.transactions},
              {"messages", stats.messages},
              {"position", stats.position.value},
              {"read_lag_ms", std::max<int64_t>(0, lag_ms)}};
    (void)nats_->PublishCore(bus::SubjectProgress(name), j.dump());
  };

  while (true) {
    if (stop_.load()) break;
    if (config_.limits.elapsed.count() > 0 && Clock::now() - started >= config_.limits.elapsed) {
      Log(LogLevel::kInfo, "cdc-reader", "elapsed-time limit reached", {F("stream", name)});
      break;
    }
    if (config_.limits.events > 0 && stats.changes >= config_.limits.events) {
      Log(LogLevel::kInfo, "cdc-reader", "event limit reached", {F("stream", name)});
      break;
    }
    if (drain_.load() && !drain_target_set) {
      DBS_ASSIGN_OR_RETURN(drain_target, CurrentSourcePosition(config_.source));
      drain_target_set = true;
      Log(LogLevel::kInfo, "cdc-reader", "draining up to the source's current position",
          {F("stream", name), F("position", drain_target.value)});
    }
    if (paused_.load()) {
      DBS_RETURN_IF_ERROR(publish());
      stream.reset();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    if (!stream) {
      opts.start = stats.position;
      next_part = 0;
      auto opened = source->OpenChangeStream(opts);
      if (!opened.ok()) {
        if (!opened.status().retryable()) return opened.status();
        Log(LogLevel::kWarn, "cdc-reader", "cannot open the change stream; retrying",
            {F("stream", name), F("error", opened.status().message())});
        std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
        backoff_ms = std::min(backoff_ms * 2, 10'000);
        auto reopened = Source::Open(config_.source);
        if (reopened.ok()) source = std::move(*reopened);
        continue;
      }
      stream = std::move(*opened);
      Log(LogLevel::kInfo, "cdc-reader", "following the source",
          {F("stream", name), F("from", opts.start.value)});
    }
    {
      SourcePosition p;
      {
        std::lock_guard<std::mutex> l(fb_mu);
        if (fb_new) p = confirmed_by_writers;
        fb_new = false;
      }
      if (!p.empty()) {
        Status s = stream->Confirm(p);
        if (!s.ok())
          Log(LogLevel::kWarn, "cdc-reader", "confirm failed", {F("error", s.message())});
      }
    }
    auto wait = std::chrono::milliseconds(200);
    if (writer.records() > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          first_pending + config_.cdc.max_delay - Clock::now());
      wait = std::max(std::chrono::milliseconds(0), std::min(wait, left));
    }
    auto ev = stream->Next(wait);
    if (!ev.ok()) {
      if (!ev.status().retryable()) return ev.status();
      Log(LogLevel::kWarn, "cdc-reader", "change stream interrupted; resuming",
          {F("stream", name), F("error", ev.status().message())});
      // Unpublished records are read again from the last published position.
      writer.Finish(0, {});
      pending_changes = 0;
      pending_resume = stats.position;
      stream.reset();
      std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
      backoff_ms = std::min(backoff_ms * 2, 10'000);
      auto reopened = Source::Open(config_.source);
      if (reopened.ok()) source = std::move(*reopened);
      continue;
    }
    backoff_ms = 200;
    if (!ev->position.empty()) seen = ev->position;
    switch (ev->kind) {
      case ChangeEvent::Kind::kIdle:
        break;
      case ChangeEvent::Kind::kSchemaChange: {
        DBS_RETURN_IF_ERROR(publish());
        SchemaChangeRecord rec;
        rec.table = ev->schema_change.table;
        rec.schema = ev->schema_change.schema;
        rec.statement = ev->schema_change.statement;
        rec.added_columns = ev->schema_change.added_columns;
        rec.only_added_columns = ev->schema_change.only_added_columns;
        rec.position = ev->position;
        DBS_RETURN_IF_ERROR(writer.AddSchemaChange(rec));
        DBS_RETURN_IF_ERROR(publish());
        Log(LogLevel::kInfo, "cdc-reader", "schema change",
            {F("stream", name), F("table", rec.table.QualifiedName()),
             F("statement", rec.statement)});
        break;
      }
      case ChangeEvent::Kind::kTransaction: {
        ChangeTxn& txn = ev->txn;
        FilterOps(config_.cdc, &txn);
        txn.part = next_part;
        const bool final = txn.final;
        if (txn.segments.empty() && final && next_part == 0) {
          // Nothing of the followed tables (or all filtered): only the position moves.
          if (writer.records() == 0) {
            stats.position = txn.position;
            pending_resume = txn.position;
          }
          break;
        }
        size_t rows = txn.rows();
        const SourcePosition txn_position = txn.position;
        const int64_t txn_commit_us = txn.commit_time_us;
        std::vector<ChangeTxn> parts;
        if (rows > opts.max_part_rows) {
          parts = SplitTxn(txn, opts.max_part_rows);
        } else {
          parts.push_back(std::move(txn));
        }
        for (ChangeTxn& p : parts) {
          // Keep each message under the budget: publish first when this part would not fit;
          // a part too large alone is split further.
          std::vector<ChangeTxn> queue;
          queue.push_back(std::move(p));
          while (!queue.empty()) {
            ChangeTxn cur = std::move(queue.front());
            queue.erase(queue.begin());
            ChangeMessageWriter probe(eo);
            DBS_RETURN_IF_ERROR(probe.AddTxn(cur));
            if (probe.size() > budget) {
              size_t r = cur.rows();
              if (r <= 1) {
                return Status::ResourceExhausted(
                    "a single row change of transaction " + cur.xid + " is " +
                    std::to_string(probe.size()) +
                    " bytes encoded, over the NATS max_payload budget: raise max_payload on the "
                    "NATS server");
              }
              auto halves = SplitTxn(cur, (r + 1) / 2);
              queue.insert(queue.begin(), halves.begin(), halves.end());
              continue;
            }
            if (writer.records() > 0 && writer.size() + probe.size() > budget) {
              DBS_RETURN_IF_ERROR(publish());
            }
            if (writer.records() == 0) first_pending = Clock::now();
            writer.Append(std::move(probe));  // encoded once, above
            pending_changes += cur.rows();
          }
        }
        // Renumber: parts continue across events of one transaction.
        next_part = final ? 0 : next_part + static_cast<uint32_t>(parts.size());
        stats.changes += rows;
        if (final) {
          ++stats.transactions;
          pending_resume = txn_position;
          last_commit_us = txn_commit_us;
        }
        break;
      }
    }
    if (writer.records() > 0 && (pending_changes >= config_.cdc.batch_changes ||
                                 Clock::now() - first_pending >= config_.cdc.max_delay)) {
      DBS_RETURN_IF_ERROR(publish());
    }
    progress(false);
    if (drain_target_set && writer.records() == 0 && next_part == 0 && !seen.empty()) {
      auto cmp = CompareSourcePositions(seen, drain_target);
      if (cmp.ok() && *cmp >= 0) {
        Log(LogLevel::kInfo, "cdc-reader", "drained",
            {F("stream", name), F("position", seen.value)});
        break;
      }
    }
  }
  if (next_part == 0) DBS_RETURN_IF_ERROR(publish());  // never leave a transaction half-sent
  if (Status st = nats_->WaitPublished(std::chrono::seconds(60)); !st.ok()) {
    return st.WithRetry(Retry::kRetry);
  }
  progress(true);
  return stats;
}

}  // namespace dbs

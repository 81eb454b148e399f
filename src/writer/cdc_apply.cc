// LoadWriter::RunCdc: the change-stream phase of a writer (see load_writer.h).
#include <chrono>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "bus/protocol.h"
#include "core/change_codec.h"
#include "core/logging.h"
#include "writer/load_writer.h"

namespace dbs {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr int kPartition = 0;

struct Held {
  std::unique_ptr<bus::Message> msg;
  ChangeMessage decoded;
  size_t changes = 0;  // row changes in `decoded`
};

size_t RowChanges(const ChangeMessage& m) {
  size_t n = 0;
  for (const ChangeRecord& r : m.records) {
    if (const auto* t = std::get_if<ChangeTxn>(&r)) n += t->rows();
  }
  return n;
}

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Status LoadWriter::RunCdc(Sink* sink) {
  const std::string& name = config_.name;
  const std::string js = bus::JetStreamName(name);
  auto fail = [&](const Status& s) {
    (void)PublishStatus("failed", s.ToString(), "status-cdc");
    return s;
  };

  // Source table name -> planned table index.
  std::map<std::string, int> index_of;
  if (plan_.contains("tables") && plan_["tables"].is_array()) {
    for (const json& t : plan_["tables"]) {
      TableRef ref{t.value("schema", ""), t.value("table", "")};
      index_of[ref.QualifiedName()] = t.value("index", 0);
    }
  }
  // Source name -> schema as the sink knows it (target name), for ChangeBatch::tables.
  std::map<std::string, TableSchema> schemas;
  auto table_for = [&](const TableRef& ref) -> Status {
    const std::string key = ref.QualifiedName();
    if (schemas.count(key)) return Status::Ok();
    auto it = index_of.find(key);
    if (it == index_of.end()) {
      return Status::Corruption("a change of table " + key + ", which this stream does not follow");
    }
    DBS_ASSIGN_OR_RETURN(TableState * ts, Table(sink, it->second));
    schemas[key] = ts->schema;
    return Status::Ok();
  };

  bus::ConsumerSpec cs;
  cs.stream = js;
  cs.durable = bus::CdcDurable(name, kPartition);
  cs.filter_subject = bus::SubjectCdc(name, kPartition);
  cs.ack_wait = options_.ack_wait;
  cs.max_ack_pending = 1024;
  DBS_ASSIGN_OR_RETURN(auto consumer, bus::PullConsumer::Create(nats_, cs));
  DBS_ASSIGN_OR_RETURN(CdcCheckpoint cp, sink->ReadCdcCheckpoint(kPartition));
  uint64_t applied = cp.seq;
  Log(LogLevel::kInfo, "writer", "applying changes",
      {F("stream", name), F("writer", options_.writer_id), F("after_message", applied)});

  // An end marker already present when this writer starts may belong to an earlier session of
  // the stream (a restarted CDC stream keeps its JetStream stream) or to this one (the reader
  // drained before this writer got here): see the grace period below.
  std::string stale_nonce;
  const auto writer_started = Clock::now();
  if (auto done = nats_->GetLastMessage(js, bus::SubjectCdcDone(name)); done.ok()) {
    json d = json::parse(*done, nullptr, false);
    if (d.is_object() && d.value("done", false)) stale_nonce = d.value("nonce", "");
  }
  std::map<uint64_t, Held> held;
  // Memory bound: while the held messages continue the applied ones in order, fetch more only
  // below this many held row changes (a few batches ahead keeps the target busy). A gap at the
  // front (a redelivery still to come) always fetches, up to max_ack_pending messages, and so
  // does a first transaction that is not complete yet (a large one, split into parts).
  const size_t held_changes_cap = 4 * std::max<size_t>(1, config_.cdc.batch_changes);
  size_t held_changes = 0;
  bool first_txn_incomplete = false;
  uint64_t total_changes = 0;
  int backoff_ms = 100;
  auto last_done_check = Clock::now() - std::chrono::seconds(10);
  auto waiting_since = Clock::now();
  auto last_flush = Clock::now();

  auto ack_through = [&](uint64_t seq) {
    while (!held.empty() && held.begin()->first <= seq) {
      (void)held.begin()->second.msg->Ack();
      held_changes -= held.begin()->second.changes;
      held.erase(held.begin());
    }
  };

  while (!stop_.load()) {
    const bool in_order = !held.empty() && held.begin()->first == applied + 1;
    Result<std::vector<std::unique_ptr<bus::Message>>> fetched =
        std::vector<std::unique_ptr<bus::Message>>{};
    if (!in_order || first_txn_incomplete || held_changes < held_changes_cap) {
      fetched =
          consumer->Fetch(256, held.empty() ? options_.fetch_wait : std::chrono::milliseconds(20));
    }
    if (!fetched.ok()) {
      // The bus went away (a NATS restart, a network cut): libnats reconnects; the messages
      // held here stay unacknowledged and come again if needed.
      Log(LogLevel::kWarn, "writer", "fetching changes failed; retrying",
          {F("stream", name), F("error", fetched.status().ToString())});
      std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
      backoff_ms = std::min(backoff_ms * 2, 5000);
      continue;
    }
    std::string plain;  // a decrypted change message (busEncryption)
    for (auto& m : *fetched) {
      std::string_view payload = m->data();
      if (cipher_) {
        Status opened =
            cipher_->Open(security::ChangeAd(std::string(m->subject())), payload, &plain);
        if (!opened.ok()) return fail(opened);
        payload = plain;
      }
      auto decoded = DecodeChangeMessage(payload);
      if (!decoded.ok()) return fail(decoded.status());
      uint64_t seq = decoded->seq;
      if (seq <= applied) {
        (void)m->Ack();
        continue;
      }
      const size_t n = RowChanges(*decoded);
      // A redelivery replaces the copy held (acknowledged only once applied).
      Held& slot = held[seq];
      held_changes = held_changes - slot.changes + n;
      slot = Held{std::move(m), std::move(*decoded), n};
    }

    if (held.empty() && Clock::now() - last_flush > std::chrono::seconds(1)) {
      // Idle: changes a target holds back (file targets) become visible when due.
      last_flush = Clock::now();
      Status flushed = sink->FlushChanges(/*all=*/false);
      if (!flushed.ok() && !flushed.retryable()) return fail(flushed);
    }
    if (held.empty() || held.begin()->first != applied + 1) {
      // Nothing to apply in order. Another writer may have moved the checkpoint.
      if (!held.empty() && Clock::now() - waiting_since > std::chrono::milliseconds(200)) {
        DBS_ASSIGN_OR_RETURN(cp, sink->ReadCdcCheckpoint(kPartition));
        if (cp.seq > applied) {
          applied = cp.seq;
          ack_through(applied);
        }
        waiting_since = Clock::now();
      }
      if (held.empty() && Clock::now() - last_done_check > std::chrono::milliseconds(300)) {
        last_done_check = Clock::now();
        auto done = nats_->GetLastMessage(js, bus::SubjectCdcDone(name));
        if (done.ok()) {
          json d = json::parse(*done, nullptr, false);
          // A marker already there when this writer started ends the run too, unless a new
          // reader session replaces it within a grace period (a restarted stream's reader
          // publishes "done": false when it starts; it may start after this writer).
          const bool fresh =
              d.is_object() && (d.value("nonce", "") != stale_nonce ||
                                Clock::now() - writer_started > std::chrono::seconds(5));
          if (fresh && d.value("done", false)) {
            DBS_ASSIGN_OR_RETURN(cp, sink->ReadCdcCheckpoint(kPartition));
            applied = std::max(applied, cp.seq);
            if (applied >= d.value("seq", uint64_t{0})) {
              Status flushed = sink->FlushChanges(/*all=*/true);
              if (!flushed.ok()) return fail(flushed);
              DBS_RETURN_IF_ERROR(PublishStatus("complete", "", "status-cdc"));
              Log(LogLevel::kInfo, "writer", "change stream applied to its end",
                  {F("stream", name), F("message", applied)});
              return Status::Ok();
            }
          }
        }
      }
      continue;
    }
    waiting_since = Clock::now();

    // A schema change travels alone in its message.
    {
      Held& h = held.begin()->second;
      if (!h.decoded.records.empty() &&
          std::holds_alternative<SchemaChangeRecord>(h.decoded.records.front())) {
        const auto& rec = std::get<SchemaChangeRecord>(h.decoded.records.front());
        Status st = table_for(rec.table);
        if (!st.ok()) return fail(st);
        if (!rec.only_added_columns) {
          return fail(Status::FailedPrecondition(
              "table " + rec.table.QualifiedName() + " changed in the source (" + rec.statement +
              "): only ADD COLUMN is applied to the target; change the target to match and "
              "start the stream again with mode load+cdc"));
        }
        TableSchema target = rec.schema;
        const std::string key = rec.table.QualifiedName();
        target.name = schemas[key].name;
        target.schema = schemas[key].schema;
        Status added = sink->AddColumns(target, rec.added_columns);
        if (!added.ok()) {
          if (added.retryable()) continue;
          return fail(added);
        }
        schemas[key] = target;
        tables_[index_of[key]].schema = target;
        ChangeBatch b;
        b.partition = kPartition;
        b.first_seq = b.last_seq = held.begin()->first;
        b.position = rec.position;
        b.tables = &schemas;
        auto r = sink->ApplyChanges(b);
        if (!r.ok()) {
          if (r.status().retryable() || r.status().code() == StatusCode::kFailedPrecondition) {
            DBS_ASSIGN_OR_RETURN(cp, sink->ReadCdcCheckpoint(kPartition));
            applied = std::max(applied, cp.seq);
            ack_through(applied);
            continue;
          }
          return fail(r.status());
        }
        applied = b.last_seq;
        ack_through(applied);
        Log(LogLevel::kInfo, "writer", "columns added",
            {F("table", key), F("statement", rec.statement)});
        continue;
      }
    }

    // The longest run of contiguous messages that ends on a transaction boundary, up to about
    // batchChanges row changes.
    ChangeBatch batch;
    batch.partition = kPartition;
    batch.first_seq = applied + 1;
    batch.tables = &schemas;
    std::vector<const ChangeTxn*> open_parts;  // parts of a transaction not yet complete
    std::vector<const ChangeTxn*> complete;
    uint64_t end_seq = 0;  // last message of the batch (0: none ends on a boundary)
    size_t end_txns = 0;
    size_t changes = 0, end_changes = 0;
    SourcePosition end_position;
    int64_t end_commit = 0;
    Status st;
    uint64_t expected = batch.first_seq;
    for (auto it = held.begin(); it != held.end() && it->first == expected; ++it, ++expected) {
      bool schema_record = false;
      for (const ChangeRecord& r : it->second.decoded.records) {
        if (std::holds_alternative<SchemaChangeRecord>(r)) {
          schema_record = true;
          break;
        }
        const ChangeTxn& t = std::get<ChangeTxn>(r);
        if (t.part == 0) {
          open_parts.clear();  // an earlier, abandoned publication of a transaction
        } else if (open_parts.empty() || open_parts.back()->xid != t.xid ||
                   open_parts.back()->part + 1 != t.part) {
          continue;  // a stray part: its transaction's start was abandoned
        }
        for (const auto& seg : t.segments) {
          st = table_for(seg.table);
          if (!st.ok()) break;
        }
        if (!st.ok()) break;
        open_parts.push_back(&t);
        changes += t.rows();
        if (t.final) {
          complete.insert(complete.end(), open_parts.begin(), open_parts.end());
          end_position = t.position;
          end_commit = t.commit_time_us;
          open_parts.clear();
        }
      }
      if (!st.ok() || schema_record) break;
      if (open_parts.empty()) {
        end_seq = it->first;
        end_txns = complete.size();
        end_changes = changes;
        if (end_position.empty()) end_position = it->second.decoded.resume;
        if (changes >= config_.cdc.batch_changes) break;
      }
    }
    if (!st.ok()) return fail(st);
    first_txn_incomplete = end_seq == 0;
    if (end_seq == 0) continue;  // the first transaction is not complete yet: fetch more
    batch.last_seq = end_seq;
    batch.txns.assign(complete.begin(), complete.begin() + static_cast<long>(end_txns));
    batch.position = end_position;
    batch.commit_time_us = end_commit;

    auto r = sink->ApplyChanges(batch);
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kFailedPrecondition) {
        DBS_ASSIGN_OR_RETURN(cp, sink->ReadCdcCheckpoint(kPartition));
        applied = std::max(applied, cp.seq);
        ack_through(applied);
        continue;
      }
      if (r.status().retryable()) {
        Log(LogLevel::kWarn, "writer", "retrying changes after a transient error",
            {F("error", r.status().ToString())});
        std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
        backoff_ms = std::min(backoff_ms * 2, 5000);
        continue;
      }
      return fail(r.status().WithContext("applying change messages " +
                                         std::to_string(batch.first_seq) + ".." +
                                         std::to_string(batch.last_seq)));
    }
    backoff_ms = 100;
    applied = batch.last_seq;
    total_changes += end_changes;
    ack_through(applied);
    json fb = {{"partition", kPartition},
               {"seq", applied},
               {"kind", static_cast<int>(batch.position.kind)},
               {"position", batch.position.value},
               {"file_pos", batch.position.file_pos}};
    (void)nats_->PublishCore(bus::SubjectFeedback(name), fb.dump());
    int64_t lag_ms = end_commit > 0 ? std::max<int64_t>(0, (NowMicros() - end_commit) / 1000) : 0;
    json p = {{"kind", "cdc-write"},    {"writer", options_.writer_id}, {"changes", end_changes},
              {"total", total_changes}, {"message", applied},           {"lag_ms", lag_ms}};
    (void)nats_->PublishCore(bus::SubjectProgress(name), p.dump());
  }
  // Stopped: what the target holds back becomes visible (the next run would resume it too).
  if (Status flushed = sink->FlushChanges(/*all=*/true); !flushed.ok()) {
    Log(LogLevel::kWarn, "writer", "publishing held-back changes failed",
        {F("stream", name), F("error", flushed.ToString())});
  }
  return Status::Cancelled("stopped");
}

}  // namespace dbs

#include "writer/load_writer.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include <nlohmann/json.hpp>

#include "bus/commit_log.h"
#include "bus/objects_wire.h"
#include "bus/protocol.h"
#include "bus/run_state.h"
#include "core/logging.h"

namespace dbs {

using nlohmann::json;

LoadWriter::LoadWriter(const StreamConfig& config, bus::NatsConnection* nats, WriterOptions options)
    : config_(config), nats_(nats), options_(std::move(options)) {}

namespace {

// Parses a stored JSON control message; Corruption when it is not an object.
Result<json> ParseJson(const std::string& text, const std::string& what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::Corruption(what + " is not valid JSON");
  return j;
}

// How many messages a fetch asks for: about `fetch_rows` rows and at most `fetch_bytes`
// bytes, at least one and at most `fetch_batch`, from running means of the bundles seen (the
// first fetch takes a few). Bundles are cut by bytes, so rows per bundle depend on the table.
class FetchSizer {
 public:
  explicit FetchSizer(const WriterOptions& o) : o_(o) {}
  int batch() const {
    if (seen_ == 0) return std::clamp(o_.fetch_batch, 1, 4);
    const double rows = std::max(1.0, static_cast<double>(rows_) / static_cast<double>(seen_));
    const double bytes = std::max(1.0, static_cast<double>(bytes_) / static_cast<double>(seen_));
    const double n = std::min(o_.fetch_rows / rows, static_cast<double>(o_.fetch_bytes) / bytes);
    return static_cast<int>(std::clamp(n, 1.0, static_cast<double>(std::max(1, o_.fetch_batch))));
  }
  void Saw(uint64_t rows, uint64_t bytes) {
    rows_ += rows;
    bytes_ += bytes;
    ++seen_;
  }

 private:
  const WriterOptions& o_;
  uint64_t rows_ = 0, bytes_ = 0, seen_ = 0;
};

}  // namespace

SinkOptions WriterSinkOptions(const StreamConfig& config, const std::string& run) {
  SinkOptions so;
  so.stream = config.name + "." + run;  // checkpoints are per run
  so.target_schema = config.target_schema;
  so.source_engine = config.source.engine;
  so.schema_policy = config.schema_policy;
  so.write_mode = config.write_mode;
  so.structure = config.structure;
  so.zero_date = config.zero_date;
  so.type_mapping = config.type_mapping;
  so.defer_primary_key = true;  // CheckFinished runs FinishStream before any change is applied
  so.shadow_tables = true;      // a failed run leaves the target as it was
  so.cdc_stream = so.stream;    // a CDC run's checkpoints live as long as its JetStream stream
  so.mode = config.mode;
  return so;
}

Result<TableSchema> LoadWriter::ReadMeta(int index, std::string* source_name) {
  DBS_ASSIGN_OR_RETURN(std::string text,
                       nats_->GetLastMessage(bus::JetStreamName(config_.name),
                                             bus::SubjectMeta(config_.name, index)));
  DBS_ASSIGN_OR_RETURN(json meta, ParseJson(text, "table metadata"));
  if (!meta.contains("table") || !meta.contains("target") || !meta["target"].is_string()) {
    return Status::Corruption("table metadata " + std::to_string(index) + " is incomplete");
  }
  DBS_ASSIGN_OR_RETURN(TableSchema schema, TableFromJson(meta["table"]));
  if (source_name != nullptr) *source_name = schema.QualifiedName();
  schema.name = meta["target"].get<std::string>();
  return schema;
}

Status LoadWriter::MakeReport(Sink* sink) {
  std::vector<TableSchema> tables;
  std::vector<std::string> names;
  if (plan_.contains("tables") && plan_["tables"].is_array()) {
    for (const json& t : plan_["tables"]) {
      if (!t.is_object() || !t.contains("index") || !t["index"].is_number_integer()) continue;
      std::string name;
      DBS_ASSIGN_OR_RETURN(TableSchema schema, ReadMeta(t["index"].get<int>(), &name));
      tables.push_back(std::move(schema));
      names.push_back(std::move(name));
    }
  }
  DBS_ASSIGN_OR_RETURN(RunPlan plan, PlanRun(sink, tables, names, objects_));
  run_plan_ = std::move(plan);
  return Status::Ok();
}

nlohmann::json LoadWriter::report() const {
  return run_plan_ ? ToJson(*run_plan_) : nlohmann::json();
}

Result<LoadWriter::TableState*> LoadWriter::Table(Sink* sink, int index) {
  auto it = tables_.find(index);
  if (it != tables_.end() && it->second.prepared) return &it->second;
  DBS_ASSIGN_OR_RETURN(TableSchema schema, ReadMeta(index, nullptr));
  TableState& st = tables_[index];
  st.schema = std::move(schema);
  DBS_ASSIGN_OR_RETURN(TargetTable target, sink->PrepareTable(st.schema));
  for (const std::string& w : target.warnings) {
    Log(LogLevel::kWarn, "writer", w, {F("table", target.schema + "." + target.name)});
  }
  st.prepared = true;
  return &st;
}

Status LoadWriter::PublishStatus(const std::string& state, const std::string& error,
                                 const std::string& id) {
  json j = {{"state", state}, {"writer", options_.writer_id}};
  if (!error.empty()) j["error"] = error;
  // One status per stream: the first writer's wins (broker de-duplication by id).
  auto ack = nats_->Publish(bus::SubjectStatus(config_.name), j.dump(), id);
  if (!ack.ok()) return ack.status();
  if (state == "complete" && !ack->duplicate) won_completion_ = true;
  return Status::Ok();
}

bool LoadWriter::IdleCommitDue(std::chrono::steady_clock::time_point oldest,
                               uint64_t message_bytes) {
  if (std::chrono::steady_clock::now() - oldest >= options_.idle_commit) return true;
  const std::string js = bus::JetStreamName(config_.name);
  // The reader published every bundle: nothing more is coming.
  auto done = nats_->GetLastMessage(js, bus::SubjectDone(config_.name));
  reader_done_seen_ = reader_done_seen_ || done.ok();
  if (done.ok() || done.status().code() != StatusCode::kNotFound) return true;
  // Nothing waits on the broker and the writers hold half the reader's window: the reader may
  // be waiting for these acknowledgements. (An error asking: commit, to be safe.)
  auto cs = nats_->GetConsumerState(js, bus::WritersDurable(config_.name));
  if (!cs.ok()) return true;
  const uint64_t held = static_cast<uint64_t>(std::max<int64_t>(0, cs->num_ack_pending));
  return cs->num_pending == 0 && held * message_bytes >= bus::kLoadWindowBytes / 2;
}

Result<bool> LoadWriter::CheckFinished(Sink* sink) {
  const std::string js = bus::JetStreamName(config_.name);
  auto status = nats_->GetLastMessage(js, bus::SubjectStatus(config_.name));
  if (status.ok()) {
    DBS_ASSIGN_OR_RETURN(json st, ParseJson(*status, "stream status"));
    std::string state = st.value("state", "");
    if (state == "complete" || state == "loaded") return true;
    return Status::Aborted("the stream failed: " + st.value("error", "unknown error"))
        .WithRetry(Retry::kFail);
  }
  if (status.status().code() != StatusCode::kNotFound) return status.status();
  auto done = nats_->GetLastMessage(js, bus::SubjectDone(config_.name));
  if (!done.ok()) {
    if (done.status().code() == StatusCode::kNotFound) return false;
    return done.status();
  }
  reader_done_seen_ = true;
  DBS_ASSIGN_OR_RETURN(auto cs, nats_->GetConsumerState(js, bus::WritersDurable(config_.name)));
  if (cs.num_pending != 0 || cs.num_ack_pending != 0) return false;
  // All data is committed. Make sure every table exists (empty tables sent no bundle).
  DBS_ASSIGN_OR_RETURN(json d, ParseJson(*done, "reader done event"));
  std::vector<TableSchema> all;
  for (const json& t : d["tables"]) {
    if (!t.contains("index") || !t["index"].is_number_integer()) {
      return Status::Corruption("reader done event lists a table without index");
    }
    DBS_ASSIGN_OR_RETURN(TableState * ts, Table(sink, t["index"].get<int>()));
    all.push_back(ts->schema);
  }
  DBS_RETURN_IF_ERROR(sink->FinishStream(all));
  // What the swap did with the schema objects (recorded in the target by the writer that did
  // it): the run report's objects.
  auto outcomes = sink->ObjectOutcomes();
  if (!outcomes.ok()) return outcomes.status().WithContext("reading the run's report");
  if (run_plan_ && !outcomes->empty()) run_plan_->objects = std::move(outcomes).value();
  // Every bundle is committed and acknowledged: no redelivery can come, so the run's
  // applied-bundle records have done their job.
  DBS_RETURN_IF_ERROR(sink->ForgetStream());
  // CDC modes: the load phase is over, the change stream follows.
  DBS_RETURN_IF_ERROR(PublishStatus(config_.mode == StreamMode::kLoad ? "complete" : "loaded", ""));
  Log(LogLevel::kInfo, "writer", "stream complete",
      {F("stream", config_.name), F("writer", options_.writer_id)});
  return true;
}

Status LoadWriter::Abandoned(const Status& cause) {
  if (!sink_) return cause;
  auto kept = sink_->AbandonStream(config_.keep_partial);
  if (!kept.ok()) {
    Log(LogLevel::kError, "writer", "cleaning up after the failed run failed",
        {F("error", kept.status().ToString())});
    return Status(
        cause.code(), Retry::kFail,
        cause.message() + "; cleaning up the target failed too: " + kept.status().ToString());
  }
  if (kept->empty()) return cause;
  std::string names;
  for (const std::string& n : *kept) names += (names.empty() ? "" : ", ") + n;
  return Status(cause.code(), Retry::kFail,
                cause.message() + "; the partial data is kept (keepPartial) in " + names);
}

Status LoadWriter::Abandon(const Status& cause) {
  (void)PublishStatus("failed", cause.ToString());
  return Abandoned(cause);
}

Status LoadWriter::FailRun(const Status& own) {
  (void)PublishStatus("failed", own.ToString());
  // The first failure is the cause; a later one in another writer is often its consequence
  // (its shadow table was dropped by the first writer's clean-up): report the first.
  Status cause = own;
  auto stored =
      nats_->GetLastMessage(bus::JetStreamName(config_.name), bus::SubjectStatus(config_.name));
  if (stored.ok()) {
    json st = json::parse(*stored, nullptr, /*allow_exceptions=*/false);
    if (st.is_object() && st.value("state", "") == "failed" &&
        st.value("writer", "") != options_.writer_id) {
      cause = Status::Aborted("the stream failed: " + st.value("error", "unknown error"))
                  .WithRetry(Retry::kFail);
    }
  }
  return Abandoned(cause);
}

void LoadWriter::HoldForTests(uint64_t committed_batches) {
  static const char* const hold = std::getenv("DBS_TEST_WRITER_HOLD_AFTER_BATCHES");
  if (hold == nullptr || *hold == '\0' || std::strtoull(hold, nullptr, 10) != committed_batches) {
    return;
  }
  Log(LogLevel::kWarn, "writer", "test hook: holding after committed batches",
      {F("batches", committed_batches)});
  while (!stop_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

Status LoadWriter::Run() {
  const std::string js = bus::JetStreamName(config_.name);
  DBS_ASSIGN_OR_RETURN(cipher_, security::StreamCipher(config_.bus_encryption, config_.bus_key));
  // Wait for the reader's plan: it also means the JetStream stream exists.
  auto deadline = std::chrono::steady_clock::now() + options_.plan_timeout;
  std::string run;
  std::string finished_run;  // a run that had ended before this writer looked (skipped)
  bool first_look = true;
  // Polled often at first (a reader started with this writer publishes its plan within a
  // fraction of a second), then every 100 ms.
  std::chrono::milliseconds poll{10};
  while (true) {
    auto plan = nats_->GetLastMessage(js, bus::SubjectPlan(config_.name));
    Status waited = plan.status();
    if (plan.ok()) {
      DBS_ASSIGN_OR_RETURN(json p, ParseJson(*plan, "the reader's plan"));
      run = p.value("run", "");
      if (run.empty()) return Status::Corruption("the reader's plan has no run id");
      if (first_look && options_.skip_finished_run) {
        // A final status (anything but "loaded", after which a load+cdc run goes on) means the
        // run ended before this writer started; unless it is a change stream whose load phase
        // finished, which the reader started again resumes (bus/run_state.h): then this writer
        // joins it, as a drained or stopped change stream goes on where it stopped.
        DBS_ASSIGN_OR_RETURN(auto resumable, bus::FinishedLoadPlan(nats_, config_.name,
                                                                   StreamModeName(config_.mode)));
        const bool resumed = resumable && resumable->value("run", "") == run;
        if (!resumed) {
          auto st = nats_->GetLastMessage(js, bus::SubjectStatus(config_.name));
          if (st.ok()) {
            json j = json::parse(*st, nullptr, /*allow_exceptions=*/false);
            if (!j.is_object() || j.value("state", "") != "loaded") finished_run = run;
          } else if (st.status().code() != StatusCode::kNotFound) {
            return st.status().WithContext("reading the status of stream " + config_.name);
          }
        }
        if (!finished_run.empty()) {
          Log(LogLevel::kInfo, "writer", "the stream's last run had ended: waiting for a new one",
              {F("stream", config_.name), F("run", finished_run)});
        }
      }
      first_look = false;
      if (run != finished_run) {
        plan_ = p;
        break;
      }
      waited = Status::NotFound("the stream's last run " + finished_run +
                                " had ended before this writer started, and no reader began "
                                "a new one; start stream-reader for a new run");
    } else {
      first_look = false;
    }
    // Not there yet (NotFound), or a busy broker timing out while the reader retries creating
    // the stream: keep waiting until the deadline.
    const bool waiting = waited.code() == StatusCode::kNotFound ||
                         waited.code() == StatusCode::kTimeout || waited.retryable();
    if (!waiting || stop_.load() || std::chrono::steady_clock::now() > deadline) {
      return stop_.load()
                 ? Status::Cancelled("stopped")
                 : waited.WithContext("waiting for the reader's plan of stream " + config_.name);
    }
    std::this_thread::sleep_for(poll);
    poll = std::min(poll * 2, std::chrono::milliseconds(100));
  }
  SinkOptions so = WriterSinkOptions(config_, run);
  if (const int parts = plan_.value("objectParts", 0); parts > 0) {
    DBS_ASSIGN_OR_RETURN(objects_, bus::ReadObjects(nats_, config_.name, parts));
  }
  so.objects = objects_;
  so.commit_log = std::make_shared<bus::JetStreamCommitLog>(nats_, config_.name);
  DBS_ASSIGN_OR_RETURN(sink_, Sink::Open(config_.target, so));
  Sink* sink = sink_.get();
  // What the run will do, planned before it writes (the end-of-run report); then what the
  // tables need besides themselves (extensions), before the first table is prepared.
  if (Status planned = MakeReport(sink); !planned.ok()) {
    Log(LogLevel::kWarn, "writer", "could not plan the run's report",
        {F("error", planned.ToString())});
  }
  if (Status prepared = sink->PrepareRun(); !prepared.ok()) {
    return prepared.retryable() ? prepared : FailRun(prepared);
  }

  bus::ConsumerSpec cs;
  cs.stream = js;
  cs.durable = bus::WritersDurable(config_.name);
  cs.filter_subject = bus::SubjectDataAll(config_.name);
  cs.ack_wait = options_.ack_wait;
  cs.max_ack_pending = 4096;
  DBS_ASSIGN_OR_RETURN(auto consumer, bus::PullConsumer::Create(nats_, cs));

  // Messages per fetch: about fetch_rows rows and at most fetch_bytes bytes, from the sizes of
  // the bundles seen so far (bundles are cut by bytes, so rows per bundle vary by table).
  FetchSizer sizer(options_);
  std::chrono::steady_clock::duration last_apply{};  // how long the last batch took to apply
  int backoff_ms = 100;
  uint64_t committed_batches = 0;
  // A sink that commits later than Apply (Sink::DefersCommit): the messages of its staged
  // bundles, acknowledged (and counted as written) once it lists them as committed, and
  // redelivered (nak) when it lists them as dropped.
  struct Staged {
    std::unique_ptr<bus::Message> msg;
    int table = 0;
    uint64_t rows = 0;
  };
  std::multimap<std::string, Staged> staged;
  uint64_t staged_bytes = 0;
  auto staged_since = std::chrono::steady_clock::now();
  const bool defers = sink->DefersCommit();
  auto publish_written = [&](const std::map<int, uint64_t>& rows_by_table) {
    json p = {{"kind", "write"}, {"writer", options_.writer_id}, {"rows", json::object()}};
    for (const auto& [t, n] : rows_by_table) p["rows"][std::to_string(t)] = n;
    (void)nats_->PublishCore(bus::SubjectProgress(config_.name), p.dump());
  };
  // Acknowledges or redelivers what the sink settled.
  auto settle = [&] {
    Sink::Settled s = sink->TakeSettled();
    std::map<int, uint64_t> rows_by_table;
    for (const std::string& id : s.committed) {
      auto [lo, hi] = staged.equal_range(id);
      for (auto it = lo; it != hi; ++it) {
        if (it == lo) rows_by_table[it->second.table] += it->second.rows;
        staged_bytes -= it->second.msg->data().size();
        if (Status a = it->second.msg->Ack(); !a.ok()) {
          Log(LogLevel::kWarn, "writer", "ack failed", {F("error", a.ToString())});
        }
      }
      staged.erase(lo, hi);
    }
    for (const std::string& id : s.dropped) {
      auto [lo, hi] = staged.equal_range(id);
      for (auto it = lo; it != hi; ++it) {
        staged_bytes -= it->second.msg->data().size();
        (void)it->second.msg->Nak();
      }
      staged.erase(lo, hi);
    }
    if (!rows_by_table.empty()) {
      publish_written(rows_by_table);
      HoldForTests(++committed_batches);
    }
    if (staged.empty()) staged_since = std::chrono::steady_clock::now();
  };
  // Commits what the sink staged; a retryable failure redelivers it.
  auto commit_staged = [&]() -> Status {
    if (!defers) return Status::Ok();
    Status c = sink->CommitStaged();
    if (!c.ok()) sink->DropStaged();
    settle();
    if (!c.ok() && c.retryable()) {
      Log(LogLevel::kWarn, "writer", "retrying after a transient error",
          {F("error", c.ToString())});
      return Status::Ok();
    }
    return c;
  };
  constexpr std::chrono::milliseconds kFirstFinishingWait{10};
  std::chrono::milliseconds finishing_wait = kFirstFinishingWait;
  // After rows, an empty fetch waits briefly, then longer each time up to fetch_wait; while
  // this writer holds staged rows it always waits briefly: the run cannot finish before it
  // commits them, which it does once it sees the reader's "done" after an empty fetch. A
  // whole fetch_wait spent waiting for rows that were not coming was up to a tenth of a
  // second of every run.
  const std::chrono::milliseconds first_idle_wait =
      std::min(std::chrono::milliseconds(20), options_.fetch_wait);
  std::chrono::milliseconds idle_wait = first_idle_wait;
  // A writer that joins late (or a small table) may find everything published already.
  reader_done_seen_ = nats_->GetLastMessage(js, bus::SubjectDone(config_.name)).status().ok();
  while (!stop_.load()) {
    if (paused_.load()) {
      if (!staged.empty()) {
        if (Status c = commit_staged(); !c.ok()) return FailRun(c);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    // Once the reader has published every bundle, an empty fetch means the run is finishing
    // (the other writers commit their last rows, or the winner builds the keys): look again
    // soon, then less often, rather than a whole fetch_wait later.
    DBS_ASSIGN_OR_RETURN(
        auto msgs, consumer->Fetch(sizer.batch(), reader_done_seen_ ? finishing_wait : idle_wait));
    if (!msgs.empty()) {
      finishing_wait = kFirstFinishingWait;
      idle_wait = first_idle_wait;
    } else if (staged.empty()) {
      idle_wait = std::min(idle_wait * 2, options_.fetch_wait);
    }
    if (!reader_done_seen_ && msgs.size() < static_cast<size_t>(sizer.batch())) {
      // Caught up with the reader: has it published everything?
      reader_done_seen_ = nats_->GetLastMessage(js, bus::SubjectDone(config_.name)).status().ok();
    }
    if (msgs.empty() && !staged.empty()) {
      // Nothing more for now: commit when more rows are not coming soon, or somebody waits.
      if (!IdleCommitDue(staged_since, staged_bytes / staged.size())) continue;
      if (Status c = commit_staged(); !c.ok()) return FailRun(c);
      // Committed (the last rows, often): see at once whether the run is finished rather
      // than after another empty fetch.
      if (!staged.empty()) continue;
    }
    if (msgs.empty()) {
      auto finished = CheckFinished(sink);
      if (!finished.ok()) {
        if (finished.status().retryable()) continue;
        // Failed here (finishing, e.g. a duplicate key) or elsewhere: no writer goes on.
        return FailRun(finished.status());
      }
      if (*finished) {
        load_finished_.store(true);
        if (config_.mode == StreamMode::kLoad) return Status::Ok();
        return RunCdc(sink);
      }
      finishing_wait = std::min(finishing_wait * 2, options_.fetch_wait);
      continue;
    }
    // Decode and group; the bundles stay alive until the batch is applied.
    std::vector<Bundle> bundles;
    bundles.reserve(msgs.size());
    std::vector<BundleRef> refs;
    std::vector<std::string> ids;
    ids.reserve(msgs.size());
    std::map<int, uint64_t> rows_by_table;
    std::string plain;  // a decrypted bundle (busEncryption)
    Status batch_status;
    for (const auto& m : msgs) {
      int index = std::atoi(m->header(bus::kHeaderTable).c_str());
      auto table = Table(sink, index);
      if (!table.ok()) {
        batch_status = table.status();
        break;
      }
      std::string_view payload = m->data();
      if (cipher_) {
        Status opened =
            cipher_->Open(security::BundleAd(m->header(bus::kHeaderBundleId)), payload, &plain);
        if (!opened.ok()) {
          batch_status = opened.WithContext("bundle " + m->header(bus::kHeaderBundleId));
          break;
        }
        payload = plain;
      }
      auto b = DecodeBundle(payload);
      if (!b.ok()) {
        batch_status = b.status().WithContext("bundle " + m->header(bus::kHeaderBundleId));
        break;
      }
      bundles.push_back(std::move(b).value());
      ids.push_back(m->header(bus::kHeaderBundleId));
      rows_by_table[index] += bundles.back().rows();
      sizer.Saw(bundles.back().rows(), m->data().size());
    }
    if (batch_status.ok()) {
      for (size_t i = 0; i < bundles.size(); ++i) {
        int index = std::atoi(msgs[i]->header(bus::kHeaderTable).c_str());
        refs.push_back({ids[i], &tables_[index].schema, &bundles[i]});
      }
      // The next batch travels while this one is applied, so the target does not wait for the
      // round trip to the bus between batches; not when applying takes long enough that the
      // prefetched messages' ack wait could run out before they are applied in turn.
      if (!paused_.load() && !stop_.load() && last_apply < options_.ack_wait / 8) {
        if (Status p = consumer->Prefetch(sizer.batch()); !p.ok()) {
          Log(LogLevel::kDebug, "writer", "prefetch request failed", {F("error", p.ToString())});
        }
      }
      const auto apply_start = std::chrono::steady_clock::now();
      auto applied = sink->Apply(refs);
      last_apply = std::chrono::steady_clock::now() - apply_start;
      if (!applied.ok()) batch_status = applied.status();
    }
    if (!batch_status.ok()) {
      if (defers) {
        // The batch's bundles and whatever was staged with them come back.
        sink->DropStaged();
        settle();
      }
      if (batch_status.retryable()) {
        Log(LogLevel::kWarn, "writer", "retrying after a transient error",
            {F("error", batch_status.ToString())});
        for (const auto& m : msgs) (void)m->Nak();
        std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
        backoff_ms = std::min(backoff_ms * 2, 5000);
        continue;
      }
      return FailRun(batch_status);
    }
    backoff_ms = 100;
    if (defers) {
      if (staged.empty()) staged_since = std::chrono::steady_clock::now();
      for (size_t i = 0; i < msgs.size(); ++i) {
        const int table = std::atoi(msgs[i]->header(bus::kHeaderTable).c_str());
        staged_bytes += msgs[i]->data().size();
        staged.emplace(ids[i], Staged{std::move(msgs[i]), table, bundles[i].rows()});
      }
      settle();
      const bool due = staged_bytes >= options_.staged_bytes ||
                       staged.size() >= options_.staged_messages ||
                       std::chrono::steady_clock::now() - staged_since >= options_.ack_wait / 2;
      if (due && !staged.empty()) {
        if (Status c = commit_staged(); !c.ok()) return FailRun(c);
      }
      continue;
    }
    for (const auto& m : msgs) {
      Status s = m->Ack();
      if (!s.ok()) {
        // The data is committed; a lost ack only causes a redelivery, which is skipped.
        Log(LogLevel::kWarn, "writer", "ack failed", {F("error", s.ToString())});
      }
    }
    publish_written(rows_by_table);
    HoldForTests(++committed_batches);
  }
  return Status::Cancelled("stopped");
}

}  // namespace dbs

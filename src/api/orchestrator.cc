#include "api/orchestrator.h"

#include <nats/nats.h>

#include <algorithm>

#include "bus/protocol.h"
#include "core/logging.h"
#include "security/sealed_box.h"
#include "security/sealed_config.h"

namespace dbs::api {

using nlohmann::json;
using store::NowMillis;

Orchestrator::Orchestrator(bus::NatsConnection* nats, store::ConfigStore* store, LogHub* logs,
                           OrchestratorOptions options)
    : nats_(nats), store_(store), logs_(logs), options_(options) {}

Orchestrator::~Orchestrator() { Shutdown(); }

Status Orchestrator::Start() {
  started_ms_ = NowMillis();
  // Runs left active by an earlier API process: keep following them; the monitor fails them
  // when no live service holds them once the heartbeat timeout has passed.
  DBS_ASSIGN_OR_RETURN(auto active, store_->ListActiveRuns());
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& r : active) {
      auto live = std::make_unique<Live>();
      live->rec = r;
      runs_[r.id] = std::move(live);
    }
  }
  auto sub = [&](const std::string& subject, bus::Subscription::Handler h) -> Status {
    DBS_ASSIGN_OR_RETURN(auto s, bus::Subscription::Create(nats_, subject, std::move(h)));
    subs_.push_back(std::move(s));
    return Status::Ok();
  };
  DBS_RETURN_IF_ERROR(sub(bus::kSubjectHeartbeatAll,
                          [this](std::string_view, std::string_view d) { OnHeartbeat(d); }));
  DBS_RETURN_IF_ERROR(sub(bus::kSubjectRunStateAll,
                          [this](std::string_view, std::string_view d) { OnRunState(d); }));
  DBS_RETURN_IF_ERROR(sub(bus::kSubjectProgressAll,
                          [this](std::string_view s, std::string_view d) { OnProgress(s, d); }));
  DBS_RETURN_IF_ERROR(sub(bus::kSubjectLogsAll, [this](std::string_view, std::string_view d) {
    json j = json::parse(d, nullptr, false);
    if (!j.is_discarded() && j.is_object()) logs_->Add(std::move(j));
  }));
  DBS_RETURN_IF_ERROR(nats_->Flush(std::chrono::seconds(5)));
  monitor_ = std::thread([this] { MonitorLoop(); });
  return Status::Ok();
}

void Orchestrator::Shutdown() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
  subs_.clear();
}

bool Orchestrator::AliveLocked(const std::string& service, int64_t now) const {
  auto it = services_.find(service);
  return it != services_.end() &&
         now - it->second.last_seen_ms <= options_.heartbeat_timeout.count();
}

void Orchestrator::OnHeartbeat(std::string_view data) {
  json j = json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j["id"].is_string()) return;
  std::lock_guard<std::mutex> l(mu_);
  const std::string id = j["id"].get<std::string>();
  if (j.contains("runs") && j["runs"].is_array() && j.value("kind", "") == "writer") {
    for (const json& r : j["runs"]) {
      if (!r.is_object()) continue;
      auto it = runs_.find(r.value("run", ""));
      if (it != runs_.end()) it->second->writers.insert(id);
    }
  }
  services_[id] = {std::move(j), NowMillis()};
}

void Orchestrator::OnRunState(std::string_view data) {
  json j = json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;
  const std::string run = j.value("run", ""), state = j.value("state", "");
  const std::string kind = j.value("kind", ""), service = j.value("service", "");
  const std::string error = j.value("error", "");
  std::lock_guard<std::mutex> l(mu_);
  auto it = runs_.find(run);
  if (it == runs_.end()) return;
  Live* live = it->second.get();
  if (kind == "writer" && !service.empty()) live->writers.insert(service);
  // What became of each table and schema object (every writer reports the same).
  if (kind == "writer" && live->report.is_null() && j.contains("report") &&
      j["report"].is_object()) {
    live->report = j["report"];
  }
  if (kind == "reader" && j.contains("skipped") && j["skipped"].is_object()) {
    live->skipped = j["skipped"];
  }
  if (state == "failed") {
    FinishLocked(live, "failed", kind + " " + service + ": " + error);
  } else if (state == "completed") {
    if (kind == "reader") {
      live->reader_done = true;
    } else if (live->verify && !j.contains("verification")) {
      // A verified load completes with the report of the writer that verified it.
    } else {
      if (j.contains("verification")) live->verification = j["verification"];
      FinishLocked(live, "completed", "");
    }
  } else if (state == "stopped") {
    // Stopped when every service holding the run has stopped: a writer still applying the
    // drained tail of a change stream is still working on it.
    live->finished_services.insert(service);
    bool all = live->rec.reader_service.empty() ||
               live->finished_services.count(live->rec.reader_service) != 0;
    for (const std::string& w : live->writers) all = all && live->finished_services.count(w) != 0;
    if (all) FinishLocked(live, "stopped", "");
  } else if (state == "paused" || state == "running") {
    if (live->rec.state == "running" || live->rec.state == "paused") {
      live->rec.state = state;
      (void)store_->PutRun(live->rec);
    }
  }
}

void Orchestrator::OnProgress(std::string_view subject, std::string_view data) {
  // dbs.<stream>.progress
  std::string s(subject);
  size_t a = s.find('.'), b = s.rfind('.');
  if (a == std::string::npos || b <= a) return;
  const std::string stream = s.substr(a + 1, b - a - 1);
  json j = json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [id, live] : runs_) {
    if (live->rec.stream_name != stream || !live->rec.active()) continue;
    const std::string kind = j.value("kind", "");
    if (kind == "read" && j.contains("rows") && j["rows"].is_array()) {
      for (size_t i = 0; i < j["rows"].size() && i < 100000; ++i) {
        if (live->tables.size() <= i) live->tables.resize(i + 1);
        if (j["rows"][i].is_number_unsigned()) live->tables[i].read = j["rows"][i].get<uint64_t>();
      }
      if (j.contains("bytes") && j["bytes"].is_number_unsigned()) {
        live->bytes = j["bytes"].get<uint64_t>();
      }
      if (j.contains("skipped") && j["skipped"].is_array()) {
        for (size_t i = 0; i < j["skipped"].size() && i < live->tables.size(); ++i) {
          if (j["skipped"][i].is_number_unsigned()) {
            live->tables[i].skipped = j["skipped"][i].get<uint64_t>();
          }
        }
      }
    } else if (kind == "write" && j.contains("rows") && j["rows"].is_object()) {
      for (const auto& [k, v] : j["rows"].items()) {
        size_t i = static_cast<size_t>(std::atoi(k.c_str()));
        if (i > 100000 || !v.is_number_unsigned()) continue;
        if (live->tables.size() <= i) live->tables.resize(i + 1);
        live->tables[i].written += v.get<uint64_t>();
      }
    }
    if (kind == "cdc-read" || kind == "cdc-write") {
      if (live->cdc_started_ms == 0) live->cdc_started_ms = NowMillis();
      if (kind == "cdc-write") {
        if (j.contains("lag_ms") && j["lag_ms"].is_number_integer()) {
          live->lag_ms = j["lag_ms"].get<int64_t>();
        }
        if (j.contains("changes") && j["changes"].is_number_unsigned()) {
          live->cdc_changes += j["changes"].get<uint64_t>();
        }
      }
    }
    if (j.contains("lagMs") && j["lagMs"].is_number_integer())
      live->lag_ms = j["lagMs"].get<int64_t>();
    uint64_t rows = 0;
    for (const Table& t : live->tables) rows += t.written;
    live->samples.push_back({NowMillis(), rows, live->bytes});
    while (live->samples.size() > 2 && live->samples.back().ms - live->samples.front().ms > 5000) {
      live->samples.pop_front();
    }
  }
}

void Orchestrator::LoadPlan(const std::string& run_id, const std::string& stream) {
  const std::string js = bus::JetStreamName(stream);
  auto plan = nats_->GetLastMessage(js, bus::SubjectPlan(stream));
  if (!plan.ok()) return;
  json p = json::parse(*plan, nullptr, false);
  if (p.is_discarded() || !p.contains("tables") || !p["tables"].is_array()) return;
  std::vector<Table> tables;
  for (const json& t : p["tables"]) {
    Table x;
    x.name = t.value("name", "");
    auto meta = nats_->GetLastMessage(js, bus::SubjectMeta(stream, t.value("index", 0)));
    if (meta.ok()) {
      json m = json::parse(*meta, nullptr, false);
      if (!m.is_discarded() && m.contains("table") && m["table"].is_object()) {
        x.estimate = m["table"].value("estimatedRows", uint64_t{0});
      }
    }
    tables.push_back(std::move(x));
  }
  std::lock_guard<std::mutex> l(mu_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return;
  Live* live = it->second.get();
  if (live->tables.size() < tables.size()) live->tables.resize(tables.size());
  for (size_t i = 0; i < tables.size(); ++i) {
    live->tables[i].name = tables[i].name;
    live->tables[i].estimate = tables[i].estimate;
  }
  live->plan_loaded = true;
}

void Orchestrator::MonitorLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stopping_) {
    cv_.wait_for(l, std::chrono::milliseconds(500));
    if (stopping_) break;
    const int64_t now = NowMillis();
    const int64_t timeout = options_.heartbeat_timeout.count();
    std::vector<std::pair<std::string, std::string>> need_plan, need_status;
    for (auto& [id, live] : runs_) {
      store::RunRecord& r = live->rec;
      if (!r.active()) continue;
      if (r.state == "stopping") {
        if (now - live->stop_requested_ms > options_.stop_timeout.count()) {
          FinishLocked(live.get(), "stopped", "");
        }
        continue;
      }
      if (r.state == "starting") continue;
      if (now - started_ms_ < timeout) continue;  // give services time to report after a restart
      if (!r.reader_service.empty() && !live->reader_done && !AliveLocked(r.reader_service, now)) {
        int64_t seen = services_.count(r.reader_service)
                           ? (now - services_[r.reader_service].last_seen_ms) / 1000
                           : -1;
        FinishLocked(live.get(), "failed",
                     "reader service " + r.reader_service + " stopped sending heartbeats" +
                         (seen >= 0 ? " (last seen " + std::to_string(seen) + " s ago)" : "") +
                         ": it crashed or lost its NATS connection; start the run again");
        continue;
      }
      if (!live->verifier.empty() && !AliveLocked(live->verifier, now)) {
        FinishLocked(live.get(), "failed",
                     "writer service " + live->verifier +
                         " stopped sending heartbeats while it verified the load: the data "
                         "is in the target but unverified; start the run again");
        continue;
      }
      if (!live->writers.empty()) {
        bool any = false;
        std::string names;
        for (const std::string& w : live->writers) {
          any = any || AliveLocked(w, now);
          names += (names.empty() ? "" : ", ") + w;
        }
        if (!any) {
          FinishLocked(live.get(), "failed",
                       "writer service(s) " + names +
                           " stopped sending heartbeats: they crashed or lost their NATS "
                           "connection; start the run again");
          continue;
        }
      }
      if (!live->plan_loaded) need_plan.emplace_back(id, r.stream_name);
      if (now - live->last_status_check_ms > 1000) {
        live->last_status_check_ms = now;
        need_status.emplace_back(id, r.stream_name);
      }
    }
    // Keep the figures of active runs in the store now and then, so a crash of this process
    // loses at most a few seconds of them.
    if (now - last_persist_ms_ > 5000) {
      last_persist_ms_ = now;
      for (auto& [id, live] : runs_) {
        if (!live->rec.active()) continue;
        uint64_t rows = 0;
        for (const Table& t : live->tables) rows += t.written;
        live->rec.rows = std::max(rows, live->rec.rows);
        live->rec.bytes = std::max(live->bytes, live->rec.bytes);
        KeepDetailsLocked(live.get());
        (void)store_->PutRun(live->rec);
      }
    }
    // Forget finished runs (their records are in the store).
    for (auto it = runs_.begin(); it != runs_.end();) {
      it = it->second->rec.active() ? std::next(it) : runs_.erase(it);
    }
    std::vector<std::string> to_delete, to_stop;
    to_delete.swap(to_delete_);
    to_stop.swap(to_stop_);
    const bool check_storage = now - storage_checked_ms_ > 5000;
    if (check_storage) storage_checked_ms_ = now;
    l.unlock();
    for (const std::string& run : to_stop) {
      json req = {{"op", "stop"}, {"run", run}, {"force", true}};
      (void)nats_->PublishCore(bus::SubjectControl("run"), req.dump());
    }
    std::unique_lock<std::mutex> bus_lock(bus_mu_, std::defer_lock);
    if (!to_delete.empty()) bus_lock.lock();
    for (const std::string& stream : to_delete) {
      bool active = false;
      {
        std::lock_guard<std::mutex> g(mu_);
        for (auto& [id, live] : runs_) {
          active = active || (live->rec.stream_name == stream && live->rec.active());
        }
      }
      if (active) continue;  // started again meanwhile: the new run owns the stream
      Status del = nats_->DeleteStream(bus::JetStreamName(stream));
      if (!del.ok() && del.code() != StatusCode::kNotFound) {
        Log(LogLevel::kWarn, "api", "cannot remove a finished load from the bus",
            {F("stream", stream), F("error", del.ToString())});
      }
    }
    if (bus_lock.owns_lock()) bus_lock.unlock();
    if (check_storage || !to_delete.empty()) {
      auto usage = nats_->Storage();
      std::lock_guard<std::mutex> g(mu_);
      storage_known_ = usage.ok();
      if (usage.ok()) storage_ = *usage;
    }
    for (auto& [id, stream] : need_plan) LoadPlan(id, stream);
    // The durable stream status (written by the writers) backs up lost state events.
    for (auto& [id, stream] : need_status) {
      auto st = nats_->GetLastMessage(bus::JetStreamName(stream), bus::SubjectStatus(stream));
      if (!st.ok()) continue;
      json j = json::parse(*st, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      std::lock_guard<std::mutex> g(mu_);
      auto it = runs_.find(id);
      if (it == runs_.end() || !it->second->rec.active() || it->second->rec.state == "stopping") {
        continue;
      }
      // The status names the writer that published it, "<service>/<run>": a status left in
      // a change stream's JetStream stream by an earlier run says nothing about this one.
      const std::string writer = j.value("writer", "");
      const std::string suffix = "/" + id;
      if (writer.size() < suffix.size() ||
          writer.compare(writer.size() - suffix.size(), suffix.size(), suffix) != 0) {
        continue;
      }
      if (j.value("state", "") == "complete" && !it->second->verify) {
        FinishLocked(it->second.get(), "completed", "");
      } else if (j.value("state", "") == "complete") {
        it->second->verifier = writer.substr(0, writer.size() - suffix.size());
      }
      if (j.value("state", "") == "failed") {
        FinishLocked(it->second.get(), "failed", j.value("error", "the stream failed"));
      }
    }
    l.lock();
  }
}

void Orchestrator::FinishLocked(Live* live, const std::string& state, const std::string& error) {
  store::RunRecord& r = live->rec;
  if (!r.active()) return;
  r.state = state;
  r.error = error;
  r.ended_at = NowMillis();
  uint64_t rows = 0;
  for (const Table& t : live->tables)
    rows += std::max(t.written, state == "completed" ? t.read : 0);
  // A run followed again after an API restart has no live figures yet: keep the stored ones.
  r.rows = std::max(rows, r.rows);
  r.bytes = std::max(live->bytes, r.bytes);
  KeepDetailsLocked(live);
  Status s = store_->PutRun(r);
  if (!s.ok()) Log(LogLevel::kError, "api", "cannot record the run", {F("error", s.ToString())});
  const int64_t cdc_seconds = live->cdc_started_ms > 0
                                  ? std::max<int64_t>(0, (r.ended_at - live->cdc_started_ms) / 1000)
                                  : 0;
  (void)store_->AddUsage(store::TodayUtc(), r.bytes, static_cast<uint64_t>(cdc_seconds));
  Log(state == "failed" ? LogLevel::kError : LogLevel::kInfo, "api", "run " + state,
      {F("stream", r.stream_name), F("run", r.id), F("rows", r.rows), F("error", error)});
  // A load's data is committed (or the run is over and a new start deletes it anyway): the
  // bus keeps no copy. A run resumed after an API restart has no mode recorded: keep it.
  if (live->mode == "load") to_delete_.push_back(r.stream_name);
  // Services may still hold the run (a failed writer's peers, a reader that outlived its
  // writers): stop them, so a finished run does no more work.
  if (state == "failed") to_stop_.push_back(r.id);
  cv_.notify_all();
}

void Orchestrator::KeepDetailsLocked(Live* live) {
  json j = LiveJsonLocked(*live);
  json prior =
      live->rec.details.empty() ? json::object() : json::parse(live->rec.details, nullptr, false);
  json d = json::object();
  // Figures the services never sent this API process (it restarted) stay as stored.
  const bool have_tables = !j["tables"].empty();
  d["tables"] = have_tables || !prior.is_object() ? j["tables"] : prior.value("tables", json());
  d["progress"] =
      have_tables || !prior.is_object() ? j["progress"] : prior.value("progress", json());
  d["cdcLagMs"] = j["cdcLagMs"];
  d["cdcChanges"] =
      std::max<uint64_t>(j.value("cdcChanges", uint64_t{0}),
                         prior.is_object() ? prior.value("cdcChanges", uint64_t{0}) : uint64_t{0});
  d["writerServices"] = j["writerServices"];
  if (!live->verification.is_null()) d["verification"] = live->verification;
  if (!live->report.is_null()) d["report"] = live->report;
  if (!live->skipped.is_null()) {
    d["skipped"] = live->skipped;
  } else if (prior.is_object() && prior.contains("skipped")) {
    d["skipped"] = prior["skipped"];
  }
  if (!live->rec.active()) {
    // A finished run's rates are its averages over the whole run.
    const double secs =
        static_cast<double>(std::max<int64_t>(1, live->rec.ended_at - live->rec.started_at)) /
        1000.0;
    d["rowsPerSecond"] = static_cast<double>(live->rec.rows) / secs;
    d["bytesPerSecond"] = static_cast<double>(live->rec.bytes) / secs;
  }
  live->rec.details = d.dump();
}

Result<json> Orchestrator::Request(const std::string& subject, const json& body) {
  natsMsg* reply = nullptr;
  const std::string data = body.dump();
  natsStatus s = natsConnection_Request(&reply, nats_->raw(), subject.c_str(), data.data(),
                                        static_cast<int>(data.size()),
                                        static_cast<int64_t>(options_.request_timeout.count()));
  if (s != NATS_OK) {
    if (s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS) {
      return Status::Unavailable("no service answered on " + subject);
    }
    return Status::Unavailable("request on " + subject + " failed: " + natsStatus_GetText(s));
  }
  std::string text(natsMsg_GetData(reply), static_cast<size_t>(natsMsg_GetDataLength(reply)));
  natsMsg_Destroy(reply);
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Corruption("bad reply on " + subject);
  return j;
}

Result<json> Orchestrator::SealForServices(const std::string& kind, const std::string& plain) {
  std::map<std::string, std::string> keys;
  {
    std::lock_guard<std::mutex> l(mu_);
    const int64_t now = NowMillis();
    for (auto& [id, svc] : services_) {
      const json& hb = svc.heartbeat;
      if (!AliveLocked(id, now) || hb.value("kind", "") != kind) continue;
      if (hb.contains("sealKey") && hb["sealKey"].is_string()) {
        keys[id] = hb["sealKey"].get<std::string>();
      }
    }
  }
  if (keys.empty()) {
    return Status::Unavailable("no live " + kind +
                               " service announces a key to seal credentials to (an older "
                               "version?): upgrade it");
  }
  json sealed = json::object();
  for (const auto& [id, key] : keys) {
    auto box = security::SealTo(key, plain);
    if (!box.ok()) continue;  // a malformed key: that service cannot take the run
    sealed[id] = *box;
  }
  return sealed;
}

Result<store::RunRecord> Orchestrator::StartRun(const store::StreamRecord& stream,
                                                const json& config) {
  std::lock_guard<std::mutex> bus_lock(bus_mu_);
  const int64_t now = NowMillis();
  {
    std::lock_guard<std::mutex> l(mu_);
    to_delete_.erase(std::remove(to_delete_.begin(), to_delete_.end(), stream.name),
                     to_delete_.end());
    for (auto& [id, live] : runs_) {
      if (live->rec.stream_id == stream.id && live->rec.active()) {
        return Status::FailedPrecondition("stream " + stream.name + " already has run " + id +
                                          " in state " + live->rec.state +
                                          ": stop it before starting it again");
      }
    }
    bool reader = false, writer = false;
    for (auto& [id, svc] : services_) {
      if (!AliveLocked(id, now)) continue;
      reader = reader || svc.heartbeat.value("kind", "") == "reader";
      writer = writer || svc.heartbeat.value("kind", "") == "writer";
    }
    if (!reader || !writer) {
      return Status::Unavailable(std::string("no ") + (!reader ? "reader" : "writer") +
                                 " service is running (no heartbeat in the last " +
                                 std::to_string(options_.heartbeat_timeout.count() / 1000) +
                                 " s): start one (stream-" + (!reader ? "reader" : "writer") +
                                 " --service, or dbstreams serve)");
    }
  }
  auto live = std::make_unique<Live>();
  live->rec.id = store::NewId("r_");
  live->rec.stream_id = stream.id;
  live->rec.stream_name = stream.name;
  live->rec.state = "starting";
  live->rec.started_at = now;
  live->mode = stream.config.value("mode", "load");
  live->verify = live->mode == "load" && stream.config.value("verify", true);
  DBS_RETURN_IF_ERROR(store_->PutRun(live->rec));
  const std::string run_id = live->rec.id;
  {
    std::lock_guard<std::mutex> l(mu_);
    runs_[run_id] = std::move(live);
  }
  auto fail = [&](const Status& s) -> Status {
    std::lock_guard<std::mutex> l(mu_);
    auto it = runs_.find(run_id);
    if (it != runs_.end()) FinishLocked(it->second.get(), "failed", s.message());
    return s;
  };
  // Mode load: a fresh JetStream stream, writers must not see the previous run's plan or
  // status. CDC modes keep it: the reader resumes the change stream after the last published
  // transaction instead of loading again (reader/stream_reader.h).
  if (stream.config.value("mode", "load") == "load") {
    Status del = nats_->DeleteStream(bus::JetStreamName(stream.name));
    if (!del.ok() && del.code() != StatusCode::kNotFound) return fail(del);
  }
  // No secret travels in clear: the passwords go sealed to each live service of the kind.
  json plain_config = config;
  const json secrets = security::TakeSecrets(&plain_config);
  auto request = [&](const std::string& kind) -> Result<json> {
    json req = {{"op", "start"}, {"run", run_id}, {"config", plain_config}};
    if (!secrets.empty()) {
      DBS_ASSIGN_OR_RETURN(req["sealed"], SealForServices(kind, secrets.dump()));
    }
    return Request(bus::SubjectControl(kind), req);
  };
  auto r = request("reader");
  if (!r.ok()) return fail(r.status().WithContext("starting the reader"));
  if (!r->value("ok", false)) {
    return fail(Status::FailedPrecondition("the reader refused the run: " + r->value("error", "")));
  }
  const std::string reader = r->value("service", "");
  auto w = request("writer");
  if (!w.ok()) return fail(w.status().WithContext("starting the writers"));
  if (!w->value("ok", false)) {
    return fail(Status::FailedPrecondition("a writer refused the run: " + w->value("error", "")));
  }
  std::lock_guard<std::mutex> l(mu_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return Status::Internal("run " + run_id + " vanished");
  Live* lv = it->second.get();
  lv->writers.insert(w->value("service", ""));
  lv->rec.reader_service = reader;
  if (lv->rec.state == "starting") lv->rec.state = "running";
  DBS_RETURN_IF_ERROR(store_->PutRun(lv->rec));
  Log(LogLevel::kInfo, "api", "run started",
      {F("stream", stream.name), F("run", run_id), F("reader", reader)});
  return lv->rec;
}

Status Orchestrator::StopRun(const std::string& run_id, bool force) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = runs_.find(run_id);
    if (it == runs_.end() || !it->second->rec.active()) {
      auto rec = store_->GetRun(run_id);
      if (!rec.ok()) return rec.status();
      return Status::FailedPrecondition("run " + run_id + " is " + rec->state +
                                        ": only active runs can be stopped");
    }
    Live* live = it->second.get();
    if (force) {
      FinishLocked(live, "stopped", "");
    } else {
      live->rec.state = "stopping";
      live->stop_requested_ms = NowMillis();
      (void)store_->PutRun(live->rec);
    }
  }
  json req = {{"op", "stop"}, {"run", run_id}, {"force", force}};
  std::string data = req.dump();
  DBS_RETURN_IF_ERROR(nats_->PublishCore(bus::SubjectControl("run"), data));
  return nats_->Flush(std::chrono::seconds(2));
}

Status Orchestrator::PauseRun(const std::string& run_id) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = runs_.find(run_id);
    if (it == runs_.end() || it->second->rec.state != "running") {
      auto rec = store_->GetRun(run_id);
      if (!rec.ok()) return rec.status();
      return Status::FailedPrecondition("run " + run_id + " is " + rec->state +
                                        ": only running runs can be paused");
    }
  }
  DBS_ASSIGN_OR_RETURN(json r,
                       Request(bus::SubjectControl("run"), {{"op", "pause"}, {"run", run_id}}));
  if (!r.value("ok", false)) return Status::Unsupported(r.value("error", "pause failed"));
  return Status::Ok();
}

Status Orchestrator::ResumeRun(const std::string& run_id) {
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = runs_.find(run_id);
    if (it == runs_.end() || it->second->rec.state != "paused") {
      auto rec = store_->GetRun(run_id);
      if (!rec.ok()) return rec.status();
      return Status::FailedPrecondition("run " + run_id + " is " + rec->state +
                                        ": only paused runs can be resumed");
    }
  }
  DBS_ASSIGN_OR_RETURN(json r,
                       Request(bus::SubjectControl("run"), {{"op", "resume"}, {"run", run_id}}));
  if (!r.value("ok", false)) return Status::Unsupported(r.value("error", "resume failed"));
  return Status::Ok();
}

json RunRecordJson(const store::RunRecord& r) {
  json j = {{"id", r.id},
            {"streamId", r.stream_id},
            {"stream", r.stream_name},
            {"state", r.state},
            {"startedAt", r.started_at},
            {"endedAt", r.ended_at == 0 ? json(nullptr) : json(r.ended_at)},
            {"rows", r.rows},
            {"bytes", r.bytes},
            {"readerService", r.reader_service}};
  j["error"] = r.error.empty() ? json(nullptr) : json(r.error);
  return j;
}

json Orchestrator::LiveJsonLocked(const Live& live) const {
  json j = RunRecordJson(live.rec);
  json tables = json::array();
  uint64_t rows = 0, est = 0;
  double rate_rows = 0, rate_bytes = 0;
  if (live.samples.size() >= 2) {
    const Sample& a = live.samples.front();
    const Sample& b = live.samples.back();
    double dt = static_cast<double>(b.ms - a.ms) / 1000.0;
    if (dt > 0) {
      rate_rows = static_cast<double>(b.rows - a.rows) / dt;
      rate_bytes = static_cast<double>(b.bytes - a.bytes) / dt;
    }
  }
  for (const Table& t : live.tables) {
    json x = {{"name", t.name},
              {"estimatedRows", t.estimate},
              {"rowsRead", t.read},
              {"rowsWritten", t.written},
              {"rowsSkipped", t.skipped}};
    x["progress"] = t.estimate > 0 ? json(std::min(100.0, 100.0 * static_cast<double>(t.written) /
                                                              static_cast<double>(t.estimate)))
                                   : json(nullptr);
    rows += t.written;
    est += t.estimate;
    tables.push_back(std::move(x));
  }
  j["rows"] = std::max<uint64_t>(rows, live.rec.rows);
  j["bytes"] = std::max<uint64_t>(live.bytes, live.rec.bytes);
  j["tables"] = std::move(tables);
  j["rowsPerSecond"] = rate_rows;
  j["bytesPerSecond"] = rate_bytes;
  j["progress"] =
      est > 0 ? json(std::min(100.0, 100.0 * static_cast<double>(rows) / static_cast<double>(est)))
              : json(nullptr);
  j["cdcLagMs"] = live.lag_ms >= 0 ? json(live.lag_ms) : json(nullptr);
  j["cdcChanges"] = live.cdc_changes;
  j["writerServices"] = live.writers;
  j["verification"] = live.verification;
  j["report"] = live.report;
  j["skipped"] = live.skipped;
  return j;
}

Result<json> Orchestrator::RunStatus(const std::string& run_id) {
  json j;
  std::string stream;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = runs_.find(run_id);
    if (it != runs_.end()) {
      j = LiveJsonLocked(*it->second);
      stream = it->second->rec.stream_name;
    }
  }
  if (j.is_null()) {
    DBS_ASSIGN_OR_RETURN(store::RunRecord r, store_->GetRun(run_id));
    j = RunRecordJson(r);
    j["tables"] = json::array();
    j["progress"] = r.state == "completed" ? json(100.0) : json(nullptr);
    j["rowsPerSecond"] = 0;
    j["bytesPerSecond"] = 0;
    j["cdcLagMs"] = nullptr;
    j["cdcChanges"] = 0;
    // The figures the run ended with (per table, average rates, CDC).
    json d = r.details.empty() ? json() : json::parse(r.details, nullptr, false);
    if (d.is_object()) {
      for (auto& [k, v] : d.items()) {
        if (k == "progress" && r.state == "completed") continue;
        if (!v.is_null()) j[k] = v;
      }
    }
    stream = r.stream_name;
  }
  LogFilter f;
  f.stream = stream;
  j["recentLogs"] = logs_->Recent(f, 50);
  return j;
}

json Orchestrator::Services() {
  std::lock_guard<std::mutex> l(mu_);
  const int64_t now = NowMillis();
  json out = json::array();
  for (auto& [id, s] : services_) {
    json j = s.heartbeat;
    j["alive"] = AliveLocked(id, now);
    j["lastSeenMs"] = now - s.last_seen_ms;
    out.push_back(std::move(j));
  }
  return out;
}

Orchestrator::Counts Orchestrator::Snapshot() {
  std::lock_guard<std::mutex> l(mu_);
  Counts c;
  const int64_t now = NowMillis();
  for (auto& [id, s] : services_) {
    if (!AliveLocked(id, now)) continue;
    if (s.heartbeat.value("kind", "") == "reader") ++c.readers_alive;
    if (s.heartbeat.value("kind", "") == "writer") ++c.writers_alive;
  }
  if (storage_known_) {
    c.bus_storage_bytes = static_cast<int64_t>(storage_.file_bytes);
    c.bus_streams = storage_.streams;
  }
  for (auto& [id, live] : runs_) {
    if (!live->rec.active()) continue;
    c.runs_by_state[live->rec.state]++;
    for (const Table& t : live->tables) c.rows_written += t.written;
    c.bytes += live->bytes;
  }
  return c;
}

}  // namespace dbs::api

#include "service/service_agent.h"

#include <nats/nats.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "bus/protocol.h"
#include "config/stream_config.h"
#include "core/logging.h"
#include "security/sealed_box.h"
#include "security/sealed_config.h"
#include "service/stream_task.h"
#include "store/config_store.h"

namespace dbs::service {

using nlohmann::json;

namespace {

std::string HostName() {
  char h[256] = {0};
  if (gethostname(h, sizeof h - 1) != 0) return "localhost";
  return h;
}

bool ValidRunId(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

struct ServiceAgent::Impl {
  struct Entry {
    std::string run;
    std::string stream;
    std::unique_ptr<StreamTask> task;
    std::thread thread;
    std::string state = "running";  // running, stopping, completed, failed, stopped
    bool reported_final = false;
    bool finished = false;
  };

  bus::NatsConnection* nats = nullptr;
  AgentOptions options;
  // Credentials of a run arrive sealed to this key pair's public half, which the heartbeats
  // announce (security/sealed_config.h).
  security::BoxKeyPair keys = security::BoxKeyPair::Generate();
  std::string host;
  int64_t started_at = 0;
  std::vector<natsSubscription*> subs;
  std::mutex mu;
  std::condition_variable cv;
  bool shutting_down = false;
  std::map<std::string, std::unique_ptr<Entry>> tasks;  // by run id (kept after they finish)
  std::thread heartbeat;

  ~Impl() { Shutdown(); }

  void Shutdown() {
    {
      std::lock_guard<std::mutex> l(mu);
      if (shutting_down) return;
      shutting_down = true;
    }
    for (natsSubscription* s : subs) {
      natsSubscription_Unsubscribe(s);
      natsSubscription_Destroy(s);
    }
    subs.clear();
    cv.notify_all();
    if (heartbeat.joinable()) heartbeat.join();
    std::vector<Entry*> all;
    {
      std::lock_guard<std::mutex> l(mu);
      for (auto& [k, e] : tasks) {
        if (!e->finished && e->task) e->task->Stop(true);
        all.push_back(e.get());
      }
    }
    for (Entry* e : all) {
      if (e->thread.joinable()) e->thread.join();
    }
  }

  void PublishState(const std::string& run, const std::string& stream, const std::string& state,
                    const std::string& error, const json& report = nullptr) {
    json j = {{"run", run},           {"stream", stream}, {"service", options.id},
              {"kind", options.kind}, {"state", state},   {"ts", store::NowMillis()}};
    if (!error.empty()) j["error"] = error;
    if (report.is_object()) {
      for (auto& [k, v] : report.items()) j[k] = v;
    }
    (void)nats->PublishCore(bus::SubjectRunState(run), j.dump());
    (void)nats->Flush(std::chrono::milliseconds(2000));
  }

  void Reply(natsMsg* msg, const json& j) {
    const char* reply = natsMsg_GetReply(msg);
    if (reply == nullptr || *reply == '\0') return;
    std::string s = j.dump();
    natsConnection_Publish(nats->raw(), reply, s.data(), static_cast<int>(s.size()));
  }

  // The run's config with its secrets put back: a start carries them as {"sealed": {service id:
  // box}}, each box sealed to that service's key.
  Result<json> UnsealConfig(const json& req) {
    json config = req["config"];
    if (!req.contains("sealed")) return config;
    const json& sealed = req["sealed"];
    if (!sealed.is_object() || !sealed.contains(options.id) || !sealed[options.id].is_string()) {
      return Status::Unavailable("the start request has no credentials sealed for service " +
                                 options.id +
                                 " (it started after the request was made): start the run again");
    }
    DBS_ASSIGN_OR_RETURN(std::string plain, keys.Open(sealed[options.id].get<std::string>()));
    json secrets = json::parse(plain, nullptr, false);
    WipeString(&plain);
    DBS_RETURN_IF_ERROR(security::PutSecrets(&config, secrets));
    return config;
  }
  static void WipeString(std::string* s) {  // a decrypted copy: do not leave it in freed memory
    volatile char* p = s->data();
    for (size_t i = 0; i < s->size(); ++i) p[i] = 0;
  }

  void HandleStart(natsMsg* msg, const json& req) {
    const std::string run = req.value("run", "");
    if (!ValidRunId(run) || !req.contains("config") || !req["config"].is_object()) {
      return Reply(msg, {{"ok", false}, {"error", "start request without a valid run and config"}});
    }
    auto config = UnsealConfig(req);
    if (!config.ok()) {
      return Reply(msg, {{"ok", false}, {"error", config.status().ToString()}});
    }
    auto parsed = ParseStreamConfig(*config);
    if (!parsed.ok()) {
      PublishState(run, req["config"].value("name", ""), "failed", parsed.status().ToString());
      return Reply(msg, {{"ok", false}, {"error", parsed.status().ToString()}});
    }
    std::lock_guard<std::mutex> l(mu);
    if (shutting_down) return Reply(msg, {{"ok", false}, {"error", "service is shutting down"}});
    if (tasks.count(run) != 0) {
      return Reply(msg, {{"ok", true}, {"service", options.id}, {"duplicate", true}});
    }
    // Two runs of one stream never work at once: they would read the source twice (a MySQL
    // replica id taken over, a PostgreSQL slot in use) and write the same target.
    for (auto& [id, e] : tasks) {
      if (!e->finished && e->stream == parsed->name) {
        return Reply(msg, {{"ok", false},
                           {"error", "stream " + parsed->name + " is still running here as run " +
                                         id + ": stop it first"}});
      }
    }
    Result<std::unique_ptr<StreamTask>> task =
        options.kind == "reader" ? MakeReaderTask(*parsed, run, nats)
                                 : MakeWriterTask(*parsed, run, nats, options.id + "/" + run);
    if (!task.ok()) {
      PublishState(run, parsed->name, "failed", task.status().ToString());
      return Reply(msg, {{"ok", false}, {"error", task.status().ToString()}});
    }
    auto e = std::make_unique<Entry>();
    e->run = run;
    e->stream = parsed->name;
    e->task = std::move(task).value();
    Entry* ep = e.get();
    tasks[run] = std::move(e);
    Log(LogLevel::kInfo, "service", "run started",
        {F("stream", ep->stream), F("run", run), F("service", options.id)});
    PublishState(run, ep->stream, "running", "");
    ep->thread = std::thread([this, ep] { RunTask(ep); });
    Reply(msg, {{"ok", true}, {"service", options.id}});
  }

  void RunTask(Entry* e) {
    Status s = e->task->Run();
    std::string state, error;
    bool report;
    {
      std::lock_guard<std::mutex> l(mu);
      if (e->state == "stopping" || (!s.ok() && s.code() == StatusCode::kCancelled)) {
        state = "stopped";
      } else {
        state = s.ok() ? "completed" : "failed";
        error = s.ok() ? "" : s.ToString();
      }
      e->state = state;
      e->finished = true;
      report = !e->reported_final;
      e->reported_final = true;
    }
    Log(s.ok() || state == "stopped" ? LogLevel::kInfo : LogLevel::kError, "service",
        "run " + state,
        {F("stream", e->stream), F("run", e->run), F("service", options.id), F("error", error)});
    if (report) PublishState(e->run, e->stream, state, error, e->task->Report());
  }

  void HandleRunOp(natsMsg* msg, const json& req) {
    const std::string op = req.value("op", "");
    const std::string run = req.value("run", "");
    Entry* e = nullptr;
    {
      std::lock_guard<std::mutex> l(mu);
      auto it = tasks.find(run);
      if (it == tasks.end() || it->second->finished) return;  // not ours: no answer
      e = it->second.get();
    }
    if (op == "stop") {
      const bool force = req.value("force", false);
      bool report = false;
      {
        std::lock_guard<std::mutex> l(mu);
        e->state = "stopping";
        if (force && !e->reported_final) {
          e->reported_final = true;
          report = true;
        }
      }
      e->task->Stop(force);
      Log(LogLevel::kInfo, "service", force ? "run force-stopped" : "run stopping",
          {F("stream", e->stream), F("run", run), F("service", options.id)});
      if (report) PublishState(run, e->stream, "stopped", "");
      return Reply(msg, {{"ok", true}, {"service", options.id}});
    }
    if (op == "pause" || op == "resume") {
      Status s = op == "pause" ? e->task->Pause() : e->task->Resume();
      if (!s.ok()) return Reply(msg, {{"ok", false}, {"error", s.message()}});
      PublishState(run, e->stream, op == "pause" ? "paused" : "running", "");
      return Reply(msg, {{"ok", true}, {"service", options.id}});
    }
    Reply(msg, {{"ok", false}, {"error", "unknown operation '" + op + "'"}});
  }

  static void OnMsg(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
    auto* self = static_cast<Impl*>(closure);
    std::string data(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg)));
    json req = json::parse(data, nullptr, false);
    if (!req.is_discarded() && req.is_object()) {
      if (req.value("op", "") == "start") {
        self->HandleStart(msg, req);
      } else {
        self->HandleRunOp(msg, req);
      }
    }
    natsMsg_Destroy(msg);
  }

  void PublishHeartbeat(const json& runs) {
    json hb = {{"kind", options.kind},
               {"id", options.id},
               {"host", host},
               {"pid", getpid()},
               {"version", options.version},
               {"startedAt", started_at},
               {"ts", store::NowMillis()},
               {"sealKey", keys.public_key()},
               {"runs", runs}};
    (void)nats->PublishCore(bus::SubjectHeartbeat(options.id), hb.dump());
  }

  void HeartbeatLoop() {
    std::unique_lock<std::mutex> l(mu);
    while (!shutting_down) {
      json runs = json::array();
      for (auto& [id, e] : tasks) {
        if (e->finished) continue;
        runs.push_back({{"run", id}, {"stream", e->stream}, {"state", e->state}});
      }
      l.unlock();
      PublishHeartbeat(runs);
      l.lock();
      cv.wait_for(l, options.heartbeat_interval, [this] { return shutting_down; });
    }
  }
};

ServiceAgent::ServiceAgent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ServiceAgent::~ServiceAgent() { impl_->Shutdown(); }
const std::string& ServiceAgent::id() const { return impl_->options.id; }
void ServiceAgent::Shutdown() { impl_->Shutdown(); }

Result<std::unique_ptr<ServiceAgent>> ServiceAgent::Start(bus::NatsConnection* nats,
                                                          AgentOptions options) {
  if (options.kind != "reader" && options.kind != "writer") {
    return Status::InvalidArgument("service kind must be reader or writer, not '" + options.kind +
                                   "'");
  }
  auto impl = std::make_unique<Impl>();
  impl->nats = nats;
  impl->host = HostName();
  if (options.id.empty()) {
    options.id = options.kind + "-" + impl->host + "-" + std::to_string(getpid());
  }
  for (char& c : options.id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  impl->options = std::move(options);
  impl->started_at = store::NowMillis();
  auto sub = [&](const std::string& subject, const char* queue) -> Status {
    natsSubscription* s = nullptr;
    natsStatus st = queue ? natsConnection_QueueSubscribe(&s, nats->raw(), subject.c_str(), queue,
                                                          &Impl::OnMsg, impl.get())
                          : natsConnection_Subscribe(&s, nats->raw(), subject.c_str(), &Impl::OnMsg,
                                                     impl.get());
    if (st != NATS_OK) {
      return Status::Unavailable("subscribing to " + subject + ": " + natsStatus_GetText(st));
    }
    impl->subs.push_back(s);
    return Status::Ok();
  };
  const std::string kind = impl->options.kind;
  // Announce the service (and its sealing key) before it can receive a start.
  impl->PublishHeartbeat(json::array());
  DBS_RETURN_IF_ERROR(nats->Flush(std::chrono::seconds(5)));
  DBS_RETURN_IF_ERROR(sub(bus::SubjectControl(kind), kind == "reader" ? "readers" : nullptr));
  DBS_RETURN_IF_ERROR(sub(bus::SubjectControl("run"), nullptr));
  DBS_RETURN_IF_ERROR(nats->Flush(std::chrono::seconds(5)));
  Impl* ip = impl.get();
  impl->heartbeat = std::thread([ip] { ip->HeartbeatLoop(); });
  Log(LogLevel::kInfo, "service", "service agent started",
      {F("kind", kind), F("service", ip->options.id)});
  return std::unique_ptr<ServiceAgent>(new ServiceAgent(std::move(impl)));
}

}  // namespace dbs::service

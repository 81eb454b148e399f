#include "run/local_run.h"

#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "bus/embedded_nats.h"
#include "bus/jetstream.h"
#include "bus/protocol.h"
#include "core/logging.h"
#include "reader/stream_reader.h"
#include "security/data_cipher.h"
#include "writer/load_writer.h"

namespace dbs {

using nlohmann::json;

namespace {

// Aggregates progress samples from the reader and every writer.
class ProgressBoard {
 public:
  void OnSample(std::string_view data) {
    json j = json::parse(data, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return;
    std::lock_guard<std::mutex> l(mu_);
    const std::string kind = j.value("kind", "");
    if (kind == "read" && j["rows"].is_array()) {
      for (size_t i = 0; i < j["rows"].size(); ++i) {
        Grow(i + 1);
        tables_[i].read = j["rows"][i].get<uint64_t>();
      }
      bytes_ = j.value("bytes", bytes_);
    } else if (kind == "cdc-read") {
      cdc_.read = j.value("changes", cdc_.read);
      cdc_.position = j.value("position", cdc_.position);
    } else if (kind == "cdc-write") {
      cdc_.applied += j.value("changes", uint64_t{0});
      cdc_.lag_ms = j.value("lag_ms", cdc_.lag_ms);
    } else if (kind == "write" && j["rows"].is_object()) {
      for (const auto& [k, v] : j["rows"].items()) {
        size_t i = static_cast<size_t>(std::atoi(k.c_str()));
        if (i > 100000) continue;
        Grow(i + 1);
        tables_[i].written += v.get<uint64_t>();
      }
    }
  }
  void SetPlan(std::vector<TableProgress> plan) {
    std::lock_guard<std::mutex> l(mu_);
    Grow(plan.size());
    for (size_t i = 0; i < plan.size(); ++i) {
      tables_[i].name = plan[i].name;
      tables_[i].estimate = plan[i].estimate;
    }
  }
  CdcProgress Cdc() {
    std::lock_guard<std::mutex> l(mu_);
    return cdc_;
  }
  std::vector<TableProgress> Snapshot(uint64_t* bytes) {
    std::lock_guard<std::mutex> l(mu_);
    if (bytes) *bytes = bytes_;
    return tables_;
  }

 private:
  void Grow(size_t n) {
    if (tables_.size() < n) tables_.resize(n);
  }
  std::mutex mu_;
  std::vector<TableProgress> tables_;
  uint64_t bytes_ = 0;
  CdcProgress cdc_;
};

// A connection of `role`: the embedded server's user for it, or the configured credentials.
Result<std::unique_ptr<bus::NatsConnection>> Connect(const bus::EmbeddedNats* embedded,
                                                     const LocalRunOptions& options,
                                                     bus::NatsRole role, const std::string& name) {
  bus::NatsOptions o = options.nats_client;
  if (embedded != nullptr) {
    o = embedded->ClientOptions(role, name);
  } else {
    o.url = options.nats_url;
    o.name = name;
  }
  o.request_timeout = std::chrono::seconds(30);
  return bus::NatsConnection::Connect(o);
}

}  // namespace

std::string RunSummary::Mismatches() const {
  std::string bad;
  for (const TableVerdict& v : verdicts) {
    if (!v.match()) bad += (bad.empty() ? "" : "; ") + v.Describe();
  }
  return bad;
}

Result<RunSummary> RunLocal(const StreamConfig& stream_config, const LocalRunOptions& options,
                            const ProgressFn& on_progress) {
  // Reader and writers share this process: with busEncryption and no key, one for this run.
  StreamConfig config = stream_config;
  if (config.bus_encryption && config.bus_key.empty()) {
    config.bus_key = security::DataCipher::NewKeyHex();
  }
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<bus::EmbeddedNats> embedded;
  std::string url = options.nats_url;
  std::string store;
  // Stops the embedded server and removes its store on every way out of this function.
  struct StoreCleanup {
    std::unique_ptr<bus::EmbeddedNats>* server;
    std::string* dir;
    ~StoreCleanup() {
      // The store goes with it: no clean shutdown to wait for.
      if (*server) (*server)->Stop(/*discard=*/!dir->empty());
      if (!dir->empty()) {
        std::error_code ec;
        std::filesystem::remove_all(*dir, ec);
      }
    }
  } cleanup{&embedded, &store};
  if (url.empty()) {
    store = options.data_dir + "/run-" + config.name + "-" + std::to_string(getpid());
    bus::EmbeddedNatsOptions eo;
    eo.data_dir = store;
    DBS_ASSIGN_OR_RETURN(embedded, bus::EmbeddedNats::Start(eo));
    url = embedded->url();
  }
  DBS_ASSIGN_OR_RETURN(auto reader_conn, Connect(embedded.get(), options, bus::NatsRole::kReader,
                                                 "dbstreams-reader"));
  DBS_ASSIGN_OR_RETURN(auto watch_conn,
                       Connect(embedded.get(), options, bus::NatsRole::kApi, "dbstreams-run"));
  ProgressBoard board;
  DBS_ASSIGN_OR_RETURN(
      auto sub, bus::Subscription::Create(
                    watch_conn.get(), bus::SubjectProgress(config.name),
                    [&board](std::string_view, std::string_view data) { board.OnSample(data); }));

  // Wakes the watch loop below as soon as the reader or a writer ends, rather than at its next
  // progress tick.
  std::mutex ended_mu;
  std::condition_variable ended_cv;
  auto ended = [&] {
    { std::lock_guard<std::mutex> l(ended_mu); }
    ended_cv.notify_all();
  };
  StreamReader reader(config, reader_conn.get());
  Result<StreamReaderResult> reader_result = Status::Internal("reader did not run");
  std::atomic<bool> reader_done{false};
  std::thread reader_thread([&] {
    reader_result = reader.Run();
    reader_done.store(true);
    ended();
  });

  const int n = std::max(1, options.writers);
  std::vector<std::unique_ptr<bus::NatsConnection>> writer_conns;
  std::vector<std::unique_ptr<LoadWriter>> writers;
  std::vector<Status> writer_status(static_cast<size_t>(n));
  std::vector<std::thread> writer_threads;
  std::atomic<int> writers_running{n};
  Status setup;
  for (int i = 0; i < n && setup.ok(); ++i) {
    auto c = Connect(embedded.get(), options, bus::NatsRole::kWriter,
                     "dbstreams-writer-" + std::to_string(i));
    if (!c.ok()) {
      setup = c.status();
      break;
    }
    writer_conns.push_back(std::move(c).value());
    WriterOptions wo;
    wo.writer_id = "writer-" + std::to_string(i);
    writers.push_back(std::make_unique<LoadWriter>(config, writer_conns.back().get(), wo));
  }
  if (setup.ok()) {
    for (int i = 0; i < n; ++i) {
      writer_threads.emplace_back([&, i] {
        writer_status[static_cast<size_t>(i)] = writers[static_cast<size_t>(i)]->Run();
        writers_running.fetch_sub(1);
        ended();
      });
    }
  } else {
    writers_running.store(0);
  }

  // Watch: progress, the plan (for names and estimates), and failures of either side.
  bool have_plan = false;
  bool drained = false;
  bool reader_seen_done = false;
  while (writers_running.load() > 0) {
    {
      std::unique_lock<std::mutex> l(ended_mu);
      ended_cv.wait_for(l, std::chrono::milliseconds(200), [&] {
        return writers_running.load() == 0 || (reader_done.load() && !reader_seen_done);
      });
    }
    reader_seen_done = reader_seen_done || reader_done.load();
    if (!have_plan) {
      auto plan = reader_conn->GetLastMessage(bus::JetStreamName(config.name),
                                              bus::SubjectPlan(config.name));
      if (plan.ok()) {
        json p = json::parse(*plan, nullptr, false);
        std::vector<TableProgress> tp;
        if (!p.is_discarded() && p.contains("tables")) {
          for (const json& t : p["tables"]) {
            TableProgress x;
            x.name = t.value("name", "");
            auto meta =
                reader_conn->GetLastMessage(bus::JetStreamName(config.name),
                                            bus::SubjectMeta(config.name, t.value("index", 0)));
            if (meta.ok()) {
              json m = json::parse(*meta, nullptr, false);
              if (!m.is_discarded() && m.contains("table")) {
                x.estimate = m["table"].value("estimatedRows", uint64_t{0});
              }
            }
            tp.push_back(std::move(x));
          }
        }
        board.SetPlan(std::move(tp));
        have_plan = true;
      }
    }
    if (reader_done.load() && !reader_result.ok()) {
      for (auto& w : writers) w->Stop();
    }
    if (!drained && options.drain_when && options.drain_when()) {
      drained = true;
      reader.RequestDrain();
    }
    if (config.mode != StreamMode::kLoad && options.on_cdc_progress) {
      options.on_cdc_progress(board.Cdc());
    }
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (on_progress) on_progress(board.Snapshot(nullptr), elapsed);
  }
  for (auto& t : writer_threads) t.join();
  const bool reader_stopped = !reader_done.load();  // by us, since the writers ended
  if (reader_stopped) reader.Stop();
  reader_thread.join();
  sub.reset();

  // A bus that stopped answering: the embedded server's own log says why (it is removed with
  // the store when this function returns).
  auto with_bus_log = [&](Status s) {
    if (!embedded || (s.code() != StatusCode::kTimeout && s.code() != StatusCode::kUnavailable)) {
      return s;
    }
    return Status(s.code(), s.retryable() ? Retry::kRetry : Retry::kFail,
                  s.message() + "\n" + embedded->Diagnosis());
  };
  if (!setup.ok()) return with_bus_log(setup);
  // The writers ended before the reader, which was then stopped: a writer's error is the
  // run's (the reader's is only "stopped").
  if (reader_stopped) {
    for (const Status& s : writer_status) {
      if (!s.ok()) return with_bus_log(writers.front()->Abandon(s));
    }
  }
  if (!reader_result.ok()) {
    // The writers were stopped: leave the target as it was before the run.
    Status s = reader_result.status();
    if (!writers.empty()) s = writers.front()->Abandon(s);
    return with_bus_log(s);
  }
  for (const Status& s : writer_status) {
    if (!s.ok()) return with_bus_log(s);
  }
  RunSummary summary;
  summary.tables = board.Snapshot(&summary.bytes);
  // The final counts come from the reader itself (progress samples may lag).
  const ReaderStats& load = reader_result->load;
  for (size_t i = 0; i < summary.tables.size() && i < load.rows.size(); ++i) {
    summary.tables[i].read = load.rows[i];
  }
  summary.bytes = load.bytes;
  summary.skipped = load.skipped;
  summary.cdc = board.Cdc();
  summary.cdc.read = reader_result->cdc.changes;
  summary.cdc.position = reader_result->cdc.position.value;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Every writer saw the same swap; the first one that planned the run reports it.
  for (const auto& w : writers) {
    nlohmann::json report = w->report();
    if (report.is_null()) continue;
    auto plan = RunPlanFromJson(report);
    if (plan.ok()) summary.report = std::move(plan).value();
    break;
  }
  if (config.verify) {
    DBS_ASSIGN_OR_RETURN(summary.verdicts, VerifyStream(config));
  }
  return summary;
}

}  // namespace dbs

#include "service/stream_task.h"

#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/logging.h"
#include "reader/stream_reader.h"
#include "verify/checksum.h"
#include "writer/load_writer.h"

namespace dbs::service {

namespace {

class LoadReaderTask : public StreamTask {
 public:
  LoadReaderTask(const StreamConfig& config, std::string run_id, bus::NatsConnection* nats)
      : config_(config), run_id_(std::move(run_id)), reader_(config_, nats) {}
  Status Run() override {
    auto stats = reader_.Run();
    if (!stats.ok()) return stats.status();
    uint64_t rows = 0;
    for (uint64_t r : stats->load.rows) rows += r;
    Log(LogLevel::kInfo, "reader", "stream published",
        {F("stream", config_.name), F("run", run_id_), F("rows", rows),
         F("bytes", stats->load.bytes), F("changes", stats->cdc.changes)});
    // The rows the file source left out (malformedRows skip), in the final state event.
    const ReaderStats& load = stats->load;
    nlohmann::json skipped = nlohmann::json::object();
    for (size_t i = 0; i < load.skipped.size() && i < load.tables.size(); ++i) {
      if (load.skipped[i].count > 0) {
        skipped[load.tables[i].schema.QualifiedName()] = ToJson(load.skipped[i]);
      }
    }
    if (!skipped.empty()) report_ = {{"skipped", std::move(skipped)}};
    return Status::Ok();
  }
  nlohmann::json Report() const override { return report_; }
  // CDC modes: a stop drains (everything committed at the source until now is published and
  // applied); a forced stop ends at once. The change stream resumes on the next start.
  void Stop(bool force) override {
    if (config_.mode != StreamMode::kLoad && !force) {
      reader_.RequestDrain();
    } else {
      reader_.Stop();
    }
  }
  // Pausing stops reading the source (a load holds its snapshot; a change stream keeps its
  // position); the writers apply what was published.
  Status Pause() override {
    reader_.Pause();
    return Status::Ok();
  }
  Status Resume() override {
    reader_.Resume();
    return Status::Ok();
  }

 private:
  const StreamConfig config_;  // StreamReader keeps a reference to it
  std::string run_id_;
  StreamReader reader_;
  nlohmann::json report_;
};

class LoadWriterTask : public StreamTask {
 public:
  LoadWriterTask(const StreamConfig& config, bus::NatsConnection* nats, WriterOptions options)
      : config_(config), writer_(config_, nats, std::move(options)) {}
  // A load with `verify` on (the default) is verified by the writer that completed it, before
  // the run reports completed: counts and per-column checksums of every table on both sides
  // (verify/checksum.h). A difference fails the run naming table, columns and a sample row.
  //
  // A run stopped (by the API, or because its reader failed) before its load was swapped in is
  // abandoned in the target like a failed one: its shadow tables go (or stay with keepPartial)
  // and the target keeps what it had. After the swap, abandoning changes nothing.
  Status Run() override {
    Status ran = writer_.Run();
    if (ran.code() == StatusCode::kCancelled && !writer_.load_finished()) {
      return writer_.Abandon(Status::Cancelled("the run was stopped before its load was complete"));
    }
    DBS_RETURN_IF_ERROR(ran);
    // What became of each table and schema object: every writer reads the same from the target.
    if (nlohmann::json r = writer_.report(); !r.is_null()) report_["report"] = std::move(r);
    if (config_.mode != StreamMode::kLoad || !config_.verify || !writer_.won_completion()) {
      return Status::Ok();
    }
    if (const char* pause = std::getenv("DBS_TEST_VERIFY_PAUSE_SECONDS");
        pause != nullptr && *pause != '\0') {
      Log(LogLevel::kWarn, "writer", "test hook: pausing before the verification",
          {F("seconds", pause)});
      std::this_thread::sleep_for(std::chrono::seconds(std::atoi(pause)));
    }
    DBS_ASSIGN_OR_RETURN(std::vector<TableVerdict> verdicts, VerifyStream(config_));
    nlohmann::json tables = nlohmann::json::array();
    std::string bad;
    for (const TableVerdict& v : verdicts) {
      tables.push_back({{"source", v.source_table},
                        {"target", v.target_table},
                        {"rows", v.source.rows},
                        {"match", v.match()}});
      if (!v.match()) bad += (bad.empty() ? "" : "; ") + v.Describe();
    }
    report_["verification"] = {{"ok", bad.empty()}, {"tables", tables}};
    if (!bad.empty()) {
      return Status::Aborted("verification failed: " + bad).WithRetry(Retry::kFail);
    }
    Log(LogLevel::kInfo, "writer", "verified",
        {F("stream", config_.name), F("tables", verdicts.size())});
    return Status::Ok();
  }
  nlohmann::json Report() const override { return report_; }
  // CDC modes: a stop lets the writer finish by itself once the reader's drain marker is
  // applied; a forced stop ends at once.
  void Stop(bool force) override {
    if (config_.mode == StreamMode::kLoad || force) writer_.Stop();
  }
  // Load phase: the writer stops fetching too. CDC: it keeps applying what was published.
  Status Pause() override {
    writer_.Pause();
    return Status::Ok();
  }
  Status Resume() override {
    writer_.Resume();
    return Status::Ok();
  }

 private:
  const StreamConfig config_;  // LoadWriter keeps a reference to it
  LoadWriter writer_;
  nlohmann::json report_;
};

}  // namespace

Result<std::unique_ptr<StreamTask>> MakeReaderTask(const StreamConfig& config, std::string run_id,
                                                   bus::NatsConnection* nats) {
  return std::unique_ptr<StreamTask>(new LoadReaderTask(config, std::move(run_id), nats));
}

Result<std::unique_ptr<StreamTask>> MakeWriterTask(const StreamConfig& config, std::string run_id,
                                                   bus::NatsConnection* nats,
                                                   std::string writer_id) {
  WriterOptions o;
  o.writer_id = std::move(writer_id);
  (void)run_id;  // the load writer scopes its checkpoints by the reader's plan id
  return std::unique_ptr<StreamTask>(new LoadWriterTask(config, nats, std::move(o)));
}

}  // namespace dbs::service

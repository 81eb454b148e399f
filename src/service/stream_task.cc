#include "service/stream_task.h"

#include "core/logging.h"
#include "reader/load_reader.h"
#include "writer/load_writer.h"

namespace dbs::service {

namespace {

Status PauseUnsupported(const StreamConfig& c) {
  return Status::Unsupported("pause/resume is not supported for mode '" +
                             std::string(StreamModeName(c.mode)) +
                             "' yet: the load reader and writer have no pause point; stop the "
                             "run and start it again instead");
}

Status CheckMode(const StreamConfig& c) {
  if (c.mode != StreamMode::kLoad) {
    return Status::Unsupported("stream " + c.name + ": mode '" +
                               std::string(StreamModeName(c.mode)) +
                               "' cannot be run by this build's services yet (only 'load')");
  }
  return Status::Ok();
}

class LoadReaderTask : public StreamTask {
 public:
  LoadReaderTask(const StreamConfig& config, std::string run_id, bus::NatsConnection* nats)
      : config_(config), run_id_(std::move(run_id)), reader_(config_, nats) {}
  Status Run() override {
    auto stats = reader_.Run();
    if (!stats.ok()) return stats.status();
    uint64_t rows = 0;
    for (uint64_t r : stats->rows) rows += r;
    Log(LogLevel::kInfo, "reader", "load published",
        {F("stream", config_.name), F("run", run_id_), F("rows", rows), F("bytes", stats->bytes)});
    return Status::Ok();
  }
  void Stop(bool) override { reader_.Stop(); }
  Status Pause() override { return PauseUnsupported(config_); }
  Status Resume() override { return PauseUnsupported(config_); }

 private:
  const StreamConfig config_;  // LoadReader keeps a reference to it
  std::string run_id_;
  LoadReader reader_;
};

class LoadWriterTask : public StreamTask {
 public:
  LoadWriterTask(const StreamConfig& config, bus::NatsConnection* nats, WriterOptions options)
      : config_(config), writer_(config_, nats, std::move(options)) {}
  Status Run() override { return writer_.Run(); }
  void Stop(bool) override { writer_.Stop(); }
  Status Pause() override { return PauseUnsupported(config_); }
  Status Resume() override { return PauseUnsupported(config_); }

 private:
  const StreamConfig config_;  // LoadWriter keeps a reference to it
  LoadWriter writer_;
};

}  // namespace

Result<std::unique_ptr<StreamTask>> MakeReaderTask(const StreamConfig& config, std::string run_id,
                                                   bus::NatsConnection* nats) {
  DBS_RETURN_IF_ERROR(CheckMode(config));
  return std::unique_ptr<StreamTask>(new LoadReaderTask(config, std::move(run_id), nats));
}

Result<std::unique_ptr<StreamTask>> MakeWriterTask(const StreamConfig& config, std::string run_id,
                                                   bus::NatsConnection* nats,
                                                   std::string writer_id) {
  DBS_RETURN_IF_ERROR(CheckMode(config));
  WriterOptions o;
  o.writer_id = std::move(writer_id);
  (void)run_id;  // the load writer scopes its checkpoints by the reader's plan id
  return std::unique_ptr<StreamTask>(new LoadWriterTask(config, nats, std::move(o)));
}

}  // namespace dbs::service

#include "reader/stream_reader.h"

#include <random>

#include <nlohmann/json.hpp>

#include "bus/protocol.h"
#include "bus/run_state.h"
#include "core/change_codec.h"
#include "core/logging.h"
#include "reader/cdc_reader.h"

namespace dbs {
namespace {

using json = nlohmann::json;

}  // namespace

StreamReader::StreamReader(const StreamConfig& config, bus::NatsConnection* nats)
    : config_(config), nats_(nats) {}

void StreamReader::Stop() {
  stop_.store(true);
  std::lock_guard<std::mutex> l(mu_);
  if (load_) load_->Stop();
  if (cdc_) cdc_->Stop();
}

void StreamReader::Pause() {
  paused_.store(true);
  std::lock_guard<std::mutex> l(mu_);
  if (load_) load_->Pause();
  if (cdc_) cdc_->Pause();
}

void StreamReader::Resume() {
  paused_.store(false);
  std::lock_guard<std::mutex> l(mu_);
  if (load_) load_->Resume();
  if (cdc_) cdc_->Resume();
}

void StreamReader::RequestDrain() {
  drain_.store(true);
  std::lock_guard<std::mutex> l(mu_);
  if (cdc_) cdc_->RequestDrain();
}

Result<StreamReaderResult> StreamReader::Run() {
  StreamReaderResult result;
  if (config_.mode == StreamMode::kLoad) {
    {
      std::lock_guard<std::mutex> l(mu_);
      load_ = std::make_unique<LoadReader>(config_, nats_);
      if (stop_.load()) load_->Stop();
      if (paused_.load()) load_->Pause();
    }
    DBS_ASSIGN_OR_RETURN(result.load, load_->Run());
    return result;
  }
  for (const TableSelector& t : config_.tables) {
    if (!t.columns.empty() || !t.filter.empty() || !t.query.empty()) {
      return Status::InvalidArgument("tables." + t.pattern +
                                     ": column selection, filters and custom queries apply to "
                                     "mode load only (a change stream carries whole rows)");
    }
  }
  std::vector<PlannedTable> tables;
  SourcePosition start;
  // The run whose load phase finished, if any: this change stream resumes it.
  DBS_ASSIGN_OR_RETURN(auto finished,
                       bus::FinishedLoadPlan(nats_, config_.name, StreamModeName(config_.mode)));
  if (finished) {
    const json& p = *finished;
    for (const json& t : p["tables"]) {
      PlannedTable pt;
      pt.index = t.value("index", 0);
      pt.schema.schema = t.value("schema", "");
      pt.schema.name = t.value("table", "");
      tables.push_back(std::move(pt));
    }
    start.kind = static_cast<SourcePosition::Kind>(p.value("position_kind", 0));
    start.value = p.value("position", "");
    start.file_pos = p.value("position_file", "");
    Log(LogLevel::kInfo, "reader", "load phase already done; resuming the change stream",
        {F("stream", config_.name), F("run", p.value("run", ""))});
  } else {
    LoadReaderOptions lo;
    lo.cdc_snapshot = true;
    lo.read_data = config_.mode == StreamMode::kLoadCdc;
    {
      std::lock_guard<std::mutex> l(mu_);
      load_ = std::make_unique<LoadReader>(config_, nats_, lo);
      if (stop_.load()) load_->Stop();
      if (paused_.load()) load_->Pause();
    }
    DBS_ASSIGN_OR_RETURN(result.load, load_->Run());
    tables = result.load.tables;
    start = result.load.position;
  }
  if (start.empty() && !config_.cdc.start_position.empty()) {
    start.value = config_.cdc.start_position;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    cdc_ = std::make_unique<CdcReader>(config_, nats_);
    if (stop_.load()) cdc_->Stop();
    if (paused_.load()) cdc_->Pause();
    if (drain_.load()) cdc_->RequestDrain();
  }
  // A resumed stream clears an earlier "drained" marker: writers keep applying.
  json marker = {{"done", false}};
  DBS_RETURN_IF_ERROR(nats_->Publish(bus::SubjectCdcDone(config_.name), marker.dump()).status());
  DBS_ASSIGN_OR_RETURN(result.cdc, cdc_->Run(tables, start));
  if (drain_.load() || config_.limits.events > 0 || config_.limits.elapsed.count() > 0) {
    // Finished on purpose (not stopped): tell the writers where the change stream ends.
    std::random_device rd;
    json done = {{"done", true}, {"nonce", std::to_string(rd()) + std::to_string(rd())}};
    auto last = LastPublishedChange(nats_, config_);
    uint64_t seq = last.ok() ? last->seq : 0;
    done["seq"] = seq;
    if (!stop_.load()) {
      DBS_RETURN_IF_ERROR(nats_->Publish(bus::SubjectCdcDone(config_.name), done.dump()).status());
    }
  }
  return result;
}

}  // namespace dbs

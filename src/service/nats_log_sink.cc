#include "service/nats_log_sink.h"

#include <nlohmann/json.hpp>

#include "bus/protocol.h"

namespace dbs::service {

NatsLogSink::NatsLogSink(bus::NatsConnection* nats, std::string service_id,
                         std::string service_kind)
    : nats_(nats),
      subject_(bus::SubjectLogs(service_id)),
      service_id_(std::move(service_id)),
      kind_(std::move(service_kind)) {}

void NatsLogSink::Write(const LogRecord& record) {
  nlohmann::json j = nlohmann::json::parse(LogRecordToJson(record), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;
  j["serviceId"] = service_id_;
  j["kind"] = kind_;
  // Records come from every thread; PublishCore never logs (no recursion into the Logger).
  (void)nats_->PublishCore(subject_,
                           j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace dbs::service

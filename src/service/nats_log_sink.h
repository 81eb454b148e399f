// A LogSink that publishes every record as one JSON line on dbs.logs.<service-id> (core
// NATS). The API subscribes to dbs.logs.> for its SSE log stream and per-run recent logs.
#pragma once

#include <string>

#include "bus/jetstream.h"
#include "core/logging.h"

namespace dbs::service {

class NatsLogSink : public LogSink {
 public:
  // `nats` must outlive the sink (remove the sink from the Logger first).
  NatsLogSink(bus::NatsConnection* nats, std::string service_id, std::string service_kind);
  void Write(const LogRecord& record) override;

 private:
  bus::NatsConnection* nats_;
  std::string subject_;
  std::string service_id_;
  std::string kind_;
};

}  // namespace dbs::service

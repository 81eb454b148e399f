#include "bus/run_state.h"

#include "bus/protocol.h"

namespace dbs::bus {

Result<std::optional<nlohmann::json>> FinishedLoadPlan(NatsConnection* nats,
                                                       const std::string& stream,
                                                       std::string_view mode) {
  using json = nlohmann::json;
  if (mode == "load") return std::optional<json>();  // a load stream always begins a new run
  const std::string js = JetStreamName(stream);
  auto done = nats->GetLastMessage(js, SubjectDone(stream));
  if (!done.ok()) {
    if (done.status().code() == StatusCode::kNotFound) return std::optional<json>();
    return done.status();
  }
  auto plan = nats->GetLastMessage(js, SubjectPlan(stream));
  if (!plan.ok()) {
    if (plan.status().code() == StatusCode::kNotFound) return std::optional<json>();
    return plan.status();
  }
  json p = json::parse(*plan, nullptr, false);
  if (!p.is_object() || !p.contains("tables") || p.value("mode", "") != mode) {
    return std::optional<json>();
  }
  return std::optional<json>(std::move(p));
}

}  // namespace dbs::bus

#include "bus/objects_wire.h"

#include <nlohmann/json.hpp>

#include "bus/protocol.h"

namespace dbs::bus {

using nlohmann::json;

std::string SubjectObjects(const std::string& stream, int part) {
  return "dbs." + stream + ".ctl.objects." + std::to_string(part);
}

Result<int> PublishObjects(NatsConnection* nats, const std::string& stream,
                           const std::vector<SchemaObject>& objects) {
  const size_t limit = static_cast<size_t>(std::max<int64_t>(nats->max_payload() / 4, 16 << 10));
  int parts = 0;
  json batch = json::array();
  size_t bytes = 0;
  auto flush = [&]() -> Status {
    if (batch.empty()) return Status::Ok();
    const std::string text = batch.dump();
    if (text.size() + 1024 > static_cast<size_t>(nats->max_payload())) {
      return Status::ResourceExhausted("the definition of a schema object is " +
                                       std::to_string(text.size()) +
                                       " bytes, over the NATS max_payload: raise max_payload");
    }
    DBS_RETURN_IF_ERROR(nats->Publish(SubjectObjects(stream, parts), text).status());
    ++parts;
    batch = json::array();
    bytes = 0;
    return Status::Ok();
  };
  for (const SchemaObject& o : objects) {
    json j = ToJson(o);
    const size_t size = j.dump().size();
    if (bytes + size > limit) DBS_RETURN_IF_ERROR(flush());
    bytes += size;
    batch.push_back(std::move(j));
  }
  DBS_RETURN_IF_ERROR(flush());
  return parts;
}

Result<std::vector<SchemaObject>> ReadObjects(NatsConnection* nats, const std::string& stream,
                                              int parts) {
  std::vector<SchemaObject> out;
  for (int p = 0; p < parts; ++p) {
    DBS_ASSIGN_OR_RETURN(std::string text,
                         nats->GetLastMessage(JetStreamName(stream), SubjectObjects(stream, p)));
    json j = json::parse(text, nullptr, false);
    if (!j.is_array()) return Status::Corruption("schema objects part " + std::to_string(p));
    for (const json& e : j) {
      DBS_ASSIGN_OR_RETURN(SchemaObject o, ObjectFromJson(e));
      out.push_back(std::move(o));
    }
  }
  return out;
}

}  // namespace dbs::bus

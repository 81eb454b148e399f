// The schema objects of a run on the bus: the reader publishes them before its plan, the
// writers (and dbstreams run) read them back. Several messages when the definitions are large,
// so each stays well under max_payload: dbs.<stream>.ctl.objects.<part>, part 0.. (the plan's
// "objectParts" says how many).
#pragma once

#include <string>
#include <vector>

#include "bus/jetstream.h"
#include "core/result.h"
#include "core/schema.h"

namespace dbs::bus {

std::string SubjectObjects(const std::string& stream, int part);

// Publishes `objects` (JetStream, acknowledged); returns the number of parts.
Result<int> PublishObjects(NatsConnection* nats, const std::string& stream,
                           const std::vector<SchemaObject>& objects);

// Reads the `parts` messages back. Corruption when one does not parse.
Result<std::vector<SchemaObject>> ReadObjects(NatsConnection* nats, const std::string& stream,
                                              int parts);

}  // namespace dbs::bus

// What the bus says about a stream's last run, for the reader and the writers to agree on
// whether a change stream started again continues that run or begins a new one.
//
// Contract: a change stream (modes "cdc" and "load+cdc") started again resumes its last run
// when that run's load phase finished (the reader's "done" marker is on the bus) and the run was
// planned in the same mode; otherwise the reader plans a new run. A load stream always begins a
// new run. Writers started before the reader use FinishedLoadPlan to tell a run that will be
// resumed (join it) from one that has ended (wait for the next).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "bus/jetstream.h"
#include "core/result.h"

namespace dbs::bus {

// The plan of `stream`'s last run when a stream of `mode` (StreamModeName) started again
// resumes it: a change stream's run whose load phase finished, planned in the same mode.
// nullopt when there is none (mode "load", nothing on the bus, no "done" marker, another mode,
// or a plan without tables).
Result<std::optional<nlohmann::json>> FinishedLoadPlan(NatsConnection* nats,
                                                       const std::string& stream,
                                                       std::string_view mode);

}  // namespace dbs::bus

// `dbstreams plan` and POST /api/v1/streams/{id}/plan: what a run of the stream would do,
// without writing anything and without a bus. Reads the source (tables, schema objects, row
// estimates) and the target (which tables exist, what it supports).
#pragma once

#include "config/stream_config.h"
#include "core/result.h"
#include "sinks/run_plan.h"

namespace dbs {

// Errors: the source or target cannot be read, a selector matches nothing, a table's DDL
// cannot be generated (the error a run would fail with).
Result<RunPlan> PlanStream(const StreamConfig& config);

}  // namespace dbs

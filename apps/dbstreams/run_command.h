// `dbstreams run`, `dbstreams plan` and `dbstreams verify`.
#pragma once

#include <string>

namespace dbs::cli {

// Runs a stream to completion with an embedded NATS (or --nats-url); exit code for main().
int RunCommand(int argc, const char* const* argv, const std::string& default_data_dir);
// Prints what a run of a stream would do, without writing anything.
int PlanCommand(int argc, const char* const* argv);
// Compares source and target of a stream by row counts and checksums.
int VerifyCommand(int argc, const char* const* argv);

}  // namespace dbs::cli

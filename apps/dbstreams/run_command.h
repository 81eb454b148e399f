// `dbstreams run` and `dbstreams verify`.
#pragma once

#include <string>

namespace dbs::cli {

// Runs a stream to completion with an embedded NATS (or --nats-url); exit code for main().
int RunCommand(int argc, const char* const* argv, const std::string& default_data_dir);
// Compares source and target of a stream by row counts and checksums.
int VerifyCommand(int argc, const char* const* argv);

}  // namespace dbs::cli

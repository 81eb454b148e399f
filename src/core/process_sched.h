// How the binaries that move data (dbstreams, stream-reader, stream-writer) ask the kernel to
// schedule their threads.
//
// Why: during a load every core is busy with the database servers' backends (the source's
// COPY or SELECT, the target's COPY or INSERT) and with dbstreams' own threads (reader,
// writers, the bus client's, the embedded nats-server's). dbstreams' threads wake thousands of
// times a second, each for a short burst: a bus message, a socket read. Under the kernel's
// default policy a waking thread may preempt whatever runs on its core, which is usually a
// database backend in the middle of its work: in a PostgreSQL → PostgreSQL load of 2M rows the
// source backend was preempted about 25,000 times, against about 800 times when psql reads the
// same COPY. SCHED_BATCH keeps dbstreams' share of the CPU (same nice value, same weight) but
// its wakeups wait for the running task's time slice instead of cutting it short. Measured:
// docs/benchmarks.md, "2026-12-08".
//
// Contract:
//  - TuneProcessScheduling() is called first thing in main(), before any thread starts. It
//    puts the calling thread in SCHED_BATCH; the threads and child processes created after it
//    (the embedded nats-server) inherit the policy.
//  - The environment variable DBS_SCHED_POLICY chooses: "batch" (or unset or empty) for
//    SCHED_BATCH, "normal" for the kernel's default (SCHED_OTHER). Any other value is an
//    InvalidArgument error naming the variable and its accepted values; the policy is then
//    left as it was.
//  - A kernel or sandbox that refuses the change (a seccomp profile, say) is not an error: the
//    process keeps the policy it has and runs as before.
#pragma once

#include "core/config.h"
#include "core/status.h"

namespace dbs {

Status TuneProcessScheduling(const EnvLookup& env = SystemEnv);

}  // namespace dbs

// How the process's C allocator (glibc malloc) keeps memory it has freed, for the binaries
// that move data (dbstreams, stream-reader, stream-writer, stream-api).
//
// Why: rows pass through buffers of a few hundred KB (bundles, bus messages, their
// compressed forms) that are freed and allocated again thousands of times a run. glibc's
// defaults give such buffers back to the kernel (mmap/munmap above a threshold that moves,
// and heap trimming with madvise), so each new buffer is a fresh mapping whose every page
// faults on first touch; on a paravirtualized machine a page fault costs several
// microseconds. Worse, the embedded DuckDB calls malloc_trim(0) whenever one of its
// databases closes (a file target opens one per part file, a file source one per chunk),
// and malloc_trim(0) drops every free page of every thread's heap, the bus buffers of the
// other threads included. Measured on PostgreSQL → Parquet: docs/benchmarks.md, "2026-12-07,
// late night".
//
// Contract:
//  - TuneProcessMemory(), called first thing in main(), fixes glibc's thresholds: blocks of
//    up to 16 MiB come from the heap and are reused; a heap gives back its free top only
//    beyond 64 MiB. Peak RSS is unchanged (freed memory is reused, not added to); a process
//    keeps up to that much of its peak after a burst instead of returning it at once.
//  - An executable that calls TuneProcessMemory() links this file, and with it a malloc_trim()
//    that replaces glibc's for the whole process (shared libraries included): it does nothing
//    and returns 0 ("no memory released"), which the function's contract allows. Executables
//    that do not call it (the tests) keep glibc's.
#pragma once

namespace dbs {

void TuneProcessMemory();

}  // namespace dbs

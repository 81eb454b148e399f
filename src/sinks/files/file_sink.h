// File targets: every table becomes a folder of CSV, JSONL or Parquet files under the
// connection's root, written through the embedded DuckDB (sources/files/duck.h).
//
// Contract (the Sink contract, for files; docs/delivery.md "File targets" explains it):
//  - Apply() streams each table's new bundles into an open part file (sinks/files/part_stream.h),
//    in the final format, under a temporary name in the run's staging folder
//    (<root>/.dbs/runs/<stream.run>/<table>/); the sink defers commits (Sink::DefersCommit). A
//    part is committed before a bundle would take it past rowsPerFile, once it reaches it, and
//    at CommitStaged(): under a per-table lock (flock, shared by all writers of the host) it is
//    renamed to seg-<first bundle id>.<ext> and an `.ids` file listing its bundle ids, rows,
//    bytes and SHA-256 is written (the commit point). Bundle ids a committed segment lists are
//    skipped (settled as committed at once); a part holding one that another writer committed
//    while it was open is dropped whole (its ids settled as dropped). Files without an `.ids`
//    file (a writer killed in between) are ignored.
//  - FinishStream() (under the root's lock; idempotent, any writer) links each table's
//    segments, in the order of their first bundles, into the table folder as part-NNNNN files
//    (a copy + rename where links fail), then writes `_manifest.json` (tmp + rename): the
//    manifest is the commit point. A table whose manifest already names this run is done.
//    Until then no file of the run is in a table folder.
//  - Write modes: append (default) keeps the files the previous manifest lists and numbers the
//    new ones after them; truncate_and_load and drop_and_recreate replace them (the old files
//    are removed after the new manifest is in place). fail_if_exists fails on a folder with a
//    manifest; validate_existing needs one.
//  - AbandonStream() removes the run's staging folder (kept with keepPartial) and marks the run
//    failed; table folders are untouched unless the run had already committed them.
//  - CDC: each table's changes become change files in <table>/_changes/, with the change
//    columns first (sinks/files/changes.h has the layout and the delivery contract). S3
//    targets do not take changes yet (Unsupported when the run starts).
#pragma once

#include <memory>

#include "config/connection.h"
#include "core/result.h"
#include "sinks/sink.h"

namespace dbs {

Result<std::unique_ptr<Sink>> OpenFileSink(const ConnectionConfig& config,
                                           const SinkOptions& options);

}  // namespace dbs

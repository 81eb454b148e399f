// File targets: every table becomes a folder of CSV, JSONL or Parquet files under the
// connection's root, written through the embedded DuckDB (sources/files/duck.h).
//
// Contract (the Sink contract, for files; docs/delivery.md "File targets" explains it):
//  - Apply() stages each batch's new bundles of a table as ONE Parquet segment in the run's
//    staging folder (<root>/.dbs/<stream.run>/<table>/), named after its first bundle id, and
//    commits it by renaming a `.ids` file that lists the bundle ids it holds. Under a per-table
//    lock (flock, shared by all writers of the host), bundle ids already listed by a committed
//    segment are skipped: a redelivered bundle is written once. A segment without its `.ids`
//    file (a writer killed in between) is ignored and overwritten.
//  - FinishStream() (under the root's lock; idempotent, any writer) turns each table's
//    segments, in bundle order, into part-NNNNN files of at most rowsPerFile rows, each
//    written under a temporary name and renamed, then writes `_manifest.json` (tmp + rename):
//    the manifest is the commit point. A table whose manifest already names this run is
//    done. Until then no file of the run is in a table folder.
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

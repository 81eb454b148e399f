// File targets in an S3-compatible bucket (s3:// connections): the layout, formats and
// manifests of the local file target (file_sink.h), with what S3 offers instead of renames
// and locks. docs/delivery.md, "File targets on S3", explains it.
//
// Contract:
//  - Apply() stages each batch's new bundles of a table as ONE Parquet segment object under
//    .dbs/runs/<stream.run>/<table>/seg-<first bundle id>-<writer>.parquet, then commits it
//    with a `.ids` object that lists its bundle ids and their row counts. Bundle ids that a
//    committed segment lists are skipped. A segment without its `.ids` (a writer killed in
//    between) is never read. S3 has no locks: two writers that stage the same bundle at once
//    (a redelivery while the first is still writing) both commit it, and the finish keeps the
//    rows of its first segment in bundle order only (by Parquet row number).
//  - FinishStream() (any writer, idempotent, without a lock) writes each table's part files of
//    rowsPerFile rows, in bundle order, from local copies of the segments (a window of the
//    segments one part reads), uploads them (multipart when large), then PUTs `_manifest.json`:
//    the commit point. Writers that finish at the same time write the same bytes (one DuckDB
//    thread, the same rows in the same order) under the same names. Parts no manifest lists
//    are removed after the commit.
//  - Write and schema policies as for local file targets; AbandonStream() writes the failed
//    marker .dbs/failed/<stream.run> and removes the staging (kept with keepPartial).
//  - Memory: one bundle batch in DuckDB and one S3 part per upload; disk: the segments and
//    the part file of the part being written, in a private spill folder.
//  - Changes (cdc, load+cdc) become change files as on a local folder (changes.h), with the
//    partition checkpoint in SinkOptions::commit_log (the run's JetStream stream) replaced by
//    compare-and-set; without a commit log PrepareRun refuses CDC runs (Unsupported) before
//    anything is written.
#pragma once

#include <memory>

#include "config/connection.h"
#include "core/result.h"
#include "sinks/sink.h"

namespace dbs {

Result<std::unique_ptr<Sink>> OpenS3FileSink(const ConnectionConfig& config,
                                             const SinkOptions& options);

}  // namespace dbs

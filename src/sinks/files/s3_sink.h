// File targets in an S3-compatible bucket (s3:// connections): the layout, formats and
// manifests of the local file target (file_sink.h), with what S3 offers instead of renames
// and locks. docs/delivery.md, "File targets on S3", explains it.
//
// Contract:
//  - Loads defer their commits (Sink::DefersCommit), as on a local folder: the shared stager
//    (part_stager.h) streams a table's bundles into a part file in a private spill folder. A
//    commit uploads the completed file as .dbs/runs/<stream.run>/<table>/seg-<first bundle
//    id>-<writer>.<ext>, then writes its `.ids` object (bundle ids, their row counts, rows,
//    bytes, SHA-256): the commit point. A segment without its `.ids` (a writer killed in
//    between) is never read. Bundle ids that a committed segment lists are skipped, and a part
//    holding one is dropped (checked before staging and before committing). S3 has no locks:
//    two writers that commit the same bundle at the same moment both keep it, and the finish
//    keeps its first copy in bundle order.
//  - FinishStream() (any writer, idempotent, without a lock) makes each committed segment, in
//    bundle order, a part file by a server-side copy; a segment that shares bundles with an
//    earlier one is written again without their rows (located by the row counts in `.ids`).
//    Then it PUTs `_manifest.json`: the commit point. Writers that finish at the same time
//    write the same bytes under the same names. Parts no manifest lists are removed after the
//    commit.
//  - Write and schema policies as for local file targets; AbandonStream() writes the failed
//    marker .dbs/failed/<stream.run> and removes the staging (kept with keepPartial).
//  - Memory: about one row group per open part in DuckDB and one S3 part per upload; disk: the
//    open parts, in a private spill folder.
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

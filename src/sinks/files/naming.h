// What the local and the S3 file targets share: bundle ids as sort keys and file names, the
// numbering of part files, the DuckDB SQL that turns staged rows into a target file, and the
// schema policy and write mode checks of a table folder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <functional>
#include <map>
#include <optional>

#include "core/schema.h"
#include "sinks/sink.h"
#include "sources/files/file_common.h"

namespace dbs::files {

// The numbers in a bundle id ("<table>.<chunk>.<seq>"): segments sort in bundle order.
std::vector<uint64_t> IdKey(std::string_view id);
// A bundle id as part of a file name (characters other than [A-Za-z0-9._-] become '_').
std::string IdForFile(std::string_view id);
// The number of a "part-NNNNN..." or "part-aNNNNNNNNNN..." file, or -1.
int64_t PartNumber(const std::string& name);
// "part-00042" + DataExtension(o); from 100,000 on "part-a0000100000": names sort in number
// order.
std::string PartName(int64_t number, const FileOptions& o);
// The SELECT list turning staged columns into the target format's stored columns.
std::string ExportList(const TableSchema& t, const FileOptions& o);
// The options of DuckDB's COPY ... TO for the target format and compression.
std::string CopyOptions(const FileOptions& o);

// The plan of table `t` in the folder `where` (`existing`: its manifest, if any).
TableDdlPlan PlanFileTable(const TableSchema& t, const std::string& where, bool exists,
                           const FileOptions& fo, const SinkOptions& so);
// The schema policy and write mode against a table folder's manifest (nullopt: none), and the
// warnings of the columns a file keeps as text only. A manifest of this run (so.stream) passes.
Result<TargetTable> CheckFileTable(const TableSchema& t, const std::string& where,
                                   const std::optional<Manifest>& existing, const FileOptions& fo,
                                   const SinkOptions& so);
// Calls `apply` with each table's bundles of a batch (tables in the batch's order, bundles in
// theirs) and returns the sum of what the calls return; stops at the first error.
Result<size_t> ApplyByTable(
    const std::vector<BundleRef>& bundles,
    const std::function<Result<size_t>(const std::vector<const BundleRef*>&)>& apply);
// What a CDC call of an S3 target returns without SinkOptions::commit_log (Unsupported, not
// retried).
Status FileCdcNeedsWriters();

}  // namespace dbs::files

// Files in the explorer: local folders (configured roots) and S3 connections. Listing a folder
// (a prefix of a bucket), a file's schema and first rows, and SELECTs over local files
// (read_csv, read_json, read_parquet, globs) joined with connections, all through the embedded
// DuckDB. An object's sample reads a local copy of it (sources/files/remote.h).
//
// Contract:
//  - Only the configured roots are readable (FileRoots: DBS_FILE_ROOTS, a ':'-separated list of
//    absolute folders). A path is relative to a root; "..", absolute paths and anything that
//    resolves outside the root (symbolic links included, for listing) are InvalidArgument.
//    DuckDB runs with allowed_directories set to the roots and external access off
//    (federated.h), so a statement cannot read anything else either.
//  - A file's reader is chosen by its extension: .csv .tsv .txt (and .gz) read_csv, .json
//    .jsonl .ndjson read_json, .parquet read_parquet; globs (*, ?, [..], **) are DuckDB's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "federated/federated.h"
#include "objstore/object_store.h"

namespace dbs::explorer {

// The configured roots (absolute, canonical, existing folders); `spec` is ':'-separated.
std::vector<std::string> FileRoots(const std::string& spec);

// The absolute path of `relative` under `root` (which must be one of `roots`).
Result<std::string> ResolveFile(const std::vector<std::string>& roots, const std::string& root,
                                const std::string& relative);

// One level of a folder: {root, path, entries: [{name, path, kind: file|folder, size,
// modifiedMs}]}, folders first, then by name; at most `max_entries` (truncated says so).
Result<nlohmann::json> ListFolder(const std::vector<std::string>& roots, const std::string& root,
                                  const std::string& relative, size_t max_entries);

// The DuckDB table expression reading `path` (read_csv('...') etc.).
Result<std::string> FileReader(const std::string& path);

// Columns (DuckDB's names and types) and the first `rows` rows (0: only the columns).
Result<federated::FederatedResult> FileSample(const std::vector<std::string>& roots,
                                              const std::string& path, int64_t rows,
                                              const federated::FederatedOptions& options);

// One level of a bucket's folder `relative` (under the connection's prefix), shaped as
// ListFolder's answer with {connectionId, path, entries, truncated} (S3 folders have no size or
// time: null).
Result<nlohmann::json> ListObjects(ObjectStore* store, const std::string& connection_id,
                                   const std::string& relative, size_t max_entries);

// As FileSample, for object `key` of the store: a copy under options.temp_dir is read
// (files::LocalCopy).
Result<federated::FederatedResult> ObjectSample(ObjectStore* store, const std::string& key,
                                                int64_t rows,
                                                const federated::FederatedOptions& options);

}  // namespace dbs::explorer

// File sources: CSV, JSONL and Parquet files read through the embedded DuckDB.
//
// The connection's path (file:///data/in) or bucket prefix (s3://bucket/in, read through
// local copies of one object at a time: sources/files/remote.h) is a folder, one file, or a
// glob in its last part (file:///data/in/*.csv). A table is one file (named by its name up to the first '.') or one
// sub-folder of data files (named by the folder); a folder with a `_manifest.json` (a file
// target's output) is read exactly as the manifest lists it, with its column types.
//
// Contract:
//  - Tables are in the schema "public" (names given with another schema match too).
//  - Without a manifest, the columns come from DuckDB's sniffing of the table's first file
//    (read_csv's dialect and types, read_json, the Parquet schema) and map to logical types as
//    docs/type-mapping.md ("File sources") says; every file is then read with those columns.
//  - A row that does not fit (wrong field count, a value that is not of the column's type,
//    broken JSON) fails the read with the file, and DuckDB's line and column.
//  - Readers are independent (one DuckDB each) and stream: memory is bounded by a chunk.
//  - No change data capture (Unsupported), no custom queries.
#pragma once

#include <memory>

#include "config/connection.h"
#include "core/result.h"
#include "sources/source.h"

namespace dbs {

Result<std::unique_ptr<Source>> OpenFileSource(const ConnectionConfig& config);

}  // namespace dbs

// File sources: CSV, JSONL and Parquet files read through the embedded DuckDB.
//
// The connection's path (file:///data/in) or bucket prefix (s3://bucket/in, read through
// local copies of one object at a time: sources/files/remote.h) is a folder, one file, or a
// glob in its last part (file:///data/in/*.csv). A table is one file (named by its name up to the
// first '.') or one sub-folder of data files (named by the folder); a folder with a
// `_manifest.json` (a file target's output) is read exactly as the manifest lists it, with its
// column types. A table folder whose data files are in Hive-style partition folders
// (events/year=2026/month=11/part.csv, any depth) is one table with the partition keys as
// columns after the files' own (sources/files/partitions.h); only partition folders are entered.
// A connection path whose sub-folders are partition folders is such a table itself.
//
// Contract:
//  - Tables are in the schema "public" (names given with another schema match too).
//  - Without a manifest, the columns come from DuckDB's sniffing of the table's first file
//    (read_csv's dialect and types, read_json, the Parquet schema) and map to logical types as
//    docs/type-mapping.md ("File sources") says; every file is then read with those columns.
//  - Configure takes the stream's selectors: their column types (TableSelector::column_types)
//    replace sniffed types (CSV, JSONL: in DuckDB's reader; Parquet: a checked cast; partition
//    keys: every folder's value checked). A type for a column the table lacks is an error, and
//    so is one for a table with a manifest.
//  - A row that does not fit (wrong field count, a value that is not of the column's type,
//    invalid UTF-8, broken JSON) fails the read with the file, the line and the column
//    (CSV: DuckDB's; JSONL: when read_json fails, the file is read line by line to name the
//    first bad line and column). With malformedRows skip (Configure) such rows are left out
//    instead and handed to the caller by RowReader::TakeSkipped (file, line, reason): CSV
//    through read_csv's rejects table, JSONL line by line (sources/files/json_lines.h), each
//    line converted by json_transform with the table's columns as read_json would.
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

// Stage: appends bundles to a DuckDB table whose column types are the ones a file keeps
// (sources/files/file_common.h, StoredFor), through data chunks (no text round trip).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/stream_config.h"
#include "core/bundle.h"
#include "core/schema.h"
#include "sources/files/duck.h"
#include "sources/files/file_common.h"

namespace dbs::files {

// The DuckDB type of the staging table's column: the Parquet stored type, except UUIDs, which
// are staged as text and cast when a file is written.
std::string StageType(const Column& c);

// Creates (replacing) the staging table `name` for `table` in `duck`.
Status CreateStageTable(Duck* duck, const std::string& name, const TableSchema& table);

// Writes at `path` the file of `table` with its columns and no rows, in the format and options
// of `fo` (an empty table still gets one part file).
Status WriteEmptyFile(Duck* duck, const TableSchema& table, const FileOptions& fo,
                      const std::string& path);

// OK when `b` is a column bundle with the table's column count.
Status CheckBundle(const TableSchema& table, const Bundle& b);

// How FillChunk puts text and bytes values into DuckDB's string vectors.
enum class StringFill {
  kCopy,    // copied into the vector's own string heap
  kBorrow,  // pointed at the bundle's bytes: the caller keeps `b` alive, unchanged, until
            // DuckDB has consumed the chunk (for a table function's scan: until the next call)
};

// Writes rows [from, from + n) of `b` (checked by CheckBundle) into rows [at, at + n) of
// `chunk`, whose columns have the StageType of the table's columns; the chunk's size is the
// caller's to set. Errors as AppendBundles.
Status FillChunk(const TableSchema& table, const Bundle& b, size_t from, size_t n,
                 duckdb_data_chunk chunk, size_t at, ZeroDatePolicy zero_date,
                 StringFill strings = StringFill::kCopy);

// Appends every row of `bundles` (columns in table.columns order) to the staging table.
// Errors name the table and column (a MySQL zero date under zeroDate=error, a time outside
// 00:00..24:00).
Status AppendBundles(Duck* duck, const std::string& name, const TableSchema& table,
                     const std::vector<const Bundle*>& bundles, ZeroDatePolicy zero_date);

}  // namespace dbs::files

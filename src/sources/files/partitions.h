// Hive-style partition folders of file tables: `events/year=2026/month=11/part.parquet` is a
// row of table `events` with the columns of part.parquet plus year and month.
//
// Contract:
//  - A partition folder is a path component "key=value" with a non-empty key that does not
//    start with '.' or '_'; the value is the text after the first '='.
//  - The values and their types are what DuckDB's hive_partitioning gives (DuckDB decodes the
//    value and infers DATE, TIMESTAMP or BIGINT when every folder's value is one, else
//    VARCHAR): ResolvePartitions asks DuckDB itself, over a mirror of the folder names, so the
//    answer is the same for local files and for objects read through local copies.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "sources/files/duck.h"

namespace dbs::files {

// The key of a "key=value" path component; nullopt when `component` is not one.
std::optional<std::string> PartitionKeyOf(std::string_view component);

// The folder part of `relative` ("year=2026/month=11" of "year=2026/month=11/part.csv") when
// every folder component is a partition folder; "" when the file is directly in the table
// folder; nullopt when some folder is not a partition folder.
std::optional<std::string> PartitionFolderOf(std::string_view relative);

// The keys of a partition folder path, outermost first ("year=2026/month=11": year, month).
std::vector<std::string> PartitionKeys(std::string_view folder);

struct Partitions {
  std::vector<std::string> keys;   // outermost first
  std::vector<std::string> types;  // DuckDB type per key
  // Per folder of `folders` (ResolvePartitions' argument, same order), the values per key as
  // text that casts back exactly to the key's type (nullopt: NULL).
  std::vector<std::vector<std::optional<std::string>>> values;
};

// The partition columns of a table whose files are in `folders` (partition folder paths as
// PartitionFolderOf gives them, each once; all with the same keys, else InvalidArgument naming
// `table_dir` and the odd folder). Writes a private mirror of empty folders under $TMPDIR and
// removes it before returning.
Result<Partitions> ResolvePartitions(Duck* duck, const std::vector<std::string>& folders,
                                     const std::string& table_dir);

}  // namespace dbs::files

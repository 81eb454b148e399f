// Result exports of the console's downloads: CSV and JSON Lines rows, and Parquet through the
// embedded DuckDB.
//
// Contract: pure formatting functions (thread-safe); JsonlToParquet opens its own in-memory
// DuckDB with a spill folder, reads the JSON Lines file as a stream (read_json) and writes a
// Parquet file (COPY ... FORMAT parquet), so memory stays bounded whatever the row count.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "explorer/console.h"

namespace dbs::explorer {

// RFC 4180: a field with a comma, quote, CR or LF is quoted, quotes doubled; NULL is empty.
std::string CsvHeader(const std::vector<ConsoleColumn>& columns);
std::string CsvRow(const nlohmann::json& row);
// One JSON object per line, keyed by column name.
std::string JsonlRow(const std::vector<ConsoleColumn>& columns, const nlohmann::json& row);

// `columns` name the columns when the file has no rows (then all VARCHAR).
Status JsonlToParquet(const std::string& jsonl_path, const std::string& parquet_path,
                      const std::vector<ConsoleColumn>& columns, const std::string& temp_dir);

}  // namespace dbs::explorer

#include "explorer/export.h"

#include <duckdb.h>

#include <cstdio>

namespace dbs::explorer {

using nlohmann::json;

namespace {

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string Text(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string QuoteString(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string CsvHeader(const std::vector<ConsoleColumn>& columns) {
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + CsvField(columns[i].name);
  return out + "\r\n";
}

std::string CsvRow(const json& row) {
  std::string out;
  for (size_t i = 0; i < row.size(); ++i) {
    out += i ? "," : "";
    if (!row[i].is_null()) out += CsvField(Text(row[i]));
  }
  return out + "\r\n";
}

std::string JsonlRow(const std::vector<ConsoleColumn>& columns, const json& row) {
  json o = json::object();
  for (size_t i = 0; i < columns.size() && i < row.size(); ++i) o[columns[i].name] = row[i];
  return o.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Status JsonlToParquet(const std::string& jsonl_path, const std::string& parquet_path,
                      const std::vector<ConsoleColumn>& columns, const std::string& temp_dir) {
  duckdb_database db = nullptr;
  duckdb_connection con = nullptr;
  if (duckdb_open(nullptr, &db) != DuckDBSuccess) return Status::Internal("cannot open DuckDB");
  Status s = Status::Ok();
  if (duckdb_connect(db, &con) != DuckDBSuccess) {
    duckdb_close(&db);
    return Status::Internal("cannot connect to DuckDB");
  }
  std::string from =
      "read_json(" + QuoteString(jsonl_path) + ", format = 'newline_delimited', sample_size = -1)";
  std::FILE* f = std::fopen(jsonl_path.c_str(), "rb");
  const bool empty = f == nullptr || std::fgetc(f) == EOF;
  if (f != nullptr) std::fclose(f);
  if (empty) {
    // No rows: the columns, typed VARCHAR.
    from.clear();
    for (const auto& c : columns) {
      std::string q = "\"";
      for (char ch : c.name) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      from += (from.empty() ? "" : ", ") + std::string("NULL::VARCHAR AS ") + q + "\"";
    }
    from = "(SELECT " + (from.empty() ? std::string("NULL::VARCHAR AS \"empty\"") : from) +
           " LIMIT 0)";
  }
  const std::string sql =
      "SET threads = 2; SET memory_limit = '512MB'; SET temp_directory = " + QuoteString(temp_dir) +
      "; COPY (SELECT * FROM " + from + ") TO " + QuoteString(parquet_path) + " (FORMAT parquet)";
  duckdb_result res;
  if (duckdb_query(con, sql.c_str(), &res) != DuckDBSuccess) {
    s = Status::Internal(std::string("writing Parquet: ") + duckdb_result_error(&res));
  }
  duckdb_destroy_result(&res);
  duckdb_disconnect(&con);
  duckdb_close(&db);
  return s;
}

}  // namespace dbs::explorer

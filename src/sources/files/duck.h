// A small RAII layer over the embedded DuckDB's C API, for file sources and targets.
//
// Contract:
//  - Duck owns one in-memory database and one connection; it is used from one thread. Every
//    reader and writer opens its own (DuckDB instances are independent).
//  - Exec/Query return Status errors carrying DuckDB's message; DuckDB errors are never
//    retryable (they are about the data, the file or the statement).
//  - Stream runs a SELECT chunk by chunk (memory bounded by one chunk, whatever the file size).
#pragma once

#include <duckdb.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace dbs::files {

// A SQL string literal: 'it''s'.
std::string SqlString(std::string_view s);
// A quoted identifier: "col""x".
std::string SqlIdent(std::string_view s);

// A materialized result (small: DESCRIBE, sniff_csv, counts).
class DuckResult {
 public:
  DuckResult() = default;
  ~DuckResult();
  DuckResult(DuckResult&& o) noexcept;
  DuckResult& operator=(DuckResult&&) = delete;
  DuckResult(const DuckResult&) = delete;

  size_t rows();
  size_t columns();
  // The cell as text (nullopt: NULL).
  std::optional<std::string> Text(size_t col, size_t row);
  duckdb_result* raw() { return &r_; }

 private:
  friend class Duck;
  duckdb_result r_{};
  bool valid_ = false;
};

// A streaming SELECT: Next() hands out one chunk at a time (owned by the stream until the next
// call).
class DuckStream {
 public:
  ~DuckStream();
  DuckStream(const DuckStream&) = delete;
  DuckStream& operator=(const DuckStream&) = delete;
  // The next chunk, or nullptr at the end; errors carry DuckDB's message.
  Result<duckdb_data_chunk> Next();
  size_t columns() { return duckdb_column_count(&r_); }
  duckdb_type ColumnType(size_t col) { return duckdb_column_type(&r_, col); }

 private:
  friend class Duck;
  DuckStream() = default;
  duckdb_prepared_statement stmt_ = nullptr;
  duckdb_result r_{};
  bool has_result_ = false;
  duckdb_data_chunk chunk_ = nullptr;
};

class Duck {
 public:
  // An in-memory DuckDB with `threads` worker threads and a memory limit (spills beyond it).
  static Result<std::unique_ptr<Duck>> Open(int threads = 2, const std::string& memory = "512MB");
  ~Duck();
  Duck(const Duck&) = delete;
  Duck& operator=(const Duck&) = delete;

  Status Exec(const std::string& sql);
  Result<DuckResult> Query(const std::string& sql);
  Result<std::unique_ptr<DuckStream>> Stream(const std::string& sql);
  duckdb_connection con() { return con_; }

 private:
  Duck() = default;
  duckdb_database db_ = nullptr;
  duckdb_connection con_ = nullptr;
};

}  // namespace dbs::files

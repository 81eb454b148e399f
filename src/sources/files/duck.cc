#include "sources/files/duck.h"

namespace dbs::files {

std::string SqlString(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

std::string SqlIdent(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

DuckResult::~DuckResult() {
  if (valid_) duckdb_destroy_result(&r_);
}

DuckResult::DuckResult(DuckResult&& o) noexcept : r_(o.r_), valid_(o.valid_) {
  o.valid_ = false;
  o.r_ = duckdb_result{};
}

size_t DuckResult::rows() { return valid_ ? duckdb_row_count(&r_) : 0; }
size_t DuckResult::columns() { return valid_ ? duckdb_column_count(&r_) : 0; }

std::optional<std::string> DuckResult::Text(size_t col, size_t row) {
  if (!valid_ || duckdb_value_is_null(&r_, col, row)) return std::nullopt;
  char* v = duckdb_value_varchar(&r_, col, row);
  if (v == nullptr) return std::nullopt;
  std::string out(v);
  duckdb_free(v);
  return out;
}

DuckStream::~DuckStream() {
  if (chunk_ != nullptr) duckdb_destroy_data_chunk(&chunk_);
  if (has_result_) duckdb_destroy_result(&r_);
  if (stmt_ != nullptr) duckdb_destroy_prepare(&stmt_);
}

Result<duckdb_data_chunk> DuckStream::Next() {
  if (chunk_ != nullptr) duckdb_destroy_data_chunk(&chunk_);
  chunk_ = duckdb_fetch_chunk(r_);
  if (chunk_ == nullptr) {
    const char* err = duckdb_result_error(&r_);
    if (err != nullptr && *err != '\0') return Status::InvalidArgument(err);
    return static_cast<duckdb_data_chunk>(nullptr);
  }
  if (duckdb_data_chunk_get_size(chunk_) == 0) {
    duckdb_destroy_data_chunk(&chunk_);
    return static_cast<duckdb_data_chunk>(nullptr);
  }
  return chunk_;
}

Result<std::unique_ptr<Duck>> Duck::Open(int threads, const std::string& memory) {
  std::unique_ptr<Duck> d(new Duck());
  if (duckdb_open(nullptr, &d->db_) != DuckDBSuccess) {
    d->db_ = nullptr;
    return Status::Internal("cannot open an embedded DuckDB database");
  }
  if (duckdb_connect(d->db_, &d->con_) != DuckDBSuccess) {
    d->con_ = nullptr;
    return Status::Internal("cannot connect to the embedded DuckDB database");
  }
  DBS_RETURN_IF_ERROR(d->Exec("SET threads = " + std::to_string(threads)));
  DBS_RETURN_IF_ERROR(d->Exec("SET memory_limit = " + SqlString(memory)));
  DBS_RETURN_IF_ERROR(d->Exec("SET preserve_insertion_order = true"));
  // Text forms of TIMESTAMPTZ (CSV, JSONL) in UTC; without ICU the setting does not exist and
  // DuckDB prints UTC anyway.
  (void)d->Exec("SET TimeZone = 'UTC'");
  return d;
}

Duck::~Duck() {
  if (con_ != nullptr) duckdb_disconnect(&con_);
  if (db_ != nullptr) duckdb_close(&db_);
}

Status Duck::Exec(const std::string& sql) {
  DBS_ASSIGN_OR_RETURN(DuckResult r, Query(sql));
  return Status::Ok();
}

Result<DuckResult> Duck::Query(const std::string& sql) {
  DuckResult r;
  if (duckdb_query(con_, sql.c_str(), &r.r_) != DuckDBSuccess) {
    const char* e = duckdb_result_error(&r.r_);
    std::string msg = e != nullptr ? e : "DuckDB statement failed";
    duckdb_destroy_result(&r.r_);
    return Status(StatusCode::kInvalidArgument, Retry::kFail, msg);
  }
  r.valid_ = true;
  return r;
}

Result<std::unique_ptr<DuckStream>> Duck::Stream(const std::string& sql) {
  std::unique_ptr<DuckStream> s(new DuckStream());
  if (duckdb_prepare(con_, sql.c_str(), &s->stmt_) != DuckDBSuccess) {
    std::string msg = duckdb_prepare_error(s->stmt_);
    return Status(StatusCode::kInvalidArgument, Retry::kFail, msg);
  }
  duckdb_pending_result pending;
  if (duckdb_pending_prepared_streaming(s->stmt_, &pending) != DuckDBSuccess) {
    std::string msg = duckdb_pending_error(pending);
    duckdb_destroy_pending(&pending);
    return Status(StatusCode::kInvalidArgument, Retry::kFail, msg);
  }
  const duckdb_state st = duckdb_execute_pending(pending, &s->r_);
  duckdb_destroy_pending(&pending);
  s->has_result_ = true;
  if (st != DuckDBSuccess) {
    const char* e = duckdb_result_error(&s->r_);
    return Status(StatusCode::kInvalidArgument, Retry::kFail,
                  e != nullptr ? e : "DuckDB query failed");
  }
  return s;
}

}  // namespace dbs::files

// A federated SELECT read chunk by chunk (the source of a stream saved from the explorer,
// federated_source.h), or page by page (the console's cursor): the same engine as
// federated::Run (federated.h), without a row cap.
#pragma once

#include <duckdb.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/schema.h"
#include "federated/federated.h"

namespace dbs::federated {

// The result columns of `sql` as logical columns (files::ColumnFromDuck), without reading
// rows: the sources are opened and described, nothing is scanned.
Result<std::vector<Column>> DescribeSelect(const std::vector<FederatedSource>& sources,
                                           const std::string& sql, const FederatedOptions& options);

class ResultStream {
 public:
  // Runs `sql`; rows stream as DuckDB produces them (memory bounded as for Run).
  static Result<std::unique_ptr<ResultStream>> Open(const std::vector<FederatedSource>& sources,
                                                    const std::string& sql,
                                                    const FederatedOptions& options);
  ~ResultStream();
  ResultStream(const ResultStream&) = delete;
  ResultStream& operator=(const ResultStream&) = delete;

  // The result's columns; chunk column i is of files::ReadType(columns()[i].type).
  const std::vector<Column>& columns() const;
  // The next chunk (owned by the stream until the next call), nullptr at the end.
  Result<duckdb_data_chunk> Next();

 private:
  ResultStream();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A federated SELECT read page by page: the console's cursor over federated sources
// (explorer/federated_session.h). Cells are what Run gives (federated.h): booleans, integers
// and finite floats as JSON values, NaN and infinities as "nan", "inf", "-inf", everything else
// as DuckDB's text. Memory: the chunk being read (DuckDB spills the rest as for Run).
// Driven by one thread; Interrupt() may be called from any thread and makes the running or
// next call fail.
class QueryCursor {
 public:
  // Opens the sources and prepares the statement; Start() runs it (until its first rows are
  // ready: a statement that aggregates runs whole there), and can be interrupted.
  static Result<std::unique_ptr<QueryCursor>> Open(const std::vector<FederatedSource>& sources,
                                                   const std::string& sql,
                                                   const FederatedOptions& options);
  ~QueryCursor();
  QueryCursor(const QueryCursor&) = delete;
  QueryCursor& operator=(const QueryCursor&) = delete;

  Status Start();
  // Name and DuckDB type name of each column.
  const std::vector<ResultColumn>& columns() const;
  // Up to `max_rows` rows (arrays of cells); *more tells whether rows remain.
  Result<nlohmann::json> Next(int64_t max_rows, bool* more);
  void Interrupt();
  bool interrupted() const;

 private:
  QueryCursor();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dbs::federated

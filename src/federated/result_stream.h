// A federated SELECT read chunk by chunk (the source of a stream saved from the explorer,
// federated_source.h): the same engine as federated::Run (federated.h), without a row cap.
#pragma once

#include <duckdb.h>

#include <memory>
#include <string>
#include <vector>

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

}  // namespace dbs::federated

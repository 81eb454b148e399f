// Sink: creates target structures and writes bundles, exactly once.
//
// Contract:
//  - A Sink owns one connection to the target and is used from one thread; several writer
//    processes/threads each open their own.
//  - Exactly-once: every bundle has a unique id. Apply() writes the given bundles and records
//    their ids in the target's checkpoint table in ONE transaction; ids already recorded are
//    skipped (a redelivery after a crash between commit and ack). Apply() returns the number of
//    bundles actually written.
//  - PrepareTable() applies the schema policy for one table exactly once across writers (a lock
//    in the target serializes concurrent callers; the outcome is recorded in the target), and
//    FinishStream() creates secondary indexes, foreign keys and checks after the data, once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/connection.h"
#include "config/stream_config.h"
#include "core/bundle.h"
#include "core/result.h"
#include "core/schema.h"

namespace dbs {

// One bundle to write, with its identity.
struct BundleRef {
  std::string id;           // unique within the stream: "<table>:<chunk>:<seq>"
  const TableSchema* table; // source description (as published in metadata)
  const Bundle* bundle;     // columns in table->columns order
};

// What the target looks like for a table, after PrepareTable.
struct TargetTable {
  std::string schema;
  std::string name;
  std::vector<std::string> warnings;  // lossy mappings, skipped defaults, ...
};

struct SinkOptions {
  std::string stream;  // "<stream>.<run id>": scopes checkpoint and state rows to one run
  std::string target_schema;     // empty: the source's schema name
  Engine source_engine = Engine::kPostgres;  // how to read source types, defaults, checks
  SchemaPolicy schema_policy = SchemaPolicy::kCreateMissing;
  WriteMode write_mode = WriteMode::kAppend;
  StructureOptions structure;
  ZeroDatePolicy zero_date = ZeroDatePolicy::kError;
};

class Sink {
 public:
  static Result<std::unique_ptr<Sink>> Open(const ConnectionConfig& config,
                                            const SinkOptions& options);
  virtual ~Sink() = default;

  virtual Result<TargetTable> PrepareTable(const TableSchema& source_table) = 0;
  virtual Result<size_t> Apply(const std::vector<BundleRef>& bundles) = 0;
  // Indexes, foreign keys and checks for all tables, once the data is in.
  virtual Status FinishStream(const std::vector<TableSchema>& tables) = 0;
  // Removes this stream's checkpoint rows (after a completed and verified load).
  virtual Status ForgetStream() = 0;
};

}  // namespace dbs

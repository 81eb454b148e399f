// Order-independent table checksums over normalized values, to prove a copy is exact.
//
// Each cell is turned into a canonical text chosen by the SOURCE column's logical type, so a
// value and its image in another database compare equal (uint64 vs numeric(20,0), MySQL enum
// vs PostgreSQL text, jsonb's key order, timestamptz stored in UTC datetime, ...). A row's hash
// is XXH3 over its length-prefixed canonical cells; the table checksum is the row count, the
// sum and the xor of row hashes — equal for equal multisets of rows, in any order.
//
// Cross-type fallback rule (a contract for sinks): when a target stores a value as text
// because it has no equivalent type, it writes the text Value::ToString() gives; the checksum
// compares that text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/stream_config.h"
#include "core/bundle.h"
#include "core/schema.h"
#include "sources/source.h"

namespace dbs {

struct TableChecksum {
  uint64_t rows = 0;
  uint64_t sum = 0;
  uint64_t xor_all = 0;
  friend bool operator==(const TableChecksum&, const TableChecksum&) = default;
};

// The canonical text of a cell whose source type is `source_type`; nullopt for SQL NULL
// (including a MySQL zero date under ZeroDatePolicy::kNull).
std::optional<std::string> CanonicalCell(const ColumnVector& col, size_t row,
                                         LogicalType source_type, ZeroDatePolicy zero_date);

class RowHasher {
 public:
  // `source_types[i]` guides normalization of column i of the bundles passed to Add().
  RowHasher(std::vector<LogicalType> source_types, ZeroDatePolicy zero_date);
  void Add(const Bundle& b, TableChecksum* acc) const;

 private:
  std::vector<LogicalType> types_;
  ZeroDatePolicy zero_date_;
};

// Reads every row the spec selects and returns its checksum (bounded memory).
Result<TableChecksum> ChecksumTable(Snapshot* snapshot, const ReadSpec& spec,
                                    const RowHasher& hasher);

struct TableVerdict {
  std::string source_table;
  std::string target_table;
  TableChecksum source;
  TableChecksum target;
  bool match() const { return source == target; }
};

// Plans the stream's tables, checksums each on the source and on the target, and returns one
// verdict per table. Errors only when a side cannot be read; mismatches are verdicts.
Result<std::vector<TableVerdict>> VerifyStream(const StreamConfig& config);

}  // namespace dbs

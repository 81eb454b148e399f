// Order-independent table checksums over normalized values, to prove a copy is exact, and the
// search for a differing row when it is not.
//
// Each cell is turned into a canonical text chosen by the SOURCE column's logical type and a
// CellRule derived from both sides' column types (RuleFor), so a value and its image in the
// other database compare equal (uint64 vs numeric(20,0), MySQL enum vs PostgreSQL text,
// timestamptz stored in UTC datetime, MariaDB INET6 vs PostgreSQL inet, ...) while a changed
// value compares different (a '?' for an unmappable byte, an inet host given a /32 suffix in a
// text column, an array that lost its lower bound, JSON text rewritten in a json column). A
// row's hash is XXH3 over its length-prefixed canonical cells; the table checksum is the row
// count, the sum and the xor of row hashes — equal for equal multisets of rows, in any order.
//
// VerifyStream also keeps, per column, the sum of hash(key, cell) (key: the source's primary
// key, or nothing for a table without one), and sums of row hashes in kVerifyBuckets buckets
// by hash(key). On a mismatch the columns whose sums differ are named; a second read of one
// differing bucket on both sides (about rows / kVerifyBuckets rows in memory) finds a sample
// row: its key, and the source and target values.
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

// How the two sides' cells of one column are compared, beyond the source's logical type.
enum class CellRule : uint8_t {
  kByType,      // normalize by the source's logical type (numbers, JSON documents, ...)
  kJsonText,    // JSON whose target keeps the text (PostgreSQL json, MariaDB): exact bytes
  kInet,        // an IP address type on either side: the address's canonical form, the
                // prefix only when the text shows one (a text column's "/32" differs)
  kArrayExact,  // arrays on both sides: elements, dimensions and lower bounds
  kArrayText,   // an array kept as its PostgreSQL text form (a file, a PostgreSQL text column):
                // the array's quoted text (ArrayToString) against the text
};

// The rule for a column read as `source` (on a source of dialect `source_engine`) and stored
// as `target` (on `target_engine`).
CellRule RuleFor(const Column& source, Engine source_engine, const Column& target,
                 Engine target_engine);

// The canonical text of a cell whose source type is `source_type`; nullopt for SQL NULL
// (including a MySQL zero date under ZeroDatePolicy::kNull).
std::optional<std::string> CanonicalCell(const ColumnVector& col, size_t row,
                                         LogicalType source_type, ZeroDatePolicy zero_date,
                                         CellRule rule = CellRule::kByType);

inline constexpr size_t kVerifyBuckets = 4096;

// The checksum plus what locates a difference (see the file comment).
struct TableDigest {
  TableChecksum total;
  std::vector<uint64_t> columns;  // per column: sum of hash(key, cell)
  std::vector<uint64_t> buckets;  // kVerifyBuckets sums of row hashes, by hash(key)
};

class RowHasher {
 public:
  // `source_types[i]` guides normalization of column i of the bundles passed to Add().
  RowHasher(std::vector<LogicalType> source_types, ZeroDatePolicy zero_date);
  // With a rule per column, and the indexes of the key columns (empty: no key).
  RowHasher(std::vector<LogicalType> source_types, std::vector<CellRule> rules,
            std::vector<size_t> key, ZeroDatePolicy zero_date);
  void Add(const Bundle& b, TableChecksum* acc) const;
  void Add(const Bundle& b, TableDigest* acc) const;

  size_t columns() const { return types_.size(); }
  const std::vector<size_t>& key() const { return key_; }
  // Canonical cells of row r of b (nullopt: NULL).
  void Cells(const Bundle& b, size_t r, std::vector<std::optional<std::string>>* out) const;
  // hash(key cells) of canonical cells; the row hash when there is no key.
  uint64_t KeyHash(const std::vector<std::optional<std::string>>& cells) const;
  static uint64_t RowHash(const std::vector<std::optional<std::string>>& cells);

 private:
  std::vector<LogicalType> types_;
  std::vector<CellRule> rules_;
  std::vector<size_t> key_;
  ZeroDatePolicy zero_date_;
};

// Reads every row the spec selects and returns its checksum (bounded memory).
Result<TableChecksum> ChecksumTable(Snapshot* snapshot, const ReadSpec& spec,
                                    const RowHasher& hasher);
Result<TableDigest> DigestTable(Snapshot* snapshot, const ReadSpec& spec, const RowHasher& hasher);

struct TableVerdict {
  std::string source_table;
  std::string target_table;
  TableChecksum source;
  TableChecksum target;
  // On a mismatch: the columns whose values differ (empty when only whole rows are missing or
  // extra), and one differing row: "key id=7: column name: source 'é', target '?'".
  std::vector<std::string> columns;
  std::string sample;
  bool match() const { return source == target && columns.empty(); }
  // "shop.t -> shop.t: rows 3/3, column(s) name differ; key id=7: ..." (for messages).
  std::string Describe() const;
};

// Plans the stream's tables, checksums each on the source and on the target, and returns one
// verdict per table. Errors only when a side cannot be read; mismatches are verdicts.
Result<std::vector<TableVerdict>> VerifyStream(const StreamConfig& config);

}  // namespace dbs

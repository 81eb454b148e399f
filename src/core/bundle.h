// Bundle: N rows of one table, column by column, and its binary codec.
//
// A bundle is what travels on the bus for snapshot data and (with row operations) for CDC
// changes. The codec is versioned, columnar and optionally compressed; docs/bundle-format.md
// is the normative description of the bytes.
//
// Decoding is safe on untrusted input: every length is checked against the input and against
// DecodeLimits, so corrupt or truncated bytes give a Corruption (or ResourceExhausted) Status,
// never a crash or an unbounded allocation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/column.h"
#include "core/compress.h"
#include "core/result.h"

namespace dbs {

// What a row of a CDC bundle does. Snapshot bundles carry no ops (every row is an insert).
enum class RowOp : uint8_t {
  kInsert = 1,
  kUpdate = 2,        // the row holds the new image
  kDelete = 3,        // the row holds the old key (or full old image)
  kUpdateBefore = 4,  // old image preceding a kUpdate row (when the key changed)
};

// Rows of a PostgreSQL source as its binary COPY sent them, for a PostgreSQL target that takes
// them as they are (same-engine fast path, see docs/bundle-format.md). Each tuple: i16 field
// count (= type_oids.size()), then per field an i32 length (-1: NULL) and that many bytes, all
// big-endian; no COPY header or trailer.
struct PgCopyRows {
  std::vector<uint32_t> type_oids;  // per column: the built-in type the values are sent as
  std::string tuples;
  size_t rows = 0;
};

struct Bundle {
  std::vector<ColumnVector> columns;
  std::vector<RowOp> ops;  // empty, or one per row
  // Set instead of `columns` (which is then empty) when the rows travel as COPY tuples.
  PgCopyRows pg_copy;

  bool is_pg_copy() const { return !pg_copy.type_oids.empty(); }
  size_t rows() const {
    if (is_pg_copy()) return pg_copy.rows;
    return columns.empty() ? 0 : columns.front().size();
  }
  // Sum of the columns' ByteSize(): an upper-bound estimate of the uncompressed body.
  size_t ByteSize() const;
  // OK when every column has rows() rows and ops is empty or has rows() entries; for COPY
  // tuples, when there are no columns or ops and the tuples are well-formed (ValidateCopyTuples).
  Status Validate() const;
};

// Checks that `tuples` holds exactly `rows` binary COPY tuples of `fields` fields each, every
// length within the bytes. Corruption naming the first problem otherwise.
Status ValidateCopyTuples(std::string_view tuples, size_t rows, size_t fields);

struct EncodeOptions {
  Compression compression = Compression::kLz4;
  int level = 1;  // zstd level; lz4 uses its fast mode
  // Bodies smaller than this are stored uncompressed (compression would not pay).
  size_t min_compress_bytes = 512;
};

struct DecodeLimits {
  size_t max_rows = 1u << 24;
  size_t max_columns = 4096;
  size_t max_body_bytes = 256u << 20;  // decompressed size
};

inline constexpr uint8_t kBundleFormatVersion = 1;

// Appends the encoding of `bundle` to *out. InvalidArgument if the bundle is inconsistent.
Status EncodeBundle(const Bundle& bundle, const EncodeOptions& options, std::string* out);

Result<Bundle> DecodeBundle(std::string_view bytes, const DecodeLimits& limits = {});

}  // namespace dbs

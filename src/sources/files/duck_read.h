// Reading DuckDB results into bundles: the DuckDB type each logical type is read as, a DuckDB
// column (DESCRIBE's type spelling) as a logical column, and one cell of a result vector
// appended to a ColumnVector. Shared by the file sources and the federated source.
#pragma once

#include <duckdb.h>

#include <string>
#include <string_view>

#include "core/column.h"
#include "core/result.h"
#include "core/schema.h"

namespace dbs::files {

// The DuckDB type a logical type is read as: every cell is cast to it before AppendCell.
std::string ReadType(LogicalType t);

// A DuckDB column type (DESCRIBE's spelling) as a logical column; *expr wraps the quoted
// column name so that it reads as ReadType(c.type) (nested values become JSON text).
Column ColumnFromDuck(const std::string& name, const std::string& duck_type, std::string* expr);

// The text of row `row` of a VARCHAR or BLOB vector.
std::string_view StringAt(duckdb_vector v, size_t row);

// Appends row `row` of vector `v` (of ReadType(c.type)) to `col`; InvalidArgument naming the
// column for a value the logical type cannot hold.
Status AppendCell(duckdb_vector v, size_t row, const Column& c, ColumnVector* col);

}  // namespace dbs::files

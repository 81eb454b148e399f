#include "sinks/files/stage.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>

#include "core/temporal.h"
#include "sinks/files/naming.h"
#include "sources/files/duck_vector.h"
#include "sources/files/file_common.h"

namespace dbs::files {

std::string StageType(const Column& c) {
  // Intervals are staged as values; only their Parquet form is text (StoredFor).
  if (c.type == LogicalType::kInterval) return "INTERVAL";
  return StoredFor(c, FileFormat::kParquet).type;
}

Status CreateStageTable(Duck* duck, const std::string& name, const TableSchema& table) {
  std::string sql = "CREATE OR REPLACE TABLE " + SqlIdent(name) + " (";
  for (size_t i = 0; i < table.columns.size(); ++i) {
    if (i > 0) sql += ", ";
    sql += SqlIdent(table.columns[i].name) + " " + StageType(table.columns[i]);
  }
  return duck->Exec(sql + ")");
}

Status WriteEmptyFile(Duck* duck, const TableSchema& table, const FileOptions& fo,
                      const std::string& path) {
  DBS_RETURN_IF_ERROR(CreateStageTable(duck, "empty", table));
  Status copied = duck->Exec("COPY (SELECT " + ExportList(table, fo) + " FROM empty) TO " +
                             SqlString(path) + " " + CopyOptions(fo));
  (void)duck->Exec("DROP TABLE IF EXISTS empty");
  return copied;
}

namespace {

struct ChunkDeleter {
  void operator()(duckdb_data_chunk c) const { duckdb_destroy_data_chunk(&c); }
};

// A MySQL zero date under the zeroDate policy: true when the row becomes NULL, false when it
// becomes -infinity; an error (naming the column and the zero value) for kError.
Result<bool> ZeroDateIsNull(ZeroDatePolicy policy, const std::string& where, const char* zero) {
  if (policy == ZeroDatePolicy::kNull) return true;
  if (policy == ZeroDatePolicy::kError) {
    return Status(StatusCode::kInvalidArgument, Retry::kFail,
                  where + ": a zero date (" + zero +
                      ") has no file value; set zeroDate to null or -infinity");
  }
  return false;
}

// Points row r of the string vector `dst` at `b` without copying it (DuckDB's string layout:
// up to 12 bytes inlined and zero-padded, longer ones as a 4-byte prefix and a pointer).
void BorrowString(duckdb_vector dst, size_t r, std::string_view b) {
  if (b.size() > std::numeric_limits<uint32_t>::max()) {  // more than a string_t can describe
    duckdb_vector_assign_string_element_len(dst, r, b.data(), b.size());
    return;
  }
  duckdb_string_t& s = VectorData<duckdb_string_t>(dst)[r];
  if (b.size() <= sizeof(s.value.inlined.inlined)) {
    s.value.inlined.length = static_cast<uint32_t>(b.size());
    std::memset(s.value.inlined.inlined, 0, sizeof(s.value.inlined.inlined));
    if (!b.empty()) std::memcpy(s.value.inlined.inlined, b.data(), b.size());
  } else {
    s.value.pointer.length = static_cast<uint32_t>(b.size());
    std::memcpy(s.value.pointer.prefix, b.data(), sizeof(s.value.pointer.prefix));
    s.value.pointer.ptr = const_cast<char*>(b.data());
  }
}

// Copies rows [from, from + n) of `src` into rows [at, at + n) of `dst` for column `c`.
Status FillVector(const TableSchema& t, const Column& c, const ColumnVector& src, size_t from,
                  size_t n, duckdb_vector dst, size_t at, ZeroDatePolicy zero_date,
                  StringFill strings) {
  duckdb_vector_ensure_validity_writable(dst);
  uint64_t* validity = duckdb_vector_get_validity(dst);
  const std::string stage = StageType(c);
  auto where = [&] { return t.name + "." + c.name; };
  for (size_t i = 0; i < n; ++i) {
    const size_t row = from + i;
    const size_t r = at + i;  // the row in dst
    if (src.IsNull(row)) {
      duckdb_validity_set_row_invalid(validity, r);
      continue;
    }
    if (PutFixedWidth(c.type, src, row, dst, r)) continue;
    switch (c.type) {
      case LogicalType::kDecimal: {
        const std::string_view text = src.GetBytes(row);
        if (stage == "VARCHAR") {
          duckdb_vector_assign_string_element_len(dst, r, text.data(), text.size());
          break;
        }
        __int128 v = 0;
        if (!ScaledDecimal(text, c.scale.value_or(0), &v)) {
          return Status(StatusCode::kInvalidArgument, Retry::kFail,
                        where() + ": the value '" + std::string(text) + "' does not fit " + stage);
        }
        PutDecimal(dst, r, *c.precision, v);
        break;
      }
      case LogicalType::kText:
      case LogicalType::kBytes:
      case LogicalType::kJson:
      case LogicalType::kEnum:
      case LogicalType::kSet:
      case LogicalType::kGeometry: {
        const std::string_view b = src.GetBytes(row);
        if (strings == StringFill::kBorrow) {
          BorrowString(dst, r, b);
        } else {
          duckdb_vector_assign_string_element_len(dst, r, b.data(), b.size());
        }
        break;
      }
      case LogicalType::kUuid:
        VectorData<duckdb_hugeint>(dst)[r] = DuckUuid(src.FixedSlot(row));
        break;
      case LogicalType::kBit: {
        bool ok = true;
        const std::string digits = DecodeBits(src.GetBytes(row), &ok);
        duckdb_vector_assign_string_element_len(dst, r, digits.data(), digits.size());
        break;
      }
      case LogicalType::kDate: {
        int32_t d = src.GetDate(row);
        TemporalKind k = DateKind(d);
        if (k == TemporalKind::kZeroDate) {
          DBS_ASSIGN_OR_RETURN(bool null, ZeroDateIsNull(zero_date, where(), "0000-00-00"));
          if (null) {
            duckdb_validity_set_row_invalid(validity, r);
            break;
          }
          k = TemporalKind::kNegInfinity;
        }
        if (k == TemporalKind::kPosInfinity) {
          VectorData<int32_t>(dst)[r] = std::numeric_limits<int32_t>::max();
        } else if (k == TemporalKind::kNegInfinity) {
          VectorData<int32_t>(dst)[r] = -std::numeric_limits<int32_t>::max();
        } else {
          VectorData<int32_t>(dst)[r] = static_cast<int32_t>(d + kUnixToEpochDays);
        }
        break;
      }
      case LogicalType::kTime: {
        const int64_t us = src.GetMicros(row);
        if (us < 0 || us > kMicrosPerDay) {
          return Status(StatusCode::kInvalidArgument, Retry::kFail,
                        where() + ": the time " + FormatTime(us) +
                            " is outside 00:00..24:00, which a file's TIME cannot hold");
        }
        VectorData<int64_t>(dst)[r] = us;
        break;
      }
      case LogicalType::kTimestamp:
      case LogicalType::kTimestampTz: {
        const int64_t ts = src.GetMicros(row);
        TemporalKind k = TimestampKind(ts);
        if (k == TemporalKind::kZeroDate) {
          DBS_ASSIGN_OR_RETURN(bool null,
                               ZeroDateIsNull(zero_date, where(), "0000-00-00 00:00:00"));
          if (null) {
            duckdb_validity_set_row_invalid(validity, r);
            break;
          }
          k = TemporalKind::kNegInfinity;
        }
        if (k == TemporalKind::kPosInfinity) {
          VectorData<int64_t>(dst)[r] = std::numeric_limits<int64_t>::max();
        } else if (k == TemporalKind::kNegInfinity) {
          VectorData<int64_t>(dst)[r] = -std::numeric_limits<int64_t>::max();
        } else {
          VectorData<int64_t>(dst)[r] = ts + kUnixToEpochMicros;
        }
        break;
      }
      case LogicalType::kInterval: {
        const Interval iv = src.GetInterval(row);
        VectorData<duckdb_interval>(dst)[r] = duckdb_interval{iv.months, iv.days, iv.micros};
        break;
      }
      default: {  // timetz, arrays: their text form
        const std::string text = src.Get(row).ToString();
        duckdb_vector_assign_string_element_len(dst, r, text.data(), text.size());
        break;
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckBundle(const TableSchema& table, const Bundle& b) {
  if (b.is_pg_copy()) return Status::Internal("file targets take column bundles, not COPY tuples");
  if (b.columns.size() != table.columns.size()) {
    return Status::Corruption("a bundle of " + table.name + " has " +
                              std::to_string(b.columns.size()) + " columns, the table " +
                              std::to_string(table.columns.size()));
  }
  return Status::Ok();
}

Status FillChunk(const TableSchema& table, const Bundle& b, size_t from, size_t n,
                 duckdb_data_chunk chunk, size_t at, ZeroDatePolicy zero_date, StringFill strings) {
  for (size_t c = 0; c < table.columns.size(); ++c) {
    DBS_RETURN_IF_ERROR(FillVector(table, table.columns[c], b.columns[c], from, n,
                                   duckdb_data_chunk_get_vector(chunk, c), at, zero_date, strings));
  }
  return Status::Ok();
}

Status AppendBundles(Duck* duck, const std::string& name, const TableSchema& table,
                     const std::vector<const Bundle*>& bundles, ZeroDatePolicy zero_date) {
  duckdb_appender app = nullptr;
  if (duckdb_appender_create(duck->con(), nullptr, name.c_str(), &app) != DuckDBSuccess) {
    std::string msg = app ? duckdb_appender_error(app) : "cannot create a DuckDB appender";
    if (app) duckdb_appender_destroy(&app);
    return Status::Internal(msg);
  }
  std::unique_ptr<_duckdb_appender, void (*)(duckdb_appender)> guard(
      app, [](duckdb_appender a) { duckdb_appender_destroy(&a); });
  const size_t ncol = table.columns.size();
  std::vector<duckdb_logical_type> types(ncol);
  for (size_t i = 0; i < ncol; ++i) types[i] = duckdb_appender_column_type(app, i);
  std::unique_ptr<_duckdb_data_chunk, ChunkDeleter> chunk(
      duckdb_create_data_chunk(types.data(), ncol));
  for (duckdb_logical_type& t : types) duckdb_destroy_logical_type(&t);
  const size_t cap = duckdb_vector_size();
  for (const Bundle* b : bundles) {
    DBS_RETURN_IF_ERROR(CheckBundle(table, *b));
    const size_t rows = b->rows();
    for (size_t from = 0; from < rows; from += cap) {
      const size_t n = std::min(cap, rows - from);
      duckdb_data_chunk_reset(chunk.get());
      DBS_RETURN_IF_ERROR(FillChunk(table, *b, from, n, chunk.get(), 0, zero_date));
      duckdb_data_chunk_set_size(chunk.get(), n);
      if (duckdb_append_data_chunk(app, chunk.get()) != DuckDBSuccess) {
        return Status(StatusCode::kInvalidArgument, Retry::kFail,
                      table.name + ": " + duckdb_appender_error(app));
      }
    }
  }
  if (duckdb_appender_flush(app) != DuckDBSuccess) {
    return Status(StatusCode::kInvalidArgument, Retry::kFail,
                  table.name + ": " + duckdb_appender_error(app));
  }
  return Status::Ok();
}

}  // namespace dbs::files

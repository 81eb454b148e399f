#include "sinks/files/stage.h"

#include <limits>
#include <memory>

#include "core/temporal.h"
#include "sources/files/file_common.h"

namespace dbs::files {

std::string StageType(const Column& c) {
  if (c.type == LogicalType::kUuid) return "VARCHAR";
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

namespace {

template <typename T>
T* Data(duckdb_vector v) {
  return static_cast<T*>(duckdb_vector_get_data(v));
}

// "[-]digits[.digits]" as an integer scaled by 10^scale; false for anything else (NaN,
// infinities, too many fractional digits, overflow of 38 digits).
bool ScaledDecimal(std::string_view s, uint32_t scale, __int128* out) {
  bool neg = false;
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
  __int128 v = 0;
  int digits = 0;
  bool any = false;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    v = v * 10 + (s[i] - '0');
    any = true;
    if (v != 0 && ++digits > 38) return false;
  }
  uint32_t frac = 0;
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
      if (frac == scale) {
        if (s[i] != '0') return false;  // more digits than the scale: not exact
        continue;
      }
      v = v * 10 + (s[i] - '0');
      ++frac;
      any = true;
      if (v != 0 && ++digits > 38) return false;
    }
  }
  if (!any || i != s.size()) return false;
  for (; frac < scale; ++frac) {
    v *= 10;
    if (++digits > 38) return false;
  }
  *out = neg ? -v : v;
  return true;
}

struct ChunkDeleter {
  void operator()(duckdb_data_chunk c) const { duckdb_destroy_data_chunk(&c); }
};

// Copies rows [from, from + n) of `src` into `dst` for column `c`.
Status FillVector(const TableSchema& t, const Column& c, const ColumnVector& src, size_t from,
                  size_t n, duckdb_vector dst, ZeroDatePolicy zero_date) {
  duckdb_vector_ensure_validity_writable(dst);
  uint64_t* validity = duckdb_vector_get_validity(dst);
  const std::string stage = StageType(c);
  auto where = [&] { return t.name + "." + c.name; };
  for (size_t r = 0; r < n; ++r) {
    const size_t row = from + r;
    if (src.IsNull(row)) {
      duckdb_validity_set_row_invalid(validity, r);
      continue;
    }
    switch (c.type) {
      case LogicalType::kBool:
        Data<bool>(dst)[r] = src.GetBool(row);
        break;
      case LogicalType::kInt8:
        Data<int8_t>(dst)[r] = static_cast<int8_t>(src.GetInt(row));
        break;
      case LogicalType::kInt16:
        Data<int16_t>(dst)[r] = static_cast<int16_t>(src.GetInt(row));
        break;
      case LogicalType::kInt32:
        Data<int32_t>(dst)[r] = static_cast<int32_t>(src.GetInt(row));
        break;
      case LogicalType::kInt64:
        Data<int64_t>(dst)[r] = src.GetInt(row);
        break;
      case LogicalType::kUInt8:
        Data<uint8_t>(dst)[r] = static_cast<uint8_t>(src.GetUInt(row));
        break;
      case LogicalType::kUInt16:
        Data<uint16_t>(dst)[r] = static_cast<uint16_t>(src.GetUInt(row));
        break;
      case LogicalType::kUInt32:
        Data<uint32_t>(dst)[r] = static_cast<uint32_t>(src.GetUInt(row));
        break;
      case LogicalType::kUInt64:
        Data<uint64_t>(dst)[r] = src.GetUInt(row);
        break;
      case LogicalType::kFloat32:
        Data<float>(dst)[r] = src.GetFloat32(row);
        break;
      case LogicalType::kFloat64:
        Data<double>(dst)[r] = src.GetFloat64(row);
        break;
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
        const uint32_t p = *c.precision;
        if (p <= 4) {
          Data<int16_t>(dst)[r] = static_cast<int16_t>(v);
        } else if (p <= 9) {
          Data<int32_t>(dst)[r] = static_cast<int32_t>(v);
        } else if (p <= 18) {
          Data<int64_t>(dst)[r] = static_cast<int64_t>(v);
        } else {
          duckdb_hugeint h;
          h.lower = static_cast<uint64_t>(v);
          h.upper = static_cast<int64_t>(v >> 64);
          Data<duckdb_hugeint>(dst)[r] = h;
        }
        break;
      }
      case LogicalType::kText:
      case LogicalType::kBytes:
      case LogicalType::kJson:
      case LogicalType::kEnum:
      case LogicalType::kSet:
      case LogicalType::kGeometry: {
        const std::string_view b = src.GetBytes(row);
        duckdb_vector_assign_string_element_len(dst, r, b.data(), b.size());
        break;
      }
      case LogicalType::kUuid: {
        const std::string u = UuidToString(src.GetUuid(row));
        duckdb_vector_assign_string_element_len(dst, r, u.data(), u.size());
        break;
      }
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
          if (zero_date == ZeroDatePolicy::kNull) {
            duckdb_validity_set_row_invalid(validity, r);
            break;
          }
          if (zero_date == ZeroDatePolicy::kError) {
            return Status(StatusCode::kInvalidArgument, Retry::kFail,
                          where() +
                              ": a zero date (0000-00-00) has no file value; set zeroDate "
                              "to null or -infinity");
          }
          k = TemporalKind::kNegInfinity;
        }
        if (k == TemporalKind::kPosInfinity) {
          Data<int32_t>(dst)[r] = std::numeric_limits<int32_t>::max();
        } else if (k == TemporalKind::kNegInfinity) {
          Data<int32_t>(dst)[r] = -std::numeric_limits<int32_t>::max();
        } else {
          Data<int32_t>(dst)[r] = static_cast<int32_t>(d + kUnixToEpochDays);
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
        Data<int64_t>(dst)[r] = us;
        break;
      }
      case LogicalType::kTimestamp:
      case LogicalType::kTimestampTz: {
        const int64_t ts = src.GetMicros(row);
        TemporalKind k = TimestampKind(ts);
        if (k == TemporalKind::kZeroDate) {
          if (zero_date == ZeroDatePolicy::kNull) {
            duckdb_validity_set_row_invalid(validity, r);
            break;
          }
          if (zero_date == ZeroDatePolicy::kError) {
            return Status(StatusCode::kInvalidArgument, Retry::kFail,
                          where() +
                              ": a zero date (0000-00-00 00:00:00) has no file value; set "
                              "zeroDate to null or -infinity");
          }
          k = TemporalKind::kNegInfinity;
        }
        if (k == TemporalKind::kPosInfinity) {
          Data<int64_t>(dst)[r] = std::numeric_limits<int64_t>::max();
        } else if (k == TemporalKind::kNegInfinity) {
          Data<int64_t>(dst)[r] = -std::numeric_limits<int64_t>::max();
        } else {
          Data<int64_t>(dst)[r] = ts + kUnixToEpochMicros;
        }
        break;
      }
      case LogicalType::kInterval: {
        const Interval iv = src.GetInterval(row);
        Data<duckdb_interval>(dst)[r] = duckdb_interval{iv.months, iv.days, iv.micros};
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
    if (b->is_pg_copy()) {
      return Status::Internal("file targets take column bundles, not COPY tuples");
    }
    if (b->columns.size() != ncol) {
      return Status::Corruption("a bundle of " + table.name + " has " +
                                std::to_string(b->columns.size()) + " columns, the table " +
                                std::to_string(ncol));
    }
    const size_t rows = b->rows();
    for (size_t from = 0; from < rows; from += cap) {
      const size_t n = std::min(cap, rows - from);
      duckdb_data_chunk_reset(chunk.get());
      for (size_t c = 0; c < ncol; ++c) {
        DBS_RETURN_IF_ERROR(FillVector(table, table.columns[c], b->columns[c], from, n,
                                       duckdb_data_chunk_get_vector(chunk.get(), c), zero_date));
      }
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

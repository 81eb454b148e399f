#include "sources/files/duck_read.h"

#include <cstdio>
#include <limits>

#include "core/temporal.h"
#include "core/value.h"
#include "sources/files/duck.h"

namespace dbs::files {
namespace {

template <typename T>
const T* Data(duckdb_vector v) {
  return static_cast<const T*>(duckdb_vector_get_data(v));
}

}  // namespace

// The DuckDB type a logical type is read as (see ColumnRead).
std::string ReadType(LogicalType t) {
  switch (t) {
    case LogicalType::kBool:
      return "BOOLEAN";
    case LogicalType::kInt8:
    case LogicalType::kInt16:
    case LogicalType::kInt32:
    case LogicalType::kInt64:
      return "BIGINT";
    case LogicalType::kUInt8:
    case LogicalType::kUInt16:
    case LogicalType::kUInt32:
    case LogicalType::kUInt64:
      return "UBIGINT";
    case LogicalType::kFloat32:
      return "FLOAT";
    case LogicalType::kFloat64:
      return "DOUBLE";
    case LogicalType::kBytes:
    case LogicalType::kGeometry:
      return "BLOB";
    case LogicalType::kDate:
      return "DATE";
    case LogicalType::kTime:
      return "TIME";
    case LogicalType::kTimestamp:
      return "TIMESTAMP";
    case LogicalType::kTimestampTz:
      return "TIMESTAMPTZ";
    case LogicalType::kInterval:
      return "INTERVAL";
    default:
      return "VARCHAR";
  }
}

// A DuckDB column type (DESCRIBE's spelling) as a logical column; *expr wraps `id` so that
// it reads as ReadType(c.type).
Column ColumnFromDuck(const std::string& name, const std::string& duck_type, std::string* expr) {
  Column c;
  c.name = name;
  std::string t = duck_type;
  const std::string id = SqlIdent(name);
  *expr = id;
  auto is = [&](const char* n) { return t == n; };
  if (is("BOOLEAN")) {
    c.type = LogicalType::kBool;
  } else if (is("TINYINT") || is("SMALLINT") || is("UTINYINT")) {
    c.type = LogicalType::kInt16;
  } else if (is("INTEGER") || is("USMALLINT")) {
    c.type = LogicalType::kInt32;
  } else if (is("BIGINT") || is("UINTEGER")) {
    c.type = LogicalType::kInt64;
  } else if (is("UBIGINT") || is("HUGEINT") || is("UHUGEINT")) {
    c.type = LogicalType::kDecimal;
    c.precision = is("UBIGINT") ? 20 : 39;
    c.scale = 0;
  } else if (is("FLOAT")) {
    c.type = LogicalType::kFloat32;
  } else if (is("DOUBLE")) {
    c.type = LogicalType::kFloat64;
  } else if (t.rfind("DECIMAL(", 0) == 0) {
    c.type = LogicalType::kDecimal;
    unsigned p = 0, s = 0;
    if (std::sscanf(t.c_str(), "DECIMAL(%u,%u)", &p, &s) == 2) {
      c.precision = p;
      c.scale = s;
    }
  } else if (is("BLOB")) {
    c.type = LogicalType::kBytes;
  } else if (is("DATE")) {
    c.type = LogicalType::kDate;
  } else if (is("TIME")) {
    c.type = LogicalType::kTime;
  } else if (t.rfind("TIMESTAMP WITH TIME ZONE", 0) == 0) {
    c.type = LogicalType::kTimestampTz;
  } else if (t.rfind("TIMESTAMP", 0) == 0) {
    c.type = LogicalType::kTimestamp;  // _S, _MS, _NS: to microseconds
  } else if (is("INTERVAL")) {
    c.type = LogicalType::kInterval;
  } else if (is("UUID")) {
    c.type = LogicalType::kUuid;
  } else if (is("JSON")) {
    c.type = LogicalType::kJson;
  } else if (t.find('[') != std::string::npos || t.rfind("STRUCT", 0) == 0 ||
             t.rfind("MAP", 0) == 0 || t.rfind("UNION", 0) == 0) {
    c.type = LogicalType::kJson;  // nested values as JSON documents
    *expr = "to_json(" + id + ")";
  } else {
    c.type = LogicalType::kText;  // VARCHAR, ENUM, BIT, TIME WITH TIME ZONE, ...
  }
  *expr = "CAST(" + *expr + " AS " + ReadType(c.type) + ")";
  return c;
}

std::string_view StringAt(duckdb_vector v, size_t row) {
  duckdb_string_t* s = static_cast<duckdb_string_t*>(duckdb_vector_get_data(v)) + row;
  return std::string_view(duckdb_string_t_data(s), duckdb_string_t_length(*s));
}

// Appends row `row` of vector `v` (of ReadType(col->type())) to `col`.
Status AppendCell(duckdb_vector v, size_t row, const Column& c, ColumnVector* col) {
  uint64_t* validity = duckdb_vector_get_validity(v);
  if (validity != nullptr && !duckdb_validity_row_is_valid(validity, row)) {
    col->AppendNull();
    return Status::Ok();
  }
  switch (c.type) {
    case LogicalType::kBool:
      col->AppendBool(Data<bool>(v)[row]);
      break;
    case LogicalType::kInt8:
    case LogicalType::kInt16:
    case LogicalType::kInt32:
    case LogicalType::kInt64: {
      const int64_t x = Data<int64_t>(v)[row];
      const int64_t lim = c.type == LogicalType::kInt8    ? 127
                          : c.type == LogicalType::kInt16 ? 32767
                          : c.type == LogicalType::kInt32 ? 2147483647
                                                          : std::numeric_limits<int64_t>::max();
      if (x > lim || x < -lim - 1) {
        return Status::InvalidArgument("column " + c.name + ": " + std::to_string(x) +
                                       " is out of range");
      }
      col->AppendInt(x);
      break;
    }
    case LogicalType::kUInt8:
    case LogicalType::kUInt16:
    case LogicalType::kUInt32:
    case LogicalType::kUInt64:
      col->AppendUInt(Data<uint64_t>(v)[row]);
      break;
    case LogicalType::kFloat32:
      col->AppendFloat32(Data<float>(v)[row]);
      break;
    case LogicalType::kFloat64:
      col->AppendFloat64(Data<double>(v)[row]);
      break;
    case LogicalType::kDate: {
      const int32_t d = Data<int32_t>(v)[row];
      if (d == std::numeric_limits<int32_t>::max()) {
        col->AppendDate(kDatePosInfinity);
      } else if (d == -std::numeric_limits<int32_t>::max()) {
        col->AppendDate(kDateNegInfinity);
      } else {
        col->AppendDate(static_cast<int32_t>(d - kUnixToEpochDays));
      }
      break;
    }
    case LogicalType::kTime:
      col->AppendMicros(Data<int64_t>(v)[row]);
      break;
    case LogicalType::kTimestamp:
    case LogicalType::kTimestampTz: {
      const int64_t ts = Data<int64_t>(v)[row];
      if (ts == std::numeric_limits<int64_t>::max()) {
        col->AppendMicros(kTimestampPosInfinity);
      } else if (ts == -std::numeric_limits<int64_t>::max()) {
        col->AppendMicros(kTimestampNegInfinity);
      } else {
        col->AppendMicros(ts - kUnixToEpochMicros);
      }
      break;
    }
    case LogicalType::kInterval: {
      const duckdb_interval iv = Data<duckdb_interval>(v)[row];
      col->AppendInterval(Interval{iv.months, iv.days, iv.micros});
      break;
    }
    case LogicalType::kUuid: {
      Uuid u;
      if (!ParseUuid(StringAt(v, row), &u)) {
        return Status::InvalidArgument("column " + c.name + ": '" + std::string(StringAt(v, row)) +
                                       "' is not a UUID");
      }
      col->AppendUuid(u);
      break;
    }
    case LogicalType::kBit:
      col->AppendBytes(EncodeBits(StringAt(v, row)));
      break;
    default:  // text-like and bytes
      col->AppendBytes(StringAt(v, row));
      break;
  }
  return Status::Ok();
}

}  // namespace dbs::files

#include "postgres/pg_decode.h"

#include "core/array.h"
#include "core/bytes.h"
#include "postgres/pg_binary.h"

namespace dbs::pg {

namespace {

constexpr int kPgMaxDims = 6;

Status Bad(std::string_view what) {
  return Status::Corruption("malformed binary " + std::string(what) + " value from the server");
}

// Values go straight into a column.
class ColumnOut {
 public:
  explicit ColumnOut(ColumnVector* c) : c_(c) {}
  void Bool(bool v) { c_->AppendBool(v); }
  void I16(int16_t v) { c_->AppendInt(v); }
  void I32(int32_t v) { c_->AppendInt(v); }
  void I64(int64_t v) { c_->AppendInt(v); }
  void U32(uint32_t v) { c_->AppendUInt(v); }
  void U64(uint64_t v) { c_->AppendUInt(v); }
  void F32(float v) { c_->AppendFloat32(v); }
  void F64(double v) { c_->AppendFloat64(v); }
  void Date(int32_t v) { c_->AppendDate(v); }
  void Micros(int64_t v) { c_->AppendMicros(v); }
  void TimeTzValue(TimeTz v) { c_->AppendTimeTz(v); }
  void IntervalValue(Interval v) { c_->AppendInterval(v); }
  void UuidBytes(const char* p) {
    Uuid u;
    std::memcpy(u.bytes, p, 16);
    c_->AppendUuid(u);
  }
  void Bytes(std::string_view v) { c_->AppendBytes(v); }

 private:
  ColumnVector* c_;
};

// Values become elements of an encoded array (core/array.h): flag byte 1, then the fixed-width
// little-endian bytes or u32 length + bytes.
class ArrayOut {
 public:
  explicit ArrayOut(std::string* out) : out_(out) {}
  void Bool(bool v) { Fixed<uint8_t>(v ? 1 : 0); }
  void I16(int16_t v) { Fixed(v); }
  void I32(int32_t v) { Fixed(v); }
  void I64(int64_t v) { Fixed(v); }
  void U32(uint32_t v) { Fixed(v); }
  void U64(uint64_t v) { Fixed(v); }
  void F32(float v) { Fixed(v); }
  void F64(double v) { Fixed(v); }
  void Date(int32_t v) { Fixed(v); }
  void Micros(int64_t v) { Fixed(v); }
  void TimeTzValue(TimeTz v) {
    out_->push_back(1);
    AppendLE(out_, v.micros);
    AppendLE(out_, v.offset_seconds);
  }
  void IntervalValue(Interval v) {
    out_->push_back(1);
    AppendLE(out_, v.months);
    AppendLE(out_, v.days);
    AppendLE(out_, v.micros);
  }
  void UuidBytes(const char* p) {
    out_->push_back(1);
    out_->append(p, 16);
  }
  void Bytes(std::string_view v) {
    out_->push_back(1);
    AppendLE<uint32_t>(out_, static_cast<uint32_t>(v.size()));
    out_->append(v);
  }

 private:
  template <typename T>
  void Fixed(T v) {
    out_->push_back(1);
    AppendLE(out_, v);
  }
  std::string* out_;
};

template <typename Out>
Status DecodeScalar(Wire wire, std::string_view b, Out& out, std::string* scratch) {
  const char* p = b.data();
  switch (wire) {
    case Wire::kBool:
      if (b.size() != 1) return Bad("bool");
      out.Bool(p[0] != 0);
      return Status::Ok();
    case Wire::kInt2:
      if (b.size() != 2) return Bad("int2");
      out.I16(static_cast<int16_t>(LoadBE16(p)));
      return Status::Ok();
    case Wire::kInt4:
      if (b.size() != 4) return Bad("int4");
      out.I32(static_cast<int32_t>(LoadBE32(p)));
      return Status::Ok();
    case Wire::kInt8:
      if (b.size() != 8) return Bad("int8");
      out.I64(static_cast<int64_t>(LoadBE64(p)));
      return Status::Ok();
    case Wire::kUInt32:
      if (b.size() != 4) return Bad("oid");
      out.U32(LoadBE32(p));
      return Status::Ok();
    case Wire::kUInt64:
      if (b.size() != 8) return Bad("xid8");
      out.U64(LoadBE64(p));
      return Status::Ok();
    case Wire::kFloat4: {
      if (b.size() != 4) return Bad("float4");
      uint32_t bits = LoadBE32(p);
      float f;
      std::memcpy(&f, &bits, 4);
      out.F32(f);
      return Status::Ok();
    }
    case Wire::kFloat8: {
      if (b.size() != 8) return Bad("float8");
      uint64_t bits = LoadBE64(p);
      double d;
      std::memcpy(&d, &bits, 8);
      out.F64(d);
      return Status::Ok();
    }
    case Wire::kNumeric:
      scratch->clear();
      DBS_RETURN_IF_ERROR(AppendNumericText(b, scratch));
      out.Bytes(*scratch);
      return Status::Ok();
    case Wire::kRaw:
      out.Bytes(b);
      return Status::Ok();
    case Wire::kBpchar:
      while (!b.empty() && b.back() == ' ') b.remove_suffix(1);
      out.Bytes(b);
      return Status::Ok();
    case Wire::kJsonb:
      if (b.empty() || b[0] != 1) return Bad("jsonb (unknown version)");
      out.Bytes(b.substr(1));
      return Status::Ok();
    case Wire::kUuid:
      if (b.size() != 16) return Bad("uuid");
      out.UuidBytes(p);
      return Status::Ok();
    case Wire::kBit: {
      if (b.size() < 4) return Bad("bit");
      const int32_t bits = static_cast<int32_t>(LoadBE32(p));
      if (bits < 0 || b.size() - 4 != (static_cast<uint64_t>(bits) + 7) / 8) return Bad("bit");
      scratch->clear();
      AppendLE<uint32_t>(scratch, static_cast<uint32_t>(bits));
      scratch->append(b.substr(4));
      out.Bytes(*scratch);
      return Status::Ok();
    }
    case Wire::kDate:
      if (b.size() != 4) return Bad("date");
      out.Date(static_cast<int32_t>(LoadBE32(p)));
      return Status::Ok();
    case Wire::kTime:
    case Wire::kTimestamp:
      if (b.size() != 8) return Bad("time/timestamp");
      out.Micros(static_cast<int64_t>(LoadBE64(p)));
      return Status::Ok();
    case Wire::kTimeTz:
      if (b.size() != 12) return Bad("timetz");
      // PostgreSQL keeps the zone as seconds west of UTC; ours is east.
      out.TimeTzValue(
          TimeTz{static_cast<int64_t>(LoadBE64(p)), -static_cast<int32_t>(LoadBE32(p + 8))});
      return Status::Ok();
    case Wire::kInterval:
      if (b.size() != 16) return Bad("interval");
      out.IntervalValue(Interval{static_cast<int32_t>(LoadBE32(p + 12)),
                                 static_cast<int32_t>(LoadBE32(p + 8)),
                                 static_cast<int64_t>(LoadBE64(p))});
      return Status::Ok();
    case Wire::kGeometry:
      if (b.size() < 4) return Bad("geometry");
      scratch->clear();
      AppendLE<uint32_t>(scratch, LoadBE32(p));
      scratch->append(b.substr(4));
      out.Bytes(*scratch);
      return Status::Ok();
    case Wire::kArray:
      return Status::Internal("nested array plan");
  }
  return Status::Internal("unknown wire form");
}

// PostgreSQL binary array -> our array encoding in *out.
Status ConvertArray(const FieldPlan& plan, std::string_view b, std::string* out,
                    std::string* element_scratch) {
  const char* p = b.data();
  if (b.size() < 12) return Bad("array");
  const int32_t ndim = static_cast<int32_t>(LoadBE32(p));
  if (ndim < 0 || ndim > kPgMaxDims || ndim > kMaxArrayDims) return Bad("array (dimensions)");
  size_t pos = 12;  // skip ndim, has-null flag, element OID
  if (b.size() < pos + 8 * static_cast<size_t>(ndim)) return Bad("array");
  out->clear();
  out->push_back(static_cast<char>(plan.element_type));
  out->push_back(static_cast<char>(ndim));
  uint64_t count = ndim == 0 ? 0 : 1;
  for (int32_t d = 0; d < ndim; ++d) {
    const int32_t len = static_cast<int32_t>(LoadBE32(p + pos));
    const int32_t lower = static_cast<int32_t>(LoadBE32(p + pos + 4));
    pos += 8;
    if (len < 0) return Bad("array (negative dimension)");
    count *= static_cast<uint64_t>(len);
    // Every element takes at least its 4-byte length: bounds the count (and the product).
    if (count > b.size()) return Bad("array (more elements than bytes)");
    AppendLE<int32_t>(out, len);
    AppendLE<int32_t>(out, lower);
  }
  ArrayOut elements(out);
  for (uint64_t i = 0; i < count; ++i) {
    if (b.size() - pos < 4) return Bad("array (truncated)");
    const int32_t len = static_cast<int32_t>(LoadBE32(p + pos));
    pos += 4;
    if (len == -1) {
      out->push_back(0);
      continue;
    }
    if (len < 0 || b.size() - pos < static_cast<size_t>(len)) return Bad("array (truncated)");
    DBS_RETURN_IF_ERROR(DecodeScalar(plan.element_wire, b.substr(pos, static_cast<size_t>(len)),
                                     elements, element_scratch));
    pos += static_cast<size_t>(len);
  }
  if (pos != b.size()) return Bad("array (trailing bytes)");
  return Status::Ok();
}

}  // namespace

bool WireFits(Wire wire, LogicalType type) {
  using L = LogicalType;
  switch (wire) {
    case Wire::kBool:
      return type == L::kBool;
    case Wire::kInt2:
      return type == L::kInt16;
    case Wire::kInt4:
      return type == L::kInt32;
    case Wire::kInt8:
      return type == L::kInt64;
    case Wire::kUInt32:
      return type == L::kUInt32;
    case Wire::kUInt64:
      return type == L::kUInt64;
    case Wire::kFloat4:
      return type == L::kFloat32;
    case Wire::kFloat8:
      return type == L::kFloat64;
    case Wire::kNumeric:
      return type == L::kDecimal;
    case Wire::kRaw:
      return type == L::kText || type == L::kBytes || type == L::kJson || type == L::kEnum ||
             type == L::kSet;
    case Wire::kBpchar:
      return type == L::kText;
    case Wire::kJsonb:
      return type == L::kJson;
    case Wire::kUuid:
      return type == L::kUuid;
    case Wire::kBit:
      return type == L::kBit;
    case Wire::kDate:
      return type == L::kDate;
    case Wire::kTime:
      return type == L::kTime;
    case Wire::kTimeTz:
      return type == L::kTimeTz;
    case Wire::kTimestamp:
      return type == L::kTimestamp || type == L::kTimestampTz;
    case Wire::kInterval:
      return type == L::kInterval;
    case Wire::kGeometry:
      return type == L::kGeometry;
    case Wire::kArray:
      return type == L::kArray;
  }
  return false;
}

Status DecodeField(const FieldPlan& plan, std::string_view bytes, ColumnVector* col,
                   DecodeScratch* scratch) {
  if (plan.wire != Wire::kArray) {
    ColumnOut out(col);
    return DecodeScalar(plan.wire, bytes, out, &scratch->value);
  }
  DBS_RETURN_IF_ERROR(ConvertArray(plan, bytes, &scratch->value, &scratch->element));
  col->AppendBytes(scratch->value);
  return Status::Ok();
}

std::optional<Wire> BuiltinWire(uint32_t oid) {
  switch (oid) {
    case 16:
      return Wire::kBool;
    case 21:
      return Wire::kInt2;
    case 23:
      return Wire::kInt4;
    case 20:
      return Wire::kInt8;
    case 26:  // oid
    case 28:  // xid
    case 29:  // cid
      return Wire::kUInt32;
    case 5069:
      return Wire::kUInt64;  // xid8
    case 700:
      return Wire::kFloat4;
    case 701:
      return Wire::kFloat8;
    case 1700:
      return Wire::kNumeric;
    case 25:    // text
    case 1043:  // varchar
    case 19:    // name
    case 17:    // bytea
    case 114:   // json
      return Wire::kRaw;
    case 1042:
      return Wire::kBpchar;
    case 3802:
      return Wire::kJsonb;
    case 2950:
      return Wire::kUuid;
    case 1560:  // bit
    case 1562:  // varbit
      return Wire::kBit;
    case 1082:
      return Wire::kDate;
    case 1083:
      return Wire::kTime;
    case 1266:
      return Wire::kTimeTz;
    case 1114:  // timestamp
    case 1184:  // timestamptz
      return Wire::kTimestamp;
    case 1186:
      return Wire::kInterval;
    default:
      return std::nullopt;
  }
}

Result<Bundle> DecodeCopyRows(const PgCopyRows& rows, const std::vector<Column>& columns) {
  const size_t n = rows.type_oids.size();
  if (n != columns.size()) {
    return Status::InvalidArgument("COPY tuples have " + std::to_string(n) +
                                   " columns, the table " + std::to_string(columns.size()));
  }
  std::vector<FieldPlan> plans(n);
  Bundle out;
  out.columns.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::optional<Wire> w = BuiltinWire(rows.type_oids[i]);
    if (!w || !WireFits(*w, columns[i].type)) {
      return Status::InvalidArgument("column " + columns[i].name + ": COPY values of type " +
                                     std::to_string(rows.type_oids[i]) + " do not give " +
                                     std::string(LogicalTypeName(columns[i].type)));
    }
    plans[i].type = columns[i].type;
    plans[i].wire = *w;
    out.columns.emplace_back(columns[i].type, columns[i].element_type);
  }
  DBS_RETURN_IF_ERROR(ValidateCopyTuples(rows.tuples, rows.rows, n));
  DecodeScratch scratch;
  const char* p = rows.tuples.data();
  size_t pos = 0;
  for (size_t r = 0; r < rows.rows; ++r) {
    pos += 2;  // field count, checked above
    for (size_t i = 0; i < n; ++i) {
      const int32_t len = static_cast<int32_t>(LoadBE32(p + pos));
      pos += 4;
      if (len == -1) {
        out.columns[i].AppendNull();
        continue;
      }
      Status s = DecodeField(plans[i], std::string_view(p + pos, static_cast<size_t>(len)),
                             &out.columns[i], &scratch);
      if (!s.ok()) return s.WithContext("column " + columns[i].name);
      pos += static_cast<size_t>(len);
    }
  }
  return out;
}

}  // namespace dbs::pg

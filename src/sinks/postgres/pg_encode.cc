#include "sinks/postgres/pg_encode.h"

#include <limits>

#include "core/array.h"
#include "core/bytes.h"
#include "core/temporal.h"
#include "postgres/pg_binary.h"

namespace dbs::pg {

namespace {

using L = LogicalType;

bool IsTextual(L t) { return t == L::kText || t == L::kEnum || t == L::kSet; }
bool IsInteger(L t) { return IsSignedInt(t) || IsUnsignedInt(t); }

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// An integer slot of any width and signedness, widened.
__int128 IntegerAt(L t, const char* p) {
  switch (t) {
    case L::kInt8:
      return Load<int8_t>(p);
    case L::kInt16:
      return Load<int16_t>(p);
    case L::kInt32:
      return Load<int32_t>(p);
    case L::kInt64:
      return Load<int64_t>(p);
    case L::kUInt8:
      return Load<uint8_t>(p);
    case L::kUInt16:
      return Load<uint16_t>(p);
    case L::kUInt32:
      return Load<uint32_t>(p);
    case L::kUInt64:
      return Load<uint64_t>(p);
    default:
      return 0;
  }
}

std::string IntText(__int128 v) {
  if (v >= 0) return std::to_string(static_cast<uint64_t>(v));
  return std::to_string(static_cast<int64_t>(v));
}

Status OutOfRange(__int128 v, const char* type) {
  return Status::InvalidArgument("value " + IntText(v) + " is out of range for " + type);
}

Status ZeroDate(ZeroDatePolicy policy, bool* null, bool* neg_infinity) {
  switch (policy) {
    case ZeroDatePolicy::kNull:
      *null = true;
      return Status::Ok();
    case ZeroDatePolicy::kNegInfinity:
      *neg_infinity = true;
      return Status::Ok();
    case ZeroDatePolicy::kError:
      break;
  }
  return Status::InvalidArgument(
      "a MySQL zero date cannot be stored in PostgreSQL (zeroDate is 'error'; choose 'null' or "
      "'-infinity' to load it)");
}

// Appends the binary value of one non-NULL scalar; sets *null when the value becomes NULL.
Status EncodeScalar(Enc enc, L t, const char* fixed, std::string_view var, ZeroDatePolicy zd,
                    std::string* out, bool* null) {
  switch (enc) {
    case Enc::kBool:
      out->push_back(Load<uint8_t>(fixed) ? 1 : 0);
      return Status::Ok();
    case Enc::kInt2: {
      __int128 v = IntegerAt(t, fixed);
      if (v < std::numeric_limits<int16_t>::min() || v > std::numeric_limits<int16_t>::max()) {
        return OutOfRange(v, "smallint");
      }
      AppendBE16(out, static_cast<uint16_t>(static_cast<int16_t>(v)));
      return Status::Ok();
    }
    case Enc::kInt4: {
      __int128 v = IntegerAt(t, fixed);
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
        return OutOfRange(v, "integer");
      }
      AppendBE32(out, static_cast<uint32_t>(static_cast<int32_t>(v)));
      return Status::Ok();
    }
    case Enc::kInt8: {
      __int128 v = IntegerAt(t, fixed);
      if (v < std::numeric_limits<int64_t>::min() || v > std::numeric_limits<int64_t>::max()) {
        return OutOfRange(v, "bigint");
      }
      AppendBE64(out, static_cast<uint64_t>(static_cast<int64_t>(v)));
      return Status::Ok();
    }
    case Enc::kUInt32: {
      __int128 v = IntegerAt(t, fixed);
      if (v < 0 || v > std::numeric_limits<uint32_t>::max()) return OutOfRange(v, "oid");
      AppendBE32(out, static_cast<uint32_t>(v));
      return Status::Ok();
    }
    case Enc::kUInt64: {
      __int128 v = IntegerAt(t, fixed);
      if (v < 0) return OutOfRange(v, "xid8");
      AppendBE64(out, static_cast<uint64_t>(v));
      return Status::Ok();
    }
    case Enc::kIntNumeric: {
      __int128 v = IntegerAt(t, fixed);
      if (v < 0) {
        AppendNumericFromInt64(static_cast<int64_t>(v), out);
      } else {
        AppendNumericFromUInt64(static_cast<uint64_t>(v), false, out);
      }
      return Status::Ok();
    }
    case Enc::kFloat4: {
      float f = t == L::kFloat32 ? Load<float>(fixed) : static_cast<float>(Load<double>(fixed));
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      AppendBE32(out, bits);
      return Status::Ok();
    }
    case Enc::kFloat8: {
      double d = t == L::kFloat64 ? Load<double>(fixed) : static_cast<double>(Load<float>(fixed));
      uint64_t bits;
      std::memcpy(&bits, &d, 8);
      AppendBE64(out, bits);
      return Status::Ok();
    }
    case Enc::kDecimalNumeric:
      return AppendNumericBinary(var, out);
    case Enc::kRaw:
      out->append(var);
      return Status::Ok();
    case Enc::kJsonb:
      out->push_back(1);
      out->append(var);
      return Status::Ok();
    case Enc::kUuid:
      out->append(fixed, 16);
      return Status::Ok();
    case Enc::kBit: {
      if (var.size() < 4) return Status::Corruption("malformed bit string");
      const uint32_t bits = Load<uint32_t>(var.data());
      if (bits > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()) ||
          var.size() - 4 != (static_cast<uint64_t>(bits) + 7) / 8) {
        return Status::Corruption("malformed bit string");
      }
      AppendBE32(out, bits);
      out->append(var.substr(4));
      return Status::Ok();
    }
    case Enc::kDate: {
      int32_t d = Load<int32_t>(fixed);
      if (DateKind(d) == TemporalKind::kZeroDate) {
        bool neg = false;
        DBS_RETURN_IF_ERROR(ZeroDate(zd, null, &neg));
        if (*null) return Status::Ok();
        d = kDateNegInfinity;
      }
      AppendBE32(out, static_cast<uint32_t>(d));
      return Status::Ok();
    }
    case Enc::kTimestamp: {
      int64_t v = Load<int64_t>(fixed);
      if (TimestampKind(v) == TemporalKind::kZeroDate) {
        bool neg = false;
        DBS_RETURN_IF_ERROR(ZeroDate(zd, null, &neg));
        if (*null) return Status::Ok();
        v = kTimestampNegInfinity;
      }
      AppendBE64(out, static_cast<uint64_t>(v));
      return Status::Ok();
    }
    case Enc::kTime: {
      const int64_t v = Load<int64_t>(fixed);
      if (v < 0 || v > int64_t{86400} * 1000000) {
        // MySQL TIME spans -838:59:59..838:59:59; PostgreSQL time only 00:00:00..24:00:00.
        return Status::InvalidArgument(
            "the time " + FormatTime(v) +
            " is outside PostgreSQL's time range 00:00:00..24:00:00 (set "
            "typeMapping.mysqlTimeAsInterval to create the column as interval)");
      }
      AppendBE64(out, static_cast<uint64_t>(v));
      return Status::Ok();
    }
    case Enc::kTimeInterval:
      AppendBE64(out, static_cast<uint64_t>(Load<int64_t>(fixed)));
      AppendBE32(out, 0);  // days
      AppendBE32(out, 0);  // months
      return Status::Ok();
    case Enc::kTimeTz:
      AppendBE64(out, static_cast<uint64_t>(Load<int64_t>(fixed)));
      AppendBE32(out, static_cast<uint32_t>(-Load<int32_t>(fixed + 8)));
      return Status::Ok();
    case Enc::kInterval:
      AppendBE64(out, static_cast<uint64_t>(Load<int64_t>(fixed + 8)));  // micros
      AppendBE32(out, static_cast<uint32_t>(Load<int32_t>(fixed + 4)));  // days
      AppendBE32(out, static_cast<uint32_t>(Load<int32_t>(fixed)));      // months
      return Status::Ok();
    case Enc::kGeometryEwkb: {
      // u32 LE SRID + WKB -> EWKB: the SRID flag in the type word, the SRID after it.
      if (var.size() < 9) return Status::Corruption("malformed geometry value");
      const uint32_t srid = Load<uint32_t>(var.data());
      std::string_view wkb = var.substr(4);
      if (srid == 0) {
        out->append(wkb);
        return Status::Ok();
      }
      const bool le = wkb[0] == 1;
      uint32_t type = Load<uint32_t>(wkb.data() + 1);
      if (!le) type = __builtin_bswap32(type);
      type |= 0x20000000u;
      uint32_t srid_word = srid;
      if (!le) {
        type = __builtin_bswap32(type);
        srid_word = __builtin_bswap32(srid_word);
      }
      out->push_back(wkb[0]);
      AppendLE(out, type);
      AppendLE(out, srid_word);
      out->append(wkb.substr(5));
      return Status::Ok();
    }
    case Enc::kArray:
      return Status::Internal("nested array encoder");
  }
  return Status::Internal("unknown encoder");
}

// Our array encoding -> a PostgreSQL binary array.
Status EncodeArray(const Encoder& e, std::string_view bytes, ZeroDatePolicy zd, std::string* out) {
  ByteReader r(bytes);
  uint8_t et = 0, nd = 0;
  if (!r.Read(&et) || !r.Read(&nd)) return Status::Corruption("malformed array value");
  if (static_cast<L>(et) != e.element_type) {
    return Status::InvalidArgument(
        "array elements are " + std::string(LogicalTypeName(static_cast<L>(et))) +
        ", the column's are " + std::string(LogicalTypeName(e.element_type)));
  }
  if (nd > kMaxArrayDims) return Status::Corruption("malformed array value");
  AppendBE32(out, nd);
  const size_t has_null_at = out->size();
  AppendBE32(out, 0);
  AppendBE32(out, e.element_oid);
  uint64_t count = nd == 0 ? 0 : 1;
  for (int d = 0; d < nd; ++d) {
    int32_t len = 0, lower = 0;
    if (!r.Read(&len) || !r.Read(&lower) || len < 0) {
      return Status::Corruption("malformed array value");
    }
    count *= static_cast<uint64_t>(len);
    if (count > bytes.size()) return Status::Corruption("malformed array value");
    AppendBE32(out, static_cast<uint32_t>(len));
    AppendBE32(out, static_cast<uint32_t>(lower));
  }
  const uint32_t width = FixedWidth(e.element_type);
  bool has_null = false;
  for (uint64_t i = 0; i < count; ++i) {
    uint8_t flag = 0;
    if (!r.Read(&flag) || flag > 1) return Status::Corruption("malformed array value");
    if (flag == 0) {
      AppendBE32(out, 0xFFFFFFFFu);
      has_null = true;
      continue;
    }
    std::string_view value;
    if (width != 0) {
      if (!r.Bytes(width, &value)) return Status::Corruption("malformed array value");
    } else {
      uint32_t len = 0;
      if (!r.Read(&len) || !r.Bytes(len, &value)) {
        return Status::Corruption("malformed array value");
      }
    }
    const size_t at = out->size();
    AppendBE32(out, 0);
    bool null = false;
    DBS_RETURN_IF_ERROR(
        EncodeScalar(e.element_enc, e.element_type, value.data(), value, zd, out, &null));
    if (null) {
      out->resize(at);
      AppendBE32(out, 0xFFFFFFFFu);
      has_null = true;
      continue;
    }
    StoreBE32(out->data() + at, static_cast<uint32_t>(out->size() - at - 4));
  }
  if (r.remaining() != 0) return Status::Corruption("malformed array value");
  if (has_null) StoreBE32(out->data() + has_null_at, 1);
  return Status::Ok();
}

// The direct encoding of a scalar logical type into a non-domain, non-array target type.
std::optional<Enc> ScalarEncoder(L t, const TypeInfo& target) {
  if (target.type_type == 'e') {
    if (t == L::kText || t == L::kEnum) return Enc::kRaw;
    return std::nullopt;
  }
  if (target.type_type != 'b') return std::nullopt;
  const std::string& n = target.name;
  if (n == "bool") return t == L::kBool ? std::optional(Enc::kBool) : std::nullopt;
  if (n == "int2") return IsInteger(t) ? std::optional(Enc::kInt2) : std::nullopt;
  if (n == "int4") return IsInteger(t) ? std::optional(Enc::kInt4) : std::nullopt;
  if (n == "int8") return IsInteger(t) ? std::optional(Enc::kInt8) : std::nullopt;
  if (n == "oid" || n == "xid" || n == "cid") {
    return IsInteger(t) ? std::optional(Enc::kUInt32) : std::nullopt;
  }
  if (n == "xid8") return IsInteger(t) ? std::optional(Enc::kUInt64) : std::nullopt;
  if (n == "numeric") {
    if (IsInteger(t)) return Enc::kIntNumeric;
    if (t == L::kDecimal) return Enc::kDecimalNumeric;
    return std::nullopt;
  }
  if (n == "float4" || n == "float8") {
    if (t != L::kFloat32 && t != L::kFloat64) return std::nullopt;
    return n == "float4" ? Enc::kFloat4 : Enc::kFloat8;
  }
  if (n == "text" || n == "varchar" || n == "bpchar" || n == "name" || n == "citext") {
    if (IsTextual(t) || t == L::kJson) return Enc::kRaw;
    return std::nullopt;
  }
  if (n == "bytea") {
    if (t == L::kBytes) return Enc::kRaw;
    if (t == L::kGeometry) return Enc::kRaw;
    return std::nullopt;
  }
  if (n == "json") return t == L::kJson ? std::optional(Enc::kRaw) : std::nullopt;
  if (n == "jsonb") return t == L::kJson ? std::optional(Enc::kJsonb) : std::nullopt;
  if (n == "uuid") return t == L::kUuid ? std::optional(Enc::kUuid) : std::nullopt;
  if (n == "bit" || n == "varbit") return t == L::kBit ? std::optional(Enc::kBit) : std::nullopt;
  if (n == "date") return t == L::kDate ? std::optional(Enc::kDate) : std::nullopt;
  if (n == "time") return t == L::kTime ? std::optional(Enc::kTime) : std::nullopt;
  if (n == "timetz") return t == L::kTimeTz ? std::optional(Enc::kTimeTz) : std::nullopt;
  if (n == "timestamp" || n == "timestamptz") {
    if (t == L::kTimestamp || t == L::kTimestampTz) return Enc::kTimestamp;
    return std::nullopt;
  }
  if (n == "interval") {
    if (t == L::kInterval) return Enc::kInterval;
    if (t == L::kTime) return Enc::kTimeInterval;
    return std::nullopt;
  }
  if (n == "geometry") return t == L::kGeometry ? std::optional(Enc::kGeometryEwkb) : std::nullopt;
  return std::nullopt;
}

const char* ScalarStageType(L t) {
  switch (t) {
    case L::kBool:
      return "boolean";
    case L::kInt8:
    case L::kInt16:
    case L::kUInt8:
      return "smallint";
    case L::kInt32:
    case L::kUInt16:
      return "integer";
    case L::kInt64:
    case L::kUInt32:
      return "bigint";
    case L::kUInt64:
    case L::kDecimal:
      return "numeric";
    case L::kFloat32:
      return "real";
    case L::kFloat64:
      return "double precision";
    case L::kBytes:
    case L::kGeometry:
      return "bytea";
    case L::kUuid:
      return "uuid";
    case L::kBit:
      return "varbit";
    case L::kDate:
      return "date";
    case L::kTime:  // MySQL TIME spans ±838:59:59: only interval holds all of it
    case L::kInterval:
      return "interval";
    case L::kTimeTz:
      return "timetz";
    case L::kTimestamp:
      return "timestamp";
    case L::kTimestampTz:
      return "timestamptz";
    default:  // text, enum, set, json
      return "text";
  }
}

}  // namespace

std::optional<Encoder> ChooseEncoder(LogicalType type, LogicalType element_type,
                                     const TypeInfo& target, const TypeCache& types) {
  Encoder e;
  e.type = type;
  e.element_type = element_type;
  if (type == L::kArray) {
    if (target.element == 0) return std::nullopt;
    const TypeInfo* elem = types.Base(target.element);
    if (elem == nullptr) return std::nullopt;
    std::optional<Enc> ee = ScalarEncoder(element_type, *elem);
    if (!ee) return std::nullopt;
    e.enc = Enc::kArray;
    e.element_enc = *ee;
    e.element_oid = target.element;
    return e;
  }
  std::optional<Enc> se = ScalarEncoder(type, target);
  if (!se) return std::nullopt;
  e.enc = *se;
  return e;
}

std::string StageType(LogicalType type, LogicalType element_type) {
  if (type == L::kArray) return std::string(ScalarStageType(element_type)) + "[]";
  return ScalarStageType(type);
}

Status EncodeCell(const Encoder& e, const ColumnVector& col, size_t row, ZeroDatePolicy zero_date,
                  std::string* out) {
  if (col.IsNull(row)) {
    AppendBE32(out, 0xFFFFFFFFu);
    return Status::Ok();
  }
  const size_t at = out->size();
  AppendBE32(out, 0);
  bool null = false;
  const bool fixed = col.width() != 0;
  const char* slot = fixed ? col.FixedSlot(row) : nullptr;
  const std::string_view var = fixed ? std::string_view() : col.GetBytes(row);
  Status s = e.enc == Enc::kArray ? EncodeArray(e, var, zero_date, out)
                                  : EncodeScalar(e.enc, e.type, slot, var, zero_date, out, &null);
  if (!s.ok()) {
    out->resize(at);
    return s;
  }
  if (null) {
    out->resize(at);
    AppendBE32(out, 0xFFFFFFFFu);
    return Status::Ok();
  }
  StoreBE32(out->data() + at, static_cast<uint32_t>(out->size() - at - 4));
  return Status::Ok();
}

}  // namespace dbs::pg

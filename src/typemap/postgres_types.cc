#include "typemap/postgres_types.h"

#include <cctype>
#include <string_view>

#include "typemap/sql.h"
#include "typemap/type_text.h"

namespace dbs {

namespace {

// The logical type and attributes one PostgreSQL type maps to.
struct Mapped {
  LogicalType type = LogicalType::kText;
  LogicalType element_type = LogicalType::kNone;
  std::optional<uint32_t> length;
  std::optional<uint32_t> precision;
  std::optional<uint32_t> scale;
  std::vector<std::string> labels;
  std::optional<uint32_t> srid;
  std::string source_type;
};

Status Unsupported(const PgColumnInfo& info, std::string_view type) {
  return Status::Unsupported("column '" + info.name + "' has PostgreSQL type '" +
                             std::string(type) + "', which dbstreams does not support");
}

// Types whose values travel as their text form.
bool IsTextLike(std::string_view n) {
  static constexpr std::string_view kNames[] = {
      // character types
      "bpchar", "varchar", "text", "name", "char", "citext",
      // document, network, search and log-position types
      "xml", "inet", "cidr", "macaddr", "macaddr8", "tsvector", "tsquery", "jsonpath", "pg_lsn",
      // native geometric types (their text form, not WKB)
      "point", "line", "lseg", "box", "path", "polygon", "circle",
      // system and catalog types
      "tid", "txid_snapshot", "pg_snapshot", "int2vector", "oidvector", "aclitem", "refcursor",
      "regclass", "regproc", "regprocedure", "regoper", "regoperator", "regtype", "regconfig",
      "regdictionary", "regnamespace", "regrole", "regcollation",
      // common extensions
      "hstore", "ltree", "lquery", "ltxtquery", "cube", "seg", "isbn", "isbn13", "ismn", "ismn13",
      "issn", "issn13", "ean13", "upc", "box2d", "box3d", "raster"};
  for (std::string_view k : kNames) {
    if (n == k) return true;
  }
  return false;
}

// Typmod-derived numbers, falling back to the formatted text ("numeric(12,2)[]").
void Typmods(const PgTypeInfo& t, std::optional<int32_t>* a, std::optional<int32_t>* b) {
  TypeText tt = SplitTypeText(t.formatted);
  auto arg = [&](size_t k) -> std::optional<int32_t> {
    if (k >= tt.args.size()) return std::nullopt;
    auto v = ParseInt64(tt.args[k]);
    if (!v || *v < INT32_MIN || *v > INT32_MAX) return std::nullopt;
    return static_cast<int32_t>(*v);
  };
  *a = arg(0);
  *b = arg(1);
}

std::optional<uint32_t> NonNegative(std::optional<int32_t> v) {
  if (!v || *v < 0) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

// Maps a base type by its typname. `t` supplies the typmods (for an array, its own typmods
// describe the element).
Result<Mapped> MapBaseName(const PgColumnInfo& info, const std::string& typname,
                           const PgTypeInfo& t, const PgMappingOptions& options) {
  Mapped m;
  std::optional<int32_t> arg0, arg1;
  Typmods(t, &arg0, &arg1);
  const std::optional<int32_t> length = t.length ? t.length : arg0;
  const std::optional<int32_t> precision = t.precision ? t.precision : arg0;
  const std::optional<int32_t> scale = t.scale ? t.scale : arg1;
  const std::string n = AsciiLower(typname);

  if (n == "bool") {
    m.type = LogicalType::kBool;
  } else if (n == "int2") {
    m.type = LogicalType::kInt16;
  } else if (n == "int4") {
    m.type = LogicalType::kInt32;
  } else if (n == "int8") {
    m.type = LogicalType::kInt64;
  } else if (n == "oid" || n == "xid" || n == "cid") {
    m.type = LogicalType::kUInt32;
  } else if (n == "xid8") {
    m.type = LogicalType::kUInt64;
  } else if (n == "float4") {
    m.type = LogicalType::kFloat32;
  } else if (n == "float8") {
    m.type = LogicalType::kFloat64;
  } else if (n == "numeric") {
    m.type = LogicalType::kDecimal;
    if (precision && *precision > 0) {
      int32_t s = scale.value_or(0);
      if (s < 0) {
        // numeric(p,-s) rounds to 10^s: its values are integers of up to p+s digits.
        m.precision = static_cast<uint32_t>(*precision) + static_cast<uint32_t>(-s);
        m.scale = 0;
      } else {
        m.precision = static_cast<uint32_t>(*precision);
        m.scale = static_cast<uint32_t>(s);
      }
    }
  } else if (n == "money") {
    // int64 cents: -92233720368547758.08 .. +92233720368547758.07 (lc_monetary with 2 digits).
    m.type = LogicalType::kDecimal;
    m.precision = 19;
    m.scale = 2;
  } else if (n == "bytea") {
    m.type = LogicalType::kBytes;
  } else if (n == "date") {
    m.type = LogicalType::kDate;
  } else if (n == "time" || n == "timetz" || n == "timestamp" || n == "timestamptz" ||
             n == "interval") {
    m.type = n == "time"          ? LogicalType::kTime
             : n == "timetz"      ? LogicalType::kTimeTz
             : n == "timestamp"   ? LogicalType::kTimestamp
             : n == "timestamptz" ? LogicalType::kTimestampTz
                                  : LogicalType::kInterval;
    m.precision = NonNegative(precision);
  } else if (n == "uuid") {
    m.type = LogicalType::kUuid;
  } else if (n == "json" || n == "jsonb") {
    m.type = LogicalType::kJson;
  } else if (n == "bit" || n == "varbit") {
    m.type = LogicalType::kBit;
    m.length = NonNegative(length);
    if (n == "bit" && !m.length) m.length = 1;
  } else if (n == "geometry" || n == "geography") {
    m.type = LogicalType::kGeometry;
    if (info.srid != 0) {
      m.srid = info.srid;
    } else {
      TypeText tt = SplitTypeText(t.formatted);
      if (tt.args.size() >= 2) m.srid = ParseUInt32(tt.args[1]);
    }
  } else if (IsTextLike(n)) {
    m.type = LogicalType::kText;
    if (n == "bpchar" || n == "varchar") {
      m.length = NonNegative(length);
      if (n == "bpchar" && !m.length) m.length = 1;
    } else if (n == "name") {
      m.length = 63;
    } else if (n == "char") {
      m.length = 1;
    }
  } else if (options.unknown_as_text) {
    m.type = LogicalType::kText;
  } else {
    return Unsupported(info, t.formatted.empty() ? typname : t.formatted);
  }
  return m;
}

// Maps a non-array, non-domain type of any typtype.
Result<Mapped> MapScalar(const PgColumnInfo& info, const std::string& typname, char typtype,
                         const PgTypeInfo& t, const PgMappingOptions& options) {
  switch (typtype) {
    case 'b':
      return MapBaseName(info, typname, t, options);
    case 'e': {
      Mapped m;
      m.type = LogicalType::kEnum;
      m.labels = t.enum_labels;
      if (m.labels.empty()) {
        return Status::InvalidArgument("column '" + info.name + "' is of enum type '" +
                                       t.formatted + "' but no labels were given");
      }
      return m;
    }
    case 'c':
    case 'r':
    case 'm': {
      Mapped m;
      m.type = LogicalType::kText;
      return m;
    }
    default:
      return Unsupported(info, t.formatted.empty() ? typname : t.formatted);
  }
}

bool IsArray(const PgTypeInfo& t) {
  return t.category == 'A' && !t.element_name.empty() && !t.name.empty() && t.name[0] == '_';
}

// Maps a type that may be an array, but not a domain itself.
Result<Mapped> MapType(const PgColumnInfo& info, const PgTypeInfo& t,
                       const PgMappingOptions& options) {
  if (!IsArray(t)) {
    DBS_ASSIGN_OR_RETURN(Mapped m, MapScalar(info, t.name, t.type_type, t, options));
    m.source_type = t.formatted;
    return m;
  }
  Mapped elem;
  if (t.element_type_type == 'd') {
    if (!info.domain_base) {
      return Status::InvalidArgument("column '" + info.name + "' is an array of domain '" +
                                     t.element_name + "' but the domain's base type is missing");
    }
    const PgTypeInfo& base = *info.domain_base;
    if (IsArray(base)) return Unsupported(info, t.formatted);
    DBS_ASSIGN_OR_RETURN(elem, MapScalar(info, base.name, base.type_type, base, options));
    elem.source_type = base.formatted + "[]";
  } else {
    DBS_ASSIGN_OR_RETURN(elem, MapScalar(info, t.element_name, t.element_type_type, t, options));
    elem.source_type = t.formatted;
  }
  Mapped m = std::move(elem);
  m.element_type = m.type;
  m.type = LogicalType::kArray;
  return m;
}

bool IsNextval(std::string_view expr) {
  expr = TrimSpace(expr);
  constexpr std::string_view kFn = "nextval(";
  return expr.size() > kFn.size() && EqualsIgnoreCase(expr.substr(0, kFn.size()), kFn);
}

}  // namespace

Result<Column> ColumnFromPostgres(const PgColumnInfo& info, const PgMappingOptions& options) {
  Mapped m;
  if (info.type.type_type == 'd') {
    if (!info.domain_base) {
      return Status::InvalidArgument("column '" + info.name + "' is of domain '" +
                                     info.type.formatted + "' but its base type is missing");
    }
    if (info.domain_base->type_type == 'd') {
      return Status::InvalidArgument("column '" + info.name +
                                     "': the domain's base type must be resolved to a non-domain");
    }
    PgColumnInfo base_info = info;
    base_info.domain_base.reset();
    DBS_ASSIGN_OR_RETURN(m, MapType(base_info, *info.domain_base, options));
  } else {
    DBS_ASSIGN_OR_RETURN(m, MapType(info, info.type, options));
  }

  Column c;
  c.name = info.name;
  c.source_type = m.source_type;
  c.type = m.type;
  c.element_type = m.element_type;
  c.length = m.length;
  c.precision = m.precision;
  c.scale = m.scale;
  c.enum_values = std::move(m.labels);
  c.srid = m.srid.value_or(0);
  c.nullable = !info.not_null;
  c.collation = info.collation;
  c.comment = info.comment;

  if (info.generated == 's') {
    if (!info.default_expr || TrimSpace(*info.default_expr).empty()) {
      return Status::InvalidArgument("column '" + info.name +
                                     "' is generated but its expression is missing");
    }
    c.generated_expr = *info.default_expr;
    c.generated_stored = true;
    return c;
  }
  if (info.generated != '\0') {
    return Status::Unsupported("column '" + info.name + "' has attgenerated '" +
                               std::string(1, info.generated) +
                               "', which dbstreams does not support");
  }
  if (info.identity == 'a' || info.identity == 'd') {
    c.auto_increment = true;
  } else if (info.default_expr) {
    c.default_expr = *info.default_expr;
    c.auto_increment = IsNextval(*info.default_expr);
  }
  return c;
}

}  // namespace dbs

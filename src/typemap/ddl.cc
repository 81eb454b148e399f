#include "typemap/ddl.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "core/temporal.h"
#include "typemap/mysql_types.h"
#include "typemap/type_text.h"

namespace dbs {

namespace {

// InnoDB limits (DYNAMIC row format, 16 KiB pages): bytes in one index key, and in a row's
// column definitions (BLOB/TEXT count as a pointer).
constexpr uint32_t kMysqlMaxKeyBytes = 3072;
constexpr uint32_t kMysqlMaxRowBytes = 65535;
// varchar(n) of utf8mb4 fits MySQL's 65535-byte column limit up to this n.
constexpr uint32_t kMysqlMaxVarchar = 16383;
// Characters kept for a TEXT/BLOB part of a non-unique MySQL index.
constexpr uint32_t kMysqlIndexPrefix = 255;

void Warn(const DdlOptions& o, std::string msg) {
  if (o.warnings != nullptr) o.warnings->push_back(std::move(msg));
}

std::string Where(const TableSchema& t, const Column& c) {
  return t.QualifiedName() + "." + c.name;
}

std::string TargetSchema(const TableSchema& t, const DdlOptions& o) {
  return o.target_schema.empty() ? t.schema : o.target_schema;
}

std::string TableName(const TableSchema& t, Dialect d, const DdlOptions& o) {
  return QualifiedName(TargetSchema(t, o), t.name, d);
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

bool IsMysqlTextLob(std::string_view base) {
  return base == "tinytext" || base == "text" || base == "mediumtext" || base == "longtext";
}
bool IsMysqlBlob(std::string_view base) {
  return base == "tinyblob" || base == "blob" || base == "mediumblob" || base == "longblob";
}
bool IsMysqlGeometry(std::string_view base) {
  return base == "geometry" || base == "point" || base == "linestring" || base == "polygon" ||
         base == "multipoint" || base == "multilinestring" || base == "multipolygon" ||
         base == "geometrycollection" || base == "geomcollection";
}
// Types whose DEFAULT must be written as a parenthesized expression.
bool MysqlNeedsExpressionDefault(std::string_view base) {
  return IsMysqlTextLob(base) || IsMysqlBlob(base) || base == "json" || IsMysqlGeometry(base);
}
bool IsMysqlStringType(std::string_view base) {
  return base == "char" || base == "varchar" || IsMysqlTextLob(base) || base == "enum" ||
         base == "set";
}

// Estimated bytes a MySQL column takes in a row (or an index key); TEXT/BLOB count as their
// pointer here and set *lob.
uint32_t MysqlBytes(std::string_view type, bool* lob) {
  TypeText tt = SplitTypeText(type);
  auto arg = [&](size_t k, uint32_t def) {
    return k < tt.args.size() ? ParseUInt32(tt.args[k]).value_or(def) : def;
  };
  const std::string& b = tt.base;
  *lob = false;
  if (b == "varchar") return arg(0, 1) * 4 + 2;
  if (b == "char") return arg(0, 1) * 4;
  if (b == "varbinary") return arg(0, 1) + 2;
  if (b == "binary") return arg(0, 1);
  if (IsMysqlTextLob(b) || IsMysqlBlob(b) || b == "json" || IsMysqlGeometry(b)) {
    *lob = true;
    return 12;
  }
  if (b == "tinyint" || b == "year") return 1;
  if (b == "smallint") return 2;
  if (b == "mediumint" || b == "date") return 3;
  if (b == "int" || b == "float") return 4;
  if (b == "bigint" || b == "double" || b == "set") return 8;
  if (b == "enum") return 2;
  if (b == "decimal") return (arg(0, 10) + 8) / 9 * 4 + 4;
  if (b == "datetime" || b == "timestamp" || b == "time") return 5 + (arg(0, 0) + 1) / 2;
  if (b == "bit") return (arg(0, 1) + 7) / 8;
  if (b == "uuid" || b == "inet6") return 16;
  if (b == "inet4") return 4;
  return 8;
}

std::string MysqlEnumType(const char* kind, const std::vector<std::string>& labels) {
  std::string out = kind;
  out += "(";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ",";
    out += QuoteLiteral(labels[i], Dialect::kMysql);
  }
  out += ")";
  return out;
}

std::string PgTimeType(const char* name, std::optional<uint32_t> precision, const char* suffix) {
  std::string out = name;
  if (precision) out += "(" + std::to_string(std::min<uint32_t>(*precision, 6)) + ")";
  out += suffix;
  return out;
}

std::string PostgisSubtype(std::string_view mysql_base) {
  if (mysql_base == "point") return "Point";
  if (mysql_base == "linestring") return "LineString";
  if (mysql_base == "polygon") return "Polygon";
  if (mysql_base == "multipoint") return "MultiPoint";
  if (mysql_base == "multilinestring") return "MultiLineString";
  if (mysql_base == "multipolygon") return "MultiPolygon";
  if (mysql_base == "geometrycollection" || mysql_base == "geomcollection") {
    return "GeometryCollection";
  }
  return "Geometry";
}

// The PostgreSQL type for a logical type (MySQL sources, and columns without a source type).
// `mysql_base` is the MySQL type name when known.
Result<std::string> PgTypeFor(const Column& c, LogicalType type, std::string_view mysql_base,
                              const DdlOptions& o) {
  switch (type) {
    case LogicalType::kBool:
      return std::string("boolean");
    case LogicalType::kInt8:
    case LogicalType::kInt16:
    case LogicalType::kUInt8:
      return std::string("smallint");
    case LogicalType::kInt32:
    case LogicalType::kUInt16:
      return std::string("integer");
    case LogicalType::kInt64:
    case LogicalType::kUInt32:
      return std::string("bigint");
    case LogicalType::kUInt64:
      // Lossless by default; an AUTO_INCREMENT one gets a sequence default (CreateTableSql).
      return std::string(o.pg_uint64_as_bigint ? "bigint" : "numeric(20,0)");
    case LogicalType::kFloat32:
      return std::string("real");
    case LogicalType::kFloat64:
      return std::string("double precision");
    case LogicalType::kDecimal:
      if (c.precision && *c.precision > 0) {
        return "numeric(" + std::to_string(*c.precision) + "," +
               std::to_string(c.scale.value_or(0)) + ")";
      }
      return std::string("numeric");
    case LogicalType::kText:
      if (mysql_base == "inet4" || mysql_base == "inet6") return std::string("inet");
      if (c.length && (mysql_base.empty() || mysql_base == "char" || mysql_base == "varchar")) {
        // MySQL char(n) is read without its padding: varchar(n) keeps those exact values.
        // (MySQL's char(0), which holds only '' and NULL, becomes varchar(1).)
        return "varchar(" + std::to_string(std::max<uint32_t>(*c.length, 1)) + ")";
      }
      return std::string("text");
    case LogicalType::kBytes:
      return std::string("bytea");
    case LogicalType::kJson:
      return std::string(o.pg_jsonb ? "jsonb" : "json");
    case LogicalType::kUuid:
      return std::string("uuid");
    case LogicalType::kEnum:
    case LogicalType::kSet:
      return std::string("text");  // with a CHECK on the labels (CreateTableSql)
    case LogicalType::kBit: {
      const std::string pg_base = PgBaseName(c.source_type);
      if (c.length && pg_base != "bit varying" && pg_base != "varbit") {
        return "bit(" + std::to_string(*c.length) + ")";
      }
      if (c.length) return "varbit(" + std::to_string(*c.length) + ")";
      return std::string("varbit");
    }
    case LogicalType::kDate:
      return std::string("date");
    case LogicalType::kTime:
      if (o.mysql_time_as_interval && !mysql_base.empty()) {
        return PgTimeType("interval", c.precision, "");
      }
      return PgTimeType("time", c.precision, "");
    case LogicalType::kTimeTz:
      return PgTimeType("time", c.precision, " with time zone");
    case LogicalType::kTimestamp:
      return PgTimeType("timestamp", c.precision, "");
    case LogicalType::kTimestampTz:
      return PgTimeType("timestamp", c.precision, " with time zone");
    case LogicalType::kInterval:
      return PgTimeType("interval", c.precision, "");
    case LogicalType::kGeometry: {
      if (!o.postgis) return std::string("bytea");
      std::string sub = PostgisSubtype(mysql_base);
      if (c.srid != 0) return "geometry(" + sub + "," + std::to_string(c.srid) + ")";
      if (sub == "Geometry") return std::string("geometry");
      return "geometry(" + sub + ")";
    }
    case LogicalType::kArray: {
      if (c.element_type == LogicalType::kArray || c.element_type == LogicalType::kNone) {
        return Status::InvalidArgument("column '" + c.name + "': invalid array element type");
      }
      DBS_ASSIGN_OR_RETURN(std::string elem, PgTypeFor(c, c.element_type, "", o));
      return elem + "[]";
    }
    case LogicalType::kNone:
      break;
  }
  return Status::InvalidArgument("column '" + c.name + "' has no logical type");
}

// The MySQL type for a logical type (PostgreSQL sources, and columns without a source type).
// `pg_base` is the PostgreSQL type name when known (PgBaseName).
Result<std::string> MysqlTypeFor(const Column& c, LogicalType type, std::string_view pg_base,
                                 const std::string& where, const DdlOptions& o) {
  switch (type) {
    case LogicalType::kBool:
      return std::string("tinyint(1)");
    case LogicalType::kInt8:
      return std::string("tinyint");
    case LogicalType::kInt16:
      return std::string("smallint");
    case LogicalType::kInt32:
      return std::string("int");
    case LogicalType::kInt64:
      return std::string("bigint");
    case LogicalType::kUInt8:
      return std::string("tinyint unsigned");
    case LogicalType::kUInt16:
      return std::string("smallint unsigned");
    case LogicalType::kUInt32:
      return std::string("int unsigned");
    case LogicalType::kUInt64:
      return std::string("bigint unsigned");
    case LogicalType::kFloat32:
      return std::string("float");
    case LogicalType::kFloat64:
      return std::string("double");
    case LogicalType::kDecimal: {
      if (c.precision && *c.precision > 0 && *c.precision <= 65 && c.scale.value_or(0) <= 30) {
        return "decimal(" + std::to_string(*c.precision) + "," +
               std::to_string(c.scale.value_or(0)) + ")";
      }
      if (c.precision && *c.precision > 0) {
        Warn(o, where + ": numeric(" + std::to_string(*c.precision) + "," +
                    std::to_string(c.scale.value_or(0)) +
                    ") exceeds MySQL's decimal(65,30); created as decimal(65,30), values that do "
                    "not fit fail at write time");
      } else {
        Warn(o, where +
                    ": unconstrained numeric created as decimal(65,30) (35 integer and 30 "
                    "fractional digits); values that do not fit, NaN and infinities fail at "
                    "write time");
      }
      return std::string("decimal(65,30)");
    }
    case LogicalType::kText: {
      if (pg_base == "inet" && o.pg_inet_as_inet6) return std::string("inet6");
      if (pg_base == "inet" || pg_base == "cidr") return std::string("varchar(43)");
      if (pg_base == "macaddr") return std::string("varchar(17)");
      if (pg_base == "macaddr8") return std::string("varchar(23)");
      if (pg_base == "pg_lsn") return std::string("varchar(17)");
      if (c.length) {
        const uint32_t n = *c.length;
        const bool fixed = pg_base == "character" || pg_base == "bpchar" || pg_base == "char";
        if (fixed && n <= 255) return "char(" + std::to_string(n) + ")";
        if (n <= kMysqlMaxVarchar) return "varchar(" + std::to_string(n) + ")";
      }
      return std::string("longtext");
    }
    case LogicalType::kBytes:
      return std::string("longblob");
    case LogicalType::kJson:
      return std::string("json");
    case LogicalType::kUuid:
      return std::string(o.mariadb_native_types ? "uuid" : "char(36)");
    case LogicalType::kEnum: {
      size_t longest = 0;
      bool fits = !c.enum_values.empty() && c.enum_values.size() <= 65535;
      for (const std::string& l : c.enum_values) {
        longest = std::max(longest, l.size());
        if (l.size() > 255 || (!l.empty() && l.back() == ' ')) fits = false;
      }
      if (fits) return MysqlEnumType("enum", c.enum_values);
      Warn(o, where +
                  ": enum labels that MySQL cannot hold (longer than 255 characters or with "
                  "trailing spaces): created as varchar without the label constraint");
      return "varchar(" + std::to_string(std::max<size_t>(longest, 1)) + ")";
    }
    case LogicalType::kSet:
      return MysqlEnumType("set", c.enum_values);
    case LogicalType::kBit: {
      const bool varying = pg_base == "bit varying" || pg_base == "varbit";
      if (c.length && !varying && *c.length >= 1 && *c.length <= 64) {
        return "bit(" + std::to_string(*c.length) + ")";
      }
      // MySQL BIT is fixed-width and at most 64 bits: keep the exact bit string as 0/1 digits.
      if (c.length && *c.length <= kMysqlMaxVarchar) {
        return "varchar(" + std::to_string(*c.length) + ")";
      }
      return std::string("longtext");
    }
    case LogicalType::kDate:
      return std::string("date");
    case LogicalType::kTime:
      return "time(" + std::to_string(std::min<uint32_t>(c.precision.value_or(6), 6)) + ")";
    case LogicalType::kTimeTz:
      return std::string("varchar(32)");  // "13:45:00.123456+05:30"
    case LogicalType::kTimestamp:
    case LogicalType::kTimestampTz:
      // timestamptz is stored as UTC in a datetime: MySQL's TIMESTAMP ends in 2038 and converts
      // through the session time zone.
      return "datetime(" + std::to_string(std::min<uint32_t>(c.precision.value_or(6), 6)) + ")";
    case LogicalType::kInterval:
      return std::string("varchar(80)");  // PostgreSQL's text form, at most 66 characters
    case LogicalType::kGeometry: {
      if (pg_base == "geography") {
        Warn(o, where +
                    ": PostGIS geography created as MySQL geometry: the coordinates are kept, "
                    "MySQL computes on them with its own rules for the SRID");
        return std::string("geometry");
      }
      TypeText tt = SplitTypeText(c.source_type);
      std::string sub = tt.args.empty() ? "geometry" : AsciiLower(TrimSpace(tt.args[0]));
      while (!sub.empty() && (sub.back() == 'm' || sub.back() == 'z') && sub != "geometry") {
        sub.pop_back();  // PointZ, PointM, PointZM: MySQL stores 2D only
      }
      if (sub == "point" || sub == "linestring" || sub == "polygon" || sub == "multipoint" ||
          sub == "multilinestring" || sub == "multipolygon" || sub == "geometrycollection") {
        return sub;
      }
      return std::string("geometry");
    }
    case LogicalType::kArray:
      return std::string("json");
    case LogicalType::kNone:
      break;
  }
  return Status::InvalidArgument("column '" + c.name + "' has no logical type");
}

// MariaDB-only MySQL-dialect types and their portable stand-ins.
std::optional<std::string> PortableMysqlType(std::string_view base) {
  if (base == "uuid") return std::string("char(36)");
  if (base == "inet4") return std::string("varchar(15)");
  if (base == "inet6") return std::string("varchar(45)");
  return std::nullopt;
}

Result<std::string> TargetTypeImpl(const Column& c, Dialect target, Dialect source,
                                   const std::string& where, const DdlOptions& o) {
  if (target == source && !c.source_type.empty()) {
    DBS_RETURN_IF_ERROR(CheckSqlFragment(c.source_type, target, "type of column " + where));
    if (target == Dialect::kMysql) {
      const std::string base = MysqlBaseName(c.source_type);
      // MariaDB's JSON is LONGTEXT + CHECK; "json" is JSON on MySQL and the same on MariaDB.
      if (c.type == LogicalType::kJson) return std::string("json");
      if (!o.mariadb_native_types) {
        if (auto p = PortableMysqlType(base)) return *p;
      }
    }
    return c.source_type;
  }
  if (target == Dialect::kPostgres) {
    const std::string base = source == Dialect::kMysql ? MysqlBaseName(c.source_type) : "";
    return PgTypeFor(c, c.type, base, o);
  }
  const std::string base = source == Dialect::kPostgres ? PgBaseName(c.source_type) : "";
  return MysqlTypeFor(c, c.type, base, where, o);
}

// ---------------------------------------------------------------------------------------------
// Defaults.

bool IsPgIntegerType(std::string_view type) {
  std::string b = PgBaseName(type);
  return b == "smallint" || b == "integer" || b == "bigint" || b == "int2" || b == "int4" ||
         b == "int8" || b == "int";
}

bool IsMysqlIntegerType(std::string_view type) {
  std::string b = MysqlBaseName(type);
  return b == "tinyint" || b == "smallint" || b == "mediumint" || b == "int" || b == "integer" ||
         b == "bigint";
}

// A name of at most `max` bytes: `name` itself, or its head plus a hash of the whole.
std::string FitName(const std::string& name, size_t max) {
  if (name.size() <= max) return name;
  uint32_t h = 2166136261u;
  for (unsigned char ch : name) h = (h ^ ch) * 16777619u;
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", h);
  size_t keep = max - 9;
  while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
  return name.substr(0, keep) + "_" + hex;
}

// An unsigned-bigint AUTO_INCREMENT column created as numeric(20,0) in PostgreSQL: no identity
// is possible, so it takes its values from a sequence of its own (PrepareTableSql).
bool UsesSequence(const Column& c, std::string_view pg_type) {
  return c.auto_increment && !c.generated_expr && PgBaseName(pg_type) == "numeric";
}

// The sequence of such a column: "<schema>"."<table>_<column>_seq".
std::string SequenceName(const TableSchema& t, const Column& c, const DdlOptions& o) {
  const std::string schema = o.target_schema.empty() ? t.schema : o.target_schema;
  return QualifiedName(schema, FitName(t.name + "_" + c.name + "_seq", 63), Dialect::kPostgres);
}

// True when a PostgreSQL default is a nextval() call (serial).
bool IsNextval(std::string_view expr) {
  std::string_view e = StripParens(expr, false);
  return e.size() > 8 && EqualsIgnoreCase(e.substr(0, 8), "nextval(");
}

// Removes trailing "::type" casts of a PostgreSQL expression ('a'::character varying,
// '{}'::text[], '-1'::integer); returns the expression unchanged when the tail is not a cast.
std::string_view StripPgCasts(std::string_view e) {
  e = StripParens(e, false);
  while (true) {
    // Find the last "::" outside quotes and parentheses.
    size_t last = std::string_view::npos;
    int depth = 0;
    for (size_t i = 0; i < e.size(); ++i) {
      char ch = e[i];
      if (ch == '\'' || ch == '"') {
        size_t j = i + 1;
        while (j < e.size()) {
          if (e[j] == ch) {
            if (j + 1 < e.size() && e[j + 1] == ch) {
              j += 2;
              continue;
            }
            break;
          }
          if (ch == '\'' && e[j] == '\\' && i > 0 && (e[i - 1] == 'E' || e[i - 1] == 'e')) ++j;
          ++j;
        }
        i = j;
      } else if (ch == '(' || ch == '[') {
        ++depth;
      } else if (ch == ')' || ch == ']') {
        --depth;
      } else if (depth == 0 && ch == ':' && i + 1 < e.size() && e[i + 1] == ':') {
        last = i;
        ++i;
      }
    }
    if (last == std::string_view::npos) return e;
    std::string_view tail = e.substr(last + 2);
    for (char ch : tail) {
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == ' ' || ch == '_' || ch == '"' ||
            ch == '.' || ch == '(' || ch == ')' || ch == ',' || ch == '[' || ch == ']')) {
        return e;
      }
    }
    e = StripParens(e.substr(0, last), false);
  }
}

bool IsZeroDateText(std::string_view v) {
  // '0000-00-00', '2020-00-15', '0000-00-00 00:00:00': month or day is zero.
  if (v.size() < 10 || v[4] != '-' || v[7] != '-') return false;
  return v.substr(5, 2) == "00" || v.substr(8, 2) == "00";
}

std::string BytesHex(std::string_view bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char ch : bytes) {
    out.push_back(kHex[ch >> 4]);
    out.push_back(kHex[ch & 15]);
  }
  return out;
}

bool AllBits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) { return ch == '0' || ch == '1'; });
}

// A MySQL default (normalized by ColumnFromMysql) for a PostgreSQL column of type `pg_type`.
std::optional<std::string> MysqlDefaultToPg(const Column& c, std::string_view pg_type,
                                            std::string* why) {
  std::string_view e = StripParens(*c.default_expr, true);
  if (EqualsIgnoreCase(e, "NULL")) return std::nullopt;
  const std::string lower = AsciiLower(e);
  if (auto ts = NormalizeCurrentTimestamp(e)) {
    const uint32_t p = CurrentTimestampPrecision(*ts);
    const std::string arg = p > 0 ? "(" + std::to_string(p) + ")" : "";
    if (c.type == LogicalType::kTimestampTz) return "CURRENT_TIMESTAMP" + arg;
    if (c.type == LogicalType::kTimestamp) return "LOCALTIMESTAMP" + arg;
    if (c.type == LogicalType::kDate) return std::string("CURRENT_DATE");
  }
  if (lower == "curdate()" || lower == "current_date" || lower == "current_date()") {
    if (c.type == LogicalType::kDate) return std::string("CURRENT_DATE");
  }
  if ((lower == "curtime()" || lower == "current_time" || lower == "current_time()") &&
      c.type == LogicalType::kTime) {
    return std::string("LOCALTIME");
  }
  if (c.type == LogicalType::kBool && (e == "0" || e == "1")) {
    return std::string(e == "1" ? "true" : "false");
  }
  if (lower == "uuid()") {
    if (c.type == LogicalType::kUuid) return std::string("gen_random_uuid()");
    if (c.type == LogicalType::kText) return std::string("(gen_random_uuid())::text");
  }
  if (IsNumericLiteral(e)) {
    if (c.type == LogicalType::kText || c.type == LogicalType::kEnum ||
        c.type == LogicalType::kSet) {
      return QuoteLiteral(e, Dialect::kPostgres);
    }
    if (c.type != LogicalType::kBit && c.type != LogicalType::kBytes) return std::string(e);
  }
  if (IsBitOrHexLiteral(e)) {
    const char k = static_cast<char>(std::tolower(static_cast<unsigned char>(e[0])));
    if (k == 'b' && c.type == LogicalType::kBit) {
      std::string bits(e.substr(2, e.size() - 3));
      const uint32_t n = c.length.value_or(static_cast<uint32_t>(bits.size()));
      if (bits.size() < n) bits.insert(0, n - bits.size(), '0');
      if (bits.size() > n) bits = bits.substr(bits.size() - n);
      if (pg_type.rfind("bit(", 0) == 0 || pg_type == "varbit") return "B'" + bits + "'";
    }
    if (c.type == LogicalType::kBytes && k != 'b') {
      std::string hex =
          k == '0' ? std::string(e.substr(2)) : std::string(e.substr(2, e.size() - 3));
      return QuoteLiteral("\\x" + AsciiLower(hex), Dialect::kPostgres) + "::bytea";
    }
  }
  std::string value;
  if (UnquoteLiteral(e, Dialect::kMysql, &value)) {
    switch (c.type) {
      case LogicalType::kDate:
      case LogicalType::kTimestamp:
      case LogicalType::kTimestampTz:
        if (IsZeroDateText(value)) {
          *why = "zero date default '" + value + "' cannot be stored in PostgreSQL";
          return std::nullopt;
        }
        // The reader's session runs in UTC, so MySQL printed TIMESTAMP defaults in UTC.
        if (c.type == LogicalType::kTimestampTz)
          return QuoteLiteral(value + "+00", Dialect::kPostgres);
        return QuoteLiteral(value, Dialect::kPostgres);
      case LogicalType::kBytes:
        return QuoteLiteral("\\x" + BytesHex(value), Dialect::kPostgres) + "::bytea";
      case LogicalType::kBit:
        if (AllBits(value) && !value.empty()) return "B'" + value + "'";
        break;
      case LogicalType::kGeometry:
        break;
      default:
        return QuoteLiteral(value, Dialect::kPostgres);
    }
  }
  *why = "default " + std::string(*c.default_expr) + " has no PostgreSQL equivalent";
  return std::nullopt;
}

bool PgTrue(std::string_view v) {
  std::string l = AsciiLower(TrimSpace(v));
  return l == "t" || l == "true" || l == "y" || l == "yes" || l == "on" || l == "1";
}
bool PgFalse(std::string_view v) {
  std::string l = AsciiLower(TrimSpace(v));
  return l == "f" || l == "false" || l == "n" || l == "no" || l == "off" || l == "0";
}

bool IsPgCurrentTimestamp(std::string_view lower) {
  if (NormalizeCurrentTimestamp(lower)) return true;
  return lower == "transaction_timestamp()" || lower == "statement_timestamp()" ||
         lower == "clock_timestamp()";
}

// A PostgreSQL default (pg_get_expr text) for a MySQL column of type `mysql_type`.
std::optional<std::string> PgDefaultToMysql(const Column& c, std::string_view mysql_type,
                                            std::string* why) {
  const std::string base = MysqlBaseName(mysql_type);
  const bool expr_only = MysqlNeedsExpressionDefault(base);
  auto literal = [&](std::string s) { return expr_only ? "(" + s + ")" : s; };
  std::string_view e = StripPgCasts(*c.default_expr);
  const std::string lower = AsciiLower(e);
  if (lower == "null") return std::nullopt;
  // PostgreSQL's special date/time inputs, kept as text until the insert ('now'::text::date):
  // evaluated at each insert, like the functions they stand for.
  std::string special;
  if (UnquoteLiteral(e, Dialect::kPostgres, &special)) special = AsciiLower(TrimSpace(special));
  if (special == "today" && (c.type == LogicalType::kDate || c.type == LogicalType::kTimestamp)) {
    return std::string("(CURRENT_DATE)");
  }
  if (special == "epoch") {
    if (c.type == LogicalType::kDate) return std::string("'1970-01-01'");
    if (c.type == LogicalType::kTimestamp || c.type == LogicalType::kTimestampTz) {
      return std::string("'1970-01-01 00:00:00'");
    }
  }
  if (IsPgCurrentTimestamp(lower) || special == "now") {
    const uint32_t p = std::min<uint32_t>(c.precision.value_or(6), 6);
    const std::string arg = p > 0 ? "(" + std::to_string(p) + ")" : "";
    if (c.type == LogicalType::kTimestamp) return "CURRENT_TIMESTAMP" + arg;
    if (c.type == LogicalType::kTimestampTz) return "(UTC_TIMESTAMP" + arg + ")";
    if (c.type == LogicalType::kDate) return std::string("(CURRENT_DATE)");
  }
  if (lower == "current_date" && c.type == LogicalType::kDate) {
    return std::string("(CURRENT_DATE)");
  }
  if ((lower == "current_time" || lower == "localtime") && c.type == LogicalType::kTime) {
    return std::string("(CURTIME())");
  }
  if ((lower == "gen_random_uuid()" || lower == "uuid_generate_v4()") &&
      (c.type == LogicalType::kUuid || c.type == LogicalType::kText)) {
    return std::string("(uuid())");
  }
  if (lower == "true" || lower == "false") {
    if (c.type == LogicalType::kBool) return std::string(lower == "true" ? "1" : "0");
  }
  if (IsNumericLiteral(e)) {
    if (IsSignedInt(c.type) || IsUnsignedInt(c.type) || c.type == LogicalType::kFloat32 ||
        c.type == LogicalType::kFloat64 || c.type == LogicalType::kDecimal) {
      return std::string(e);
    }
    if (c.type == LogicalType::kText) return literal(QuoteLiteral(e, Dialect::kMysql));
  }
  std::string value;
  if (UnquoteLiteral(e, Dialect::kPostgres, &value)) {
    switch (c.type) {
      case LogicalType::kBool:
        if (PgTrue(value)) return std::string("1");
        if (PgFalse(value)) return std::string("0");
        break;
      case LogicalType::kInt8:
      case LogicalType::kInt16:
      case LogicalType::kInt32:
      case LogicalType::kInt64:
      case LogicalType::kUInt8:
      case LogicalType::kUInt16:
      case LogicalType::kUInt32:
      case LogicalType::kUInt64:
      case LogicalType::kFloat32:
      case LogicalType::kFloat64:
      case LogicalType::kDecimal:
        if (IsNumericLiteral(value)) return std::string(TrimSpace(value));
        break;
      case LogicalType::kBytes:
        if (value.size() >= 2 && value[0] == '\\' && value[1] == 'x') {
          return literal("0x" + (value.size() > 2 ? value.substr(2) : std::string()));
        }
        break;
      case LogicalType::kBit:
        if (AllBits(value) && !value.empty()) {
          if (base == "bit") return "b'" + value + "'";
          return literal(QuoteLiteral(value, Dialect::kMysql));
        }
        break;
      case LogicalType::kDate:
      case LogicalType::kTimestamp: {
        std::string l = AsciiLower(value);
        if (l.find("infinity") != std::string::npos || l.find(" bc") != std::string::npos) break;
        return QuoteLiteral(value, Dialect::kMysql);
      }
      case LogicalType::kTimestampTz: {
        auto ts = ParseTimestampTz(value);
        if (!ts.ok() || TimestampKind(*ts) != TemporalKind::kFinite) break;
        return QuoteLiteral(FormatTimestamp(*ts), Dialect::kMysql);
      }
      case LogicalType::kArray:
        if (TrimSpace(value) == "{}") return std::string("(json_array())");
        break;
      case LogicalType::kGeometry:
        break;
      default:
        return literal(QuoteLiteral(value, Dialect::kMysql));
    }
  }
  *why = "default " + *c.default_expr + " has no MySQL equivalent";
  return std::nullopt;
}

Result<std::optional<std::string>> TargetDefaultImpl(const Column& c, std::string_view type,
                                                     Dialect target, Dialect source,
                                                     const std::string& where,
                                                     const DdlOptions& o) {
  if (!c.default_expr || c.generated_expr) return std::optional<std::string>();
  const std::string& d = *c.default_expr;
  DBS_RETURN_IF_ERROR(CheckSqlFragment(d, source, "default of column " + where));
  if (source == Dialect::kPostgres && IsNextval(d)) {
    return std::optional<std::string>();  // becomes identity / AUTO_INCREMENT
  }
  if (target == source) {
    // MariaDB takes literal defaults on TEXT/BLOB/JSON; MySQL 8 only parenthesized expressions,
    // which MariaDB accepts too.
    if (target == Dialect::kMysql && MysqlNeedsExpressionDefault(MysqlBaseName(type))) {
      return std::optional<std::string>(WrapInParens(d));
    }
    return std::optional<std::string>(d);
  }
  std::string why;
  std::optional<std::string> out = target == Dialect::kPostgres ? MysqlDefaultToPg(c, type, &why)
                                                                : PgDefaultToMysql(c, type, &why);
  if (!out && !why.empty()) Warn(o, where + ": " + why + "; the column gets no default");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Column types of a whole table, with MySQL's key and row-size limits applied.

DdlOptions Silent(const DdlOptions& o) {
  DdlOptions s = o;
  s.warnings = nullptr;
  return s;
}

// Columns of the keys MySQL must index in full: the primary key, unique indexes (parts without
// a prefix) and foreign keys. Each entry lists column positions.
std::vector<std::vector<int>> MysqlFullKeys(const TableSchema& t) {
  std::vector<std::vector<int>> keys;
  auto add = [&](const std::vector<std::string>& names) {
    std::vector<int> k;
    for (const std::string& n : names) {
      int i = t.FindColumn(n);
      if (i >= 0) k.push_back(i);
    }
    if (!k.empty()) keys.push_back(std::move(k));
  };
  add(t.primary_key);
  for (const Index& ix : t.indexes) {
    if (!ix.unique || ix.predicate.has_value()) continue;  // unique partial: not created
    std::vector<std::string> names;
    for (const IndexColumn& ic : ix.columns) {
      if (!ic.prefix_length) names.push_back(ic.name);
    }
    add(names);
  }
  for (const ForeignKey& fk : t.foreign_keys) add(fk.columns);
  return keys;
}

bool IsMysqlTextual(const Column& c) {
  return c.type != LogicalType::kBytes && c.type != LogicalType::kGeometry;
}

bool IsMysqlStringBase(std::string_view base) {
  return base == "varchar" || base == "char" || base == "varbinary" || base == "binary";
}

// Splits MySQL's key budget among the parts of one key. `wants` holds each part's bytes and
// `flexible` marks the string parts, which may be shortened: fixed parts keep their size, string
// parts wanting no more than an equal share of the rest keep it, the others split what is left.
// Returns each part's allowance in bytes.
Result<std::vector<uint32_t>> FitKey(const std::vector<uint32_t>& wants,
                                     const std::vector<bool>& flexible, const std::string& what) {
  std::vector<uint32_t> out = wants;
  uint64_t fixed = 0;
  std::vector<size_t> order;
  for (size_t i = 0; i < wants.size(); ++i) {
    if (flexible[i]) {
      order.push_back(i);
    } else {
      fixed += wants[i];
    }
  }
  if (order.empty()) return out;
  if (fixed + 16 * order.size() > kMysqlMaxKeyBytes) {
    return Status::FailedPrecondition(what + " is too wide for MySQL's 3072-byte index limit");
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return wants[a] < wants[b]; });
  uint32_t budget = kMysqlMaxKeyBytes - static_cast<uint32_t>(fixed);
  size_t left = order.size();
  for (size_t i : order) {
    const uint32_t share = budget / static_cast<uint32_t>(left--);
    out[i] = std::min(wants[i], share);
    budget -= out[i];
  }
  return out;
}

// Resolves every column's target type. For PostgreSQL -> MySQL, shrinks string columns in full
// keys to fit the 3072-byte key limit (TEXT becomes varchar) and turns the widest varchars into
// TEXT when the row would pass 65535 bytes; each change is a warning.
Result<std::vector<std::string>> ResolveTypes(const TableSchema& t, Dialect target, Dialect source,
                                              const DdlOptions& o) {
  std::vector<std::string> types;
  types.reserve(t.columns.size());
  for (const Column& c : t.columns) {
    DBS_ASSIGN_OR_RETURN(std::string type, TargetTypeImpl(c, target, source, Where(t, c), o));
    types.push_back(std::move(type));
  }
  if (target != Dialect::kMysql || source == Dialect::kMysql) return types;

  const std::vector<std::string> unkeyed = types;
  std::vector<bool> in_key(t.columns.size(), false);
  for (const std::vector<int>& key : MysqlFullKeys(t)) {
    std::vector<uint32_t> wants;
    std::vector<bool> flexible;
    for (int i : key) {
      in_key[i] = true;
      bool lob = false;
      const uint32_t bytes = MysqlBytes(types[i], &lob);
      const bool is_string = lob || IsMysqlStringBase(MysqlBaseName(types[i]));
      wants.push_back(lob ? UINT32_MAX : bytes);
      flexible.push_back(is_string);
    }
    DBS_ASSIGN_OR_RETURN(std::vector<uint32_t> allowed,
                         FitKey(wants, flexible, "a key of table " + t.QualifiedName()));
    for (size_t k = 0; k < key.size(); ++k) {
      if (allowed[k] >= wants[k]) continue;
      const int i = key[k];
      const bool textual = IsMysqlTextual(t.columns[i]);
      types[i] = textual ? "varchar(" + std::to_string(allowed[k] / 4) + ")"
                         : "varbinary(" + std::to_string(allowed[k]) + ")";
    }
  }
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] != unkeyed[i]) {
      Warn(o, Where(t, t.columns[i]) + ": part of a key, so created as " + types[i] +
                  " instead of " + unkeyed[i] +
                  " (MySQL indexes at most 3072 bytes); longer values fail at write time");
    }
  }

  bool lob = false;
  uint64_t row = 0;
  for (const std::string& type : types) row += MysqlBytes(type, &lob);
  if (row <= kMysqlMaxRowBytes - 256) return types;
  std::vector<std::pair<uint32_t, int>> wide;
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string base = MysqlBaseName(types[i]);
    if (!in_key[i] && (base == "varchar" || base == "varbinary" || base == "char")) {
      wide.emplace_back(MysqlBytes(types[i], &lob), static_cast<int>(i));
    }
  }
  std::sort(wide.rbegin(), wide.rend());
  for (auto [bytes, i] : wide) {
    if (row <= kMysqlMaxRowBytes - 256) break;
    const bool textual = IsMysqlTextual(t.columns[i]);
    const std::string was = types[i];
    types[i] = textual ? (bytes > 65535 ? "mediumtext" : "text") : "blob";
    row -= bytes;
    row += 12;
    Warn(o, Where(t, t.columns[i]) + ": created as " + types[i] + " instead of " + was +
                " to stay under MySQL's 65535-byte row limit; the length limit is not enforced");
  }
  return types;
}

std::string CheckLabelsPg(const Column& c) {
  std::vector<std::string> labels;
  for (const std::string& l : c.enum_values) labels.push_back(QuoteLiteral(l, Dialect::kPostgres));
  const std::string col = QuoteIdent(c.name, Dialect::kPostgres);
  if (c.type == LogicalType::kEnum) return " CHECK (" + col + " IN (" + Join(labels, ", ") + "))";
  return " CHECK (string_to_array(" + col + ", ',') <@ ARRAY[" + Join(labels, ", ") + "]::text[])";
}

Status CheckTable(const TableSchema& t, Dialect target, const DdlOptions& o) {
  DBS_RETURN_IF_ERROR(CheckIdentifier(t.name, target));
  const std::string schema = TargetSchema(t, o);
  if (!schema.empty()) DBS_RETURN_IF_ERROR(CheckIdentifier(schema, target));
  if (t.columns.empty()) {
    return Status::InvalidArgument("table " + t.QualifiedName() + " has no columns");
  }
  std::set<std::string> seen;
  for (const Column& c : t.columns) {
    DBS_RETURN_IF_ERROR(CheckIdentifier(c.name, target).WithContext("table " + t.QualifiedName()));
    if (!seen.insert(c.name).second) {
      return Status::InvalidArgument("table " + t.QualifiedName() + " has two columns named '" +
                                     c.name + "'");
    }
  }
  for (const std::string& k : t.primary_key) {
    if (t.FindColumn(k) < 0) {
      return Status::InvalidArgument("primary key of " + t.QualifiedName() +
                                     " names unknown column '" + k + "'");
    }
  }
  return Status::Ok();
}

std::string QuotedColumns(const std::vector<std::string>& names, Dialect d) {
  std::vector<std::string> q;
  for (const std::string& n : names) q.push_back(QuoteIdent(n, d));
  return Join(q, ", ");
}

// Converts identifier quoting between dialects outside string literals: `a` <-> "a".
std::string ConvertIdentQuotes(std::string_view expr, Dialect from, Dialect to) {
  const char fq = from == Dialect::kMysql ? '`' : '"';
  const bool mysql = from == Dialect::kMysql;
  std::string out;
  for (size_t i = 0; i < expr.size(); ++i) {
    char ch = expr[i];
    if (ch == '\'' || (mysql && ch == '"')) {
      // A string literal (in MySQL "..." is one too): re-quoted for the target.
      const bool escape = mysql || (i > 0 && (expr[i - 1] == 'E' || expr[i - 1] == 'e'));
      size_t end = SkipQuotedText(expr, i, escape);
      if (end == std::string_view::npos) end = expr.size();
      std::string_view lit = expr.substr(i, end - i);
      std::string value;
      if (!escape && UnquoteLiteral(lit, from, &value)) {
        out += QuoteLiteral(value, to);
      } else if (mysql && UnquoteLiteral(lit, from, &value)) {
        out += QuoteLiteral(value, to);
      } else {
        out += lit;
      }
      i = end - 1;
    } else if (ch == fq) {
      std::string name;
      size_t j = i + 1;
      for (; j < expr.size(); ++j) {
        if (expr[j] == fq) {
          if (j + 1 < expr.size() && expr[j + 1] == fq) {
            name.push_back(fq);
            ++j;
            continue;
          }
          break;
        }
        name.push_back(expr[j]);
      }
      out += QuoteIdent(name, to);
      i = j;
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

}  // namespace

void ApplyTypeMapping(const TypeMappingOptions& tm, bool target_has_postgis,
                      bool target_has_native_types, DdlOptions* o) {
  o->pg_jsonb = tm.pg_jsonb;
  o->mysql_time_as_interval = tm.mysql_time_as_interval;
  o->pg_uint64_as_bigint = tm.pg_uint64_as_bigint;
  o->cross_dialect_checks = tm.cross_dialect_checks;
  o->mariadb_native_types = tm.mariadb_native_types && target_has_native_types;
  o->pg_inet_as_inet6 = tm.pg_inet_as_inet6 && o->mariadb_native_types;
  o->postgis = tm.postgis && target_has_postgis;
  o->mysql_text_collation = tm.mysql_text_collation;
}

Result<std::string> TargetType(const Column& c, Dialect target, Dialect source,
                               const DdlOptions& options) {
  return TargetTypeImpl(c, target, source, c.name, options);
}

Result<std::optional<std::string>> TargetDefault(const Column& c, Dialect target, Dialect source,
                                                 const DdlOptions& options) {
  DBS_ASSIGN_OR_RETURN(std::string type,
                       TargetTypeImpl(c, target, source, c.name, Silent(options)));
  return TargetDefaultImpl(c, type, target, source, c.name, options);
}

Result<std::string> CreateTableSql(const TableSchema& t, Dialect target, Dialect source,
                                   const DdlOptions& o) {
  DBS_RETURN_IF_ERROR(CheckTable(t, target, o));
  DBS_ASSIGN_OR_RETURN(std::vector<std::string> types, ResolveTypes(t, target, source, o));
  const bool same = target == source;
  const bool pg = target == Dialect::kPostgres;
  std::vector<std::string> defs;
  int auto_column = -1;  // MySQL allows one AUTO_INCREMENT column

  for (size_t i = 0; i < t.columns.size(); ++i) {
    const Column& c = t.columns[i];
    const std::string where = Where(t, c);
    std::string def = QuoteIdent(c.name, target) + " " + types[i];
    const std::string base = pg ? PgBaseName(types[i]) : MysqlBaseName(types[i]);

    // Character set and collation.
    if (pg) {
      if (same && !c.collation.empty() && c.collation != "default") {
        DBS_RETURN_IF_ERROR(CheckSqlFragment(c.collation, target, "collation of " + where));
        def += " COLLATE " + (c.collation.find('"') != std::string::npos
                                  ? c.collation
                                  : QuoteIdent(c.collation, target));
      }
    } else if (IsMysqlStringType(base)) {
      if (same) {
        if (!c.charset.empty()) {
          DBS_RETURN_IF_ERROR(CheckIdentifier(c.charset, target));
          def += " CHARACTER SET " + c.charset;
        }
        if (!c.collation.empty()) {
          DBS_RETURN_IF_ERROR(CheckIdentifier(c.collation, target));
          def += " COLLATE " + c.collation;
        }
      } else if (IsMysqlTextual(c) && c.type != LogicalType::kJson) {
        DBS_RETURN_IF_ERROR(CheckIdentifier(o.mysql_text_collation, target));
        def += " CHARACTER SET utf8mb4 COLLATE " + o.mysql_text_collation;
      }
    }

    // Generated columns: kept on the same dialect, plain columns across.
    bool generated = false;
    if (c.generated_expr) {
      if (same) {
        DBS_RETURN_IF_ERROR(
            CheckSqlFragment(*c.generated_expr, target, "generation expression of " + where));
        generated = true;
        def += " GENERATED ALWAYS AS " + WrapInParens(*c.generated_expr, !pg);
        def += pg || c.generated_stored ? " STORED" : " VIRTUAL";
      } else {
        Warn(o, where + ": generated column created as a plain column (its expression is " +
                    std::string(DialectName(source)) +
                    " SQL); the writer copies the computed values");
      }
    }

    // Identity / AUTO_INCREMENT.
    bool identity = false;
    std::optional<std::string> sequence_default;
    if (c.auto_increment && !generated) {
      const bool int_type = pg ? IsPgIntegerType(types[i]) : IsMysqlIntegerType(types[i]);
      if (pg && UsesSequence(c, types[i])) {
        sequence_default = "nextval(" + QuoteLiteral(SequenceName(t, c, o), target) + "::regclass)";
      } else if (!int_type) {
        Warn(o, where + ": auto-increment dropped, " + types[i] + " cannot be an identity");
      } else if (!pg && auto_column >= 0) {
        Warn(o, where +
                    ": auto-increment dropped, MySQL allows one AUTO_INCREMENT column per "
                    "table and " +
                    t.columns[auto_column].name + " has it");
      } else {
        identity = true;
        if (!pg) auto_column = static_cast<int>(i);
      }
    }

    // Default.
    std::optional<std::string> dflt;
    if (sequence_default) {
      dflt = sequence_default;
    } else if (!generated && !identity) {
      DBS_ASSIGN_OR_RETURN(dflt, TargetDefaultImpl(c, types[i], target, source, where, o));
    }

    if (pg) {
      if (identity) def += " GENERATED BY DEFAULT AS IDENTITY";
      if (dflt) def += " DEFAULT " + *dflt;
      if (!c.nullable) def += " NOT NULL";
      if (!same && (c.type == LogicalType::kEnum || c.type == LogicalType::kSet) &&
          !c.enum_values.empty() && base == "text") {
        def += CheckLabelsPg(c);
      }
      if (c.on_update) {
        Warn(o,
             where + ": ON UPDATE " + *c.on_update + " dropped; PostgreSQL needs a trigger for it");
      }
    } else {
      if (!generated) {
        def += c.nullable ? " NULL" : " NOT NULL";
      } else if (!c.nullable) {
        // MariaDB accepts neither NULL nor NOT NULL after a generated column's expression.
        Warn(o, where + ": NOT NULL of the generated column dropped (MariaDB does not accept it)");
      }
      if (dflt) def += " DEFAULT " + *dflt;
      if (c.on_update && !generated) {
        DBS_RETURN_IF_ERROR(CheckSqlFragment(*c.on_update, target, "ON UPDATE of " + where));
        def += " ON UPDATE " + *c.on_update;
      }
      if (identity) def += " AUTO_INCREMENT";
      if (!c.comment.empty()) def += " COMMENT " + QuoteLiteral(c.comment, target);
    }
    defs.push_back(std::move(def));
  }

  if (!t.primary_key.empty() && !(pg && o.defer_primary_key)) {
    defs.push_back("PRIMARY KEY (" + QuotedColumns(t.primary_key, target) + ")");
  }
  if (auto_column >= 0) {
    const std::string& name = t.columns[auto_column].name;
    bool first_of_key = !t.primary_key.empty() && t.primary_key.front() == name;
    if (!first_of_key) {
      // InnoDB requires the AUTO_INCREMENT column to lead an index when the table is created;
      // secondary indexes come after the load, so add one now.
      const std::string key = FitName("dbs_autoinc_" + name, 64);
      defs.push_back("KEY " + QuoteIdent(key, target) + " (" + QuoteIdent(name, target) + ")");
      Warn(o, Where(t, t.columns[auto_column]) + ": index " + key +
                  " added because MySQL requires an AUTO_INCREMENT column to lead an index");
    }
  }

  std::string sql = "CREATE TABLE ";
  if (o.if_not_exists) sql += "IF NOT EXISTS ";
  sql += TableName(t, target, o) + " (\n  " + Join(defs, ",\n  ") + "\n)";
  if (!pg) {
    sql += " ENGINE=InnoDB";
    if (!same) sql += " DEFAULT CHARSET=utf8mb4 COLLATE=" + o.mysql_text_collation;
    if (!t.comment.empty()) sql += " COMMENT=" + QuoteLiteral(t.comment, target);
    // The source's counter, so new rows get the ids they would have got there (InnoDB moves it
    // past explicitly inserted values by itself).
    if (auto_column >= 0 && t.columns[auto_column].next_value &&
        *t.columns[auto_column].next_value > 1) {
      sql += " AUTO_INCREMENT=" + std::to_string(*t.columns[auto_column].next_value);
    }
  }
  // Partitioning, same engine only (across engines the plan reports a plain table).
  if (same && !t.partition_by.empty()) {
    DBS_RETURN_IF_ERROR(
        CheckSqlFragment(t.partition_by, target, "partitioning of " + t.QualifiedName()));
    sql += pg ? " PARTITION BY " + t.partition_by : "\n" + t.partition_by;
  }
  return sql;
}

Result<std::vector<std::string>> PrepareTableSql(const TableSchema& t, Dialect target,
                                                 Dialect source, const DdlOptions& o) {
  std::vector<std::string> out;
  if (target != Dialect::kPostgres) return out;
  DBS_RETURN_IF_ERROR(CheckTable(t, target, o));
  DBS_ASSIGN_OR_RETURN(std::vector<std::string> types, ResolveTypes(t, target, source, Silent(o)));
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (!UsesSequence(t.columns[i], types[i])) continue;
    out.push_back(std::string("CREATE SEQUENCE ") + (o.if_not_exists ? "IF NOT EXISTS " : "") +
                  SequenceName(t, t.columns[i], o));
  }
  if (source != Dialect::kPostgres) return out;
  std::set<std::string> done;
  for (const Column& c : t.columns) {
    const bool is_enum = c.type == LogicalType::kEnum ||
                         (c.type == LogicalType::kArray && c.element_type == LogicalType::kEnum);
    if (!is_enum || c.source_type.empty()) continue;
    std::string name(TrimSpace(c.source_type));
    while (name.size() >= 2 && name.substr(name.size() - 2) == "[]") {
      name = std::string(TrimSpace(std::string_view(name).substr(0, name.size() - 2)));
    }
    DBS_RETURN_IF_ERROR(CheckSqlFragment(name, target, "enum type of column " + Where(t, c)));
    if (c.enum_values.empty()) {
      return Status::InvalidArgument("column " + Where(t, c) + " is an enum without labels");
    }
    if (!done.insert(name).second) continue;
    std::vector<std::string> labels;
    for (const std::string& l : c.enum_values) labels.push_back(QuoteLiteral(l, target));
    std::string create = "CREATE TYPE " + name + " AS ENUM (" + Join(labels, ", ") + ")";
    if (!o.if_not_exists) {
      out.push_back(std::move(create));
      continue;
    }
    std::string tag = "$dbs$";
    for (int n = 0; create.find(tag) != std::string::npos; ++n) {
      tag = "$dbs" + std::to_string(n) + "$";
    }
    out.push_back("DO " + tag + " BEGIN " + create +
                  "; EXCEPTION WHEN duplicate_object THEN NULL; END " + tag);
  }
  return out;
}

Result<std::vector<std::string>> FinishTableSql(const TableSchema& t, Dialect target,
                                                Dialect source, const DdlOptions& o) {
  std::vector<std::string> out;
  if (target != Dialect::kPostgres) return out;
  DBS_RETURN_IF_ERROR(CheckTable(t, target, o));
  DBS_ASSIGN_OR_RETURN(std::vector<std::string> types, ResolveTypes(t, target, source, Silent(o)));
  const std::string table = TableName(t, target, o);
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (!UsesSequence(t.columns[i], types[i])) continue;
    out.push_back("ALTER SEQUENCE " + SequenceName(t, t.columns[i], o) + " OWNED BY " + table +
                  "." + QuoteIdent(t.columns[i].name, target));
  }
  if (!t.comment.empty()) {
    out.push_back("COMMENT ON TABLE " + table + " IS " + QuoteLiteral(t.comment, target));
  }
  for (const Column& c : t.columns) {
    if (c.comment.empty()) continue;
    out.push_back("COMMENT ON COLUMN " + table + "." + QuoteIdent(c.name, target) + " IS " +
                  QuoteLiteral(c.comment, target));
  }
  return out;
}

Result<std::vector<std::string>> SyncAutoIncrementSql(const TableSchema& t, Dialect target,
                                                      Dialect source, const DdlOptions& o) {
  std::vector<std::string> out;
  if (target != Dialect::kPostgres) return out;
  DBS_RETURN_IF_ERROR(CheckTable(t, target, o));
  DBS_ASSIGN_OR_RETURN(std::vector<std::string> types, ResolveTypes(t, target, source, Silent(o)));
  const std::string table = TableName(t, target, o);
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const Column& c = t.columns[i];
    if (!c.auto_increment || c.generated_expr) continue;
    if (!IsPgIntegerType(types[i]) && !UsesSequence(c, types[i])) continue;
    const std::string col = QuoteIdent(c.name, target);
    // Past the loaded rows, and at least where the source's generator was (it may be ahead of
    // the rows: deleted rows, rolled-back inserts).
    std::string next = "COALESCE(MAX(" + col + "), 0)::bigint + 1";
    if (c.next_value) next = "GREATEST(" + next + ", " + std::to_string(*c.next_value) + ")";
    out.push_back("SELECT setval(pg_get_serial_sequence(" + QuoteLiteral(table, target) + ", " +
                  QuoteLiteral(c.name, target) + "), " + next + ", false) FROM " + table);
  }
  return out;
}

Result<std::string> AddPrimaryKeySql(const TableSchema& t, Dialect target, const DdlOptions& o) {
  DBS_RETURN_IF_ERROR(CheckTable(t, target, o));
  if (t.primary_key.empty()) return std::string();
  return "ALTER TABLE " + TableName(t, target, o) + " ADD PRIMARY KEY (" +
         QuotedColumns(t.primary_key, target) + ")";
}

Result<std::string> CreateIndexSql(const TableSchema& t, const Index& ix, Dialect target,
                                   Dialect source, const DdlOptions& o) {
  DBS_RETURN_IF_ERROR(CheckTable(t, target, o));
  const std::string where = t.QualifiedName() + " index " + ix.name;
  if (ix.columns.empty()) return Status::InvalidArgument(where + " has no columns");
  const bool same = target == source;
  const bool pg = target == Dialect::kPostgres;
  const std::string method = AsciiLower(ix.method);
  auto skip = [&](const std::string& why) -> Result<std::string> {
    Warn(o, where + ": skipped, " + why);
    return std::string();
  };

  std::string name = ix.name;
  if (pg && source == Dialect::kMysql) name = FitName(t.name + "_" + ix.name, 63);
  if (!pg && name.size() > 64) name = FitName(name, 64);
  DBS_RETURN_IF_ERROR(CheckIdentifier(name, target).WithContext(where));

  // Kind and method.
  std::string kind = ix.unique ? "UNIQUE " : "";
  std::string using_clause;
  if (pg) {
    if (method == "fulltext") return skip("FULLTEXT indexes have no PostgreSQL equivalent");
    if (method == "spatial") {
      if (!o.postgis) return skip("SPATIAL index needs PostGIS on the target");
      using_clause = " USING gist";
    } else if (same && !method.empty() && method != "btree") {
      DBS_RETURN_IF_ERROR(CheckIdentifier(method, target));
      using_clause = " USING " + method;
    } else if (!same && method == "hash" && !ix.unique) {
      using_clause = " USING hash";
    }
  } else {
    if (method == "fulltext" || method == "spatial") {
      kind = method == "fulltext" ? "FULLTEXT " : "SPATIAL ";
    } else if (!same && method == "gist" && ix.columns.size() == 1 &&
               t.FindColumn(ix.columns[0].name) >= 0 &&
               t.columns[t.FindColumn(ix.columns[0].name)].type == LogicalType::kGeometry) {
      const Column& c = t.columns[t.FindColumn(ix.columns[0].name)];
      if (c.nullable) return skip("MySQL SPATIAL indexes need a NOT NULL column");
      kind = "SPATIAL ";
    } else if (!method.empty() && method != "btree" && method != "hash") {
      return skip(ix.method + " indexes have no MySQL equivalent");
    }
  }

  // Partial indexes.
  std::string where_clause;
  if (ix.predicate) {
    if (same) {
      DBS_RETURN_IF_ERROR(CheckSqlFragment(*ix.predicate, target, "predicate of " + where));
      where_clause = " WHERE " + *ix.predicate;
    } else if (ix.unique) {
      return skip(
          "a unique partial index cannot be expressed in MySQL (enforcing it on every "
          "row would reject valid data)");
    } else {
      Warn(o, where + ": partial index created on every row (MySQL has no partial indexes)");
    }
  }

  std::vector<std::string> types;
  if (!pg) {
    DBS_ASSIGN_OR_RETURN(types, ResolveTypes(t, target, source, Silent(o)));
  }
  // MySQL key parts: TEXT/BLOB need a prefix, and string parts are shortened with prefixes
  // until the key fits 3072 bytes (a unique key's columns already fit, see ResolveTypes).
  std::vector<std::optional<uint32_t>> prefixes(ix.columns.size());
  if (!pg && !same && kind != "FULLTEXT " && kind != "SPATIAL ") {
    std::vector<uint32_t> wants;
    std::vector<bool> flexible;
    for (const IndexColumn& ic : ix.columns) {
      const int i = t.FindColumn(ic.name);
      bool lob = false;
      const uint32_t bytes = i < 0 ? 0 : MysqlBytes(types[i], &lob);
      const bool textual = i >= 0 && IsMysqlTextual(t.columns[i]);
      const bool is_string = i >= 0 && (lob || IsMysqlStringBase(MysqlBaseName(types[i])));
      wants.push_back(lob ? kMysqlIndexPrefix * (textual ? 4 : 1) : bytes);
      flexible.push_back(is_string);
    }
    DBS_ASSIGN_OR_RETURN(std::vector<uint32_t> allowed, FitKey(wants, flexible, where));
    for (size_t k = 0; k < ix.columns.size(); ++k) {
      const int i = t.FindColumn(ix.columns[k].name);
      if (i < 0 || !flexible[k]) continue;
      bool lob = false;
      MysqlBytes(types[i], &lob);
      if (!lob && allowed[k] >= wants[k]) continue;
      prefixes[k] = IsMysqlTextual(t.columns[i]) ? allowed[k] / 4 : allowed[k];
    }
  }

  std::vector<std::string> parts;
  for (size_t k = 0; k < ix.columns.size(); ++k) {
    const IndexColumn& ic = ix.columns[k];
    int i = t.FindColumn(ic.name);
    std::string part;
    if (i < 0) {
      // An expression part.
      if (!same) return skip("expression key parts cannot be translated between dialects");
      DBS_RETURN_IF_ERROR(CheckSqlFragment(ic.name, target, "expression of " + where));
      part = WrapInParens(ic.name, !pg);
    } else {
      part = QuoteIdent(ic.name, target);
      if (!pg) {
        bool lob = false;
        MysqlBytes(types[i], &lob);
        const std::string base = MysqlBaseName(types[i]);
        if (lob && base == "json") return skip("MySQL cannot index a JSON column directly");
        if (same && ic.prefix_length) {
          part += "(" + std::to_string(*ic.prefix_length) + ")";
        } else if (prefixes[k] && !IsMysqlGeometry(base)) {
          part += "(" + std::to_string(*prefixes[k]) + ")";
        }
      } else if (ic.prefix_length && !same) {
        Warn(o, where + ": prefix length on " + ic.name +
                    " dropped; PostgreSQL indexes the whole value");
      }
    }
    if (ic.descending) part += " DESC";
    parts.push_back(std::move(part));
  }

  std::string sql = "CREATE " + kind + "INDEX ";
  if (pg && o.if_not_exists) sql += "IF NOT EXISTS ";
  sql += QuoteIdent(name, target) + " ON " + TableName(t, target, o) + using_clause + " (" +
         Join(parts, ", ") + ")" + where_clause;
  return sql;
}

Result<std::string> AddForeignKeySql(const TableSchema& t, const ForeignKey& fk, Dialect target,
                                     Dialect source, const DdlOptions& o) {
  DBS_RETURN_IF_ERROR(CheckTable(t, target, o));
  const std::string where = t.QualifiedName() + " foreign key " + fk.name;
  if (fk.columns.empty() || fk.columns.size() != fk.ref_columns.size()) {
    return Status::InvalidArgument(where + ": column lists are empty or differ in length");
  }
  for (const std::string& c : fk.columns) {
    if (t.FindColumn(c) < 0) {
      return Status::InvalidArgument(where + " names unknown column '" + c + "'");
    }
  }
  for (const std::string& c : fk.ref_columns) DBS_RETURN_IF_ERROR(CheckIdentifier(c, target));
  DBS_RETURN_IF_ERROR(CheckIdentifier(fk.ref_table, target));
  std::string ref_schema = fk.ref_schema;
  if (!o.target_schema.empty() && (ref_schema.empty() || ref_schema == t.schema)) {
    ref_schema = o.target_schema;
  }
  auto action = [&](const std::string& a, const char* on) -> Result<std::string> {
    std::string u = AsciiLower(TrimSpace(a));
    if (u.empty() || u == "no action") return std::string();
    if (u == "set null" && target == Dialect::kMysql) {
      // PostgreSQL accepts SET NULL on a NOT NULL column (it fails when it fires); MySQL
      // refuses to create it. NO ACTION refuses the same deletes and updates.
      for (const std::string& c : fk.columns) {
        if (!t.columns[static_cast<size_t>(t.FindColumn(c))].nullable) {
          Warn(o, where + ": ON " + on + " SET NULL on NOT NULL column " + c +
                      " is rejected by MySQL; created as NO ACTION (such a " + AsciiLower(on) +
                      " fails in both)");
          return std::string();
        }
      }
    }
    if (u == "restrict" || u == "cascade" || u == "set null") {
      std::string up = u;
      for (char& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      return std::string(" ON ") + on + " " + up;
    }
    if (u == "set default") {
      if (target == Dialect::kMysql) {
        Warn(o, where + ": ON " + on + " SET DEFAULT is rejected by InnoDB; created as NO ACTION");
        return std::string();
      }
      return std::string(" ON ") + on + " SET DEFAULT";
    }
    return Status::InvalidArgument(where + ": unknown referential action '" + a + "'");
  };
  DBS_ASSIGN_OR_RETURN(std::string on_delete, action(fk.on_delete, "DELETE"));
  DBS_ASSIGN_OR_RETURN(std::string on_update, action(fk.on_update, "UPDATE"));
  (void)source;
  std::string sql = "ALTER TABLE " + TableName(t, target, o) + " ADD ";
  if (!fk.name.empty()) {
    std::string name = fk.name;
    if (name.size() > (target == Dialect::kPostgres ? 63u : 64u)) {
      name = FitName(name, target == Dialect::kPostgres ? 63 : 64);
    }
    DBS_RETURN_IF_ERROR(CheckIdentifier(name, target));
    sql += "CONSTRAINT " + QuoteIdent(name, target) + " ";
  }
  sql += "FOREIGN KEY (" + QuotedColumns(fk.columns, target) + ") REFERENCES " +
         QualifiedName(ref_schema, fk.ref_table, target) + " (" +
         QuotedColumns(fk.ref_columns, target) + ")" + on_delete + on_update;
  return sql;
}

Result<std::string> AddCheckSql(const TableSchema& t, const CheckConstraint& check, Dialect target,
                                Dialect source, const DdlOptions& o) {
  DBS_RETURN_IF_ERROR(CheckTable(t, target, o));
  const std::string where = t.QualifiedName() + " check " + check.name;
  DBS_RETURN_IF_ERROR(CheckSqlFragment(check.expression, source, "expression of " + where));
  if (source == Dialect::kMysql) {
    // MariaDB's JSON columns carry CHECK (json_valid(col)); the target's JSON type validates.
    if (auto name = MariadbJsonCheckColumn(check.expression)) {
      int i = t.FindColumn(*name);
      if (i >= 0 && t.columns[i].type == LogicalType::kJson) return std::string();
    }
  }
  std::string expr = check.expression;
  if (target != source) {
    if (!o.cross_dialect_checks) {
      Warn(o, where + ": skipped, its expression is " + std::string(DialectName(source)) +
                  " SQL (set typeMapping.crossDialectChecks to try it)");
      return std::string();
    }
    expr = ConvertIdentQuotes(expr, source, target);
    Warn(o, where + ": " + std::string(DialectName(source)) +
                " expression passed on as is; it may fail on the target");
  }
  std::string sql = "ALTER TABLE " + TableName(t, target, o) + " ADD ";
  if (!check.name.empty()) {
    DBS_RETURN_IF_ERROR(CheckIdentifier(check.name, target));
    sql += "CONSTRAINT " + QuoteIdent(check.name, target) + " ";
  }
  sql += "CHECK (" + std::string(StripParens(expr, target == Dialect::kMysql)) + ")";
  return sql;
}

Result<std::string> DropTableSql(const TableSchema& t, Dialect target, const DdlOptions& o) {
  DBS_RETURN_IF_ERROR(CheckIdentifier(t.name, target));
  return "DROP TABLE IF EXISTS " + TableName(t, target, o);
}

}  // namespace dbs

#include "typemap/mysql_types.h"

#include <cctype>
#include <charconv>

#include "typemap/sql.h"
#include "typemap/type_text.h"

namespace dbs {

namespace {

Status Unsupported(const MysqlColumnInfo& info) {
  return Status::Unsupported("column '" + info.column_name + "' has MySQL type '" +
                             (info.column_type.empty() ? info.data_type : info.column_type) +
                             "', which dbstreams does not support");
}

bool ContainsWord(std::string_view haystack, std::string_view word) {
  size_t pos = 0;
  while ((pos = haystack.find(word, pos)) != std::string_view::npos) {
    bool left = pos == 0 || !std::isalnum(static_cast<unsigned char>(haystack[pos - 1]));
    size_t end = pos + word.size();
    bool right = end >= haystack.size() || !std::isalnum(static_cast<unsigned char>(haystack[end]));
    if (left && right) return true;
    pos = end;
  }
  return false;
}

}  // namespace

std::string UnescapeMysqlCatalogText(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() &&
        (s[i + 1] == '\\' || s[i + 1] == '\'' || s[i + 1] == '"')) {
      out.push_back(s[++i]);
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

namespace {

bool IsGeometryName(std::string_view t) {
  return t == "geometry" || t == "point" || t == "linestring" || t == "polygon" ||
         t == "multipoint" || t == "multilinestring" || t == "multipolygon" ||
         t == "geometrycollection" || t == "geomcollection";
}

// The default as an SQL expression in MySQL syntax; see ColumnFromMysql.
std::optional<std::string> NormalizeDefault(const MysqlColumnInfo& info, const Column& c,
                                            bool default_generated) {
  if (!info.column_default) return std::nullopt;
  const std::string& raw = *info.column_default;
  if (info.is_mariadb) {
    std::string_view t = TrimSpace(raw);
    if (EqualsIgnoreCase(t, "NULL")) return std::nullopt;
    if (auto ts = NormalizeCurrentTimestamp(t)) return ts;
    std::string value;
    if (UnquoteLiteral(t, Dialect::kMysql, &value)) return QuoteLiteral(value, Dialect::kMysql);
    if (IsNumericLiteral(t) || IsBitOrHexLiteral(t)) return std::string(t);
    return WrapInParens(t);
  }
  const bool temporal = c.type == LogicalType::kTimestamp || c.type == LogicalType::kTimestampTz ||
                        c.type == LogicalType::kDate || c.type == LogicalType::kTime;
  if (default_generated || temporal) {
    if (auto ts = NormalizeCurrentTimestamp(raw)) return ts;
  }
  if (default_generated) return WrapInParens(UnescapeMysqlCatalogText(raw));
  // A raw literal: numbers and bit/hex forms print as they are, everything else is text.
  if (IsSignedInt(c.type) || IsUnsignedInt(c.type) || c.type == LogicalType::kFloat32 ||
      c.type == LogicalType::kFloat64 || c.type == LogicalType::kDecimal) {
    if (IsNumericLiteral(raw)) return raw;
  }
  if ((c.type == LogicalType::kBit || c.type == LogicalType::kBytes) && IsBitOrHexLiteral(raw)) {
    return raw;
  }
  return QuoteLiteral(raw, Dialect::kMysql);
}

}  // namespace

Result<std::vector<std::string>> ParseMysqlEnumLabels(std::string_view column_type) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("cannot parse the labels of '" + std::string(column_type) +
                                   "': " + std::string(why));
  };
  size_t i = column_type.find('(');
  if (i == std::string_view::npos) return bad("no '('");
  std::vector<std::string> labels;
  ++i;
  auto skip_space = [&] {
    while (i < column_type.size() && std::isspace(static_cast<unsigned char>(column_type[i]))) ++i;
  };
  skip_space();
  if (i < column_type.size() && column_type[i] == ')') {
    ++i;
  } else {
    while (true) {
      skip_space();
      if (i >= column_type.size() || (column_type[i] != '\'' && column_type[i] != '"')) {
        return bad("expected a quoted label");
      }
      const char q = column_type[i];
      size_t j = i + 1;
      for (; j < column_type.size(); ++j) {
        if (column_type[j] == '\\') {
          ++j;
        } else if (column_type[j] == q) {
          if (j + 1 < column_type.size() && column_type[j + 1] == q) {
            ++j;
          } else {
            break;
          }
        }
      }
      if (j >= column_type.size()) return bad("unterminated label");
      std::string label;
      if (!UnquoteLiteral(column_type.substr(i, j + 1 - i), Dialect::kMysql, &label)) {
        return bad("malformed label");
      }
      labels.push_back(std::move(label));
      i = j + 1;
      skip_space();
      if (i < column_type.size() && column_type[i] == ',') {
        ++i;
        continue;
      }
      if (i < column_type.size() && column_type[i] == ')') {
        ++i;
        break;
      }
      return bad("expected ',' or ')' after a label");
    }
  }
  if (!TrimSpace(column_type.substr(i)).empty()) return bad("text after ')'");
  return labels;
}

std::optional<std::string> MariadbJsonCheckColumn(std::string_view check_clause) {
  std::string_view t = TrimSpace(check_clause);
  while (t.size() >= 2 && t.front() == '(' && t.back() == ')' && WrapsWhole(t)) {
    t = TrimSpace(t.substr(1, t.size() - 2));
  }
  constexpr std::string_view kFn = "json_valid";
  if (t.size() < kFn.size() + 2 || !EqualsIgnoreCase(t.substr(0, kFn.size()), kFn)) {
    return std::nullopt;
  }
  t = TrimSpace(t.substr(kFn.size()));
  if (t.size() < 2 || t.front() != '(' || t.back() != ')' || !WrapsWhole(t)) return std::nullopt;
  t = TrimSpace(t.substr(1, t.size() - 2));
  if (t.empty()) return std::nullopt;
  if (t.front() == '`') {
    if (t.size() < 2 || t.back() != '`') return std::nullopt;
    std::string name;
    std::string_view body = t.substr(1, t.size() - 2);
    for (size_t i = 0; i < body.size(); ++i) {
      if (body[i] == '`') {
        if (i + 1 >= body.size() || body[i + 1] != '`') return std::nullopt;
        ++i;
      }
      name.push_back(body[i]);
    }
    return name;
  }
  for (char c : t) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '$') return std::nullopt;
  }
  return std::string(t);
}

Result<Column> ColumnFromMysql(const MysqlColumnInfo& info) {
  Column c;
  c.name = info.column_name;
  c.source_type = info.column_type;
  c.nullable = info.is_nullable;
  c.comment = info.column_comment;

  const TypeText tt = SplitTypeText(info.column_type);
  std::string dt = AsciiLower(TrimSpace(info.data_type));
  if (dt.empty()) dt = tt.base;
  if (c.source_type.empty()) c.source_type = dt;
  const bool is_unsigned =
      ContainsWord(tt.modifiers, "unsigned") || ContainsWord(tt.modifiers, "zerofill");
  const bool binary_charset = EqualsIgnoreCase(info.character_set_name, "binary");
  auto arg = [&](size_t k) -> std::optional<uint32_t> {
    if (k >= tt.args.size()) return std::nullopt;
    return ParseUInt32(tt.args[k]);
  };
  auto to32 = [](std::optional<uint64_t> v) -> std::optional<uint32_t> {
    if (!v || *v > UINT32_MAX) return std::nullopt;
    return static_cast<uint32_t>(*v);
  };

  if (dt == "tinyint" || dt == "bool" || dt == "boolean") {
    c.type = is_unsigned ? LogicalType::kUInt8 : LogicalType::kInt8;
  } else if (dt == "smallint") {
    c.type = is_unsigned ? LogicalType::kUInt16 : LogicalType::kInt16;
  } else if (dt == "mediumint" || dt == "int" || dt == "integer") {
    c.type = is_unsigned ? LogicalType::kUInt32 : LogicalType::kInt32;
  } else if (dt == "bigint") {
    c.type = is_unsigned ? LogicalType::kUInt64 : LogicalType::kInt64;
  } else if (dt == "year") {
    c.type = LogicalType::kInt16;
  } else if (dt == "float") {
    c.type = LogicalType::kFloat32;
  } else if (dt == "double" || dt == "double precision" || dt == "real") {
    c.type = LogicalType::kFloat64;
  } else if (dt == "decimal" || dt == "numeric" || dt == "dec" || dt == "fixed") {
    c.type = LogicalType::kDecimal;
    c.precision = to32(info.numeric_precision);
    if (!c.precision) c.precision = arg(0).value_or(10);
    c.scale = to32(info.numeric_scale);
    if (!c.scale) c.scale = arg(1).value_or(0);
  } else if (dt == "char" || dt == "varchar") {
    c.type = binary_charset ? LogicalType::kBytes : LogicalType::kText;
    c.length = to32(info.character_maximum_length);
    if (!c.length) c.length = arg(0).value_or(1);
  } else if (dt == "tinytext" || dt == "text" || dt == "mediumtext" || dt == "longtext") {
    if (binary_charset) {
      c.type = LogicalType::kBytes;
    } else if (dt == "longtext" && info.mariadb_json) {
      c.type = LogicalType::kJson;
    } else {
      c.type = LogicalType::kText;
    }
  } else if (dt == "binary" || dt == "varbinary") {
    c.type = LogicalType::kBytes;
    c.length = to32(info.character_maximum_length);
    if (!c.length) c.length = arg(0).value_or(1);
  } else if (dt == "tinyblob" || dt == "blob" || dt == "mediumblob" || dt == "longblob") {
    c.type = LogicalType::kBytes;
  } else if (dt == "enum" || dt == "set") {
    c.type = dt == "enum" ? LogicalType::kEnum : LogicalType::kSet;
    DBS_ASSIGN_OR_RETURN(c.enum_values, ParseMysqlEnumLabels(info.column_type));
  } else if (dt == "bit") {
    c.type = LogicalType::kBit;
    c.length = arg(0);
    if (!c.length) c.length = to32(info.numeric_precision);
    if (!c.length) c.length = 1;
  } else if (dt == "date") {
    c.type = LogicalType::kDate;
  } else if (dt == "datetime" || dt == "timestamp" || dt == "time") {
    c.type = dt == "datetime"    ? LogicalType::kTimestamp
             : dt == "timestamp" ? LogicalType::kTimestampTz
                                 : LogicalType::kTime;
    c.precision = to32(info.datetime_precision);
    if (!c.precision) c.precision = arg(0).value_or(0);
  } else if (dt == "json") {
    c.type = LogicalType::kJson;
  } else if (IsGeometryName(dt)) {
    c.type = LogicalType::kGeometry;
    c.srid = info.srs_id.value_or(0);
  } else if (dt == "uuid") {
    c.type = LogicalType::kUuid;
  } else if (dt == "inet4" || dt == "inet6") {
    c.type = LogicalType::kText;
  } else {
    return Unsupported(info);
  }
  if (c.type == LogicalType::kText || c.type == LogicalType::kEnum || c.type == LogicalType::kSet ||
      c.type == LogicalType::kJson) {
    c.charset = info.character_set_name;
    c.collation = info.collation_name;
  }
  if (c.precision && *c.precision > 6 &&
      (c.type == LogicalType::kTimestamp || c.type == LogicalType::kTimestampTz ||
       c.type == LogicalType::kTime)) {
    return Status::InvalidArgument("column '" + info.column_name +
                                   "': fractional seconds precision above 6");
  }

  const std::string extra = AsciiLower(info.extra);
  c.auto_increment = ContainsWord(extra, "auto_increment");
  const bool stored = extra.find("stored generated") != std::string::npos ||
                      extra.find("persistent generated") != std::string::npos;
  const bool is_virtual = extra.find("virtual generated") != std::string::npos;
  if (stored || is_virtual) {
    c.generated_expr = info.is_mariadb ? info.generation_expression
                                       : UnescapeMysqlCatalogText(info.generation_expression);
    c.generated_stored = stored;
    if (c.generated_expr->empty()) {
      return Status::InvalidArgument("column '" + info.column_name +
                                     "' is generated but GENERATION_EXPRESSION is empty");
    }
  }
  if (size_t pos = extra.find("on update "); pos != std::string::npos) {
    std::string_view rest = TrimSpace(std::string_view(extra).substr(pos + 10));
    size_t end = 0;
    int depth = 0;
    while (end < rest.size() &&
           (depth > 0 || !std::isspace(static_cast<unsigned char>(rest[end])))) {
      if (rest[end] == '(') ++depth;
      if (rest[end] == ')') --depth;
      ++end;
    }
    auto ts = NormalizeCurrentTimestamp(rest.substr(0, end));
    if (!ts) {
      return Status::Unsupported("column '" + info.column_name + "' has ON UPDATE " +
                                 std::string(rest.substr(0, end)) +
                                 ", which dbstreams does not support");
    }
    c.on_update = *ts;
  }
  if (!c.generated_expr) {
    c.default_expr = NormalizeDefault(info, c, ContainsWord(extra, "default_generated"));
  }
  return c;
}

}  // namespace dbs

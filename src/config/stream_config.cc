#include "config/stream_config.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace dbs {

using nlohmann::json;

std::string_view StreamModeName(StreamMode m) {
  switch (m) {
    case StreamMode::kLoad:
      return "load";
    case StreamMode::kCdc:
      return "cdc";
    case StreamMode::kLoadCdc:
      return "load+cdc";
  }
  return "load";
}

std::string_view SchemaPolicyName(SchemaPolicy p) {
  switch (p) {
    case SchemaPolicy::kFailIfExists:
      return "fail_if_exists";
    case SchemaPolicy::kCreateMissing:
      return "create_missing";
    case SchemaPolicy::kDropAndRecreate:
      return "drop_and_recreate";
    case SchemaPolicy::kValidateExisting:
      return "validate_existing";
  }
  return "create_missing";
}

std::string_view WriteModeName(WriteMode m) {
  switch (m) {
    case WriteMode::kAppend:
      return "append";
    case WriteMode::kTruncateAndLoad:
      return "truncate_and_load";
    case WriteMode::kUpsert:
      return "upsert";
    case WriteMode::kFailIfNotEmpty:
      return "fail_if_not_empty";
  }
  return "append";
}

namespace {

bool Glob(std::string_view p, std::string_view s) {
  size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == s[si])) {
      ++pi;
      ++si;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

// Checks that an object has only the listed keys.
Status OnlyKeys(const json& j, const std::string& path, std::initializer_list<const char*> keys) {
  std::set<std::string> allowed(keys.begin(), keys.end());
  for (const auto& [k, v] : j.items()) {
    if (!allowed.count(k)) {
      std::string list;
      for (const char* a : keys) list += (list.empty() ? "" : ", ") + std::string(a);
      return Status::InvalidArgument((path.empty() ? "" : path + ".") + k +
                                     " is not a known field (known: " + list + ")");
    }
  }
  return Status::Ok();
}

std::string P(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

Status GetString(const json& j, const std::string& path, const char* key, std::string* out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_string()) return Status::InvalidArgument(P(path, key) + " must be a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status GetBool(const json& j, const std::string& path, const char* key, bool* out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_boolean()) return Status::InvalidArgument(P(path, key) + " must be true or false");
  *out = it->get<bool>();
  return Status::Ok();
}

Status GetUInt(const json& j, const std::string& path, const char* key, uint64_t min, uint64_t max,
               uint64_t* out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0)) {
    return Status::InvalidArgument(P(path, key) + " must be a non-negative integer");
  }
  uint64_t v = it->get<uint64_t>();
  if (v < min || v > max) {
    return Status::InvalidArgument(P(path, key) + " must be between " + std::to_string(min) +
                                   " and " + std::to_string(max) + " (got " + std::to_string(v) +
                                   ")");
  }
  *out = v;
  return Status::Ok();
}

Status GetStrings(const json& j, const std::string& path, const char* key,
                  std::vector<std::string>* out) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_array())
    return Status::InvalidArgument(P(path, key) + " must be an array of strings");
  for (const json& e : *it) {
    if (!e.is_string() || e.get<std::string>().empty()) {
      return Status::InvalidArgument(P(path, key) + " must be an array of non-empty strings");
    }
    out->push_back(e.get<std::string>());
  }
  return Status::Ok();
}

template <typename E>
Status GetEnum(const json& j, const std::string& path, const char* key,
               std::initializer_list<std::pair<const char*, E>> names, E* out) {
  std::string v;
  DBS_RETURN_IF_ERROR(GetString(j, path, key, &v));
  if (!j.contains(key)) return Status::Ok();
  std::string list;
  for (const auto& [n, e] : names) {
    if (v == n) {
      *out = e;
      return Status::Ok();
    }
    list += (list.empty() ? "" : ", ") + std::string(n);
  }
  return Status::InvalidArgument(P(path, key) + " '" + v + "' is not one of: " + list);
}

// The `typeMapping` section (typemap/type_mapping_options.h, docs/type-mapping.md).
Status ParseTypeMapping(const json& j, TypeMappingOptions* o) {
  const std::string path = "typeMapping";
  if (!j.is_object()) return Status::InvalidArgument("typeMapping must be an object");
  DBS_RETURN_IF_ERROR(
      OnlyKeys(j, path,
               {"pgJsonb", "mysqlTimeAsInterval", "pgUint64AsBigint", "crossDialectChecks",
                "mariadbNativeTypes", "pgInetAsInet6", "postgis", "mysqlTextCollation"}));
  DBS_RETURN_IF_ERROR(GetBool(j, path, "pgJsonb", &o->pg_jsonb));
  DBS_RETURN_IF_ERROR(GetBool(j, path, "mysqlTimeAsInterval", &o->mysql_time_as_interval));
  DBS_RETURN_IF_ERROR(GetBool(j, path, "pgUint64AsBigint", &o->pg_uint64_as_bigint));
  DBS_RETURN_IF_ERROR(GetBool(j, path, "crossDialectChecks", &o->cross_dialect_checks));
  DBS_RETURN_IF_ERROR(GetBool(j, path, "mariadbNativeTypes", &o->mariadb_native_types));
  DBS_RETURN_IF_ERROR(GetBool(j, path, "pgInetAsInet6", &o->pg_inet_as_inet6));
  DBS_RETURN_IF_ERROR(GetBool(j, path, "postgis", &o->postgis));
  DBS_RETURN_IF_ERROR(GetString(j, path, "mysqlTextCollation", &o->mysql_text_collation));
  const std::string& coll = o->mysql_text_collation;
  if (coll.empty() || coll.size() > 64 || !std::all_of(coll.begin(), coll.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
      })) {
    return Status::InvalidArgument(
        "typeMapping.mysqlTextCollation must be a collation name (letters, digits, '_')");
  }
  return Status::Ok();
}

// `columnTypes`: {"column": "DUCKDB TYPE", ...}.
Status GetColumnTypes(const json& j, const std::string& path,
                      std::map<std::string, std::string>* out) {
  auto it = j.find("columnTypes");
  if (it == j.end()) return Status::Ok();
  const std::string where = P(path, "columnTypes");
  if (!it->is_object()) {
    return Status::InvalidArgument(where + " must be an object of column name to type");
  }
  for (const auto& [name, type] : it->items()) {
    if (name.empty()) return Status::InvalidArgument(where + " has an empty column name");
    if (!type.is_string() || !ValidColumnType(type.get<std::string>())) {
      return Status::InvalidArgument(
          where + "." + name +
          " must be a DuckDB type name such as \"DECIMAL(12,2)\", \"BIGINT\" or \"VARCHAR\"");
    }
    (*out)[name] = type.get<std::string>();
  }
  return Status::Ok();
}

// `csv`: {"delimiter", "quote", "escape", "header", "nullString", "encoding"}, each optional.
Status GetCsvDialect(const json& j, const std::string& path, CsvDialectSettings* out) {
  auto it = j.find("csv");
  if (it == j.end()) return Status::Ok();
  const std::string where = P(path, "csv");
  if (!it->is_object()) {
    return Status::InvalidArgument(where +
                                   " must be an object (delimiter, quote, escape, header, "
                                   "nullString, encoding)");
  }
  DBS_RETURN_IF_ERROR(
      OnlyKeys(*it, where, {"delimiter", "quote", "escape", "header", "nullString", "encoding"}));
  // A one-character setting; `may_be_empty`: "" turns the feature off.
  auto one_char = [&](const char* key, bool may_be_empty, std::optional<std::string>* v) {
    auto f = it->find(key);
    if (f == it->end()) return Status::Ok();
    if (!f->is_string() || f->get<std::string>().size() > 1 ||
        (!may_be_empty && f->get<std::string>().empty())) {
      return Status::InvalidArgument(P(where, key) + " must be one character" +
                                     (may_be_empty ? " or \"\"" : ""));
    }
    const std::string c = f->get<std::string>();
    if (c == "\n" || c == "\r") {
      return Status::InvalidArgument(P(where, key) + " cannot be a line break");
    }
    if (!c.empty() && static_cast<unsigned char>(c[0]) < 0x20 && c[0] != '\t') {
      return Status::InvalidArgument(P(where, key) + " must be a printable character or a tab");
    }
    *v = c;
    return Status::Ok();
  };
  DBS_RETURN_IF_ERROR(one_char("delimiter", false, &out->delimiter));
  DBS_RETURN_IF_ERROR(one_char("quote", true, &out->quote));
  DBS_RETURN_IF_ERROR(one_char("escape", true, &out->escape));
  if (out->delimiter && out->quote && *out->delimiter == *out->quote) {
    return Status::InvalidArgument(where + ": the delimiter and the quote must differ");
  }
  if (out->delimiter && out->escape && *out->delimiter == *out->escape) {
    return Status::InvalidArgument(where + ": the delimiter and the escape must differ");
  }
  if (auto f = it->find("header"); f != it->end()) {
    if (!f->is_boolean())
      return Status::InvalidArgument(P(where, "header") + " must be true or false");
    out->header = f->get<bool>();
  }
  if (auto f = it->find("nullString"); f != it->end()) {
    if (!f->is_string())
      return Status::InvalidArgument(P(where, "nullString") + " must be a string");
    out->null_string = f->get<std::string>();
  }
  if (auto f = it->find("encoding"); f != it->end()) {
    std::string e = f->is_string() ? f->get<std::string>() : "";
    std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return std::tolower(c); });
    if (e == "utf8") e = "utf-8";
    if (e == "utf16") e = "utf-16";
    if (e == "latin1" || e == "iso-8859-1") e = "latin-1";
    if (e != "utf-8" && e != "utf-16" && e != "latin-1") {
      return Status::InvalidArgument(P(where, "encoding") +
                                     " must be \"utf-8\", \"utf-16\" or \"latin-1\"");
    }
    out->encoding = e;
  }
  return Status::Ok();
}

Status ParseSelector(const json& j, const std::string& path, TableSelector* t) {
  if (j.is_string()) {
    t->pattern = j.get<std::string>();
  } else if (j.is_object()) {
    DBS_RETURN_IF_ERROR(OnlyKeys(
        j, path, {"name", "columns", "filter", "query", "target", "columnTypes", "csv", "files"}));
    DBS_RETURN_IF_ERROR(GetString(j, path, "name", &t->pattern));
    DBS_RETURN_IF_ERROR(GetStrings(j, path, "columns", &t->columns));
    DBS_RETURN_IF_ERROR(GetString(j, path, "filter", &t->filter));
    DBS_RETURN_IF_ERROR(GetString(j, path, "query", &t->query));
    DBS_RETURN_IF_ERROR(GetString(j, path, "target", &t->target));
    DBS_RETURN_IF_ERROR(GetColumnTypes(j, path, &t->column_types));
    DBS_RETURN_IF_ERROR(GetCsvDialect(j, path, &t->csv));
    DBS_RETURN_IF_ERROR(GetString(j, path, "files", &t->files));
  } else {
    return Status::InvalidArgument(path + " must be a table name or an object with \"name\"");
  }
  if (t->pattern.empty()) return Status::InvalidArgument(path + ".name is required");
  if (!t->query.empty() && t->pattern.find_first_of("*?") != std::string::npos) {
    return Status::InvalidArgument(path +
                                   ": a custom query needs a plain table name, not a pattern");
  }
  if (!t->query.empty() && !t->filter.empty()) {
    return Status::InvalidArgument(path + ": use either query or filter, not both");
  }
  if (!t->files.empty()) {
    if (!t->query.empty() || t->pattern.find_first_of("*?") != std::string::npos) {
      return Status::InvalidArgument(path + ": files needs a plain table name and no query");
    }
    const std::string& g = t->files;
    bool up = g.front() == '/' || g.back() == '/' || g.find("//") != std::string::npos;
    for (size_t at = 0; !up && at <= g.size();) {
      const size_t end = std::min(g.find('/', at), g.size());
      up = g.compare(at, end - at, "..") == 0 || g.compare(at, end - at, ".") == 0;
      at = end + 1;
    }
    if (up) {
      return Status::InvalidArgument(path +
                                     ".files must be a path relative to the source, without "
                                     "'.' or '..' parts (\"events/2026-*/*.parquet\")");
    }
  }
  return Status::Ok();
}

bool ValidName(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

bool ValidColumnType(const std::string& type) {
  auto alpha = [](char ch) { return std::isalpha(static_cast<unsigned char>(ch)) || ch == '_'; };
  auto digit = [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; };
  if (type.empty() || type.size() > 64) return false;
  size_t i = 0;
  // Words: NAME( NAME)*
  while (true) {
    if (i >= type.size() || !alpha(type[i])) return false;
    while (i < type.size() && (alpha(type[i]) || digit(type[i]))) ++i;
    if (i + 1 < type.size() && type[i] == ' ' && alpha(type[i + 1])) {
      ++i;
      continue;
    }
    break;
  }
  // Parameters: (N[, N]...)
  if (i < type.size() && type[i] == '(') {
    ++i;
    while (true) {
      while (i < type.size() && type[i] == ' ') ++i;
      if (i >= type.size() || !digit(type[i])) return false;
      while (i < type.size() && digit(type[i])) ++i;
      while (i < type.size() && type[i] == ' ') ++i;
      if (i < type.size() && type[i] == ',') {
        ++i;
        continue;
      }
      if (i < type.size() && type[i] == ')') {
        ++i;
        break;
      }
      return false;
    }
  }
  // Array suffixes: []...
  while (i + 1 < type.size() && type[i] == '[' && type[i + 1] == ']') i += 2;
  return i == type.size();
}

std::string TargetSchemaFor(const StreamConfig& config, const std::string& source_schema) {
  if (!config.target_schema.empty()) return config.target_schema;
  if (config.target.engine == Engine::kMysql && !config.target.database.empty()) {
    return config.target.database;
  }
  return source_schema;
}

bool MatchTablePattern(const std::string& pattern, const std::string& schema,
                       const std::string& table, const std::string& default_schema) {
  size_t dot = pattern.find('.');
  std::string ps = dot == std::string::npos ? default_schema : pattern.substr(0, dot);
  std::string pt = dot == std::string::npos ? pattern : pattern.substr(dot + 1);
  return Glob(ps, schema) && Glob(pt, table);
}

Result<StreamConfig> ParseStreamConfig(const json& j) {
  if (!j.is_object()) return Status::InvalidArgument("the stream config must be a JSON object");
  DBS_RETURN_IF_ERROR(OnlyKeys(
      j, "", {"name",          "mode",      "source",         "target",          "targetSchema",
              "tables",        "exclude",   "dataBundleSize", "dataBundleBytes", "schemaPolicy",
              "writeMode",     "structure", "limits",         "readers",         "splitRows",
              "compression",   "zeroDate",  "verify",         "keepPartial",     "cdc",
              "busEncryption", "busKey",    "typeMapping",    "malformedRows"}));
  StreamConfig c;
  DBS_RETURN_IF_ERROR(GetString(j, "", "name", &c.name));
  if (!ValidName(c.name)) {
    return Status::InvalidArgument(
        "name is required: 1-64 letters, digits, '_' or '-' (it names the JetStream stream)");
  }
  DBS_RETURN_IF_ERROR(GetEnum<StreamMode>(
      j, "", "mode",
      {{"load", StreamMode::kLoad}, {"cdc", StreamMode::kCdc}, {"load+cdc", StreamMode::kLoadCdc}},
      &c.mode));
  if (!j.contains("source")) return Status::InvalidArgument("source is required");
  if (!j.contains("target")) return Status::InvalidArgument("target is required");
  DBS_ASSIGN_OR_RETURN(c.source, ParseConnection(j["source"], "source"));
  DBS_ASSIGN_OR_RETURN(c.target, ParseConnection(j["target"], "target"));
  DBS_RETURN_IF_ERROR(GetString(j, "", "targetSchema", &c.target_schema));
  if (auto it = j.find("tables"); it != j.end()) {
    if (!it->is_array()) return Status::InvalidArgument("tables must be an array");
    for (size_t i = 0; i < it->size(); ++i) {
      TableSelector t;
      DBS_RETURN_IF_ERROR(ParseSelector((*it)[i], "tables[" + std::to_string(i) + "]", &t));
      c.tables.push_back(std::move(t));
    }
  }
  if (c.tables.empty()) c.tables.push_back(TableSelector{"*", {}, {}, {}, {}});
  DBS_RETURN_IF_ERROR(GetStrings(j, "", "exclude", &c.exclude));
  uint64_t v = c.bundle_size;
  DBS_RETURN_IF_ERROR(GetUInt(j, "", "dataBundleSize", 1, 1'000'000, &v));
  c.bundle_size = static_cast<uint32_t>(v);
  v = c.bundle_bytes;
  DBS_RETURN_IF_ERROR(GetUInt(j, "", "dataBundleBytes", 4096, 64u << 20, &v));
  c.bundle_bytes = static_cast<uint32_t>(v);
  DBS_RETURN_IF_ERROR(
      GetEnum<SchemaPolicy>(j, "", "schemaPolicy",
                            {{"fail_if_exists", SchemaPolicy::kFailIfExists},
                             {"create_missing", SchemaPolicy::kCreateMissing},
                             {"drop_and_recreate", SchemaPolicy::kDropAndRecreate},
                             {"validate_existing", SchemaPolicy::kValidateExisting}},
                            &c.schema_policy));
  DBS_RETURN_IF_ERROR(GetEnum<WriteMode>(j, "", "writeMode",
                                         {{"append", WriteMode::kAppend},
                                          {"truncate_and_load", WriteMode::kTruncateAndLoad},
                                          {"upsert", WriteMode::kUpsert},
                                          {"fail_if_not_empty", WriteMode::kFailIfNotEmpty}},
                                         &c.write_mode));
  if (auto it = j.find("structure"); it != j.end()) {
    if (!it->is_object()) return Status::InvalidArgument("structure must be an object");
    DBS_RETURN_IF_ERROR(
        OnlyKeys(*it, "structure", {"tables", "indexes", "foreignKeys", "checks", "objects"}));
    DBS_RETURN_IF_ERROR(GetBool(*it, "structure", "objects", &c.structure.objects));
    DBS_RETURN_IF_ERROR(GetBool(*it, "structure", "tables", &c.structure.tables));
    DBS_RETURN_IF_ERROR(GetBool(*it, "structure", "indexes", &c.structure.indexes));
    DBS_RETURN_IF_ERROR(GetBool(*it, "structure", "foreignKeys", &c.structure.foreign_keys));
    DBS_RETURN_IF_ERROR(GetBool(*it, "structure", "checks", &c.structure.checks));
  }
  if (auto it = j.find("limits"); it != j.end()) {
    if (!it->is_object()) return Status::InvalidArgument("limits must be an object");
    DBS_RETURN_IF_ERROR(OnlyKeys(*it, "limits", {"rows", "events", "seconds"}));
    DBS_RETURN_IF_ERROR(GetUInt(*it, "limits", "rows", 0, UINT64_MAX, &c.limits.rows));
    DBS_RETURN_IF_ERROR(GetUInt(*it, "limits", "events", 0, UINT64_MAX, &c.limits.events));
    uint64_t secs = 0;
    DBS_RETURN_IF_ERROR(GetUInt(*it, "limits", "seconds", 0, 10ull * 365 * 86400, &secs));
    c.limits.elapsed = std::chrono::seconds(secs);
  }
  uint64_t readers = static_cast<uint64_t>(c.readers);
  DBS_RETURN_IF_ERROR(GetUInt(j, "", "readers", 1, 64, &readers));
  c.readers = static_cast<int>(readers);
  DBS_RETURN_IF_ERROR(GetUInt(j, "", "splitRows", 1000, UINT64_MAX, &c.split_rows));
  DBS_RETURN_IF_ERROR(GetEnum<Compression>(
      j, "", "compression",
      {{"none", Compression::kNone}, {"lz4", Compression::kLz4}, {"zstd", Compression::kZstd}},
      &c.compression));
  DBS_RETURN_IF_ERROR(GetEnum<ZeroDatePolicy>(j, "", "zeroDate",
                                              {{"null", ZeroDatePolicy::kNull},
                                               {"error", ZeroDatePolicy::kError},
                                               {"-infinity", ZeroDatePolicy::kNegInfinity}},
                                              &c.zero_date));
  DBS_RETURN_IF_ERROR(GetEnum<MalformedRows>(
      j, "", "malformedRows", {{"fail", MalformedRows::kFail}, {"skip", MalformedRows::kSkip}},
      &c.malformed_rows));
  if (c.source.engine != Engine::kFile) {
    // Database rows are typed by their tables: nothing of this applies (and nothing is ignored).
    if (c.malformed_rows != MalformedRows::kFail) {
      return Status::InvalidArgument("malformedRows applies to file sources only");
    }
    for (size_t i = 0; i < c.tables.size(); ++i) {
      if (!c.tables[i].column_types.empty()) {
        return Status::InvalidArgument("tables[" + std::to_string(i) +
                                       "].columnTypes applies to file sources only");
      }
      if (!c.tables[i].files.empty()) {
        return Status::InvalidArgument("tables[" + std::to_string(i) +
                                       "].files applies to file sources only");
      }
      if (!c.tables[i].csv.empty()) {
        return Status::InvalidArgument("tables[" + std::to_string(i) +
                                       "].csv applies to file sources only");
      }
    }
  }
  DBS_RETURN_IF_ERROR(GetBool(j, "", "verify", &c.verify));
  DBS_RETURN_IF_ERROR(GetBool(j, "", "keepPartial", &c.keep_partial));
  DBS_RETURN_IF_ERROR(GetBool(j, "", "busEncryption", &c.bus_encryption));
  DBS_RETURN_IF_ERROR(GetString(j, "", "busKey", &c.bus_key));
  if (!c.bus_key.empty()) {
    bool hex = c.bus_key.size() == 64;
    for (char ch : c.bus_key) hex = hex && std::isxdigit(static_cast<unsigned char>(ch));
    if (!hex) return Status::InvalidArgument("busKey must be 64 hex digits (a 256-bit key)");
    c.bus_encryption = true;
  }
  if (auto it = j.find("typeMapping"); it != j.end()) {
    DBS_RETURN_IF_ERROR(ParseTypeMapping(*it, &c.type_mapping));
  }
  if (auto it = j.find("cdc"); it != j.end()) {
    if (!it->is_object()) return Status::InvalidArgument("cdc must be an object");
    DBS_RETURN_IF_ERROR(OnlyKeys(*it, "cdc",
                                 {"operations", "slotName", "publicationName", "serverId",
                                  "batchChanges", "maxDelayMs", "startPosition"}));
    std::vector<std::string> ops;
    DBS_RETURN_IF_ERROR(GetStrings(*it, "cdc", "operations", &ops));
    if (it->contains("operations")) {
      c.cdc.inserts = c.cdc.updates = c.cdc.deletes = false;
      for (const auto& op : ops) {
        if (op == "insert") {
          c.cdc.inserts = true;
        } else if (op == "update") {
          c.cdc.updates = true;
        } else if (op == "delete") {
          c.cdc.deletes = true;
        } else {
          return Status::InvalidArgument("cdc.operations: unknown operation '" + op +
                                         "' (use insert, update, delete)");
        }
      }
    }
    DBS_RETURN_IF_ERROR(GetString(*it, "cdc", "slotName", &c.cdc.slot_name));
    DBS_RETURN_IF_ERROR(GetString(*it, "cdc", "publicationName", &c.cdc.publication_name));
    for (const std::string* n : {&c.cdc.slot_name, &c.cdc.publication_name}) {
      for (char ch : *n) {
        if (!(std::islower(static_cast<unsigned char>(ch)) ||
              std::isdigit(static_cast<unsigned char>(ch)) || ch == '_')) {
          return Status::InvalidArgument("cdc.slotName/publicationName '" + *n +
                                         "': use lower-case letters, digits and '_' only");
        }
      }
      if (n->size() > 63) {
        return Status::InvalidArgument("cdc.slotName/publicationName '" + *n +
                                       "' is longer than 63 characters");
      }
    }
    uint64_t v = 0;
    DBS_RETURN_IF_ERROR(GetUInt(*it, "cdc", "serverId", 0, UINT32_MAX, &v));
    c.cdc.server_id = static_cast<uint32_t>(v);
    v = c.cdc.batch_changes;
    DBS_RETURN_IF_ERROR(GetUInt(*it, "cdc", "batchChanges", 1, 1'000'000, &v));
    c.cdc.batch_changes = static_cast<uint32_t>(v);
    v = static_cast<uint64_t>(c.cdc.max_delay.count());
    DBS_RETURN_IF_ERROR(GetUInt(*it, "cdc", "maxDelayMs", 0, 60'000, &v));
    c.cdc.max_delay = std::chrono::milliseconds(v);
    DBS_RETURN_IF_ERROR(GetString(*it, "cdc", "startPosition", &c.cdc.start_position));
  }
  if (c.mode != StreamMode::kLoad && c.write_mode == WriteMode::kTruncateAndLoad &&
      c.mode == StreamMode::kCdc) {
    return Status::InvalidArgument("writeMode truncate_and_load needs mode load or load+cdc");
  }
  return c;
}

std::string JsonSyntaxError(const std::string& where, const std::string& text) {
  // Only to describe a document already known to be invalid: the parser's exception carries
  // the byte where it stopped.
  size_t byte = text.size();
  std::string why = "unexpected end of input";
  try {
    json discarded = json::parse(text);
    (void)discarded;
  } catch (const json::parse_error& e) {
    byte = e.byte;
    why = e.what();
    // "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error ..."
    if (size_t colon = why.find(": "); colon != std::string::npos) why = why.substr(colon + 2);
  }
  size_t line = 1, column = 1;
  for (size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return where + " is not valid JSON: line " + std::to_string(line) + ", column " +
         std::to_string(column) + ": " + why;
}

Result<StreamConfig> LoadStreamConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot open stream config " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument(JsonSyntaxError(path, text));
  auto c = ParseStreamConfig(j);
  if (!c.ok()) return c.status().WithContext(path);
  return c;
}

}  // namespace dbs

#include "sinks/files/naming.h"

#include <cstdio>

#include "sinks/files/stage.h"
#include "sources/files/duck.h"

namespace dbs::files {

std::vector<uint64_t> IdKey(std::string_view id) {
  std::vector<uint64_t> key;
  uint64_t v = 0;
  bool in = false;
  for (char c : id) {
    if (c >= '0' && c <= '9') {
      v = v * 10 + static_cast<uint64_t>(c - '0');
      in = true;
    } else if (in) {
      key.push_back(v);
      v = 0;
      in = false;
    }
  }
  if (in) key.push_back(v);
  return key;
}

std::string IdForFile(std::string_view id) {
  std::string out;
  for (char c : id) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '.' || c == '-' || c == '_';
    out += ok ? c : '_';
  }
  return out;
}

int64_t PartNumber(const std::string& name) {
  if (name.rfind("part-", 0) != 0) return -1;
  size_t i = 5;
  const bool big = i < name.size() && name[i] == 'a';  // "part-a" + 10 digits (PartName)
  if (big) ++i;
  const size_t first = i;
  int64_t v = 0;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && i - first < 18; ++i) {
    v = v * 10 + (name[i] - '0');
  }
  return i == first ? -1 : v;
}

std::string PartName(int64_t number, const FileOptions& o) {
  // Five digits, then "a" and ten: names sort in number order ('a' sorts after every digit)
  // and the first 100,000 keep the names earlier versions gave them.
  char num[32];
  std::snprintf(num, sizeof num, number < 100000 ? "%05lld" : "a%010lld",
                static_cast<long long>(number));
  return std::string("part-") + num + DataExtension(o);
}

std::string ExportList(const TableSchema& t, const FileOptions& o) {
  std::string sql;
  for (const Column& c : t.columns) {
    if (!sql.empty()) sql += ", ";
    const StoredColumn s = StoredFor(c, o.format);
    const std::string id = SqlIdent(c.name);
    const bool is_float = c.type == LogicalType::kFloat32 || c.type == LogicalType::kFloat64;
    if (s.encoding == "base64") {
      sql += "to_base64(" + id + ") AS " + id;
    } else if (is_float && o.format == FileFormat::kJsonl) {
      // JSON has no NaN or infinities (DuckDB would write them bare): they become the strings
      // "NaN", "Infinity", "-Infinity", which a DOUBLE column reads back.
      sql += "CASE WHEN isnan(" + id + ") THEN '\"NaN\"'::JSON WHEN isinf(" + id +
             ") THEN (CASE WHEN " + id +
             " > 0 THEN '\"Infinity\"' ELSE '\"-Infinity\"' END)::JSON ELSE CAST(" + id +
             " AS JSON) END AS " + id;
    } else if (s.type != StageType(c)) {
      sql += "CAST(" + id + " AS " + s.type + ") AS " + id;
    } else {
      sql += id;
    }
  }
  return sql;
}

std::string CopyOptions(const FileOptions& o) {
  switch (o.format) {
    case FileFormat::kParquet:
      return "(FORMAT parquet, COMPRESSION " +
             std::string(o.compression == "none" ? "uncompressed" : o.compression) + ")";
    case FileFormat::kCsv:
      return "(FORMAT csv, HEADER true, COMPRESSION " + o.compression + ")";
    case FileFormat::kJsonl:
      return "(FORMAT json, COMPRESSION " + o.compression + ")";
  }
  return "";
}

TableDdlPlan PlanFileTable(const TableSchema& t, const std::string& where, bool exists,
                           const FileOptions& fo, const SinkOptions& so) {
  TableDdlPlan p;
  p.target = where;
  bool create = false;
  p.action = PlannedAction(so.schema_policy, so.write_mode, exists, &create);
  p.action += " (" + std::string(FormatName(fo.format)) + " files)";
  for (const Column& c : t.columns) {
    const StoredColumn s = StoredFor(c, fo.format);
    if (!s.warning.empty()) p.warnings.push_back(t.name + "." + c.name + ": " + s.warning);
  }
  return p;
}

Result<TargetTable> CheckFileTable(const TableSchema& t, const std::string& where,
                                   const std::optional<Manifest>& existing, const FileOptions& fo,
                                   const SinkOptions& so) {
  // A manifest of this run means the run already finished this table: nothing to check.
  if (!existing || existing->stream != so.stream) {
    if (existing && so.schema_policy == SchemaPolicy::kFailIfExists) {
      return Status(StatusCode::kAlreadyExists, Retry::kFail,
                    where + " already holds files (schema policy fail_if_exists)");
    }
    if (!existing && so.schema_policy == SchemaPolicy::kValidateExisting) {
      return Status(StatusCode::kNotFound, Retry::kFail,
                    where + " has no _manifest.json (schema policy validate_existing)");
    }
    if (existing && so.write_mode == WriteMode::kFailIfNotEmpty && existing->rows > 0) {
      return Status(StatusCode::kFailedPrecondition, Retry::kFail,
                    where + " already holds rows (write mode fail_if_not_empty)");
    }
  }
  TargetTable out;
  out.name = t.name;
  for (const Column& c : t.columns) {
    const StoredColumn s = StoredFor(c, fo.format);
    if (!s.warning.empty()) out.warnings.push_back(c.name + ": " + s.warning);
  }
  return out;
}

Result<size_t> ApplyByTable(
    const std::vector<BundleRef>& bundles,
    const std::function<Result<size_t>(const std::vector<const BundleRef*>&)>& apply) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const BundleRef*>> by_table;
  for (const BundleRef& b : bundles) {
    auto& v = by_table[b.table->name];
    if (v.empty()) order.push_back(b.table->name);
    v.push_back(&b);
  }
  size_t written = 0;
  for (const std::string& name : order) {
    DBS_ASSIGN_OR_RETURN(size_t n, apply(by_table[name]));
    written += n;
  }
  return written;
}

Status FileCdcNeedsWriters() {
  return Status(StatusCode::kUnsupported, Retry::kFail,
                "change data capture into an S3 target commits through the run's NATS "
                "JetStream stream, which only the stream writers (dbstreams run, "
                "stream-writer) have; run the stream with them");
}

}  // namespace dbs::files

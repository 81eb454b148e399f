#include "sources/files/file_common.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace dbs::files {

using nlohmann::json;

std::string_view FormatName(FileFormat f) {
  switch (f) {
    case FileFormat::kCsv:
      return "csv";
    case FileFormat::kJsonl:
      return "jsonl";
    case FileFormat::kParquet:
      return "parquet";
  }
  return "parquet";
}

Result<FileFormat> ParseFormat(std::string_view name) {
  if (name == "csv") return FileFormat::kCsv;
  if (name == "jsonl" || name == "ndjson" || name == "json") return FileFormat::kJsonl;
  if (name == "parquet") return FileFormat::kParquet;
  return Status::InvalidArgument("unknown file format '" + std::string(name) +
                                 "' (csv, jsonl, parquet)");
}

namespace {
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
}  // namespace

std::optional<FileFormat> FormatOfFile(std::string_view name) {
  if (name.empty() || name[0] == '.' || name[0] == '_') return std::nullopt;
  std::string_view n = name;
  if (EndsWith(n, ".gz")) n.remove_suffix(3);
  if (EndsWith(n, ".zst")) n.remove_suffix(4);
  if (EndsWith(n, ".csv") || EndsWith(n, ".tsv")) return FileFormat::kCsv;
  if (EndsWith(n, ".jsonl") || EndsWith(n, ".ndjson") || EndsWith(n, ".json")) {
    return FileFormat::kJsonl;
  }
  if (EndsWith(name, ".parquet")) return FileFormat::kParquet;
  return std::nullopt;
}

Result<FileOptions> FileOptionsOf(const ConnectionConfig& c) {
  FileOptions o;
  for (const auto& [k, v] : c.params) {
    if (k == "format") {
      DBS_ASSIGN_OR_RETURN(o.format, ParseFormat(v));
    } else if (k == "compression") {
      o.compression = v;
    } else if (k == "rowsPerFile" || k == "changeFileRows" || k == "changeFileSeconds" ||
               k == "bytesPerFile" || k == "rowGroupSize") {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      const bool zero_ok = k == "changeFileSeconds";
      if (v.empty() || v[0] == '-' || *end != '\0' || (n == 0 && !zero_ok)) {
        return Status::InvalidArgument(k + " must be a " + (zero_ok ? "non-negative" : "positive") +
                                       " integer, not '" + v + "'");
      }
      if (k == "rowsPerFile") o.rows_per_file = n;
      if (k == "changeFileRows") o.change_rows = n;
      if (k == "changeFileSeconds") o.change_seconds = n;
      if (k == "bytesPerFile") o.bytes_per_file = n;
      if (k == "rowGroupSize") o.row_group_rows = n;
    } else if (c.s3 && (k == "endpoint" || k == "region" || k == "addressing")) {
      continue;  // where the bucket is (remote.h)
    } else {
      return Status::InvalidArgument(
          "unknown file connection option '" + k +
          "' (format, compression, rowsPerFile, bytesPerFile, rowGroupSize, changeFileRows, "
          "changeFileSeconds)");
    }
  }
  if (o.row_group_rows != 0 && o.format != FileFormat::kParquet) {
    return Status::InvalidArgument("rowGroupSize applies to Parquet files only");
  }
  if (o.row_group_rows > FileOptions::kMaxRowGroupRows) {
    return Status::InvalidArgument("rowGroupSize must be at most " +
                                   std::to_string(FileOptions::kMaxRowGroupRows) +
                                   " rows (a writer holds a row group in memory)");
  }
  if (o.format == FileFormat::kParquet) {
    if (o.compression.empty()) o.compression = "zstd";
    if (o.compression != "zstd" && o.compression != "snappy" && o.compression != "gzip" &&
        o.compression != "none") {
      return Status::InvalidArgument("Parquet compression must be zstd, snappy, gzip or none");
    }
  } else {
    if (o.compression.empty()) o.compression = "none";
    if (o.compression != "none" && o.compression != "gzip" && o.compression != "zstd") {
      return Status::InvalidArgument("CSV/JSONL compression must be none, gzip or zstd");
    }
  }
  return o;
}

std::string DataExtension(const FileOptions& o) {
  std::string ext = "." + std::string(FormatName(o.format));
  if (o.format != FileFormat::kParquet) {
    if (o.compression == "gzip") ext += ".gz";
    if (o.compression == "zstd") ext += ".zst";
  }
  return ext;
}

StoredColumn StoredFor(const Column& c, FileFormat f) {
  StoredColumn s;
  const bool text_format = f != FileFormat::kParquet;
  switch (c.type) {
    case LogicalType::kBool:
      s.type = "BOOLEAN";
      break;
    case LogicalType::kInt8:
      s.type = "TINYINT";
      break;
    case LogicalType::kInt16:
      s.type = "SMALLINT";
      break;
    case LogicalType::kInt32:
      s.type = "INTEGER";
      break;
    case LogicalType::kInt64:
      s.type = "BIGINT";
      break;
    case LogicalType::kUInt8:
      s.type = "UTINYINT";
      break;
    case LogicalType::kUInt16:
      s.type = "USMALLINT";
      break;
    case LogicalType::kUInt32:
      s.type = "UINTEGER";
      break;
    case LogicalType::kUInt64:
      s.type = "UBIGINT";
      break;
    case LogicalType::kFloat32:
      s.type = "FLOAT";
      break;
    case LogicalType::kFloat64:
      s.type = "DOUBLE";
      break;
    case LogicalType::kDecimal:
      if (c.precision && *c.precision >= 1 && *c.precision <= 38 &&
          c.scale.value_or(0) <= *c.precision && f != FileFormat::kJsonl) {
        s.type = "DECIMAL(" + std::to_string(*c.precision) + "," +
                 std::to_string(c.scale.value_or(0)) + ")";
      } else {
        s.type = "VARCHAR";  // the exact decimal text (JSON numbers would go through doubles)
      }
      break;
    case LogicalType::kBytes:
    case LogicalType::kGeometry:
      s.type = text_format ? "VARCHAR" : "BLOB";
      if (text_format) s.encoding = "base64";
      break;
    case LogicalType::kUuid:
      s.type = "UUID";
      break;
    case LogicalType::kDate:
      s.type = "DATE";
      break;
    case LogicalType::kTime:
      s.type = "TIME";
      break;
    case LogicalType::kTimestamp:
      s.type = "TIMESTAMP";
      break;
    case LogicalType::kTimestampTz:
      s.type = "TIMESTAMPTZ";
      break;
    case LogicalType::kInterval:
      // Parquet's INTERVAL holds unsigned months, days and milliseconds: a negative interval
      // cannot be written and microseconds would be lost. DuckDB's interval text is exact.
      s.type = text_format ? "INTERVAL" : "VARCHAR";
      if (!text_format)
        s.warning = "kept as text (Parquet intervals cannot be negative or hold microseconds)";
      break;
    case LogicalType::kTimeTz:
    case LogicalType::kArray:
      s.type = "VARCHAR";
      s.warning = "kept as its PostgreSQL text form";
      break;
    default:  // text, enum, set, json, bit: the exact text ('0'/'1' digits for bits)
      s.type = "VARCHAR";
      break;
  }
  return s;
}

json ToJson(const Manifest& m) {
  json files = json::array();
  for (const ManifestFile& f : m.files) {
    files.push_back({{"name", f.name}, {"rows", f.rows}, {"bytes", f.bytes}, {"sha256", f.sha256}});
  }
  json stored = json::array();
  for (size_t i = 0; i < m.stored.size(); ++i) {
    json s = {{"name", i < m.table.columns.size() ? m.table.columns[i].name : ""},
              {"type", m.stored[i].type}};
    if (!m.stored[i].encoding.empty()) s["encoding"] = m.stored[i].encoding;
    stored.push_back(std::move(s));
  }
  return {{"version", 1},
          {"stream", m.stream},
          {"format", std::string(FormatName(m.format))},
          {"compression", m.compression},
          {"rows", m.rows},
          {"files", std::move(files)},
          {"columns", std::move(stored)},
          {"table", dbs::ToJson(m.table)}};
}

Result<Manifest> ManifestFromJson(const json& j) {
  if (!j.is_object() || !j.contains("files") || !j["files"].is_array() || !j.contains("table") ||
      !j.contains("columns") || !j["columns"].is_array()) {
    return Status::Corruption("the manifest lacks files, columns or table");
  }
  Manifest m;
  m.stream = j.value("stream", "");
  DBS_ASSIGN_OR_RETURN(m.format, ParseFormat(j.value("format", "parquet")));
  m.compression = j.value("compression", "");
  m.rows = j.value("rows", uint64_t{0});
  for (const json& f : j["files"]) {
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string()) {
      return Status::Corruption("a manifest file entry has no name");
    }
    ManifestFile mf;
    mf.name = f["name"].get<std::string>();
    DBS_RETURN_IF_ERROR(CheckPathComponent(mf.name, "manifest file name"));
    mf.rows = f.value("rows", uint64_t{0});
    mf.bytes = f.value("bytes", uint64_t{0});
    mf.sha256 = f.value("sha256", "");
    m.files.push_back(std::move(mf));
  }
  auto t = TableFromJson(j["table"]);
  if (!t.ok()) return t.status().WithContext("the manifest's table");
  m.table = std::move(t).value();
  for (const json& c : j["columns"]) {
    if (!c.is_object() || !c.contains("type") || !c["type"].is_string()) {
      return Status::Corruption("a manifest column has no stored type");
    }
    StoredColumn s;
    s.type = c["type"].get<std::string>();
    s.encoding = c.value("encoding", "");
    m.stored.push_back(std::move(s));
  }
  if (m.stored.size() != m.table.columns.size()) {
    return Status::Corruption("the manifest's columns do not match its table");
  }
  return m;
}

Result<Manifest> ReadManifest(const std::string& table_dir) {
  const std::string path = table_dir + "/" + kManifestName;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::NotFound("no manifest in " + table_dir);
  DBS_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Corruption(path + " is not valid JSON");
  auto m = ManifestFromJson(j);
  if (!m.ok()) return m.status().WithContext(path);
  return m;
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("cannot read " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status SyncPath(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("cannot open " + path + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Status::IoError("fsync " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, std::string_view bytes) {
  const std::filesystem::path p(path);
  std::random_device rd;
  const std::string tmp =
      (p.parent_path() / ("." + p.filename().string() + ".tmp" + std::to_string(rd()))).string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError("cannot create " + tmp + ": " + std::strerror(errno));
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status::IoError("writing " + tmp + ": " + err);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return Status::IoError("writing " + tmp + ": " + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Status::IoError("renaming " + tmp + " to " + path + ": " + err);
  }
  return SyncPath(p.parent_path().string());
}

Result<std::string> Sha256File(const std::string& path, uint64_t* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("cannot read " + path + ": " + std::strerror(errno));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return Status::Internal("SHA-256 is not available");
  }
  std::string buf(1 << 16, '\0');
  uint64_t total = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const std::streamsize n = in.gcount();
    if (n <= 0) break;
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(n));
    total += static_cast<uint64_t>(n);
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[md[i] >> 4];
    hex += kHex[md[i] & 15];
  }
  if (bytes != nullptr) *bytes = total;
  return hex;
}

Result<std::unique_ptr<FileLock>> FileLock::Acquire(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError("cannot open lock " + path + ": " + std::strerror(errno));
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const std::string err = std::strerror(errno);
    ::close(fd);
    return Status::IoError("cannot lock " + path + ": " + err);
  }
  return std::unique_ptr<FileLock>(new FileLock(fd));
}

FileLock::~FileLock() {
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
}

Status CheckPathComponent(const std::string& name, const std::string& what) {
  if (name.empty() || name == "." || name == ".." || name[0] == '.' ||
      name.find('/') != std::string::npos || name.find('\0') != std::string::npos) {
    return Status::InvalidArgument(what + " '" + name +
                                   "' cannot be a file name (empty, '/', or a leading '.')");
  }
  return Status::Ok();
}

}  // namespace dbs::files

#include "sources/files/file_source.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "core/temporal.h"
#include "sources/files/duck.h"
#include "sources/files/file_common.h"
#include "sources/files/remote.h"

namespace dbs {
namespace {

namespace fs = std::filesystem;
using files::Duck;
using files::FileFormat;
using files::SqlIdent;
using files::SqlString;
using nlohmann::json;

constexpr char kSchema[] = "public";

// Where a table's rows are.
struct FileTable {
  std::string name;
  FileFormat format = FileFormat::kParquet;
  // In reading order: absolute paths, or for S3 "s3://bucket/prefix/key" (for messages) with
  // the object keys in `keys`.
  std::vector<std::string> files;
  std::vector<std::string> keys;
  std::optional<files::Manifest> manifest;
};

// An s3:// source's bucket and the spill folder of its local copies (remote.h); shared by the
// source and its readers.
struct Remote {
  std::unique_ptr<ObjectStore> store;
  std::unique_ptr<files::SpillDir> spill;
  std::string base;  // "s3://bucket/prefix/" (for messages)
};

// The local path DuckDB reads for file i of `t`: the file itself, or a fresh copy of the
// object (held in *copy until the caller is done with it).
Result<std::string> LocalPath(Remote* remote, const FileTable& t, size_t i,
                              std::unique_ptr<files::LocalCopy>* copy) {
  if (remote == nullptr) return t.files[i];
  DBS_ASSIGN_OR_RETURN(
      *copy, files::LocalCopy::Fetch(remote->store.get(), t.keys[i], remote->spill->path()));
  return (*copy)->path();
}

// How one column is read: a SELECT expression over the file's columns, giving `read_type`.
struct ColumnRead {
  std::string expr;
  LogicalType type = LogicalType::kText;
};

struct TableInfo {
  FileTable where;
  TableSchema schema;
  std::vector<ColumnRead> reads;  // per schema column
  // Without a manifest: the FROM clause arguments DuckDB sniffed for the first file (CSV), so
  // every file is read with the same dialect and column types.
  std::string csv_options;
};

std::string TableNameOf(const std::string& file) {
  const std::string base = fs::path(file).filename().string();
  return base.substr(0, base.find('.'));
}

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

// A manifest column as the source describes it: the logical type and its parameters; the
// source engine's spelling, defaults and generators are not the file's business.
Column ColumnFromManifest(const Column& m, const files::StoredColumn& stored, std::string* expr) {
  Column c;
  c.name = m.name;
  c.type = m.type;
  c.nullable = m.nullable;
  c.length = m.length;
  c.precision = m.precision;
  c.scale = m.scale;
  c.enum_values = m.enum_values;
  c.comment = m.comment;
  c.srid = m.srid;
  if (c.type == LogicalType::kTimeTz || c.type == LogicalType::kArray) {
    c.type = LogicalType::kText;  // kept as text (StoredFor)
    c.element_type = LogicalType::kNone;
  }
  std::string e = SqlIdent(m.name);
  if (stored.encoding == "base64") e = "from_base64(" + e + ")";
  *expr = "CAST(" + e + " AS " + ReadType(c.type) + ")";
  return c;
}

// The FROM clause reading one file.
std::string Reader(const TableInfo& t, const std::string& file) {
  const std::string f = SqlString(file);
  if (t.where.manifest) {
    const files::Manifest& m = *t.where.manifest;
    std::string cols;
    for (size_t i = 0; i < m.stored.size(); ++i) {
      cols +=
          (i ? ", " : "") + SqlString(m.table.columns[i].name) + ": " + SqlString(m.stored[i].type);
    }
    switch (t.where.format) {
      case FileFormat::kParquet:
        return "read_parquet(" + f + ")";
      case FileFormat::kCsv:
        return "read_csv(" + f +
               ", header = true, auto_detect = false, delim = ',', quote = '\"', "
               "escape = '\"', allow_quoted_nulls = false, columns = {" +
               cols + "})";
      case FileFormat::kJsonl:
        return "read_json(" + f + ", format = 'newline_delimited', columns = {" + cols + "})";
    }
  }
  switch (t.where.format) {
    case FileFormat::kParquet:
      return "read_parquet(" + f + ")";
    case FileFormat::kCsv:
      return "read_csv(" + f + t.csv_options + ")";
    case FileFormat::kJsonl:
      return "read_json(" + f + ")";
  }
  return "";
}

// DuckDB's error about `file`, without its advice section, on one line:
// "<file>: Conversion Error: CSV Error on Line: 30002; Original Line: ...; Error when
// converting column "amount". Could not convert string "12x" to 'BIGINT'".
Status FileError(const std::string& file, const Status& s) {
  std::string msg = s.message();
  for (const char* cut : {"\n\n", "\nPossible", "\nColumn "}) {
    if (size_t at = msg.find(cut); at != std::string::npos) msg.resize(at);
  }
  for (char& c : msg) {
    if (c == '\n') c = ';';
  }
  std::string out;
  for (size_t i = 0; i < msg.size(); ++i) {
    out += msg[i];
    if (msg[i] == ';' && (i + 1 >= msg.size() || msg[i + 1] != ' ')) out += ' ';
  }
  return Status(s.code(), Retry::kFail, file + ": " + out);
}

template <typename T>
const T* Data(duckdb_vector v) {
  return static_cast<const T*>(duckdb_vector_get_data(v));
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

class FileRowReader : public RowReader {
 public:
  FileRowReader(std::unique_ptr<Duck> duck, std::shared_ptr<Remote> remote, const TableInfo* t,
                std::vector<size_t> cols, std::string filter, uint64_t limit)
      : duck_(std::move(duck)),
        remote_(std::move(remote)),
        t_(t),
        cols_(std::move(cols)),
        filter_(std::move(filter)),
        limit_(limit) {}

  Result<bool> Next(Bundle* out, size_t max_rows, size_t max_bytes) override {
    size_t added = 0;
    while (added < max_rows) {
      if (limit_ != 0 && emitted_ >= limit_) return false;
      if (chunk_ == nullptr || offset_ >= chunk_rows_) {
        DBS_ASSIGN_OR_RETURN(bool more, FetchChunk());
        if (!more) return false;
        continue;
      }
      for (size_t i = 0; i < cols_.size(); ++i) {
        const Column& c = t_->schema.columns[cols_[i]];
        Status s =
            AppendCell(duckdb_data_chunk_get_vector(chunk_, i), offset_, c, &out->columns[i]);
        if (!s.ok()) return s.WithContext(Where());
      }
      ++offset_;
      ++added;
      ++emitted_;
      ++file_rows_;
      if ((added & 63) == 0 && out->ByteSize() >= max_bytes) return true;
    }
    return true;
  }

 private:
  std::string Where() const {
    return t_->where.files[file_index_ == 0 ? 0 : file_index_ - 1] + ", data row " +
           std::to_string(file_rows_ + 1);
  }

  // The next chunk of the current file, opening the next file when one ends; false at the end.
  Result<bool> FetchChunk() {
    while (true) {
      if (stream_) {
        auto c = stream_->Next();
        if (!c.ok()) return FileError(t_->where.files[file_index_ - 1], c.status());
        if (*c != nullptr) {
          chunk_ = *c;
          chunk_rows_ = duckdb_data_chunk_get_size(chunk_);
          offset_ = 0;
          return true;
        }
        stream_.reset();
        chunk_ = nullptr;
        copy_.reset();
      }
      if (file_index_ >= t_->where.files.size()) return false;
      const std::string& file = t_->where.files[file_index_];
      DBS_ASSIGN_OR_RETURN(std::string local,
                           LocalPath(remote_.get(), t_->where, file_index_, &copy_));
      ++file_index_;
      file_rows_ = 0;
      std::string sql = "SELECT ";
      for (size_t i = 0; i < cols_.size(); ++i) {
        sql += (i ? ", " : "") + t_->reads[cols_[i]].expr;
      }
      sql += " FROM " + Reader(*t_, local);
      if (!filter_.empty()) sql += " WHERE " + filter_;
      auto s = duck_->Stream(sql);
      if (!s.ok()) return FileError(file, s.status());
      stream_ = std::move(s).value();
    }
  }

  std::unique_ptr<Duck> duck_;
  std::shared_ptr<Remote> remote_;
  std::unique_ptr<files::LocalCopy> copy_;  // of the object being read (S3)
  const TableInfo* t_;
  std::vector<size_t> cols_;
  std::string filter_;
  uint64_t limit_;
  std::unique_ptr<files::DuckStream> stream_;
  duckdb_data_chunk chunk_ = nullptr;  // owned by stream_
  size_t chunk_rows_ = 0, offset_ = 0, file_index_ = 0;
  uint64_t emitted_ = 0, file_rows_ = 0;
};

class FileSnapshot : public Snapshot {
 public:
  FileSnapshot(std::map<std::string, TableInfo>* tables, std::shared_ptr<Remote> remote)
      : tables_(tables), remote_(std::move(remote)) {}
  const SourcePosition& position() const override { return position_; }

  Result<std::unique_ptr<RowReader>> OpenReader(const ReadSpec& spec) override {
    if (!spec.query.empty()) {
      return Status::Unsupported("file sources read tables, not custom queries");
    }
    const TableInfo* t;
    {
      auto it = tables_->find(spec.table.name);
      if (it == tables_->end()) return Status::NotFound("no file table " + spec.table.name);
      t = &it->second;
    }
    std::vector<size_t> cols;
    if (spec.columns.empty()) {
      for (const Column& c : spec.table.columns) {
        const int i = t->schema.FindColumn(c.name);
        if (i < 0) return Status::NotFound("column " + c.name + " is not in " + t->where.name);
        cols.push_back(static_cast<size_t>(i));
      }
    } else {
      for (const std::string& n : spec.columns) {
        const int i = t->schema.FindColumn(n);
        if (i < 0) return Status::NotFound("column " + n + " is not in " + t->where.name);
        cols.push_back(static_cast<size_t>(i));
      }
    }
    DBS_ASSIGN_OR_RETURN(auto duck, Duck::Open(1, "256MB"));
    return std::unique_ptr<RowReader>(
        new FileRowReader(std::move(duck), remote_, t, std::move(cols), spec.filter, spec.limit));
  }

 private:
  std::map<std::string, TableInfo>* tables_;
  std::shared_ptr<Remote> remote_;
  SourcePosition position_;
};

class FileSource : public Source {
 public:
  explicit FileSource(ConnectionConfig config)
      : config_(std::move(config)), path_(config_.s3 ? config_.Redacted() : config_.database) {}

  Result<std::vector<TableRef>> ListTables() override {
    DBS_RETURN_IF_ERROR(Scan());
    std::vector<TableRef> out;
    for (const auto& [name, w] : where_) out.push_back({kSchema, name});
    return out;
  }
  std::string DefaultSchema() const override { return kSchema; }

  Result<TableSchema> Describe(const TableRef& table) override {
    DBS_RETURN_IF_ERROR(Scan());
    auto cached = tables_.find(table.name);
    if (cached != tables_.end()) return cached->second.schema;
    auto it = where_.find(table.name);
    if (it == where_.end()) {
      return Status::NotFound("no file or folder for table '" + table.name + "' in " + path_);
    }
    TableInfo info;
    info.where = it->second;
    info.schema.schema = kSchema;
    info.schema.name = table.name;
    if (info.where.manifest) {
      const files::Manifest& m = *info.where.manifest;
      for (size_t i = 0; i < m.table.columns.size(); ++i) {
        ColumnRead r;
        info.schema.columns.push_back(ColumnFromManifest(m.table.columns[i], m.stored[i], &r.expr));
        r.type = info.schema.columns.back().type;
        info.reads.push_back(std::move(r));
      }
      info.schema.primary_key = m.table.primary_key;
      info.schema.estimated_rows = m.rows;
    } else {
      DBS_RETURN_IF_ERROR(Sniff(&info));
    }
    auto [pos, inserted] = tables_.emplace(table.name, std::move(info));
    return pos->second.schema;
  }

  Result<TableSchema> DescribeQuery(const std::string&, const TableRef&) override {
    return Status::Unsupported("file sources read tables, not custom queries");
  }
  Result<std::vector<KeyRange>> Split(const TableSchema&, uint64_t) override {
    return std::vector<KeyRange>();
  }
  Result<std::unique_ptr<Snapshot>> BeginSnapshot(int) override {
    DBS_RETURN_IF_ERROR(Scan());
    return std::unique_ptr<Snapshot>(new FileSnapshot(&tables_, remote_));
  }
  Status CheckCdc(const CdcOptions&) override { return NoCdc(); }
  Result<std::unique_ptr<Snapshot>> BeginCdcSnapshot(int, const CdcOptions&) override {
    return NoCdc();
  }
  Result<std::unique_ptr<ChangeStream>> OpenChangeStream(const CdcOptions&) override {
    return NoCdc();
  }

 private:
  static Status NoCdc() {
    return Status(StatusCode::kUnsupported, Retry::kFail,
                  "file sources take mode load only: files have no change stream");
  }

  // Finds the tables under path_ (once).
  Status Scan() {
    if (scanned_) return Status::Ok();
    if (config_.s3) {
      DBS_RETURN_IF_ERROR(ScanS3());
      scanned_ = true;
      return Status::Ok();
    }
    std::error_code ec;
    fs::path p(path_);
    const std::string base = p.filename().string();
    if (base.find_first_of("*?[") != std::string::npos) {
      std::vector<std::string> matched;
      for (const auto& e : fs::directory_iterator(p.parent_path(), ec)) {
        const std::string n = e.path().filename().string();
        if (e.is_regular_file() && fnmatch(base.c_str(), n.c_str(), 0) == 0) {
          matched.push_back(e.path().string());
        }
      }
      if (ec) return Status::IoError("listing " + p.parent_path().string() + ": " + ec.message());
      std::sort(matched.begin(), matched.end());
      for (const std::string& f : matched) DBS_RETURN_IF_ERROR(AddFile(f));
    } else if (fs::is_regular_file(p, ec)) {
      DBS_RETURN_IF_ERROR(AddFile(path_));
    } else if (fs::is_directory(p, ec)) {
      std::vector<fs::directory_entry> entries;
      for (const auto& e : fs::directory_iterator(p, ec)) entries.push_back(e);
      if (ec) return Status::IoError("listing " + path_ + ": " + ec.message());
      std::sort(entries.begin(), entries.end());
      for (const auto& e : entries) {
        const std::string n = e.path().filename().string();
        if (n.empty() || n[0] == '.') continue;
        if (e.is_directory()) {
          DBS_RETURN_IF_ERROR(AddFolder(e.path().string()));
        } else if (e.is_regular_file() && files::FormatOfFile(n)) {
          DBS_RETURN_IF_ERROR(AddFile(e.path().string()));
        }
      }
    } else {
      return Status(StatusCode::kNotFound, Retry::kFail,
                    "the file source " + path_ + " does not exist");
    }
    scanned_ = true;
    return Status::Ok();
  }

  // The s3:// connection's prefix is a folder of tables, one object, or a glob in its last
  // part; the store's root is that folder (or the parent of the object or glob).
  Status ScanS3() {
    auto remote = std::make_shared<Remote>();
    DBS_ASSIGN_OR_RETURN(remote->spill, files::SpillDir::Create("s3-source"));
    remote_ = remote;
    // Roots the store at `prefix` of the bucket.
    auto open_at = [&](const std::string& prefix) -> Status {
      ConnectionConfig root = config_;
      root.database = prefix;
      DBS_ASSIGN_OR_RETURN(remote->store, files::OpenS3Of(root));
      remote->base = "s3://" + root.host + "/" + (prefix.empty() ? "" : prefix + "/");
      return Status::Ok();
    };
    const std::string& prefix = config_.database;
    const size_t slash = prefix.rfind('/');
    const std::string parent = slash == std::string::npos ? "" : prefix.substr(0, slash);
    const std::string last = slash == std::string::npos ? prefix : prefix.substr(slash + 1);
    if (prefix.find_first_of("*?[") != std::string::npos) {
      if (parent.find_first_of("*?[") != std::string::npos) {
        return Status::InvalidArgument("only the last part of an s3:// prefix may be a glob: " +
                                       path_);
      }
      DBS_RETURN_IF_ERROR(open_at(parent));
      DBS_ASSIGN_OR_RETURN(auto all, remote->store->List("", false));
      for (const ObjectInfo& o : all) {
        if (!o.is_prefix && fnmatch(last.c_str(), o.key.c_str(), 0) == 0) {
          DBS_RETURN_IF_ERROR(AddKey(o.key));
        }
      }
      return Status::Ok();
    }
    DBS_RETURN_IF_ERROR(open_at(prefix));
    DBS_ASSIGN_OR_RETURN(auto entries, remote->store->List("", false));
    if (entries.empty() && !prefix.empty()) {  // not a folder: maybe one object
      DBS_RETURN_IF_ERROR(open_at(parent));
      auto st = remote->store->Stat(last);
      if (!st.ok() && st.status().code() == StatusCode::kNotFound) {
        return Status(StatusCode::kNotFound, Retry::kFail,
                      "the file source " + path_ + " has no objects");
      }
      if (!st.ok()) return st.status();
      return AddKey(last);
    }
    for (const ObjectInfo& o : entries) {
      const std::string name = o.is_prefix ? o.key.substr(0, o.key.size() - 1) : o.key;
      if (name.empty() || name[0] == '.') continue;
      if (o.is_prefix) {
        DBS_RETURN_IF_ERROR(AddS3Folder(name));
      } else if (files::FormatOfFile(name)) {
        DBS_RETURN_IF_ERROR(AddKey(name));
      }
    }
    return Status::Ok();
  }

  Status AddKey(const std::string& key) {
    DBS_RETURN_IF_ERROR(AddFile(remote_->base + key));
    where_[TableNameOf(key)].keys.push_back(key);
    return Status::Ok();
  }

  // A folder of the bucket: a table read as its _manifest.json lists it, or its data files.
  Status AddS3Folder(const std::string& dir) {
    FileTable t;
    t.name = dir;
    auto m = files::ReadManifestFrom(remote_->store.get(), dir);
    if (m.ok()) {
      t.format = m->format;
      for (const files::ManifestFile& f : m->files) {
        t.files.push_back(remote_->base + dir + "/" + f.name);
        t.keys.push_back(dir + "/" + f.name);
      }
      t.manifest = std::move(m).value();
      where_[t.name] = std::move(t);
      return Status::Ok();
    }
    if (m.status().code() != StatusCode::kNotFound) return m.status();
    DBS_ASSIGN_OR_RETURN(auto objects, remote_->store->List(dir, false));
    for (const ObjectInfo& o : objects) {
      if (o.is_prefix) continue;
      const std::string n = o.key.substr(o.key.rfind('/') + 1);
      auto f = files::FormatOfFile(n);
      if (!f || n[0] == '.') continue;
      if (!t.keys.empty() && *f != t.format) {
        return Status::InvalidArgument("the folder " + remote_->base + dir + " mixes file formats");
      }
      t.format = *f;
      t.files.push_back(remote_->base + o.key);
      t.keys.push_back(o.key);
    }
    if (t.keys.empty()) return Status::Ok();  // not a table
    where_[t.name] = std::move(t);
    return Status::Ok();
  }

  Status AddFile(const std::string& file) {
    auto f = files::FormatOfFile(fs::path(file).filename().string());
    if (!f) return Status::InvalidArgument(file + " is not a CSV, JSON(L) or Parquet file");
    FileTable& t = where_[TableNameOf(file)];
    if (!t.files.empty() && t.format != *f) {
      return Status::InvalidArgument("table " + TableNameOf(file) + " mixes file formats");
    }
    t.name = TableNameOf(file);
    t.format = *f;
    t.files.push_back(file);
    return Status::Ok();
  }

  Status AddFolder(const std::string& dir) {
    FileTable t;
    t.name = fs::path(dir).filename().string();
    auto m = files::ReadManifest(dir);
    if (m.ok()) {
      t.format = m->format;
      for (const files::ManifestFile& f : m->files) t.files.push_back(dir + "/" + f.name);
      t.manifest = std::move(m).value();
      where_[t.name] = std::move(t);
      return Status::Ok();
    }
    if (m.status().code() != StatusCode::kNotFound) return m.status();
    std::error_code ec;
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string n = e.path().filename().string();
      if (!e.is_regular_file()) continue;
      auto f = files::FormatOfFile(n);
      if (!f) continue;
      if (!found.empty() && *f != t.format) {
        return Status::InvalidArgument("the folder " + dir + " mixes file formats");
      }
      t.format = *f;
      found.push_back(e.path().string());
    }
    if (found.empty()) return Status::Ok();  // not a table
    std::sort(found.begin(), found.end());
    t.files = std::move(found);
    where_[t.name] = std::move(t);
    return Status::Ok();
  }

  // Columns of a table without a manifest: DuckDB's view of its first file.
  Status Sniff(TableInfo* info) {
    if (!duck_) {
      DBS_ASSIGN_OR_RETURN(duck_, Duck::Open(1, "256MB"));
    }
    const std::string& first = info->where.files.front();
    std::unique_ptr<files::LocalCopy> copy;
    DBS_ASSIGN_OR_RETURN(std::string local, LocalPath(remote_.get(), info->where, 0, &copy));
    if (info->where.format == FileFormat::kCsv) {
      DBS_ASSIGN_OR_RETURN(info->csv_options, SniffCsv(local, first));
    }
    auto d = duck_->Query("DESCRIBE SELECT * FROM " + Reader(*info, local));
    if (!d.ok()) return FileError(first, d.status());
    for (size_t r = 0; r < d->rows(); ++r) {
      const std::string name = d->Text(0, r).value_or("");
      const std::string type = d->Text(1, r).value_or("VARCHAR");
      ColumnRead read;
      info->schema.columns.push_back(ColumnFromDuck(name, type, &read.expr));
      read.type = info->schema.columns.back().type;
      info->reads.push_back(std::move(read));
    }
    if (info->schema.columns.empty()) return Status::InvalidArgument(first + " has no columns");
    return Status::Ok();
  }

  // read_csv arguments (after the file name) for every file of a CSV table: DuckDB's sniffed
  // dialect and types. When the sniffer fails or is fooled into one column holding the
  // delimiter (a row with a different field count does that), the file is parsed strictly with
  // the extension's delimiter and text columns, so that the bad row is named by its line.
  // `file` is the local path, `display` the name for messages.
  Result<std::string> SniffCsv(const std::string& file, const std::string& display) {
    const bool tsv = display.find(".tsv") != std::string::npos;
    const char delim = tsv ? '\t' : ',';
    auto sniffed = duck_->Query("SELECT Prompt FROM sniff_csv(" + SqlString(file) + ")");
    std::optional<std::string> prompt;
    if (sniffed.ok()) prompt = sniffed->Text(0, 0);
    const size_t open = prompt ? prompt->find('(') : std::string::npos;
    const size_t comma =
        open == std::string::npos ? open : prompt->find(',', prompt->find('\'', open + 2) + 1);
    const size_t close = prompt ? prompt->rfind(')') : std::string::npos;
    if (comma != std::string::npos && close != std::string::npos && close > comma) {
      std::string opts = prompt->substr(comma, close - comma);
      const size_t cols = opts.find("columns={");
      const size_t cols_end = opts.find('}', cols);
      const std::string columns =
          cols == std::string::npos ? "" : opts.substr(cols, cols_end - cols);
      // One sniffed column whose name holds the delimiter: the dialect is wrong.
      const bool fooled =
          columns.find("': '") == columns.rfind("': '") && columns.find(delim) != std::string::npos;
      if (!fooled) {
        if (size_t sm = opts.find("strict_mode=false"); sm != std::string::npos) {
          opts.replace(sm, 17, "strict_mode=true");
        } else {
          opts += ", strict_mode=true";
        }
        return opts + ", allow_quoted_nulls = false";
      }
    }
    DBS_ASSIGN_OR_RETURN(std::vector<std::string> names, HeaderNames(file, delim));
    std::string opts = std::string(", auto_detect = false, header = true, delim = ") +
                       (tsv ? "'\t'" : "','") +
                       ", quote = '\"', escape = '\"', strict_mode = true, "
                       "allow_quoted_nulls = false, columns = {";
    for (size_t i = 0; i < names.size(); ++i) {
      opts += (i ? ", " : "") + SqlString(names[i]) + ": 'VARCHAR'";
    }
    opts += "}";
    // Reads the file once: a malformed row fails here, with its line.
    auto checked = duck_->Query("SELECT count(*) FROM read_csv(" + SqlString(file) + opts + ")");
    if (!checked.ok()) return FileError(display, checked.status());
    return opts;
  }

  // The fields of a CSV file's first line (double quotes, "" inside them).
  static Result<std::vector<std::string>> HeaderNames(const std::string& file, char delim) {
    std::ifstream in(file, std::ios::binary);
    std::string line;
    if (!in || !std::getline(in, line)) return Status::InvalidArgument(file + " is empty");
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> out(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted) {
        if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
          out.back() += '"';
          ++i;
        } else if (c == '"') {
          quoted = false;
        } else {
          out.back() += c;
        }
      } else if (c == '"') {
        quoted = true;
      } else if (c == delim) {
        out.emplace_back();
      } else {
        out.back() += c;
      }
    }
    return out;
  }

  const ConnectionConfig config_;
  const std::string path_;          // for messages
  std::shared_ptr<Remote> remote_;  // s3:// only
  bool scanned_ = false;
  std::map<std::string, FileTable> where_;
  std::map<std::string, TableInfo> tables_;  // described; read by snapshots' readers
  std::unique_ptr<Duck> duck_;
};

}  // namespace

Result<std::unique_ptr<Source>> OpenFileSource(const ConnectionConfig& config) {
  if (config.engine != Engine::kFile) return Status::InvalidArgument("not a file:// source");
  return std::unique_ptr<Source>(new FileSource(config));
}

}  // namespace dbs

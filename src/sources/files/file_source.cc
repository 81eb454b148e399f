#include "sources/files/file_source.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "core/temporal.h"
#include "sources/files/duck.h"
#include "sources/files/duck_read.h"
#include "sources/files/file_common.h"
#include "sources/files/json_lines.h"
#include "sources/files/partitions.h"
#include "sources/files/remote.h"
#include "sources/files/replay.h"

namespace dbs {
namespace {

namespace fs = std::filesystem;
using files::AppendCell;
using files::ColumnFromDuck;
using files::Duck;
using files::FileFormat;
using files::ReadType;
using files::SqlIdent;
using files::SqlString;
using files::StringAt;
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
  // Hive-style partitions (sources/files/partitions.h): per file, its partition folder
  // relative to the table folder ("year=2026/month=11"); empty when the table has none.
  std::vector<std::string> folders;
  std::string dir;  // the table folder (for messages)
  // With a manifest: the change files of a CDC stream (replay.h), in change order; the table
  // is read as the snapshot with them applied. For S3, their object keys in change_keys.
  std::vector<std::string> changes;
  std::vector<std::string> change_keys;
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
  // The partition columns (after the files' own), the distinct partition folders and, per
  // file, the index of its folder there and in partitions.values.
  files::Partitions partitions;
  std::vector<std::string> folders;
  std::vector<size_t> folder_of;
  // The stream's column types (TableSelector::column_types) of the files' own columns, as
  // read_json's columns (JSONL; CSV has them in csv_options) or as checked casts (Parquet).
  std::vector<std::pair<std::string, std::string>> casts;
  std::string json_columns;
  // malformedRows skip (Configure): CSV files are read with DuckDB's rejects table, JSONL
  // files line by line (json_lines.h) through json_transform with these columns. With fail,
  // JSONL files are read by read_json and, when it fails, read line by line to name the line.
  bool skip = false;
  std::vector<std::pair<std::string, std::string>> json_lines_columns;  // name, DuckDB type
};

// The read_csv arguments that leave out the rows DuckDB cannot parse and record them.
constexpr char kRejects[] = "dbs_rejects";
constexpr char kRejectScans[] = "dbs_reject_scans";
// The table a JSONL file's lines are loaded into, a batch at a time (malformedRows skip).
constexpr char kLines[] = "dbs_lines";
constexpr size_t kBatchLines = 2048;
constexpr size_t kBatchBytes = 8u << 20;

// read_csv's dialect arguments (after the file name) and the columns, as sniffed.
struct CsvDialect {
  std::string options;
  std::vector<std::pair<std::string, std::string>> columns;  // name, DuckDB type
};

// ", columns = {'a': 'BIGINT', ...}" for read_csv and read_json.
std::string CsvColumns(const std::vector<std::pair<std::string, std::string>>& columns) {
  std::string out = ", columns = {";
  for (size_t i = 0; i < columns.size(); ++i) {
    out += (i ? ", " : "") + SqlString(columns[i].first) + ": " + SqlString(columns[i].second);
  }
  return out + "}";
}

std::string TableNameOf(const std::string& file) {
  const std::string base = fs::path(file).filename().string();
  return base.substr(0, base.find('.'));
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
  // A PostgreSQL bit varying(n) stays varying: the targets' type mapping tells it from bit(n)
  // by the source type alone, which is built here (never the manifest's text, which would
  // reach the target's DDL).
  if (c.type == LogicalType::kBit &&
      (m.source_type.rfind("bit varying", 0) == 0 || m.source_type.rfind("varbit", 0) == 0)) {
    c.source_type = "bit varying" + (c.length ? "(" + std::to_string(*c.length) + ")" : "");
  }
  std::string e = SqlIdent(m.name);
  if (stored.encoding == "base64") e = "from_base64(" + e + ")";
  *expr = "CAST(" + e + " AS " + ReadType(c.type) + ")";
  return c;
}

// read_parquet(f) with the stream's column types (TableInfo::casts): a value that does not
// cast fails the read naming its row (1-based) and column.
std::string CheckedParquet(const TableInfo& t, const std::string& f) {
  std::string replace;
  for (const auto& [name, type] : t.casts) {
    const std::string id = SqlIdent(name);
    const std::string cast = "TRY_CAST(" + id + " AS " + type + ")";
    replace += (replace.empty() ? "" : ", ") +
               ("CASE WHEN " + id + " IS NOT NULL AND " + cast +
                " IS NULL THEN error('row ' || (file_row_number + 1) || " +
                SqlString(", column \"" + name + "\": '") + " || CAST(" + id + " AS VARCHAR) || " +
                SqlString("' is not a valid " + type) + ") ELSE " + cast + " END AS " + id);
  }
  return "(SELECT * EXCLUDE (file_row_number) REPLACE (" + replace + ") FROM read_parquet(" + f +
         ", file_row_number = true))";
}

// The FROM clause reading one file.
std::string Reader(const TableInfo& t, const std::string& file, bool scan = false) {
  if (t.where.manifest) return files::ManifestReader(*t.where.manifest, file, false);
  // One file, never its path read as partition folders (FromClause adds those columns).
  const std::string f = SqlString(file) + ", hive_partitioning = false";
  switch (t.where.format) {
    case FileFormat::kParquet:
      return t.casts.empty() ? "read_parquet(" + f + ")" : CheckedParquet(t, f);
    case FileFormat::kCsv:
      return "read_csv(" + f + t.csv_options +
             (scan && t.skip ? std::string(", ignore_errors = true, store_rejects = true, "
                                           "rejects_table = '") +
                                   kRejects + "', rejects_scan = '" + kRejectScans + "'"
                             : std::string()) +
             ")";
    case FileFormat::kJsonl:
      return "read_json(" + f + t.json_columns + ")";
  }
  return "";
}

// The FROM clause reading file i of `t` (at local path `file`): Reader's, with the partition
// columns of the file's folder added as constants.
// ", CAST('2026' AS BIGINT) AS "year", ...": the partition columns of file i of `t`.
std::string PartitionConstants(const TableInfo& t, size_t i) {
  const files::Partitions& p = t.partitions;
  if (p.keys.empty() || i >= t.folder_of.size()) return "";
  const std::vector<std::optional<std::string>>& values = p.values[t.folder_of[i]];
  std::string cols;
  for (size_t k = 0; k < p.keys.size(); ++k) {
    cols += ", CAST(" + (values[k] ? SqlString(*values[k]) : std::string("NULL")) + " AS " +
            p.types[k] + ") AS " + SqlIdent(p.keys[k]);
  }
  return cols;
}

std::string FromClause(const TableInfo& t, size_t i, const std::string& file) {
  const std::string reader = Reader(t, file, /*scan=*/true);
  const std::string partitions = PartitionConstants(t, i);
  if (partitions.empty()) return reader;
  return "(SELECT *" + partitions + " FROM " + reader + ")";
}

// JSON Pointer of a top-level key ("/a~1b" for "a/b").
std::string JsonPointer(const std::string& key) {
  std::string out = "/";
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// The type a JSONL column is transformed to line by line: nested types as JSON documents (what
// ColumnFromDuck makes of read_json's nested columns).
std::string JsonLinesType(const std::string& type) {
  if (type.find('[') != std::string::npos || type.rfind("STRUCT", 0) == 0 ||
      type.rfind("MAP", 0) == 0 || type.rfind("UNION", 0) == 0) {
    return "JSON";
  }
  return type;
}

// json_transform's structure for `columns` ({"name": "TYPE", ...}).
std::string JsonSpec(const std::vector<std::pair<std::string, std::string>>& columns) {
  json spec = json::object();
  for (const auto& [name, type] : columns) spec[name] = type;
  return spec.dump();
}

// Loads the next lines of `lines` (file `display`) into dbs_lines, replacing the batch before
// (the table is created when *created is false): at most kBatchLines lines or kBatchBytes
// bytes. Lines that are not UTF-8 or too long are not loaded but added to *bad; blank lines
// are not rows. False at the end of the file, with nothing loaded.
Result<bool> LoadLines(Duck* duck, files::LineReader* lines, const std::string& display,
                       bool* created, std::vector<SkippedRow>* bad) {
  if (!*created) {
    DBS_RETURN_IF_ERROR(
        duck->Exec(std::string("CREATE TABLE ") + kLines + " (line UBIGINT, j VARCHAR)"));
    *created = true;
  } else {
    DBS_RETURN_IF_ERROR(duck->Exec(std::string("DELETE FROM ") + kLines));
  }
  duckdb_appender app = nullptr;
  if (duckdb_appender_create(duck->con(), nullptr, kLines, &app) != DuckDBSuccess) {
    const std::string err = app ? duckdb_appender_error(app) : "no appender";
    duckdb_appender_destroy(&app);
    return Status::Internal("DuckDB appender: " + err);
  }
  size_t n = 0, left_out = 0, bytes = 0;
  std::string line;
  uint64_t number = 0;
  bool too_long = false, more = true;
  Status failed;
  while (n + left_out < kBatchLines && bytes < kBatchBytes) {
    auto next = lines->Next(&line, &number, &too_long);
    if (!next.ok()) {
      failed = next.status();
      break;
    }
    if (!(more = *next)) break;
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank
    if (too_long || !files::ValidUtf8(line)) {
      bad->push_back(
          {display, number, too_long ? "the line is longer than 64 MiB" : "invalid UTF-8"});
      ++left_out;
      continue;
    }
    duckdb_append_uint64(app, number);
    duckdb_append_varchar_length(app, line.data(), line.size());
    if (duckdb_appender_end_row(app) != DuckDBSuccess) {
      failed = Status::Internal(std::string("DuckDB appender: ") + duckdb_appender_error(app));
      break;
    }
    ++n;
    bytes += line.size();
  }
  if (duckdb_appender_destroy(&app) != DuckDBSuccess && failed.ok()) {
    failed = Status::Internal("DuckDB appender: the batch did not flush");
  }
  if (!failed.ok()) return failed;
  return more || n > 0;
}

// The rows of the loaded batch of JSONL lines of file i of `t` (malformedRows skip):
// dbs_line, dbs_reason (NULL for a good row: else why the line is left out), then the table's
// columns by name, as read_json with the same columns would give them. No JSON function sees
// a line that is not a JSON object (they would fail the query): those become '{}' first.
std::string JsonLinesFrom(const TableInfo& t, size_t i) {
  std::string fields, checks;
  for (const auto& [name, type] : t.json_lines_columns) {
    fields += ", dbs_r." + SqlIdent(name) + " AS " + SqlIdent(name);
    if (type == "VARCHAR" || type == "JSON") continue;  // every JSON value has a text form
    const std::string value = "json_extract(dbs_v, " + SqlString(JsonPointer(name)) + ")";
    checks += ", CASE WHEN dbs_r." + SqlIdent(name) + " IS NULL AND " + value +
              " IS NOT NULL AND CAST(" + value + " AS VARCHAR) <> 'null' THEN " +
              SqlString("column \"" + name + "\": ") + " || left(CAST(" + value +
              " AS VARCHAR), 100) || " + SqlString(" is not a valid " + type) + " END";
  }
  const std::string lines = std::string("(SELECT line AS dbs_line, j AS dbs_j, json_valid(j) AS ") +
                            "dbs_ok FROM " + kLines + ")";
  const std::string judged =
      "(SELECT dbs_line, dbs_j, CASE WHEN NOT dbs_ok THEN 'broken JSON' WHEN json_type(CASE WHEN "
      "dbs_ok THEN dbs_j ELSE '{}' END) <> 'OBJECT' THEN 'not a JSON object' END AS dbs_bad "
      "FROM " +
      lines + ")";
  const std::string objects =
      "(SELECT dbs_line, dbs_bad, CASE WHEN dbs_bad IS NULL THEN dbs_j ELSE '{}' END AS dbs_v "
      "FROM " +
      judged + ")";
  const std::string transformed = "(SELECT dbs_line, dbs_bad, dbs_v, json_transform(dbs_v, " +
                                  SqlString(JsonSpec(t.json_lines_columns)) + ") AS dbs_r FROM " +
                                  objects + ")";
  return "(SELECT dbs_line, COALESCE(dbs_bad" + checks + ") AS dbs_reason" + fields +
         PartitionConstants(t, i) + " FROM " + transformed + ")";
}

// The first line `lines` reads (from file i of `t`, named `display`) that is not a row of
// `t`, by the same judgement as malformedRows skip; nullopt when every line is one.
Result<std::optional<SkippedRow>> FirstBadLine(Duck* duck, const TableInfo& t, size_t i,
                                               files::LineReader* lines, const std::string& display,
                                               bool* created) {
  std::vector<SkippedRow> bad;
  while (true) {
    DBS_ASSIGN_OR_RETURN(bool loaded, LoadLines(duck, lines, display, created, &bad));
    if (!loaded) break;
    DBS_ASSIGN_OR_RETURN(files::DuckResult r,
                         duck->Query("SELECT dbs_line, dbs_reason FROM " + JsonLinesFrom(t, i) +
                                     " WHERE dbs_reason IS NOT NULL ORDER BY dbs_line LIMIT 1"));
    if (r.rows() > 0) {
      bad.push_back({display, std::strtoull(r.Text(0, 0).value_or("0").c_str(), nullptr, 10),
                     r.Text(1, 0).value_or("")});
    }
    if (!bad.empty()) break;
  }
  if (bad.empty()) return std::optional<SkippedRow>();
  return std::optional<SkippedRow>(
      *std::min_element(bad.begin(), bad.end(),
                        [](const SkippedRow& a, const SkippedRow& b) { return a.line < b.line; }));
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

class FileRowReader : public RowReader {
 public:
  // Reads files [first, end) of `t` (end 0: to the last).
  FileRowReader(std::unique_ptr<Duck> duck, std::shared_ptr<Remote> remote, const TableInfo* t,
                std::vector<size_t> cols, std::string filter, uint64_t limit, size_t first = 0,
                size_t end = 0)
      : duck_(std::move(duck)),
        remote_(std::move(remote)),
        t_(t),
        cols_(std::move(cols)),
        filter_(std::move(filter)),
        limit_(limit),
        first_(first),
        file_index_(first),
        file_end_(end == 0 ? t->where.files.size() : std::min(end, t->where.files.size())) {}

  Result<bool> Next(Bundle* out, size_t max_rows, size_t max_bytes) override {
    size_t added = 0;
    while (added < max_rows) {
      if (limit_ != 0 && emitted_ >= limit_) return false;
      if (chunk_ == nullptr || offset_ >= chunk_rows_) {
        DBS_ASSIGN_OR_RETURN(bool more, FetchChunk());
        if (!more) return false;
        continue;
      }
      if (lead_ > 0 && SkipBadLine()) {
        ++offset_;
        continue;
      }
      for (size_t i = 0; i < cols_.size(); ++i) {
        const Column& c = t_->schema.columns[cols_[i]];
        Status s = AppendCell(duckdb_data_chunk_get_vector(chunk_, lead_ + i), offset_, c,
                              &out->columns[i]);
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

  std::vector<SkippedRow> TakeSkipped() override {
    std::vector<SkippedRow> out;
    out.swap(skipped_);
    return out;
  }

 private:
  std::string File() const {
    if (t_->where.files.empty()) return t_->where.name;
    return t_->where.files[file_index_ <= first_ ? first_ : file_index_ - 1];
  }
  std::string Where() const {
    if (t_->where.files.empty()) return t_->where.name + ", data row " + std::to_string(emitted_);
    return File() + ", data row " + std::to_string(file_rows_ + 1);
  }

  // JSONL lines (lead_ == 2): true when the row at offset_ is a line left out, recorded.
  bool SkipBadLine() {
    duckdb_vector reason = duckdb_data_chunk_get_vector(chunk_, 1);
    uint64_t* validity = duckdb_vector_get_validity(reason);
    if (validity != nullptr && !duckdb_validity_row_is_valid(validity, offset_)) return false;
    const uint64_t line = static_cast<const uint64_t*>(
        duckdb_vector_get_data(duckdb_data_chunk_get_vector(chunk_, 0)))[offset_];
    skipped_.push_back({File(), line, std::string(StringAt(reason, offset_))});
    return true;
  }

  std::string SelectList() const {
    std::string sql = "SELECT ";
    for (size_t i = 0; i < cols_.size(); ++i) {
      sql += (i ? ", " : "") + t_->reads[cols_[i]].expr;
    }
    return sql;
  }

  // The next chunk of the current file, opening the next file when one ends; false at the end.
  Result<bool> FetchChunk() {
    while (true) {
      if (stream_) {
        auto c = stream_->Next();
        if (!c.ok()) return JsonLinesError(FileError(File(), c.status()));
        if (*c != nullptr) {
          chunk_ = *c;
          chunk_rows_ = duckdb_data_chunk_get_size(chunk_);
          offset_ = 0;
          return true;
        }
        stream_.reset();
        chunk_ = nullptr;
        if (lines_) {
          DBS_ASSIGN_OR_RETURN(bool loaded, LoadBatch());
          if (loaded) {
            DBS_RETURN_IF_ERROR(StreamBatch());
            continue;
          }
          lines_.reset();
        } else if (t_->skip && t_->where.format == FileFormat::kCsv) {
          DBS_RETURN_IF_ERROR(TakeRejects());
        }
        copy_.reset();
      }
      if (!t_->where.changes.empty()) {
        if (replayed_) return false;
        replayed_ = true;
        // The snapshot and its change files, replayed in one statement; from S3 through local
        // copies of all of them, held until the reader closes (disk: the table's files).
        std::vector<std::string> parts = t_->where.files, changes = t_->where.changes;
        if (remote_) {
          for (size_t i = 0; i < parts.size(); ++i) {
            std::unique_ptr<files::LocalCopy> c;
            DBS_ASSIGN_OR_RETURN(parts[i], LocalPath(remote_.get(), t_->where, i, &c));
            replay_copies_.push_back(std::move(c));
          }
          for (size_t i = 0; i < changes.size(); ++i) {
            DBS_ASSIGN_OR_RETURN(
                auto c, files::LocalCopy::Fetch(remote_->store.get(), t_->where.change_keys[i],
                                                remote_->spill->path()));
            changes[i] = c->path();
            replay_copies_.push_back(std::move(c));
          }
        }
        DBS_ASSIGN_OR_RETURN(std::string replay,
                             files::ReplaySql(*t_->where.manifest, parts, changes));
        file_index_ = t_->where.files.size();
        auto s = duck_->Stream(SelectList() + " FROM (" + replay + ")" +
                               (filter_.empty() ? "" : " WHERE " + filter_));
        if (!s.ok()) return FileError(t_->where.name + " (with its change files)", s.status());
        stream_ = std::move(s).value();
        continue;
      }
      if (file_index_ >= file_end_) return false;
      const std::string& file = t_->where.files[file_index_];
      DBS_ASSIGN_OR_RETURN(std::string local,
                           LocalPath(remote_.get(), t_->where, file_index_, &copy_));
      ++file_index_;
      file_rows_ = 0;
      if (t_->skip && t_->where.format == FileFormat::kJsonl) {
        DBS_ASSIGN_OR_RETURN(lines_, files::LineReader::Open(local, file));
        lead_ = 2;
        DBS_ASSIGN_OR_RETURN(bool loaded, LoadBatch());
        if (loaded) {
          DBS_RETURN_IF_ERROR(StreamBatch());
        } else {
          lines_.reset();
          copy_.reset();
        }
        continue;
      }
      lead_ = 0;
      std::string sql = SelectList() + " FROM " + FromClause(*t_, file_index_ - 1, local);
      if (!filter_.empty()) sql += " WHERE " + filter_;
      local_ = local;
      auto s = duck_->Stream(sql);
      if (!s.ok()) return JsonLinesError(FileError(file, s.status()));
      stream_ = std::move(s).value();
    }
  }

  // `failed`, read_json's error about the current file, or the file's first bad line as the
  // line-by-line reading finds it: read_json names where its parser noticed (often a line
  // later) and not the column.
  Status JsonLinesError(const Status& failed) {
    if (t_->where.format != FileFormat::kJsonl || t_->skip || t_->json_lines_columns.empty() ||
        local_.empty()) {
      return failed;
    }
    stream_.reset();
    chunk_ = nullptr;
    auto lines = files::LineReader::Open(local_, File());
    if (!lines.ok()) return failed;
    auto bad = FirstBadLine(duck_.get(), *t_, file_index_ - 1, lines->get(), File(), &lines_table_);
    if (!bad.ok() || !*bad) return failed;
    const SkippedRow& first = **bad;
    return Status(failed.code(), Retry::kFail,
                  first.file + ", line " + std::to_string(first.line) + ": " + first.reason);
  }

  // The rows DuckDB left out of the CSV file just read (its rejects table), one per line.
  Status TakeRejects() {
    auto r = duck_->Query(std::string("SELECT line, column_name, error_message FROM ") + kRejects +
                          " ORDER BY line, column_idx");
    if (!r.ok()) return Status::Ok();  // no table: nothing was rejected
    uint64_t last = 0;
    for (size_t i = 0; i < r->rows(); ++i) {
      const uint64_t line = std::strtoull(r->Text(0, i).value_or("0").c_str(), nullptr, 10);
      if (line == last && line != 0) continue;  // one reason a line
      last = line;
      skipped_.push_back({File(), line, r->Text(2, i).value_or("rejected")});
    }
    DBS_RETURN_IF_ERROR(duck_->Exec(std::string("DROP TABLE IF EXISTS ") + kRejects));
    return duck_->Exec(std::string("DROP TABLE IF EXISTS ") + kRejectScans);
  }

  Result<bool> LoadBatch() {
    return LoadLines(duck_.get(), lines_.get(), File(), &lines_table_, &skipped_);
  }

  Status StreamBatch() {
    std::string sql = "SELECT dbs_line, dbs_reason";
    for (size_t i = 0; i < cols_.size(); ++i) sql += ", " + t_->reads[cols_[i]].expr;
    sql += " FROM " + JsonLinesFrom(*t_, file_index_ - 1);
    if (!filter_.empty()) sql += " WHERE dbs_reason IS NOT NULL OR (" + filter_ + ")";
    sql += " ORDER BY dbs_line";
    auto s = duck_->Stream(sql);
    if (!s.ok()) return FileError(File(), s.status());
    stream_ = std::move(s).value();
    return Status::Ok();
  }

  std::unique_ptr<Duck> duck_;
  std::shared_ptr<Remote> remote_;
  std::unique_ptr<files::LocalCopy> copy_;                        // of the object being read (S3)
  std::vector<std::unique_ptr<files::LocalCopy>> replay_copies_;  // S3 files of a replay
  const TableInfo* t_;
  std::vector<size_t> cols_;
  std::string filter_;
  uint64_t limit_;
  std::unique_ptr<files::DuckStream> stream_;
  duckdb_data_chunk chunk_ = nullptr;  // owned by stream_
  size_t chunk_rows_ = 0, offset_ = 0, first_ = 0, file_index_ = 0, file_end_ = 0;
  uint64_t emitted_ = 0, file_rows_ = 0;
  // malformedRows skip: the rows left out and not yet taken; for JSONL, the file's lines and
  // the two leading columns (line, reason) of each chunk.
  std::vector<SkippedRow> skipped_;
  std::unique_ptr<files::LineReader> lines_;
  size_t lead_ = 0;
  bool lines_table_ = false;
  std::string local_;      // the local path of the file being read
  bool replayed_ = false;  // the replay statement of a table with change files was opened
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
    size_t first = 0, end = 0;
    if (spec.range && spec.range->files) {
      first = static_cast<size_t>(spec.range->lower.value_or(0));
      end = static_cast<size_t>(spec.range->upper.value_or(0));
      if (end <= first) return Status::InvalidArgument("an empty file range of " + t->where.name);
    }
    DBS_ASSIGN_OR_RETURN(auto duck, Duck::Open(1, "256MB"));
    return std::unique_ptr<RowReader>(new FileRowReader(
        std::move(duck), remote_, t, std::move(cols), spec.filter, spec.limit, first, end));
  }

 private:
  std::map<std::string, TableInfo>* tables_;
  std::shared_ptr<Remote> remote_;
  SourcePosition position_;
};

class FileSource : public LoadOnlySource {
 public:
  static constexpr size_t kMaxFileChunks = 64;

  explicit FileSource(ConnectionConfig config)
      : config_(std::move(config)), path_(config_.s3 ? config_.Redacted() : config_.database) {}

  Result<std::vector<TableRef>> ListTables() override {
    DBS_RETURN_IF_ERROR(Scan());
    std::vector<TableRef> out;
    for (const auto& [name, w] : where_) out.push_back({kSchema, name});
    return out;
  }
  std::string DefaultSchema() const override { return kSchema; }

  // Takes the selectors' column types; tables described before are described again.
  Status Configure(const StreamConfig& config) override {
    selectors_ = config.tables;
    skip_ = config.malformed_rows == MalformedRows::kSkip;
    tables_.clear();
    // Tables defined by a selector's glob are found by the next scan.
    for (const TableSelector& sel : selectors_) {
      if (!sel.files.empty()) {
        scanned_ = false;
        where_.clear();
        break;
      }
    }
    return Status::Ok();
  }

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
    if (info.where.manifest && !TypesFor(table.name).empty()) {
      return Status::InvalidArgument("columnTypes of table " + table.name + ": the table has a " +
                                     files::kManifestName + ", whose column types are exact");
    }
    if (!DialectFor(table.name).empty() &&
        (info.where.manifest || info.where.format != FileFormat::kCsv)) {
      return Status::InvalidArgument("csv settings of table " + table.name + ": " +
                                     (info.where.manifest
                                          ? "the table has a " + std::string(files::kManifestName) +
                                                ", which says how its files are written"
                                          : "its files are " +
                                                std::string(files::FormatName(info.where.format)) +
                                                ", not CSV"));
    }
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
  // A table of several files is read in chunks of whole files, so that the reader pool reads
  // them in parallel: at most kMaxFileChunks chunks of consecutive files. A table with change
  // files is one chunk (its snapshot and changes are replayed together).
  Result<std::vector<KeyRange>> Split(const TableSchema& table, uint64_t) override {
    DBS_RETURN_IF_ERROR(Scan());
    std::vector<KeyRange> out;
    auto it = where_.find(table.name);
    if (it == where_.end() || !it->second.changes.empty() || it->second.files.size() < 2) {
      return out;
    }
    const size_t n = it->second.files.size();
    const size_t chunks = std::min(n, kMaxFileChunks);
    for (size_t c = 0; c < chunks; ++c) {
      KeyRange r;
      r.files = true;
      r.lower = static_cast<int64_t>(n * c / chunks);
      r.upper = static_cast<int64_t>(n * (c + 1) / chunks);
      out.push_back(r);
    }
    return out;
  }
  Result<std::unique_ptr<Snapshot>> BeginSnapshot(int) override {
    DBS_RETURN_IF_ERROR(Scan());
    return std::unique_ptr<Snapshot>(new FileSnapshot(&tables_, remote_));
  }

 private:
  std::string NoCdcReason() const override {
    return "file sources take mode load only: files have no change stream";
  }

  // Finds the tables under path_, and those the selectors define by a glob (once).
  Status Scan() {
    if (scanned_) return Status::Ok();
    where_.clear();  // what a failed scan found
    DBS_RETURN_IF_ERROR(config_.s3 ? ScanS3() : ScanLocal());
    for (size_t i = 0; i < selectors_.size(); ++i) {
      if (selectors_[i].files.empty()) continue;
      Status s = AddGlobTable(selectors_[i]);
      if (!s.ok()) return s.WithContext("tables[" + std::to_string(i) + "].files");
    }
    scanned_ = true;
    return Status::Ok();
  }

  // The table `sel` defines by its glob (TableSelector::files): every data file under the
  // source's folder (or prefix) whose path matches, in path order; its partition folders
  // (key=value/ below the glob's fixed folders, or among its last ones) become columns when
  // every file is in them.
  Status AddGlobTable(const TableSelector& sel) {
    const std::string& glob = sel.files;
    size_t fixed = 0;  // the glob's leading folders without wildcards: glob.substr(0, fixed)
    for (size_t at = 0;;) {
      const size_t slash = glob.find('/', at);
      if (slash == std::string::npos ||
          glob.substr(at, slash - at).find_first_of("*?[") != std::string::npos) {
        break;
      }
      fixed = slash;
      at = slash + 1;
    }
    // Partition folders among them stay below the base, to become columns.
    while (fixed > 0) {
      const size_t slash = glob.rfind('/', fixed - 1);
      const size_t start = slash == std::string::npos ? 0 : slash + 1;
      if (!files::PartitionKeyOf(glob.substr(start, fixed - start))) break;
      fixed = slash == std::string::npos ? 0 : slash;
    }
    const std::string base = glob.substr(0, fixed);
    // Hidden paths (a part starting with '.') and dbstreams' own (a part starting with '_':
    // _changes/, a _manifest.json) match only where the glob spells them out.
    const bool own = glob[0] == '_' || glob.find("/_") != std::string::npos;
    const auto matches = [&](const std::string& rel) {
      return fnmatch(glob.c_str(), rel.c_str(), FNM_PATHNAME | FNM_PERIOD) == 0 &&
             (own || (rel[0] != '_' && rel.find("/_") == std::string::npos)) &&
             files::FormatOfFile(rel.substr(rel.rfind('/') + 1));
    };
    // (path relative to the fixed folders, the name the file is read by), and S3 keys.
    std::vector<std::pair<std::string, std::string>> found;
    std::map<std::string, std::string> key_of;
    const auto below = [&](const std::string& rel) {
      return base.empty() ? rel : rel.substr(base.size() + 1);
    };
    std::string where;
    if (config_.s3) {
      // The glob is relative to the connection's prefix, wherever the scan rooted the store
      // (at the prefix, or at its parent for one object or a partitioned table).
      if (config_.database.find_first_of("*?[") != std::string::npos) {
        return Status::InvalidArgument("a glob table needs a source prefix without a glob, not " +
                                       path_);
      }
      const std::string prefix_base =
          "s3://" + config_.host + "/" + (config_.database.empty() ? "" : config_.database + "/");
      if (prefix_base.rfind(remote_->base, 0) != 0) {
        return Status::Internal("the store of " + path_ + " is not rooted above its prefix");
      }
      const std::string into = prefix_base.substr(remote_->base.size());
      std::unique_ptr<ObjectStore> at_prefix;
      ObjectStore* store = remote_->store.get();
      if (!into.empty()) {
        DBS_ASSIGN_OR_RETURN(at_prefix, files::OpenS3Of(config_));
        store = at_prefix.get();
      }
      where = prefix_base + base;
      DBS_ASSIGN_OR_RETURN(auto objects, store->List(base, true));
      for (const ObjectInfo& o : objects) {
        if (o.is_prefix || !matches(o.key)) continue;
        found.emplace_back(below(o.key), prefix_base + o.key);
        key_of[prefix_base + o.key] = into + o.key;
      }
    } else {
      std::error_code ec;
      if (!fs::is_directory(path_, ec)) {
        return Status::InvalidArgument("a glob table needs a source folder, and " + path_ +
                                       " is not one");
      }
      const fs::path root(path_);
      where = (root / base).string();
      if (fs::is_directory(root / base, ec)) {
        for (auto it = fs::recursive_directory_iterator(root / base, ec);
             it != fs::recursive_directory_iterator(); it.increment(ec)) {
          if (ec) break;
          std::error_code ec2;
          if (!it->is_regular_file(ec2)) continue;
          const std::string rel = fs::relative(it->path(), root, ec2).generic_string();
          if (!ec2 && matches(rel)) found.emplace_back(below(rel), it->path().string());
        }
      }
      if (ec) return Status::IoError("listing " + where + ": " + ec.message());
    }
    if (found.empty()) {
      return Status(StatusCode::kNotFound, Retry::kFail,
                    "\"" + glob + "\" matches no CSV, JSON(L) or Parquet file under " + path_);
    }
    where_.erase(sel.pattern);
    FileTable t;
    t.name = sel.pattern;
    bool partitioned = true;
    for (const auto& [rel, name] : found)
      partitioned = partitioned && files::PartitionFolderOf(rel);
    if (partitioned) {
      DBS_RETURN_IF_ERROR(AddTableFiles(where, std::move(t), found));
    } else {
      std::sort(found.begin(), found.end());
      for (const auto& [rel, name] : found) {
        const FileFormat f = *files::FormatOfFile(fs::path(rel).filename().string());
        if (!t.files.empty() && f != t.format) {
          return Status::InvalidArgument("\"" + glob + "\" matches files of different formats");
        }
        t.format = f;
        t.files.push_back(name);
      }
      t.dir = where;
      where_[t.name] = std::move(t);
    }
    if (config_.s3) {
      FileTable& added = where_[sel.pattern];
      added.keys.clear();
      for (const std::string& f : added.files) added.keys.push_back(key_of[f]);
    }
    return Status::Ok();
  }

  // The tables of a local path_: a folder's files and sub-folders, one file, or a glob.
  Status ScanLocal() {
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
        std::error_code ec2;
        if (e.is_directory(ec2) && files::PartitionKeyOf(e.path().filename().string())) {
          // The folder is one partitioned table itself (named by the folder).
          return AddFolder(path_);
        }
      }
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
      if (o.is_prefix && !prefix.empty() &&
          files::PartitionKeyOf(o.key.substr(0, o.key.size() - 1))) {
        // The prefix is one partitioned table itself (named by its last part).
        DBS_RETURN_IF_ERROR(open_at(parent));
        return AddS3Folder(last);
      }
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
      // Change files of a CDC stream (sinks/files/changes.h), in name order = change order.
      DBS_ASSIGN_OR_RETURN(auto changes, remote_->store->List(dir + "/_changes", false));
      for (const ObjectInfo& o : changes) {
        const std::string n = o.key.substr(o.key.rfind('/') + 1);
        if (o.is_prefix || !files::IsChangeFileName(n)) continue;
        t.changes.push_back(remote_->base + o.key);
        t.change_keys.push_back(o.key);
      }
      where_[t.name] = std::move(t);
      return Status::Ok();
    }
    if (m.status().code() != StatusCode::kNotFound) return m.status();
    // Its data files, and those inside its partition folders (any depth).
    DBS_ASSIGN_OR_RETURN(auto objects, remote_->store->List(dir, true));
    std::vector<std::pair<std::string, std::string>> found;
    std::map<std::string, std::string> key_of;  // display name -> object key
    for (const ObjectInfo& o : objects) {
      if (o.is_prefix || o.key.size() <= dir.size() + 1 || o.key[dir.size()] != '/' ||
          o.key.compare(0, dir.size(), dir) != 0) {
        continue;
      }
      const std::string rel = o.key.substr(dir.size() + 1);
      const std::string n = rel.substr(rel.rfind('/') + 1);
      if (!files::FormatOfFile(n) || !files::PartitionFolderOf(rel)) continue;
      found.emplace_back(rel, remote_->base + o.key);
      key_of[remote_->base + o.key] = o.key;
    }
    const std::string name = t.name;
    DBS_RETURN_IF_ERROR(AddTableFiles(remote_->base + dir, std::move(t), std::move(found)));
    auto added = where_.find(name);
    if (added != where_.end()) {
      for (const std::string& f : added->second.files) added->second.keys.push_back(key_of[f]);
    }
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
      t.changes = files::ChangeFilesIn(dir);
      where_[t.name] = std::move(t);
      return Status::Ok();
    }
    if (m.status().code() != StatusCode::kNotFound) return m.status();
    // The data files of the folder, and those inside its partition folders (any depth).
    std::vector<std::pair<std::string, std::string>> found;  // relative path, absolute path
    DBS_RETURN_IF_ERROR(CollectFiles(dir, "", 0, &found));
    return AddTableFiles(dir, std::move(t), std::move(found));
  }

  // Adds the data files of `dir` (relative path "" at the top) and, recursively, of its
  // partition folders to *out; other folders are not entered.
  static Status CollectFiles(const std::string& dir, const std::string& rel, int depth,
                             std::vector<std::pair<std::string, std::string>>* out) {
    if (depth > 64) return Status::InvalidArgument("partition folders nest too deep at " + dir);
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string n = e.path().filename().string();
      const std::string r = rel.empty() ? n : rel + "/" + n;
      std::error_code ec2;
      if (e.is_directory(ec2)) {
        if (files::PartitionKeyOf(n)) {
          DBS_RETURN_IF_ERROR(CollectFiles(e.path().string(), r, depth + 1, out));
        }
      } else if (e.is_regular_file(ec2) && files::FormatOfFile(n)) {
        out->emplace_back(r, e.path().string());
      }
    }
    if (ec) return Status::IoError("listing " + dir + ": " + ec.message());
    return Status::Ok();
  }

  // A table of the files `found` (paths relative to the table folder `dir`, and the names the
  // files are read by): all directly in `dir`, or all in partition folders with the same keys.
  Status AddTableFiles(const std::string& dir, FileTable t,
                       std::vector<std::pair<std::string, std::string>> found) {
    if (found.empty()) return Status::Ok();  // not a table
    std::sort(found.begin(), found.end());
    bool flat = false, partitioned = false;
    for (const auto& [rel, name] : found) {
      auto f = files::FormatOfFile(fs::path(rel).filename().string());
      if (!t.files.empty() && *f != t.format) {
        return Status::InvalidArgument("the folder " + dir + " mixes file formats");
      }
      t.format = *f;
      const std::optional<std::string> folder = files::PartitionFolderOf(rel);
      (folder->empty() ? flat : partitioned) = true;
      if (flat && partitioned) {
        return Status::InvalidArgument("the folder " + dir +
                                       " holds data files both directly and in partition "
                                       "folders (key=value/): move " +
                                       (folder->empty() ? rel : found.front().first));
      }
      t.files.push_back(name);
      t.folders.push_back(*folder);
    }
    if (flat) t.folders.clear();
    t.dir = dir;
    where_[t.name] = std::move(t);
    return Status::Ok();
  }

  // Columns of a table without a manifest: DuckDB's view of its first file, with the types the
  // stream's selector overrides (Configure), then the partition columns.
  Status Sniff(TableInfo* info) {
    if (!duck_) {
      DBS_ASSIGN_OR_RETURN(duck_, Duck::Open(1, "256MB"));
    }
    const std::string& first = info->where.files.front();
    std::unique_ptr<files::LocalCopy> copy;
    DBS_ASSIGN_OR_RETURN(std::string local, LocalPath(remote_.get(), info->where, 0, &copy));
    DBS_RETURN_IF_ERROR(ResolvePartitions(info));
    info->skip = skip_;
    const bool json_lines = skip_ && info->where.format == FileFormat::kJsonl;
    std::map<std::string, std::string> overrides = TypesFor(info->where.name);
    const std::string what = "columnTypes of table " + info->where.name;
    // The overrides of the files' own columns; those left over name partition keys or nothing.
    auto take = [&](std::vector<std::pair<std::string, std::string>>* columns) {
      for (auto& [name, type] : *columns) {
        auto o = overrides.find(name);
        if (o == overrides.end()) continue;
        type = o->second;
        info->casts.emplace_back(name, o->second);
        overrides.erase(o);
      }
    };
    std::vector<std::pair<std::string, std::string>> file_columns;
    if (info->where.format == FileFormat::kCsv) {
      DBS_ASSIGN_OR_RETURN(CsvDialect dialect,
                           SniffCsv(local, first, DialectFor(info->where.name)));
      file_columns = dialect.columns;
      take(&dialect.columns);
      info->csv_options = dialect.options + CsvColumns(dialect.columns);
    } else if (json_lines) {
      DBS_ASSIGN_OR_RETURN(file_columns, SniffJsonLines(local, first));
      info->json_lines_columns = file_columns;
      take(&info->json_lines_columns);
    } else if (!overrides.empty()) {
      DBS_ASSIGN_OR_RETURN(file_columns, DescribeColumns(Reader(*info, local), first));
      take(&file_columns);
      if (info->where.format == FileFormat::kJsonl) info->json_columns = CsvColumns(file_columns);
    }
    files::Partitions& p = info->partitions;
    for (size_t k = 0; k < p.keys.size(); ++k) {
      auto o = overrides.find(p.keys[k]);
      if (o == overrides.end()) continue;
      p.types[k] = o->second;
      overrides.erase(o);
      DBS_RETURN_IF_ERROR(CheckPartitionValues(*info, k).WithContext(what));
    }
    if (!overrides.empty()) {
      std::string names;
      for (const auto& [name, type] : file_columns) names += (names.empty() ? "" : ", ") + name;
      for (const std::string& k : p.keys) names += (names.empty() ? "" : ", ") + k;
      return Status::InvalidArgument(what + " names column '" + overrides.begin()->first +
                                     "', which it does not have" +
                                     (names.empty() ? "" : " (columns: " + names + ")"));
    }
    std::vector<std::pair<std::string, std::string>> columns = info->json_lines_columns;
    if (!json_lines) {
      auto described = DescribeColumns(Reader(*info, local), first);
      if (!described.ok() && info->where.format == FileFormat::kJsonl) {
        return NameBadJsonLine(info, local, described.status());
      }
      if (!described.ok()) {
        return info->casts.empty() ? described.status() : described.status().WithContext(what);
      }
      columns = std::move(described).value();
    } else if (!info->casts.empty()) {
      // DuckDB checks the types the stream set.
      auto checked = duck_->Query("SELECT json_transform('{}', " +
                                  SqlString(JsonSpec(info->json_lines_columns)) + ")");
      if (!checked.ok()) return FileError(first, checked.status()).WithContext(what);
    }
    if (columns.empty()) return Status::InvalidArgument(first + " has no columns");
    for (const auto& [name, type] : columns) {
      for (const std::string& k : p.keys) {
        if (name == k) {
          return Status::InvalidArgument(first + " has a column " + name +
                                         ", which is also its partition key (" + name + "=...)");
        }
      }
    }
    if (!json_lines && info->where.format == FileFormat::kJsonl) {
      info->json_lines_columns = columns;  // to name a bad line when read_json fails
      for (auto& [name, type] : info->json_lines_columns) type = JsonLinesType(type);
    }
    for (size_t k = 0; k < p.keys.size(); ++k) columns.emplace_back(p.keys[k], p.types[k]);
    for (const auto& [name, type] : columns) {
      ColumnRead read;
      info->schema.columns.push_back(ColumnFromDuck(name, type, &read.expr));
      read.type = info->schema.columns.back().type;
      info->reads.push_back(std::move(read));
    }
    return Status::Ok();
  }

  // The columns of a JSONL table read line by line (malformedRows skip): read_json's sniffing of
  // the first file's first lines that are JSON objects, copied to a private file (the lines
  // that are not would make it fail or turn every column into one JSON column). Nested types
  // are read as JSON documents, as read_json's nested columns are.
  Result<std::vector<std::pair<std::string, std::string>>> SniffJsonLines(
      const std::string& file, const std::string& display) {
    DBS_ASSIGN_OR_RETURN(auto lines, files::LineReader::Open(file, display));
    DBS_ASSIGN_OR_RETURN(auto spill, files::SpillDir::Create("jsonl-sample"));
    const std::string sample = spill->path() + "/sample.jsonl";
    std::ofstream out(sample, std::ios::binary);
    std::string line;
    uint64_t number = 0;
    bool too_long = false;
    size_t good = 0;
    bool first = true;
    while (good < 20480) {
      DBS_ASSIGN_OR_RETURN(bool more, lines->Next(&line, &number, &too_long));
      if (!more) break;
      const size_t start = line.find_first_not_of(" \t");
      if (start == std::string::npos) continue;
      if (first && line[start] == '[' && !json::accept(line)) {
        return Status::Unsupported(display +
                                   " is a JSON array document, not JSON Lines: malformedRows "
                                   "skip reads one JSON object a line (use fail for it)");
      }
      first = false;
      if (too_long || line[start] != '{' || !files::ValidUtf8(line) || !json::accept(line)) {
        continue;
      }
      out << line << '\n';
      ++good;
    }
    out.close();
    if (good == 0) {
      return Status::InvalidArgument(display +
                                     " has no line that is a JSON object to take the "
                                     "columns from");
    }
    DBS_ASSIGN_OR_RETURN(auto columns,
                         DescribeColumns("read_json(" + SqlString(sample) +
                                             ", format = 'newline_delimited', hive_partitioning = "
                                             "false)",
                                         display));
    for (auto& [name, type] : columns) type = JsonLinesType(type);
    return columns;
  }

  // `failed`, read_json's error sniffing the first file of a JSONL table, or that file's first
  // bad line (see FileRowReader::JsonLinesError).
  Status NameBadJsonLine(TableInfo* info, const std::string& local, const Status& failed) {
    const std::string& first = info->where.files.front();
    auto columns = SniffJsonLines(local, first);
    if (!columns.ok()) return failed;
    TableInfo probe = *info;
    probe.json_lines_columns = std::move(columns).value();
    for (auto& [name, type] : probe.json_lines_columns) {
      for (const auto& [cast_name, cast_type] : info->casts) {
        if (name == cast_name) type = cast_type;
      }
    }
    auto lines = files::LineReader::Open(local, first);
    if (!lines.ok()) return failed;
    auto bad = FirstBadLine(duck_.get(), probe, 0, lines->get(), first, &lines_table_);
    if (!bad.ok() || !*bad) return failed;
    return Status(failed.code(), Retry::kFail,
                  first + ", line " + std::to_string((*bad)->line) + ": " + (*bad)->reason);
  }

  // The column names and DuckDB types of `from`, a FROM clause reading file `display`.
  Result<std::vector<std::pair<std::string, std::string>>> DescribeColumns(
      const std::string& from, const std::string& display) {
    auto d = duck_->Query("DESCRIBE SELECT * FROM " + from);
    if (!d.ok()) return FileError(display, d.status());
    std::vector<std::pair<std::string, std::string>> columns;
    for (size_t r = 0; r < d->rows(); ++r) {
      columns.emplace_back(d->Text(0, r).value_or(""), d->Text(1, r).value_or("VARCHAR"));
    }
    return columns;
  }

  // The partition keys, types and values of a partitioned table (partitions.h).
  Status ResolvePartitions(TableInfo* info) {
    const FileTable& w = info->where;
    if (w.folders.empty()) return Status::Ok();
    std::vector<std::string> unique;
    std::map<std::string, size_t> index;
    for (const std::string& f : w.folders) {
      auto [it, added] = index.emplace(f, unique.size());
      if (added) unique.push_back(f);
      info->folder_of.push_back(it->second);
    }
    DBS_ASSIGN_OR_RETURN(info->partitions, files::ResolvePartitions(duck_.get(), unique, w.dir));
    info->folders = std::move(unique);
    return Status::Ok();
  }

  // Every folder's value of partition key k casts to its (overridden) type.
  Status CheckPartitionValues(const TableInfo& info, size_t k) {
    const files::Partitions& p = info.partitions;
    for (size_t f = 0; f < p.values.size(); ++f) {
      const std::optional<std::string>& v = p.values[f][k];
      if (!v) continue;
      auto r = duck_->Query("SELECT TRY_CAST(" + SqlString(*v) + " AS " + p.types[k] + ") IS NULL");
      if (!r.ok()) return Status::InvalidArgument("'" + p.types[k] + "': " + r.status().message());
      if (r->Text(0, 0).value_or("true") == "true") {
        return Status::InvalidArgument(info.where.dir + "/" + info.folders[f] + ": the value '" +
                                       *v + "' of " + p.keys[k] + " is not a valid " + p.types[k]);
      }
    }
    return Status::Ok();
  }

  // The column types the stream sets for `table`: those of the first selector matching it
  // (the one PlanTables plans it by).
  std::map<std::string, std::string> TypesFor(const std::string& table) const {
    for (const TableSelector& sel : selectors_) {
      if (sel.query.empty() && MatchTablePattern(sel.pattern, kSchema, table, kSchema)) {
        return sel.column_types;
      }
    }
    return {};
  }

  // The selector's CSV dialect settings of `table` (empty: all sniffed).
  CsvDialectSettings DialectFor(const std::string& table) const {
    for (const TableSelector& sel : selectors_) {
      if (sel.query.empty() && MatchTablePattern(sel.pattern, kSchema, table, kSchema)) {
        return sel.csv;
      }
    }
    return {};
  }

  // read_csv arguments for the dialect settings the user gave (each one DuckDB's sniffer then
  // takes as given).
  static std::string DialectArgs(const CsvDialectSettings& d) {
    std::string out;
    if (d.delimiter) out += ", delim = " + SqlString(*d.delimiter);
    if (d.quote) out += ", quote = " + SqlString(*d.quote);
    if (d.escape) out += ", escape = " + SqlString(*d.escape);
    if (d.header) out += std::string(", header = ") + (*d.header ? "true" : "false");
    if (d.null_string) out += ", nullstr = " + SqlString(*d.null_string);
    if (d.encoding) out += ", encoding = " + SqlString(*d.encoding);
    return out;
  }

  // read_csv arguments (after the file name, without `columns`) for every file of a CSV table,
  // and its columns: DuckDB's sniffed dialect and types, where `dialect` (the selector's `csv`)
  // does not set them. When the sniffer fails or is fooled into one column holding the
  // delimiter (a row with a different field count does that), the file is parsed strictly
  // with the set or the extension's delimiter and text columns, so that the bad row is named
  // by its line. `file` is the local path, `display` the name for messages.
  Result<CsvDialect> SniffCsv(const std::string& file, const std::string& display,
                              const CsvDialectSettings& dialect) {
    const bool tsv = display.find(".tsv") != std::string::npos;
    const char delim = dialect.delimiter ? dialect.delimiter->front() : tsv ? '\t' : ',';
    const std::string set = DialectArgs(dialect);
    // Skipping: the sniffer passes over rows it cannot parse (else it fails on them).
    auto sniffed = duck_->Query("SELECT Prompt FROM sniff_csv(" + SqlString(file) + set +
                                (skip_ ? ", ignore_errors = true" : "") + ")");
    std::optional<std::string> prompt;
    if (sniffed.ok()) prompt = sniffed->Text(0, 0);
    const size_t open = prompt ? prompt->find('(') : std::string::npos;
    const size_t comma =
        open == std::string::npos ? open : prompt->find(',', prompt->find('\'', open + 2) + 1);
    const size_t close = prompt ? prompt->rfind(')') : std::string::npos;
    CsvDialect out;
    if (comma != std::string::npos && close != std::string::npos && close > comma) {
      std::string opts = prompt->substr(comma, close - comma);
      const bool parsed = TakeColumnsOption(&opts, &out.columns);
      if (size_t ie = opts.find(", ignore_errors=true"); ie != std::string::npos) {
        opts.erase(ie, 20);  // the reader adds it back when skipping
      }
      // One sniffed column whose name holds the delimiter: the dialect is wrong.
      const bool fooled =
          out.columns.size() == 1 && out.columns.front().first.find(delim) != std::string::npos;
      if (parsed && !fooled) {
        if (size_t sm = opts.find("strict_mode=false"); sm != std::string::npos) {
          opts.replace(sm, 17, "strict_mode=true");
        } else {
          opts += ", strict_mode=true";
        }
        out.options = opts + ", allow_quoted_nulls = false";
        return out;
      }
    }
    if (dialect.encoding && *dialect.encoding == "utf-16") {
      // The header cannot be split here; DuckDB's own reason is the best there is.
      if (!sniffed.ok()) return FileError(display, sniffed.status());
      return Status::InvalidArgument(display +
                                     ": DuckDB could not work out the CSV dialect; "
                                     "set the table's csv settings");
    }
    const std::string quote = dialect.quote.value_or("\"");
    const bool header = dialect.header.value_or(true);
    DBS_ASSIGN_OR_RETURN(std::vector<std::string> names,
                         HeaderNames(file, delim, quote.empty() ? '\0' : quote.front(),
                                     dialect.encoding && *dialect.encoding == "latin-1"));
    if (!header) {  // DuckDB's names: column0.., zero-padded to the widest index
      const size_t width = std::to_string(names.size() - 1).size();
      for (size_t i = 0; i < names.size(); ++i) {
        const std::string n = std::to_string(i);
        names[i] = "column" + std::string(width - n.size(), '0') + n;
      }
    }
    out.options = ", auto_detect = false, header = " + std::string(header ? "true" : "false") +
                  ", delim = " + SqlString(std::string(1, delim)) +
                  ", quote = " + SqlString(quote) +
                  ", escape = " + SqlString(dialect.escape.value_or(quote)) +
                  (dialect.null_string ? ", nullstr = " + SqlString(*dialect.null_string) : "") +
                  (dialect.encoding ? ", encoding = " + SqlString(*dialect.encoding) : "") +
                  ", strict_mode = true, allow_quoted_nulls = false";
    out.columns.clear();
    for (const std::string& n : names) out.columns.emplace_back(n, "VARCHAR");
    if (skip_) return out;  // the rows that do not fit are left out when read
    // Reads the file once: a malformed row fails here, with its line.
    auto checked = duck_->Query("SELECT count(*) FROM read_csv(" + SqlString(file) + out.options +
                                CsvColumns(out.columns) + ")");
    if (!checked.ok()) return FileError(display, checked.status());
    return out;
  }

  // Removes "columns={'a': 'BIGINT', ...}" (sniff_csv's spelling) from the read_csv arguments
  // *opts into *columns; false when it is missing or does not parse.
  static bool TakeColumnsOption(std::string* opts,
                                std::vector<std::pair<std::string, std::string>>* columns) {
    const size_t at = opts->find("columns={");
    if (at == std::string::npos) return false;
    size_t i = at + 9;
    // A quoted SQL string at i ('' inside), into *v.
    auto quoted = [&](std::string* v) {
      if (i >= opts->size() || (*opts)[i] != '\'') return false;
      for (++i; i < opts->size(); ++i) {
        if ((*opts)[i] == '\'') {
          if (i + 1 < opts->size() && (*opts)[i + 1] == '\'') {
            *v += '\'';
            ++i;
          } else {
            ++i;
            return true;
          }
        } else {
          *v += (*opts)[i];
        }
      }
      return false;
    };
    auto skip = [&](char c) {
      while (i < opts->size() && (*opts)[i] == ' ') ++i;
      if (i >= opts->size() || (*opts)[i] != c) return false;
      ++i;
      while (i < opts->size() && (*opts)[i] == ' ') ++i;
      return true;
    };
    columns->clear();
    while (true) {
      std::string name, type;
      if (!quoted(&name) || !skip(':') || !quoted(&type)) return false;
      columns->emplace_back(std::move(name), std::move(type));
      if (skip('}')) break;
      if (!skip(',')) return false;
    }
    // The option and the ", " before it.
    size_t from = at;
    while (from > 0 && ((*opts)[from - 1] == ' ' || (*opts)[from - 1] == ',')) --from;
    opts->erase(from, i - from);
    return !columns->empty();
  }

  // The fields of a CSV file's first line (double quotes, "" inside them).
  // The fields of the file's first line split at `delim`, with `quote` ('\0': none) quoting
  // and doubled; `latin1`: the bytes are ISO-8859-1, returned as UTF-8.
  static Result<std::vector<std::string>> HeaderNames(const std::string& file, char delim,
                                                      char quote, bool latin1) {
    std::ifstream in(file, std::ios::binary);
    std::string line;
    if (!in || !std::getline(in, line)) return Status::InvalidArgument(file + " is empty");
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (latin1) {
      std::string utf8;
      for (unsigned char c : line) {
        if (c < 0x80) {
          utf8 += static_cast<char>(c);
        } else {
          utf8 += static_cast<char>(0xC0 | (c >> 6));
          utf8 += static_cast<char>(0x80 | (c & 0x3F));
        }
      }
      line = std::move(utf8);
    }
    std::vector<std::string> out(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted) {
        if (c == quote && i + 1 < line.size() && line[i + 1] == quote) {
          out.back() += quote;
          ++i;
        } else if (c == quote) {
          quoted = false;
        } else {
          out.back() += c;
        }
      } else if (quote != '\0' && c == quote) {
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
  std::vector<TableSelector> selectors_;     // the stream's (Configure)
  bool skip_ = false;                        // malformedRows skip (Configure)
  bool lines_table_ = false;                 // duck_ has dbs_lines (NameBadJsonLine)
  std::unique_ptr<Duck> duck_;
};

}  // namespace

Result<std::unique_ptr<Source>> OpenFileSource(const ConnectionConfig& config) {
  if (config.engine != Engine::kFile) return Status::InvalidArgument("not a file:// source");
  return std::unique_ptr<Source>(new FileSource(config));
}

}  // namespace dbs

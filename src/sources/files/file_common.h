// What file sources and file targets share: formats and options, how each logical type is
// stored in a file, the per-table `_manifest.json`, and small file-system helpers.
//
// Layout of a file target root (docs/delivery.md, "File targets"):
//   <root>/<table>/part-00000.parquet ...   the data, complete files only (rename)
//   <root>/<table>/_manifest.json           the committed set: files, rows, schema, sha256
//   <root>/.dbs/<stream.run>/<table>/       a run's staged segments (removed when it ends)
//   <root>/.dbs/locks/, <root>/.dbs/failed/ locks shared by writers, failed-run markers
//   <root>/<table>/_changes/changes-...     CDC streams: change files (sinks/files/changes.h)
//   <root>/.dbs/cdc/<stream.run>/           CDC streams: checkpoints, changes not published
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/connection.h"
#include "core/result.h"
#include "core/schema.h"

namespace dbs::files {

enum class FileFormat { kCsv, kJsonl, kParquet };

std::string_view FormatName(FileFormat f);  // "csv", "jsonl", "parquet"
Result<FileFormat> ParseFormat(std::string_view name);
// The format of a data file by its name (.csv .tsv .csv.gz .csv.zst .json .jsonl .ndjson
// .parquet, with optional .gz/.zst for the text formats); nullopt: not a data file.
std::optional<FileFormat> FormatOfFile(std::string_view name);

// Target options: from the connection's parameters (URL query or the connection object's
// fields format, compression, rowsPerFile, changeFileRows, changeFileSeconds).
struct FileOptions {
  FileFormat format = FileFormat::kParquet;
  // Parquet: zstd (default), snappy, gzip, none. CSV/JSONL: none (default), gzip, zstd.
  std::string compression;
  uint64_t rows_per_file = 1'000'000;
  // A part is also committed once its file reaches this many bytes (0: no size limit); see
  // docs/files.md for how far past it a file may grow.
  uint64_t bytes_per_file = 0;
  // Parquet: rows per row group (0: chosen by the writer, about 6 MiB of rows); at most
  // kMaxRowGroupRows.
  uint64_t row_group_rows = 0;
  static constexpr uint64_t kMaxRowGroupRows = 1'000'000;
  // CDC into files (sinks/files/changes.h): a change file is published when its staged
  // changes reach change_rows (0: rows_per_file) or the oldest is change_seconds old.
  uint64_t change_rows = 0;
  uint64_t change_seconds = 60;
};
Result<FileOptions> FileOptionsOf(const ConnectionConfig& c);
// ".parquet", ".csv.gz", ".jsonl.zst", ...
std::string DataExtension(const FileOptions& o);

// How a column is stored: the DuckDB type of the file's column and the encoding of its text
// formats. See docs/type-mapping.md, "File targets".
struct StoredColumn {
  std::string type;      // DuckDB type: "DECIMAL(12,2)", "VARCHAR", "BLOB", "TIMESTAMP", ...
  std::string encoding;  // "" (native) or "base64" (bytes in CSV/JSONL)
  std::string warning;   // non-empty when the file keeps the value as text only
};
StoredColumn StoredFor(const Column& c, FileFormat f);

// One data file of a table, as the manifest lists it.
struct ManifestFile {
  std::string name;  // relative to the table folder
  uint64_t rows = 0;
  uint64_t bytes = 0;
  std::string sha256;  // hex of the file's bytes
};

struct Manifest {
  std::string stream;  // "<stream>.<run>" of the run that committed this set
  FileFormat format = FileFormat::kParquet;
  std::string compression;
  std::vector<ManifestFile> files;
  uint64_t rows = 0;
  TableSchema table;                 // logical columns as the run's source described them (ToJson)
  std::vector<StoredColumn> stored;  // per column
};
nlohmann::json ToJson(const Manifest& m);
Result<Manifest> ManifestFromJson(const nlohmann::json& j);
// NotFound when the folder has no manifest; Corruption when it does not parse.
Result<Manifest> ReadManifest(const std::string& table_dir);
inline constexpr char kManifestName[] = "_manifest.json";

// Writes `bytes` to `path` through a temporary name in the same folder, fsync and rename: a
// reader sees the old file or the new one, never a part.
Status WriteFileAtomic(const std::string& path, std::string_view bytes);
Result<std::string> ReadWholeFile(const std::string& path);
// Hex SHA-256 of a file's bytes (streamed) and its size.
Result<std::string> Sha256File(const std::string& path, uint64_t* bytes);
// fsyncs a file or a folder (after renames into it).
Status SyncPath(const std::string& path);

// An exclusive advisory lock (flock) on a lock file, held until destruction; serializes
// writers of one host, within and across processes.
class FileLock {
 public:
  static Result<std::unique_ptr<FileLock>> Acquire(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

// A table or stream name usable as one path component: InvalidArgument for "", ".", "..",
// names with '/' or NUL, or starting with '.' (reserved for the bookkeeping folder).
Status CheckPathComponent(const std::string& name, const std::string& what);

}  // namespace dbs::files

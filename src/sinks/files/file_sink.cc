#include "sinks/files/file_sink.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/logging.h"
#include "sinks/files/changes.h"
#include "sinks/files/naming.h"
#include "sinks/files/s3_sink.h"
#include "sinks/files/stage.h"
#include "sources/files/duck.h"
#include "sources/files/file_common.h"

namespace dbs {
namespace {

namespace fs = std::filesystem;
using files::Duck;
using files::FileFormat;
using files::FileOptions;
using files::IdForFile;
using files::IdKey;
using files::Manifest;
using files::ManifestFile;
using files::PartNumber;
using files::SqlIdent;
using files::SqlString;
using nlohmann::json;

Status IoFailure(const std::string& what, const std::error_code& ec) {
  return Status::IoError(what + ": " + ec.message());
}

struct Segment {
  std::vector<uint64_t> key;
  std::string data;  // path of the Parquet segment
  uint64_t rows = 0;
};

class FileSink : public Sink {
 public:
  FileSink(std::string root, FileOptions fo, SinkOptions so)
      : root_(std::move(root)),
        fo_(std::move(fo)),
        so_(std::move(so)),
        changes_(files::LocalChangeStore(root_), fo_, so_, [this] { return Db(); }) {}

  Result<TableDdlPlan> PlanTable(const TableSchema& t) override {
    auto existing = files::ReadManifest(root_ + "/" + t.name);
    return files::PlanFileTable(t, root_ + "/" + t.name + "/", existing.ok(), fo_, so_);
  }

  Result<TargetTable> PrepareTable(const TableSchema& t) override {
    DBS_RETURN_IF_ERROR(files::CheckPathComponent(t.name, "table name"));
    DBS_RETURN_IF_ERROR(CheckNotFailed());
    const std::string dir = root_ + "/" + t.name;
    auto existing = files::ReadManifest(dir);
    if (!existing.ok() && existing.status().code() != StatusCode::kNotFound) {
      return existing.status();
    }
    std::optional<Manifest> m;
    if (existing.ok()) m = std::move(existing).value();
    DBS_ASSIGN_OR_RETURN(TargetTable out, files::CheckFileTable(t, dir, m, fo_, so_));
    if (so_.plan_only || so_.mode == StreamMode::kCdc) return out;  // cdc: no load staging
    std::error_code ec;
    fs::create_directories(StageDir(t.name), ec);
    if (ec) return IoFailure("creating " + StageDir(t.name), ec);
    return out;
  }

  Result<size_t> Apply(const std::vector<BundleRef>& bundles) override {
    DBS_RETURN_IF_ERROR(CheckNotFailed());
    return files::ApplyByTable(
        bundles, [this](const std::vector<const BundleRef*>& refs) { return ApplyTable(refs); });
  }

  Status FinishStream(const std::vector<TableSchema>& tables) override {
    DBS_RETURN_IF_ERROR(CheckNotFailed());
    DBS_ASSIGN_OR_RETURN(auto lock, files::FileLock::Acquire(LockPath(".finish")));
    for (const TableSchema& t : tables) {
      Status s = FinishTable(t);
      if (!s.ok()) return s.WithContext("writing the files of " + t.name);
    }
    return Status::Ok();
  }

  Status ForgetStream() override {
    // Every finishing writer calls this: under the lock, the first removes the staging.
    DBS_ASSIGN_OR_RETURN(auto lock, files::FileLock::Acquire(LockPath(".finish")));
    std::error_code ec;
    fs::remove_all(RunDir(), ec);
    if (ec && ec != std::errc::no_such_file_or_directory) {
      return IoFailure("removing " + RunDir(), ec);
    }
    return Status::Ok();
  }

  Result<std::vector<std::string>> AbandonStream(bool keep_partial) override {
    DBS_ASSIGN_OR_RETURN(auto lock, files::FileLock::Acquire(LockPath(".finish")));
    std::error_code ec;
    // A run that committed a table already was swapped in (FinishStream got that far).
    if (fs::is_directory(RunDir(), ec)) {
      for (const auto& e : fs::directory_iterator(RunDir(), ec)) {
        auto m = files::ReadManifest(root_ + "/" + e.path().filename().string());
        if (m.ok() && m->stream == so_.stream) return std::vector<std::string>();
      }
    }
    fs::create_directories(root_ + "/.dbs/failed", ec);
    DBS_RETURN_IF_ERROR(files::WriteFileAtomic(FailedMarker(), "failed\n"));
    if (keep_partial && fs::exists(RunDir(), ec)) return std::vector<std::string>{RunDir()};
    fs::remove_all(RunDir(), ec);
    if (ec) return IoFailure("removing " + RunDir(), ec);
    return std::vector<std::string>();
  }

  // CDC: the tables' change logs (sinks/files/changes.h).
  Result<CdcCheckpoint> ReadCdcCheckpoint(int partition) override {
    return changes_.ReadCheckpoint(partition);
  }
  Result<size_t> ApplyChanges(const ChangeBatch& batch) override { return changes_.Apply(batch); }
  Status AddColumns(const TableSchema& new_schema, const std::vector<std::string>&) override {
    return changes_.AddColumns(new_schema);
  }
  Status FlushChanges(bool all) override { return changes_.Flush(all); }

 private:
  std::string RunDir() const { return root_ + "/.dbs/runs/" + IdForFile(so_.stream); }
  std::string StageDir(const std::string& table) const { return RunDir() + "/" + table; }
  std::string LockPath(const std::string& name) const {
    return root_ + "/.dbs/locks/" + name + ".lock";
  }
  std::string FailedMarker() const { return root_ + "/.dbs/failed/" + IdForFile(so_.stream); }

  Status CheckNotFailed() const {
    std::error_code ec;
    if (fs::exists(FailedMarker(), ec)) {
      return Status(StatusCode::kAborted, Retry::kFail,
                    "the run " + so_.stream + " failed and was abandoned in " + root_);
    }
    return Status::Ok();
  }

  Result<Duck*> Db() {
    if (!duck_) {
      // One thread and 128 MB (DuckDB spills beyond it): measured on 2M rows to Parquet, 512 MB
      // and two threads took the process tree to 848 MB for the same time as this (368 MB).
      DBS_ASSIGN_OR_RETURN(duck_, Duck::Open(1, "128MB"));
    }
    return duck_.get();
  }

  // Adds the bundle ids of committed segments not read yet (another writer's, too).
  Status RefreshApplied(const std::string& table) {
    std::set<std::string>& seen = seen_files_[table];
    std::set<std::string>& ids = applied_[table];
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(StageDir(table), ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() < 4 || name.substr(name.size() - 4) != ".ids" || seen.count(name)) continue;
      DBS_ASSIGN_OR_RETURN(std::string text, files::ReadWholeFile(e.path().string()));
      json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object() || !j.contains("ids") || !j["ids"].is_array()) {
        return Status::Corruption(e.path().string() + " is not a segment record");
      }
      for (const json& id : j["ids"]) {
        if (id.is_string()) ids.insert(id.get<std::string>());
      }
      seen.insert(name);
    }
    if (ec) return IoFailure("listing " + StageDir(table), ec);
    return Status::Ok();
  }

  Result<size_t> ApplyTable(const std::vector<const BundleRef*>& refs) {
    const TableSchema& t = *refs.front()->table;
    DBS_RETURN_IF_ERROR(files::CheckPathComponent(t.name, "table name"));
    DBS_ASSIGN_OR_RETURN(auto lock, files::FileLock::Acquire(LockPath(t.name)));
    std::error_code ec;
    fs::create_directories(StageDir(t.name), ec);
    if (ec) return IoFailure("creating " + StageDir(t.name), ec);
    DBS_RETURN_IF_ERROR(RefreshApplied(t.name));
    std::set<std::string>& applied = applied_[t.name];
    std::vector<const Bundle*> fresh;
    json ids = json::array();
    std::set<std::string> in_batch;
    std::string first;
    uint64_t rows = 0;
    for (const BundleRef* r : refs) {
      if (applied.count(r->id) || !in_batch.insert(r->id).second) continue;
      if (first.empty()) first = r->id;
      fresh.push_back(r->bundle);
      ids.push_back(r->id);
      rows += r->bundle->rows();
    }
    if (fresh.empty()) return size_t{0};
    DBS_ASSIGN_OR_RETURN(Duck * duck, Db());
    DBS_RETURN_IF_ERROR(files::CreateStageTable(duck, "stage", t));
    Status appended = files::AppendBundles(duck, "stage", t, fresh, so_.zero_date);
    if (!appended.ok()) {
      (void)duck->Exec("DROP TABLE IF EXISTS stage");
      return appended;
    }
    const std::string base = StageDir(t.name) + "/seg-" + IdForFile(first);
    const std::string tmp = StageDir(t.name) + "/.seg-" + IdForFile(first) + ".tmp";
    Status copied =
        duck->Exec("COPY stage TO " + SqlString(tmp) + " (FORMAT parquet, COMPRESSION zstd)");
    (void)duck->Exec("DROP TABLE IF EXISTS stage");
    if (!copied.ok()) return copied.WithContext("staging " + t.name);
    if (std::rename(tmp.c_str(), (base + ".parquet").c_str()) != 0) {
      return Status::IoError("renaming " + tmp + ": " + std::strerror(errno));
    }
    DBS_RETURN_IF_ERROR(files::SyncPath(base + ".parquet"));
    // The commit point of the segment: its bundle ids.
    const json record = {{"ids", ids}, {"rows", rows}};
    DBS_RETURN_IF_ERROR(files::WriteFileAtomic(base + ".ids", record.dump()));
    for (const json& id : ids) applied.insert(id.get<std::string>());
    seen_files_[t.name].insert("seg-" + IdForFile(first) + ".ids");
    return fresh.size();
  }

  // The committed segments of a table, in bundle order.
  Result<std::vector<Segment>> Segments(const std::string& table) {
    std::vector<Segment> out;
    std::error_code ec;
    if (!fs::is_directory(StageDir(table), ec)) return out;
    for (const auto& e : fs::directory_iterator(StageDir(table), ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("seg-", 0) != 0 || name.size() < 8 || name.substr(name.size() - 4) != ".ids") {
        continue;
      }
      DBS_ASSIGN_OR_RETURN(std::string text, files::ReadWholeFile(e.path().string()));
      json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object() || !j.contains("rows")) {
        return Status::Corruption(e.path().string() + " is not a segment record");
      }
      Segment s;
      const std::string stem = name.substr(4, name.size() - 8);
      s.key = IdKey(stem);
      s.data = StageDir(table) + "/seg-" + stem + ".parquet";
      s.rows = j.value("rows", uint64_t{0});
      out.push_back(std::move(s));
    }
    if (ec) return IoFailure("listing " + StageDir(table), ec);
    std::sort(out.begin(), out.end(),
              [](const Segment& a, const Segment& b) { return a.key < b.key; });
    return out;
  }

  std::string ExportList(const TableSchema& t) const { return files::ExportList(t, fo_); }
  std::string CopyOptions() const { return files::CopyOptions(fo_); }

  Status FinishTable(const TableSchema& t) {
    DBS_RETURN_IF_ERROR(files::CheckPathComponent(t.name, "table name"));
    const std::string dir = root_ + "/" + t.name;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return IoFailure("creating " + dir, ec);
    std::optional<Manifest> existing;
    {
      auto m = files::ReadManifest(dir);
      if (m.ok()) {
        if (m->stream == so_.stream) return Status::Ok();  // finished by this run already
        existing = std::move(m).value();
      } else if (m.status().code() != StatusCode::kNotFound) {
        return m.status();
      }
    }
    const bool replace = so_.write_mode == WriteMode::kTruncateAndLoad ||
                         so_.schema_policy == SchemaPolicy::kDropAndRecreate;
    std::set<std::string> listed;
    int64_t next = 0;
    if (existing) {
      for (const ManifestFile& f : existing->files) {
        listed.insert(f.name);
        next = std::max(next, PartNumber(f.name) + 1);
      }
    }
    // What a finish that died half-way left: parts no manifest lists, temporary files.
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if ((PartNumber(name) >= 0 && !listed.count(name)) || name.rfind(".part-", 0) == 0) {
        fs::remove(e.path(), ec);
      }
    }
    DBS_ASSIGN_OR_RETURN(std::vector<Segment> segs, Segments(t.name));
    uint64_t total = 0;
    for (const Segment& s : segs) total += s.rows;
    DBS_ASSIGN_OR_RETURN(Duck * duck, Db());
    const uint64_t per = fo_.rows_per_file;
    const uint64_t nfiles = total == 0 ? 1 : (total + per - 1) / per;
    Manifest m;
    m.stream = so_.stream;
    m.format = fo_.format;
    m.compression = fo_.compression;
    m.table = t;
    for (const Column& c : t.columns) m.stored.push_back(files::StoredFor(c, fo_.format));
    if (existing && !replace) {
      m.files = existing->files;
      m.rows = existing->rows;
    }
    // Every segment, whole; each part reads the rows of its range (PartFrom skips the others).
    std::vector<files::PartSource> sources;
    for (const Segment& s : segs) sources.push_back({s.data, {{0, s.rows}}});
    for (uint64_t i = 0; i < nfiles; ++i) {
      const uint64_t lo = i * per, hi = std::min(total, lo + per);
      std::string from = files::PartFrom(sources, 0, lo, hi);
      const bool empty = from.empty();
      if (empty) {
        DBS_RETURN_IF_ERROR(files::CreateStageTable(duck, "empty", t));
        from = "empty";
      }
      const std::string name = files::PartName(next++, fo_);
      const std::string tmp = dir + "/." + name + ".tmp";
      const std::string sql = "COPY (SELECT " + ExportList(t) + " FROM " + from + ") TO " +
                              SqlString(tmp) + " " + CopyOptions();
      Status copied = duck->Exec(sql);
      if (empty) (void)duck->Exec("DROP TABLE IF EXISTS empty");
      if (!copied.ok()) return copied;
      DBS_RETURN_IF_ERROR(files::SyncPath(tmp));
      ManifestFile f;
      f.name = name;
      f.rows = hi - lo;
      DBS_ASSIGN_OR_RETURN(f.sha256, files::Sha256File(tmp, &f.bytes));
      if (std::rename(tmp.c_str(), (dir + "/" + name).c_str()) != 0) {
        return Status::IoError("renaming " + tmp + ": " + std::strerror(errno));
      }
      m.rows += f.rows;
      m.files.push_back(std::move(f));
    }
    DBS_RETURN_IF_ERROR(files::SyncPath(dir));
    DBS_RETURN_IF_ERROR(
        files::WriteFileAtomic(dir + "/" + files::kManifestName, files::ToJson(m).dump(2) + "\n"));
    if (existing && replace) {
      for (const ManifestFile& f : existing->files) fs::remove(dir + "/" + f.name, ec);
    }
    Log(LogLevel::kInfo, "writer", "files committed",
        {F("table", dir), F("rows", m.rows), F("files", m.files.size())});
    return Status::Ok();
  }

  const std::string root_;
  const FileOptions fo_;
  const SinkOptions so_;
  std::unique_ptr<Duck> duck_;
  files::ChangeFiles changes_;
  std::map<std::string, std::set<std::string>> applied_;     // bundle ids, per table
  std::map<std::string, std::set<std::string>> seen_files_;  // .ids files read, per table
};

}  // namespace

Result<std::unique_ptr<Sink>> OpenFileSink(const ConnectionConfig& config,
                                           const SinkOptions& options) {
  if (config.engine != Engine::kFile) return Status::InvalidArgument("not a file:// target");
  if (config.s3) return OpenS3FileSink(config, options);
  DBS_ASSIGN_OR_RETURN(FileOptions fo, files::FileOptionsOf(config));
  std::error_code ec;
  fs::create_directories(config.database, ec);
  if (ec || !fs::is_directory(config.database)) {
    return Status::IoError("the file target " + config.database +
                           " is not a folder that can be created: " + ec.message());
  }
  return std::unique_ptr<Sink>(new FileSink(config.database, std::move(fo), options));
}

}  // namespace dbs

#include "sinks/files/file_sink.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/logging.h"
#include "sinks/files/changes.h"
#include "sinks/files/naming.h"
#include "sinks/files/part_stager.h"
#include "sinks/files/s3_sink.h"
#include "sinks/files/stage.h"
#include "sources/files/duck.h"
#include "sources/files/file_common.h"

namespace dbs {
namespace {

namespace fs = std::filesystem;
using files::Duck;
using files::FileOptions;
using files::IdForFile;
using files::IdKey;
using files::Manifest;
using files::ManifestFile;
using files::PartNumber;
using nlohmann::json;

Status IoFailure(const std::string& what, const std::error_code& ec) {
  return Status::IoError(what + ": " + ec.message());
}

// A committed segment: one file in the table's final format, named after its first bundle.
struct Segment {
  std::vector<uint64_t> key;
  std::string data;  // path of the file
  uint64_t rows = 0;
  uint64_t bytes = 0;
  std::string sha256;
};

// A token unique to one sink instance (names its temporary files).
std::string InstanceToken() {
  std::random_device rd;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

class FileSink : public Sink, private files::PartTarget {
 public:
  FileSink(std::string root, FileOptions fo, SinkOptions so)
      : root_(std::move(root)),
        fo_(std::move(fo)),
        so_(std::move(so)),
        changes_(files::LocalChangeStore(root_), fo_, so_, [this] { return Db(); }),
        token_(InstanceToken()),
        stager_(this, fo_, so_.zero_date) {}

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
    Status ok = CheckNotFailed();
    if (!ok.ok()) {
      stager_.Refuse(bundles);
      return ok;
    }
    return files::ApplyByTable(
        bundles, [this](const std::vector<const BundleRef*>& refs) { return stager_.Apply(refs); });
  }

  bool DefersCommit() const override { return true; }

  Status CommitStaged() override { return stager_.CommitAll(); }
  Settled TakeSettled() override { return stager_.TakeSettled(); }
  void DropStaged() override { stager_.DropAll(); }

  Status FinishStream(const std::vector<TableSchema>& tables) override {
    DBS_RETURN_IF_ERROR(CheckNotFailed());
    DBS_RETURN_IF_ERROR(CommitStaged());
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
    DropStaged();
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
      // For change files and the empty file of an empty table (load parts have a DuckDB each,
      // part_stream.h): one thread and 128 MB, spilling beyond it.
      DBS_ASSIGN_OR_RETURN(duck_, Duck::Open(1, "128MB"));
    }
    return duck_.get();
  }

  // Adds the bundle ids of committed segments not read yet (another writer's, too).
  Status RefreshApplied(const std::string& table, std::set<std::string>* applied) {
    std::set<std::string>& seen = seen_files_[table];
    std::set<std::string>& ids = *applied;
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

  // PartTarget (part_stager.h) of a local folder: the committed segments are read under the
  // table's lock, and a part's file is written in the staging folder.
  Status Refresh(const std::string& table, std::set<std::string>* applied) override {
    DBS_RETURN_IF_ERROR(files::CheckPathComponent(table, "table name"));
    DBS_ASSIGN_OR_RETURN(auto lock, files::FileLock::Acquire(LockPath(table)));
    std::error_code ec;
    fs::create_directories(StageDir(table), ec);
    if (ec) return IoFailure("creating " + StageDir(table), ec);
    return RefreshApplied(table, applied);
  }
  std::string TempPath(const std::string& table, const std::string& first) override {
    return StageDir(table) + "/.seg-" + IdForFile(first) + "-" + token_ +
           files::DataExtension(fo_) + ".tmp";
  }

  // Commits a completed part as a segment: the file is synced, renamed to seg-<first id> and
  // its `.ids` record (the commit point) written, under the table's lock. False (nothing
  // written) when another writer committed one of its bundles while it was open.
  Result<bool> CommitPart(const std::string& table, files::OpenPart* part, uint64_t rows,
                          std::set<std::string>* applied) override {
    const std::string tmp = part->stream->path();
    DBS_RETURN_IF_ERROR(files::SyncPath(tmp));
    uint64_t bytes = 0;
    DBS_ASSIGN_OR_RETURN(std::string sha, files::Sha256File(tmp, &bytes));
    DBS_ASSIGN_OR_RETURN(auto lock, files::FileLock::Acquire(LockPath(table)));
    DBS_RETURN_IF_ERROR(RefreshApplied(table, applied));
    for (const std::string& id : part->ids) {
      if (applied->count(id)) return false;
    }
    const std::string stem = "seg-" + IdForFile(part->first);
    const std::string data = stem + files::DataExtension(fo_);
    if (std::rename(tmp.c_str(), (StageDir(table) + "/" + data).c_str()) != 0) {
      return Status::IoError("renaming " + tmp + ": " + std::strerror(errno));
    }
    part->stream.reset();
    DBS_RETURN_IF_ERROR(files::SyncPath(StageDir(table)));
    const json record = {
        {"ids", part->ids}, {"rows", rows}, {"file", data}, {"bytes", bytes}, {"sha256", sha}};
    DBS_RETURN_IF_ERROR(
        files::WriteFileAtomic(StageDir(table) + "/" + stem + ".ids", record.dump()));
    seen_files_[table].insert(stem + ".ids");
    return true;
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
      if (!j.is_object() || !j.contains("rows") || !j.contains("file") || !j["file"].is_string()) {
        return Status::Corruption(e.path().string() + " is not a segment record");
      }
      Segment s;
      s.key = IdKey(name.substr(4, name.size() - 8));
      s.data = StageDir(table) + "/" + j["file"].get<std::string>();
      s.rows = j.value("rows", uint64_t{0});
      s.bytes = j.value("bytes", uint64_t{0});
      s.sha256 = j.value("sha256", std::string());
      out.push_back(std::move(s));
    }
    if (ec) return IoFailure("listing " + StageDir(table), ec);
    std::sort(out.begin(), out.end(),
              [](const Segment& a, const Segment& b) { return a.key < b.key; });
    return out;
  }

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
    // Each segment is a complete file already: it becomes a part file by a hard link (the
    // staging keeps its name until the run is forgotten, so a finish that dies half-way can
    // start over), or by a copy under a temporary name where the file system has no links.
    for (const Segment& seg : segs) {
      ManifestFile f;
      f.name = files::PartName(next++, fo_);
      f.rows = seg.rows;
      f.bytes = seg.bytes;
      f.sha256 = seg.sha256;
      const std::string path = dir + "/" + f.name;
      fs::create_hard_link(seg.data, path, ec);
      if (ec) {
        const std::string tmp = dir + "/." + f.name + ".tmp";
        fs::copy_file(seg.data, tmp, fs::copy_options::overwrite_existing, ec);
        if (ec) return IoFailure("copying " + seg.data + " to " + tmp, ec);
        DBS_RETURN_IF_ERROR(files::SyncPath(tmp));
        if (std::rename(tmp.c_str(), path.c_str()) != 0) {
          return Status::IoError("renaming " + tmp + ": " + std::strerror(errno));
        }
      }
      m.rows += f.rows;
      m.files.push_back(std::move(f));
    }
    if (segs.empty()) {  // an empty table still gets one file, with the columns
      DBS_ASSIGN_OR_RETURN(Duck * duck, Db());
      ManifestFile f;
      f.name = files::PartName(next++, fo_);
      const std::string tmp = dir + "/." + f.name + ".tmp";
      DBS_RETURN_IF_ERROR(files::WriteEmptyFile(duck, t, fo_, tmp));
      DBS_RETURN_IF_ERROR(files::SyncPath(tmp));
      DBS_ASSIGN_OR_RETURN(f.sha256, files::Sha256File(tmp, &f.bytes));
      if (std::rename(tmp.c_str(), (dir + "/" + f.name).c_str()) != 0) {
        return Status::IoError("renaming " + tmp + ": " + std::strerror(errno));
      }
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
  std::map<std::string, std::set<std::string>> seen_files_;  // .ids files read, per table
  const std::string token_;                                  // names this sink's temp files
  files::PartStager stager_;  // the open parts (last: destroyed first, removing their files)
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

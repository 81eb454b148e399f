// The file target on S3 (s3:// connections): see s3_sink.h for the contract.
#include "sinks/files/s3_sink.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "core/logging.h"
#include "sinks/files/changes.h"
#include "sinks/files/naming.h"
#include "sinks/files/part_stager.h"
#include "sinks/files/stage.h"
#include "sources/files/duck.h"
#include "sources/files/remote.h"
#include "sources/files/replay.h"

namespace dbs {
namespace {

using files::Duck;
using files::FileOptions;
using files::Manifest;
using files::ManifestFile;
using files::SqlString;
using nlohmann::json;

// A committed segment of the staging area: a file in the table's final format.
struct Segment {
  std::string name;  // "seg-<first id>-<writer>": the stem of its .ids record
  std::string file;  // its data object, in the table's staging folder
  std::vector<uint64_t> key;
  std::vector<std::string> ids;  // bundle ids, in the segment's row order
  std::vector<uint64_t> counts;  // rows per bundle
  uint64_t rows = 0;
  uint64_t bytes = 0;
  std::string sha256;
  // Rows kept ([first, second) ranges of its row numbers), after dropping bundles that an
  // earlier segment holds too.
  std::vector<std::pair<uint64_t, uint64_t>> kept;
  uint64_t kept_rows = 0;
};

std::string Nonce() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(gen()));
  return buf;
}

class S3FileSink : public Sink, private files::PartTarget {
 public:
  S3FileSink(std::unique_ptr<ObjectStore> store, FileOptions fo, SinkOptions so)
      : store_(std::move(store)),
        fo_(std::move(fo)),
        so_(std::move(so)),
        nonce_(Nonce()),
        stager_(this, fo_, so_.zero_date) {
    if (so_.commit_log) {
      changes_ = std::make_unique<files::ChangeFiles>(
          files::BucketChangeStore(store_.get(), so_.commit_log), fo_, so_,
          [this] { return Db(); });
    }
  }

  // Changes commit through the run's commit log: a CDC run without one fails before it
  // writes anything.
  Status PrepareRun() override {
    if (so_.mode != StreamMode::kLoad && !so_.plan_only && !changes_) {
      return files::FileCdcNeedsWriters();
    }
    return Status::Ok();
  }

  Result<TableDdlPlan> PlanTable(const TableSchema& t) override {
    DBS_ASSIGN_OR_RETURN(auto existing, Existing(t.name));
    return files::PlanFileTable(t, Where(t.name), existing.has_value(), fo_, so_);
  }

  Result<TargetTable> PrepareTable(const TableSchema& t) override {
    DBS_RETURN_IF_ERROR(files::CheckPathComponent(t.name, "table name"));
    DBS_RETURN_IF_ERROR(CheckNotFailed());
    DBS_ASSIGN_OR_RETURN(auto existing, Existing(t.name));
    return files::CheckFileTable(t, Where(t.name), existing, fo_, so_);
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
    for (const TableSchema& t : tables) {
      Status s = FinishTable(t);
      if (s.ok()) continue;
      // Another writer of the run may have finished the table and removed the staging while
      // this one read it: its manifest then names the run.
      auto m = files::ReadManifestFrom(store_.get(), t.name);
      if (m.ok() && m->stream == so_.stream) continue;
      return s.WithContext("writing the files of " + t.name);
    }
    return Status::Ok();
  }

  Status ForgetStream() override { return RemoveStaging(); }

  Result<std::vector<std::string>> AbandonStream(bool keep_partial) override {
    DropStaged();
    DBS_ASSIGN_OR_RETURN(auto staged, store_->List(RunDir(), false));
    for (const ObjectInfo& o : staged) {
      if (!o.is_prefix) continue;
      const std::string table =
          o.key.substr(RunDir().size() + 1, o.key.size() - RunDir().size() - 2);
      auto m = files::ReadManifestFrom(store_.get(), table);
      if (m.ok() && m->stream == so_.stream) return std::vector<std::string>();  // committed
    }
    DBS_ASSIGN_OR_RETURN(auto w, store_->Create(FailedMarker()));
    DBS_RETURN_IF_ERROR(w->Write("failed\n"));
    DBS_RETURN_IF_ERROR(w->Commit());
    if (keep_partial && !staged.empty()) {
      return std::vector<std::string>{store_->Describe() + " " + RunDir() + "/"};
    }
    DBS_RETURN_IF_ERROR(RemoveStaging());
    return std::vector<std::string>();
  }

  Result<CdcCheckpoint> ReadCdcCheckpoint(int partition) override {
    if (!changes_) return files::FileCdcNeedsWriters();
    return changes_->ReadCheckpoint(partition);
  }
  Result<size_t> ApplyChanges(const ChangeBatch& batch) override {
    if (!changes_) return files::FileCdcNeedsWriters();
    return changes_->Apply(batch);
  }
  Status AddColumns(const TableSchema& new_schema, const std::vector<std::string>&) override {
    if (!changes_) return files::FileCdcNeedsWriters();
    return changes_->AddColumns(new_schema);
  }
  Status FlushChanges(bool all) override {
    if (!changes_) return Status::Ok();
    return changes_->Flush(all);
  }

 private:
  std::string Where(const std::string& table) const {
    return store_->Describe() + " " + table + "/";
  }
  // The table folder's manifest; nullopt when it has none.
  Result<std::optional<Manifest>> Existing(const std::string& table) {
    auto m = files::ReadManifestFrom(store_.get(), table);
    if (m.ok()) return std::optional<Manifest>(std::move(m).value());
    if (m.status().code() == StatusCode::kNotFound) return std::optional<Manifest>();
    return m.status();
  }

  std::string RunDir() const { return ".dbs/runs/" + files::IdForFile(so_.stream); }
  std::string StageDir(const std::string& table) const { return RunDir() + "/" + table; }
  std::string FailedMarker() const { return ".dbs/failed/" + files::IdForFile(so_.stream); }

  Status CheckNotFailed() {
    auto st = store_->Stat(FailedMarker());
    if (st.ok()) {
      return Status(StatusCode::kAborted, Retry::kFail,
                    "the run " + so_.stream + " failed and was abandoned in " + store_->Describe());
    }
    if (st.status().code() == StatusCode::kNotFound) return Status::Ok();
    return st.status();
  }

  Status RemoveStaging() {
    DBS_ASSIGN_OR_RETURN(auto objects, store_->List(RunDir(), true));
    for (const ObjectInfo& o : objects) {
      if (!o.is_prefix) DBS_RETURN_IF_ERROR(store_->Delete(o.key));
    }
    return Status::Ok();
  }

  Result<Duck*> Db() {
    if (!duck_) {
      // For a segment written again without shared bundles, the empty file of an empty table
      // and change files. One thread: the files a finish writes are the same bytes whichever
      // writer writes them; 128 MB, spilling beyond it.
      DBS_ASSIGN_OR_RETURN(duck_, Duck::Open(1, "128MB"));
    }
    return duck_.get();
  }

  Result<files::SpillDir*> Spill() {
    if (!spill_) {
      DBS_ASSIGN_OR_RETURN(spill_, files::SpillDir::Create("s3-target"));
    }
    return spill_.get();
  }

  // The committed segments of a table (their .ids records), in bundle order; `skip` names
  // records already read (not returned again), and gets the new ones.
  Result<std::vector<Segment>> Segments(const std::string& table, std::set<std::string>* skip) {
    std::vector<Segment> out;
    DBS_ASSIGN_OR_RETURN(auto objects, store_->List(StageDir(table), false));
    for (const ObjectInfo& o : objects) {
      const std::string name = o.key.substr(o.key.rfind('/') + 1);
      if (o.is_prefix || name.rfind("seg-", 0) != 0 || name.size() < 9 ||
          name.substr(name.size() - 4) != ".ids") {
        continue;
      }
      if (skip != nullptr && !skip->insert(name).second) continue;
      std::string text;
      DBS_RETURN_IF_ERROR(store_->ReadRange(o.key, 0, 16ull << 20, &text));
      json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object() || !j.contains("ids") || !j["ids"].is_array() || !j.contains("counts") ||
          !j["counts"].is_array() || j["ids"].size() != j["counts"].size()) {
        return Status::Corruption(store_->Describe() + " " + o.key + " is not a segment record");
      }
      Segment s;
      s.name = name.substr(0, name.size() - 4);
      s.file = j.value("file", std::string());
      s.bytes = j.value("bytes", uint64_t{0});
      s.sha256 = j.value("sha256", std::string());
      if (s.file.empty() || s.file.find('/') != std::string::npos) {
        return Status::Corruption(store_->Describe() + " " + o.key + " is not a segment record");
      }
      for (size_t i = 0; i < j["ids"].size(); ++i) {
        if (!j["ids"][i].is_string() || !j["counts"][i].is_number_unsigned()) {
          return Status::Corruption(store_->Describe() + " " + o.key + " is not a segment record");
        }
        s.ids.push_back(j["ids"][i].get<std::string>());
        s.counts.push_back(j["counts"][i].get<uint64_t>());
        s.rows += s.counts.back();
      }
      if (s.ids.empty()) continue;
      s.key = files::IdKey(s.ids.front());
      out.push_back(std::move(s));
    }
    std::sort(out.begin(), out.end(), [](const Segment& a, const Segment& b) {
      return a.key != b.key ? a.key < b.key : a.name < b.name;
    });
    return out;
  }

  // PartTarget (part_stager.h) of a bucket: the committed segments are read from their .ids
  // records, and a part's file is written in the local spill folder.
  Status Refresh(const std::string& table, std::set<std::string>* applied) override {
    DBS_RETURN_IF_ERROR(files::CheckPathComponent(table, "table name"));
    DBS_RETURN_IF_ERROR(Spill().status());
    DBS_ASSIGN_OR_RETURN(auto fresh, Segments(table, &seen_[table]));
    for (const Segment& s : fresh) applied->insert(s.ids.begin(), s.ids.end());
    return Status::Ok();
  }
  std::string TempPath(const std::string& table, const std::string& first) override {
    return spill_->path() + "/" + files::IdForFile(table) + "-" + files::IdForFile(first) +
           files::DataExtension(fo_) + ".tmp";
  }

  // Commits a completed part as a segment: the file is uploaded as seg-<first id>-<writer>,
  // then its `.ids` record (the commit point), which lists its bundles and their row counts.
  // False (nothing written) when a committed segment already holds one of its bundles. S3
  // cannot lock: a writer that commits the same bundle at the same moment is not seen, and
  // the finish keeps the first copy (KeepFirstCopies).
  Result<bool> CommitPart(const std::string& table, files::OpenPart* part, uint64_t rows,
                          std::set<std::string>* applied) override {
    const std::string tmp = part->stream->path();
    uint64_t bytes = 0;
    DBS_ASSIGN_OR_RETURN(std::string sha, files::Sha256File(tmp, &bytes));
    DBS_RETURN_IF_ERROR(Refresh(table, applied));
    for (const std::string& id : part->ids) {
      if (applied->count(id)) return false;
    }
    const std::string stem = "seg-" + files::IdForFile(part->first) + "-" + nonce_;
    const std::string data = stem + files::DataExtension(fo_);
    DBS_RETURN_IF_ERROR(files::Upload(store_.get(), tmp, StageDir(table) + "/" + data));
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    part->stream.reset();
    const json record = {{"ids", part->ids}, {"counts", part->counts}, {"rows", rows},
                         {"file", data},     {"bytes", bytes},         {"sha256", sha}};
    DBS_ASSIGN_OR_RETURN(auto w, store_->Create(StageDir(table) + "/" + stem + ".ids"));
    DBS_RETURN_IF_ERROR(w->Write(record.dump()));
    DBS_RETURN_IF_ERROR(w->Commit());
    seen_[table].insert(stem + ".ids");
    return true;
  }

  // Uploads the part file that `written` says was written at the local `tmp` as `key`, with its
  // size and checksum in *f, then removes `tmp` (also when writing or uploading failed).
  Status UploadPart(Status written, const std::string& tmp, const std::string& key,
                    ManifestFile* f) {
    if (written.ok()) {
      auto sha = files::Sha256File(tmp, &f->bytes);
      written = !sha.ok() ? sha.status() : files::Upload(store_.get(), tmp, key);
      if (sha.ok()) f->sha256 = *sha;
    }
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    return written;
  }

  // The kept rows of a segment that shares bundles with an earlier one, written again by
  // DuckDB, in the same format, into the local file `out`. Rows are numbered in the order
  // the file holds them (one DuckDB thread reads it in order).
  Status WriteKeptRows(const Manifest& m, const Segment& s, const std::string& segment_path,
                       const std::string& out) {
    std::string where;
    for (const auto& [lo, hi] : s.kept) {
      where += (where.empty() ? "" : " OR ") + std::string("(_dbs_row >= ") + std::to_string(lo) +
               " AND _dbs_row < " + std::to_string(hi) + ")";
    }
    DBS_ASSIGN_OR_RETURN(Duck * duck, Db());
    return duck->Exec(
        "COPY (SELECT * EXCLUDE (_dbs_row) FROM (SELECT *, row_number() OVER () - "
        "1 AS _dbs_row FROM " +
        files::ManifestReader(m, segment_path, false) + ") WHERE " + where + ") TO " +
        SqlString(out) + " " + files::CopyOptions(fo_));
  }

  // Drops, from each segment, the bundles an earlier segment (in bundle order) holds.
  static void KeepFirstCopies(std::vector<Segment>* segs) {
    std::set<std::string> seen;
    for (Segment& s : *segs) {
      uint64_t row = 0;
      for (size_t i = 0; i < s.ids.size(); ++i) {
        const uint64_t end = row + s.counts[i];
        if (seen.insert(s.ids[i]).second && end > row) {
          if (!s.kept.empty() && s.kept.back().second == row) {
            s.kept.back().second = end;
          } else {
            s.kept.emplace_back(row, end);
          }
          s.kept_rows += end - row;
        }
        row = end;
      }
    }
  }

  Status FinishTable(const TableSchema& t) {
    DBS_RETURN_IF_ERROR(files::CheckPathComponent(t.name, "table name"));
    DBS_ASSIGN_OR_RETURN(std::optional<Manifest> existing, Existing(t.name));
    if (existing && existing->stream == so_.stream) return Status::Ok();  // finished already
    const bool replace = so_.write_mode == WriteMode::kTruncateAndLoad ||
                         so_.schema_policy == SchemaPolicy::kDropAndRecreate;
    int64_t next = 0;
    if (existing) {
      for (const ManifestFile& f : existing->files) {
        next = std::max(next, files::PartNumber(f.name) + 1);
      }
    }
    DBS_ASSIGN_OR_RETURN(std::vector<Segment> segs, Segments(t.name, nullptr));
    KeepFirstCopies(&segs);
    segs.erase(
        std::remove_if(segs.begin(), segs.end(), [](const Segment& s) { return s.kept_rows == 0; }),
        segs.end());
    DBS_ASSIGN_OR_RETURN(files::SpillDir * spill, Spill());
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
    // Each segment is a complete file already: the server copies it as a part file. A segment
    // that shares bundles with an earlier one (two writers committed them at once) is written
    // again without them. Writers that finish at the same time write the same bytes under the
    // same names.
    for (const Segment& seg : segs) {
      ManifestFile f;
      f.name = files::PartName(next++, fo_);
      f.rows = seg.kept_rows;
      const std::string key = t.name + "/" + f.name;
      if (seg.kept_rows == seg.rows) {
        DBS_RETURN_IF_ERROR(store_->Copy(StageDir(t.name) + "/" + seg.file, key));
        f.bytes = seg.bytes;
        f.sha256 = seg.sha256;
      } else {
        DBS_ASSIGN_OR_RETURN(
            auto copy, files::LocalCopy::Fetch(store_.get(), StageDir(t.name) + "/" + seg.file,
                                               spill->path()));
        const std::string tmp = spill->path() + "/" + f.name;
        DBS_RETURN_IF_ERROR(UploadPart(WriteKeptRows(m, seg, copy->path(), tmp), tmp, key, &f));
      }
      m.rows += f.rows;
      m.files.push_back(std::move(f));
    }
    if (segs.empty()) {  // an empty table still gets one file, with the columns
      DBS_ASSIGN_OR_RETURN(Duck * duck, Db());
      ManifestFile f;
      f.name = files::PartName(next++, fo_);
      const std::string tmp = spill->path() + "/" + f.name;
      DBS_RETURN_IF_ERROR(
          UploadPart(files::WriteEmptyFile(duck, t, fo_, tmp), tmp, t.name + "/" + f.name, &f));
      m.files.push_back(std::move(f));
    }
    // The commit point: one PUT of the manifest.
    {
      DBS_ASSIGN_OR_RETURN(auto w, store_->Create(t.name + "/" + files::kManifestName));
      DBS_RETURN_IF_ERROR(w->Write(files::ToJson(m).dump(2) + "\n"));
      DBS_RETURN_IF_ERROR(w->Commit());
    }
    // Old files the new manifest replaced, and parts of a finish that died half-way (listed
    // by no manifest); never a part of the new manifest.
    std::set<std::string> keep;
    for (const ManifestFile& f : m.files) keep.insert(f.name);
    DBS_ASSIGN_OR_RETURN(auto objects, store_->List(t.name, false));
    for (const ObjectInfo& o : objects) {
      const std::string n = o.key.substr(o.key.rfind('/') + 1);
      if (o.is_prefix || files::PartNumber(n) < 0 || keep.count(n)) continue;
      DBS_RETURN_IF_ERROR(store_->Delete(o.key));
    }
    Log(LogLevel::kInfo, "writer", "files committed",
        {F("table", store_->Describe() + " " + t.name + "/"), F("rows", m.rows),
         F("files", m.files.size())});
    return Status::Ok();
  }

  const std::unique_ptr<ObjectStore> store_;
  const FileOptions fo_;
  const SinkOptions so_;
  const std::string nonce_;  // this writer's part of segment names
  std::unique_ptr<Duck> duck_;
  std::unique_ptr<files::SpillDir> spill_;
  std::map<std::string, std::set<std::string>> seen_;  // .ids records read, per table
  std::unique_ptr<files::ChangeFiles> changes_;        // CDC runs (with a commit log)
  files::PartStager stager_;  // the open parts (last: destroyed first, removing their files)
};

}  // namespace

Result<std::unique_ptr<Sink>> OpenS3FileSink(const ConnectionConfig& config,
                                             const SinkOptions& options) {
  DBS_ASSIGN_OR_RETURN(FileOptions fo, files::FileOptionsOf(config));
  DBS_ASSIGN_OR_RETURN(auto store, files::OpenS3Of(config));
  return std::unique_ptr<Sink>(new S3FileSink(std::move(store), std::move(fo), options));
}

}  // namespace dbs

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
#include "sinks/files/stage.h"
#include "sources/files/duck.h"
#include "sources/files/remote.h"

namespace dbs {
namespace {

using files::Duck;
using files::FileOptions;
using files::Manifest;
using files::ManifestFile;
using files::SqlString;
using nlohmann::json;

// A committed segment of the staging area.
struct Segment {
  std::string name;  // "seg-<first id>-<writer>" (the stem of its .parquet and .ids objects)
  std::vector<uint64_t> key;
  std::vector<std::string> ids;  // bundle ids, in the segment's row order
  std::vector<uint64_t> counts;  // rows per bundle
  // Rows kept (file_row_number ranges [first, second)), after dropping bundles that an
  // earlier segment holds too.
  std::vector<std::pair<uint64_t, uint64_t>> kept;
  uint64_t kept_rows = 0;
  uint64_t rows = 0;
};

std::string Nonce() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(gen()));
  return buf;
}

class S3FileSink : public Sink {
 public:
  S3FileSink(std::unique_ptr<ObjectStore> store, FileOptions fo, SinkOptions so)
      : store_(std::move(store)), fo_(std::move(fo)), so_(std::move(so)), nonce_(Nonce()) {
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
    DBS_RETURN_IF_ERROR(CheckNotFailed());
    return files::ApplyByTable(
        bundles, [this](const std::vector<const BundleRef*>& refs) { return ApplyTable(refs); });
  }

  Status FinishStream(const std::vector<TableSchema>& tables) override {
    DBS_RETURN_IF_ERROR(CheckNotFailed());
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
      // One thread: the files a finish writes are the same bytes whichever writer writes them.
      // 128 MB, as the local target: a part is written by a streaming filter (PartFrom).
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

  Result<size_t> ApplyTable(const std::vector<const BundleRef*>& refs) {
    const TableSchema& t = *refs.front()->table;
    DBS_RETURN_IF_ERROR(files::CheckPathComponent(t.name, "table name"));
    // Bundles another segment committed already (a redelivery) are skipped. Two writers that
    // stage one bundle at the same time both keep it; the finish keeps its first copy only.
    DBS_ASSIGN_OR_RETURN(auto fresh_segments, Segments(t.name, &seen_[t.name]));
    std::set<std::string>& applied = applied_[t.name];
    for (const Segment& s : fresh_segments) applied.insert(s.ids.begin(), s.ids.end());
    std::vector<const Bundle*> fresh;
    json ids = json::array(), counts = json::array();
    std::set<std::string> in_batch;
    std::string first;
    for (const BundleRef* r : refs) {
      if (applied.count(r->id) || !in_batch.insert(r->id).second) continue;
      if (first.empty()) first = r->id;
      fresh.push_back(r->bundle);
      ids.push_back(r->id);
      counts.push_back(static_cast<uint64_t>(r->bundle->rows()));
    }
    if (fresh.empty()) return size_t{0};
    DBS_ASSIGN_OR_RETURN(Duck * duck, Db());
    DBS_ASSIGN_OR_RETURN(files::SpillDir * spill, Spill());
    DBS_RETURN_IF_ERROR(files::CreateStageTable(duck, "stage", t));
    Status appended = files::AppendBundles(duck, "stage", t, fresh, so_.zero_date);
    if (!appended.ok()) {
      (void)duck->Exec("DROP TABLE IF EXISTS stage");
      return appended;
    }
    const std::string stem = "seg-" + files::IdForFile(first) + "-" + nonce_;
    const std::string local = spill->path() + "/" + stem + ".parquet";
    Status copied =
        duck->Exec("COPY stage TO " + SqlString(local) + " (FORMAT parquet, COMPRESSION zstd)");
    (void)duck->Exec("DROP TABLE IF EXISTS stage");
    if (!copied.ok()) return copied.WithContext("staging " + t.name);
    Status up = files::Upload(store_.get(), local, StageDir(t.name) + "/" + stem + ".parquet");
    std::error_code ec;
    std::filesystem::remove(local, ec);
    DBS_RETURN_IF_ERROR(up);
    // The commit point of the segment: its bundle ids and their row counts.
    const std::string record = json{{"ids", ids}, {"counts", counts}}.dump();
    DBS_ASSIGN_OR_RETURN(auto w, store_->Create(StageDir(t.name) + "/" + stem + ".ids"));
    DBS_RETURN_IF_ERROR(w->Write(record));
    DBS_RETURN_IF_ERROR(w->Commit());
    for (const json& id : ids) applied.insert(id.get<std::string>());
    seen_[t.name].insert(stem + ".ids");
    return fresh.size();
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
    uint64_t total = 0;
    for (const Segment& s : segs) total += s.kept_rows;
    DBS_ASSIGN_OR_RETURN(Duck * duck, Db());
    DBS_ASSIGN_OR_RETURN(files::SpillDir * spill, Spill());
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
    // Local copies of the segments the current part reads (the window moves forward).
    std::map<size_t, std::unique_ptr<files::LocalCopy>> copies;
    size_t seg_index = 0;
    uint64_t seg_start = 0;  // kept rows before segs[seg_index]
    for (uint64_t i = 0; i < nfiles; ++i) {
      const uint64_t lo = i * per, hi = std::min(total, lo + per);
      // Copies of segments wholly before this part are no longer needed.
      while (seg_index < segs.size() && seg_start + segs[seg_index].kept_rows <= lo) {
        copies.erase(seg_index);
        seg_start += segs[seg_index].kept_rows;
        ++seg_index;
      }
      std::vector<files::PartSource> sources;
      uint64_t start = seg_start;
      for (size_t k = seg_index; k < segs.size() && start < hi; ++k) {
        const Segment& s = segs[k];
        if (!copies.count(k)) {
          DBS_ASSIGN_OR_RETURN(
              copies[k],
              files::LocalCopy::Fetch(store_.get(), StageDir(t.name) + "/" + s.name + ".parquet",
                                      spill->path()));
        }
        sources.push_back({copies[k]->path(), s.kept});
        start += s.kept_rows;
      }
      std::string from = files::PartFrom(sources, seg_start, lo, hi);
      const bool empty = from.empty();
      if (empty) {
        DBS_RETURN_IF_ERROR(files::CreateStageTable(duck, "empty", t));
        from = "empty";
      }
      const std::string name = files::PartName(next++, fo_);
      const std::string tmp = spill->path() + "/" + name;
      const std::string sql = "COPY (SELECT " + files::ExportList(t, fo_) + " FROM " + from +
                              ") TO " + SqlString(tmp) + " " + files::CopyOptions(fo_);
      Status copied = duck->Exec(sql);
      if (empty) (void)duck->Exec("DROP TABLE IF EXISTS empty");
      if (!copied.ok()) return copied;
      ManifestFile f;
      f.name = name;
      f.rows = hi - lo;
      DBS_ASSIGN_OR_RETURN(f.sha256, files::Sha256File(tmp, &f.bytes));
      Status up = files::Upload(store_.get(), tmp, t.name + "/" + name);
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      DBS_RETURN_IF_ERROR(up);
      m.rows += f.rows;
      m.files.push_back(std::move(f));
    }
    copies.clear();
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
  std::map<std::string, std::set<std::string>> applied_;  // bundle ids, per table
  std::map<std::string, std::set<std::string>> seen_;     // .ids records read, per table
  std::unique_ptr<files::ChangeFiles> changes_;           // CDC runs (with a commit log)
};

}  // namespace

Result<std::unique_ptr<Sink>> OpenS3FileSink(const ConnectionConfig& config,
                                             const SinkOptions& options) {
  DBS_ASSIGN_OR_RETURN(FileOptions fo, files::FileOptionsOf(config));
  DBS_ASSIGN_OR_RETURN(auto store, files::OpenS3Of(config));
  return std::unique_ptr<Sink>(new S3FileSink(std::move(store), std::move(fo), options));
}

}  // namespace dbs

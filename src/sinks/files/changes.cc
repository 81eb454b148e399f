#include "sinks/files/changes.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include <unistd.h>

#include "core/logging.h"
#include "sinks/change_plan.h"
#include "sinks/files/naming.h"
#include "sinks/files/stage.h"
#include "sources/files/remote.h"

namespace dbs::files {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Seq16(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016" PRIu64, v);
  return buf;
}

// A UTC time as 20261203T054530123456Z (sorts as text).
std::string EpochName(int64_t us) {
  const time_t secs = static_cast<time_t>(us / 1'000'000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d%02d%02dT%02d%02d%02d%06dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(us % 1'000'000));
  return buf;
}

// "changes-<epoch>-<first>-<last><ext>" -> its parts; false for other names.
bool ParseChangeName(const std::string& name, std::string* epoch, uint64_t* first, uint64_t* last) {
  constexpr std::string_view kPrefix = "changes-";
  constexpr size_t kEpoch = 22;  // EpochName
  const size_t at = kPrefix.size() + kEpoch + 1;
  if (name.rfind(kPrefix, 0) != 0 || name.size() < at + 33) return false;
  if (name[at - 1] != '-' || name[at + 16] != '-') return false;
  const std::string a = name.substr(at, 16);
  const std::string b = name.substr(at + 17, 16);
  for (char c : a + b) {
    if (c < '0' || c > '9') return false;
  }
  *epoch = name.substr(kPrefix.size(), kEpoch);
  *first = std::stoull(a);
  *last = std::stoull(b);
  return true;
}

const char* OpName(RowOp op) {
  switch (op) {
    case RowOp::kInsert:
      return "insert";
    case RowOp::kUpdate:
      return "update";
    case RowOp::kDelete:
      return "delete";
    case RowOp::kUpdateBefore:
      return "update_before";
  }
  return "insert";
}

// The staging of one table's rows of a batch: data rows in `cs<i>`, their change columns in
// the VALUES list of `cm<i>`, appended in the same order (joined by position).
struct TableStage {
  std::string name;  // target table
  const TableSchema* schema = nullptr;
  int index = 0;
  uint64_t rows = 0;
  std::string meta_values;  // "(...), (...)" not yet inserted
  size_t pending = 0;       // rows in meta_values
};

Status FlushMeta(Duck* duck, TableStage* ts) {
  if (ts->pending == 0) return Status::Ok();
  Status s =
      duck->Exec("INSERT INTO cm" + std::to_string(ts->index) + " VALUES " + ts->meta_values);
  ts->meta_values.clear();
  ts->pending = 0;
  return s;
}

// ---- Stores ----

std::string CheckpointFile(const std::string& root, const std::string& stream, int partition) {
  return root + "/.dbs/cdc/" + IdForFile(stream) + "/p" + std::to_string(partition) + ".json";
}

class LocalHeld : public ChangeStore::Held {
 public:
  explicit LocalHeld(std::string path) : path_(std::move(path)) {}
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
};

// A local folder: checkpoints are files replaced by rename, under a flock the host's writers
// share, so compare-and-set never finds another writer's checkpoint (version 1 = exists).
class LocalStore : public ChangeStore {
 public:
  explicit LocalStore(std::string root) : root_(std::move(root)) {}

  std::string Describe() const override { return "file://" + root_; }

  Result<std::unique_ptr<FileLock>> Lock(const std::string& stream, int partition) override {
    std::error_code ec;
    fs::create_directories(root_ + "/.dbs/locks", ec);
    return FileLock::Acquire(root_ + "/.dbs/locks/cdc-" + IdForFile(stream) + "-p" +
                             std::to_string(partition) + ".lock");
  }

  Result<Checkpoint> ReadCheckpoint(const std::string& stream, int partition) override {
    const std::string path = CheckpointFile(root_, stream, partition);
    std::error_code ec;
    if (!fs::exists(path, ec)) return Checkpoint{};
    DBS_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
    return Checkpoint{std::move(text), 1};
  }

  Result<uint64_t> WriteCheckpoint(const std::string& stream, int partition,
                                   const std::string& text, uint64_t expected) override {
    const std::string path = CheckpointFile(root_, stream, partition);
    std::error_code ec;
    if (expected == 0 && fs::exists(path, ec)) {
      return Status(StatusCode::kFailedPrecondition, Retry::kRetry,
                    path + " was written by another writer");
    }
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) return Status::IoError("creating the folder of " + path + ": " + ec.message());
    DBS_RETURN_IF_ERROR(WriteFileAtomic(path, text));
    return uint64_t{1};
  }

  Result<std::string> Scratch() override {
    const std::string dir = root_ + "/.dbs/tmp";  // on the root's file system: Put renames
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Status::IoError("creating " + dir + ": " + ec.message());
    return dir;
  }

  Status Put(const std::string& path, const std::string& key) override {
    const std::string dest = root_ + "/" + key;
    const std::string dir = fs::path(dest).parent_path().string();
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Status::IoError("creating " + dir + ": " + ec.message());
    DBS_RETURN_IF_ERROR(SyncPath(path));
    if (std::rename(path.c_str(), dest.c_str()) != 0) {
      return Status::IoError("renaming " + path + " to " + dest + ": " + std::strerror(errno));
    }
    return SyncPath(dir);
  }

  Result<std::unique_ptr<Held>> Get(const std::string& key) override {
    const std::string path = root_ + "/" + key;
    std::error_code ec;
    if (!fs::exists(path, ec)) return Status::NotFound(path + " does not exist");
    return std::unique_ptr<Held>(new LocalHeld(path));
  }

  Result<std::vector<std::string>> List(const std::string& dir,
                                        const std::string& prefix) override {
    std::vector<std::string> out;
    std::error_code ec;
    const std::string path = root_ + "/" + dir;
    if (!fs::exists(path, ec)) return out;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      const std::string n = e.path().filename().string();
      if (e.is_regular_file(ec) && n.rfind(prefix, 0) == 0) out.push_back(n);
    }
    if (ec) return Status::IoError("listing " + path + ": " + ec.message());
    return out;
  }

  Result<std::vector<std::string>> Folders(const std::string& dir) override {
    std::vector<std::string> out;
    std::error_code ec;
    const std::string path = root_ + "/" + dir;
    if (!fs::exists(path, ec)) return out;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      if (e.is_directory(ec)) out.push_back(e.path().filename().string());
    }
    if (ec) return Status::IoError("listing " + path + ": " + ec.message());
    return out;
  }

  Status Delete(const std::string& key) override {
    std::error_code ec;
    fs::remove(root_ + "/" + key, ec);
    if (ec) return Status::IoError("removing " + root_ + "/" + key + ": " + ec.message());
    return Status::Ok();
  }

 private:
  const std::string root_;
};

class CopyHeld : public ChangeStore::Held {
 public:
  explicit CopyHeld(std::unique_ptr<LocalCopy> copy) : copy_(std::move(copy)) {}
  const std::string& path() const override { return copy_->path(); }

 private:
  std::unique_ptr<LocalCopy> copy_;
};

// A bucket: objects by PUT (one request or a multipart upload, visible complete or not at
// all), checkpoints in the run's commit log.
class BucketStore : public ChangeStore {
 public:
  BucketStore(ObjectStore* store, std::shared_ptr<CommitLog> log)
      : store_(store), log_(std::move(log)) {}

  std::string Describe() const override { return store_->Describe(); }

  Result<std::unique_ptr<FileLock>> Lock(const std::string&, int) override {
    return std::unique_ptr<FileLock>();
  }

  Result<Checkpoint> ReadCheckpoint(const std::string& stream, int partition) override {
    DBS_ASSIGN_OR_RETURN(CommitLog::Entry e, log_->Read(Key(stream, partition)));
    return Checkpoint{std::move(e.value), e.version};
  }

  Result<uint64_t> WriteCheckpoint(const std::string& stream, int partition,
                                   const std::string& text, uint64_t expected) override {
    return log_->Write(Key(stream, partition), text, expected);
  }

  Result<std::string> Scratch() override {
    if (!spill_) {
      DBS_ASSIGN_OR_RETURN(spill_, SpillDir::Create("s3-changes"));
    }
    return spill_->path();
  }

  Status Put(const std::string& path, const std::string& key) override {
    Status up = Upload(store_, path, key);
    std::error_code ec;
    fs::remove(path, ec);
    return up;
  }

  Result<std::unique_ptr<Held>> Get(const std::string& key) override {
    DBS_ASSIGN_OR_RETURN(std::string dir, Scratch());
    DBS_ASSIGN_OR_RETURN(auto copy, LocalCopy::Fetch(store_, key, dir));
    return std::unique_ptr<Held>(new CopyHeld(std::move(copy)));
  }

  Result<std::vector<std::string>> List(const std::string& dir,
                                        const std::string& prefix) override {
    DBS_ASSIGN_OR_RETURN(auto objects, store_->List(dir, false));
    std::vector<std::string> out;
    for (const ObjectInfo& o : objects) {
      if (o.is_prefix) continue;
      const std::string n = o.key.substr(o.key.rfind('/') + 1);
      if (n.rfind(prefix, 0) == 0) out.push_back(n);
    }
    return out;
  }

  Result<std::vector<std::string>> Folders(const std::string& dir) override {
    DBS_ASSIGN_OR_RETURN(auto objects, store_->List(dir, false));
    std::vector<std::string> out;
    for (const ObjectInfo& o : objects) {
      if (!o.is_prefix) continue;
      std::string k = o.key;
      while (!k.empty() && k.back() == '/') k.pop_back();
      out.push_back(k.substr(k.rfind('/') + 1));
    }
    return out;
  }

  Status Delete(const std::string& key) override { return store_->Delete(key); }

 private:
  // "cdcfiles-<stream>-p<N>" (a NATS subject token: no '.').
  static std::string Key(const std::string& stream, int partition) {
    std::string id = IdForFile(stream);
    std::replace(id.begin(), id.end(), '.', '_');
    return "cdcfiles-" + id + "-p" + std::to_string(partition);
  }

  ObjectStore* const store_;
  const std::shared_ptr<CommitLog> log_;
  std::unique_ptr<SpillDir> spill_;
};

bool IsConflict(const Status& s) {
  return s.code() == StatusCode::kFailedPrecondition && s.retryable();
}

std::string TempName(const std::string& what) {
  static std::atomic<uint64_t> counter{0};
  return "." + what + "-" + std::to_string(getpid()) + "-" + std::to_string(counter.fetch_add(1)) +
         ".tmp";
}

// 16 random hex digits: names the segments one ChangeFiles instance stages.
std::string WriterToken() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

}  // namespace

std::unique_ptr<ChangeStore> LocalChangeStore(std::string root) {
  return std::make_unique<LocalStore>(std::move(root));
}

std::unique_ptr<ChangeStore> BucketChangeStore(ObjectStore* store, std::shared_ptr<CommitLog> log) {
  return std::make_unique<BucketStore>(store, std::move(log));
}

const std::vector<std::string>& ChangeColumns() {
  static const std::vector<std::string> kColumns = {"_op", "_commit_ts", "_position", "_xid",
                                                    "_unchanged"};
  return kColumns;
}

ChangeFiles::ChangeFiles(std::unique_ptr<ChangeStore> store, FileOptions fo, SinkOptions so,
                         std::function<Result<Duck*>()> db)
    : store_(std::move(store)),
      fo_(std::move(fo)),
      so_(std::move(so)),
      db_(std::move(db)),
      token_(WriterToken()) {}

std::string ChangeFiles::Stream() const { return cdc::CdcStreamName(so_); }
std::string ChangeFiles::Dir() const { return ".dbs/cdc/" + IdForFile(Stream()); }
std::string ChangeFiles::StageDir(const std::string& table) const {
  return Dir() + "/stage/" + table;
}
std::string ChangeFiles::SegmentKey(const StagedSegment& s) const {
  return StageDir(s.table) + "/c-" + Seq16(s.first) + "-" + Seq16(s.last) +
         (s.writer.empty() ? "" : "-" + s.writer) + ".parquet";
}

Result<ChangeFiles::State> ChangeFiles::Load(int partition) {
  DBS_ASSIGN_OR_RETURN(ChangeStore::Checkpoint cp, store_->ReadCheckpoint(Stream(), partition));
  State st;
  st.version = cp.version;
  if (cp.version == 0) {
    st.epoch = EpochName(NowMicros());  // this run's change files sort after earlier runs'
    return st;
  }
  const std::string where = "the change checkpoint of " + Stream() + " partition " +
                            std::to_string(partition) + " in " + store_->Describe();
  json j = json::parse(cp.text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("seq") || !j["seq"].is_number_unsigned()) {
    return Status::Corruption(where + " does not parse");
  }
  st.seq = j["seq"].get<uint64_t>();
  st.epoch = j.value("epoch", "");
  if (st.epoch.size() != 22) return Status::Corruption(where + " has no run epoch");
  st.position.kind = cdc::PositionKindFromName(j.value("kind", ""));
  st.position.value = j.value("position", "");
  st.position.file_pos = j.value("filePos", "");
  auto segments = [&](const json& list, std::vector<StagedSegment>* out) -> Status {
    if (!list.is_array()) return Status::Corruption(where + " lists segments it cannot read");
    for (const json& s : list) {
      StagedSegment seg;
      seg.table = s.value("table", "");
      seg.first = s.value("first", uint64_t{0});
      seg.last = s.value("last", uint64_t{0});
      seg.rows = s.value("rows", uint64_t{0});
      seg.since_us = s.value("since", int64_t{0});
      seg.writer = s.value("writer", "");
      if (seg.writer.find_first_not_of("0123456789abcdef") != std::string::npos) {
        return Status::Corruption(where + " lists a staged segment it cannot name");
      }
      if (seg.table.empty() || seg.first == 0 || seg.last < seg.first) {
        return Status::Corruption(where + " lists a staged segment it cannot name");
      }
      out->push_back(std::move(seg));
    }
    return Status::Ok();
  };
  if (j.contains("staged")) DBS_RETURN_IF_ERROR(segments(j["staged"], &st.staged));
  if (j.contains("publishing") && j["publishing"].is_object()) {
    for (const auto& [table, p] : j["publishing"].items()) {
      Publication pub;
      pub.name = p.value("name", "");
      pub.schema = p.contains("schema") ? p["schema"] : json();
      if (pub.name.empty() || !pub.schema.is_object() || !p.contains("segments")) {
        return Status::Corruption(where + " has a publication of " + table + " it cannot read");
      }
      DBS_RETURN_IF_ERROR(segments(p["segments"], &pub.segments));
      if (pub.segments.empty()) {
        return Status::Corruption(where + " has a publication of " + table + " without segments");
      }
      st.publishing[table] = std::move(pub);
    }
  }
  if (j.contains("schemas") && j["schemas"].is_object()) {
    for (const auto& [k, v] : j["schemas"].items()) st.schemas[k] = v;
  }
  return st;
}

Status ChangeFiles::Save(int partition, State* st) {
  auto segments = [](const std::vector<StagedSegment>& list) {
    json out = json::array();
    for (const StagedSegment& s : list) {
      out.push_back({{"table", s.table},
                     {"first", s.first},
                     {"last", s.last},
                     {"rows", s.rows},
                     {"since", s.since_us},
                     {"writer", s.writer}});
    }
    return out;
  };
  json publishing = json::object();
  for (const auto& [table, p] : st->publishing) {
    publishing[table] = {
        {"name", p.name}, {"schema", p.schema}, {"segments", segments(p.segments)}};
  }
  json schemas = json::object();
  for (const auto& [k, v] : st->schemas) schemas[k] = v;
  const json j = {{"seq", st->seq},
                  {"epoch", st->epoch},
                  {"kind", cdc::PositionKindName(st->position.kind)},
                  {"position", st->position.value},
                  {"filePos", st->position.file_pos},
                  {"staged", segments(st->staged)},
                  {"publishing", publishing},
                  {"schemas", schemas}};
  DBS_ASSIGN_OR_RETURN(st->version,
                       store_->WriteCheckpoint(Stream(), partition, j.dump(), st->version));
  return Status::Ok();
}

Result<CdcCheckpoint> ChangeFiles::ReadCheckpoint(int partition) {
  if (std::find(partitions_.begin(), partitions_.end(), partition) == partitions_.end()) {
    partitions_.push_back(partition);
  }
  DBS_ASSIGN_OR_RETURN(auto lock, store_->Lock(Stream(), partition));
  DBS_ASSIGN_OR_RETURN(State st, Load(partition));
  CdcCheckpoint cp;
  cp.seq = st.seq;
  cp.position = st.position;
  return cp;
}

Status ChangeFiles::WithState(int partition, const std::function<Status(State*)>& step) {
  for (int attempt = 1;; ++attempt) {
    Status s;
    {
      DBS_ASSIGN_OR_RETURN(auto lock, store_->Lock(Stream(), partition));
      DBS_ASSIGN_OR_RETURN(State st, Load(partition));
      s = step(&st);
    }
    if (s.ok() || !IsConflict(s) || attempt >= 8) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(10 * attempt));
  }
}

Result<size_t> ChangeFiles::Apply(const ChangeBatch& b) {
  const int partition = b.partition;
  if (std::find(partitions_.begin(), partitions_.end(), partition) == partitions_.end()) {
    partitions_.push_back(partition);
  }
  DBS_ASSIGN_OR_RETURN(auto lock, store_->Lock(Stream(), partition));
  DBS_ASSIGN_OR_RETURN(State st, Load(partition));
  if (b.last_seq <= st.seq) return size_t{0};
  if (b.first_seq != st.seq + 1) {
    return Status(StatusCode::kFailedPrecondition, Retry::kRetry,
                  "change messages " + std::to_string(b.first_seq) + ".." +
                      std::to_string(b.last_seq) + " do not follow the checkpoint at " +
                      std::to_string(st.seq) + " in " + store_->Describe());
  }
  DBS_ASSIGN_OR_RETURN(Duck * duck, db_());
  DBS_ASSIGN_OR_RETURN(std::string scratch, store_->Scratch());

  // Tables whose staged segments have other columns than the batch's: published first.
  std::map<std::string, TableStage> stages;
  std::vector<std::string> order;
  auto stage_for = [&](const TableRef& ref) -> Result<TableStage*> {
    if (!b.tables || !b.tables->count(ref.QualifiedName())) {
      return Status::Internal("no schema for changes of " + ref.QualifiedName());
    }
    const TableSchema& t = b.tables->at(ref.QualifiedName());
    auto it = stages.find(t.name);
    if (it != stages.end()) return &it->second;
    DBS_RETURN_IF_ERROR(CheckPathComponent(t.name, "table name"));
    for (const Column& c : t.columns) {
      for (const std::string& meta : ChangeColumns()) {
        if (c.name == meta) {
          return Status(StatusCode::kInvalidArgument, Retry::kFail,
                        "table " + t.name + " has a column named " + meta +
                            ", which change files use for the change itself; rename it in the "
                            "source or leave the table out of the stream");
        }
      }
    }
    auto known = st.schemas.find(t.name);
    if (known != st.schemas.end() && known->second != dbs::ToJson(t)) {
      DBS_RETURN_IF_ERROR(Publish(partition, &st, t.name));
    }
    TableStage ts;
    ts.name = t.name;
    ts.schema = &t;
    ts.index = static_cast<int>(stages.size());
    DBS_RETURN_IF_ERROR(CreateStageTable(duck, "cs" + std::to_string(ts.index), t));
    DBS_RETURN_IF_ERROR(duck->Exec("CREATE OR REPLACE TABLE cm" + std::to_string(ts.index) +
                                   " (_op VARCHAR, _commit_ts TIMESTAMPTZ, _position VARCHAR, "
                                   "_xid VARCHAR, _unchanged VARCHAR[])"));
    order.push_back(t.name);
    return &stages.emplace(t.name, std::move(ts)).first->second;
  };
  auto drop_stages = [&] {
    for (const auto& [name, ts] : stages) {
      (void)duck->Exec("DROP TABLE IF EXISTS cs" + std::to_string(ts.index));
      (void)duck->Exec("DROP TABLE IF EXISTS cm" + std::to_string(ts.index));
    }
  };

  size_t changes = 0;
  Status s;
  for (const ChangeTxn* txn : b.txns) {
    const std::string common = "CAST(make_timestamp(" + std::to_string(txn->commit_time_us) +
                               ") AS TIMESTAMPTZ), " + SqlString(txn->position.value) + ", " +
                               SqlString(txn->xid);
    for (const ChangeSegment& seg : txn->segments) {
      auto staged = stage_for(seg.table);
      if (!staged.ok()) {
        s = staged.status();
        break;
      }
      TableStage* ts = *staged;
      if (seg.truncate) {
        s = FlushMeta(duck, ts);
        if (s.ok())
          s = duck->Exec("INSERT INTO cs" + std::to_string(ts->index) + " DEFAULT VALUES");
        if (s.ok()) {
          s = duck->Exec("INSERT INTO cm" + std::to_string(ts->index) + " VALUES ('truncate', " +
                         common + ", NULL)");
        }
        ++ts->rows;
        ++changes;
        if (!s.ok()) break;
        continue;
      }
      const Bundle& rows = seg.rows;
      const size_t n = rows.rows();
      if (n == 0) continue;
      s = AppendBundles(duck, "cs" + std::to_string(ts->index), *ts->schema, {&rows},
                        so_.zero_date);
      if (!s.ok()) break;
      for (size_t r = 0; r < n; ++r) {
        const RowOp op = r < rows.ops.size() ? rows.ops[r] : RowOp::kInsert;
        std::string unchanged;
        for (size_t c = 0; c < rows.columns.size() && c < ts->schema->columns.size(); ++c) {
          if (rows.columns[c].IsUnchanged(r)) {
            unchanged += (unchanged.empty() ? "[" : ", ") + SqlString(ts->schema->columns[c].name);
          }
        }
        unchanged = unchanged.empty() ? "NULL" : unchanged + "]";
        ts->meta_values += std::string(ts->pending ? ", " : "") + "(" + SqlString(OpName(op)) +
                           ", " + common + ", " + unchanged + ")";
        ++ts->pending;
        if (op != RowOp::kUpdateBefore) ++changes;
      }
      ts->rows += n;
      // Before the next segment of this table, whose data rows come after these.
      s = FlushMeta(duck, ts);
      if (!s.ok()) break;
    }
    if (!s.ok()) break;
  }
  if (!s.ok()) {
    drop_stages();
    return s.WithContext("staging changes " + std::to_string(b.first_seq) + ".." +
                         std::to_string(b.last_seq));
  }

  // One segment per table, then the checkpoint: the commit point.
  const int64_t now = NowMicros();
  std::vector<StagedSegment> added;
  std::map<std::string, json> added_schemas;
  for (const std::string& name : order) {
    TableStage& ts = stages.at(name);
    if (ts.rows == 0) continue;
    StagedSegment seg{name, b.first_seq, b.last_seq, ts.rows, now, token_};
    const std::string tmp = scratch + "/" + TempName("c");
    const std::string i = std::to_string(ts.index);
    s = duck->Exec("COPY (SELECT * FROM cm" + i + " POSITIONAL JOIN cs" + i + ") TO " +
                   SqlString(tmp) + " (FORMAT parquet, COMPRESSION zstd)");
    if (s.ok()) s = store_->Put(tmp, SegmentKey(seg));
    if (!s.ok()) {
      std::error_code ec;
      fs::remove(tmp, ec);
      drop_stages();
      return s.WithContext("staging the changes of " + name);
    }
    added.push_back(seg);
    added_schemas[name] = dbs::ToJson(*ts.schema);
  }
  drop_stages();
  // Another writer's checkpoint in between (a bucket's compare-and-set): on top of it, as long
  // as it still ends where this batch starts.
  for (int attempt = 1;; ++attempt) {
    st.staged.insert(st.staged.end(), added.begin(), added.end());
    for (const auto& [name, schema] : added_schemas) st.schemas[name] = schema;
    st.seq = b.last_seq;
    if (!b.position.empty()) st.position = b.position;
    Status saved = Save(partition, &st);
    if (saved.ok()) break;
    if (!IsConflict(saved) || attempt >= 8) return saved;
    DBS_ASSIGN_OR_RETURN(st, Load(partition));
    if (st.seq >= b.last_seq) {
      // Another writer committed this batch first, with the same rows staged under its own
      // keys: this writer's segments are named by no checkpoint (unless this instance's own
      // earlier attempt committed them), and nothing will read them.
      std::set<std::string> named;
      for (const StagedSegment& s : st.staged) named.insert(SegmentKey(s));
      for (const auto& [table, p] : st.publishing) {
        for (const StagedSegment& s : p.segments) named.insert(SegmentKey(s));
      }
      for (const StagedSegment& s : added) {
        if (!named.count(SegmentKey(s))) DBS_RETURN_IF_ERROR(store_->Delete(SegmentKey(s)));
      }
      return size_t{0};
    }
    if (st.seq != b.first_seq - 1) {
      return Status(StatusCode::kFailedPrecondition, Retry::kRetry,
                    "another writer moved the change checkpoint of " + store_->Describe() + " to " +
                        std::to_string(st.seq) + " while messages " + std::to_string(b.first_seq) +
                        ".." + std::to_string(b.last_seq) + " were staged");
    }
  }
  // The batch is committed: a publication that fails here is retried by the next Apply or
  // Flush.
  if (Status rolled = Roll(partition, &st, /*all=*/false); !rolled.ok()) {
    if (!IsConflict(rolled) && !rolled.retryable()) return rolled;
    Log(LogLevel::kDebug, "writer", "change files not published yet",
        {F("error", rolled.ToString())});
  }
  return changes;
}

Status ChangeFiles::Roll(int partition, State* st, bool all) {
  // Publications under way first: their files are due by definition.
  std::vector<std::string> pending;
  for (const auto& [table, p] : st->publishing) pending.push_back(table);
  for (const std::string& table : pending) DBS_RETURN_IF_ERROR(Complete(partition, st, table));
  std::map<std::string, std::pair<uint64_t, int64_t>> per_table;  // rows, oldest
  for (const StagedSegment& s : st->staged) {
    auto [it, added] = per_table.emplace(s.table, std::make_pair(uint64_t{0}, s.since_us));
    it->second.first += s.rows;
    it->second.second = std::min(it->second.second, s.since_us);
  }
  const uint64_t max_rows = fo_.change_rows ? fo_.change_rows : fo_.rows_per_file;
  const int64_t max_age = static_cast<int64_t>(fo_.change_seconds) * 1'000'000;
  const int64_t now = NowMicros();
  for (const auto& [table, v] : per_table) {
    if (all || v.first >= max_rows || now - v.second >= max_age) {
      DBS_RETURN_IF_ERROR(Publish(partition, st, table));
    }
  }
  return Status::Ok();
}

Status ChangeFiles::Publish(int partition, State* st, const std::string& table) {
  if (st->publishing.count(table)) DBS_RETURN_IF_ERROR(Complete(partition, st, table));
  std::vector<StagedSegment> mine;
  for (const StagedSegment& s : st->staged) {
    if (s.table == table) mine.push_back(s);
  }
  if (mine.empty()) return Status::Ok();
  auto schema = st->schemas.find(table);
  if (schema == st->schemas.end()) {
    return Status::Corruption("the change checkpoint of " + Stream() + " in " + store_->Describe() +
                              " has no columns for the changes of " + table);
  }
  const std::string changes_dir = table + "/_changes";

  // A change file of this run that starts at the first staged message holds the segments up
  // to its end already (written by a publication that died before its checkpoint).
  uint64_t published_to = 0;
  DBS_ASSIGN_OR_RETURN(auto names, store_->List(changes_dir, "changes-" + st->epoch + "-" +
                                                                 Seq16(mine.front().first)));
  for (const std::string& n : names) {
    std::string epoch;
    uint64_t first = 0, last = 0;
    if (ParseChangeName(n, &epoch, &first, &last) && epoch == st->epoch &&
        first == mine.front().first) {
      published_to = std::max(published_to, last);
    }
  }
  Publication p;
  p.schema = schema->second;
  std::vector<StagedSegment> done;
  for (const StagedSegment& s : mine) (s.last > published_to ? p.segments : done).push_back(s);
  st->staged.erase(std::remove_if(st->staged.begin(), st->staged.end(),
                                  [&](const StagedSegment& s) { return s.table == table; }),
                   st->staged.end());
  st->schemas.erase(table);
  if (!p.segments.empty()) {
    p.name = "changes-" + st->epoch + "-" + Seq16(p.segments.front().first) + "-" +
             Seq16(p.segments.back().last) + DataExtension(fo_);
    st->publishing[table] = p;
  }
  DBS_RETURN_IF_ERROR(Save(partition, st));  // step 1: the file's name and rows are fixed
  for (const StagedSegment& s : done) DBS_RETURN_IF_ERROR(store_->Delete(SegmentKey(s)));
  if (p.segments.empty()) return Status::Ok();
  return Complete(partition, st, table);
}

Status ChangeFiles::Complete(int partition, State* st, const std::string& table) {
  const Publication p = st->publishing.at(table);
  DBS_ASSIGN_OR_RETURN(TableSchema schema, TableFromJson(p.schema));
  // Step 2: the file, from the segments.
  std::vector<std::unique_ptr<ChangeStore::Held>> held;
  std::string list;
  uint64_t rows = 0;
  for (const StagedSegment& s : p.segments) {
    auto h = store_->Get(SegmentKey(s));
    if (!h.ok()) {
      if (h.status().code() != StatusCode::kNotFound) return h.status();
      // Segments are deleted after step 3 only: another writer completed the publication.
      DBS_ASSIGN_OR_RETURN(State fresh, Load(partition));
      auto it = fresh.publishing.find(table);
      if (it == fresh.publishing.end() || it->second.name != p.name) {
        *st = std::move(fresh);
        return Status::Ok();
      }
      return Status::Corruption("staged changes " + SegmentKey(s) + " of " + store_->Describe() +
                                " are gone before their publication as " + p.name);
    }
    list += (list.empty() ? "" : ", ") + SqlString((*h)->path());
    rows += s.rows;
    held.push_back(std::move(h).value());
  }
  DBS_ASSIGN_OR_RETURN(Duck * duck, db_());
  DBS_ASSIGN_OR_RETURN(std::string scratch, store_->Scratch());
  const std::string tmp = scratch + "/" + TempName("changes");
  std::string meta;
  for (const std::string& c : ChangeColumns()) meta += SqlIdent(c) + ", ";
  Status copied =
      duck->Exec("COPY (SELECT " + meta + ExportList(schema, fo_) + " FROM read_parquet([" + list +
                 "])) TO " + SqlString(tmp) + " " + CopyOptions(fo_));
  held.clear();
  if (copied.ok()) copied = store_->Put(tmp, table + "/_changes/" + p.name);
  if (!copied.ok()) {
    std::error_code ec;
    fs::remove(tmp, ec);
    return copied.WithContext("publishing the changes of " + table + " as " + p.name);
  }
  Log(LogLevel::kInfo, "writer", "change file published",
      {F("table", table), F("file", p.name), F("changes", rows)});
  // Step 3: the checkpoint drops the publication (on top of other writers' checkpoints), then
  // the segments go.
  for (int attempt = 1;; ++attempt) {
    auto it = st->publishing.find(table);
    if (it == st->publishing.end() || it->second.name != p.name) break;  // done by another
    st->publishing.erase(it);
    Status saved = Save(partition, st);
    if (saved.ok()) break;
    if (!IsConflict(saved) || attempt >= 8) return saved;
    DBS_ASSIGN_OR_RETURN(*st, Load(partition));
  }
  for (const StagedSegment& s : p.segments) DBS_RETURN_IF_ERROR(store_->Delete(SegmentKey(s)));
  return Status::Ok();
}

Status ChangeFiles::Sweep(int partition) {
  return WithState(partition, [&](State* st) -> Status {
    if (st->version == 0) return Status::Ok();
    std::set<std::string> named;
    for (const StagedSegment& s : st->staged) named.insert(SegmentKey(s));
    for (const auto& [table, p] : st->publishing) {
      for (const StagedSegment& s : p.segments) named.insert(SegmentKey(s));
    }
    DBS_ASSIGN_OR_RETURN(auto tables, store_->Folders(Dir() + "/stage"));
    for (const std::string& table : tables) {
      DBS_ASSIGN_OR_RETURN(auto names, store_->List(StageDir(table), "c-"));
      for (const std::string& n : names) {
        // c-<first>-<last>[-<writer>].parquet: a segment at or below the checkpoint that it does
        // not name lost its commit (a writer died, or lost a race) and is never read.
        if (n.size() < 2 + 16 + 1 + 16) continue;
        uint64_t last = 0;
        try {
          last = std::stoull(n.substr(2 + 16 + 1, 16));
        } catch (...) {
          continue;
        }
        const std::string key = StageDir(table) + "/" + n;
        if (last <= st->seq && !named.count(key)) DBS_RETURN_IF_ERROR(store_->Delete(key));
      }
    }
    return Status::Ok();
  });
}

Status ChangeFiles::Flush(bool all) {
  for (int partition : partitions_) {
    DBS_RETURN_IF_ERROR(WithState(partition, [&](State* st) -> Status {
      if (st->version == 0) return Status::Ok();
      return Roll(partition, st, all);
    }));
    if (all) DBS_RETURN_IF_ERROR(Sweep(partition));
  }
  return Status::Ok();
}

Status ChangeFiles::AddColumns(const TableSchema& new_schema) {
  for (int partition : partitions_) {
    DBS_RETURN_IF_ERROR(WithState(partition, [&](State* st) -> Status {
      if (st->version == 0) return Status::Ok();
      return Publish(partition, st, new_schema.name);
    }));
  }
  return Status::Ok();
}

}  // namespace dbs::files

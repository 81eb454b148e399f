#include "sinks/files/changes.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>

#include "core/logging.h"
#include "sinks/change_plan.h"
#include "sinks/files/naming.h"
#include "sinks/files/stage.h"

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

}  // namespace

const std::vector<std::string>& ChangeColumns() {
  static const std::vector<std::string> kColumns = {"_op", "_commit_ts", "_position", "_xid",
                                                    "_unchanged"};
  return kColumns;
}

ChangeFiles::ChangeFiles(std::string root, FileOptions fo, SinkOptions so,
                         std::function<Result<Duck*>()> db)
    : root_(std::move(root)), fo_(std::move(fo)), so_(std::move(so)), db_(std::move(db)) {}

std::string ChangeFiles::Dir() const {
  return root_ + "/.dbs/cdc/" + IdForFile(cdc::CdcStreamName(so_));
}
std::string ChangeFiles::StatePath(int partition) const {
  return Dir() + "/p" + std::to_string(partition) + ".json";
}
std::string ChangeFiles::LockPath(int partition) const {
  return root_ + "/.dbs/locks/cdc-" + IdForFile(cdc::CdcStreamName(so_)) + "-p" +
         std::to_string(partition) + ".lock";
}
std::string ChangeFiles::StageDir(const std::string& table) const {
  return Dir() + "/stage/" + table;
}
std::string ChangeFiles::SegmentPath(const StagedSegment& s) const {
  return StageDir(s.table) + "/c-" + Seq16(s.first) + "-" + Seq16(s.last) + ".parquet";
}

Result<ChangeFiles::State> ChangeFiles::Load(int partition) {
  State st;
  std::error_code ec;
  if (!fs::exists(StatePath(partition), ec)) {
    st.epoch = EpochName(NowMicros());  // this run's change files sort after earlier runs'
    return st;
  }
  DBS_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(StatePath(partition)));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("seq") || !j["seq"].is_number_unsigned()) {
    return Status::Corruption(StatePath(partition) + " is not a change checkpoint");
  }
  st.seq = j["seq"].get<uint64_t>();
  st.epoch = j.value("epoch", "");
  if (st.epoch.size() != 22) {
    return Status::Corruption(StatePath(partition) + " has no run epoch");
  }
  st.position.kind = cdc::PositionKindFromName(j.value("kind", ""));
  st.position.value = j.value("position", "");
  st.position.file_pos = j.value("filePos", "");
  if (j.contains("staged") && j["staged"].is_array()) {
    for (const json& s : j["staged"]) {
      StagedSegment seg;
      seg.table = s.value("table", "");
      seg.first = s.value("first", uint64_t{0});
      seg.last = s.value("last", uint64_t{0});
      seg.rows = s.value("rows", uint64_t{0});
      seg.since_us = s.value("since", int64_t{0});
      if (seg.table.empty() || seg.first == 0 || seg.last < seg.first) {
        return Status::Corruption(StatePath(partition) + " lists a staged segment it cannot name");
      }
      st.staged.push_back(std::move(seg));
    }
  }
  if (j.contains("schemas") && j["schemas"].is_object()) {
    for (const auto& [k, v] : j["schemas"].items()) st.schemas[k] = v;
  }
  return st;
}

Status ChangeFiles::Save(int partition, const State& st) {
  json staged = json::array();
  for (const StagedSegment& s : st.staged) {
    staged.push_back({{"table", s.table},
                      {"first", s.first},
                      {"last", s.last},
                      {"rows", s.rows},
                      {"since", s.since_us}});
  }
  json schemas = json::object();
  for (const auto& [k, v] : st.schemas) schemas[k] = v;
  const json j = {{"seq", st.seq},
                  {"epoch", st.epoch},
                  {"kind", cdc::PositionKindName(st.position.kind)},
                  {"position", st.position.value},
                  {"filePos", st.position.file_pos},
                  {"staged", staged},
                  {"schemas", schemas}};
  return WriteFileAtomic(StatePath(partition), j.dump());
}

Result<CdcCheckpoint> ChangeFiles::ReadCheckpoint(int partition) {
  if (std::find(partitions_.begin(), partitions_.end(), partition) == partitions_.end()) {
    partitions_.push_back(partition);
  }
  std::error_code ec;
  fs::create_directories(root_ + "/.dbs/locks", ec);
  DBS_ASSIGN_OR_RETURN(auto lock, FileLock::Acquire(LockPath(partition)));
  DBS_ASSIGN_OR_RETURN(State st, Load(partition));
  CdcCheckpoint cp;
  cp.seq = st.seq;
  cp.position = st.position;
  return cp;
}

Result<size_t> ChangeFiles::Apply(const ChangeBatch& b) {
  const int partition = b.partition;
  if (std::find(partitions_.begin(), partitions_.end(), partition) == partitions_.end()) {
    partitions_.push_back(partition);
  }
  std::error_code ec;
  fs::create_directories(root_ + "/.dbs/locks", ec);
  fs::create_directories(Dir(), ec);
  if (ec) return Status::IoError("creating " + Dir() + ": " + ec.message());
  DBS_ASSIGN_OR_RETURN(auto lock, FileLock::Acquire(LockPath(partition)));
  DBS_ASSIGN_OR_RETURN(State st, Load(partition));
  if (b.last_seq <= st.seq) return size_t{0};
  if (b.first_seq != st.seq + 1) {
    return Status(StatusCode::kFailedPrecondition, Retry::kRetry,
                  "change messages " + std::to_string(b.first_seq) + ".." +
                      std::to_string(b.last_seq) + " do not follow the checkpoint at " +
                      std::to_string(st.seq) + " in " + root_);
  }
  DBS_ASSIGN_OR_RETURN(Duck * duck, db_());

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
  for (const std::string& name : order) {
    TableStage& ts = stages.at(name);
    if (ts.rows == 0) continue;
    StagedSegment seg{name, b.first_seq, b.last_seq, ts.rows, now};
    fs::create_directories(StageDir(name), ec);
    if (ec) {
      drop_stages();
      return Status::IoError("creating " + StageDir(name) + ": " + ec.message());
    }
    const std::string path = SegmentPath(seg);
    const std::string tmp = StageDir(name) + "/.c-" + Seq16(seg.first) + ".tmp";
    const std::string i = std::to_string(ts.index);
    s = duck->Exec("COPY (SELECT * FROM cm" + i + " POSITIONAL JOIN cs" + i + ") TO " +
                   SqlString(tmp) + " (FORMAT parquet, COMPRESSION zstd)");
    if (s.ok()) s = SyncPath(tmp);
    if (s.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
      s = Status::IoError("renaming " + tmp + ": " + std::strerror(errno));
    }
    if (!s.ok()) {
      drop_stages();
      return s.WithContext("staging the changes of " + name);
    }
    st.staged.push_back(seg);
    st.schemas[name] = dbs::ToJson(*ts.schema);
  }
  drop_stages();
  for (const std::string& name : order) DBS_RETURN_IF_ERROR(SyncPath(StageDir(name)));
  st.seq = b.last_seq;
  if (!b.position.empty()) st.position = b.position;
  DBS_RETURN_IF_ERROR(Save(partition, st));
  DBS_RETURN_IF_ERROR(Roll(partition, &st, /*all=*/false));
  return changes;
}

Status ChangeFiles::Roll(int partition, State* st, bool all) {
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
  std::vector<StagedSegment> mine;
  for (const StagedSegment& s : st->staged) {
    if (s.table == table) mine.push_back(s);
  }
  if (mine.empty()) return Status::Ok();
  auto schema_json = st->schemas.find(table);
  if (schema_json == st->schemas.end()) {
    return Status::Corruption(StatePath(partition) + " has no columns for the changes of " + table);
  }
  DBS_ASSIGN_OR_RETURN(TableSchema schema, TableFromJson(schema_json->second));
  const std::string dir = root_ + "/" + table + "/_changes";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError("creating " + dir + ": " + ec.message());

  // A publication that died after its rename: the file starting at the first staged message
  // holds the segments up to its end.
  uint64_t published_to = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string epoch;
    uint64_t first = 0, last = 0;
    if (ParseChangeName(e.path().filename().string(), &epoch, &first, &last) &&
        epoch == st->epoch && first == mine.front().first) {
      published_to = std::max(published_to, last);
    }
  }
  if (ec) return Status::IoError("listing " + dir + ": " + ec.message());
  std::vector<StagedSegment> unpublished;
  for (const StagedSegment& s : mine) {
    if (s.last > published_to) unpublished.push_back(s);
  }
  if (!unpublished.empty()) {
    const std::string name = "changes-" + st->epoch + "-" + Seq16(unpublished.front().first) + "-" +
                             Seq16(unpublished.back().last) + DataExtension(fo_);
    std::string list;
    uint64_t rows = 0;
    for (const StagedSegment& s : unpublished) {
      list += (list.empty() ? "" : ", ") + SqlString(SegmentPath(s));
      rows += s.rows;
    }
    DBS_ASSIGN_OR_RETURN(Duck * duck, db_());
    const std::string tmp = dir + "/." + name + ".tmp";
    std::string meta;
    for (const std::string& c : ChangeColumns()) meta += SqlIdent(c) + ", ";
    DBS_RETURN_IF_ERROR(duck->Exec("COPY (SELECT " + meta + ExportList(schema, fo_) +
                                   " FROM read_parquet([" + list + "])) TO " + SqlString(tmp) +
                                   " " + CopyOptions(fo_)));
    DBS_RETURN_IF_ERROR(SyncPath(tmp));
    if (std::rename(tmp.c_str(), (dir + "/" + name).c_str()) != 0) {
      return Status::IoError("renaming " + tmp + ": " + std::strerror(errno));
    }
    DBS_RETURN_IF_ERROR(SyncPath(dir));
    Log(LogLevel::kInfo, "writer", "change file published",
        {F("table", table), F("file", name), F("changes", rows)});
  }
  st->staged.erase(std::remove_if(st->staged.begin(), st->staged.end(),
                                  [&](const StagedSegment& s) { return s.table == table; }),
                   st->staged.end());
  DBS_RETURN_IF_ERROR(Save(partition, *st));
  for (const StagedSegment& s : mine) fs::remove(SegmentPath(s), ec);
  return Status::Ok();
}

Status ChangeFiles::Flush(bool all) {
  for (int partition : partitions_) {
    std::error_code ec;
    if (!fs::exists(StatePath(partition), ec)) continue;
    DBS_ASSIGN_OR_RETURN(auto lock, FileLock::Acquire(LockPath(partition)));
    DBS_ASSIGN_OR_RETURN(State st, Load(partition));
    DBS_RETURN_IF_ERROR(Roll(partition, &st, all));
  }
  return Status::Ok();
}

Status ChangeFiles::AddColumns(const TableSchema& new_schema) {
  for (int partition : partitions_) {
    std::error_code ec;
    if (!fs::exists(StatePath(partition), ec)) continue;
    DBS_ASSIGN_OR_RETURN(auto lock, FileLock::Acquire(LockPath(partition)));
    DBS_ASSIGN_OR_RETURN(State st, Load(partition));
    DBS_RETURN_IF_ERROR(Publish(partition, &st, new_schema.name));
  }
  return Status::Ok();
}

}  // namespace dbs::files

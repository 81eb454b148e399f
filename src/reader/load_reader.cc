#include "reader/load_reader.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "bus/objects_wire.h"
#include "bus/protocol.h"
#include "core/logging.h"
#include "security/data_cipher.h"

namespace dbs {

using nlohmann::json;

namespace {

bool HasWildcard(const std::string& p) { return p.find_first_of("*?") != std::string::npos; }

TableRef SplitName(const std::string& pattern, const std::string& default_schema) {
  size_t dot = pattern.find('.');
  if (dot == std::string::npos) return {default_schema, pattern};
  return {pattern.substr(0, dot), pattern.substr(dot + 1)};
}

// Keeps only `names` (in that order); drops keys and indexes that lose a column.
Status SelectColumns(const std::vector<std::string>& names, const std::string& where,
                     TableSchema* t) {
  if (names.empty()) return Status::Ok();
  std::vector<Column> cols;
  std::set<std::string> kept;
  for (const std::string& n : names) {
    int i = t->FindColumn(n);
    if (i < 0) {
      return Status::InvalidArgument(where + ": column '" + n + "' does not exist in " +
                                     t->QualifiedName());
    }
    if (!kept.insert(n).second) {
      return Status::InvalidArgument(where + ": column '" + n + "' is listed twice");
    }
    cols.push_back(t->columns[static_cast<size_t>(i)]);
  }
  t->columns = std::move(cols);
  auto all_kept = [&](const std::vector<std::string>& v) {
    for (const auto& c : v) {
      if (!kept.count(c)) return false;
    }
    return true;
  };
  if (!all_kept(t->primary_key)) t->primary_key.clear();
  std::vector<Index> idx;
  for (Index& i : t->indexes) {
    std::vector<std::string> names_of;
    for (const auto& c : i.columns) names_of.push_back(c.name);
    if (all_kept(names_of)) idx.push_back(std::move(i));
  }
  t->indexes = std::move(idx);
  std::vector<ForeignKey> fks;
  for (ForeignKey& f : t->foreign_keys) {
    if (all_kept(f.columns)) fks.push_back(std::move(f));
  }
  t->foreign_keys = std::move(fks);
  return Status::Ok();
}

// Why a selection matched nothing, with what the source holds, so the user can fix it.
std::string NothingMatches(const std::vector<TableRef>& all, const StreamConfig& config,
                           const std::string& def) {
  std::string patterns;
  for (const TableSelector& s : config.tables) {
    patterns += (patterns.empty() ? "" : ", ") + ("'" + s.pattern + "'");
  }
  std::map<std::string, size_t> per_schema;
  for (const TableRef& t : all) ++per_schema[t.schema];
  std::string where;
  size_t shown = 0;
  for (const auto& [schema, n] : per_schema) {
    if (shown++ == 10) {
      where += ", …";
      break;
    }
    where += (where.empty() ? "" : ", ") + schema + " (" + std::to_string(n) + ")";
  }
  return "no source table matches the stream's tables selection (" + patterns +
         (config.exclude.empty() ? "" : ", minus the exclude patterns") +
         "): a name without a schema means the source's default schema '" + def +
         "'; select others as 'schema.table', 'schema.*' or '*.*'. Tables in the source: " +
         (where.empty() ? "none the connection's user can see" : "per schema " + where);
}

}  // namespace

Result<std::vector<PlannedTable>> PlanTables(Source* source, const StreamConfig& config) {
  DBS_RETURN_IF_ERROR(source->Configure(config));
  DBS_ASSIGN_OR_RETURN(std::vector<TableRef> all, source->ListAllTables());
  const std::string def = source->DefaultSchema();
  std::vector<PlannedTable> out;
  std::set<std::string> seen;
  for (size_t si = 0; si < config.tables.size(); ++si) {
    const TableSelector& sel = config.tables[si];
    const std::string where = "tables[" + std::to_string(si) + "]";
    std::vector<TableRef> matched;
    if (!sel.query.empty()) {
      matched.push_back(SplitName(sel.pattern, def));
    } else {
      for (const TableRef& t : all) {
        if (!MatchTablePattern(sel.pattern, t.schema, t.name, def)) continue;
        bool excluded = false;
        for (const std::string& ex : config.exclude) {
          excluded |= MatchTablePattern(ex, t.schema, t.name, def);
        }
        if (!excluded) matched.push_back(t);
      }
      if (matched.empty() && !HasWildcard(sel.pattern)) {
        return Status::NotFound(where + ": table '" + sel.pattern + "' not found in the source " +
                                config.source.Redacted());
      }
    }
    for (const TableRef& ref : matched) {
      if (!seen.insert(ref.QualifiedName()).second) continue;
      PlannedTable p;
      p.index = static_cast<int>(out.size());
      p.selector = sel;
      if (!sel.query.empty()) {
        DBS_ASSIGN_OR_RETURN(p.schema, source->DescribeQuery(sel.query, ref));
      } else {
        DBS_ASSIGN_OR_RETURN(p.schema, source->Describe(ref));
      }
      DBS_RETURN_IF_ERROR(SelectColumns(sel.columns, where, &p.schema));
      p.target_name = sel.target.empty() ? ref.name : sel.target;
      out.push_back(std::move(p));
    }
  }
  if (out.empty()) return Status::NotFound(NothingMatches(all, config, def));
  return out;
}

json ToJson(const SkipReport& r) {
  json rows = json::array();
  for (const SkippedRow& s : r.first) {
    rows.push_back({{"file", s.file}, {"line", s.line}, {"reason", s.reason}});
  }
  return {{"count", r.count}, {"rows", std::move(rows)}};
}

LoadReader::LoadReader(const StreamConfig& config, bus::NatsConnection* nats,
                       LoadReaderOptions options)
    : config_(config), nats_(nats), options_(options) {}

namespace {

struct Task {
  const PlannedTable* table;
  int chunk;
  std::optional<KeyRange> range;
};

// Rows read (and left out, malformedRows skip) per table, published as progress samples by a
// background thread.
class ReadProgress {
 public:
  ReadProgress(bus::NatsConnection* nats, std::string stream, size_t tables)
      : nats_(nats), stream_(std::move(stream)), rows_(tables), bytes_(0), skipped_(tables) {
    for (auto& r : rows_) r.store(0);
    thread_ = std::thread([this] { Loop(); });
  }
  ~ReadProgress() {
    {
      std::lock_guard<std::mutex> l(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    Publish();
  }
  void Add(size_t table, uint64_t rows, uint64_t bytes) {
    rows_[table].fetch_add(rows, std::memory_order_relaxed);
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  // Counts rows a reader of `table` left out, and logs each.
  void Skip(size_t table, const std::string& name, std::vector<SkippedRow> rows) {
    if (rows.empty()) return;
    std::lock_guard<std::mutex> l(skipped_mu_);
    SkipReport& r = skipped_[table];
    for (SkippedRow& row : rows) {
      Log(LogLevel::kWarn, "reader", "malformed row skipped",
          {F("stream", stream_), F("table", name), F("file", row.file), F("line", row.line),
           F("reason", row.reason)});
      ++r.count;
      if (r.first.size() < SkipReport::kListed) r.first.push_back(std::move(row));
    }
  }
  std::vector<SkipReport> Skipped() {
    std::lock_guard<std::mutex> l(skipped_mu_);
    return skipped_;
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!done_) {
      cv_.wait_for(l, std::chrono::milliseconds(500));
      Publish();
    }
  }
  void Publish() {
    json j = {{"kind", "read"}, {"bytes", bytes_.load()}};
    json rows = json::array();
    for (auto& r : rows_) rows.push_back(r.load());
    j["rows"] = std::move(rows);
    {
      std::lock_guard<std::mutex> l(skipped_mu_);
      json skipped = json::array();
      bool any = false;
      for (const SkipReport& r : skipped_) {
        skipped.push_back(r.count);
        any = any || r.count > 0;
      }
      if (any) j["skipped"] = std::move(skipped);
    }
    (void)nats_->PublishCore(bus::SubjectProgress(stream_), j.dump());
  }
  bus::NatsConnection* nats_;
  std::string stream_;
  std::vector<std::atomic<uint64_t>> rows_;
  std::atomic<uint64_t> bytes_;
  std::mutex mu_;
  std::mutex skipped_mu_;            // not mu_: Loop() holds that one while it publishes
  std::vector<SkipReport> skipped_;  // guarded by skipped_mu_
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Keeps the bus a bounded window over the load (see the header): Admit() is called before each
// bundle is published and blocks while the writers are too far behind; data the writers
// acknowledged is purged. Thread-safe.
class BusWindow {
 public:
  BusWindow(bus::NatsConnection* nats, std::string stream, std::string durable,
            std::string data_subjects, uint64_t max_bytes)
      : nats_(nats),
        stream_(std::move(stream)),
        durable_(std::move(durable)),
        data_subjects_(std::move(data_subjects)),
        max_bytes_(max_bytes) {}

  // Counts a published bundle of `bytes`; waits (unless `cancelled` turns true) while the
  // unacknowledged part of the bus exceeds the window.
  void Admit(uint64_t bytes, const std::function<bool()>& cancelled) {
    std::unique_lock<std::mutex> l(mu_);
    ++published_;
    published_bytes_ += bytes;
    bytes_since_check_ += bytes;
    // Checked every kCheckEvery bundles or every eighth of the window, whichever comes first.
    if (++since_check_ < kCheckEvery && bytes_since_check_ < max_bytes_ / 8 && !over_) return;
    since_check_ = 0;
    bytes_since_check_ = 0;
    while (!cancelled()) {
      Check();
      if (!over_) return;
      l.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      l.lock();
    }
  }

 private:
  static constexpr uint64_t kCheckEvery = 64;
  static constexpr uint64_t kPurgeEvery = 1024;  // acknowledged bundles between purges

  // Under mu_.
  void Check() {
    uint64_t unacked = published_;  // no consumer yet: the writers have taken nothing
    const uint64_t avg = published_ > 0 ? published_bytes_ / published_ : 0;  // bytes a bundle
    auto st = nats_->GetConsumerState(stream_, durable_);
    if (st.ok()) {
      unacked = st->num_pending + static_cast<uint64_t>(std::max<int64_t>(0, st->num_ack_pending));
      // Purged every kPurgeEvery acknowledged bundles or every quarter window of their bytes,
      // whichever comes first: with bundles sized by bytes a count alone would keep most of
      // a table on the broker (its disk and its block cache).
      const uint64_t acked = st->ack_floor_stream_seq + 1 > purged_below_
                                 ? st->ack_floor_stream_seq + 1 - purged_below_
                                 : 0;
      if (acked >= kPurgeEvery || (acked > 0 && acked * avg >= max_bytes_ / 4)) {
        // Failing to purge only costs broker space; the next check tries again.
        Status purged =
            nats_->PurgeSubjectBelow(stream_, data_subjects_, st->ack_floor_stream_seq + 1);
        if (purged.ok()) {
          purged_below_ = st->ack_floor_stream_seq + 1;
        } else {
          Log(LogLevel::kDebug, "reader", "purging acknowledged bundles failed",
              {F("stream", stream_), F("error", purged.ToString())});
        }
      }
    } else if (st.status().code() != StatusCode::kNotFound) {
      over_ = false;  // cannot tell: do not stall the load on a flaky API call
      return;
    }
    over_ = unacked * avg > max_bytes_;
  }

  bus::NatsConnection* nats_;
  const std::string stream_, durable_, data_subjects_;
  const uint64_t max_bytes_;
  std::mutex mu_;
  uint64_t published_ = 0, published_bytes_ = 0, since_check_ = 0, bytes_since_check_ = 0,
           purged_below_ = 0;
  bool over_ = false;
};

}  // namespace

Result<ReaderStats> LoadReader::Run() {
  const std::string& name = config_.name;
  DBS_ASSIGN_OR_RETURN(auto source, Source::Open(config_.source));
  DBS_ASSIGN_OR_RETURN(std::vector<PlannedTable> tables, PlanTables(source.get(), config_));

  // A fresh JetStream stream per load run: nothing of an earlier run can be mixed in.
  Status del = nats_->DeleteStream(bus::JetStreamName(name));
  if (!del.ok() && del.code() != StatusCode::kNotFound) {
    Log(LogLevel::kDebug, "reader", "no earlier stream to delete", {F("detail", del.message())});
  }
  bus::StreamSpec spec;
  spec.name = bus::JetStreamName(name);
  spec.subjects = bus::StoredSubjects(name);
  // A freshly started or busy server can time out its first JetStream API calls: retry those.
  for (int attempt = 1;; ++attempt) {
    Status ensured = nats_->EnsureStream(spec);
    if (ensured.ok()) break;
    if (attempt >= 5 || (ensured.code() != StatusCode::kTimeout && !ensured.retryable())) {
      return ensured;
    }
    Log(LogLevel::kWarn, "reader", "creating the JetStream stream timed out; retrying",
        {F("stream", name), F("attempt", attempt)});
    std::this_thread::sleep_for(std::chrono::milliseconds(500 * attempt));
  }

  std::unique_ptr<Snapshot> snapshot;
  if (options_.cdc_snapshot) {
    CdcOptions co;
    co.stream = name;
    for (const PlannedTable& t : tables) co.tables.push_back({t.schema.schema, t.schema.name});
    co.slot_name = config_.cdc.slot_name;
    co.publication_name = config_.cdc.publication_name;
    co.server_id = config_.cdc.server_id;
    DBS_RETURN_IF_ERROR(source->CheckCdc(co));
    DBS_ASSIGN_OR_RETURN(snapshot, source->BeginCdcSnapshot(config_.readers, co));
  } else {
    DBS_ASSIGN_OR_RETURN(snapshot, source->BeginSnapshot(config_.readers));
  }
  std::deque<Task> tasks;
  for (const PlannedTable& t : tables) {
    std::vector<KeyRange> ranges;
    if (!options_.read_data) {
      // mode cdc: structure only
    } else if (t.selector.query.empty() && config_.limits.rows == 0) {
      const uint64_t split =
          config_.split_rows != 0 ? config_.split_rows : source->DefaultSplitRows();
      DBS_ASSIGN_OR_RETURN(ranges, source->Split(t.schema, split));
    }
    if (!options_.read_data) {
    } else if (ranges.empty()) {
      tasks.push_back({&t, 0, std::nullopt});
    } else {
      for (size_t i = 0; i < ranges.size(); ++i) {
        tasks.push_back({&t, static_cast<int>(i), ranges[i]});
      }
    }
    json meta = {{"index", t.index}, {"table", ToJson(t.schema)}, {"target", t.target_name}};
    DBS_RETURN_IF_ERROR(nats_->Publish(bus::SubjectMeta(name, t.index), meta.dump()).status());
  }
  // The schema objects besides the tables (views, routines, triggers, ...): the writer that
  // swaps the tables in creates them, or the run report says why not.
  std::vector<TableSchema> described;
  for (const PlannedTable& t : tables) {
    if (t.selector.query.empty()) described.push_back(t.schema);
  }
  std::vector<SchemaObject> objects;
  if (config_.structure.objects) {
    auto described_objects = source->DescribeObjects(described);
    if (!described_objects.ok()) {
      return described_objects.status().WithContext("describing the schema objects");
    }
    objects = std::move(described_objects).value();
  }
  DBS_ASSIGN_OR_RETURN(const int object_parts, bus::PublishObjects(nats_, name, objects));
  // A fresh id per run scopes the writers' checkpoints in the target: bundle ids repeat from
  // run to run, applied-bundle records of an earlier run must not suppress this run's data.
  std::random_device rd;
  char run_id[17];
  std::snprintf(run_id, sizeof run_id, "%08x%08x", rd(), rd());
  json plan = {{"stream", name},
               {"run", run_id},
               {"tables", json::array()},
               {"position", snapshot->position().value},
               {"position_kind", static_cast<int>(snapshot->position().kind)},
               {"position_file", snapshot->position().file_pos},
               {"mode", std::string(StreamModeName(config_.mode))},
               {"engine", EngineName(config_.source.engine)},
               {"objectParts", object_parts}};
  for (const PlannedTable& t : tables) {
    plan["tables"].push_back({{"index", t.index},
                              {"name", t.schema.QualifiedName()},
                              {"schema", t.schema.schema},
                              {"table", t.schema.name}});
  }
  DBS_RETURN_IF_ERROR(nats_->Publish(bus::SubjectPlan(name), plan.dump()).status());
  Log(LogLevel::kInfo, "reader", "snapshot pinned",
      {F("stream", name), F("tables", tables.size()), F("chunks", tasks.size()),
       F("position", snapshot->position().value)});

  ReaderStats stats;
  stats.rows.assign(tables.size(), 0);
  stats.bundles.assign(tables.size(), 0);
  std::mutex mu;
  Status first_error;
  DBS_ASSIGN_OR_RETURN(const std::optional<security::DataCipher> cipher,
                       security::StreamCipher(config_.bus_encryption, config_.bus_key));
  const int64_t max_payload = nats_->max_payload();
  const size_t max_bytes =
      std::min<size_t>(static_cast<size_t>(max_payload) * 3 / 4, config_.bundle_bytes);
  EncodeOptions eo;
  eo.compression = config_.compression;

  BusWindow window(nats_, bus::JetStreamName(name), bus::WritersDurable(name),
                   bus::SubjectDataAll(name), options_.max_unacked_bytes);
  auto cancelled = [&] { return stop_.load(); };
  auto worker = [&](ReadProgress* progress) {
    std::string encoded;
    while (true) {
      Task task;
      {
        std::lock_guard<std::mutex> l(mu);
        if (tasks.empty() || !first_error.ok() || stop_.load()) return;
        task = tasks.front();
        tasks.pop_front();
      }
      const PlannedTable& t = *task.table;
      auto fail = [&](const Status& s) {
        std::lock_guard<std::mutex> l(mu);
        if (first_error.ok()) first_error = s.WithContext("reading " + t.schema.QualifiedName());
      };
      ReadSpec rs;
      rs.table = t.schema;
      rs.filter = t.selector.filter;
      rs.query = t.selector.query;
      rs.range = task.range;
      rs.limit = config_.limits.rows;
      // Same engine: PostgreSQL rows may travel as the source's COPY tuples (no decode here, no
      // encode in the writer); the writer decodes them itself when its table needs that.
      rs.pg_copy_rows =
          config_.source.engine == Engine::kPostgres && config_.target.engine == Engine::kPostgres;
      auto reader = snapshot->OpenReader(rs);
      if (!reader.ok()) return fail(reader.status());
      uint64_t seq = 0, rows = 0, bundles = 0;
      std::string sealed;
      bool more = true;
      while (more) {
        while (paused_.load() && !stop_.load()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        if (stop_.load()) return fail(Status::Cancelled("stopped"));
        Bundle b;
        for (const Column& c : t.schema.columns) b.columns.emplace_back(c.type, c.element_type);
        auto r = (*reader)->Next(&b, config_.bundle_size, max_bytes);
        progress->Skip(static_cast<size_t>(t.index), t.schema.QualifiedName(),
                       (*reader)->TakeSkipped());
        if (!r.ok()) return fail(r.status());
        more = *r;
        if (b.rows() == 0) continue;
        encoded.clear();
        Status s = EncodeBundle(b, eo, &encoded);
        if (!s.ok()) return fail(s);
        if (static_cast<int64_t>(encoded.size() + (cipher ? security::DataCipher::kOverhead : 0)) >
            max_payload - 1024) {
          return fail(Status::ResourceExhausted(
              "a bundle of " + std::to_string(b.rows()) + " row(s) is " +
              std::to_string(encoded.size()) + " bytes, over the NATS max_payload of " +
              std::to_string(max_payload) + ": raise max_payload on the NATS server"));
        }
        std::string id = std::to_string(t.index) + "." + std::to_string(task.chunk) + "." +
                         std::to_string(seq++);
        if (cipher) {
          cipher->Seal(security::BundleAd(id), encoded, &sealed);
          encoded.swap(sealed);
        }
        s = nats_->PublishAsync(bus::SubjectData(name, t.index), encoded, id,
                                {{bus::kHeaderBundleId, id},
                                 {bus::kHeaderTable, std::to_string(t.index)},
                                 {bus::kHeaderRows, std::to_string(b.rows())}});
        if (!s.ok()) return fail(s);
        window.Admit(encoded.size(), cancelled);
        rows += b.rows();
        ++bundles;
        progress->Add(static_cast<size_t>(t.index), b.rows(), encoded.size());
        std::lock_guard<std::mutex> l(mu);
        stats.bytes += encoded.size();
      }
      std::lock_guard<std::mutex> l(mu);
      stats.rows[static_cast<size_t>(t.index)] += rows;
      stats.bundles[static_cast<size_t>(t.index)] += bundles;
    }
  };
  {
    ReadProgress progress(nats_, name, tables.size());
    std::vector<std::thread> threads;
    int n = std::max(1, std::min<int>(config_.readers, static_cast<int>(tasks.size())));
    for (int i = 0; i < n; ++i) threads.emplace_back(worker, &progress);
    for (auto& th : threads) th.join();
    stats.skipped = progress.Skipped();
  }
  Status waited = nats_->WaitPublished(std::chrono::seconds(120));
  if (!first_error.ok()) return first_error;
  DBS_RETURN_IF_ERROR(waited);

  json done = {{"tables", json::array()}};
  for (const PlannedTable& t : tables) {
    json entry = {{"index", t.index},
                  {"rows", stats.rows[static_cast<size_t>(t.index)]},
                  {"bundles", stats.bundles[static_cast<size_t>(t.index)]}};
    const SkipReport& skipped = stats.skipped[static_cast<size_t>(t.index)];
    if (skipped.count > 0) {
      entry["skipped"] = ToJson(skipped);
      Log(LogLevel::kWarn, "reader", "malformed rows skipped",
          {F("stream", name), F("table", t.schema.QualifiedName()), F("rows", skipped.count)});
    }
    done["tables"].push_back(std::move(entry));
  }
  DBS_RETURN_IF_ERROR(nats_->Publish(bus::SubjectDone(name), done.dump(), "done").status());
  Log(LogLevel::kInfo, "reader", "snapshot published", {F("stream", name)});
  stats.position = snapshot->position();
  stats.tables = std::move(tables);
  return stats;
}

}  // namespace dbs

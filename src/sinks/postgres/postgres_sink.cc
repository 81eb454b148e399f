#include "sinks/postgres/postgres_sink.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/logging.h"
#include "postgres/pg_binary.h"
#include "postgres/pg_client.h"
#include "postgres/pg_decode.h"
#include "postgres/pg_types.h"
#include "sinks/change_plan.h"
#include "sinks/postgres/pg_encode.h"
#include "sinks/postgres/pg_objects.h"
#include "typemap/ddl.h"

namespace dbs {

namespace {

using pg::ConnPtr;
using pg::ResultPtr;

constexpr size_t kCopyFlushBytes = 1u << 20;  // send COPY data in pieces of about 1 MiB
constexpr char kCopyHeader[] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";  // signature, flags, ext
constexpr size_t kCopyHeaderLen = 19;
constexpr const char* kOrdColumn = "_dbs_ord";
// maintenance_work_mem for the keys and indexes built after a load, in kB (RaiseIndexBuildMemory);
// pgcopydb sets 1 GB on its target sessions.
constexpr int64_t kIndexBuildMemoryKb = 256 * 1024;

// Phases of a table in _dbstreams.dbstreams_state.
constexpr const char* kPhasePrepared = "prepared";
// Prepared, created without its primary key (added by FinishStream before the indexes).
constexpr const char* kPhasePreparedNoKey = "prepared-nokey";
constexpr const char* kPhaseIndexed = "indexed";
constexpr const char* kPhaseFinished = "finished";
// The run's own state row (tbl = ''): every shadow was swapped in, or the run was abandoned.
constexpr const char* kRunSwapped = "swapped";
constexpr const char* kRunFailed = "failed";
// How a table's shadow comes in (dbstreams_state.swap): "new" replaces or creates the table
// (ALTER TABLE ... SET SCHEMA), "copy" refills an existing table (TRUNCATE + INSERT ... SELECT).
constexpr const char* kSwapNew = "new";
constexpr const char* kSwapCopy = "copy";
// Test hook (tests/integration/fidelity_failed_run_test.cc): seconds to sleep inside the swap
// transaction, after every statement and before COMMIT, so a test can kill the writer there.
constexpr const char* kSwapPauseEnv = "DBS_TEST_SWAP_PAUSE_SECONDS";

const char kBookkeepingSql[] =
    "SELECT pg_advisory_xact_lock(hashtextextended('dbstreams/bookkeeping', 0)); "
    "CREATE SCHEMA IF NOT EXISTS _dbstreams; "
    "CREATE TABLE IF NOT EXISTS _dbstreams.dbstreams_state (stream text NOT NULL, "
    "  tbl text NOT NULL, phase text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now(), "
    "  PRIMARY KEY (stream, tbl)); "
    // Added by the shadow tables; ALTER only when missing (it locks out the table's readers).
    "DO $dbs$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = "
    "  '_dbstreams.dbstreams_state'::regclass AND attname = 'swap' AND NOT attisdropped) THEN "
    "  ALTER TABLE _dbstreams.dbstreams_state ADD COLUMN IF NOT EXISTS shadow text NOT NULL "
    "    DEFAULT '', ADD COLUMN IF NOT EXISTS swap text NOT NULL DEFAULT ''; "
    "END IF; END $dbs$; "
    "CREATE TABLE IF NOT EXISTS _dbstreams.applied (stream text NOT NULL, "
    "  bundle_id text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), "
    "  PRIMARY KEY (stream, bundle_id)); "
    "CREATE TABLE IF NOT EXISTS _dbstreams.cdc_checkpoint (stream text NOT NULL, "
    "  partition integer NOT NULL, seq bigint NOT NULL DEFAULT 0, "
    "  position_kind text NOT NULL DEFAULT '', position text NOT NULL DEFAULT '', "
    "  file_pos text NOT NULL DEFAULT '', updated_at timestamptz NOT NULL DEFAULT now(), "
    "  PRIMARY KEY (stream, partition)); "
    // What the swap did with the run's schema objects (ObjectOutcomes).
    "CREATE TABLE IF NOT EXISTS _dbstreams.report (stream text PRIMARY KEY, "
    "  objects text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())";
// State rows of the extensions a run created (tbl = kExtensionRow + name): a failed run drops
// them again.
constexpr const char* kExtensionRow = "#extension:";

Dialect DialectOf(Engine e) { return e == Engine::kMysql ? Dialect::kMysql : Dialect::kPostgres; }

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

// One column the sink writes.
struct TargetColumn {
  size_t source_index = 0;  // in the source TableSchema, i.e. the bundle's columns
  std::string name;
  std::string target_type;  // format_type of the target column
  uint32_t type_oid = 0;    // the target column's type
  pg::Encoder encoder;      // into the target type, or into stage_type when staged
  bool staged = false;
  std::string stage_type;
};

// What the sink knows about one target table.
struct TargetInfo {
  std::string schema;
  std::string name;
  std::string quoted;   // "schema"."name"
  std::string display;  // schema.name
  std::vector<TargetColumn> columns;
  std::vector<std::string> primary_key;
  std::vector<size_t> key_indexes;  // the primary key's columns in the bundles
  bool upsert = false;
  bool stage = false;  // COPY into a temp table, then INSERT ... SELECT
  std::string stage_name;
  bool stage_created = false;
  size_t source_columns = 0;  // columns of the source schema this was built for
  // CDC: session temp table the batch's row images are COPYed into (ApplyChanges).
  std::string cdc_stage_name;
  bool cdc_stage_created = false;
  bool cdc_stage_dirty = false;  // holds rows of an earlier step of this transaction
  // CDC: the server (15+) and the relation (a table without rules) take MERGE (RunKeyed).
  bool cdc_merge = false;
};

// "key (id)=(5)" for messages about a row; "bundle <id>, row <n>" when there is no key.
std::string RowName(const TargetInfo& target, const Bundle& b, size_t row, const std::string& id) {
  if (target.key_indexes.empty()) return "bundle " + id + ", row " + std::to_string(row + 1);
  std::string out = "key (" + Join(target.primary_key, ", ") + ")=(";
  for (size_t k = 0; k < target.key_indexes.size(); ++k) {
    if (k) out += ", ";
    out += b.columns[target.key_indexes[k]].Get(row).ToString();
  }
  return out + ")";
}

// A table's row in _dbstreams.dbstreams_state.
struct StateRow {
  std::string phase;
  std::string shadow;  // schema of the run's shadow copy; empty: written in place
  std::string swap;    // kSwapNew, kSwapCopy or empty
};

// Where a prepared table's rows go during the load.
struct Placement {
  std::string shadow;    // schema of the shadow copy; empty: the target table itself
  bool copy_in = false;  // the shadow refills an existing table at the swap (truncate_and_load)
};

// An attribute of an existing target table.
struct TargetAttr {
  std::string name;
  uint32_t type_oid = 0;
  std::string formatted;
  bool generated = false;
  bool not_null = false;
  bool has_default = false;
};

class PostgresSink : public Sink {
 public:
  PostgresSink(ConnectionConfig config, SinkOptions options, ConnPtr conn, bool postgis)
      : config_(std::move(config)),
        options_(std::move(options)),
        conn_(std::move(conn)),
        postgis_(postgis) {}

  Status PrepareRun() override;
  Result<TableDdlPlan> PlanTable(const TableSchema& source_table) override;
  std::vector<ObjectOutcome> PlanObjects(const std::vector<TableSchema>& tables,
                                         const std::vector<SchemaObject>& objects) override;
  Result<std::vector<ObjectOutcome>> ObjectOutcomes() override;
  Result<TargetTable> PrepareTable(const TableSchema& source_table) override;
  Result<size_t> Apply(const std::vector<BundleRef>& bundles) override;
  Status FinishStream(const std::vector<TableSchema>& tables) override;
  Status ForgetStream() override;
  Result<std::vector<std::string>> AbandonStream(bool keep_partial) override;
  Result<CdcCheckpoint> ReadCdcCheckpoint(int partition) override;
  Result<size_t> ApplyChanges(const ChangeBatch& batch) override;
  Status AddColumns(const TableSchema& new_schema, const std::vector<std::string>& added) override;

 private:
  PGconn* conn() { return conn_.get(); }
  // Reconnects after a lost connection (session state such as temp tables is gone then).
  Status EnsureConnected();
  Status EnsureBookkeeping();
  // Runs `body` in a transaction that holds the lock of (stream, table); rolls back on error.
  template <typename Fn>
  Status Locked(const std::string& display, Fn&& body);
  Result<std::optional<StateRow>> State(const std::string& display);
  // Every state row of this run, by table display name (the run's own row under "").
  Result<std::map<std::string, StateRow>> RunState();
  Status SetPhase(const std::string& display, const char* phase, const Placement& placement = {});
  // Inside a transaction: the run's exclusive lock (the key of Locked("")).
  Status LockRun();
  // True when `s` (a failed statement) is NotFound because another writer of the run dropped
  // the bookkeeping meanwhile; call after rolling back.
  bool BookkeepingDroppedMeanwhile(const Status& s);
  // Once per sink: drops what earlier runs of the same stream left (shadow schemas of runs that
  // never swapped, state rows, applied-bundle records), so they can neither be swapped in nor
  // make this run skip a bundle.
  Status DropStaleRuns();
  // The schema holding this run's shadow copies of tables in target schema `schema`.
  std::string ShadowSchema(const std::string& schema) const;
  // Swaps every shadow of the run in, in one transaction, once (FinishStream's last step):
  // MoveNewTablesIn, RefillTables, AddRefilledForeignKeys, then the shadow schemas go.
  Status SwapIn(const std::vector<TableSchema>& tables);
  // Inside the swap: drops the old tables of drop_and_recreate (AlreadyExists for a table that
  // appeared under another policy), then moves the 'new' copies into their target schemas.
  Status MoveNewTablesIn(const std::vector<const TableSchema*>& fresh);
  // Inside the swap: empties the 'copy' tables together and fills them from their copies,
  // referenced tables first, then their sequences, indexes and checks.
  Status RefillTables(const std::vector<const TableSchema*>& copies,
                      std::vector<std::string>* warnings);
  // Inside the swap: the foreign keys from or to refilled tables (pass 2 left them).
  Status AddRefilledForeignKeys(const std::vector<TableSchema>& tables,
                                const std::vector<const TableSchema*>& copies,
                                const std::map<std::string, StateRow>& state,
                                std::vector<std::string>* warnings);
  // Drops _dbstreams when it holds nothing but this run's rows (a failed run into a target
  // that had no bookkeeping before).
  Status DropBookkeepingIfOnlyOurs();
  // Inside the swap: creates the run's schema objects (pg_objects.h) and records what became
  // of each in _dbstreams.report.
  Status CreateObjectsAndReport(const std::vector<TableSchema>& tables);
  // The statements that create t in in_schema (CreateTable runs them).
  Result<std::vector<std::string>> TableSql(const TableSchema& t, const std::string& in_schema,
                                            bool defer_key,
                                            std::vector<std::string>* warnings) const;

  std::string TargetSchema(const TableSchema& t) const {
    return options_.target_schema.empty() ? t.schema : options_.target_schema;
  }
  static std::string Key(const TableSchema& t) { return t.schema + '\x1f' + t.name; }
  // DDL options for table t; in_schema: where the table is (a shadow schema), else its target
  // schema.
  DdlOptions Ddl(const TableSchema& t, std::vector<std::string>* warnings,
                 const std::string& in_schema = "") const;
  Dialect source_dialect() const { return DialectOf(options_.source_engine); }

  Result<std::vector<TargetAttr>> ReadAttrs(const std::string& quoted);
  Result<uint32_t> TypeOid(const std::string& type_sql);
  // Builds how the source table's columns are written into the existing table `schema`.name.
  Result<TargetInfo> LoadTarget(const TableSchema& t, const std::string& schema);
  // The target table of t; load: the run's shadow copy when the table has one (Apply).
  Result<TargetInfo*> Target(const TableSchema& t, bool load = false);

  // *deferred_key: the table was created without its primary key (see CreateTable).
  // shadows: tables created or refilled by this run go into shadow copies (*placement).
  Status ApplyPolicy(const TableSchema& t, std::vector<std::string>* warnings, bool* deferred_key,
                     bool shadows, Placement* placement);
  // In the current transaction: raises maintenance_work_mem to kIndexBuildMemoryKb for the primary
  // keys and indexes built after a load, when the server's setting is lower (never lowers it).
  // The server's default (64 MB) makes a few million rows' key sort spill to disk.
  Status RaiseIndexBuildMemory();
  // Autovacuum off (`on` false) for t's shadow copy in schema `shadow` while the load fills it,
  // back on (the server's defaults) before it is swapped in. Without this, the server starts a
  // vacuum of the half-loaded copy (insert thresholds), and the primary key built after the
  // load waits for it to be cancelled (deadlock_timeout, 1 s by default).
  // copy_in: the copy of a table refilled at the swap (Placement::copy_in).
  Status SetShadowAutovacuum(const TableSchema& t, const std::string& shadow, bool on,
                             bool copy_in);
  // Creates t in `in_schema` (its target schema or a shadow schema); enum types go into the
  // target schema.
  Status CreateTable(const TableSchema& t, const std::string& in_schema, bool defer_key,
                     std::vector<std::string>* warnings);
  // Foreign key statement of t (in schema in_schema) referencing its table in ref_in_schema.
  Result<std::string> ForeignKeySql(const TableSchema& t, const ForeignKey& fk,
                                    const std::string& in_schema, const std::string& ref_in_schema,
                                    std::vector<std::string>* warnings) const;
  // Whether to add fk to table `quoted`: false with a warning when the referenced table is not
  // in the target, false when the table has a constraint of that name already.
  Result<bool> ShouldAddForeignKey(const std::string& quoted, const ForeignKey& fk,
                                   const std::string& ref_quoted, const std::string& display,
                                   const std::string& ref, std::vector<std::string>* warnings);
  // The target display name ("schema.table") of the table fk references.
  std::string RefDisplay(const TableSchema& t, const ForeignKey& fk) const;
  // Pass 1 statements of FinishStream for t in in_schema: primary key (when deferred),
  // sequences, indexes, checks.
  Result<std::vector<std::string>> StructureSql(const TableSchema& t, const std::string& in_schema,
                                                bool add_key, std::vector<std::string>* warnings);
  Status EnsureSchema(const std::string& schema);
  Status Validate(const TableSchema& t, const std::string& quoted);
  Status CheckUpsertKey(const TableSchema& t, const std::string& quoted);

  // Writes the bundles' rows; a failure names the target table and, when the server says
  // which COPY line failed, the source table, column and primary key of that row (RowError).
  Status WriteTable(TargetInfo* target, const std::vector<const BundleRef*>& bundles);
  Status WriteRows(TargetInfo* target, const std::vector<const BundleRef*>& bundles);
  // `s` with the sink's internal names (staging tables, the shadow schema) replaced by the
  // target table, and the COPY line it names as the source row.
  Status RowError(const Status& s, const TargetInfo& target,
                  const std::vector<const BundleRef*>& bundles) const;
  Status CopyRows(const TargetInfo& target, const std::string& copy_sql,
                  const std::vector<const BundleRef*>& bundles, bool with_ord);
  // Bundles of COPY tuples (Bundle::pg_copy) that TakesCopyTuples accepted, sent as they are.
  Status CopyTuples(const TargetInfo& target, const std::string& copy_sql,
                    const std::vector<const BundleRef*>& bundles);
  // Ends a COPY started with copy_sql: aborts it when `failed`, else returns the server's verdict.
  Status EndCopy(Status failed, const std::string& ctx);
  Status Flush(const std::string& display);

  // --- CDC (ApplyChanges) ---
  Status EnsureReplicaRole();
  Status EnsureCdcStage(TargetInfo* target);
  Status RunStep(const cdc::Step& step, TargetInfo* target);
  Status RunKeyed(const cdc::Step& step, TargetInfo* target);
  Status CopyImages(TargetInfo* target, const std::vector<const cdc::Image*>& images,
                    const std::vector<std::pair<int16_t, int32_t>>& tags);
  // Encodes a cell as one binary parameter (nullopt: NULL) for column `tc`.
  Result<std::optional<std::string>> Param(const TargetInfo& target, const TargetColumn& tc,
                                           const cdc::Cell& cell);
  // "$n::type" (staged columns: "$n::stage_type::target_type").
  static std::string ParamExpr(const TargetColumn& tc, size_t n);
  Status ExecBinary(const std::string& sql, const std::vector<std::optional<std::string>>& params,
                    const std::string& context);

  const ConnectionConfig config_;
  const SinkOptions options_;
  ConnPtr conn_;
  const bool postgis_;
  bool bookkeeping_ready_ = false;
  pg::TypeCache types_;
  std::unordered_map<std::string, uint32_t> type_oids_;
  std::map<std::string, TargetInfo> targets_;   // by Key(t); "L" + Key(t): shadow copies
  std::map<std::string, Placement> placement_;  // by Key(t), learned in PrepareTable
  bool stale_dropped_ = false;
  int stage_counter_ = 0;
  std::string copy_buf_;
  bool replica_role_tried_ = false;
};

Status PostgresSink::EnsureConnected() {
  if (conn_ && PQstatus(conn_.get()) == CONNECTION_OK) return Status::Ok();
  DBS_ASSIGN_OR_RETURN(conn_, pg::Connect(config_));
  for (auto& [key, t] : targets_) {
    t.stage_created = false;
    t.cdc_stage_created = false;
  }
  replica_role_tried_ = false;
  return Status::Ok();
}

Status PostgresSink::EnsureBookkeeping() {
  DBS_RETURN_IF_ERROR(EnsureConnected());
  if (bookkeeping_ready_) return Status::Ok();
  Status s = pg::Command(conn(), std::string("BEGIN; ") + kBookkeepingSql + "; COMMIT",
                         "creating the _dbstreams bookkeeping tables");
  if (!s.ok()) {
    pg::RollbackQuietly(conn());
    return s;
  }
  bookkeeping_ready_ = true;
  return Status::Ok();
}

template <typename Fn>
Status PostgresSink::Locked(const std::string& display, Fn&& body) {
  DBS_RETURN_IF_ERROR(EnsureBookkeeping());
  Status s = pg::Command(conn(), "BEGIN", "starting a transaction");
  if (s.ok()) {
    s = pg::ExecParams(conn(), "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                       {"dbstreams/" + options_.stream + "/" + display}, "locking " + display)
            .status();
  }
  if (s.ok()) s = body();
  if (s.ok()) s = pg::Command(conn(), "COMMIT", "committing " + display);
  if (!s.ok()) pg::RollbackQuietly(conn());
  return s;
}

Result<std::optional<StateRow>> PostgresSink::State(const std::string& display) {
  DBS_ASSIGN_OR_RETURN(
      ResultPtr res, pg::ExecParams(conn(),
                                    "SELECT phase, shadow, swap FROM _dbstreams.dbstreams_state "
                                    "WHERE stream = $1 AND tbl = $2",
                                    {options_.stream, display}, "reading the state of " + display));
  if (PQntuples(res.get()) == 0) return std::optional<StateRow>();
  return std::optional<StateRow>(StateRow{std::string(pg::Text(res.get(), 0, 0)),
                                          std::string(pg::Text(res.get(), 0, 1)),
                                          std::string(pg::Text(res.get(), 0, 2))});
}

Result<std::map<std::string, StateRow>> PostgresSink::RunState() {
  DBS_ASSIGN_OR_RETURN(ResultPtr res,
                       pg::ExecParams(conn(),
                                      "SELECT tbl, phase, shadow, swap FROM "
                                      "_dbstreams.dbstreams_state WHERE stream = $1",
                                      {options_.stream}, "reading the state of the run"));
  std::map<std::string, StateRow> out;
  for (int r = 0; r < PQntuples(res.get()); ++r) {
    out[std::string(pg::Text(res.get(), r, 0))] =
        StateRow{std::string(pg::Text(res.get(), r, 1)), std::string(pg::Text(res.get(), r, 2)),
                 std::string(pg::Text(res.get(), r, 3))};
  }
  return out;
}

Status PostgresSink::SetPhase(const std::string& display, const char* phase,
                              const Placement& placement) {
  const std::string swap =
      placement.shadow.empty() ? "" : (placement.copy_in ? kSwapCopy : kSwapNew);
  return pg::ExecParams(conn(),
                        "INSERT INTO _dbstreams.dbstreams_state (stream, tbl, phase, shadow, swap) "
                        "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (stream, tbl) "
                        "DO UPDATE SET phase = EXCLUDED.phase, updated_at = now()",
                        {options_.stream, display, std::string(phase), placement.shadow, swap},
                        "recording the state of " + (display.empty() ? "the run" : display))
      .status();
}

Status PostgresSink::LockRun() {
  return pg::ExecParams(conn(), "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                        {"dbstreams/" + options_.stream + "/"}, "locking the run")
      .status();
}

std::string PostgresSink::ShadowSchema(const std::string& schema) const {
  // FNV-1a over run and schema: one shadow schema per run and target schema, so the shadow
  // tables keep their target names (and index and constraint names: those are per schema).
  uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : options_.stream + '\x1f' + schema) h = (h ^ ch) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string("_dbs_shadow_") + hex;
}

DdlOptions PostgresSink::Ddl(const TableSchema& t, std::vector<std::string>* warnings,
                             const std::string& in_schema) const {
  DdlOptions o;
  o.target_schema = in_schema.empty() ? TargetSchema(t) : in_schema;
  ApplyTypeMapping(options_.type_mapping, postgis_, /*target_has_native_types=*/false, &o);
  o.if_not_exists = true;  // existence is decided under the lock; this only tolerates races
  o.warnings = warnings;
  return o;
}

Result<std::vector<TargetAttr>> PostgresSink::ReadAttrs(const std::string& quoted) {
  DBS_ASSIGN_OR_RETURN(
      ResultPtr res,
      pg::ExecParams(conn(),
                     "SELECT a.attname, a.atttypid, format_type(a.atttypid, a.atttypmod), "
                     "  a.attgenerated <> '', a.attnotnull, a.atthasdef OR a.attidentity <> '' "
                     "FROM pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 "
                     "  AND NOT a.attisdropped ORDER BY a.attnum",
                     {quoted}, "reading the columns of " + quoted));
  std::vector<TargetAttr> out;
  std::vector<uint32_t> oids;
  for (int r = 0; r < PQntuples(res.get()); ++r) {
    TargetAttr a;
    a.name = pg::Text(res.get(), r, 0);
    a.type_oid = static_cast<uint32_t>(pg::Int(res.get(), r, 1));
    a.formatted = pg::Text(res.get(), r, 2);
    a.generated = pg::Bool(res.get(), r, 3);
    a.not_null = pg::Bool(res.get(), r, 4);
    a.has_default = pg::Bool(res.get(), r, 5);
    oids.push_back(a.type_oid);
    out.push_back(std::move(a));
  }
  DBS_RETURN_IF_ERROR(types_.Load(conn(), oids));
  return out;
}

Result<uint32_t> PostgresSink::TypeOid(const std::string& type_sql) {
  auto it = type_oids_.find(type_sql);
  if (it != type_oids_.end()) return it->second;
  DBS_ASSIGN_OR_RETURN(ResultPtr res, pg::ExecParams(conn(), "SELECT $1::regtype::oid", {type_sql},
                                                     "looking up type " + type_sql));
  const uint32_t oid = static_cast<uint32_t>(pg::Int(res.get(), 0, 0));
  DBS_RETURN_IF_ERROR(types_.Load(conn(), {oid}));
  type_oids_[type_sql] = oid;
  return oid;
}

Result<TargetInfo> PostgresSink::LoadTarget(const TableSchema& t, const std::string& schema) {
  TargetInfo info;
  info.schema = schema;
  info.name = t.name;
  info.quoted = pg::QualifiedName(info.schema, info.name);
  info.display = TargetSchema(t) + "." + info.name;  // messages name the target table
  info.source_columns = t.columns.size();
  info.upsert = options_.write_mode == WriteMode::kUpsert;
  info.primary_key = t.primary_key;
  for (const std::string& k : t.primary_key) {
    const int i = t.FindColumn(k);
    if (i >= 0) info.key_indexes.push_back(static_cast<size_t>(i));
  }
  DBS_ASSIGN_OR_RETURN(std::vector<TargetAttr> attrs, ReadAttrs(info.quoted));
  if (attrs.empty()) {
    if (schema != TargetSchema(t)) {
      return Status::NotFound("the shadow copy " + schema + "." + info.name + " of target table " +
                              info.display + " does not exist (the run was abandoned)");
    }
    return Status::NotFound("target table " + info.display + " does not exist");
  }
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const Column& c = t.columns[i];
    auto a = std::find_if(attrs.begin(), attrs.end(),
                          [&](const TargetAttr& x) { return x.name == c.name; });
    if (a == attrs.end()) {
      return Status::FailedPrecondition("target table " + info.display + " has no column " +
                                        c.name);
    }
    if (a->generated) continue;
    TargetColumn tc;
    tc.source_index = i;
    tc.name = c.name;
    tc.target_type = a->formatted;
    tc.type_oid = a->type_oid;
    const pg::TypeInfo* base = types_.Base(a->type_oid);
    std::optional<pg::Encoder> enc;
    if (base != nullptr) enc = pg::ChooseEncoder(c.type, c.element_type, *base, types_);
    if (!enc) {
      tc.staged = true;
      tc.stage_type = pg::StageType(c.type, c.element_type);
      DBS_ASSIGN_OR_RETURN(uint32_t stage_oid, TypeOid(tc.stage_type));
      const pg::TypeInfo* sb = types_.Base(stage_oid);
      if (sb != nullptr) enc = pg::ChooseEncoder(c.type, c.element_type, *sb, types_);
      if (!enc) {
        return Status::Internal("no encoder for " + std::string(LogicalTypeName(c.type)) +
                                " into " + tc.stage_type);
      }
      info.stage = true;
    }
    tc.encoder = *enc;
    info.columns.push_back(std::move(tc));
  }
  if (info.columns.empty()) {
    return Status::FailedPrecondition("no column of " + info.display + " can be written");
  }
  if (info.upsert) info.stage = true;
  if (info.stage)
    info.stage_name = pg::QuoteIdent("_dbs_stage_" + std::to_string(++stage_counter_));
  return info;
}

Result<TargetInfo*> PostgresSink::Target(const TableSchema& t, bool load) {
  std::string schema = TargetSchema(t);
  std::string key = Key(t);
  if (load) {
    auto p = placement_.find(Key(t));
    if (p != placement_.end() && !p->second.shadow.empty()) {
      schema = p->second.shadow;
      key = "L" + key;
    }
  }
  auto it = targets_.find(key);
  if (it != targets_.end() && it->second.source_columns == t.columns.size()) return &it->second;
  DBS_ASSIGN_OR_RETURN(TargetInfo info, LoadTarget(t, schema));
  return &(targets_[key] = std::move(info));
}

Result<std::vector<std::string>> PostgresSink::TableSql(const TableSchema& t,
                                                        const std::string& in_schema,
                                                        bool defer_key,
                                                        std::vector<std::string>* warnings) const {
  DdlOptions o = Ddl(t, warnings, in_schema);
  o.defer_primary_key = defer_key;
  const Dialect src = source_dialect();
  // The schemas were created before (EnsureSchema, ApplyPolicy). Unqualified enum types land
  // in the target schema, also for a shadow copy: its columns keep referring to them after
  // the swap.
  std::vector<std::string> stmts = {"SET LOCAL search_path = " + pg::QuoteIdent(TargetSchema(t)) +
                                    ", public"};
  DBS_ASSIGN_OR_RETURN(std::vector<std::string> pre,
                       PrepareTableSql(t, Dialect::kPostgres, src, o));
  DBS_ASSIGN_OR_RETURN(std::string create, CreateTableSql(t, Dialect::kPostgres, src, o));
  DBS_ASSIGN_OR_RETURN(std::vector<std::string> post,
                       FinishTableSql(t, Dialect::kPostgres, src, o));
  stmts.insert(stmts.end(), pre.begin(), pre.end());
  stmts.push_back(create);
  // Partitions (same engine): beside their parent, sub-partitions after theirs.
  if (source_dialect() == Dialect::kPostgres && !t.partition_by.empty()) {
    for (const Partition& p : t.partitions) {
      const std::string parent_name = p.parent.substr(p.parent.find('.') + 1);
      const std::string where = "partition " + p.schema + "." + p.name + " of " + t.QualifiedName();
      DBS_RETURN_IF_ERROR(CheckIdentifier(p.name, Dialect::kPostgres).WithContext(where));
      DBS_RETURN_IF_ERROR(CheckSqlFragment(p.bound, Dialect::kPostgres, "bound of " + where));
      // The parent is the table itself (under its target name) or a sub-partitioned partition.
      bool sub = false;
      for (const Partition& q : t.partitions) sub = sub || q.schema + "." + q.name == p.parent;
      std::string sql =
          "CREATE TABLE " + pg::QualifiedName(o.target_schema, p.name) + " PARTITION OF " +
          pg::QualifiedName(o.target_schema, sub ? parent_name : t.name) + " " + p.bound;
      if (!p.partition_by.empty()) {
        DBS_RETURN_IF_ERROR(
            CheckSqlFragment(p.partition_by, Dialect::kPostgres, "partitioning of " + where));
        sql += " PARTITION BY " + p.partition_by;
      }
      stmts.push_back(std::move(sql));
    }
  }
  stmts.insert(stmts.end(), post.begin(), post.end());
  return stmts;
}

Status PostgresSink::CreateTable(const TableSchema& t, const std::string& in_schema, bool defer_key,
                                 std::vector<std::string>* warnings) {
  DBS_ASSIGN_OR_RETURN(std::vector<std::string> stmts, TableSql(t, in_schema, defer_key, warnings));
  const std::string ctx = "creating table " + in_schema + "." + t.name;
  for (const std::string& s : stmts) DBS_RETURN_IF_ERROR(pg::Command(conn(), s, ctx));
  return Status::Ok();
}

Status PostgresSink::RaiseIndexBuildMemory() {
  return pg::Command(conn(),
                     "SELECT set_config('maintenance_work_mem', '" +
                         std::to_string(kIndexBuildMemoryKb) +
                         "kB', true) FROM pg_settings WHERE name = 'maintenance_work_mem' AND "
                         "setting::bigint < " +
                         std::to_string(kIndexBuildMemoryKb),
                     "raising maintenance_work_mem for the index builds");
}

Status PostgresSink::SetShadowAutovacuum(const TableSchema& t, const std::string& shadow, bool on,
                                         bool copy_in) {
  // A partitioned copy (TableSql: same engine only; a copy_in one is made by CREATE TABLE ...
  // LIKE, never partitioned) takes no storage parameters: its leaf partitions, which hold the
  // rows, take them.
  std::vector<std::string> names;
  if (!copy_in && source_dialect() == Dialect::kPostgres && !t.partition_by.empty()) {
    for (const Partition& p : t.partitions) {
      if (p.partition_by.empty()) names.push_back(p.name);
    }
  } else {
    names.push_back(t.name);
  }
  for (const std::string& name : names) {
    DBS_RETURN_IF_ERROR(pg::Command(
        conn(),
        "ALTER TABLE " + pg::QualifiedName(shadow, name) +
            (on ? " RESET (autovacuum_enabled, toast.autovacuum_enabled)"
                : " SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)"),
        (on ? "turning autovacuum back on for " : "turning autovacuum off for ") + shadow + "." +
            name));
  }
  return Status::Ok();
}

Status PostgresSink::Validate(const TableSchema& t, const std::string& quoted) {
  const std::string display = TargetSchema(t) + "." + t.name;
  DBS_ASSIGN_OR_RETURN(std::vector<TargetAttr> attrs, ReadAttrs(quoted));
  std::vector<std::string> diffs;
  std::set<std::string> source_names;
  for (const Column& c : t.columns) {
    source_names.insert(c.name);
    auto a = std::find_if(attrs.begin(), attrs.end(),
                          [&](const TargetAttr& x) { return x.name == c.name; });
    if (a == attrs.end()) {
      diffs.push_back("column " + c.name + " is missing");
      continue;
    }
    if (a->generated) continue;
    const pg::TypeInfo* base = types_.Base(a->type_oid);
    if (base != nullptr && pg::ChooseEncoder(c.type, c.element_type, *base, types_)) continue;
    // No direct encoding: the staged value must cast to the target type.
    const std::string stage = pg::StageType(c.type, c.element_type);
    DBS_RETURN_IF_ERROR(pg::Command(conn(), "SAVEPOINT dbs_probe", "validating " + display));
    Status cast = pg::Command(conn(), "SELECT CAST(NULL::" + stage + " AS " + a->formatted + ")",
                              "probing a cast");
    DBS_RETURN_IF_ERROR(pg::Command(
        conn(), cast.ok() ? "RELEASE SAVEPOINT dbs_probe" : "ROLLBACK TO SAVEPOINT dbs_probe",
        "validating " + display));
    if (!cast.ok()) {
      diffs.push_back("column " + c.name + " is " + a->formatted + ", which cannot hold " +
                      std::string(LogicalTypeName(c.type)) + " values (source type " +
                      c.source_type + ")");
    }
  }
  for (const TargetAttr& a : attrs) {
    if (!source_names.count(a.name) && a.not_null && !a.has_default && !a.generated) {
      diffs.push_back("column " + a.name +
                      " is NOT NULL without a default and the source does not fill it");
    }
  }
  if (diffs.empty()) return Status::Ok();
  return Status::FailedPrecondition("table " + display +
                                    " does not match the source (schema policy "
                                    "validate_existing): " +
                                    Join(diffs, "; "));
}

Status PostgresSink::CheckUpsertKey(const TableSchema& t, const std::string& quoted) {
  const std::string display = TargetSchema(t) + "." + t.name;
  if (t.primary_key.empty()) {
    return Status::FailedPrecondition("write mode upsert needs a primary key, and source table " +
                                      t.QualifiedName() + " has none");
  }
  std::vector<std::string> key = t.primary_key;
  std::sort(key.begin(), key.end());
  DBS_ASSIGN_OR_RETURN(
      ResultPtr res,
      pg::ExecParams(
          conn(),
          "SELECT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = to_regclass($1) "
          "  AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL "
          "  AND ARRAY(SELECT a.attname::text COLLATE \"C\" FROM unnest(i.indkey::int2[]) k "
          "    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k "
          "    ORDER BY 1) = $2::text[])",
          {quoted, pg::TextArrayLiteral(key)}, "checking the key of " + display));
  if (!pg::Bool(res.get(), 0, 0)) {
    return Status::FailedPrecondition("write mode upsert needs a primary key or unique index on (" +
                                      Join(t.primary_key, ", ") + ") in target table " + display);
  }
  return Status::Ok();
}

Status PostgresSink::ApplyPolicy(const TableSchema& t, std::vector<std::string>* warnings,
                                 bool* deferred_key, bool shadows, Placement* placement) {
  *deferred_key = false;
  *placement = Placement();
  const std::string schema = TargetSchema(t);
  const std::string quoted = pg::QualifiedName(schema, t.name);
  const std::string display = schema + "." + t.name;
  DBS_ASSIGN_OR_RETURN(ResultPtr res, pg::ExecParams(conn(), "SELECT to_regclass($1) IS NOT NULL",
                                                     {quoted}, "looking up " + display));
  bool exists = pg::Bool(res.get(), 0, 0);
  bool created = false;
  auto create = [&]() -> Status {
    if (!options_.structure.tables) {
      return Status::NotFound("target table " + display +
                              " does not exist and creating tables is turned off");
    }
    created = true;
    // A table of our own making gets its primary key after the load, unless the writes need
    // it (upsert); the applied-bundle records, not the key, keep the load exactly-once.
    *deferred_key = options_.defer_primary_key && options_.write_mode != WriteMode::kUpsert &&
                    !t.primary_key.empty();
    if (!shadows) return CreateTable(t, schema, *deferred_key, warnings);
    // The run's own copy; SwapIn moves it into the target schema once everything is in.
    placement->shadow = ShadowSchema(schema);
    DBS_RETURN_IF_ERROR(
        pg::Command(conn(), "CREATE SCHEMA IF NOT EXISTS " + pg::QuoteIdent(placement->shadow),
                    "creating the shadow schema of " + display));
    DBS_RETURN_IF_ERROR(CreateTable(t, placement->shadow, *deferred_key, warnings));
    return SetShadowAutovacuum(t, placement->shadow, false, /*copy_in=*/false);
  };
  switch (options_.schema_policy) {
    case SchemaPolicy::kFailIfExists:
      if (exists) {
        return Status::AlreadyExists("target table " + display +
                                     " already exists (schema policy fail_if_exists)");
      }
      DBS_RETURN_IF_ERROR(create());
      break;
    case SchemaPolicy::kCreateMissing:
      if (!exists) DBS_RETURN_IF_ERROR(create());
      break;
    case SchemaPolicy::kDropAndRecreate:
      // With shadows the old table stays until SwapIn replaces it.
      if (exists && !shadows) {
        DBS_RETURN_IF_ERROR(
            pg::Command(conn(), "DROP TABLE " + quoted + " CASCADE", "dropping " + display));
      }
      DBS_RETURN_IF_ERROR(create());
      break;
    case SchemaPolicy::kValidateExisting:
      if (!exists) {
        return Status::NotFound("target table " + display +
                                " does not exist (schema policy validate_existing)");
      }
      DBS_RETURN_IF_ERROR(Validate(t, quoted));
      break;
  }
  switch (options_.write_mode) {
    case WriteMode::kAppend:
      break;
    case WriteMode::kTruncateAndLoad:
      if (!created && !shadows) {
        DBS_RETURN_IF_ERROR(pg::Command(conn(), "TRUNCATE " + quoted, "truncating " + display));
      } else if (!created) {
        // The table stays (its grants, triggers, dependent views and foreign keys with it);
        // SwapIn empties it and copies the shadow in, in its one transaction.
        placement->shadow = ShadowSchema(schema);
        placement->copy_in = true;
        DBS_RETURN_IF_ERROR(
            pg::Command(conn(), "CREATE SCHEMA IF NOT EXISTS " + pg::QuoteIdent(placement->shadow),
                        "creating the shadow schema of " + display));
        DBS_RETURN_IF_ERROR(
            pg::Command(conn(),
                        "CREATE TABLE " + pg::QualifiedName(placement->shadow, t.name) + " (LIKE " +
                            quoted + " INCLUDING DEFAULTS INCLUDING GENERATED)",
                        "creating the shadow copy of " + display));
        DBS_RETURN_IF_ERROR(SetShadowAutovacuum(t, placement->shadow, false, /*copy_in=*/true));
      }
      break;
    case WriteMode::kFailIfNotEmpty:
      if (!created) {
        DBS_ASSIGN_OR_RETURN(ResultPtr rows,
                             pg::Exec(conn(), "SELECT EXISTS (SELECT 1 FROM " + quoted + ")",
                                      "checking whether " + display + " is empty"));
        if (pg::Bool(rows.get(), 0, 0)) {
          return Status::FailedPrecondition("target table " + display +
                                            " is not empty (write mode fail_if_not_empty)");
        }
      }
      break;
    case WriteMode::kUpsert:
      DBS_RETURN_IF_ERROR(CheckUpsertKey(t, quoted));
      break;
  }
  return Status::Ok();
}

Status PostgresSink::EnsureSchema(const std::string& schema) {
  // CREATE SCHEMA IF NOT EXISTS is not safe against a concurrent creator (two writers preparing
  // two tables of one schema): the loser fails with a unique violation. It runs in its own
  // transaction, so the retry starts a new one that sees the winner's schema.
  Status s;
  for (int attempt = 0; attempt < 3; ++attempt) {
    s = pg::Command(conn(), "CREATE SCHEMA IF NOT EXISTS " + pg::QuoteIdent(schema),
                    "creating schema " + schema);
    if (s.ok() || s.message().find("23505") == std::string::npos) return s;
  }
  return s;
}

Result<TargetTable> PostgresSink::PrepareTable(const TableSchema& source_table) {
  TargetTable out;
  out.schema = TargetSchema(source_table);
  out.name = source_table.name;
  const std::string display = out.schema + "." + out.name;
  if (options_.structure.tables) {
    Status es = EnsureSchema(out.schema);
    if (!es.ok()) return es.WithContext("preparing target table " + display);
  }
  Status s = DropStaleRuns();
  if (s.ok()) {
    s = Locked(display, [&]() -> Status {
      // Preparations of one run are serialized: shadow schemas are created without races, and
      // none after the run was swapped in or abandoned.
      DBS_RETURN_IF_ERROR(LockRun());
      DBS_ASSIGN_OR_RETURN(std::optional<StateRow> run, State(""));
      if (run && run->phase == kRunFailed) {
        return Status::Aborted("the run failed; its tables are not prepared again")
            .WithRetry(Retry::kFail);
      }
      DBS_ASSIGN_OR_RETURN(std::optional<StateRow> row, State(display));
      const bool swapped = run && run->phase == kRunSwapped;
      if (row) {  // another writer applied the policy
        placement_[Key(source_table)] =
            swapped ? Placement() : Placement{row->shadow, row->swap == kSwapCopy};
        return Status::Ok();
      }
      bool deferred_key = false;
      Placement placement;
      // A table first met after the swap (never in a load) is written in place.
      const bool shadows = options_.shadow_tables && !swapped;
      DBS_RETURN_IF_ERROR(
          ApplyPolicy(source_table, &out.warnings, &deferred_key, shadows, &placement));
      placement_[Key(source_table)] = placement;
      return SetPhase(display, deferred_key ? kPhasePreparedNoKey : kPhasePrepared, placement);
    });
  }
  if (!s.ok()) return s.WithContext("preparing target table " + display);
  targets_.erase(Key(source_table));
  targets_.erase("L" + Key(source_table));
  auto target = Target(source_table, /*load=*/true);
  if (!target.ok()) return target.status().WithContext("preparing target table " + display);
  return out;
}

Status PostgresSink::Flush(const std::string& display) {
  if (copy_buf_.empty()) return Status::Ok();
  if (PQputCopyData(conn(), copy_buf_.data(), static_cast<int>(copy_buf_.size())) != 1) {
    return pg::ErrorStatus(conn(), nullptr, "writing " + display);
  }
  copy_buf_.clear();
  return Status::Ok();
}

Status PostgresSink::CopyRows(const TargetInfo& target, const std::string& copy_sql,
                              const std::vector<const BundleRef*>& bundles, bool with_ord) {
  const std::string ctx = "writing " + target.display;
  ResultPtr start(PQexec(conn(), copy_sql.c_str()));
  if (PQresultStatus(start.get()) != PGRES_COPY_IN) {
    return pg::ErrorStatus(conn(), start.get(), ctx);
  }
  copy_buf_.clear();
  copy_buf_.append(kCopyHeader, kCopyHeaderLen);
  const uint16_t nfields = static_cast<uint16_t>(target.columns.size() + (with_ord ? 1 : 0));
  int64_t ord = 0;
  Status failed;
  for (const BundleRef* ref : bundles) {
    const Bundle& b = *ref->bundle;
    const size_t rows = b.rows();
    for (size_t r = 0; r < rows && failed.ok(); ++r) {
      pg::AppendBE16(&copy_buf_, nfields);
      for (const TargetColumn& tc : target.columns) {
        Status s = pg::EncodeCell(tc.encoder, b.columns[tc.source_index], r, options_.zero_date,
                                  &copy_buf_);
        if (!s.ok()) {
          failed = s.WithContext("table " + target.display + ", column " + tc.name + ", " +
                                 RowName(target, b, r, ref->id));
          break;
        }
      }
      if (!failed.ok()) break;
      if (with_ord) {
        pg::AppendBE32(&copy_buf_, 8);
        pg::AppendBE64(&copy_buf_, static_cast<uint64_t>(ord++));
      }
      if (copy_buf_.size() >= kCopyFlushBytes) failed = Flush(target.display);
    }
    if (!failed.ok()) break;
  }
  if (failed.ok()) {
    pg::AppendBE16(&copy_buf_, 0xFFFF);  // trailer
    failed = Flush(target.display);
  }
  copy_buf_.clear();
  if (copy_buf_.capacity() > 4 * kCopyFlushBytes) copy_buf_.shrink_to_fit();
  return EndCopy(std::move(failed), ctx);
}

Status PostgresSink::EndCopy(Status failed, const std::string& ctx) {
  // Abort the COPY when the data could not be built (the server then reports an error that is
  // not the interesting one).
  if (PQputCopyEnd(conn(), failed.ok() ? nullptr : "dbstreams: aborted") != 1 && failed.ok()) {
    failed = pg::ErrorStatus(conn(), nullptr, ctx);
  }
  ResultPtr res(PQgetResult(conn()));
  if (failed.ok() && PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
    failed = pg::ErrorStatus(conn(), res.get(), ctx);
  }
  while (ResultPtr more{PQgetResult(conn())}) {
  }
  return failed;
}

// Whether the target takes `b`'s COPY tuples as they are: the same columns in the same order, of
// the same built-in types, no staging (the COPY goes straight into the table).
bool TakesCopyTuples(const TargetInfo& target, const Bundle& b) {
  const std::vector<uint32_t>& oids = b.pg_copy.type_oids;
  if (target.stage || target.columns.size() != oids.size()) return false;
  for (size_t i = 0; i < oids.size(); ++i) {
    if (target.columns[i].source_index != i || target.columns[i].type_oid != oids[i]) return false;
  }
  return true;
}

Status PostgresSink::CopyTuples(const TargetInfo& target, const std::string& copy_sql,
                                const std::vector<const BundleRef*>& bundles) {
  const std::string ctx = "writing " + target.display + " (bundles " + bundles.front()->id +
                          " .. " + bundles.back()->id + ", rows as the source sent them)";
  ResultPtr start(PQexec(conn(), copy_sql.c_str()));
  if (PQresultStatus(start.get()) != PGRES_COPY_IN) {
    return pg::ErrorStatus(conn(), start.get(), ctx);
  }
  Status failed;
  auto put = [&](const char* data, size_t n) {
    if (failed.ok() && PQputCopyData(conn(), data, static_cast<int>(n)) != 1) {
      failed = pg::ErrorStatus(conn(), nullptr, ctx);
    }
  };
  put(kCopyHeader, kCopyHeaderLen);
  for (const BundleRef* ref : bundles) {
    const std::string& t = ref->bundle->pg_copy.tuples;
    for (size_t at = 0; at < t.size() && failed.ok(); at += kCopyFlushBytes) {
      put(t.data() + at, std::min(kCopyFlushBytes, t.size() - at));
    }
  }
  const char trailer[2] = {'\xff', '\xff'};
  put(trailer, 2);
  return EndCopy(std::move(failed), ctx);
}

Status PostgresSink::WriteTable(TargetInfo* target, const std::vector<const BundleRef*>& bundles) {
  return RowError(WriteRows(target, bundles), *target, bundles);
}

Status PostgresSink::RowError(const Status& s, const TargetInfo& target,
                              const std::vector<const BundleRef*>& bundles) const {
  if (s.ok() || s.retryable()) return s;
  std::string msg = s.message();
  auto replace_all = [&msg](const std::string& from, const std::string& to) {
    if (from.empty()) return;
    for (size_t at = msg.find(from); at != std::string::npos; at = msg.find(from, at + to.size())) {
      msg.replace(at, from.size(), to);
    }
  };
  // "COPY <table>, line <n>[, column <c>]: ..." in the server's context: row n of this COPY.
  std::optional<size_t> line;
  std::string column;
  const size_t copy = msg.find("CONTEXT: COPY ");
  if (copy != std::string::npos) {
    const size_t l = msg.find(", line ", copy);
    if (l != std::string::npos) {
      size_t n = 0, i = l + 7;
      while (i < msg.size() && msg[i] >= '0' && msg[i] <= '9') n = n * 10 + (msg[i++] - '0');
      if (i > l + 7 && n > 0) line = n;
      if (msg.compare(i, 9, ", column ") == 0) {
        // Up to the value (": ..."), the next field or the SQLSTATE.
        size_t end = msg.size();
        for (const char* stop : {":", ";", " (SQLSTATE"})
          end = std::min(end, msg.find(stop, i + 9));
        column = msg.substr(i + 9, end - i - 9);
      }
    }
  }
  const std::string schema = target.display.substr(0, target.display.size() - target.name.size());
  if (target.quoted != pg::QualifiedName(schema.substr(0, schema.size() - 1), target.name)) {
    replace_all(target.schema + ".", schema);  // the shadow copy's schema
  }
  if (!target.stage_name.empty()) {
    replace_all(target.stage_name.substr(1, target.stage_name.size() - 2), target.display);
  }
  if (line && !bundles.empty()) {
    size_t row = *line - 1;
    for (const BundleRef* ref : bundles) {
      const Bundle& b = *ref->bundle;
      if (row >= b.rows()) {
        row -= b.rows();
        continue;
      }
      std::string where = "source table " + ref->table->QualifiedName();
      if (!column.empty() && column != kOrdColumn) where += ", column " + column;
      if (b.is_pg_copy()) {
        auto d = pg::DecodeCopyRows(b.pg_copy, ref->table->columns);
        where += ", " + (d.ok() ? RowName(target, *d, row, ref->id)
                                : "bundle " + ref->id + ", row " + std::to_string(row + 1));
      } else {
        where += ", " + RowName(target, b, row, ref->id);
      }
      msg += "; at " + where;
      break;
    }
  }
  return Status(s.code(), Retry::kFail, std::move(msg));
}

Status PostgresSink::WriteRows(TargetInfo* target, const std::vector<const BundleRef*>& bundles) {
  // COPY tuples go in as they are when the table takes them; otherwise they are decoded into
  // columns and written like any other bundle.
  bool any_tuples = false, as_tuples = true;
  for (const BundleRef* ref : bundles) {
    const Bundle& b = *ref->bundle;
    if (!b.is_pg_copy()) {
      as_tuples = false;
      continue;
    }
    any_tuples = true;
    // The tuples' bytes are not walked here: DecodeBundle checked them, the server checks what
    // goes into COPY, and DecodeCopyRows checks what it decodes.
    if (!b.columns.empty() || !b.ops.empty()) {
      return Status::InvalidArgument("bundle " + ref->id + " mixes COPY tuples with columns");
    }
    if (b.pg_copy.type_oids.size() != ref->table->columns.size()) {
      return Status::InvalidArgument("bundle " + ref->id + " has " +
                                     std::to_string(b.pg_copy.type_oids.size()) +
                                     " columns, table " + ref->table->QualifiedName() + " has " +
                                     std::to_string(ref->table->columns.size()));
    }
    as_tuples = as_tuples && TakesCopyTuples(*target, b);
  }
  if (any_tuples) {
    if (as_tuples) {
      std::vector<std::string> cols;
      for (const TargetColumn& tc : target->columns) cols.push_back(pg::QuoteIdent(tc.name));
      return CopyTuples(
          *target,
          "COPY " + target->quoted + " (" + Join(cols, ", ") + ") FROM STDIN (FORMAT binary)",
          bundles);
    }
    std::vector<Bundle> decoded;
    decoded.reserve(bundles.size());  // stable addresses for the refs below
    std::vector<BundleRef> refs;
    refs.reserve(bundles.size());
    for (const BundleRef* ref : bundles) {
      if (!ref->bundle->is_pg_copy()) {
        refs.push_back(*ref);
        continue;
      }
      auto d = pg::DecodeCopyRows(ref->bundle->pg_copy, ref->table->columns);
      if (!d.ok()) return d.status().WithContext("bundle " + ref->id);
      decoded.push_back(std::move(d).value());
      refs.push_back({ref->id, ref->table, &decoded.back()});
    }
    std::vector<const BundleRef*> ptrs;
    for (const BundleRef& r : refs) ptrs.push_back(&r);
    return WriteRows(target, ptrs);
  }
  for (const BundleRef* ref : bundles) {
    const TableSchema& t = *ref->table;
    const Bundle& b = *ref->bundle;
    if (b.columns.size() != t.columns.size()) {
      return Status::InvalidArgument(
          "bundle " + ref->id + " has " + std::to_string(b.columns.size()) + " columns, table " +
          t.QualifiedName() + " has " + std::to_string(t.columns.size()));
    }
    for (size_t i = 0; i < t.columns.size(); ++i) {
      if (b.columns[i].type() != t.columns[i].type ||
          b.columns[i].element_type() != t.columns[i].element_type) {
        return Status::InvalidArgument(
            "bundle " + ref->id + ": column " + t.columns[i].name + " holds " +
            std::string(LogicalTypeName(b.columns[i].type())) + " values, the table says " +
            std::string(LogicalTypeName(t.columns[i].type)));
      }
    }
    for (RowOp op : b.ops) {
      if (op != RowOp::kInsert) {
        return Status::Unsupported("bundle " + ref->id +
                                   " holds updates or deletes; the load sink writes inserts only");
      }
    }
    DBS_RETURN_IF_ERROR(b.Validate());
  }
  std::vector<std::string> cols;
  for (const TargetColumn& tc : target->columns) cols.push_back(pg::QuoteIdent(tc.name));
  if (!target->stage) {
    return CopyRows(
        *target,
        "COPY " + target->quoted + " (" + Join(cols, ", ") + ") FROM STDIN (FORMAT binary)",
        bundles, false);
  }
  const std::string ctx = "writing " + target->display;
  if (!target->stage_created) {
    std::vector<std::string> defs;
    for (const TargetColumn& tc : target->columns) {
      defs.push_back(pg::QuoteIdent(tc.name) + " " + (tc.staged ? tc.stage_type : tc.target_type));
    }
    defs.push_back(std::string(kOrdColumn) + " bigint");
    DBS_RETURN_IF_ERROR(pg::Command(conn(),
                                    "CREATE TEMP TABLE " + target->stage_name + " (" +
                                        Join(defs, ", ") + ") ON COMMIT DELETE ROWS",
                                    ctx));
    target->stage_created = true;
  }
  std::vector<std::string> stage_cols = cols;
  stage_cols.push_back(kOrdColumn);
  DBS_RETURN_IF_ERROR(CopyRows(
      *target,
      "COPY " + target->stage_name + " (" + Join(stage_cols, ", ") + ") FROM STDIN (FORMAT binary)",
      bundles, true));
  std::vector<std::string> exprs, casts;
  for (const TargetColumn& tc : target->columns) {
    std::string e = "s." + pg::QuoteIdent(tc.name);
    if (tc.staged) {
      e += "::" + tc.target_type;
      casts.push_back(tc.name + " from " + tc.stage_type + " to " + tc.target_type);
    }
    exprs.push_back(e);
  }
  std::string sql = "INSERT INTO " + target->quoted + " (" + Join(cols, ", ") +
                    ") OVERRIDING SYSTEM VALUE SELECT " + Join(exprs, ", ") + " FROM ";
  if (!target->upsert) {
    sql += target->stage_name + " s";
  } else {
    std::vector<std::string> key;
    for (const std::string& k : target->primary_key) key.push_back(pg::QuoteIdent(k));
    sql += "(SELECT DISTINCT ON (" + Join(key, ", ") + ") * FROM " + target->stage_name +
           " ORDER BY " + Join(key, ", ") + ", " + kOrdColumn + " DESC) s ON CONFLICT (" +
           Join(key, ", ") + ") DO ";
    std::vector<std::string> sets;
    for (const TargetColumn& tc : target->columns) {
      if (std::find(target->primary_key.begin(), target->primary_key.end(), tc.name) !=
          target->primary_key.end()) {
        continue;
      }
      sets.push_back(pg::QuoteIdent(tc.name) + " = EXCLUDED." + pg::QuoteIdent(tc.name));
    }
    sql += sets.empty() ? "NOTHING" : "UPDATE SET " + Join(sets, ", ");
  }
  return pg::Command(conn(), sql,
                     casts.empty() ? ctx : ctx + " (casting " + Join(casts, ", ") + ")");
}

Result<size_t> PostgresSink::Apply(const std::vector<BundleRef>& bundles) {
  if (bundles.empty()) return size_t{0};
  DBS_RETURN_IF_ERROR(EnsureBookkeeping());
  std::vector<std::string> ids;
  ids.reserve(bundles.size());
  for (const BundleRef& b : bundles) {
    if (b.table == nullptr || b.bundle == nullptr) {
      return Status::InvalidArgument("bundle " + b.id + " has no table or data");
    }
    ids.push_back(b.id);
  }
  // Sorted and unique: writers inserting overlapping id sets lock them in the same order (no
  // deadlock between two redeliveries of one batch).
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  size_t applied = 0;
  auto body = [&]() -> Status {
    DBS_RETURN_IF_ERROR(pg::Command(conn(), "BEGIN", "starting a transaction"));
    DBS_ASSIGN_OR_RETURN(
        ResultPtr res,
        pg::ExecParams(conn(),
                       "INSERT INTO _dbstreams.applied (stream, bundle_id) "
                       "SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING RETURNING bundle_id",
                       {options_.stream, pg::TextArrayLiteral(ids)}, "recording applied bundles"));
    std::set<std::string> fresh;
    for (int r = 0; r < PQntuples(res.get()); ++r)
      fresh.insert(std::string(pg::Text(res.get(), r, 0)));
    // Group the new bundles by table, keeping their order; a repeated id counts once.
    std::vector<std::string> order;
    std::map<std::string, std::vector<const BundleRef*>> by_table;
    for (const BundleRef& b : bundles) {
      if (fresh.erase(b.id) == 0) continue;
      const std::string key = Key(*b.table);
      auto& list = by_table[key];
      if (list.empty()) order.push_back(key);
      list.push_back(&b);
      ++applied;
    }
    for (const std::string& key : order) {
      const auto& list = by_table[key];
      DBS_ASSIGN_OR_RETURN(TargetInfo * target, Target(*list.front()->table, /*load=*/true));
      DBS_RETURN_IF_ERROR(WriteTable(target, list));
    }
    return pg::Command(conn(), "COMMIT", "committing");
  };
  Status s = body();
  if (!s.ok()) {
    pg::RollbackQuietly(conn());
    // Temp tables created in the failed transaction are gone.
    for (auto& [key, t] : targets_) t.stage_created = false;
    return s;
  }
  return applied;
}

std::string PostgresSink::RefDisplay(const TableSchema& t, const ForeignKey& fk) const {
  // The referenced table, as the DDL names it (it follows the target schema when it was in the
  // source table's own schema).
  const std::string ref_schema =
      fk.ref_schema.empty() || fk.ref_schema == t.schema ? TargetSchema(t) : fk.ref_schema;
  return ref_schema + "." + fk.ref_table;
}

Result<std::string> PostgresSink::ForeignKeySql(const TableSchema& t, const ForeignKey& fk,
                                                const std::string& in_schema,
                                                const std::string& ref_in_schema,
                                                std::vector<std::string>* warnings) const {
  // AddForeignKeySql keeps an explicit ref_schema that differs from the table's schema and
  // maps one equal to it to target_schema: with both set to in_schema, ref_in_schema is used
  // as it is either way.
  TableSchema at = t;
  at.schema = in_schema;
  ForeignKey f = fk;
  f.ref_schema = ref_in_schema;
  return AddForeignKeySql(at, f, Dialect::kPostgres, source_dialect(), Ddl(t, warnings, in_schema));
}

Result<std::vector<std::string>> PostgresSink::StructureSql(const TableSchema& t,
                                                            const std::string& in_schema,
                                                            bool add_key,
                                                            std::vector<std::string>* warnings) {
  const Dialect src = source_dialect();
  const DdlOptions o = Ddl(t, warnings, in_schema);
  std::vector<std::string> stmts;
  if (add_key) {
    DBS_ASSIGN_OR_RETURN(std::string pk, AddPrimaryKeySql(t, Dialect::kPostgres, o));
    if (!pk.empty()) stmts.push_back(std::move(pk));
  }
  DBS_ASSIGN_OR_RETURN(std::vector<std::string> seq,
                       SyncAutoIncrementSql(t, Dialect::kPostgres, src, o));
  stmts.insert(stmts.end(), seq.begin(), seq.end());
  if (options_.structure.indexes) {
    for (const Index& ix : t.indexes) {
      DBS_ASSIGN_OR_RETURN(std::string sql, CreateIndexSql(t, ix, Dialect::kPostgres, src, o));
      if (!sql.empty()) stmts.push_back(std::move(sql));
    }
  }
  if (options_.structure.checks) {
    for (const CheckConstraint& c : t.checks) {
      DBS_ASSIGN_OR_RETURN(std::string sql, AddCheckSql(t, c, Dialect::kPostgres, src, o));
      if (!sql.empty()) stmts.push_back(std::move(sql));
    }
  }
  return stmts;
}

Result<bool> PostgresSink::ShouldAddForeignKey(const std::string& quoted, const ForeignKey& fk,
                                               const std::string& ref_quoted,
                                               const std::string& display, const std::string& ref,
                                               std::vector<std::string>* warnings) {
  DBS_ASSIGN_OR_RETURN(
      ResultPtr res,
      pg::ExecParams(conn(),
                     "SELECT to_regclass($2) IS NOT NULL, EXISTS (SELECT 1 FROM pg_constraint "
                     "WHERE conrelid = to_regclass($1) AND conname = $3)",
                     {quoted, ref_quoted, fk.name}, "finishing " + display));
  if (!pg::Bool(res.get(), 0, 0)) {
    warnings->push_back(display + ": foreign key " + fk.name + " skipped, table " + ref +
                        " is not in the target");
    return false;
  }
  // A table that stays (append, truncate_and_load) may have it already.
  return !pg::Bool(res.get(), 0, 1);
}

Status PostgresSink::PrepareRun() {
  if (options_.plan_only || options_.source_engine != Engine::kPostgres ||
      !options_.structure.objects) {
    return Status::Ok();
  }
  bool any = false;
  for (const SchemaObject& o : options_.objects) any = any || o.kind == ObjectKind::kExtension;
  if (!any) return Status::Ok();
  DBS_RETURN_IF_ERROR(EnsureConnected());
  std::vector<std::string> created;
  DBS_RETURN_IF_ERROR(pg::EnsureExtensions(conn(), options_.objects, &created));
  if (!created.empty()) DBS_RETURN_IF_ERROR(EnsureBookkeeping());
  for (const std::string& ext : created) {
    Log(LogLevel::kInfo, "pg-sink", "extension created in the target", {F("extension", ext)});
    DBS_RETURN_IF_ERROR(pg::ExecParams(conn(),
                                       "INSERT INTO _dbstreams.dbstreams_state (stream, tbl, "
                                       "phase) VALUES ($1, $2, 'created') ON CONFLICT DO NOTHING",
                                       {options_.stream, kExtensionRow + ext},
                                       "recording extension " + ext)
                            .status());
  }
  return Status::Ok();
}

Result<TableDdlPlan> PostgresSink::PlanTable(const TableSchema& t) {
  DBS_RETURN_IF_ERROR(EnsureConnected());
  TableDdlPlan p;
  const std::string schema = TargetSchema(t);
  p.target = schema + "." + t.name;
  DBS_ASSIGN_OR_RETURN(
      ResultPtr res, pg::ExecParams(conn(), "SELECT to_regclass($1) IS NOT NULL",
                                    {pg::QualifiedName(schema, t.name)}, "looking up " + p.target));
  const bool exists = pg::Bool(res.get(), 0, 0);
  bool create = false;
  p.action = PlannedAction(options_.schema_policy, options_.write_mode, exists, &create);
  if (!create || !options_.structure.tables) return p;
  const bool defer = options_.write_mode != WriteMode::kUpsert && !t.primary_key.empty();
  DBS_ASSIGN_OR_RETURN(std::vector<std::string> stmts, TableSql(t, schema, defer, &p.warnings));
  stmts.erase(stmts.begin());  // the session's search_path
  DBS_ASSIGN_OR_RETURN(std::vector<std::string> after, StructureSql(t, schema, defer, &p.warnings));
  stmts.insert(stmts.end(), after.begin(), after.end());
  if (options_.structure.foreign_keys) {
    for (const ForeignKey& fk : t.foreign_keys) {
      const std::string ref = RefDisplay(t, fk);
      DBS_ASSIGN_OR_RETURN(
          std::string sql,
          ForeignKeySql(t, fk, schema, ref.substr(0, ref.size() - fk.ref_table.size() - 1),
                        &p.warnings));
      if (!sql.empty()) stmts.push_back(std::move(sql));
    }
  }
  p.statements = std::move(stmts);
  return p;
}

std::vector<ObjectOutcome> PostgresSink::PlanObjects(const std::vector<TableSchema>& tables,
                                                     const std::vector<SchemaObject>& objects) {
  ObjectPlanInput in;
  in.objects = &objects;
  in.tables = &tables;
  in.source = options_.source_engine;
  in.target = Engine::kPostgres;
  in.mode = options_.mode;
  in.enabled = options_.structure.objects;
  in.target_schema = [this](const std::string& s) {
    return options_.target_schema.empty() ? s : options_.target_schema;
  };
  return dbs::PlanObjects(in);
}

Result<std::vector<ObjectOutcome>> PostgresSink::ObjectOutcomes() {
  DBS_RETURN_IF_ERROR(EnsureBookkeeping());
  DBS_ASSIGN_OR_RETURN(
      ResultPtr res,
      pg::ExecParams(conn(), "SELECT objects FROM _dbstreams.report WHERE stream = $1",
                     {options_.stream}, "reading the run's report"));
  if (PQntuples(res.get()) == 0) return std::vector<ObjectOutcome>();
  nlohmann::json j = nlohmann::json::parse(pg::Text(res.get(), 0, 0), nullptr, false);
  return OutcomesFromJson(j);
}

Status PostgresSink::CreateObjectsAndReport(const std::vector<TableSchema>& tables) {
  std::vector<ObjectOutcome> planned = PlanObjects(tables, options_.objects);
  if (planned.empty()) return Status::Ok();
  pg::CreateObjectsOptions co;
  co.replace = options_.schema_policy == SchemaPolicy::kDropAndRecreate;
  co.mode = options_.mode;
  co.target_schema = [this](const std::string& s) {
    return options_.target_schema.empty() ? s : options_.target_schema;
  };
  std::vector<ObjectOutcome> done;
  if (source_dialect() == Dialect::kPostgres) {
    DBS_ASSIGN_OR_RETURN(done, pg::CreateObjects(conn(), std::move(planned), options_.objects, co));
  } else {
    done = std::move(planned);  // across engines nothing is created
  }
  for (const ObjectOutcome& o : done) {
    if (!o.migrated) {
      Log(LogLevel::kWarn, "pg-sink",
          std::string(ObjectKindName(o.kind)) + " " + o.source + ": " + o.reason);
    }
  }
  return pg::ExecParams(conn(),
                        "INSERT INTO _dbstreams.report (stream, objects) VALUES ($1, $2) "
                        "ON CONFLICT (stream) DO UPDATE SET objects = EXCLUDED.objects, "
                        "updated_at = now()",
                        {options_.stream, ToJson(done).dump()}, "recording the run's report")
      .status();
}

Status PostgresSink::FinishStream(const std::vector<TableSchema>& tables) {
  // Pass 1: primary key (when deferred), sequences, indexes, checks — on the shadow copy of a
  // table that has one. A table refilled by copy (truncate_and_load) gets them in SwapIn, on
  // the target table, after its rows.
  for (const TableSchema& t : tables) {
    const std::string display = TargetSchema(t) + "." + t.name;
    std::vector<std::string> warnings;
    Status s = Locked(display, [&]() -> Status {
      DBS_ASSIGN_OR_RETURN(std::optional<StateRow> row, State(display));
      if (!row) {
        return Status::FailedPrecondition("table " + display + " was never prepared");
      }
      if (row->phase != kPhasePrepared && row->phase != kPhasePreparedNoKey) return Status::Ok();
      if (row->swap != kSwapCopy) {
        DBS_ASSIGN_OR_RETURN(
            std::vector<std::string> stmts,
            StructureSql(t, row->shadow, row->phase == kPhasePreparedNoKey, &warnings));
        if (!stmts.empty()) DBS_RETURN_IF_ERROR(RaiseIndexBuildMemory());
        for (const std::string& sql : stmts) {
          DBS_RETURN_IF_ERROR(pg::Command(conn(), sql, "finishing " + display));
        }
        if (!row->shadow.empty()) {
          DBS_RETURN_IF_ERROR(SetShadowAutovacuum(t, row->shadow, true, /*copy_in=*/false));
        }
      }
      return SetPhase(display, kPhaseIndexed);
    });
    for (const std::string& w : warnings) Log(LogLevel::kWarn, "pg-sink", w);
    if (!s.ok()) return s.WithContext("finishing target table " + display);
  }
  // Pass 2: foreign keys, once every table has its unique indexes. Between shadow copies they
  // point at the shadow copies (and move with them); a foreign key from or to a table refilled
  // by copy is added in SwapIn.
  DBS_RETURN_IF_ERROR(EnsureBookkeeping());
  DBS_ASSIGN_OR_RETURN(auto state, RunState());
  for (const TableSchema& t : tables) {
    const std::string display = TargetSchema(t) + "." + t.name;
    std::vector<std::string> warnings;
    Status s = Locked(display, [&]() -> Status {
      DBS_ASSIGN_OR_RETURN(std::optional<StateRow> row, State(display));
      if (!row || row->phase != kPhaseIndexed) return Status::Ok();
      if (options_.structure.foreign_keys && row->swap != kSwapCopy) {
        const std::string in_schema = row->shadow.empty() ? TargetSchema(t) : row->shadow;
        for (const ForeignKey& fk : t.foreign_keys) {
          const std::string ref = RefDisplay(t, fk);
          const std::string ref_schema = ref.substr(0, ref.size() - fk.ref_table.size() - 1);
          std::string ref_in_schema = ref_schema;
          auto rs = state.find(ref);
          if (rs != state.end() && rs->second.swap == kSwapCopy) continue;  // SwapIn adds it
          if (rs != state.end() && !rs->second.shadow.empty()) ref_in_schema = rs->second.shadow;
          DBS_ASSIGN_OR_RETURN(std::string sql,
                               ForeignKeySql(t, fk, in_schema, ref_in_schema, &warnings));
          if (sql.empty()) continue;
          DBS_ASSIGN_OR_RETURN(
              bool add, ShouldAddForeignKey(pg::QualifiedName(in_schema, t.name), fk,
                                            pg::QualifiedName(ref_in_schema, fk.ref_table), display,
                                            ref, &warnings));
          if (!add) continue;
          DBS_RETURN_IF_ERROR(pg::Command(conn(), sql, "adding foreign key " + fk.name));
        }
      }
      return SetPhase(display, kPhaseFinished);
    });
    for (const std::string& w : warnings) Log(LogLevel::kWarn, "pg-sink", w);
    if (!s.ok()) return s.WithContext("finishing target table " + display);
  }
  // Pass 3: every shadow copy in, at once.
  return SwapIn(tables);
}

// The refilled tables in an order that fills referenced tables first (a cycle: as given).
std::vector<const TableSchema*> ReferencedFirst(
    const std::vector<const TableSchema*>& tables,
    const std::function<std::string(const TableSchema&, const ForeignKey*)>& name) {
  std::vector<const TableSchema*> order;
  std::set<std::string> placed;
  while (order.size() < tables.size()) {
    const size_t before = order.size();
    for (const TableSchema* t : tables) {
      const std::string display = name(*t, nullptr);
      if (placed.count(display)) continue;
      bool ready = true;
      for (const ForeignKey& fk : t->foreign_keys) {
        const std::string ref = name(*t, &fk);
        if (ref == display || placed.count(ref)) continue;
        for (const TableSchema* u : tables) {
          if (name(*u, nullptr) == ref) ready = false;
        }
      }
      if (ready) {
        order.push_back(t);
        placed.insert(display);
      }
    }
    if (order.size() == before) {
      for (const TableSchema* t : tables) {
        if (placed.insert(name(*t, nullptr)).second) order.push_back(t);
      }
    }
  }
  return order;
}

Status PostgresSink::MoveNewTablesIn(const std::vector<const TableSchema*>& fresh) {
  // The old table goes (drop_and_recreate; dependent views and foreign keys with it, as DROP
  // TABLE ... CASCADE did before shadows), the shadow copy takes its place with its indexes,
  // constraints and owned sequences.
  for (const TableSchema* t : fresh) {
    const std::string schema = TargetSchema(*t);
    const std::string display = schema + "." + t->name;
    const std::string quoted = pg::QualifiedName(schema, t->name);
    DBS_ASSIGN_OR_RETURN(ResultPtr res, pg::ExecParams(conn(), "SELECT to_regclass($1) IS NOT NULL",
                                                       {quoted}, "looking up " + display));
    if (!pg::Bool(res.get(), 0, 0)) continue;
    if (options_.schema_policy != SchemaPolicy::kDropAndRecreate) {
      return Status::AlreadyExists("target table " + display +
                                   " was created by someone else during the run");
    }
    DBS_RETURN_IF_ERROR(
        pg::Command(conn(), "DROP TABLE " + quoted + " CASCADE", "dropping " + display));
  }
  // Partitions move in beside their parent: tables of their names go first (drop_and_recreate;
  // the old parent's own partitions went with it).
  for (const TableSchema* t : fresh) {
    if (source_dialect() != Dialect::kPostgres) break;
    const std::string schema = TargetSchema(*t);
    for (const Partition& part : t->partitions) {
      const std::string quoted = pg::QualifiedName(schema, part.name);
      DBS_ASSIGN_OR_RETURN(ResultPtr res,
                           pg::ExecParams(conn(), "SELECT to_regclass($1) IS NOT NULL", {quoted},
                                          "looking up " + schema + "." + part.name));
      if (!pg::Bool(res.get(), 0, 0)) continue;
      if (options_.schema_policy != SchemaPolicy::kDropAndRecreate) {
        return Status::AlreadyExists("target table " + schema + "." + part.name +
                                     " (a partition of " + t->name + ") already exists");
      }
      DBS_RETURN_IF_ERROR(pg::Command(conn(), "DROP TABLE IF EXISTS " + quoted + " CASCADE",
                                      "dropping " + schema + "." + part.name));
    }
  }
  // All old tables are gone before any copy moves in: their index names are free.
  for (const TableSchema* t : fresh) {
    const std::string schema = TargetSchema(*t);
    std::vector<std::string> names = {t->name};
    if (source_dialect() == Dialect::kPostgres) {
      for (const Partition& part : t->partitions) names.push_back(part.name);
    }
    for (const std::string& name : names) {
      DBS_RETURN_IF_ERROR(pg::Command(conn(),
                                      "ALTER TABLE " +
                                          pg::QualifiedName(ShadowSchema(schema), name) +
                                          " SET SCHEMA " + pg::QuoteIdent(schema),
                                      "swapping in " + schema + "." + name));
    }
  }
  return Status::Ok();
}

Status PostgresSink::RefillTables(const std::vector<const TableSchema*>& copies,
                                  std::vector<std::string>* warnings) {
  if (copies.empty()) return Status::Ok();
  // Emptied together: foreign keys between them allow no other order.
  std::vector<std::string> names;
  for (const TableSchema* t : copies) names.push_back(pg::QualifiedName(TargetSchema(*t), t->name));
  DBS_RETURN_IF_ERROR(
      pg::Command(conn(), "TRUNCATE " + Join(names, ", "), "emptying the refilled tables"));
  auto name = [this](const TableSchema& t, const ForeignKey* fk) {
    return fk ? RefDisplay(t, *fk) : TargetSchema(t) + "." + t.name;
  };
  for (const TableSchema* t : ReferencedFirst(copies, name)) {
    const std::string display = name(*t, nullptr);
    DBS_ASSIGN_OR_RETURN(TargetInfo * shadow, Target(*t, /*load=*/true));
    std::vector<std::string> cols;
    for (const TargetColumn& tc : shadow->columns) cols.push_back(pg::QuoteIdent(tc.name));
    DBS_RETURN_IF_ERROR(pg::Command(
        conn(),
        "INSERT INTO " + pg::QualifiedName(TargetSchema(*t), t->name) + " (" + Join(cols, ", ") +
            ") OVERRIDING SYSTEM VALUE SELECT " + Join(cols, ", ") + " FROM " + shadow->quoted,
        "copying the new rows into " + display));
    DBS_ASSIGN_OR_RETURN(std::vector<std::string> stmts,
                         StructureSql(*t, "", /*add_key=*/false, warnings));
    if (!stmts.empty()) DBS_RETURN_IF_ERROR(RaiseIndexBuildMemory());
    for (const std::string& sql : stmts) {
      DBS_RETURN_IF_ERROR(pg::Command(conn(), sql, "finishing " + display));
    }
  }
  return Status::Ok();
}

Status PostgresSink::AddRefilledForeignKeys(const std::vector<TableSchema>& tables,
                                            const std::vector<const TableSchema*>& copies,
                                            const std::map<std::string, StateRow>& state,
                                            std::vector<std::string>* warnings) {
  if (!options_.structure.foreign_keys || copies.empty()) return Status::Ok();
  for (const TableSchema& t : tables) {
    const std::string display = TargetSchema(t) + "." + t.name;
    const bool t_copy = std::find(copies.begin(), copies.end(), &t) != copies.end();
    for (const ForeignKey& fk : t.foreign_keys) {
      const std::string ref = RefDisplay(t, fk);
      auto rs = state.find(ref);
      const bool ref_copy = rs != state.end() && rs->second.swap == kSwapCopy;
      if (!t_copy && !ref_copy) continue;  // added in FinishStream's pass 2
      const std::string ref_schema = ref.substr(0, ref.size() - fk.ref_table.size() - 1);
      DBS_ASSIGN_OR_RETURN(std::string sql,
                           ForeignKeySql(t, fk, TargetSchema(t), ref_schema, warnings));
      if (sql.empty()) continue;
      DBS_ASSIGN_OR_RETURN(
          bool add,
          ShouldAddForeignKey(pg::QualifiedName(TargetSchema(t), t.name), fk,
                              pg::QualifiedName(ref_schema, fk.ref_table), display, ref, warnings));
      if (!add) continue;
      DBS_RETURN_IF_ERROR(pg::Command(conn(), sql, "adding foreign key " + fk.name));
    }
  }
  return Status::Ok();
}

Status PostgresSink::SwapIn(const std::vector<TableSchema>& tables) {
  std::vector<std::string> warnings;
  Status s = Locked("", [&]() -> Status {
    DBS_ASSIGN_OR_RETURN(auto state, RunState());
    auto run = state.find("");
    if (run != state.end() && run->second.phase == kRunSwapped) return Status::Ok();
    if (run != state.end() && run->second.phase == kRunFailed) {
      return Status::Aborted("the run failed; its shadow tables are not swapped in")
          .WithRetry(Retry::kFail);
    }
    std::vector<const TableSchema*> fresh, copies;
    std::set<std::string> shadows;
    for (const TableSchema& t : tables) {
      const std::string display = TargetSchema(t) + "." + t.name;
      auto it = state.find(display);
      if (it == state.end() || it->second.phase != kPhaseFinished) {
        return Status::FailedPrecondition(
            "table " + display +
            " is not finished: " + (it == state.end() ? "never prepared" : it->second.phase));
      }
      if (it->second.shadow.empty()) continue;
      shadows.insert(it->second.shadow);
      placement_[Key(t)] = Placement{it->second.shadow, it->second.swap == kSwapCopy};
      (it->second.swap == kSwapCopy ? copies : fresh).push_back(&t);
    }
    DBS_RETURN_IF_ERROR(MoveNewTablesIn(fresh));
    DBS_RETURN_IF_ERROR(RefillTables(copies, &warnings));
    DBS_RETURN_IF_ERROR(AddRefilledForeignKeys(tables, copies, state, &warnings));
    DBS_RETURN_IF_ERROR(CreateObjectsAndReport(tables));
    for (const std::string& schema : shadows) {
      DBS_RETURN_IF_ERROR(
          pg::Command(conn(), "DROP SCHEMA IF EXISTS " + pg::QuoteIdent(schema) + " CASCADE",
                      "dropping the shadow schema " + schema));
    }
    if (const char* pause = std::getenv(kSwapPauseEnv); pause != nullptr && *pause != '\0') {
      Log(LogLevel::kWarn, "pg-sink", "test hook: pausing inside the swap transaction",
          {F("seconds", pause)});
      std::this_thread::sleep_for(std::chrono::seconds(std::atoi(pause)));
    }
    return SetPhase("", kRunSwapped);
  });
  for (const std::string& w : warnings) Log(LogLevel::kWarn, "pg-sink", w);
  if (!s.ok()) return s.WithContext("swapping the new tables in");
  // Writes from now on (CDC) go to the target tables.
  for (auto& [key, p] : placement_) p = Placement();
  return Status::Ok();
}

Status PostgresSink::DropStaleRuns() {
  if (stale_dropped_) return Status::Ok();
  DBS_RETURN_IF_ERROR(EnsureBookkeeping());
  const size_t dot = options_.stream.rfind('.');
  if (!options_.shadow_tables || dot == std::string::npos) {
    stale_dropped_ = true;
    return Status::Ok();
  }
  const std::string prefix = options_.stream.substr(0, dot + 1);
  auto body = [&]() -> Status {
    DBS_RETURN_IF_ERROR(pg::Command(conn(), "BEGIN", "starting a transaction"));
    DBS_RETURN_IF_ERROR(
        pg::ExecParams(conn(), "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                       {"dbstreams/stale/" + prefix}, "locking the runs of the stream")
            .status());
    const std::string where = " WHERE left(stream, length($1)) = $1 AND stream <> $2";
    DBS_ASSIGN_OR_RETURN(
        ResultPtr res,
        pg::ExecParams(
            conn(),
            "SELECT DISTINCT shadow FROM _dbstreams.dbstreams_state" + where + " AND shadow <> ''",
            {prefix, options_.stream}, "reading earlier runs of the stream"));
    for (int r = 0; r < PQntuples(res.get()); ++r) {
      const std::string schema(pg::Text(res.get(), r, 0));
      DBS_RETURN_IF_ERROR(
          pg::Command(conn(), "DROP SCHEMA IF EXISTS " + pg::QuoteIdent(schema) + " CASCADE",
                      "dropping the shadow tables of an earlier run (" + schema + ")"));
    }
    for (const char* table : {"dbstreams_state", "applied", "report"}) {
      DBS_RETURN_IF_ERROR(
          pg::ExecParams(conn(), "DELETE FROM _dbstreams." + std::string(table) + where,
                         {prefix, options_.stream}, "forgetting earlier runs of the stream")
              .status());
    }
    return pg::Command(conn(), "COMMIT", "committing");
  };
  Status s = body();
  if (!s.ok()) {
    pg::RollbackQuietly(conn());
    return s;
  }
  stale_dropped_ = true;
  return Status::Ok();
}

Status PostgresSink::ForgetStream() {
  DBS_RETURN_IF_ERROR(EnsureBookkeeping());
  // Only the applied-bundle records: the state rows stay, so a writer that looks at this run
  // after another finished it sees "finished" and never applies the schema policy again.
  return pg::ExecParams(conn(), "DELETE FROM _dbstreams.applied WHERE stream = $1",
                        {options_.stream}, "forgetting stream " + options_.stream)
      .status();
}

Result<std::vector<std::string>> PostgresSink::AbandonStream(bool keep_partial) {
  DBS_RETURN_IF_ERROR(EnsureConnected());
  std::vector<std::string> kept;
  bool undo = false;  // the run was not swapped in and its bookkeeping still exists
  // Not Locked(): that would create the bookkeeping that another writer of the run may have
  // dropped already.
  auto body = [&]() -> Status {
    // The bookkeeping lock first (the order Locked() takes them in): another writer's
    // DropBookkeepingIfOnlyOurs cannot drop the tables between the check below and their use.
    DBS_RETURN_IF_ERROR(pg::Command(
        conn(), "BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('dbstreams/bookkeeping', 0))",
        "locking the bookkeeping"));
    DBS_RETURN_IF_ERROR(LockRun());
    DBS_ASSIGN_OR_RETURN(
        ResultPtr gone, pg::Exec(conn(), "SELECT to_regclass('_dbstreams.dbstreams_state') IS NULL",
                                 "looking up the bookkeeping"));
    if (pg::Bool(gone.get(), 0, 0)) {  // another writer of the run cleaned up
      bookkeeping_ready_ = false;
      return pg::Command(conn(), "COMMIT", "committing");
    }
    DBS_ASSIGN_OR_RETURN(auto state, RunState());
    auto run = state.find("");
    if (run != state.end() && run->second.phase == kRunSwapped) {  // the new data is in
      return pg::Command(conn(), "COMMIT", "committing");
    }
    undo = true;
    DBS_RETURN_IF_ERROR(SetPhase("", kRunFailed));
    std::set<std::string> shadows;
    for (const auto& [display, row] : state) {
      if (row.shadow.empty()) continue;
      shadows.insert(row.shadow);
      if (!keep_partial) continue;
      const std::string name = display.substr(display.find('.') + 1);
      DBS_ASSIGN_OR_RETURN(ResultPtr res,
                           pg::ExecParams(conn(), "SELECT to_regclass($1) IS NOT NULL",
                                          {pg::QualifiedName(row.shadow, name)},
                                          "looking up the shadow copy of " + display));
      if (pg::Bool(res.get(), 0, 0)) kept.push_back(row.shadow + "." + name);
    }
    if (!keep_partial) {
      for (const std::string& schema : shadows) {
        DBS_RETURN_IF_ERROR(
            pg::Command(conn(), "DROP SCHEMA IF EXISTS " + pg::QuoteIdent(schema) + " CASCADE",
                        "dropping the shadow schema " + schema));
      }
      // Extensions this run created, unless something else uses them by now.
      for (const auto& [display, row] : state) {
        if (display.rfind(kExtensionRow, 0) != 0 || row.phase != "created") continue;
        const std::string ext = display.substr(std::string(kExtensionRow).size());
        DBS_RETURN_IF_ERROR(pg::Command(conn(), "SAVEPOINT dbs_ext", "dropping extension"));
        Status dropped = pg::ExecParams(conn(), "DROP EXTENSION IF EXISTS " + pg::QuoteIdent(ext),
                                        {}, "dropping extension " + ext)
                             .status();
        DBS_RETURN_IF_ERROR(pg::Command(
            conn(), dropped.ok() ? "RELEASE SAVEPOINT dbs_ext" : "ROLLBACK TO SAVEPOINT dbs_ext",
            "dropping extension " + ext));
      }
      DBS_RETURN_IF_ERROR(pg::ExecParams(conn(), "DELETE FROM _dbstreams.applied WHERE stream = $1",
                                         {options_.stream}, "forgetting stream " + options_.stream)
                              .status());
    }
    return pg::Command(conn(), "COMMIT", "committing");
  };
  Status s = body();
  if (!s.ok()) {
    pg::RollbackQuietly(conn());
    if (BookkeepingDroppedMeanwhile(s)) {
      bookkeeping_ready_ = false;
      return kept;
    }
    return s.WithContext("cleaning up after the failed run");
  }
  if (undo && !keep_partial) DBS_RETURN_IF_ERROR(DropBookkeepingIfOnlyOurs());
  return kept;
}

bool PostgresSink::BookkeepingDroppedMeanwhile(const Status& s) {
  // Inside a transaction, to_regclass can answer from a catalog cache that has not yet seen
  // another writer's DROP SCHEMA (invalidations arrive with the next relation lock): the tables
  // then vanish under the statement that uses them. A new statement outside the transaction
  // sees the current catalog.
  if (s.code() != StatusCode::kNotFound) return false;
  auto gone = pg::Exec(conn(), "SELECT to_regclass('_dbstreams.dbstreams_state') IS NULL",
                       "looking up the bookkeeping");
  return gone.ok() && pg::Bool(gone->get(), 0, 0);
}

Status PostgresSink::DropBookkeepingIfOnlyOurs() {
  auto body = [&]() -> Status {
    DBS_RETURN_IF_ERROR(pg::Command(
        conn(), "BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('dbstreams/bookkeeping', 0))",
        "locking the bookkeeping"));
    DBS_ASSIGN_OR_RETURN(
        ResultPtr gone, pg::Exec(conn(), "SELECT to_regclass('_dbstreams.dbstreams_state') IS NULL",
                                 "looking up the bookkeeping"));
    if (pg::Bool(gone.get(), 0, 0)) {  // dropped by another writer of the run
      bookkeeping_ready_ = false;
      return pg::Command(conn(), "COMMIT", "committing");
    }
    DBS_ASSIGN_OR_RETURN(
        ResultPtr res,
        pg::ExecParams(
            conn(),
            "SELECT NOT EXISTS (SELECT 1 FROM _dbstreams.dbstreams_state WHERE stream <> $1) "
            "  AND NOT EXISTS (SELECT 1 FROM _dbstreams.applied WHERE stream <> $1) "
            "  AND NOT EXISTS (SELECT 1 FROM _dbstreams.cdc_checkpoint WHERE stream <> $1) "
            "  AND NOT EXISTS (SELECT 1 FROM _dbstreams.report WHERE stream <> $1) "
            "  AND (SELECT count(*) FROM pg_class WHERE relnamespace = '_dbstreams'::regnamespace "
            "       AND relkind NOT IN ('i', 'S', 't')) = 4",
            {options_.stream}, "checking the bookkeeping"));
    if (pg::Bool(res.get(), 0, 0)) {
      DBS_RETURN_IF_ERROR(pg::Command(conn(), "DROP SCHEMA _dbstreams CASCADE",
                                      "dropping the bookkeeping of the failed run"));
      bookkeeping_ready_ = false;
    }
    return pg::Command(conn(), "COMMIT", "committing");
  };
  Status s = body();
  if (!s.ok()) {
    pg::RollbackQuietly(conn());
    bookkeeping_ready_ = false;
    if (BookkeepingDroppedMeanwhile(s)) return Status::Ok();
  }
  return s;
}

// --- CDC -----------------------------------------------------------------------------------

constexpr const char* kOpColumn = "_dbs_op";
constexpr const char* kGroupColumn = "_dbs_grp";
constexpr int16_t kStageUpsert = 1;
constexpr int16_t kStageUpdate = 2;
constexpr int16_t kStageDelete = 3;

// Constraint violations reported while applying changes are rejected values (not a gap, which
// is the FailedPrecondition of ApplyChanges): InvalidArgument, not retryable.
Status AsRejected(Status s) {
  if (s.ok() || s.code() != StatusCode::kFailedPrecondition) return s;
  return Status(StatusCode::kInvalidArgument, Retry::kFail, s.message());
}

// Target types without a btree equality (or whose equality is not exact): matched by text.
bool CompareAsText(const std::string& target_type) {
  std::string base = target_type;
  while (base.size() > 2 && base.compare(base.size() - 2, 2, "[]") == 0)
    base.resize(base.size() - 2);
  static const char* const kTypes[] = {"json", "xml",  "point",   "line",  "lseg",
                                       "box",  "path", "polygon", "circle"};
  for (const char* t : kTypes) {
    if (base == t) return true;
  }
  return false;
}

bool IsKeyColumn(const cdc::Step& step, size_t source_index) {
  return std::find(step.key.begin(), step.key.end(), source_index) != step.key.end();
}

std::string KeyText(const cdc::Step& step, const cdc::Image& img) {
  std::string out = "key (";
  for (size_t k = 0; k < step.key.size(); ++k)
    out += (k ? ", " : "") + step.table->columns[step.key[k]].name;
  out += ")=(";
  for (size_t k = 0; k < step.key.size(); ++k) {
    const cdc::Cell& c = img[step.key[k]];
    out += (k ? ", " : "") + (c.present() ? c.col->Get(c.row).ToString() : std::string("?"));
  }
  return out + ")";
}

Result<CdcCheckpoint> PostgresSink::ReadCdcCheckpoint(int partition) {
  DBS_RETURN_IF_ERROR(EnsureBookkeeping());
  const std::string stream = cdc::CdcStreamName(options_);
  DBS_ASSIGN_OR_RETURN(
      ResultPtr res,
      pg::ExecParams(conn(),
                     "SELECT seq, position_kind, position, file_pos FROM _dbstreams.cdc_checkpoint "
                     "WHERE stream = $1 AND partition = $2",
                     {stream, std::to_string(partition)},
                     "reading the CDC checkpoint of stream " + stream));
  CdcCheckpoint cp;
  if (PQntuples(res.get()) == 0) return cp;
  cp.seq = static_cast<uint64_t>(pg::Int(res.get(), 0, 0));
  cp.position.kind = cdc::PositionKindFromName(pg::Text(res.get(), 0, 1));
  cp.position.value = std::string(pg::Text(res.get(), 0, 2));
  cp.position.file_pos = std::string(pg::Text(res.get(), 0, 3));
  return cp;
}

Status PostgresSink::EnsureReplicaRole() {
  if (replica_role_tried_) return Status::Ok();
  replica_role_tried_ = true;
  Status s = pg::Command(conn(), "SET session_replication_role = replica",
                         "turning off triggers and foreign key checks for applying changes");
  if (!s.ok()) {
    if (!conn_ || PQstatus(conn()) != CONNECTION_OK) return s;
    Log(LogLevel::kWarn, "pg-sink",
        "cannot SET session_replication_role = replica (needs superuser): triggers and foreign "
        "keys of the target stay active while changes are applied; changes are applied in "
        "source order per table",
        {F("error", s.message())});
  }
  return Status::Ok();
}

Status PostgresSink::EnsureCdcStage(TargetInfo* target) {
  if (target->cdc_stage_created) return Status::Ok();
  if (target->cdc_stage_name.empty()) {
    target->cdc_stage_name = pg::QuoteIdent("_dbs_cdc_" + std::to_string(++stage_counter_));
  }
  std::vector<std::string> defs;
  for (const TargetColumn& tc : target->columns) {
    defs.push_back(pg::QuoteIdent(tc.name) + " " + (tc.staged ? tc.stage_type : tc.target_type));
  }
  defs.push_back(std::string(kOpColumn) + " int2");
  defs.push_back(std::string(kGroupColumn) + " int4");
  DBS_RETURN_IF_ERROR(pg::Command(conn(),
                                  "CREATE TEMP TABLE IF NOT EXISTS " + target->cdc_stage_name +
                                      " (" + Join(defs, ", ") + ") ON COMMIT DELETE ROWS",
                                  "preparing to apply changes to " + target->display));
  if (PQserverVersion(conn()) >= 150000) {
    DBS_ASSIGN_OR_RETURN(
        ResultPtr res,
        pg::ExecParams(conn(),
                       "SELECT c.relkind IN ('r', 'p') AND NOT c.relhasrules FROM pg_class c "
                       "WHERE c.oid = $1::regclass",
                       {target->quoted}, "inspecting " + target->display));
    target->cdc_merge = PQntuples(res.get()) == 1 && pg::Bool(res.get(), 0, 0);
  }
  target->cdc_stage_created = true;
  return Status::Ok();
}

std::string PostgresSink::ParamExpr(const TargetColumn& tc, size_t n) {
  std::string e = "$" + std::to_string(n) + "::" + (tc.staged ? tc.stage_type : tc.target_type);
  if (tc.staged) e += "::" + tc.target_type;
  return e;
}

Result<std::optional<std::string>> PostgresSink::Param(const TargetInfo& target,
                                                       const TargetColumn& tc,
                                                       const cdc::Cell& cell) {
  if (cell.null()) return std::optional<std::string>();
  std::string buf;
  Status s = pg::EncodeCell(tc.encoder, *cell.col, cell.row, options_.zero_date, &buf);
  if (!s.ok()) return s.WithContext("table " + target.display + ", column " + tc.name);
  if (buf.size() < 4) return Status::Internal("short binary value for column " + tc.name);
  const uint32_t len = (static_cast<uint32_t>(static_cast<uint8_t>(buf[0])) << 24) |
                       (static_cast<uint32_t>(static_cast<uint8_t>(buf[1])) << 16) |
                       (static_cast<uint32_t>(static_cast<uint8_t>(buf[2])) << 8) |
                       static_cast<uint32_t>(static_cast<uint8_t>(buf[3]));
  if (len == 0xFFFFFFFFu) return std::optional<std::string>();  // became NULL (zero date)
  return std::optional<std::string>(buf.substr(4));
}

Status PostgresSink::ExecBinary(const std::string& sql,
                                const std::vector<std::optional<std::string>>& params,
                                const std::string& context) {
  std::vector<const char*> values(params.size());
  std::vector<int> lengths(params.size()), formats(params.size(), 1);
  for (size_t i = 0; i < params.size(); ++i) {
    values[i] = params[i] ? params[i]->data() : nullptr;
    lengths[i] = params[i] ? static_cast<int>(params[i]->size()) : 0;
  }
  ResultPtr res(PQexecParams(conn(), sql.c_str(), static_cast<int>(params.size()), nullptr,
                             values.data(), lengths.data(), formats.data(), 0));
  const ExecStatusType st = PQresultStatus(res.get());
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    return pg::ErrorStatus(conn(), res.get(), context);
  }
  return Status::Ok();
}

Status PostgresSink::CopyImages(TargetInfo* target, const std::vector<const cdc::Image*>& images,
                                const std::vector<std::pair<int16_t, int32_t>>& tags) {
  const std::string ctx = "applying changes to " + target->display;
  std::vector<std::string> cols;
  for (const TargetColumn& tc : target->columns) cols.push_back(pg::QuoteIdent(tc.name));
  cols.push_back(kOpColumn);
  cols.push_back(kGroupColumn);
  const std::string sql =
      "COPY " + target->cdc_stage_name + " (" + Join(cols, ", ") + ") FROM STDIN (FORMAT binary)";
  ResultPtr start(PQexec(conn(), sql.c_str()));
  if (PQresultStatus(start.get()) != PGRES_COPY_IN) {
    return pg::ErrorStatus(conn(), start.get(), ctx);
  }
  copy_buf_.clear();
  copy_buf_.append(kCopyHeader, kCopyHeaderLen);
  const uint16_t nfields = static_cast<uint16_t>(target->columns.size() + 2);
  Status failed;
  for (size_t i = 0; i < images.size() && failed.ok(); ++i) {
    const cdc::Image& img = *images[i];
    pg::AppendBE16(&copy_buf_, nfields);
    for (const TargetColumn& tc : target->columns) {
      const cdc::Cell& c = img[tc.source_index];
      if (!c.present()) {
        pg::AppendBE32(&copy_buf_, 0xFFFFFFFFu);
        continue;
      }
      Status s = pg::EncodeCell(tc.encoder, *c.col, c.row, options_.zero_date, &copy_buf_);
      if (!s.ok()) {
        failed = s.WithContext("table " + target->display + ", column " + tc.name);
        break;
      }
    }
    if (!failed.ok()) break;
    pg::AppendBE32(&copy_buf_, 2);
    pg::AppendBE16(&copy_buf_, static_cast<uint16_t>(tags[i].first));
    pg::AppendBE32(&copy_buf_, 4);
    pg::AppendBE32(&copy_buf_, static_cast<uint32_t>(tags[i].second));
    if (copy_buf_.size() >= kCopyFlushBytes) failed = Flush(target->display);
  }
  if (failed.ok()) {
    pg::AppendBE16(&copy_buf_, 0xFFFF);
    failed = Flush(target->display);
  }
  copy_buf_.clear();
  if (PQputCopyEnd(conn(), failed.ok() ? nullptr : "dbstreams: aborted") != 1 && failed.ok()) {
    failed = pg::ErrorStatus(conn(), nullptr, ctx);
  }
  ResultPtr res(PQgetResult(conn()));
  if (failed.ok() && PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
    failed = pg::ErrorStatus(conn(), res.get(), ctx);
  }
  while (ResultPtr more{PQgetResult(conn())}) {
  }
  target->cdc_stage_dirty = true;
  return failed;
}

Status PostgresSink::RunKeyed(const cdc::Step& step, TargetInfo* target) {
  const std::string ctx = "applying changes to " + target->display;
  const bool keyed = step.kind == cdc::Step::Kind::kKeyed;
  std::vector<const cdc::Image*> images;
  std::vector<std::pair<int16_t, int32_t>> tags;
  std::vector<std::vector<size_t>> groups;
  bool any_delete = false, any_upsert = false;
  if (keyed) {
    groups = cdc::GroupUpdates(step);
    std::vector<int32_t> group_of(step.entries.size(), 0);
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t e : groups[g]) group_of[e] = static_cast<int32_t>(g);
    }
    for (size_t i = 0; i < step.entries.size(); ++i) {
      const cdc::KeyedEntry& e = step.entries[i];
      images.push_back(&e.image);
      switch (e.kind) {
        case cdc::KeyedEntry::Kind::kUpsert:
          tags.emplace_back(kStageUpsert, 0);
          any_upsert = true;
          break;
        case cdc::KeyedEntry::Kind::kDelete:
          tags.emplace_back(kStageDelete, 0);
          any_delete = true;
          break;
        case cdc::KeyedEntry::Kind::kUpdate:
          tags.emplace_back(kStageUpdate, group_of[i]);
          break;
      }
    }
  } else {
    for (const cdc::Image& r : step.rows) {
      images.push_back(&r);
      tags.emplace_back(kStageUpsert, 0);
    }
    any_upsert = true;
  }
  if (images.empty()) return Status::Ok();
  DBS_RETURN_IF_ERROR(EnsureCdcStage(target));
  if (target->cdc_stage_dirty) {
    DBS_RETURN_IF_ERROR(pg::Command(conn(), "DELETE FROM " + target->cdc_stage_name, ctx));
    target->cdc_stage_dirty = false;
  }
  DBS_RETURN_IF_ERROR(CopyImages(target, images, tags));

  // s.col with the cast of staged columns; the key join.
  auto value = [](const TargetColumn& tc) {
    std::string e = "s." + pg::QuoteIdent(tc.name);
    if (tc.staged) e += "::" + tc.target_type;
    return e;
  };
  std::vector<const TargetColumn*> by_index(step.table->columns.size(), nullptr);
  for (const TargetColumn& tc : target->columns) by_index[tc.source_index] = &tc;
  std::vector<std::string> join;
  std::vector<std::string> key_names;
  for (size_t k : step.key) {
    const TargetColumn* tc = by_index[k];
    if (tc == nullptr) {
      return Status::FailedPrecondition("table " + target->display + ": key column " +
                                        step.table->columns[k].name + " is not writable");
    }
    join.push_back("t." + pg::QuoteIdent(tc->name) + " = " + value(*tc));
    key_names.push_back(pg::QuoteIdent(tc->name));
  }
  const std::string join_sql = join.empty() ? "" : " AND " + Join(join, " AND ");
  if (keyed && target->cdc_merge && (any_delete || any_upsert)) {
    // One MERGE for the deletes and the full images: a single probe of the key per entry, no
    // speculative insertion and no row lock (an upsert of an existing row WAL-logs both, and
    // the WAL is what the source's senders read too). Keys are pairwise different within the
    // step, so no row is affected twice. The planner does not know how few rows the stage
    // holds (a temp table has no statistics) and would hash the whole target: the join is
    // held to an index nested loop for this transaction.
    std::vector<std::string> cols, exprs, sets;
    for (const TargetColumn& tc : target->columns) {
      cols.push_back(pg::QuoteIdent(tc.name));
      exprs.push_back(value(tc));
      if (!IsKeyColumn(step, tc.source_index)) {
        sets.push_back(pg::QuoteIdent(tc.name) + " = " + value(tc));
      }
    }
    std::string sql =
        "SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off; MERGE INTO " +
        target->quoted + " t USING (SELECT * FROM " + target->cdc_stage_name + " WHERE " +
        kOpColumn + " <> " + std::to_string(kStageUpdate) + ") s ON " + Join(join, " AND ");
    if (any_delete) {
      sql += " WHEN MATCHED AND s." + std::string(kOpColumn) + " = " +
             std::to_string(kStageDelete) + " THEN DELETE";
    }
    if (any_upsert) {
      sql += " WHEN MATCHED THEN " +
             (sets.empty() ? std::string("DO NOTHING") : "UPDATE SET " + Join(sets, ", ")) +
             " WHEN NOT MATCHED AND s." + kOpColumn + " = " + std::to_string(kStageUpsert) +
             " THEN INSERT (" + Join(cols, ", ") + ") OVERRIDING SYSTEM VALUE VALUES (" +
             Join(exprs, ", ") + ")";
    }
    DBS_RETURN_IF_ERROR(pg::Command(conn(), sql, ctx));
    any_delete = any_upsert = false;
  }
  if (any_delete) {
    DBS_RETURN_IF_ERROR(pg::Command(conn(),
                                    "DELETE FROM " + target->quoted + " t USING " +
                                        target->cdc_stage_name + " s WHERE s." + kOpColumn + " = " +
                                        std::to_string(kStageDelete) + join_sql,
                                    ctx));
  }
  if (any_upsert) {
    std::vector<std::string> cols, exprs, sets;
    for (const TargetColumn& tc : target->columns) {
      cols.push_back(pg::QuoteIdent(tc.name));
      exprs.push_back(value(tc));
      if (!IsKeyColumn(step, tc.source_index)) {
        sets.push_back(pg::QuoteIdent(tc.name) + " = EXCLUDED." + pg::QuoteIdent(tc.name));
      }
    }
    std::string sql = "INSERT INTO " + target->quoted + " (" + Join(cols, ", ") +
                      ") OVERRIDING SYSTEM VALUE SELECT " + Join(exprs, ", ") + " FROM " +
                      target->cdc_stage_name + " s WHERE s." + kOpColumn + " = " +
                      std::to_string(kStageUpsert);
    if (keyed) {
      sql += " ON CONFLICT (" + Join(key_names, ", ") + ") DO " +
             (sets.empty() ? std::string("NOTHING") : "UPDATE SET " + Join(sets, ", "));
    }
    DBS_RETURN_IF_ERROR(pg::Command(conn(), sql, ctx));
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    const cdc::Image& first = step.entries[groups[g].front()].image;
    std::vector<std::string> sets;
    for (const TargetColumn& tc : target->columns) {
      if (!first[tc.source_index].present() || IsKeyColumn(step, tc.source_index)) continue;
      sets.push_back(pg::QuoteIdent(tc.name) + " = " + value(tc));
    }
    if (sets.empty()) continue;
    DBS_RETURN_IF_ERROR(pg::Command(conn(),
                                    "UPDATE " + target->quoted + " t SET " + Join(sets, ", ") +
                                        " FROM " + target->cdc_stage_name + " s WHERE s." +
                                        kGroupColumn + " = " + std::to_string(g) + " AND s." +
                                        kOpColumn + " = " + std::to_string(kStageUpdate) + join_sql,
                                    ctx));
  }
  return Status::Ok();
}

Status PostgresSink::RunStep(const cdc::Step& step, TargetInfo* target) {
  const std::string ctx = "applying changes to " + target->display;
  using K = cdc::Step::Kind;
  switch (step.kind) {
    case K::kKeyed:
    case K::kKeylessInsert:
      return RunKeyed(step, target);
    case K::kTruncate:
      return pg::Command(conn(), "TRUNCATE " + target->quoted, ctx);
    default:
      break;
  }
  // One row: kMove, kKeylessDelete, kKeylessUpdate, with binary parameters.
  std::vector<std::optional<std::string>> params;
  auto add_param = [&](const TargetColumn& tc, const cdc::Cell& c) -> Result<std::string> {
    DBS_ASSIGN_OR_RETURN(std::optional<std::string> p, Param(*target, tc, c));
    params.push_back(std::move(p));
    return ParamExpr(tc, params.size());
  };
  std::vector<std::string> sets, conds;
  if (step.kind != K::kKeylessDelete) {
    for (const TargetColumn& tc : target->columns) {
      const cdc::Cell& c = step.after[tc.source_index];
      if (!c.present()) continue;
      DBS_ASSIGN_OR_RETURN(std::string e, add_param(tc, c));
      sets.push_back(pg::QuoteIdent(tc.name) + " = " + e);
    }
  }
  if (step.kind == K::kMove) {
    for (size_t k : step.key) {
      auto tc = std::find_if(target->columns.begin(), target->columns.end(),
                             [&](const TargetColumn& x) { return x.source_index == k; });
      if (tc == target->columns.end()) {
        return Status::FailedPrecondition("table " + target->display + ": key column " +
                                          step.table->columns[k].name + " is not writable");
      }
      DBS_ASSIGN_OR_RETURN(std::string e, add_param(*tc, step.before[k]));
      conds.push_back(pg::QuoteIdent(tc->name) + " = " + e);
    }
    if (sets.empty()) return Status::Ok();
    return ExecBinary(
        "UPDATE " + target->quoted + " SET " + Join(sets, ", ") + " WHERE " + Join(conds, " AND "),
        params, ctx + " (" + KeyText(step, step.before) + ")");
  }
  for (const TargetColumn& tc : target->columns) {
    const cdc::Cell& c = step.before[tc.source_index];
    if (!c.present()) continue;
    DBS_ASSIGN_OR_RETURN(std::string e, add_param(tc, c));
    const std::string col = pg::QuoteIdent(tc.name);
    if (CompareAsText(tc.target_type)) {
      conds.push_back(col + "::text IS NOT DISTINCT FROM (" + e + ")::text");
    } else {
      conds.push_back(col + " IS NOT DISTINCT FROM " + e);
    }
  }
  if (conds.empty()) {
    return Status::InvalidArgument("table " + target->display +
                                   " has no primary key and a change carries no old column "
                                   "values to find its row by");
  }
  const std::string where = " WHERE ctid = (SELECT ctid FROM " + target->quoted + " WHERE " +
                            Join(conds, " AND ") + " LIMIT 1)";
  if (step.kind == K::kKeylessDelete) {
    return ExecBinary("DELETE FROM " + target->quoted + where, params, ctx);
  }
  if (sets.empty()) return Status::Ok();
  return ExecBinary("UPDATE " + target->quoted + " SET " + Join(sets, ", ") + where, params, ctx);
}

Result<size_t> PostgresSink::ApplyChanges(const ChangeBatch& batch) {
  const std::string stream = cdc::CdcStreamName(options_);
  const std::string what = "stream " + stream + ", partition " + std::to_string(batch.partition);
  if (batch.first_seq == 0 || batch.last_seq < batch.first_seq) {
    return Status::InvalidArgument("change batch of " + what + " has sequence numbers " +
                                   std::to_string(batch.first_seq) + ".." +
                                   std::to_string(batch.last_seq));
  }
  DBS_ASSIGN_OR_RETURN(cdc::Plan plan, cdc::PlanBatch(batch));
  DBS_RETURN_IF_ERROR(EnsureBookkeeping());
  DBS_RETURN_IF_ERROR(EnsureReplicaRole());
  // Targets and staging tables before the transaction.
  std::vector<TargetInfo*> targets(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    DBS_ASSIGN_OR_RETURN(targets[i], Target(*plan.steps[i].table));
    const auto k = plan.steps[i].kind;
    if (k == cdc::Step::Kind::kKeyed || k == cdc::Step::Kind::kKeylessInsert) {
      DBS_RETURN_IF_ERROR(EnsureCdcStage(targets[i]));
    }
  }
  for (TargetInfo* t : targets) t->cdc_stage_dirty = false;  // emptied by the last commit
  bool already = false;
  auto body = [&]() -> Status {
    DBS_ASSIGN_OR_RETURN(
        ResultPtr res,
        pg::Exec(conn(),
                 "BEGIN; INSERT INTO _dbstreams.cdc_checkpoint (stream, partition) VALUES (" +
                     pg::QuoteLiteral(stream) + ", " + std::to_string(batch.partition) +
                     ") ON CONFLICT DO NOTHING; SELECT seq FROM _dbstreams.cdc_checkpoint "
                     "WHERE stream = " +
                     pg::QuoteLiteral(stream) +
                     " AND partition = " + std::to_string(batch.partition) + " FOR UPDATE",
                 "locking the CDC checkpoint of " + what));
    const uint64_t seq = static_cast<uint64_t>(pg::Int(res.get(), 0, 0));
    if (batch.last_seq <= seq) {
      already = true;
      return pg::Command(conn(), "ROLLBACK", "ending a redelivered batch");
    }
    if (batch.first_seq != seq + 1) {
      return Status::FailedPrecondition(
          "change batch " + std::to_string(batch.first_seq) + ".." +
          std::to_string(batch.last_seq) + " of " + what +
          " does not follow the target's checkpoint " + std::to_string(seq) + " (expected " +
          std::to_string(seq + 1) +
          "): another writer is behind or ahead; wait for it or redeliver from " +
          std::to_string(seq + 1));
    }
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      DBS_RETURN_IF_ERROR(AsRejected(RunStep(plan.steps[i], targets[i])));
    }
    DBS_RETURN_IF_ERROR(
        pg::ExecParams(conn(),
                       "UPDATE _dbstreams.cdc_checkpoint SET seq = $3, position_kind = $4, "
                       "position = $5, file_pos = $6, updated_at = now() "
                       "WHERE stream = $1 AND partition = $2",
                       {stream, std::to_string(batch.partition), std::to_string(batch.last_seq),
                        std::string(cdc::PositionKindName(batch.position.kind)),
                        batch.position.value, batch.position.file_pos},
                       "moving the CDC checkpoint of " + what)
            .status());
    return pg::Command(conn(), "COMMIT", "committing changes of " + what);
  };
  Status s = body();
  for (TargetInfo* t : targets) t->cdc_stage_dirty = false;
  if (!s.ok()) {
    pg::RollbackQuietly(conn());
    return s;
  }
  if (already) return size_t{0};
  return plan.changes;
}

Status PostgresSink::AddColumns(const TableSchema& new_schema,
                                const std::vector<std::string>& added) {
  DBS_RETURN_IF_ERROR(EnsureConnected());
  const std::string schema = TargetSchema(new_schema);
  const std::string quoted = pg::QualifiedName(schema, new_schema.name);
  const std::string display = schema + "." + new_schema.name;
  std::vector<std::string> warnings;
  const DdlOptions o = Ddl(new_schema, &warnings);
  std::vector<std::string> clauses;
  for (const std::string& name : added) {
    const int i = new_schema.FindColumn(name);
    if (i < 0) {
      return Status::InvalidArgument("adding column " + name + " to " + display +
                                     ": the new schema of the table has no such column");
    }
    const Column& c = new_schema.columns[static_cast<size_t>(i)];
    DBS_ASSIGN_OR_RETURN(std::string type, TargetType(c, Dialect::kPostgres, source_dialect(), o));
    std::string clause = "ADD COLUMN IF NOT EXISTS " + pg::QuoteIdent(c.name) + " " + type;
    DBS_ASSIGN_OR_RETURN(std::optional<std::string> def,
                         TargetDefault(c, Dialect::kPostgres, source_dialect(), o));
    if (def) {
      clause += " DEFAULT " + *def;
      if (!c.nullable) clause += " NOT NULL";
    }
    clauses.push_back(std::move(clause));
  }
  for (const std::string& w : warnings) Log(LogLevel::kWarn, "pg-sink", w);
  if (!clauses.empty()) {
    Status s = pg::Command(conn(), "ALTER TABLE " + quoted + " " + Join(clauses, ", "),
                           "adding columns to " + display);
    if (!s.ok()) return s;
  }
  targets_.erase(Key(new_schema));  // the next use reads the new columns
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Sink>> OpenPostgresSink(const ConnectionConfig& config,
                                               const SinkOptions& options) {
  if (config.engine != Engine::kPostgres) {
    return Status::InvalidArgument("not a PostgreSQL connection: " + config.Redacted());
  }
  if (options.stream.empty()) return Status::InvalidArgument("the sink needs a stream name");
  DBS_ASSIGN_OR_RETURN(ConnPtr conn, pg::Connect(config));
  DBS_ASSIGN_OR_RETURN(ResultPtr res, pg::Exec(conn.get(),
                                               "SELECT EXISTS (SELECT 1 FROM pg_extension "
                                               "WHERE extname = 'postgis')",
                                               "checking for PostGIS"));
  const bool postgis = pg::Bool(res.get(), 0, 0);
  return std::unique_ptr<Sink>(
      std::make_unique<PostgresSink>(config, options, std::move(conn), postgis));
}

}  // namespace dbs

// MysqlSink: the Sink (sinks/sink.h) for MySQL 5.7/8.x and MariaDB 10.x targets, on libmariadb.
//
// Contract (beyond sink.h):
//  - Bookkeeping lives in the database `_dbstreams` on the target (InnoDB, created on Open):
//      applied(stream, bundle_id)      one row per written bundle, primary key on both
//      state(stream, tbl, phase, info) what was done once per stream and table: 'prepared'
//                                      (info: 'created' or 'existing'), 'indexes',
//                                      'foreign_keys', 'checks'
//    The user needs CREATE, INSERT, DELETE, SELECT on `_dbstreams` besides the target rights.
//  - The target database of a table is SinkOptions::target_schema, else the connection's
//    database, else the source schema (TargetSchemaFor in config/stream_config.h).
//  - PrepareTable runs under GET_LOCK('dbstreams:<stream>:<db>.<table>', 60) (a hash of that
//    when longer than 64 characters): the first caller applies the schema policy and the write
//    mode and records 'prepared'; later callers (other writers, restarts) only read the target's
//    columns. Tables are created with their primary key only (ENGINE=InnoDB, utf8mb4);
//    secondary indexes, foreign keys and checks come in FinishStream, and only for tables this
//    stream created.
//  - Apply writes in one transaction: per bundle `INSERT INTO _dbstreams.applied ... ON
//    DUPLICATE KEY UPDATE` (affected rows say whether the id is new; a concurrent writer
//    inserting the same id blocks on its row lock until that writer commits or rolls back),
//    then the new bundles' rows, per table, by the target URL parameter writeMethod:
//      auto (default)  bulk_insert on MariaDB 10.2.7 and later, else load_data
//      bulk_insert     one prepared INSERT (upsert: ... ON DUPLICATE KEY UPDATE) executed for
//                      arrays of rows (mysql_bulk_insert.h; each execution under
//                      max_allowed_packet / 2, at most 8 MB); a rejected value is an error whose
//                      "at row N" names the source row; a server that will not prepare it
//                      (max_prepared_stmt_count, a proxy) gets load_data instead (logged)
//      load_data       one LOAD DATA LOCAL INFILE per table, streamed from memory through a
//                      local-infile handler (never a file, never the whole batch as one
//                      string); upserts load into a session temporary table and run
//                      INSERT ... SELECT ... ON DUPLICATE KEY UPDATE
//      insert          multi-row INSERT statements (also load_data's fallback when the server
//                      has local_infile off, logged once)
//    LOAD DATA LOCAL turns data errors into warnings (the server cannot stop the client's
//    upload), so every load's (and bulk execution's) row count and warnings are checked and any
//    warning fails the transaction with the server's words (naming the column and row).
//    foreign_key_checks is off for the session; unique_checks is off while loading into tables
//    the stream created.
//  - Apply writes rows as inserts: bundles carrying CDC updates or deletes are Unsupported
//    there (ApplyChanges applies them).
//  - CDC: `_dbstreams`.`cdc_checkpoint`(stream, partition, seq, position_kind, position,
//    file_pos, updated_at), primary key (stream, partition); stream is SinkOptions::cdc_stream
//    (empty: SinkOptions::stream up to its last '.'). ApplyChanges plans the batch
//    (sinks/change_plan.h: per-key compaction, so set-based statements give exactly the
//    one-by-one result) and runs in ONE transaction: INSERT ... ON DUPLICATE KEY UPDATE of the
//    checkpoint row plus SELECT ... FOR UPDATE; last_seq <= seq: ROLLBACK, returns 0; first_seq
//    != seq + 1: FailedPrecondition naming both; else per step, values written by the same
//    ColumnWriters as Apply (mysql_load_encoder.h; integers and plain decimals bare, so key
//    comparisons stay exact): DELETE ... WHERE key IN (...) (deletes), multi-row INSERT ... ON
//    DUPLICATE KEY UPDATE (inserts and full-image updates), UPDATE ... SET c = CASE <key> ...
//    END WHERE key IN (...) per set of present columns (partial updates: unchanged cells keep
//    their value), DELETE FROM for truncates (TRUNCATE would commit); tables without a primary
//    key: plain multi-row INSERT, and each update/delete matches ONE row with `<=>` on every
//    present old value (FLOAT and JSON columns are not compared) and LIMIT 1; a partial update
//    changing the key of a row not in the batch is one UPDATE by the old key. Then the
//    checkpoint moves to (last_seq, position) and the transaction commits; any error rolls all
//    of it back. foreign_key_checks=0 for the session (SessionRole::kWrite), so foreign keys do
//    not interfere with the order of set-based statements; target triggers do fire. Target
//    tables are found as Apply finds them (the TableSchema in batch.tables names the target,
//    as for PrepareTable; the writer calls PrepareTable for every table before its first
//    change batch, and a table this Sink has not seen yet is prepared on first use).
//    AddColumns: ALTER TABLE ... ADD COLUMN with typemap's TargetType (as CreateTableSql) for
//    columns the table does not have yet (idempotent).
//  - Shadow tables (SinkOptions::shadow_tables, which the writers set): a table the run creates
//    or replaces (target missing, fail_if_exists, drop_and_recreate) is created in the shadow
//    database `_dbs_sh_<hash of run and target database>` and loaded there; an existing table
//    under truncate_and_load is loaded into a copy there (CREATE TABLE ... LIKE). The target
//    is untouched until FinishStream's swap (SwapIn), under the run's lock, resumable:
//    ONE RENAME TABLE moves every new table into place (a replaced table is renamed aside to
//    `_dbs_old_<hash>` in its own database, then dropped; foreign keys of other tables, which
//    InnoDB moves with the renamed table, are re-pointed at the new one), then ONE transaction
//    refills the truncate_and_load tables (DELETE + INSERT ... SELECT; they keep definition,
//    triggers and the foreign keys pointing at them), then the shadow databases are dropped
//    and the run is recorded 'swapped' (state row tbl = '', phase 'run'). MySQL has no
//    transactional DDL, so the two steps are not one atomic unit: a failure between them is
//    finished by the next attempt of the same run, and AbandonStream refuses to undo it.
//    AbandonStream (no swap begun): records the run 'failed' (no writer prepares a table of it
//    again), drops its shadow databases (kept with keep_partial) and applied-bundle records,
//    and `_dbstreams` when the run was its only user. The next run of the stream drops what
//    earlier runs left (DropStaleRuns).
//  - Errors: values the target rejects are non-retryable InvalidArgument naming the table (and,
//    where MySQL says it, the column); deadlocks, lock wait timeouts and lost connections are
//    retryable (a lost connection is re-opened on the next call).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/connection.h"
#include "sinks/sink.h"

namespace dbs {

namespace mysql {
class MysqlConnection;
struct ColumnWriter;
}  // namespace mysql
namespace cdc {
struct Step;
struct Cell;
}  // namespace cdc

class MysqlSink : public Sink {
 public:
  static Result<std::unique_ptr<MysqlSink>> Open(const ConnectionConfig& config,
                                                 const SinkOptions& options);
  ~MysqlSink() override;

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

  // True when rows go through LOAD DATA LOCAL INFILE (false: bulk INSERT or multi-row INSERT).
  bool uses_load_data() const { return load_data_ && !bulk_insert_; }
  // True when rows go through MariaDB's bulk INSERT (mysql_bulk_insert.h).
  bool uses_bulk_insert() const { return bulk_insert_; }

  struct TablePlan;  // how one table is written (mysql_sink.cc)

 private:
  MysqlSink(ConnectionConfig config, SinkOptions options);
  // Opens the connection; with `bookkeeping`, creates `_dbstreams` and its tables when missing.
  Status Connect(bool bookkeeping = true);
  Status EnsureConnected();
  std::string TargetDatabase(const std::string& source_schema) const;
  Result<TablePlan*> PlanFor(const TableSchema& source_table);
  Status WriteTable(TablePlan* plan, const std::vector<const BundleRef*>& bundles);
  Status WriteWithLoadData(TablePlan* plan, const std::vector<const BundleRef*>& bundles);
  Status WriteWithInsert(TablePlan* plan, const std::vector<const BundleRef*>& bundles);
  Status WriteWithBulkInsert(TablePlan* plan, const std::vector<const BundleRef*>& bundles);
  // The statement's warnings (SHOW WARNINGS), each "... at row N" followed by the source row
  // `locate(N)` returns ({nullptr, 0}: none).
  template <typename Locate>
  std::string WarningsDetail(const TablePlan& plan, Locate&& locate);
  Result<size_t> ApplyOnce(const std::vector<BundleRef>& bundles);
  // CDC: one step of a planned change batch (sinks/change_plan.h), inside the transaction.
  Status RunStep(const cdc::Step& step, TablePlan* plan);
  // Appends the SQL value of `cell` for written column j of `plan` (NULL when not set).
  Status AppendValue(const TablePlan& plan, size_t j, const cdc::Cell& cell, std::string* sql);
  // Runs `body` holding the stream's lock for `table` ("db.table").
  template <typename F>
  Status WithTableLock(const std::string& table, F&& body);
  // How the run ended ("swapped", "failed", ...; "" while it runs), read under the run's lock,
  // so that a swap under way is waited for.
  Result<std::string> RunEnd();
  Result<bool> HasPhase(const std::string& table, const std::string& phase,
                        std::string* info = nullptr);
  Status RecordPhase(const std::string& table, const std::string& phase, const std::string& info);
  // --- Shadow tables (SinkOptions::shadow_tables; see the contract above) ---
  // The shadow database named by a 'prepared' info ("new:<db>", "copy:<db>"); empty: none.
  static std::string ShadowOf(const std::string& info);
  // _dbs_sh_<16 hex digits of FNV-1a(stream, target database)>: one per run and database.
  std::string ShadowDatabase(const std::string& db) const;
  Result<bool> TableExists(const std::string& db, const std::string& name);
  // FinishStream's last step, once per run, resumable after a crash at any point.
  Status SwapIn(const std::vector<TableSchema>& tables);
  // Foreign keys of other tables that followed `old_name` (renamed aside) now point at `name`.
  Status RepointForeignKeys(const std::string& db, const std::string& old_name,
                            const std::string& name);
  // Once per sink: drops the shadow databases and bookkeeping of earlier runs of the stream.
  Status DropStaleRuns();
  // After an abandoned run: drops `_dbstreams` when nothing but this run used it.
  Status DropBookkeepingIfOnlyOurs();
  // Inside the swap, before it is recorded: creates the run's schema objects (mysql_objects.h)
  // and records what became of each in `_dbstreams`.`report`; resumable.
  Status CreateObjectsAndReport(const std::vector<TableSchema>& tables);

  ConnectionConfig config_;
  SinkOptions options_;
  std::unique_ptr<mysql::MysqlConnection> conn_;
  bool load_data_ = true;
  bool bulk_insert_ = false;
  bool stale_dropped_ = false;
  bool dropped_bookkeeping_ = false;
  uint64_t max_statement_bytes_ = 4u << 20;
  std::map<std::string, std::unique_ptr<TablePlan>> plans_;  // by "<source schema>\n<name>"
};

// Sink::Open's entry for mysql:// and mariadb:// targets.
Result<std::unique_ptr<Sink>> OpenMysqlSink(const ConnectionConfig& config,
                                            const SinkOptions& options);

}  // namespace dbs

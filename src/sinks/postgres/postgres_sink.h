// The PostgreSQL sink (libpq), chosen by Sink::Open for postgres:// targets.
//
// Bookkeeping lives in the target, in schema _dbstreams (created on first use):
//   _dbstreams.dbstreams_state(stream, tbl, phase, shadow, swap)  one row per stream and target
//       table: the schema policy and write mode were applied ('prepared'), indexes and checks
//       were created ('indexed'), foreign keys too ('finished'); shadow: the schema of the
//       table's shadow copy ('' when written in place), swap: how it comes in ('new', 'copy').
//       The run's own row has tbl = '': phase 'swapped' or 'failed';
//   _dbstreams.applied(stream, bundle_id)           the ids of the bundles written.
//
// Shadow tables (SinkOptions::shadow_tables; the writers set it): a table the run creates (any
// policy that creates, drop_and_recreate included: the old table stays) is created in schema
// _dbs_shadow_<16 hex digits of FNV-1a(stream, target schema)> under its own name; an existing
// table under truncate_and_load gets a copy there (CREATE TABLE ... (LIKE t INCLUDING DEFAULTS
// INCLUDING GENERATED)) and is not truncated. Apply writes into the copies. FinishStream builds
// keys, indexes, checks and foreign keys on the 'new' copies (foreign keys between copies point
// at the copies), then SwapIn, once, under the run's lock, in ONE transaction: drops the old
// tables of drop_and_recreate (CASCADE), moves the 'new' copies in (ALTER TABLE ... SET SCHEMA:
// indexes, constraints, owned sequences move along), TRUNCATEs the 'copy' tables together and
// fills them (INSERT ... SELECT, referenced tables first), creates their indexes, checks and
// the foreign keys from or to them, drops the shadow schemas, records 'swapped'. A table that
// appeared during the run under a policy other than drop_and_recreate fails the swap.
// AbandonStream (under the same lock): records 'failed' (PrepareTable then refuses), drops the
// shadow schemas (keep_partial: keeps them, returns the copies' names) and the run's applied
// records, then drops _dbstreams when no other stream has rows there. The first PrepareTable of
// a sink drops what earlier runs of the same stream name ("<name>.<run>") left: their shadow
// schemas, state rows and applied records. Test hook: DBS_TEST_SWAP_PAUSE_SECONDS (seconds to
// sleep inside the swap transaction before COMMIT).
//
// PrepareTable(t), under pg_advisory_xact_lock(hash(stream, target table)), in one transaction
// with the state row, so exactly one writer applies it, once:
//   schema policy  fail_if_exists: AlreadyExists when the table exists; create_missing: create
//                  it when missing; drop_and_recreate: DROP TABLE ... CASCADE, then create
//                  (with shadow tables: create the copy, drop at the swap);
//                  validate_existing: NotFound when missing, FailedPrecondition listing every
//                  difference (missing columns, types that cannot hold the values, NOT NULL
//                  target columns without default that the source does not fill).
//   write mode     truncate_and_load: TRUNCATE an existing table (with shadow tables: a copy,
//                  see above); fail_if_not_empty:
//                  FailedPrecondition when it has rows; upsert: FailedPrecondition unless the
//                  source has a primary key and the target a unique index on those columns;
//                  append: nothing.
// Tables are created with their primary key only (typemap's CreateTableSql, after CREATE SCHEMA
// IF NOT EXISTS and the enum types); FinishStream adds the rest. The target schema is
// SinkOptions::target_schema, else the source table's schema.
//
// Apply(bundles), in ONE transaction: INSERT the ids into _dbstreams.applied ... ON CONFLICT
// DO NOTHING RETURNING bundle_id gives the bundles not written yet; their rows go in with one
// binary COPY per table (all of that table's bundles in the batch). Values are encoded for the
// target column's actual type (pg_encode.h). Columns whose target type has no binary encoder
// here (inet, xml, ranges, money, composites, text into uuid, ...) are "staged": the table's
// rows are COPYed into a session temp table (ON COMMIT DELETE ROWS) whose staged columns have a
// natural type for the value (text, numeric, ...), then INSERT ... SELECT casts them to the
// target types. This keeps one binary encoder set (no text-format escaping) and costs a second
// copy of the rows only for tables that need it. Upsert always stages: INSERT ... SELECT
// DISTINCT ON (pk) (the last row of a key in the batch wins) ... ON CONFLICT (pk) DO UPDATE.
// Generated target columns are not written (the target computes them).
//
// FinishStream(tables): per table, under the same lock and once (state phases): identity
// sequences moved past the data, then (per StructureOptions) secondary and unique indexes and
// checks; once every table has those, foreign keys. A foreign key is added in one statement
// (validated at once, no NOT VALID + VALIDATE): nothing writes to the tables at this point, so
// the weaker lock of VALIDATE buys nothing, and a failure leaves no unvalidated constraint
// behind. Foreign keys to tables missing from the target are skipped with a logged warning.
//
// ForgetStream() deletes the stream's _dbstreams.applied rows once every bundle is committed
// and acknowledged. Its state rows stay, so a writer that looks at the stream afterwards sees
// its tables prepared and finished and never applies the schema policy again. (The writer scopes
// SinkOptions::stream to one run, so a new run starts with fresh checkpoints and policies.)
//
// CDC (ReadCdcCheckpoint / ApplyChanges / AddColumns):
//   _dbstreams.cdc_checkpoint(stream, partition, seq, position_kind, position, file_pos,
//       updated_at), primary key (stream, partition); stream is SinkOptions::cdc_stream (empty:
//       SinkOptions::stream up to its last '.'), so a restarted run resumes where the last one
//       stopped.
//   ApplyChanges(batch) plans the batch (sinks/change_plan.h: per-key compaction, so set-based
//   statements give exactly the one-by-one result), then in ONE transaction: inserts the
//   checkpoint row if missing and locks it (SELECT ... FOR UPDATE); last_seq <= seq: ROLLBACK,
//   returns 0; first_seq != seq + 1: FailedPrecondition naming both; else per step: the row
//   images are COPYed (binary, the same pg_encode encoders as Apply) into a session temp table
//   per target table (_dbs_cdc_<n>, ON COMMIT DELETE ROWS, created before the transaction),
//   then the deletes and the full images (inserts, full-image updates) in one MERGE (server 15+,
//   target an ordinary or partitioned table without rules; the join held to an index nested
//   loop: no WAL-logged row lock or speculative insertion per row) or else DELETE ... USING and
//   INSERT ... SELECT ... ON CONFLICT (pk) DO UPDATE, then one UPDATE ... FROM per set of
//   present columns (partial updates:
//   unchanged cells keep their target value); TRUNCATE for truncate segments; tables without a
//   primary key: plain INSERT ... SELECT, and each update/delete matches exactly one row on
//   every present old value with IS NOT DISTINCT FROM (json, xml and geometric types compared
//   as text) through a ctid subselect with LIMIT 1, binary parameters; a partial update that
//   changes the key of a row not in the batch is one UPDATE by the old key. Then the checkpoint
//   row moves to (last_seq, position) and the transaction commits. Any error rolls back all of
//   it. Returns the row changes applied (inserts, updates, deletes, plus one per truncate).
//   The target table of a batch table is found like Apply finds it: TargetSchema(t) and t.name
//   of the TableSchema in batch.tables (the writer names the target there, as for
//   PrepareTable); the writer calls PrepareTable for every table before its first change batch
//   (a table never prepared by any writer is looked up, not created). The apply session runs
//   `SET session_replication_role = replica` (once, when allowed: superuser) so target triggers
//   and foreign keys do not fire (as in PostgreSQL's own logical replication); when refused, a
//   warning is logged and they stay active: steps still run in source order per table, tables
//   in order of first appearance.
//   AddColumns: ALTER TABLE ... ADD COLUMN IF NOT EXISTS with typemap's TargetType (as
//   CreateTableSql), the translated default, NOT NULL only with a default. (New enum types are
//   not created: a PostgreSQL enum column added on the source needs its type on the target.)
//
// Errors: a row the target rejects (constraint violation, a value out of range for the type, a
// zero date under zeroDate=error) names the table and, when known, the column, and is not
// retryable (ApplyChanges reports constraint violations as InvalidArgument too, so its
// FailedPrecondition always means a gap); serialization failures, deadlocks and connection loss are
// retryable (the sink reconnects on the next call).
#pragma once

#include <memory>

#include "core/result.h"
#include "sinks/sink.h"

namespace dbs {

Result<std::unique_ptr<Sink>> OpenPostgresSink(const ConnectionConfig& config,
                                               const SinkOptions& options);

}  // namespace dbs

// The PostgreSQL sink (libpq), chosen by Sink::Open for postgres:// targets.
//
// Bookkeeping lives in the target, in schema _dbstreams (created on first use):
//   _dbstreams.dbstreams_state(stream, tbl, phase)  one row per stream and target table: the
//       schema policy and write mode were applied ('prepared'), indexes and checks were created
//       ('indexed'), foreign keys too ('finished');
//   _dbstreams.applied(stream, bundle_id)           the ids of the bundles written.
//
// PrepareTable(t), under pg_advisory_xact_lock(hash(stream, target table)), in one transaction
// with the state row, so exactly one writer applies it, once:
//   schema policy  fail_if_exists: AlreadyExists when the table exists; create_missing: create
//                  it when missing; drop_and_recreate: DROP TABLE ... CASCADE, then create;
//                  validate_existing: NotFound when missing, FailedPrecondition listing every
//                  difference (missing columns, types that cannot hold the values, NOT NULL
//                  target columns without default that the source does not fill).
//   write mode     truncate_and_load: TRUNCATE an existing table; fail_if_not_empty:
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
// Errors: a row the target rejects (constraint violation, a value out of range for the type, a
// zero date under zeroDate=error) names the table and, when known, the column, and is not
// retryable; serialization failures, deadlocks and connection loss are retryable (the sink
// reconnects on the next call).
#pragma once

#include <memory>

#include "core/result.h"
#include "sinks/sink.h"

namespace dbs {

Result<std::unique_ptr<Sink>> OpenPostgresSink(const ConnectionConfig& config,
                                               const SinkOptions& options);

}  // namespace dbs

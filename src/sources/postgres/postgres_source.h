// The PostgreSQL source (libpq), chosen by Source::Open for postgres:// connections.
//
// Besides the Source contract (sources/source.h):
//  - Open() connects the control connection; its errors say why (Unavailable and retryable
//    when the server cannot be reached, Unauthenticated, NotFound for a missing database).
//  - BeginSnapshot() opens its own connection and keeps a REPEATABLE READ READ ONLY transaction
//    open for the Snapshot's lifetime; it exports that snapshot (pg_export_snapshot) and records
//    pg_current_wal_lsn() (pg_last_wal_replay_lsn() on a standby) as the position. A reader
//    takes a connection that already imported the snapshot (SET TRANSACTION SNAPSHOT) and
//    was handed back by an earlier reader whose COPY ended cleanly, or connects and imports it
//    anew, so readers on any number of threads see exactly the same data, and a table's chunks
//    do not each start a server backend. The position is read just after the snapshot
//    is taken: commits in between are in the WAL before the position but not in the snapshot,
//    so an exact CDC hand-off takes its snapshot from a replication slot instead.
//  - DefaultSplitRows() is 0: without splitRows a table is read by one sequential scan, which
//    the server runs through a small ring of buffers. Chunk scans (TID range or index) go
//    through the whole buffer pool instead: on 2026-12-07's 2-core machine they cost the
//    server 1.5-2 times the CPU a row and evicted the pages of everything else the server
//    holds (docs/benchmarks.md, "one scan a PostgreSQL table").
//  - Split() makes chunks of about rows_per_chunk rows by the pg_class.reltuples estimate. On
//    PostgreSQL 14+ a plain table that was analyzed is split into equal ranges of heap pages
//    (ctid ranges, read by TID range scans; any key or none). Otherwise a single-column
//    integer primary key's [min, max] is split into equal key ranges (the key span stands in
//    for the estimate when the table was never analyzed). The first and last ranges are
//    open-ended.
#pragma once

#include <memory>

#include "core/result.h"
#include "sources/source.h"

namespace dbs {

Result<std::unique_ptr<Source>> OpenPostgresSource(const ConnectionConfig& config);

}  // namespace dbs

// PostgreSQL change data capture: the ChangeStream over logical replication with the built-in
// pgoutput plugin, and the pieces PostgresSource's CDC methods need (checks, publication,
// slot with an exported snapshot).
//
// Contract (besides sources/change_stream.h):
//  - OpenPgChangeStream() opens a control connection (catalog, publication) and a replication
//    connection (replication=database). It creates the publication when missing ("FOR TABLE"
//    the followed tables; FOR ALL TABLES when none are named) and adds missing followed tables
//    to an existing one; it reuses the slot, or creates it when options.start is empty. A
//    missing slot with a start position is a loud non-retryable FailedPrecondition: the changes
//    since that position are gone.
//  - Values travel in binary (PostgreSQL >= 14, when every followed column has a binary
//    decoder in pg_decode) or as text (pg_text); protocol 2 with streaming of large in-progress
//    transactions on >= 14. Streamed transactions are buffered (spilled to a temporary file
//    beyond 1 MB) until Stream Commit and dropped on Stream Abort.
//  - Standby status updates go out at least every second: write = what was received, flush =
//    apply = the last Confirm()ed LSN. When everything handed out was confirmed and no
//    transaction is open, a keepalive's WAL position is confirmed too (an idle slot advances).
//  - Errors: lost connection Unavailable (retryable); dropped slot / publication
//    FailedPrecondition naming it (not retryable); malformed server bytes Corruption.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/connection.h"
#include "core/result.h"
#include "postgres/pg_client.h"
#include "postgres/pg_types.h"
#include "sources/change_stream.h"

namespace dbs::pg {

// "0/16B3748" (upper-case hex, as PostgreSQL prints it) <-> the 64-bit LSN.
std::string FormatLsn(uint64_t lsn);
Result<uint64_t> ParseLsn(std::string_view text);

struct CdcNames {
  std::string slot;
  std::string publication;
};
// options.slot_name / publication_name, or "dbs_<stream>" lower-cased with characters outside
// [a-z0-9_] replaced by '_' (at most 63 bytes). InvalidArgument for a name PostgreSQL would
// reject (slots: only lower-case letters, digits and '_').
Result<CdcNames> ResolveCdcNames(const CdcOptions& options);

// Checks wal_level, the role's REPLICATION attribute, slot capacity, the slot and publication
// (plugin, database, in use, names) and every followed table's replica identity; the message
// says what to change.
Status CheckPgCdc(PGconn* conn, const CdcOptions& options);

Result<std::unique_ptr<ChangeStream>> OpenPgChangeStream(const ConnectionConfig& config,
                                                         const CdcOptions& options);

// For BeginCdcSnapshot: makes sure the publication exists, drops an inactive slot of the same
// name (logged), and creates the slot exporting its snapshot. `conn` is the replication
// connection that holds the snapshot: keep it open and idle while readers import `snapshot`.
struct ExportedSlot {
  ConnPtr conn;
  std::string snapshot;
  SourcePosition position;  // the slot's consistent point
};
Result<ExportedSlot> CreateSlotWithSnapshot(const ConnectionConfig& config,
                                            const CdcOptions& options);

}  // namespace dbs::pg

// BinlogStream: the ChangeStream (sources/change_stream.h) of a MySQL/MariaDB server, read from
// its binary log over the replication protocol (libmariadb's mariadb_rpl_* API, raw events
// decoded by binlog_event.h).
//
// Contract (beyond change_stream.h):
//  - Owns two connections: the binlog dump connection (a replica with `server_id`, from
//    CdcOptions or derived from the stream name) and a control connection (a MysqlSource) that
//    describes tables and reads positions. Used from one thread.
//  - Start: options.start empty -> the server's current position (SHOW MASTER STATUS, its GTID
//    set via BINLOG_GTID_POS on MariaDB). kMysqlFilePos -> that file/offset. kMysqlGtid ->
//    MariaDB: @slave_connect_state (GTID strict mode); MySQL: its file_pos (a GTID-only MySQL
//    start is Unsupported). Transactions whose GTID the start set contains are skipped.
//  - Transactions (GTID/BEGIN .. XID/COMMIT) become ChangeTxns with one segment per run of one
//    table; UPDATE rows are a kUpdateBefore row then a kUpdate row; cells missing from a
//    partial image are "unchanged". Parts hold at most max_part_rows rows (an UPDATE counts 2).
//    A non-final part carries the position before the transaction (resume repeats it whole).
//  - Followed tables: options.tables, or (empty) every table of the connection's database.
//    TRUNCATE TABLE -> a truncate segment. Another DDL on a followed table -> kSchemaChange
//    with the table re-described (its schema *now*, so several DDLs replayed from an old
//    position all see the latest schema) and the statement text; a DDL after which the table
//    cannot be described (DROP, RENAME) is a non-retryable FailedPrecondition naming both.
//  - position: kMysqlGtid with the executed GTID set after the transaction and file_pos
//    "file:end_offset", or kMysqlFilePos when the server has no GTIDs.
//  - Next() waits at most about `timeout` (plus one heartbeat period, at most 1 s: the server
//    sends heartbeats on an idle binlog so the read never blocks for long).
//  - Unsupported (non-retryable, naming the setting): compressed events (MariaDB
//    log_bin_compress, MySQL binlog_transaction_compression), MySQL partial JSON updates, XA
//    transactions with rows of followed tables.
//  - Errors: a lost connection is retryable; a purged binlog file or a GTID position the server
//    no longer has is FailedPrecondition (not retryable) saying so.
#pragma once

#include <memory>

#include "config/connection.h"
#include "sources/change_stream.h"

namespace dbs {

Result<std::unique_ptr<ChangeStream>> OpenBinlogStream(const ConnectionConfig& config,
                                                       const CdcOptions& options);

// The replica server id used for a stream name when CdcOptions.server_id is 0: a hash in
// [100000, 2^31).
uint32_t BinlogServerId(const std::string& stream);

}  // namespace dbs

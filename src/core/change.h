// Change data capture model: source transactions as decoded by a source's ChangeStream and
// applied by a sink, independent of the engine on either side.
//
// A transaction is a list of segments; a segment is a run of row changes to one table, in
// source order, held as a Bundle whose `ops` has one RowOp per row and whose columns follow the
// table's current schema (TableSchema::columns order, all columns). Row images:
//  - kInsert: the new row. kUpdate: the new row; cells the source did not send (PostgreSQL
//    unchanged TOAST values, MySQL minimal row images) are "unchanged" (ColumnVector::
//    IsUnchanged) and must be left as they are in the target, never set to NULL.
//  - kUpdateBefore: immediately precedes a kUpdate row when the source sent an old image (the
//    key changed, or REPLICA IDENTITY FULL / MySQL full images); at least the key columns are
//    set. A sink deletes the old key when it differs from the new one.
//  - kDelete: the old row; at least the key (replica identity) columns are set, the others may
//    be unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/bundle.h"
#include "core/schema.h"

namespace dbs {

struct TableRef {
  std::string schema;
  std::string name;
  std::string QualifiedName() const { return schema.empty() ? name : schema + "." + name; }
  friend bool operator==(const TableRef&, const TableRef&) = default;
};

// The source position a snapshot or change corresponds to: a PostgreSQL LSN, a MySQL GTID set
// or a binlog file/offset. Kept as the source prints it; `kind` says which. Positions of one
// kind from one source are totally ordered (CompareSourcePositions).
struct SourcePosition {
  enum class Kind { kNone, kPgLsn, kMysqlGtid, kMysqlFilePos } kind = Kind::kNone;
  // "0/16B3748"; MariaDB "0-1-42[,1-2-7]" / MySQL "uuid:1-42[,...]" (an executed set);
  // "binlog.000003:1234".
  std::string value;
  // For kMysqlGtid: the file/offset where the set was reached ("binlog.000003:1234"), so a
  // reader can also resume by file position; empty when unknown.
  std::string file_pos;
  bool empty() const { return kind == Kind::kNone || value.empty(); }
  friend bool operator==(const SourcePosition&, const SourcePosition&) = default;
};

// A run of changes to one table inside a transaction.
struct ChangeSegment {
  TableRef table;
  // TRUNCATE of the table at this point of the transaction; `rows` is then empty.
  bool truncate = false;
  Bundle rows;  // ops: one per row
};

// One committed source transaction (or a part of a large one, see `final`).
struct ChangeTxn {
  std::string xid;             // source transaction id / GTID, for messages and logs
  SourcePosition position;     // resume point: just after this transaction's commit
  int64_t commit_time_us = 0;  // source commit time, Unix microseconds (lag metrics)
  // False when more parts of this same transaction follow immediately (a transaction larger
  // than the part limit). Parts are never interleaved with other transactions; a consumer
  // applies all parts of a transaction atomically.
  bool final = true;
  uint32_t part = 0;  // 0-based index of this part within its transaction
  std::vector<ChangeSegment> segments;
  size_t rows() const {
    size_t n = 0;
    for (const auto& s : segments) n += s.rows.rows();
    return n;
  }
};

}  // namespace dbs

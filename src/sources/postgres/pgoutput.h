// A pure decoder of pgoutput messages: the logical replication protocol PostgreSQL's built-in
// output plugin sends inside XLogData (protocol versions 1 and 2, docs: "Logical Replication
// Message Formats").
//
// Contract:
//  - DecodePgoutput() parses one message. Bytes come from the server, so every length and count
//    is checked: malformed or truncated input gives Corruption, never a read past the buffer,
//    never an unbounded allocation (counts are bounded by the bytes left).
//  - The decoded message holds string_views into the input: the input must outlive it. A
//    PgoutputMessage may be reused between calls (its vectors keep their capacity).
//  - `in_stream`: the message is inside a Stream Start/Stop block (protocol 2 streaming of an
//    in-progress transaction); data messages then carry the (sub)transaction id first.
//  - Pure and thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace dbs::pg {

enum class PgoutputKind : char {
  kBegin = 'B',
  kCommit = 'C',
  kOrigin = 'O',
  kRelation = 'R',
  kType = 'Y',
  kInsert = 'I',
  kUpdate = 'U',
  kDelete = 'D',
  kTruncate = 'T',
  kMessage = 'M',
  kStreamStart = 'S',
  kStreamStop = 'E',
  kStreamCommit = 'c',
  kStreamAbort = 'A',
};

// One column value of a TupleData.
struct TupleCell {
  enum class Kind : char { kNull = 'n', kUnchanged = 'u', kText = 't', kBinary = 'b' };
  Kind kind = Kind::kNull;
  std::string_view data;  // kText / kBinary: the value's bytes
};

struct RelationColumn {
  uint8_t flags = 0;  // bit 0: part of the replica identity key
  std::string_view name;
  uint32_t type_oid = 0;
  int32_t type_mod = -1;
  bool key() const { return (flags & 1) != 0; }
};

struct PgoutputMessage {
  PgoutputKind kind = PgoutputKind::kBegin;
  // Begin, Stream Start/Commit/Abort: the transaction id; data messages in a stream block: the
  // (sub)transaction id; otherwise 0.
  uint32_t xid = 0;
  uint32_t subxid = 0;  // Stream Abort: the aborted (sub)transaction (== xid for the whole)
  // Begin: the final (commit) LSN. Commit / Stream Commit: the commit record's LSN. Message:
  // its LSN. Origin: the commit LSN on the origin server.
  uint64_t lsn = 0;
  uint64_t end_lsn = 0;       // Commit / Stream Commit: the end of the commit record
  int64_t timestamp = 0;      // Begin / Commit / Stream Commit: microseconds since 2000-01-01 UTC
  uint8_t flags = 0;          // Commit/Stream Commit/Message flags, Truncate options,
                              // Stream Start "first segment"
  uint32_t oid = 0;           // Relation, Type, Insert, Update, Delete: the relation / type OID
  std::string_view nspname;   // Relation, Type
  std::string_view name;      // Relation / Type name; Origin name; Message prefix
  char replica_identity = 0;  // Relation: d default, n nothing, f full, i index
  std::vector<RelationColumn> columns;  // Relation
  // Update / Delete: 'K' (old key columns only) or 'O' (whole old row), 0 when not sent.
  char old_kind = 0;
  std::vector<TupleCell> old_tuple;
  std::vector<TupleCell> new_tuple;     // Insert, Update
  std::vector<uint32_t> truncate_oids;  // Truncate
  std::string_view content;             // Message
};

inline constexpr uint8_t kTruncateCascade = 1;
inline constexpr uint8_t kTruncateRestartIdentity = 2;

// Decodes one message of protocol `proto_version` (1 or 2; stream messages need 2).
Status DecodePgoutput(std::string_view bytes, int proto_version, bool in_stream,
                      PgoutputMessage* out);

}  // namespace dbs::pg

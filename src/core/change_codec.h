// The change message: what the reader publishes on dbs.<stream>.cdc.<partition> — a run of
// records in source commit order, each a committed transaction (or a part of one) or a schema
// change. Binary, versioned, bounds-checked on decode (docs/cdc.md describes the bytes).
//
//   message  := "DBSC" u8 version u64 seq position(resume) u32 count record{count}
//               seq: the message's number in its partition, contiguous from 1; resume: every
//               transaction up to there is completely published with this message
//               (where a restarted reader continues)
//   record   := u8 kind(1 = transaction, 2 = schema change) body
//   txn      := str xid, position, i64 commit_time_us, u8 final, u32 part, u32 nseg,
//               segment{nseg}
//   segment  := str schema, str table, u8 truncate, u32 len, bundle bytes (bundle-format.md)
//   schema   := str schema, str table, str statement, u8 only_added, u32 n, str{n} added,
//               str table_json (schema.h ToJson), position
//   position := u8 kind, str value, str file_pos
//   str      := u32 len, bytes
// Integers are little-endian.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/bundle.h"
#include "core/change.h"
#include "core/result.h"

namespace dbs {

struct SchemaChangeRecord {
  TableRef table;
  TableSchema schema;
  std::string statement;
  std::vector<std::string> added_columns;
  bool only_added_columns = false;
  SourcePosition position;
};

using ChangeRecord = std::variant<ChangeTxn, SchemaChangeRecord>;

inline constexpr uint8_t kChangeFormatVersion = 1;

// Appends one record's encoding to a message under construction (see ChangeMessageWriter).
class ChangeMessageWriter {
 public:
  explicit ChangeMessageWriter(EncodeOptions options = {});
  Status AddTxn(const ChangeTxn& txn);
  Status AddSchemaChange(const SchemaChangeRecord& change);
  // Moves the records of `other` (made with the same options) to the end of this message.
  void Append(ChangeMessageWriter&& other);
  size_t records() const { return records_; }
  size_t size() const { return body_.size() + 17; }
  // The message bytes, numbered `seq`; the writer is reset for the next message.
  std::string Finish(uint64_t seq, const SourcePosition& resume);

 private:
  EncodeOptions options_;
  std::string body_;
  uint32_t records_ = 0;
};

struct ChangeMessage {
  uint64_t seq = 0;
  SourcePosition resume;
  std::vector<ChangeRecord> records;
};

// Decodes a whole message. Corruption on malformed bytes (never a crash).
Result<ChangeMessage> DecodeChangeMessage(std::string_view bytes, const DecodeLimits& limits = {});

// Splits a transaction into parts whose segments hold at most max_rows rows each part (all
// but the last part get final = false; the last keeps txn.final). Rows keep their order.
std::vector<ChangeTxn> SplitTxn(const ChangeTxn& txn, size_t max_rows);

// Rows [begin, end) of a bundle (ops included).
Bundle SliceBundle(const Bundle& b, size_t begin, size_t end);

}  // namespace dbs

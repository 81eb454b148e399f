// Binlog event decoding for the MySQL/MariaDB change stream: pure functions over raw event
// bytes (as the replication protocol delivers them, without the leading OK byte).
//
// Contract:
//  - Every function is pure and thread-safe. The bytes are untrusted: every read is
//    bounds-checked, and bad or truncated bytes give a Corruption status naming what was
//    being read, never a crash, an out-of-bounds read or an unbounded allocation.
//  - Row values are decoded into ColumnVectors of the table's logical types exactly as the
//    snapshot reader produces them (mysql_source.h, mysql_text_decode.h), so a snapshot
//    read and a binlog read of the same row are value-identical: NEWDECIMAL as its exact text
//    with `scale` fraction digits, TIMESTAMP in UTC, zero dates kept (core/temporal.h), ENUM as
//    its label, SET as labels joined with ',', BIT as in DecodeCell, GEOMETRY as SRID + WKB,
//    MySQL binary JSON as MySQL prints it.
//  - Both row event versions are handled: V1 (MariaDB) and V2 (MySQL 5.7/8, with extra data),
//    with the columns-present bitmaps of partial (MINIMAL/NOBLOB) images: a column absent from
//    an image is appended as "unchanged" (ColumnVector::AppendUnchanged).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/column.h"
#include "core/result.h"
#include "core/schema.h"

namespace dbs::mysql::binlog {

// Event type codes (MySQL and MariaDB share the low numbers).
enum EventType : uint8_t {
  kQueryEvent = 2,
  kStopEvent = 3,
  kRotateEvent = 4,
  kFormatDescriptionEvent = 15,
  kXidEvent = 16,
  kTableMapEvent = 19,
  kWriteRowsV1 = 23,
  kUpdateRowsV1 = 24,
  kDeleteRowsV1 = 25,
  kHeartbeatEvent = 27,
  kWriteRowsV2 = 30,
  kUpdateRowsV2 = 31,
  kDeleteRowsV2 = 32,
  kMysqlGtidEvent = 33,
  kMysqlAnonymousGtidEvent = 34,
  kMysqlPreviousGtidsEvent = 35,
  kXaPrepareEvent = 38,
  kMysqlPartialUpdateRowsEvent = 39,
  kMysqlTransactionPayloadEvent = 40,
  kMysqlHeartbeatV2 = 41,
  kMariaAnnotateRowsEvent = 160,
  kMariaBinlogCheckpointEvent = 161,
  kMariaGtidEvent = 162,
  kMariaGtidListEvent = 163,
  kMariaStartEncryptionEvent = 164,
  kMariaQueryCompressedEvent = 165,
  kMariaWriteRowsCompressedV1 = 166,
  kMariaDeleteRowsCompressedV2 = 171,
};

// MySQL column type codes as they appear in TABLE_MAP events.
enum ColumnType : uint8_t {
  kTypeDecimal = 0,
  kTypeTiny = 1,
  kTypeShort = 2,
  kTypeLong = 3,
  kTypeFloat = 4,
  kTypeDouble = 5,
  kTypeNull = 6,
  kTypeTimestamp = 7,
  kTypeLongLong = 8,
  kTypeInt24 = 9,
  kTypeDate = 10,
  kTypeTime = 11,
  kTypeDateTime = 12,
  kTypeYear = 13,
  kTypeNewDate = 14,
  kTypeVarchar = 15,
  kTypeBit = 16,
  kTypeTimestamp2 = 17,
  kTypeDateTime2 = 18,
  kTypeTime2 = 19,
  kTypeJson = 245,
  kTypeNewDecimal = 246,
  kTypeEnum = 247,
  kTypeSet = 248,
  kTypeTinyBlob = 249,
  kTypeMediumBlob = 250,
  kTypeLongBlob = 251,
  kTypeBlob = 252,
  kTypeVarString = 253,
  kTypeString = 254,
  kTypeGeometry = 255,
};

inline constexpr size_t kHeaderSize = 19;
inline constexpr uint16_t kFlagArtificial = 0x20;  // LOG_EVENT_ARTIFICIAL_F
inline constexpr uint16_t kFlagIgnorable = 0x80;   // LOG_EVENT_IGNORABLE_F

enum class ChecksumAlg : uint8_t { kOff = 0, kCrc32 = 1 };

// CRC-32 (ISO-HDLC, zlib's crc32) of `data`.
uint32_t Crc32(std::string_view data);

struct EventHeader {
  uint32_t timestamp = 0;  // seconds since the Unix epoch
  uint8_t type = 0;
  uint32_t server_id = 0;
  uint32_t event_length = 0;   // header + body (+ checksum)
  uint32_t next_position = 0;  // log_pos: offset just after this event in its file (0: artificial)
  uint16_t flags = 0;
};

// One event split into header and body; the body excludes the checksum.
struct Event {
  EventHeader header;
  std::string_view body;
};

// Splits `raw` (one whole event) into header and body. With kCrc32 the last 4 bytes are the
// checksum; `verify` compares it with Crc32 of the rest (Corruption on mismatch).
Result<Event> ParseEvent(std::string_view raw, ChecksumAlg alg, bool verify);

struct FormatDescription {
  uint16_t binlog_version = 4;
  std::string server_version;
  uint8_t header_length = kHeaderSize;
  std::vector<uint8_t> post_header_lengths;  // index = event type - 1
  ChecksumAlg checksum = ChecksumAlg::kOff;
  bool is_mariadb() const { return server_version.find("MariaDB") != std::string::npos; }
  // Post-header length of an event type (0 when unknown).
  uint8_t PostHeaderLength(uint8_t type) const {
    return type >= 1 && type <= post_header_lengths.size() ? post_header_lengths[type - 1] : 0;
  }
};

// The FORMAT_DESCRIPTION_EVENT of `raw` (one whole event, checksum included when the server
// writes one). The checksum algorithm is read from the event itself (servers >= 5.6.1 and
// MariaDB always write the algorithm byte), and the event's own checksum is verified.
Result<FormatDescription> ParseFormatDescription(std::string_view raw);

struct Rotate {
  uint64_t position = 0;
  std::string file;
};
Result<Rotate> ParseRotate(const Event& ev);

struct Query {
  uint32_t thread_id = 0;
  uint16_t error_code = 0;
  std::string database;
  std::string statement;
};
Result<Query> ParseQuery(const Event& ev, const FormatDescription& fd);

Result<uint64_t> ParseXid(const Event& ev);

struct MariaGtid {
  uint32_t domain_id = 0;
  uint32_t server_id = 0;  // from the event header
  uint64_t sequence = 0;
  uint8_t flags = 0;  // FL_STANDALONE = 1 (no COMMIT/XID follows), FL_TRANSACTIONAL = 4, ...
  bool standalone() const { return (flags & 0x01) != 0; }
  std::string ToString() const;  // "domain-server-seq"
};
Result<MariaGtid> ParseMariaGtid(const Event& ev);
Result<std::vector<MariaGtid>> ParseMariaGtidList(const Event& ev);

struct MysqlGtid {
  std::string uuid;  // "3e11fa47-71ca-11e1-9e33-c80aa9429562"
  uint64_t gno = 0;
  std::string ToString() const;  // "uuid:gno"
};
Result<MysqlGtid> ParseMysqlGtid(const Event& ev);

struct Heartbeat {
  std::string file;
  uint32_t position = 0;  // from the header's log_pos
};
Result<Heartbeat> ParseHeartbeat(const Event& ev);

// TABLE_MAP_EVENT, with the optional metadata when the server wrote it
// (binlog_row_metadata=FULL/MINIMAL).
struct TableMap {
  uint64_t table_id = 0;
  std::string database;
  std::string table;
  std::vector<uint8_t> types;      // per column
  std::vector<uint16_t> metadata;  // per column (0 when the type has none)
  std::vector<bool> nullable;      // per column
  // Optional metadata (empty when absent).
  std::vector<bool> unsigned_flags;  // per column (only numeric columns can be true)
  bool has_signedness = false;
  std::vector<std::string> column_names;
  std::vector<std::vector<std::string>> enum_labels;  // per column; empty for non-enum
  std::vector<std::vector<std::string>> set_labels;   // per column; empty for non-set
  std::vector<uint32_t> charsets;                     // per column (0: unknown)
  std::vector<uint32_t> primary_key;                  // column indexes
  size_t column_count() const { return types.size(); }
  // The column's real type: STRING columns carry ENUM/SET in their metadata.
  uint8_t RealType(size_t column) const;
};
Result<TableMap> ParseTableMap(const Event& ev, const FormatDescription& fd);

enum class RowsKind : uint8_t { kWrite, kUpdate, kDelete };

struct RowsEvent {
  RowsKind kind = RowsKind::kWrite;
  bool v2 = false;
  uint64_t table_id = 0;
  uint16_t flags = 0;  // STMT_END_F = 1
  size_t column_count = 0;
  std::vector<bool> present;        // columns in the (before, for update/delete) image
  std::vector<bool> present_after;  // update: columns in the after image
  std::string_view extra;           // V2 extra data (after its 2-byte length)
  std::string_view rows;            // the row images
};
// A WRITE/UPDATE/DELETE rows event of either version. Compressed MariaDB rows events and
// MySQL partial JSON updates are Unsupported (naming the setting to turn off).
Result<RowsEvent> ParseRowsEvent(const Event& ev, const FormatDescription& fd);
bool IsRowsEvent(uint8_t type);

// Where one binlog column's values go: the schema column (its logical type decides the
// decoding) and the vector to append to. A null `out` skips the column's values.
struct ColumnTarget {
  const Column* column = nullptr;
  ColumnVector* out = nullptr;
};

// Decodes one row image at rows[*pos...] for `map`, appending one cell to every target (a
// column absent from `present` becomes AppendUnchanged) and advancing *pos. `targets` has
// one entry per binlog column. On error nothing is guaranteed about the targets' row counts.
Status DecodeRow(const TableMap& map, const std::vector<bool>& present, std::string_view rows,
                 size_t* pos, const std::vector<ColumnTarget>& targets);

// Decodes one value of binlog `type`/`meta` at data[*pos...] into out (whose type is
// column.type) and advances *pos. Exposed for tests.
Status DecodeValue(uint8_t type, uint16_t meta, const Column& column, std::string_view data,
                   size_t* pos, ColumnVector* out);

// Binary decimal (precision, scale) -> exact text with `scale` fraction digits.
Result<std::string> DecimalToText(std::string_view bytes, int precision, int scale,
                                  size_t* consumed);

// MySQL's binary JSON -> JSON text as MySQL prints it ({"a": 1, "b": [true, null]}).
Result<std::string> MysqlJsonToText(std::string_view bytes);

// The logical column a bare table map column decodes to when no schema is known (tests and
// the fuzzer): signedness from the optional metadata, enum/set labels when present.
Column ColumnForTableMap(const TableMap& map, size_t column);

}  // namespace dbs::mysql::binlog

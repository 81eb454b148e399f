#include "sources/mysql/mysql_source.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "core/logging.h"
#include "core/temporal.h"
#include "mysql/mysql_client.h"
#include "sources/mysql/binlog_stream.h"
#include "sources/mysql/mysql_text_decode.h"
#include "sources/mysql/objects.h"
#include "typemap/mysql_types.h"

namespace dbs {

using mysql::MysqlConnection;
using mysql::QuoteName;
using mysql::QuoteQualified;
using mysql::TextRow;

namespace {

constexpr const char* kLog = "mysql";

const std::string& Str(const TextRow& row, size_t i) {
  static const std::string kEmpty;
  return row[i] ? *row[i] : kEmpty;
}

std::optional<uint64_t> U64(const TextRow& row, size_t i) {
  uint64_t v;
  if (!row[i] || !mysql::ParseUInt64(*row[i], &v)) return std::nullopt;
  return v;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return s;
}

bool IsSystemDatabase(const std::string& db) {
  static const std::set<std::string> kSystem = {"mysql", "information_schema", "performance_schema",
                                                "sys", "_dbstreams"};
  return kSystem.count(Lower(db)) != 0;
}

// The select-list expression that reads column `name` exactly (see mysql_source.h).
std::string SelectExpr(const Column& c, const std::string& qualifier) {
  std::string q = qualifier + QuoteName(c.name);
  if (c.type == LogicalType::kFloat32) return "(" + q + " * 1e0)";
  return q;
}

// True for a text column whose character set the server may not convert to utf8mb4 exactly:
// anything but the UTF-8 sets and binary. The server turns a byte sequence without a Unicode
// mapping (cp1251 0x98, an unassigned gbk code, bytes above 0x7f in ascii) into '?'.
bool NeedsConversionCheck(const Column& c) {
  if (c.type != LogicalType::kText || c.charset.empty()) return false;
  const std::string cs = Lower(c.charset);
  if (cs == "utf8mb4" || cs == "utf8mb3" || cs == "utf8" || cs == "binary") return false;
  return std::all_of(cs.begin(), cs.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
  });
}

// 1 when column `q` (of character set `cs`) reads as utf8mb4 without loss: converting the
// utf8mb4 text back gives the stored bytes. 0 when the server substituted '?'; NULL for NULL.
std::string ConversionCheckExpr(const std::string& q, const std::string& cs) {
  return "(CAST(CONVERT(CONVERT(" + q + " USING utf8mb4) USING " + cs + ") AS BINARY) = CAST(" + q +
         " AS BINARY))";
}

// ---------------------------------------------------------------------------------------------
// Snapshot and readers.

class MysqlSnapshot;

// Where one result column of a reader's prepared statement lands (MYSQL_BIND buffers).
struct ResultSlot {
  enum class As : uint8_t { kInt, kDouble, kTime, kBytes };
  As as = As::kBytes;
  bool is_unsigned = false;
  int64_t i = 0;  // kInt (an unsigned value's bits when is_unsigned)
  double d = 0;   // kDouble
  MYSQL_TIME t{};
  std::vector<char> bytes;  // kBytes; grown to the longest value seen
  unsigned long length = 0;
  my_bool is_null = 0;
  my_bool error = 0;
};

class MysqlRowReader : public RowReader {
 public:
  // `checked[k]` is the index (in `columns`) of the column whose conversion check is result
  // field columns.size() + k; the primary key columns `key_names` follow the checks.
  MysqlRowReader(MysqlSnapshot* owner, MysqlConnection* conn, std::string what,
                 std::vector<const Column*> columns, std::vector<mysql::CellDecoder> decoders,
                 std::vector<size_t> checked, std::vector<std::string> key_names)
      : owner_(owner),
        conn_(conn),
        what_(std::move(what)),
        columns_(std::move(columns)),
        decoders_(std::move(decoders)),
        checked_(std::move(checked)),
        key_names_(std::move(key_names)) {
    for (const auto& d : decoders_) fixed_bytes_ += FixedWidth(d.type);
  }
  ~MysqlRowReader() override;

  // Prepares and runs `sql` as a server-side prepared statement: the rows come in the binary
  // protocol (integers, doubles and temporal values as binary, the rest as bytes), which costs
  // the server about half the CPU of the text protocol (no number or date formatting; see
  // docs/benchmarks.md), and are streamed (no mysql_stmt_store_result). A server that will not
  // prepare it (max_prepared_stmt_count reached or 0, no prepared statements behind a proxy)
  // gets the same SELECT on the text protocol, decoded by the same text-cell rules.
  Status Start(const std::string& sql);

  Result<bool> Next(Bundle* out, size_t max_rows, size_t max_bytes) override;

 private:
  // Fetches the next row into the slots (MYSQL_NO_DATA: false).
  Result<bool> FetchRow();
  // Appends result column i (a data column) to *col.
  Status DecodeSlot(size_t i, ColumnVector* col);
  // Result column i as text (a key value in a message).
  std::string SlotText(size_t i) const;
  // The error for a value the server could not convert to utf8mb4 exactly.
  Status LossyConversion(size_t column) const;

  MysqlSnapshot* owner_;
  MysqlConnection* conn_;
  std::string what_;
  std::vector<const Column*> columns_;
  std::vector<mysql::CellDecoder> decoders_;
  std::vector<size_t> checked_;
  std::vector<std::string> key_names_;
  size_t fixed_bytes_ = 0;
  MYSQL_STMT* stmt_ = nullptr;
  // Set instead of stmt_ when the server would not prepare the statement (text protocol).
  mysql::ResultHandle text_result_;
  std::vector<ResultSlot> slots_;
  std::vector<MYSQL_BIND> binds_;
  bool rebind_ = false;   // a bytes buffer grew: bind the results again before the next fetch
  bool pending_ = false;  // the slots hold a row that did not fit the previous bundle
  bool done_ = false;
  uint64_t rows_read_ = 0;
};

class MysqlSnapshot : public Snapshot {
 public:
  MysqlSnapshot(std::vector<std::unique_ptr<MysqlConnection>> conns, SourcePosition position,
                std::string default_schema)
      : conns_(std::move(conns)),
        position_(std::move(position)),
        default_schema_(std::move(default_schema)) {
    for (auto& c : conns_) free_.push_back(c.get());
    live_ = conns_.size();
  }

  const SourcePosition& position() const override { return position_; }
  Result<std::unique_ptr<RowReader>> OpenReader(const ReadSpec& spec) override;

  // True once per snapshot: the first reader that falls back to the text protocol says so.
  bool FirstTextFallback() { return !text_fallback_warned_.exchange(true); }

  // Gives a reader's connection back (or drops it when an error broke it).
  void Release(MysqlConnection* conn) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (conn->broken()) {
        --live_;
      } else {
        free_.push_back(conn);
      }
    }
    cv_.notify_one();
  }

 private:
  Result<MysqlConnection*> Acquire() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return !free_.empty() || live_ == 0; });
    if (free_.empty()) {
      return Status::Unavailable(
          "every connection of the snapshot was lost; the snapshot must be taken again");
    }
    MysqlConnection* c = free_.back();
    free_.pop_back();
    return c;
  }

  std::vector<std::unique_ptr<MysqlConnection>> conns_;
  SourcePosition position_;
  std::string default_schema_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<MysqlConnection*> free_;
  size_t live_ = 0;
  std::atomic<bool> text_fallback_warned_{false};
};

MysqlRowReader::~MysqlRowReader() {
  // Closing a statement with unread rows reads them off the connection first, so it is usable
  // again for the next reader of the snapshot.
  if (stmt_ != nullptr) mysql_stmt_close(stmt_);
  text_result_.reset();  // drains unread rows too
  owner_->Release(conn_);
}

namespace {

bool IsIntegerField(enum_field_types t) {
  return t == MYSQL_TYPE_TINY || t == MYSQL_TYPE_SHORT || t == MYSQL_TYPE_INT24 ||
         t == MYSQL_TYPE_LONG || t == MYSQL_TYPE_LONGLONG || t == MYSQL_TYPE_YEAR;
}

bool IsTemporalField(enum_field_types t) {
  return t == MYSQL_TYPE_DATE || t == MYSQL_TYPE_DATETIME || t == MYSQL_TYPE_TIMESTAMP ||
         t == MYSQL_TYPE_TIME;
}

// How a result column is fetched: natively when the decoder's kind and the server's field type
// agree, else as bytes decoded like text-protocol cells (DecodeCell).
ResultSlot::As SlotKind(const mysql::CellDecoder* d, enum_field_types field) {
  using K = mysql::CellKind;
  if (d == nullptr) return IsIntegerField(field) ? ResultSlot::As::kInt : ResultSlot::As::kBytes;
  switch (d->kind) {
    case K::kSigned:
    case K::kUnsigned:
    case K::kBool:
      return IsIntegerField(field) ? ResultSlot::As::kInt : ResultSlot::As::kBytes;
    case K::kFloat32:
    case K::kFloat64:
      return field == MYSQL_TYPE_DOUBLE ? ResultSlot::As::kDouble : ResultSlot::As::kBytes;
    case K::kDate:
    case K::kTimestamp:
    case K::kTime:
      return IsTemporalField(field) ? ResultSlot::As::kTime : ResultSlot::As::kBytes;
    default:
      return ResultSlot::As::kBytes;
  }
}

// MYSQL_TIME as the text the text protocol sends for the same value (for messages). Returns
// the length.
size_t FormatTime(const MYSQL_TIME& t, mysql::CellKind kind, char* buf, size_t cap) {
  int n;
  if (kind == mysql::CellKind::kTime) {
    const unsigned long hours = static_cast<unsigned long>(t.day) * 24 + t.hour;
    n = std::snprintf(buf, cap, "%s%lu:%02u:%02u.%06lu", t.neg ? "-" : "", hours, t.minute,
                      t.second, t.second_part);
  } else if (kind == mysql::CellKind::kDate) {
    n = std::snprintf(buf, cap, "%04u-%02u-%02u", t.year, t.month, t.day);
  } else {
    n = std::snprintf(buf, cap, "%04u-%02u-%02u %02u:%02u:%02u.%06lu", t.year, t.month, t.day,
                      t.hour, t.minute, t.second, t.second_part);
  }
  return n < 0 ? 0 : std::min(static_cast<size_t>(n), cap - 1);
}

Status OutOfRange(const ResultSlot& slot, const mysql::CellDecoder& d) {
  return Status::InvalidArgument(
      "'" +
      (slot.is_unsigned ? std::to_string(static_cast<uint64_t>(slot.i)) : std::to_string(slot.i)) +
      "' is not a valid " + std::string(LogicalTypeName(d.type)));
}

}  // namespace

Status MysqlRowReader::Start(const std::string& sql) {
  const std::string ctx = "reading " + what_;
  stmt_ = mysql_stmt_init(conn_->handle());
  if (stmt_ == nullptr) return Status::ResourceExhausted(ctx + ": out of memory for a statement");
  if (mysql_stmt_prepare(stmt_, sql.data(), static_cast<unsigned long>(sql.size())) != 0) {
    const unsigned code = mysql_stmt_errno(stmt_);
    // max_prepared_stmt_count reached (0 on servers that forbid prepared statements), or a
    // proxy or server without them: the text protocol reads the same values, at a higher
    // cost to the server.
    if (!mysql::RefusesPreparedStatements(code)) {
      return conn_->StmtError(stmt_, ctx);
    }
    if (owner_->FirstTextFallback()) {
      Log(LogLevel::kWarn, kLog,
          ctx + ": the server does not prepare statements (" + mysql_stmt_error(stmt_) +
              "); reading with the text protocol, which costs the server more CPU");
    }
    mysql_stmt_close(stmt_);
    stmt_ = nullptr;
    DBS_ASSIGN_OR_RETURN(text_result_, conn_->StreamQuery(sql, ctx));
    const size_t fields = mysql_num_fields(text_result_.get());
    if (fields != decoders_.size() + checked_.size() + key_names_.size()) {
      return Status::Internal(ctx + ": the query returns " + std::to_string(fields) + " columns");
    }
    slots_.resize(fields);  // every slot kBytes: the text of each cell
    return Status::Ok();
  }
  MYSQL_RES* meta = mysql_stmt_result_metadata(stmt_);
  if (meta == nullptr) return Status::Internal(ctx + ": the query returns no rows");
  const size_t n = mysql_num_fields(meta);
  const size_t want = decoders_.size() + checked_.size() + key_names_.size();
  if (n != want) {
    mysql_free_result(meta);
    return Status::Internal(ctx + ": the query returns " + std::to_string(n) + " columns, not " +
                            std::to_string(want));
  }
  const MYSQL_FIELD* fields = mysql_fetch_fields(meta);
  slots_.resize(n);
  binds_.assign(n, MYSQL_BIND{});
  for (size_t i = 0; i < n; ++i) {
    ResultSlot& slot = slots_[i];
    slot.as = SlotKind(i < decoders_.size() ? &decoders_[i] : nullptr, fields[i].type);
    slot.is_unsigned = (fields[i].flags & UNSIGNED_FLAG) != 0;
    MYSQL_BIND& b = binds_[i];
    switch (slot.as) {
      case ResultSlot::As::kInt:
        b.buffer_type = MYSQL_TYPE_LONGLONG;
        b.buffer = &slot.i;
        b.is_unsigned = slot.is_unsigned;
        break;
      case ResultSlot::As::kDouble:
        b.buffer_type = MYSQL_TYPE_DOUBLE;
        b.buffer = &slot.d;
        break;
      case ResultSlot::As::kTime:
        b.buffer_type = fields[i].type;
        b.buffer = &slot.t;
        break;
      case ResultSlot::As::kBytes:
        slot.bytes.resize(256);
        b.buffer_type = MYSQL_TYPE_BLOB;  // the bytes as they are, no conversion
        b.buffer = slot.bytes.data();
        b.buffer_length = static_cast<unsigned long>(slot.bytes.size());
        break;
    }
    b.length = &slot.length;
    b.is_null = &slot.is_null;
    b.error = &slot.error;
  }
  mysql_free_result(meta);
  if (mysql_stmt_execute(stmt_) != 0) return conn_->StmtError(stmt_, ctx);
  if (mysql_stmt_bind_result(stmt_, binds_.data()) != 0) return conn_->StmtError(stmt_, ctx);
  return Status::Ok();
}

Result<bool> MysqlRowReader::FetchRow() {
  if (text_result_) {
    MYSQL_ROW row = mysql_fetch_row(text_result_.get());
    if (row == nullptr) {
      if (mysql_errno(conn_->handle()) != 0) return conn_->LastError("reading " + what_);
      return false;
    }
    const unsigned long* lengths = mysql_fetch_lengths(text_result_.get());
    for (size_t i = 0; i < slots_.size(); ++i) {
      ResultSlot& slot = slots_[i];
      slot.is_null = row[i] == nullptr;
      slot.length = slot.is_null ? 0 : lengths[i];
      if (slot.bytes.size() < slot.length) slot.bytes.resize(slot.length);
      if (slot.length > 0) std::memcpy(slot.bytes.data(), row[i], slot.length);
    }
    return true;
  }
  if (rebind_) {
    if (mysql_stmt_bind_result(stmt_, binds_.data()) != 0) {
      return conn_->StmtError(stmt_, "reading " + what_);
    }
    rebind_ = false;
  }
  const int r = mysql_stmt_fetch(stmt_);
  if (r == MYSQL_NO_DATA) return false;
  if (r != 0 && r != MYSQL_DATA_TRUNCATED) return conn_->StmtError(stmt_, "reading " + what_);
  // Values longer than their buffer: a larger buffer, and the value fetched again into it.
  for (size_t i = 0; i < slots_.size(); ++i) {
    ResultSlot& slot = slots_[i];
    if (slot.as != ResultSlot::As::kBytes || slot.is_null || slot.length <= slot.bytes.size()) {
      continue;
    }
    slot.bytes.resize(std::max<size_t>(slot.length, slot.bytes.size() * 2));
    MYSQL_BIND& b = binds_[i];
    b.buffer = slot.bytes.data();
    b.buffer_length = static_cast<unsigned long>(slot.bytes.size());
    rebind_ = true;
    if (mysql_stmt_fetch_column(stmt_, &b, static_cast<unsigned>(i), 0) != 0) {
      return conn_->StmtError(stmt_, "reading " + what_);
    }
  }
  return true;
}

Status MysqlRowReader::DecodeSlot(size_t i, ColumnVector* col) {
  const ResultSlot& slot = slots_[i];
  const mysql::CellDecoder& d = decoders_[i];
  switch (slot.as) {
    case ResultSlot::As::kInt: {
      if (d.kind == mysql::CellKind::kBool) {
        col->AppendBool(slot.i != 0);
        return Status::Ok();
      }
      if (d.kind == mysql::CellKind::kSigned && !slot.is_unsigned) {
        if (!mysql::FitsSigned(d.type, slot.i)) return OutOfRange(slot, d);
        col->AppendInt(slot.i);
        return Status::Ok();
      }
      if (d.kind == mysql::CellKind::kUnsigned && slot.is_unsigned) {
        if (!mysql::FitsUnsigned(d.type, static_cast<uint64_t>(slot.i))) return OutOfRange(slot, d);
        col->AppendUInt(static_cast<uint64_t>(slot.i));
        return Status::Ok();
      }
      // Signedness differs (a query's column): through the text rules, which check the range.
      char buf[24];
      const auto r = slot.is_unsigned
                         ? std::to_chars(buf, buf + sizeof buf, static_cast<uint64_t>(slot.i))
                         : std::to_chars(buf, buf + sizeof buf, slot.i);
      return mysql::DecodeCell(d, std::string_view(buf, static_cast<size_t>(r.ptr - buf)), col);
    }
    case ResultSlot::As::kDouble:
      if (d.kind == mysql::CellKind::kFloat32) {
        // The column was selected as `col * 1e0`: the float widened to double, so narrowing it
        // back is exact.
        col->AppendFloat32(static_cast<float>(slot.d));
      } else {
        col->AppendFloat64(slot.d);
      }
      return Status::Ok();
    case ResultSlot::As::kTime: {
      const MYSQL_TIME& t = slot.t;
      if (d.kind == mysql::CellKind::kTime) {
        if (t.minute > 59 || t.second > 59 || t.second_part > 999999) {
          return Status::InvalidArgument(SlotText(i) + " is not a valid time");
        }
        const int64_t hours = int64_t{t.day} * 24 + t.hour;
        const int64_t v = ((hours * 60 + t.minute) * 60 + t.second) * kMicrosPerSecond +
                          static_cast<int64_t>(t.second_part);
        col->AppendMicros(t.neg ? -v : v);
        return Status::Ok();
      }
      // The same rules as the text form (EncodeDate / EncodeTimestamp: zero dates kept).
      CivilDateTime c;
      c.year = static_cast<int32_t>(t.year);
      c.month = static_cast<uint8_t>(t.month);
      c.day = static_cast<uint8_t>(t.day);
      if (t.year > 9999 || t.month > 12 || t.day > 31 || t.hour > 23 || t.minute > 59 ||
          t.second > 59 || t.second_part > 999999) {
        return Status::InvalidArgument(SlotText(i) + " is not a valid date or time");
      }
      if (d.kind == mysql::CellKind::kDate) {
        DBS_ASSIGN_OR_RETURN(int32_t v, EncodeDate(c));
        col->AppendDate(v);
        return Status::Ok();
      }
      c.hour = static_cast<uint8_t>(t.hour);
      c.minute = static_cast<uint8_t>(t.minute);
      c.second = static_cast<uint8_t>(t.second);
      c.micros = static_cast<uint32_t>(t.second_part);
      DBS_ASSIGN_OR_RETURN(int64_t v, EncodeTimestamp(c));
      col->AppendMicros(v);
      return Status::Ok();
    }
    case ResultSlot::As::kBytes:
      return mysql::DecodeCell(d, std::string_view(slot.bytes.data(), slot.length), col);
  }
  return Status::Internal("unknown result slot kind");
}

std::string MysqlRowReader::SlotText(size_t i) const {
  const ResultSlot& slot = slots_[i];
  if (slot.is_null) return "NULL";
  switch (slot.as) {
    case ResultSlot::As::kInt:
      return slot.is_unsigned ? std::to_string(static_cast<uint64_t>(slot.i))
                              : std::to_string(slot.i);
    case ResultSlot::As::kDouble:
      return std::to_string(slot.d);
    case ResultSlot::As::kTime: {
      char buf[48];
      return std::string(buf, FormatTime(slot.t, mysql::CellKind::kTimestamp, buf, sizeof buf));
    }
    case ResultSlot::As::kBytes:
      return std::string(slot.bytes.data(), slot.length);
  }
  return "";
}

Result<bool> MysqlRowReader::Next(Bundle* out, size_t max_rows, size_t max_bytes) {
  if (out->columns.size() != decoders_.size()) {
    return Status::InvalidArgument("reading " + what_ + ": the bundle has " +
                                   std::to_string(out->columns.size()) + " columns, " +
                                   std::to_string(decoders_.size()) + " are read");
  }
  for (size_t i = 0; i < decoders_.size(); ++i) {
    if (out->columns[i].type() != decoders_[i].type) {
      return Status::InvalidArgument(
          "reading " + what_ + ": bundle column " + std::to_string(i) + " has type " +
          std::string(LogicalTypeName(out->columns[i].type())) + ", column '" + columns_[i]->name +
          "' is " + std::string(LogicalTypeName(decoders_[i].type)));
    }
  }
  if (done_) return false;
  const size_t ncols = decoders_.size();
  size_t rows = 0, bytes = 0;
  while (rows < max_rows) {
    if (!pending_) {
      DBS_ASSIGN_OR_RETURN(bool got, FetchRow());
      if (!got) {
        done_ = true;
        return false;
      }
    }
    pending_ = false;
    size_t row_bytes = fixed_bytes_;
    for (size_t i = 0; i < ncols; ++i) {
      if (FixedWidth(decoders_[i].type) == 0) row_bytes += slots_[i].length + 4;
    }
    if (rows > 0 && bytes + row_bytes > max_bytes) {
      pending_ = true;
      return true;
    }
    for (size_t k = 0; k < checked_.size(); ++k) {
      const ResultSlot& ok = slots_[ncols + k];
      const bool lossless =
          ok.is_null ||
          (ok.as == ResultSlot::As::kInt ? ok.i == 1 : ok.length > 0 && ok.bytes[0] == '1');
      if (!lossless) return LossyConversion(checked_[k]);
    }
    for (size_t i = 0; i < ncols; ++i) {
      ColumnVector& col = out->columns[i];
      if (slots_[i].is_null) {
        col.AppendNull();
        continue;
      }
      Status s = DecodeSlot(i, &col);
      if (!s.ok()) {
        return s.WithContext("reading " + what_ + ", column '" + columns_[i]->name + "' (" +
                             columns_[i]->source_type + "), row " + std::to_string(rows_read_ + 1));
      }
    }
    ++rows;
    ++rows_read_;
    bytes += row_bytes;
  }
  return true;
}

Status MysqlRowReader::LossyConversion(size_t column) const {
  const size_t key_at = columns_.size() + checked_.size();
  std::string names, values;
  for (size_t i = 0; i < key_names_.size(); ++i) {
    names += (i == 0 ? "" : ", ") + key_names_[i];
    values += (i == 0 ? "" : ", ") + SlotText(key_at + i);
  }
  const std::string key = key_names_.empty()
                              ? "row " + std::to_string(rows_read_ + 1) + " (no primary key)"
                              : "key (" + names + ")=(" + values + ")";
  const Column& c = *columns_[column];
  return Status::FailedPrecondition(
      "column '" + c.name + "' (" + c.source_type + " CHARACTER SET " + c.charset + "), " + key +
      ": the value holds bytes with no Unicode mapping in " + c.charset +
      " (the server would read them as '?'); fix the data or declare the "
      "column with the character set it really holds");
}

Result<std::unique_ptr<RowReader>> MysqlSnapshot::OpenReader(const ReadSpec& spec) {
  const TableSchema& t = spec.table;
  const bool is_query = !spec.query.empty();
  const std::string schema = t.schema.empty() ? default_schema_ : t.schema;
  const std::string what =
      is_query ? "query '" + t.name + "'" : (schema.empty() ? t.name : schema + "." + t.name);

  std::vector<const Column*> cols;
  if (spec.columns.empty()) {
    for (const Column& c : t.columns) cols.push_back(&c);
  } else {
    for (const std::string& n : spec.columns) {
      int i = t.FindColumn(n);
      if (i < 0) return Status::NotFound("column '" + n + "' not found in " + what);
      cols.push_back(&t.columns[static_cast<size_t>(i)]);
    }
  }
  if (cols.empty()) return Status::InvalidArgument("reading " + what + ": no columns to read");
  std::vector<mysql::CellDecoder> decoders;
  for (const Column* c : cols) {
    auto d = mysql::DecoderFor(*c);
    if (!d.ok()) return d.status().WithContext("reading " + what);
    decoders.push_back(*d);
  }

  const std::string qualifier = is_query ? "`_dbs_q`." : "";
  std::string sql = "SELECT ";
  for (size_t i = 0; i < cols.size(); ++i) {
    if (i > 0) sql += ", ";
    sql += SelectExpr(*cols[i], qualifier);
  }
  // Legacy character sets: a check per column that the utf8mb4 text is exact, and the primary
  // key to name a row that is not (see NeedsConversionCheck).
  std::vector<size_t> checked;
  std::vector<std::string> key_names;
  for (size_t i = 0; i < cols.size(); ++i) {
    if (!NeedsConversionCheck(*cols[i])) continue;
    checked.push_back(i);
    sql +=
        ", " + ConversionCheckExpr(qualifier + QuoteName(cols[i]->name), Lower(cols[i]->charset));
  }
  if (!checked.empty() && !is_query) {
    for (const std::string& k : t.primary_key) {
      if (t.FindColumn(k) < 0) continue;
      key_names.push_back(k);
      sql += ", " + QuoteName(k);
    }
  }
  if (is_query) {
    sql += " FROM (" + spec.query + ") AS `_dbs_q`";
  } else {
    if (schema.empty()) {
      return Status::InvalidArgument("reading " + t.name +
                                     ": no database given (name it in the table or the URL)");
    }
    sql += " FROM " + QuoteQualified(schema, t.name);
  }
  std::vector<std::string> where;
  if (spec.range && !spec.range->column.empty()) {
    if (spec.range->lower) {
      where.push_back(QuoteName(spec.range->column) + " >= " + std::to_string(*spec.range->lower));
    }
    if (spec.range->upper) {
      where.push_back(QuoteName(spec.range->column) + " < " + std::to_string(*spec.range->upper));
    }
  }
  if (!spec.filter.empty()) where.push_back("(" + spec.filter + ")");
  for (size_t i = 0; i < where.size(); ++i) sql += (i == 0 ? " WHERE " : " AND ") + where[i];
  if (spec.limit > 0) {
    if (!is_query && !t.primary_key.empty()) {
      sql += " ORDER BY ";
      for (size_t i = 0; i < t.primary_key.size(); ++i) {
        if (i > 0) sql += ", ";
        sql += QuoteName(t.primary_key[i]);
      }
    }
    sql += " LIMIT " + std::to_string(spec.limit);
  }

  DBS_ASSIGN_OR_RETURN(MysqlConnection * conn, Acquire());
  auto reader =
      std::make_unique<MysqlRowReader>(this, conn, what, std::move(cols), std::move(decoders),
                                       std::move(checked), std::move(key_names));
  DBS_RETURN_IF_ERROR(reader->Start(sql));
  return std::unique_ptr<RowReader>(std::move(reader));
}

}  // namespace

// The binlog position: the GTID set when there is one, else file:offset; kNone (with a
// warning) when the binlog is off or the user may not see it.
SourcePosition ReadBinlogPosition(MysqlConnection* c) {
  SourcePosition pos;
  std::string gtid;
  auto g =
      c->Query(c->is_mariadb() ? "SELECT @@GLOBAL.gtid_binlog_pos"
                               : "SELECT IF(@@GLOBAL.gtid_mode = 'ON', @@GLOBAL.gtid_executed, '')",
               "reading the GTID position");
  if (g.ok() && !g->empty() && (*g)[0][0]) gtid = *(*g)[0][0];
  gtid.erase(std::remove(gtid.begin(), gtid.end(), '\n'), gtid.end());

  std::string file_pos;
  auto st = c->Query("SHOW MASTER STATUS", "reading the binlog position");
  if (!st.ok() && st.status().code() == StatusCode::kInvalidArgument) {
    st = c->Query("SHOW BINARY LOG STATUS", "reading the binlog position");  // MySQL 8.4
  }
  if (st.ok() && !st->empty() && (*st)[0].size() >= 2 && (*st)[0][0] && (*st)[0][1]) {
    file_pos = *(*st)[0][0] + ":" + *(*st)[0][1];
  }
  if (!gtid.empty()) {
    pos.kind = SourcePosition::Kind::kMysqlGtid;
    pos.value = gtid;
    pos.file_pos = file_pos;
  } else if (!file_pos.empty()) {
    pos.kind = SourcePosition::Kind::kMysqlFilePos;
    pos.value = file_pos;
  } else {
    Log(LogLevel::kWarn, kLog,
        "no binlog position recorded: the binlog is off or the user lacks REPLICATION CLIENT "
        "(MariaDB: BINLOG MONITOR); a CDC hand-off from this snapshot is not possible",
        {F("detail", st.ok() ? std::string("binlog disabled") : st.status().message())});
  }
  if (!gtid.empty() || !file_pos.empty()) {
    Log(LogLevel::kInfo, kLog, "binlog position", {F("gtid", gtid), F("file_pos", file_pos)});
  }
  return pos;
}

// ---------------------------------------------------------------------------------------------

MysqlSource::MysqlSource(ConnectionConfig config, std::unique_ptr<MysqlConnection> conn)
    : config_(std::move(config)), conn_(std::move(conn)) {}

MysqlSource::~MysqlSource() = default;

bool MysqlSource::is_mariadb() const { return conn_->is_mariadb(); }

Result<std::unique_ptr<MysqlSource>> MysqlSource::Open(const ConnectionConfig& config) {
  mysql::ConnectOptions o;
  o.role = mysql::SessionRole::kRead;
  DBS_ASSIGN_OR_RETURN(auto conn, MysqlConnection::Open(config, o));
  return std::unique_ptr<MysqlSource>(new MysqlSource(config, std::move(conn)));
}

Result<std::unique_ptr<Source>> OpenMysqlSource(const ConnectionConfig& config) {
  if (config.engine != Engine::kMysql) {
    return Status::InvalidArgument("not a MySQL connection: " + config.Redacted());
  }
  DBS_ASSIGN_OR_RETURN(auto source, MysqlSource::Open(config));
  return std::unique_ptr<Source>(std::move(source));
}

Result<std::string> MysqlSource::SchemaOf(const TableRef& table) const {
  if (!table.schema.empty()) return table.schema;
  if (!config_.database.empty()) return config_.database;
  return Status::InvalidArgument("table '" + table.name +
                                 "' names no database and the connection has none");
}

Result<std::vector<TableRef>> MysqlSource::ListTables() { return List(/*all=*/false); }
Result<std::vector<TableRef>> MysqlSource::ListAllTables() { return List(/*all=*/true); }

Result<std::vector<TableRef>> MysqlSource::List(bool all) {
  std::string sql =
      "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE "
      "TABLE'";
  if (!all && !config_.database.empty()) {
    sql += " AND TABLE_SCHEMA = " + conn_->Literal(config_.database);
  }
  sql += " ORDER BY TABLE_SCHEMA, TABLE_NAME";
  DBS_ASSIGN_OR_RETURN(auto rows, conn_->Query(sql, "listing tables on " + conn_->endpoint()));
  std::vector<TableRef> out;
  for (const TextRow& r : rows) {
    if ((all || config_.database.empty()) && IsSystemDatabase(Str(r, 0))) continue;
    out.push_back({Str(r, 0), Str(r, 1)});
  }
  return out;
}

Result<TableSchema> MysqlSource::Describe(const TableRef& ref) {
  DBS_ASSIGN_OR_RETURN(std::string schema, SchemaOf(ref));
  const std::string qname = schema + "." + ref.name;
  const std::string ctx = "describing " + qname;
  // The server's own verdict on existence and the SELECT privilege (information_schema hides
  // tables the user has no privilege on, which would look like a missing table).
  DBS_RETURN_IF_ERROR(
      conn_->Exec("SELECT * FROM " + QuoteQualified(schema, ref.name) + " LIMIT 0", ctx));

  const std::string s = conn_->Literal(schema);
  const std::string n = conn_->Literal(ref.name);
  const bool maria = conn_->is_mariadb();
  const unsigned long v = conn_->server_version();
  TableSchema t;
  t.schema = schema;
  t.name = ref.name;

  DBS_ASSIGN_OR_RETURN(
      auto trows,
      conn_->Query("SELECT TABLE_ROWS, TABLE_COMMENT FROM information_schema.TABLES WHERE "
                   "TABLE_SCHEMA = " +
                       s + " AND TABLE_NAME = " + n,
                   ctx));
  if (!trows.empty()) {
    t.estimated_rows = U64(trows[0], 0);
    t.comment = Str(trows[0], 1);
  }

  // Checks first: on MariaDB a json_valid(`col`) check marks a JSON column.
  std::set<std::string> json_columns;
  const bool has_checks = maria ? v >= 100201 : v >= 80016;
  if (has_checks) {
    std::string sql =
        maria
            ? "SELECT CONSTRAINT_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS "
              "WHERE CONSTRAINT_SCHEMA = " +
                  s + " AND TABLE_NAME = " + n + " ORDER BY CONSTRAINT_NAME"
            : "SELECT c.CONSTRAINT_NAME, c.CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS "
              "c JOIN information_schema.TABLE_CONSTRAINTS t ON t.CONSTRAINT_SCHEMA = "
              "c.CONSTRAINT_SCHEMA AND t.CONSTRAINT_NAME = c.CONSTRAINT_NAME AND "
              "t.CONSTRAINT_TYPE = 'CHECK' WHERE t.TABLE_SCHEMA = " +
                  s + " AND t.TABLE_NAME = " + n + " ORDER BY c.CONSTRAINT_NAME";
    DBS_ASSIGN_OR_RETURN(auto rows, conn_->Query(sql, ctx + " (checks)"));
    for (const TextRow& r : rows) {
      CheckConstraint c;
      c.name = Str(r, 0);
      c.expression = maria ? Str(r, 1) : UnescapeMysqlCatalogText(Str(r, 1));
      if (maria) {
        if (auto col = MariadbJsonCheckColumn(c.expression)) json_columns.insert(*col);
      }
      t.checks.push_back(std::move(c));
    }
  }

  const bool has_srs = !maria && v >= 80000;
  DBS_ASSIGN_OR_RETURN(
      auto crows,
      conn_->Query(
          "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, COLUMN_DEFAULT, "
          "CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION, "
          "CHARACTER_SET_NAME, COLLATION_NAME, EXTRA, GENERATION_EXPRESSION, COLUMN_COMMENT, " +
              std::string(has_srs ? "SRS_ID" : "NULL") +
              " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = " + s +
              " AND TABLE_NAME = " + n + " ORDER BY ORDINAL_POSITION",
          ctx + " (columns)"));
  if (crows.empty()) return Status::NotFound("table " + qname + " has no visible columns");
  for (const TextRow& r : crows) {
    MysqlColumnInfo info;
    info.column_name = Str(r, 0);
    info.data_type = Lower(Str(r, 1));
    info.column_type = Str(r, 2);
    info.is_nullable = Str(r, 3) == "YES";
    info.column_default = r[4];
    info.character_maximum_length = U64(r, 5);
    info.numeric_precision = U64(r, 6);
    info.numeric_scale = U64(r, 7);
    info.datetime_precision = U64(r, 8);
    info.character_set_name = Str(r, 9);
    info.collation_name = Str(r, 10);
    info.extra = Str(r, 11);
    info.generation_expression = Str(r, 12);
    info.column_comment = Str(r, 13);
    if (auto srs = U64(r, 14)) info.srs_id = static_cast<uint32_t>(*srs);
    info.is_mariadb = maria;
    info.mariadb_json = maria && json_columns.count(info.column_name) != 0;
    auto col = ColumnFromMysql(info);
    if (!col.ok()) return col.status().WithContext(ctx);
    t.columns.push_back(std::move(col).value());
  }

  DBS_ASSIGN_OR_RETURN(
      auto irows,
      conn_->Query("SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME, SUB_PART, INDEX_TYPE, COLLATION, " +
                       std::string(!maria && v >= 80013 ? "EXPRESSION" : "NULL") +
                       " FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = " + s +
                       " AND TABLE_NAME = " + n + " ORDER BY INDEX_NAME, SEQ_IN_INDEX",
                   ctx + " (indexes)"));
  std::map<std::string, size_t> index_pos;
  for (const TextRow& r : irows) {
    const std::string& name = Str(r, 0);
    std::string part = r[2] ? *r[2] : (r[6] ? UnescapeMysqlCatalogText(*r[6]) : std::string());
    if (name == "PRIMARY") {
      t.primary_key.push_back(part);
      continue;
    }
    auto [it, fresh] = index_pos.emplace(name, t.indexes.size());
    if (fresh) {
      Index ix;
      ix.name = name;
      ix.unique = Str(r, 1) == "0";
      ix.method = Lower(Str(r, 4));
      if (ix.method == "rtree") ix.method = "spatial";
      t.indexes.push_back(std::move(ix));
    }
    IndexColumn ic;
    ic.name = std::move(part);
    ic.descending = Str(r, 5) == "D";
    if (auto sub = U64(r, 3)) ic.prefix_length = static_cast<uint32_t>(*sub);
    t.indexes[it->second].columns.push_back(std::move(ic));
  }

  DBS_ASSIGN_OR_RETURN(
      auto frows,
      conn_->Query(
          "SELECT k.CONSTRAINT_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_SCHEMA, "
          "k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME, r.UPDATE_RULE, r.DELETE_RULE FROM "
          "information_schema.KEY_COLUMN_USAGE k JOIN information_schema.REFERENTIAL_CONSTRAINTS "
          "r ON r.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND r.CONSTRAINT_NAME = "
          "k.CONSTRAINT_NAME AND r.TABLE_NAME = k.TABLE_NAME WHERE k.TABLE_SCHEMA = " +
              s + " AND k.TABLE_NAME = " + n +
              " AND k.REFERENCED_TABLE_NAME IS NOT NULL ORDER BY k.CONSTRAINT_NAME, "
              "k.ORDINAL_POSITION",
          ctx + " (foreign keys)"));
  for (const TextRow& r : frows) {
    if (t.foreign_keys.empty() || t.foreign_keys.back().name != Str(r, 0)) {
      ForeignKey fk;
      fk.name = Str(r, 0);
      fk.ref_schema = Str(r, 2);
      fk.ref_table = Str(r, 3);
      fk.on_update = Str(r, 5);
      fk.on_delete = Str(r, 6);
      t.foreign_keys.push_back(std::move(fk));
    }
    t.foreign_keys.back().columns.push_back(Str(r, 1));
    t.foreign_keys.back().ref_columns.push_back(Str(r, 4));
  }
  DBS_RETURN_IF_ERROR(mysql::DescribeCreateTable(conn_.get(), &t));
  return t;
}

Result<std::vector<SchemaObject>> MysqlSource::DescribeObjects(
    const std::vector<TableSchema>& tables) {
  return mysql::DescribeObjects(conn_.get(), tables);
}

namespace {

// Describes one result field (DescribeQuery) the way information_schema.COLUMNS would.
MysqlColumnInfo FieldInfo(const MYSQL_FIELD& f, bool mariadb) {
  MysqlColumnInfo info;
  info.column_name = f.name;
  info.is_nullable = (f.flags & NOT_NULL_FLAG) == 0;
  info.is_mariadb = mariadb;
  const bool uns = (f.flags & UNSIGNED_FLAG) != 0;
  const bool bin = f.charsetnr == 63;
  const std::string u = uns ? " unsigned" : "";
  const uint64_t chars = f.length / 4;  // results are utf8mb4: 4 bytes per character
  auto set = [&](const std::string& dt, const std::string& ct) {
    info.data_type = dt;
    info.column_type = ct;
  };
  switch (f.type) {
    case MYSQL_TYPE_TINY:
      set("tinyint", "tinyint" + u);
      break;
    case MYSQL_TYPE_SHORT:
      set("smallint", "smallint" + u);
      break;
    case MYSQL_TYPE_INT24:
      set("mediumint", "mediumint" + u);
      break;
    case MYSQL_TYPE_LONG:
      set("int", "int" + u);
      break;
    case MYSQL_TYPE_LONGLONG:
      set("bigint", "bigint" + u);
      break;
    case MYSQL_TYPE_YEAR:
      set("year", "year");
      break;
    case MYSQL_TYPE_FLOAT:
      set("float", "float" + u);
      break;
    case MYSQL_TYPE_DOUBLE:
      set("double", "double" + u);
      break;
    case MYSQL_TYPE_DECIMAL:
    case MYSQL_TYPE_NEWDECIMAL: {
      const uint64_t scale = f.decimals;
      const uint64_t overhead = (scale > 0 ? 1 : 0) + (uns ? 0 : 1);
      const uint64_t prec = f.length > overhead ? f.length - overhead : 1;
      info.numeric_precision = prec;
      info.numeric_scale = scale;
      set("decimal", "decimal(" + std::to_string(prec) + "," + std::to_string(scale) + ")" + u);
      break;
    }
    case MYSQL_TYPE_BIT:
      set("bit", "bit(" + std::to_string(f.length) + ")");
      break;
    case MYSQL_TYPE_DATE:
    case MYSQL_TYPE_NEWDATE:
      set("date", "date");
      break;
    case MYSQL_TYPE_TIME:
    case MYSQL_TYPE_TIME2:
    case MYSQL_TYPE_DATETIME:
    case MYSQL_TYPE_DATETIME2:
    case MYSQL_TYPE_TIMESTAMP:
    case MYSQL_TYPE_TIMESTAMP2: {
      const char* base = (f.type == MYSQL_TYPE_TIME || f.type == MYSQL_TYPE_TIME2) ? "time"
                         : (f.type == MYSQL_TYPE_DATETIME || f.type == MYSQL_TYPE_DATETIME2)
                             ? "datetime"
                             : "timestamp";
      const unsigned fsp = f.decimals <= 6 ? f.decimals : 6;
      info.datetime_precision = fsp;
      set(base, fsp > 0 ? std::string(base) + "(" + std::to_string(fsp) + ")" : base);
      break;
    }
    case MYSQL_TYPE_JSON:
      set("json", "json");
      break;
    case MYSQL_TYPE_GEOMETRY:
      set("geometry", "geometry");
      break;
    case MYSQL_TYPE_TINY_BLOB:
    case MYSQL_TYPE_MEDIUM_BLOB:
    case MYSQL_TYPE_LONG_BLOB:
    case MYSQL_TYPE_BLOB: {
      const char* size = f.length <= 255        ? "tiny"
                         : f.length <= 65535    ? ""
                         : f.length <= 16777215 ? "medium"
                                                : "long";
      const std::string t = std::string(size) + (bin ? "blob" : "text");
      set(t, t);
      break;
    }
    case MYSQL_TYPE_STRING:
    case MYSQL_TYPE_VAR_STRING:
    case MYSQL_TYPE_VARCHAR:
    case MYSQL_TYPE_ENUM:
    case MYSQL_TYPE_SET:
    default: {
      const bool fixed = f.type == MYSQL_TYPE_STRING && (f.flags & (ENUM_FLAG | SET_FLAG)) == 0;
      if (bin) {
        const std::string b = fixed ? "binary" : "varbinary";
        info.character_maximum_length = f.length;
        set(b, b + "(" + std::to_string(f.length) + ")");
      } else {
        const std::string b = fixed && chars <= 255 ? "char" : "varchar";
        info.character_maximum_length = chars;
        set(b, b + "(" + std::to_string(chars) + ")");
      }
      break;
    }
  }
  if (bin) {
    info.character_set_name = "binary";
  } else if (info.data_type.find("char") != std::string::npos ||
             info.data_type.find("text") != std::string::npos) {
    info.character_set_name = "utf8mb4";
  }
  // MariaDB's extended metadata names plugin types (uuid, inet4, inet6) and JSON columns.
  if (mariadb) {
    MARIADB_CONST_STRING attr;
    if (mariadb_field_attr(&attr, &f, MARIADB_FIELD_ATTR_DATA_TYPE_NAME) == 0 && attr.length > 0) {
      const std::string name(attr.str, attr.length);
      if (name == "uuid" || name == "inet4" || name == "inet6") set(name, name);
    }
    if (mariadb_field_attr(&attr, &f, MARIADB_FIELD_ATTR_FORMAT_NAME) == 0 && attr.length > 0 &&
        std::string(attr.str, attr.length) == "json") {
      set("longtext", "longtext");
      info.mariadb_json = true;
    }
  }
  return info;
}

}  // namespace

Result<TableSchema> MysqlSource::DescribeQuery(const std::string& query, const TableRef& name) {
  const std::string ctx = "describing the query of " + name.QualifiedName();
  const std::string sql = "SELECT * FROM (" + query + ") AS `_dbs_q` LIMIT 0";
  MYSQL* m = conn_->handle();
  if (mysql_real_query(m, sql.data(), static_cast<unsigned long>(sql.size())) != 0) {
    return conn_->LastError(ctx);
  }
  mysql::ResultHandle r(mysql_store_result(m));
  if (r == nullptr) {
    if (mysql_errno(m) != 0) return conn_->LastError(ctx);
    return Status::InvalidArgument(ctx + ": the query returns no result set");
  }
  TableSchema t;
  t.schema = name.schema;
  t.name = name.name;
  const unsigned nf = mysql_num_fields(r.get());
  const MYSQL_FIELD* fields = mysql_fetch_fields(r.get());
  for (unsigned i = 0; i < nf; ++i) {
    auto col = ColumnFromMysql(FieldInfo(fields[i], conn_->is_mariadb()));
    if (!col.ok()) return col.status().WithContext(ctx);
    t.columns.push_back(std::move(col).value());
  }
  return t;
}

Result<std::vector<KeyRange>> MysqlSource::Split(const TableSchema& table,
                                                 uint64_t rows_per_chunk) {
  std::vector<KeyRange> out(1);  // one open range unless the table can be split
  if (table.primary_key.size() != 1 || rows_per_chunk == 0) return out;
  const int ci = table.FindColumn(table.primary_key[0]);
  if (ci < 0) return out;
  const Column& key = table.columns[static_cast<size_t>(ci)];
  if (!IsSignedInt(key.type) && !IsUnsignedInt(key.type)) return out;
  out[0].column = key.name;

  TableRef ref{table.schema, table.name};
  DBS_ASSIGN_OR_RETURN(std::string schema, SchemaOf(ref));
  const std::string ctx = "splitting " + schema + "." + table.name;
  DBS_ASSIGN_OR_RETURN(auto est, conn_->Query("SELECT TABLE_ROWS FROM information_schema.TABLES "
                                              "WHERE TABLE_SCHEMA = " +
                                                  conn_->Literal(schema) +
                                                  " AND TABLE_NAME = " + conn_->Literal(table.name),
                                              ctx));
  const uint64_t rows = est.empty() ? 0 : U64(est[0], 0).value_or(0);
  if (rows <= rows_per_chunk) return out;

  const std::string k = QuoteName(key.name);
  DBS_ASSIGN_OR_RETURN(auto mm, conn_->Query("SELECT MIN(" + k + "), MAX(" + k + ") FROM " +
                                                 QuoteQualified(schema, table.name),
                                             ctx));
  if (mm.empty() || !mm[0][0] || !mm[0][1]) return out;
  // Bounds as 128-bit values: unsigned keys may exceed int64 (the open last range covers them).
  auto parse = [](const std::string& text, __int128* v) {
    int64_t i;
    uint64_t u;
    if (mysql::ParseInt64(text, &i)) {
      *v = i;
      return true;
    }
    if (mysql::ParseUInt64(text, &u)) {
      *v = u;
      return true;
    }
    return false;
  };
  __int128 lo, hi;
  if (!parse(*mm[0][0], &lo) || !parse(*mm[0][1], &hi)) return out;
  const __int128 kMax = std::numeric_limits<int64_t>::max();
  if (lo > kMax) return out;
  hi = std::min(hi, kMax);
  const __int128 chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  const __int128 span = hi - lo + 1;
  __int128 step = (span + chunks - 1) / chunks;
  if (step < 1) step = 1;
  out.clear();
  std::optional<int64_t> lower;
  for (__int128 b = lo + step; b <= hi; b += step) {
    out.push_back({key.name, lower, static_cast<int64_t>(b)});
    lower = static_cast<int64_t>(b);
  }
  out.push_back({key.name, lower, std::nullopt});
  return out;
}

Result<std::unique_ptr<Snapshot>> MysqlSource::BeginSnapshot(int max_readers) {
  const size_t n = static_cast<size_t>(std::max(1, max_readers));
  mysql::ConnectOptions o;
  o.role = mysql::SessionRole::kRead;
  std::vector<std::unique_ptr<MysqlConnection>> readers;
  for (size_t i = 0; i < n; ++i) {
    DBS_ASSIGN_OR_RETURN(auto c, MysqlConnection::Open(config_, o));
    readers.push_back(std::move(c));
  }
  auto start = [](MysqlConnection* c) {
    DBS_RETURN_IF_ERROR(
        c->Exec("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", "starting a snapshot"));
    return c->Exec("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY", "starting a snapshot");
  };

  // A bounded wait for the global read lock (it waits for running statements to finish).
  DBS_RETURN_IF_ERROR(
      conn_->Exec("SET SESSION lock_wait_timeout = 300", "preparing the snapshot lock"));
  Status locked = conn_->Exec("FLUSH TABLES WITH READ LOCK", "locking tables for the snapshot");
  SourcePosition pos;
  if (locked.ok()) {
    Status s;
    for (auto& c : readers) {
      s = start(c.get());
      if (!s.ok()) break;
    }
    if (s.ok()) pos = ReadBinlogPosition(conn_.get());
    Status unlocked = conn_->Exec("UNLOCK TABLES", "unlocking tables after the snapshot");
    DBS_RETURN_IF_ERROR(s);
    DBS_RETURN_IF_ERROR(unlocked);
  } else if (locked.code() == StatusCode::kPermissionDenied) {
    Log(LogLevel::kWarn, kLog,
        "FLUSH TABLES WITH READ LOCK is not allowed (RELOAD privilege missing): reading with one "
        "connection in its own consistent snapshot, so parallel chunks are read one after "
        "another and the recorded binlog position is not exact",
        {F("endpoint", conn_->endpoint()), F("detail", locked.message())});
    readers.resize(1);
    MysqlConnection* c = readers[0].get();
    DBS_RETURN_IF_ERROR(start(c));
    bool exact = false;
    if (c->is_mariadb()) {
      // MariaDB reports the binlog position matching the transaction's snapshot.
      auto st = c->Query("SHOW STATUS LIKE 'binlog_snapshot_%'", "reading the snapshot position");
      std::string file, offset;
      if (st.ok()) {
        for (const TextRow& r : *st) {
          if (Lower(Str(r, 0)) == "binlog_snapshot_file") file = Str(r, 1);
          if (Lower(Str(r, 0)) == "binlog_snapshot_position") offset = Str(r, 1);
        }
      }
      if (!file.empty() && !offset.empty()) {
        pos.kind = SourcePosition::Kind::kMysqlFilePos;
        pos.value = file + ":" + offset;
        exact = true;
        // The GTID set at exactly that point, when the server has GTIDs.
        auto g = c->Query("SELECT BINLOG_GTID_POS(" + c->Literal(file) + ", " + offset + ")",
                          "reading the snapshot position");
        if (g.ok() && !g->empty() && (*g)[0][0] && !(*g)[0][0]->empty()) {
          pos.kind = SourcePosition::Kind::kMysqlGtid;
          pos.file_pos = pos.value;
          pos.value = *(*g)[0][0];
        }
      }
    }
    if (!exact) pos = ReadBinlogPosition(c);
  } else {
    return locked;
  }
  return std::unique_ptr<Snapshot>(
      new MysqlSnapshot(std::move(readers), std::move(pos), config_.database));
}

// ---------------------------------------------------------------------------------------------
// Change data capture.

Status MysqlSource::CheckCdc(const CdcOptions& options) {
  const std::string ep = conn_->endpoint();
  const std::string ctx = "checking CDC prerequisites on " + ep;
  DBS_ASSIGN_OR_RETURN(
      auto rows,
      conn_->Query("SELECT @@GLOBAL.log_bin, @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image",
                   ctx));
  if (rows.empty()) return Status::Internal(ctx + ": no result");
  const std::string log_bin = Lower(Str(rows[0], 0));
  const std::string format = Lower(Str(rows[0], 1));
  const std::string image = Lower(Str(rows[0], 2));
  if (log_bin != "1" && log_bin != "on") {
    return Status::FailedPrecondition(
        "the binary log is off on " + ep +
        ": start the server with log_bin (e.g. --log-bin=binlog), binlog_format=ROW and "
        "binlog_row_image=FULL, then take the snapshot");
  }
  if (format != "row") {
    return Status::FailedPrecondition(
        "binlog_format is " + Upper(format) + " on " + ep +
        ": change data capture reads row events; run SET GLOBAL binlog_format = 'ROW' (and set "
        "binlog_format=ROW in the server configuration so it survives a restart)");
  }
  if (image != "full") {
    return Status::FailedPrecondition(
        "binlog_row_image is " + Upper(image) + " on " + ep +
        ": it must be FULL for updates and deletes to carry the whole row; run SET GLOBAL "
        "binlog_row_image = 'FULL' (and set it in the server configuration)");
  }
  // Privileges: the global grants of the current user.
  DBS_ASSIGN_OR_RETURN(auto grants, conn_->Query("SHOW GRANTS FOR CURRENT_USER()", ctx));
  bool all = false, slave = false, client = false;
  for (const TextRow& g : grants) {
    const std::string text = Upper(Str(g, 0));
    if (text.find(" ON *.* ") == std::string::npos) continue;
    if (text.find("ALL PRIVILEGES") != std::string::npos) all = true;
    if (text.find("REPLICATION SLAVE") != std::string::npos ||
        text.find("REPLICATION REPLICA") != std::string::npos) {
      slave = true;
    }
    if (text.find("REPLICATION CLIENT") != std::string::npos ||
        text.find("BINLOG MONITOR") != std::string::npos ||
        text.find("SUPER") != std::string::npos) {
      client = true;
    }
  }
  if (!all && (!slave || !client)) {
    const std::string monitor = conn_->is_mariadb() ? "BINLOG MONITOR" : "REPLICATION CLIENT";
    std::string missing;
    if (!slave) missing = "REPLICATION SLAVE";
    if (!client) missing += std::string(missing.empty() ? "" : " and ") + monitor;
    return Status::PermissionDenied(
        "the user of " + ep + " lacks " + missing +
        ", needed to read the binary log: run GRANT REPLICATION SLAVE, " + monitor +
        " ON *.* TO <the user>");
  }
  for (const TableRef& t : options.tables) {
    auto d = Describe(t);
    if (!d.ok()) return d.status().WithContext("checking CDC for " + t.QualifiedName());
  }
  return Status::Ok();
}

Result<std::unique_ptr<Snapshot>> MysqlSource::BeginCdcSnapshot(int max_readers,
                                                                const CdcOptions& options) {
  (void)options;
  DBS_ASSIGN_OR_RETURN(auto snap, BeginSnapshot(max_readers));
  if (snap->position().empty()) {
    return Status::FailedPrecondition(
        "no binlog position could be recorded for the snapshot on " + conn_->endpoint() +
        ": the binary log is off or the user lacks REPLICATION CLIENT (MariaDB: BINLOG "
        "MONITOR); see CheckCdc");
  }
  return snap;
}

Result<std::unique_ptr<ChangeStream>> MysqlSource::OpenChangeStream(const CdcOptions& options) {
  return OpenBinlogStream(config_, options);
}

}  // namespace dbs

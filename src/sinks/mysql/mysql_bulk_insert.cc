#include "sinks/mysql/mysql_bulk_insert.h"

#include <cstdlib>
#include <cstring>

#include "mysql/mysql_client.h"

namespace dbs::mysql {

namespace {

// Not YEAR: the number 0 stores year 0000, the text path's '0' year 2000; YEAR goes as text.
bool NumericTarget(const std::string& dt) { return IsNumericType(dt) && dt != "year"; }

// Bytes a value takes in the bulk packet besides its indicator: length prefix and data.
uint64_t WireBytes(size_t n) { return n + (n < 251 ? 1 : 9); }

}  // namespace

bool BulkInsert::Supported(const MysqlConnection& conn) {
  return conn.is_mariadb() && conn.server_version() >= 100207;
}

Result<std::unique_ptr<BulkInsert>> BulkInsert::Prepare(MysqlConnection* conn,
                                                        const std::vector<ColumnWriter>& writers,
                                                        const std::string& head,
                                                        const std::string& tail,
                                                        uint64_t max_bytes) {
  std::unique_ptr<BulkInsert> b(new BulkInsert(conn, max_bytes));
  b->writers_ = writers;
  b->columns_.resize(writers.size());
  b->binds_.resize(writers.size());
  std::string sql = head + "(";
  for (size_t j = 0; j < writers.size(); ++j) {
    const ColumnWriter& w = b->writers_[j];
    Column& c = b->columns_[j];
    c.writer = &w;
    const std::string& dt = w.data_type;
    const bool plain = w.expression.empty();
    switch (w.kind) {
      case TextKind::kSigned:
      case TextKind::kUnsigned:
      case TextKind::kBool:
        if (plain && NumericTarget(dt)) {
          c.bind = w.kind == TextKind::kSigned     ? Bind::kInt64
                   : w.kind == TextKind::kUnsigned ? Bind::kUInt64
                                                   : Bind::kBool;
        }
        break;
      case TextKind::kFloat:
        if (plain && IsFloatingType(dt)) c.bind = Bind::kDouble;
        break;
      case TextKind::kDate:
        if (plain && dt == "date") c.bind = Bind::kDate;
        break;
      case TextKind::kDateTime:
        if (plain && (dt == "datetime" || dt == "timestamp")) c.bind = Bind::kDateTime;
        break;
      case TextKind::kRaw:
        if (plain) c.bind = Bind::kBytes;
        break;
      case TextKind::kHex:
        // The text path sends hex digits and UNHEX(?); the bytes themselves do the same.
        if (IsBinaryType(dt)) c.bind = Bind::kBlob;
        break;
      default:
        break;
    }
    if (j > 0) sql += ", ";
    if (c.bind == Bind::kText && !plain) {
      sql += w.expression;  // holds "?" once, where the value goes
    } else {
      sql += '?';
    }
  }
  sql += ")" + tail;
  b->stmt_ = mysql_stmt_init(conn->handle());
  if (b->stmt_ == nullptr) return conn->LastError("preparing a bulk INSERT");
  if (mysql_stmt_prepare(b->stmt_, sql.data(), static_cast<unsigned long>(sql.size())) != 0) {
    if (RefusesPreparedStatements(mysql_stmt_errno(b->stmt_))) {
      return Status::Unsupported(std::string("the target does not prepare statements (") +
                                 mysql_stmt_error(b->stmt_) + ")");
    }
    return conn->StmtError(b->stmt_, "preparing " + head);
  }
  return b;
}

BulkInsert::~BulkInsert() {
  if (stmt_ != nullptr) mysql_stmt_close(stmt_);
}

Status BulkInsert::AddValue(Column& c, const ColumnVector& col, size_t row) {
  const ColumnWriter& w = *c.writer;
  switch (c.bind) {
    case Bind::kInt64:
      c.ints.push_back(col.GetInt(row));
      bytes_ += 8;
      return Status::Ok();
    case Bind::kUInt64:
      c.ints.push_back(static_cast<long long>(col.GetUInt(row)));
      bytes_ += 8;
      return Status::Ok();
    case Bind::kBool:
      c.ints.push_back(col.GetBool(row) ? 1 : 0);
      bytes_ += 8;
      return Status::Ok();
    case Bind::kDouble: {
      double v;
      DBS_RETURN_IF_ERROR(CellDouble(w, col, row, &v));
      c.doubles.push_back(v);
      bytes_ += 8;
      return Status::Ok();
    }
    case Bind::kDate:
    case Bind::kDateTime: {
      CivilDateTime civil;
      DBS_RETURN_IF_ERROR(CellCivil(w, col, row, &civil));
      MYSQL_TIME t;
      std::memset(&t, 0, sizeof t);
      t.year = static_cast<unsigned>(civil.year);
      t.month = civil.month;
      t.day = civil.day;
      if (c.bind == Bind::kDateTime) {
        t.hour = civil.hour;
        t.minute = civil.minute;
        t.second = civil.second;
        t.second_part = civil.micros;
        t.time_type = MYSQL_TIMESTAMP_DATETIME;
      } else {
        t.time_type = MYSQL_TIMESTAMP_DATE;
      }
      c.times.push_back(t);
      bytes_ += 12;
      return Status::Ok();
    }
    case Bind::kBytes:
    case Bind::kBlob: {
      const std::string_view v = col.type() == LogicalType::kUuid
                                     ? std::string_view(col.FixedSlot(row), 16)
                                     : col.GetBytes(row);
      c.ptrs.push_back(v.data());
      c.lengths.push_back(static_cast<unsigned long>(v.size()));
      bytes_ += WireBytes(v.size());
      return Status::Ok();
    }
    case Bind::kText: {
      const size_t at = c.text.size();
      DBS_RETURN_IF_ERROR(CellText(w, col, row, &c.text));
      c.offsets.push_back(at);
      c.lengths.push_back(static_cast<unsigned long>(c.text.size() - at));
      bytes_ += WireBytes(c.text.size() - at);
      return Status::Ok();
    }
  }
  return Status::Internal("unknown bulk binding");
}

void BulkInsert::AddNullSlot(Column& c) {
  // Keeps the arrays row-aligned: a NULL row holds a slot the server does not read.
  switch (c.bind) {
    case Bind::kInt64:
    case Bind::kUInt64:
    case Bind::kBool:
      c.ints.push_back(0);
      break;
    case Bind::kDouble:
      c.doubles.push_back(0);
      break;
    case Bind::kDate:
    case Bind::kDateTime:
      c.times.emplace_back();
      break;
    case Bind::kBytes:
    case Bind::kBlob:
      c.ptrs.push_back(nullptr);
      c.lengths.push_back(0);
      break;
    case Bind::kText:
      c.offsets.push_back(c.text.size());
      c.lengths.push_back(0);
      break;
  }
}

Status BulkInsert::AddRow(const Bundle& b, const std::vector<size_t>& source_index, size_t row) {
  for (size_t j = 0; j < columns_.size(); ++j) {
    Column& c = columns_[j];
    const ColumnVector& col = b.columns[source_index[j]];
    const bool null = col.IsNull(row);
    c.indicators.push_back(null ? STMT_INDICATOR_NULL : STMT_INDICATOR_NONE);
    ++bytes_;
    if (null) {
      AddNullSlot(c);
      continue;
    }
    if (Status s = AddValue(c, col, row); !s.ok()) {
      Clear();  // the arrays are no longer row-aligned
      return s;
    }
  }
  ++rows_;
  return Status::Ok();
}

void BulkInsert::Clear() {
  for (Column& c : columns_) {
    c.ints.clear();
    c.doubles.clear();
    c.times.clear();
    c.time_ptrs.clear();
    c.ptrs.clear();
    c.lengths.clear();
    c.offsets.clear();
    c.text.clear();
    c.indicators.clear();
  }
  rows_ = 0;
  bytes_ = 0;
}

Status BulkInsert::Execute(std::string_view context, long* failed_row, unsigned* warnings,
                           uint64_t* affected) {
  *failed_row = -1;
  *warnings = 0;
  *affected = 0;
  if (rows_ == 0) return Status::Ok();
  for (size_t j = 0; j < columns_.size(); ++j) {
    Column& c = columns_[j];
    MYSQL_BIND& b = binds_[j];
    std::memset(&b, 0, sizeof b);
    b.u.indicator = c.indicators.data();
    switch (c.bind) {
      case Bind::kInt64:
      case Bind::kUInt64:
      case Bind::kBool:
        b.buffer_type = MYSQL_TYPE_LONGLONG;
        b.is_unsigned = c.bind == Bind::kUInt64;
        b.buffer = c.ints.data();
        break;
      case Bind::kDouble:
        b.buffer_type = MYSQL_TYPE_DOUBLE;
        b.buffer = c.doubles.data();
        break;
      case Bind::kDate:
      case Bind::kDateTime:
        // Column-wise binding passes temporal values by pointer, like strings.
        c.time_ptrs.resize(c.times.size());
        for (size_t i = 0; i < c.times.size(); ++i) c.time_ptrs[i] = &c.times[i];
        b.buffer_type = c.bind == Bind::kDate ? MYSQL_TYPE_DATE : MYSQL_TYPE_DATETIME;
        b.buffer = c.time_ptrs.data();
        break;
      case Bind::kBytes:
      case Bind::kBlob:
        b.buffer_type = c.bind == Bind::kBlob ? MYSQL_TYPE_BLOB : MYSQL_TYPE_STRING;
        b.buffer = c.ptrs.data();
        b.length = c.lengths.data();
        break;
      case Bind::kText:
        c.ptrs.resize(c.offsets.size());
        for (size_t i = 0; i < c.offsets.size(); ++i) c.ptrs[i] = c.text.data() + c.offsets[i];
        b.buffer_type = MYSQL_TYPE_STRING;
        b.buffer = c.ptrs.data();
        b.length = c.lengths.data();
        break;
    }
  }
  unsigned int size = static_cast<unsigned int>(rows_);
  Status s;
  if (mysql_stmt_attr_set(stmt_, STMT_ATTR_ARRAY_SIZE, &size) != 0 ||
      mysql_stmt_bind_param(stmt_, binds_.data()) != 0 || mysql_stmt_execute(stmt_) != 0) {
    s = conn_->StmtError(stmt_, context);
    const char* msg = mysql_stmt_error(stmt_);
    if (const char* at = msg == nullptr ? nullptr : std::strstr(msg, " at row "); at != nullptr) {
      const long n = std::strtol(at + 8, nullptr, 10);
      if (n >= 1 && static_cast<size_t>(n) <= rows_) *failed_row = n - 1;
    }
  } else {
    *warnings = mysql_stmt_warning_count(stmt_);
    *affected = mysql_stmt_affected_rows(stmt_);
  }
  Clear();
  return s;
}

}  // namespace dbs::mysql

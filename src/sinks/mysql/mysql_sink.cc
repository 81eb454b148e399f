#include "sinks/mysql/mysql_sink.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/logging.h"
#include "mysql/mysql_client.h"
#include "sinks/change_plan.h"
#include "sinks/mysql/mysql_bulk_insert.h"
#include "sinks/mysql/mysql_load_encoder.h"
#include "sinks/mysql/mysql_objects.h"
#include "typemap/ddl.h"
#include "typemap/sql.h"

namespace dbs {

using mysql::ColumnWriter;
using mysql::MysqlConnection;
using mysql::QuoteName;
using mysql::QuoteQualified;
using mysql::TextKind;
using mysql::TextRow;

struct MysqlSink::TablePlan {
  std::string db;
  std::string name;
  std::string qualified;  // `db`.`name`
  std::string key;        // db.name: state rows and locks
  bool created = false;   // created by this stream
  std::string shadow;     // the shadow database the run writes to; empty: the table itself
  bool upsert = false;
  size_t source_columns = 0;
  std::vector<size_t> source_index;  // per written column: its bundle column
  // The source's primary key (name, bundle column), to name a row a value error stops at.
  std::vector<std::pair<std::string, size_t>> key_columns;
  std::vector<ColumnWriter> writers;
  std::string load_sql;     // LOAD DATA into the table (upsert: into tmp_qualified)
  std::string insert_head;  // INSERT INTO ... (cols) VALUES
  std::string insert_tail;  // upsert: ON DUPLICATE KEY UPDATE ...
  std::string tmp_qualified;
  std::string merge_sql;  // upsert: INSERT ... SELECT ... FROM tmp ON DUPLICATE KEY UPDATE
  bool tmp_ready = false;
  // The prepared bulk INSERT (MariaDB), made on first use on the current connection.
  std::unique_ptr<mysql::BulkInsert> bulk;
};

namespace {

constexpr const char* kLog = "mysql";

// "key (id)=(7), bundle <id>" for row `row` of `b`; the bundle and row when there is no key.
std::string RowName(const MysqlSink::TablePlan& plan, const Bundle& b, size_t row,
                    const std::string& bundle_id) {
  if (plan.key_columns.empty()) {
    return "bundle " + bundle_id + ", row " + std::to_string(row + 1);
  }
  std::string names, values;
  for (const auto& [name, index] : plan.key_columns) {
    names += (names.empty() ? "" : ", ") + name;
    values += (values.empty() ? "" : ", ") + b.columns[index].Get(row).ToString();
  }
  return "key (" + names + ")=(" + values + "), bundle " + bundle_id;
}

// The column a server message names ("... for column 'c' at row N"); empty when none.
std::string ColumnOf(const std::string& text) {
  const size_t c = text.find("column '");
  if (c == std::string::npos) return "";
  const size_t end = text.find('\'', c + 8);
  return end == std::string::npos ? "" : text.substr(c + 8, end - c - 8);
}

// "source table s.t, column c, key (id)=(7), bundle <id>" for row `row` of `ref`.
std::string RowDetail(const MysqlSink::TablePlan& plan, const BundleRef& ref, size_t row,
                      const std::string& column) {
  std::string d = "source table " + ref.table->QualifiedName();
  if (!column.empty()) d += ", column " + column;
  return d + ", " + RowName(plan, *ref.bundle, row, ref.id);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

const std::string& Str(const TextRow& row, size_t i) {
  static const std::string kEmpty;
  return row[i] ? *row[i] : kEmpty;
}

Dialect DialectOf(Engine e) { return e == Engine::kMysql ? Dialect::kMysql : Dialect::kPostgres; }

// 16 hex digits of FNV-1a over `text`: stable across processes and builds.
std::string Hash16(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string LockName(const std::string& stream, const std::string& table) {
  std::string name = "dbstreams:" + stream + ":" + table;
  if (name.size() <= 64) return name;
  return "dbstreams:" + Hash16(name);
}

std::string Replace(std::string text, std::string_view what, const std::string& with) {
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + with.size())) {
    text.replace(p, what.size(), with);
  }
  return text;
}

// "Records: 3  Deleted: 0  Skipped: 0  Warnings: 0" -> the value after `key`.
uint64_t InfoValue(const char* info, const char* key) {
  if (info == nullptr) return 0;
  const char* p = std::strstr(info, key);
  if (p == nullptr) return 0;
  p += std::strlen(key);
  while (*p == ' ') ++p;
  uint64_t v = 0;
  while (*p >= '0' && *p <= '9') v = v * 10 + static_cast<uint64_t>(*p++ - '0');
  return v;
}

// Streams one table's rows to the server in LOAD DATA's text format, encoding lazily: at most
// one buffer's worth (plus one row) is held, whatever the batch size.
class LoadStream {
 public:
  LoadStream(const MysqlSink::TablePlan* plan, const std::vector<const BundleRef*>* bundles)
      : plan_(plan), bundles_(bundles) {}

  // Copies up to `len` bytes of the file into buf; 0 at the end, -1 on an encoding error.
  int Read(char* buf, unsigned int len) {
    if (pos_ > 0) {  // drop what was sent: the buffer holds at most len bytes plus one row
      buf_.erase(0, pos_);
      pos_ = 0;
    }
    while (buf_.size() < len && !done_) {
      if (!EncodeRow()) return -1;
    }
    const size_t n = std::min<size_t>(len, buf_.size() - pos_);
    std::memcpy(buf, buf_.data() + pos_, n);
    pos_ += n;
    return static_cast<int>(n);
  }

  const Status& error() const { return error_; }
  uint64_t rows() const { return rows_; }

 private:
  // Appends the next row; sets done_ after the last. False on an encoding error.
  bool EncodeRow() {
    while (bundle_ < bundles_->size() && row_ >= (*bundles_)[bundle_]->bundle->rows()) {
      ++bundle_;
      row_ = 0;
    }
    if (bundle_ >= bundles_->size()) {
      done_ = true;
      return true;
    }
    const Bundle& b = *(*bundles_)[bundle_]->bundle;
    for (size_t j = 0; j < plan_->writers.size(); ++j) {
      if (j > 0) buf_ += '\t';
      const ColumnVector& col = b.columns[plan_->source_index[j]];
      if (col.IsNull(row_)) {
        buf_ += "\\N";
        continue;
      }
      const ColumnWriter& w = plan_->writers[j];
      Status s;
      switch (w.kind) {
        case TextKind::kRaw:
          mysql::AppendLoadEscaped(col.GetBytes(row_), &buf_);
          break;
        case TextKind::kSigned:
        case TextKind::kUnsigned:
        case TextKind::kBool:
        case TextKind::kYear:
        case TextKind::kFloat:
        case TextKind::kHex:
        case TextKind::kBitDigits:
        case TextKind::kDate:
        case TextKind::kDateTime:
        case TextKind::kTime:
        case TextKind::kUuidText:
          s = mysql::CellText(w, col, row_, &buf_);  // never needs escaping
          break;
        default:
          cell_.clear();
          s = mysql::CellText(w, col, row_, &cell_);
          mysql::AppendLoadEscaped(cell_, &buf_);
          break;
      }
      if (!s.ok()) {
        error_ = s.WithContext(RowName(*plan_, b, row_, (*bundles_)[bundle_]->id));
        return false;
      }
    }
    buf_ += '\n';
    ++row_;
    ++rows_;
    return true;
  }

  const MysqlSink::TablePlan* plan_;
  const std::vector<const BundleRef*>* bundles_;
  size_t bundle_ = 0;
  size_t row_ = 0;
  uint64_t rows_ = 0;
  bool done_ = false;
  std::string buf_;
  size_t pos_ = 0;
  std::string cell_;
  Status error_;
};

// libmariadb's local-infile callbacks. userdata is the active LoadStream, or null when no load
// of ours is running: then any LOCAL INFILE request of the server is refused.
int InfileInit(void** ptr, const char* /*filename*/, void* userdata) {
  *ptr = userdata;
  return userdata == nullptr ? 1 : 0;
}
int InfileRead(void* ptr, char* buf, unsigned int len) {
  return static_cast<LoadStream*>(ptr)->Read(buf, len);
}
void InfileEnd(void* /*ptr*/) {}
int InfileError(void* ptr, char* msg, unsigned int len) {
  const std::string text =
      ptr == nullptr ? std::string("dbstreams refuses a LOCAL INFILE request it did not make")
                     : static_cast<LoadStream*>(ptr)->error().message();
  std::snprintf(msg, len, "%s", text.c_str());
  return 2000;
}

void InstallInfileHandler(MYSQL* m, LoadStream* stream) {
  mysql_set_local_infile_handler(m, InfileInit, InfileRead, InfileEnd, InfileError, stream);
}

}  // namespace

MysqlSink::MysqlSink(ConnectionConfig config, SinkOptions options)
    : config_(std::move(config)), options_(std::move(options)) {}

MysqlSink::~MysqlSink() = default;

Result<std::unique_ptr<MysqlSink>> MysqlSink::Open(const ConnectionConfig& config,
                                                   const SinkOptions& options) {
  if (options.stream.empty() || options.stream.size() > 64) {
    return Status::InvalidArgument("the MySQL sink needs a stream name of 1 to 64 characters");
  }
  std::unique_ptr<MysqlSink> sink(new MysqlSink(config, options));
  DBS_RETURN_IF_ERROR(sink->Connect(/*bookkeeping=*/!options.plan_only));
  return sink;
}

Result<std::unique_ptr<Sink>> OpenMysqlSink(const ConnectionConfig& config,
                                            const SinkOptions& options) {
  if (config.engine != Engine::kMysql) {
    return Status::InvalidArgument("not a MySQL connection: " + config.Redacted());
  }
  DBS_ASSIGN_OR_RETURN(auto sink, MysqlSink::Open(config, options));
  return std::unique_ptr<Sink>(std::move(sink));
}

Status MysqlSink::Connect(bool bookkeeping) {
  mysql::ConnectOptions o;
  o.role = mysql::SessionRole::kWrite;
  o.local_infile = true;
  // Prepared statements belong to the connection they were made on.
  for (auto& [key, plan] : plans_) plan->bulk.reset();
  DBS_ASSIGN_OR_RETURN(conn_, MysqlConnection::Open(config_, o));
  InstallInfileHandler(conn_->handle(), nullptr);
  for (auto& [key, plan] : plans_) plan->tmp_ready = false;  // temporary tables died with it

  const std::string ctx = "preparing the target " + conn_->endpoint();
  std::string method = "auto";
  if (auto it = config_.params.find("writeMethod"); it != config_.params.end()) method = it->second;
  if (method != "auto" && method != "bulk_insert" && method != "load_data" && method != "insert") {
    return Status::InvalidArgument("target URL parameter writeMethod='" + method +
                                   "': use auto, bulk_insert, load_data or insert");
  }
  if (method == "bulk_insert" && !mysql::BulkInsert::Supported(*conn_)) {
    return Status::FailedPrecondition(
        "target URL parameter writeMethod=bulk_insert: " + conn_->endpoint() +
        " does not take bulk INSERTs (MariaDB 10.2.7 or later does); use auto or load_data");
  }
  bulk_insert_ =
      (method == "auto" || method == "bulk_insert") && mysql::BulkInsert::Supported(*conn_);
  DBS_ASSIGN_OR_RETURN(auto vars,
                       conn_->Query("SELECT @@GLOBAL.local_infile, @@max_allowed_packet", ctx));
  const bool was = load_data_;
  load_data_ = !vars.empty() && Str(vars[0], 0) == "1" && method != "insert";
  if (!load_data_ && was && !bulk_insert_ && method != "insert") {
    Log(LogLevel::kWarn, kLog,
        "the target has local_infile off: writing with multi-row INSERT statements instead of "
        "LOAD DATA LOCAL INFILE (slower; SET GLOBAL local_infile = 1 to speed it up)",
        {F("endpoint", conn_->endpoint())});
  }
  uint64_t max_packet = 0;
  if (!vars.empty() && vars[0][1]) max_packet = std::strtoull(vars[0][1]->c_str(), nullptr, 10);
  if (max_packet >= (64u << 10))
    max_statement_bytes_ = std::min<uint64_t>(8u << 20, max_packet / 2);

  if (!bookkeeping) return Status::Ok();
  DBS_ASSIGN_OR_RETURN(auto have, conn_->Query("SELECT 1 FROM information_schema.SCHEMATA WHERE "
                                               "SCHEMA_NAME = '_dbstreams'",
                                               ctx));
  if (have.empty()) {
    DBS_RETURN_IF_ERROR(conn_->Exec(
        "CREATE DATABASE IF NOT EXISTS `_dbstreams` DEFAULT CHARACTER SET utf8mb4", ctx));
  }
  DBS_RETURN_IF_ERROR(
      conn_->Exec("CREATE TABLE IF NOT EXISTS `_dbstreams`.`applied` ("
                  "`stream` VARBINARY(64) NOT NULL, `bundle_id` VARBINARY(512) NOT NULL, "
                  "`applied_at` TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), "
                  "PRIMARY KEY (`stream`, `bundle_id`)) ENGINE=InnoDB",
                  ctx));
  DBS_RETURN_IF_ERROR(
      conn_->Exec("CREATE TABLE IF NOT EXISTS `_dbstreams`.`state` ("
                  "`stream` VARBINARY(64) NOT NULL, `tbl` VARBINARY(512) NOT NULL, "
                  "`phase` VARBINARY(32) NOT NULL, "
                  "`info` VARCHAR(255) CHARACTER SET utf8mb4 NOT NULL DEFAULT '', "
                  "`updated_at` TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), "
                  "PRIMARY KEY (`stream`, `tbl`, `phase`)) ENGINE=InnoDB",
                  ctx));
  DBS_RETURN_IF_ERROR(
      conn_->Exec("CREATE TABLE IF NOT EXISTS `_dbstreams`.`cdc_checkpoint` ("
                  "`stream` VARBINARY(255) NOT NULL, `partition` INT NOT NULL, "
                  "`seq` BIGINT UNSIGNED NOT NULL DEFAULT 0, "
                  "`position_kind` VARBINARY(32) NOT NULL DEFAULT '', "
                  "`position` MEDIUMBLOB NULL, `file_pos` VARBINARY(512) NOT NULL DEFAULT '', "
                  "`updated_at` TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), "
                  "PRIMARY KEY (`stream`, `partition`)) ENGINE=InnoDB",
                  ctx));
  DBS_RETURN_IF_ERROR(
      conn_->Exec("CREATE TABLE IF NOT EXISTS `_dbstreams`.`report` ("
                  "`stream` VARBINARY(64) NOT NULL, "
                  "`objects` LONGTEXT CHARACTER SET utf8mb4 NOT NULL, "
                  "`updated_at` TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), "
                  "PRIMARY KEY (`stream`)) ENGINE=InnoDB",
                  ctx));
  return Status::Ok();
}

Status MysqlSink::EnsureConnected() {
  if (conn_ != nullptr && !conn_->broken()) return Status::Ok();
  conn_.reset();
  return Connect();
}

std::string MysqlSink::TargetDatabase(const std::string& source_schema) const {
  if (!options_.target_schema.empty()) return options_.target_schema;
  if (!config_.database.empty()) return config_.database;
  return source_schema;
}

template <typename F>
Status MysqlSink::WithTableLock(const std::string& table, F&& body) {
  const std::string name = conn_->Literal(LockName(options_.stream, table));
  const std::string ctx = "locking " + table + " for stream " + options_.stream;
  DBS_ASSIGN_OR_RETURN(auto r, conn_->Query("SELECT GET_LOCK(" + name + ", 60)", ctx));
  if (r.empty() || Str(r[0], 0) != "1") {
    return Status(StatusCode::kTimeout, Retry::kRetry,
                  ctx + ": another writer has held the lock for 60 seconds");
  }
  Status s = body();
  if (!conn_->broken()) {
    auto released = conn_->Query("SELECT RELEASE_LOCK(" + name + ")", ctx);
    if (s.ok() && !released.ok()) s = released.status();
  }
  return s;
}

Result<std::string> MysqlSink::RunEnd() {
  std::string run;
  DBS_RETURN_IF_ERROR(WithTableLock("", [&]() -> Status {
    DBS_ASSIGN_OR_RETURN(bool ended, HasPhase("", "run", &run));
    if (!ended) run.clear();
    return Status::Ok();
  }));
  return run;
}

Result<bool> MysqlSink::HasPhase(const std::string& table, const std::string& phase,
                                 std::string* info) {
  DBS_ASSIGN_OR_RETURN(auto r, conn_->Query("SELECT `info` FROM `_dbstreams`.`state` WHERE "
                                            "`stream` = " +
                                                conn_->Literal(options_.stream) +
                                                " AND `tbl` = " + conn_->Literal(table) +
                                                " AND `phase` = " + conn_->Literal(phase),
                                            "reading the state of " + table));
  if (r.empty()) return false;
  if (info != nullptr) *info = Str(r[0], 0);
  return true;
}

Status MysqlSink::RecordPhase(const std::string& table, const std::string& phase,
                              const std::string& info) {
  return conn_->Exec(
      "INSERT INTO `_dbstreams`.`state` (`stream`, `tbl`, `phase`, `info`) VALUES (" +
          conn_->Literal(options_.stream) + ", " + conn_->Literal(table) + ", " +
          conn_->Literal(phase) + ", " + conn_->Literal(info) +
          ") ON DUPLICATE KEY UPDATE `info` = VALUES(`info`)",
      "recording the state of " + table);
}

namespace {

// Applies the schema policy and write mode to a table that has no 'prepared' state yet and
// returns the 'prepared' state's info: "created" (created in place), "existing" (written in
// place), or with shadows (`shadow` not empty) "new:<shadow>" (created in the shadow database,
// renamed into place at the swap, replacing the old table) or "copy:<shadow>" (an existing
// table under truncate_and_load: loaded into a copy, refilled from it at the swap).
Result<std::string> ApplyPolicy(MysqlConnection* conn, const SinkOptions& o, const TableSchema& src,
                                const std::string& db, const std::string& shadow,
                                std::vector<std::string>* warnings) {
  const std::string qualified = QuoteQualified(db, src.name);
  const std::string what = db + "." + src.name;
  const std::string ctx = "preparing " + what;
  DBS_ASSIGN_OR_RETURN(
      auto tt, conn->Query("SELECT TABLE_TYPE FROM information_schema.TABLES "
                           "WHERE TABLE_SCHEMA = " +
                               conn->Literal(db) + " AND TABLE_NAME = " + conn->Literal(src.name),
                           ctx));
  bool exists = !tt.empty();
  if (exists && Str(tt[0], 0) != "BASE TABLE") {
    return Status::FailedPrecondition(ctx + ": it exists as a " + Lower(Str(tt[0], 0)) +
                                      ", not a table");
  }
  bool replace = false;  // create a new table even though one exists (drop_and_recreate)
  switch (o.schema_policy) {
    case SchemaPolicy::kFailIfExists:
      if (exists) {
        return Status::AlreadyExists("table " + what +
                                     " already exists on the target and the schema policy is "
                                     "fail_if_exists");
      }
      break;
    case SchemaPolicy::kValidateExisting:
      if (!exists) {
        return Status::NotFound("table " + what +
                                " does not exist on the target and the schema policy is "
                                "validate_existing");
      }
      break;
    case SchemaPolicy::kDropAndRecreate:
      if (exists && shadow.empty()) {
        DBS_RETURN_IF_ERROR(conn->Exec("DROP TABLE " + qualified, ctx));
        exists = false;
      }
      replace = exists;
      break;
    case SchemaPolicy::kCreateMissing:
      break;
  }
  auto ensure_db = [&](const std::string& name) -> Status {
    DBS_ASSIGN_OR_RETURN(auto dbs, conn->Query("SELECT 1 FROM information_schema.SCHEMATA WHERE "
                                               "SCHEMA_NAME = " +
                                                   conn->Literal(name),
                                               ctx));
    if (!dbs.empty()) return Status::Ok();
    return conn->Exec(
        "CREATE DATABASE IF NOT EXISTS " + QuoteName(name) + " DEFAULT CHARACTER SET utf8mb4", ctx);
  };
  if (!exists || replace) {
    const std::string in_db = shadow.empty() ? db : shadow;
    DBS_RETURN_IF_ERROR(ensure_db(in_db));
    TableSchema t = src;  // the primary key only: the rest comes after the data
    t.indexes.clear();
    t.foreign_keys.clear();
    t.checks.clear();
    DdlOptions ddl;
    ddl.target_schema = in_db;
    ApplyTypeMapping(o.type_mapping, false, conn->is_mariadb() && conn->server_version() >= 101000,
                     &ddl);
    ddl.warnings = warnings;
    auto sql = CreateTableSql(t, Dialect::kMysql, DialectOf(o.source_engine), ddl);
    if (!sql.ok()) return sql.status().WithContext(ctx);
    if (!shadow.empty()) {
      DBS_RETURN_IF_ERROR(
          conn->Exec("DROP TABLE IF EXISTS " + QuoteQualified(shadow, src.name), ctx));
    }
    DBS_RETURN_IF_ERROR(conn->Exec(*sql, "creating " + what));
    return shadow.empty() ? std::string("created") : "new:" + shadow;
  }
  switch (o.write_mode) {
    case WriteMode::kTruncateAndLoad:
      if (shadow.empty()) {
        DBS_RETURN_IF_ERROR(conn->Exec("TRUNCATE TABLE " + qualified, ctx));
        break;
      }
      // The table keeps its definition, triggers, grants and the foreign keys pointing at it;
      // its rows are replaced at the swap from a copy with the same columns and indexes.
      DBS_RETURN_IF_ERROR(ensure_db(shadow));
      DBS_RETURN_IF_ERROR(
          conn->Exec("DROP TABLE IF EXISTS " + QuoteQualified(shadow, src.name), ctx));
      DBS_RETURN_IF_ERROR(conn->Exec(
          "CREATE TABLE " + QuoteQualified(shadow, src.name) + " LIKE " + qualified, ctx));
      return "copy:" + shadow;
    case WriteMode::kFailIfNotEmpty: {
      DBS_ASSIGN_OR_RETURN(auto any, conn->Query("SELECT 1 FROM " + qualified + " LIMIT 1", ctx));
      if (!any.empty()) {
        return Status::FailedPrecondition("table " + what +
                                          " is not empty and the write mode is "
                                          "fail_if_not_empty");
      }
      break;
    }
    case WriteMode::kAppend:
    case WriteMode::kUpsert:
      break;
  }
  return std::string("existing");
}

}  // namespace

Result<TargetTable> MysqlSink::PrepareTable(const TableSchema& src) {
  DBS_RETURN_IF_ERROR(EnsureConnected());
  const std::string db = TargetDatabase(src.schema);
  if (db.empty()) {
    return Status::InvalidArgument("no target database for table " + src.name +
                                   ": set targetSchema or a database in the target URL");
  }
  TargetTable target;
  target.schema = db;
  target.name = src.name;
  const std::string key = db + "." + src.name;
  if (options_.shadow_tables) DBS_RETURN_IF_ERROR(DropStaleRuns());
  std::string info;
  bool swapped = false;
  DBS_RETURN_IF_ERROR(WithTableLock(key, [&]() -> Status {
    std::string run;
    DBS_ASSIGN_OR_RETURN(bool run_ended, HasPhase("", "run", &run));
    if (run_ended && run == "failed") {
      return Status::Aborted("the run failed; its tables are not prepared again")
          .WithRetry(Retry::kFail);
    }
    swapped = run_ended && run == "swapped";
    DBS_ASSIGN_OR_RETURN(bool prepared, HasPhase(key, "prepared", &info));
    if (prepared) {
      const std::string shadow = ShadowOf(info);
      const std::string in_db = shadow.empty() || swapped ? db : shadow;
      DBS_ASSIGN_OR_RETURN(
          auto exists,
          conn_->Query("SELECT 1 FROM information_schema.TABLES "
                       "WHERE TABLE_SCHEMA = " +
                           conn_->Literal(in_db) + " AND TABLE_NAME = " + conn_->Literal(src.name),
                       "preparing " + key));
      if (!exists.empty()) return Status::Ok();
      if (!shadow.empty() && !swapped) {
        // Not failed (checked above): another writer's swap of this run may be under way (it
        // holds the run's lock; it drops the shadow databases before it records "swapped").
        // Wait for it to end, then look again. SwapIn never takes a table's lock, so taking
        // the run's lock inside this one cannot deadlock.
        DBS_ASSIGN_OR_RETURN(const std::string after, RunEnd());
        if (after == "swapped") {
          swapped = true;  // written in place from now on (nothing is left to load)
          return Status::Ok();
        }
        DBS_ASSIGN_OR_RETURN(bool moved, TableExists(db, src.name));
        if (after.empty() && moved && info.rfind("new:", 0) == 0) {
          swapped = true;
          return Status::Ok();
        }
        return Status::Aborted("the shadow copy " + in_db + "." + src.name + " of " + key +
                               " is gone: the run was abandoned")
            .WithRetry(Retry::kFail);
      }
      // Dropped since an earlier run of the stream recorded it: prepare it again.
      Log(LogLevel::kWarn, kLog, "table recorded as prepared no longer exists: preparing it again",
          {F("table", key), F("stream", options_.stream)});
      DBS_RETURN_IF_ERROR(conn_->Exec(
          "DELETE FROM `_dbstreams`.`state` WHERE `stream` = " + conn_->Literal(options_.stream) +
              " AND `tbl` = " + conn_->Literal(key),
          "preparing " + key));
    }
    const std::string shadow = options_.shadow_tables && !swapped ? ShadowDatabase(db) : "";
    DBS_ASSIGN_OR_RETURN(info,
                         ApplyPolicy(conn_.get(), options_, src, db, shadow, &target.warnings));
    return RecordPhase(key, "prepared", info);
  }));

  // How the rows are written, from the target's actual columns.
  auto plan = std::make_unique<TablePlan>();
  plan->shadow = swapped ? "" : ShadowOf(info);
  std::string in_db = plan->shadow.empty() ? db : plan->shadow;
  plan->db = db;
  plan->name = src.name;
  plan->qualified = QuoteQualified(in_db, src.name);
  plan->key = key;
  plan->created = info == "created" || info.rfind("new:", 0) == 0;
  plan->upsert = options_.write_mode == WriteMode::kUpsert;
  plan->source_columns = src.columns.size();
  const std::string ctx = "preparing " + key;
  auto read_columns = [&](const std::string& in) {
    return conn_->Query(
        "SELECT COLUMN_NAME, DATA_TYPE, EXTRA, COLUMN_KEY FROM "
        "information_schema.COLUMNS WHERE TABLE_SCHEMA = " +
            conn_->Literal(in) + " AND TABLE_NAME = " + conn_->Literal(src.name) +
            " ORDER BY ORDINAL_POSITION",
        ctx);
  };
  DBS_ASSIGN_OR_RETURN(auto cols, read_columns(in_db));
  if (cols.empty() && !plan->shadow.empty()) {
    // Another writer's swap (which takes the run's lock, not this table's) may have moved the
    // shadow copy into place since it was seen above: then the table is written in place.
    DBS_ASSIGN_OR_RETURN(const std::string after, RunEnd());
    if (after == "swapped") {
      plan->shadow.clear();
      in_db = db;
      plan->qualified = QuoteQualified(db, src.name);
      DBS_ASSIGN_OR_RETURN(cols, read_columns(db));
    }
  }
  struct TargetColumn {
    std::string name, data_type;
    bool generated = false, key = false;
  };
  std::map<std::string, TargetColumn> by_name;
  for (const TextRow& r : cols) {
    TargetColumn c{Str(r, 0), Lower(Str(r, 1)),
                   Lower(Str(r, 2)).find("generated") != std::string::npos ||
                       Lower(Str(r, 2)).find("persistent") != std::string::npos,
                   Str(r, 3) == "PRI"};
    by_name[Lower(c.name)] = std::move(c);
  }
  std::vector<std::string> missing, pk, names;
  for (size_t i = 0; i < src.columns.size(); ++i) {
    auto it = by_name.find(Lower(src.columns[i].name));
    if (it == by_name.end()) {
      missing.push_back(src.columns[i].name);
      continue;
    }
    const TargetColumn& tc = it->second;
    if (tc.generated) continue;  // computed by the target
    auto w = mysql::WriterFor(src.columns[i], tc.name, tc.data_type);
    if (!w.ok()) return w.status().WithContext(ctx);
    plan->source_index.push_back(i);
    plan->writers.push_back(std::move(w).value());
    names.push_back(QuoteName(tc.name));
    if (tc.key) pk.push_back(tc.name);
  }
  for (const std::string& k : src.primary_key) {
    const int i = src.FindColumn(k);
    if (i < 0) {
      plan->key_columns.clear();
      break;
    }
    plan->key_columns.emplace_back(k, static_cast<size_t>(i));
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    return Status::FailedPrecondition("target table " + key + " has no column(s) " + list +
                                      " that the source has");
  }
  if (plan->writers.empty()) {
    return Status::FailedPrecondition("target table " + key + " has no column to write");
  }
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;

  if (plan->upsert) {
    if (pk.empty()) {
      return Status::FailedPrecondition("write mode upsert needs a primary key, and target table " +
                                        key + " has none among the written columns");
    }
    std::string updates;
    for (size_t j = 0; j < plan->writers.size(); ++j) {
      const std::string& n = plan->writers[j].name;
      if (std::find(pk.begin(), pk.end(), n) != pk.end()) continue;
      updates += (updates.empty() ? "" : ", ") + QuoteName(n) + " = VALUES(" + QuoteName(n) + ")";
    }
    if (updates.empty()) updates = QuoteName(pk[0]) + " = VALUES(" + QuoteName(pk[0]) + ")";
    plan->insert_tail = " ON DUPLICATE KEY UPDATE " + updates;
    plan->tmp_qualified = QuoteQualified(in_db, "_dbs_upsert_" + std::to_string(plans_.size()));
    plan->merge_sql = "INSERT INTO " + plan->qualified + " (" + list + ") SELECT * FROM (SELECT " +
                      list + " FROM " + plan->tmp_qualified + ") AS `_dbs_new`" + plan->insert_tail;
  }
  plan->insert_head = "INSERT INTO " + plan->qualified + " (" + list + ") VALUES ";

  // LOAD DATA: plain columns load directly; the others through a user variable and SET.
  std::string targets, sets;
  for (size_t j = 0; j < plan->writers.size(); ++j) {
    const ColumnWriter& w = plan->writers[j];
    if (j > 0) targets += ", ";
    if (w.expression.empty()) {
      targets += QuoteName(w.name);
      continue;
    }
    const std::string var = "@v" + std::to_string(j);
    targets += var;
    sets += (sets.empty() ? " SET " : ", ") + QuoteName(w.name) + " = " +
            Replace(w.expression, "?", var);
  }
  plan->load_sql = std::string("LOAD DATA LOCAL INFILE 'dbstreams.tsv' ") +
                   (plan->upsert ? "REPLACE " : "") + "INTO TABLE " +
                   (plan->upsert ? plan->tmp_qualified : plan->qualified) +
                   " CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' ENCLOSED BY '' ESCAPED BY "
                   "'\\\\' LINES TERMINATED BY '\\n' STARTING BY '' (" +
                   targets + ")" + sets;
  plans_[src.schema + "\n" + src.name] = std::move(plan);
  return target;
}

Result<MysqlSink::TablePlan*> MysqlSink::PlanFor(const TableSchema& src) {
  auto it = plans_.find(src.schema + "\n" + src.name);
  if (it != plans_.end()) return it->second.get();
  DBS_RETURN_IF_ERROR(PrepareTable(src).status());
  return plans_[src.schema + "\n" + src.name].get();
}

Status MysqlSink::WriteWithLoadData(TablePlan* plan, const std::vector<const BundleRef*>& bundles) {
  const std::string ctx = "writing " + plan->key;
  LoadStream stream(plan, &bundles);
  MYSQL* m = conn_->handle();
  InstallInfileHandler(m, &stream);
  Status s = conn_->Exec(plan->load_sql, ctx);
  InstallInfileHandler(m, nullptr);
  if (!stream.error().ok()) return stream.error().WithContext(ctx);
  DBS_RETURN_IF_ERROR(s);

  const char* info = mysql_info(m);
  const uint64_t records = InfoValue(info, "Records:");
  const uint64_t skipped = InfoValue(info, "Skipped:");
  const unsigned warnings = mysql_warning_count(m);
  if (records == stream.rows() && skipped == 0 && warnings == 0) return Status::Ok();
  // LOAD DATA LOCAL reports rejected values as warnings: fail with the server's words, each
  // "for column 'c' at row N" (N counts the lines of this LOAD) turned into the source table,
  // column and primary key of that row.
  std::string detail =
      WarningsDetail(*plan, [&](uint64_t line) -> std::pair<const BundleRef*, size_t> {
        size_t row = line - 1;
        for (const BundleRef* ref : bundles) {
          if (row < ref->bundle->rows()) return {ref, row};
          row -= ref->bundle->rows();
        }
        return {nullptr, 0};
      });
  if (detail.empty()) detail = info == nullptr ? "no detail" : info;
  return Status::InvalidArgument(ctx + ": the target rejected the data (" +
                                 std::to_string(stream.rows()) + " rows sent, " +
                                 std::to_string(records) + " read, " + std::to_string(skipped) +
                                 " skipped, " + std::to_string(warnings) + " warnings): " + detail);
}

template <typename Locate>
std::string MysqlSink::WarningsDetail(const TablePlan& plan, Locate&& locate) {
  std::string detail;
  auto w = conn_->Query("SHOW WARNINGS LIMIT 5", "writing " + plan.key);
  if (!w.ok()) return detail;
  for (const TextRow& r : *w) {
    detail += (detail.empty() ? "" : "; ") + Str(r, 0) + " " + Str(r, 1) + ": " + Str(r, 2);
    const std::string& text = Str(r, 2);
    const size_t at = text.rfind(" at row ");
    if (at == std::string::npos) continue;
    const uint64_t line = std::strtoull(text.c_str() + at + 8, nullptr, 10);
    if (line == 0) continue;
    const auto [ref, row] = locate(line);
    if (ref == nullptr) continue;
    detail += " (" + RowDetail(plan, *ref, row, ColumnOf(text)) + ")";
  }
  return detail;
}

Status MysqlSink::WriteWithBulkInsert(TablePlan* plan,
                                      const std::vector<const BundleRef*>& bundles) {
  const std::string ctx = "writing " + plan->key;
  if (plan->bulk == nullptr) {
    auto prepared =
        mysql::BulkInsert::Prepare(conn_.get(), plan->writers, plan->insert_head,
                                   plan->upsert ? plan->insert_tail : "", max_statement_bytes_);
    if (!prepared.ok()) {
      if (prepared.status().code() != StatusCode::kUnsupported) return prepared.status();
      // The same rows by LOAD DATA (or INSERT statements) from now on, for every table.
      Log(LogLevel::kWarn, kLog,
          prepared.status().message() +
              ": writing with LOAD DATA LOCAL INFILE instead of bulk INSERTs (more server CPU)",
          {F("endpoint", conn_->endpoint()), F("table", plan->key)});
      bulk_insert_ = false;
      // An upsert by LOAD DATA needs its temporary table made before the transaction, which
      // is open: this batch goes by INSERT statements.
      if (plan->upsert || !load_data_) return WriteWithInsert(plan, bundles);
      return WriteWithLoadData(plan, bundles);
    }
    plan->bulk = std::move(prepared).value();
  }
  mysql::BulkInsert& bulk = *plan->bulk;  // holds no rows: AddRow and Execute drop them on error
  std::vector<std::pair<const BundleRef*, size_t>> rows;  // the rows of the next execution
  auto execute = [&]() -> Status {
    long failed = -1;
    unsigned warnings = 0;
    uint64_t affected = 0;
    Status s = bulk.Execute(ctx, &failed, &warnings, &affected);
    if (!s.ok()) {
      if (failed >= 0) {
        // The server named the row: keep its code and retry class, add the source row.
        const auto& [ref, row] = rows[static_cast<size_t>(failed)];
        s = Status(s.code(), s.retryable() ? Retry::kRetry : Retry::kFail,
                   s.message() + " (" + RowDetail(*plan, *ref, row, ColumnOf(s.message())) + ")");
      }
      return s;
    }
    const size_t sent = rows.size();
    if (warnings != 0 || (!plan->upsert && affected != sent)) {
      std::string detail = WarningsDetail(*plan, [&](uint64_t line) {
        return line <= rows.size() ? rows[line - 1] : std::pair<const BundleRef*, size_t>{};
      });
      return Status::InvalidArgument(
          ctx + ": the target rejected the data (" + std::to_string(sent) + " rows sent, " +
          std::to_string(affected) + " written, " + std::to_string(warnings) +
          " warnings): " + (detail.empty() ? "no detail" : detail));
    }
    rows.clear();
    return Status::Ok();
  };
  for (const BundleRef* ref : bundles) {
    const Bundle& b = *ref->bundle;
    for (size_t r = 0; r < b.rows(); ++r) {
      Status s = bulk.AddRow(b, plan->source_index, r);
      if (!s.ok()) return s.WithContext(ctx + ", " + RowName(*plan, b, r, ref->id));
      rows.emplace_back(ref, r);
      if (bulk.full()) DBS_RETURN_IF_ERROR(execute());
    }
  }
  return execute();
}

Status MysqlSink::WriteWithInsert(TablePlan* plan, const std::vector<const BundleRef*>& bundles) {
  const std::string ctx = "writing " + plan->key;
  std::string sql, cell;
  size_t rows_in_sql = 0;
  auto flush = [&]() -> Status {
    if (rows_in_sql == 0) return Status::Ok();
    if (plan->upsert) sql += plan->insert_tail;
    Status s = conn_->Exec(sql, ctx);
    sql.clear();
    rows_in_sql = 0;
    return s;
  };
  for (const BundleRef* ref : bundles) {
    const Bundle& b = *ref->bundle;
    for (size_t r = 0; r < b.rows(); ++r) {
      sql += rows_in_sql == 0 ? plan->insert_head : ",";
      sql += '(';
      for (size_t j = 0; j < plan->writers.size(); ++j) {
        if (j > 0) sql += ", ";
        const ColumnVector& col = b.columns[plan->source_index[j]];
        if (col.IsNull(r)) {
          sql += "NULL";
          continue;
        }
        const ColumnWriter& w = plan->writers[j];
        cell.clear();
        Status s = mysql::CellText(w, col, r, &cell);
        if (!s.ok()) {
          return s.WithContext(ctx + ", " + RowName(*plan, b, r, ref->id));
        }
        const std::string lit = conn_->Literal(cell);
        sql += w.expression.empty() ? lit : Replace(w.expression, "?", lit);
      }
      sql += ')';
      ++rows_in_sql;
      if (sql.size() >= max_statement_bytes_) DBS_RETURN_IF_ERROR(flush());
    }
  }
  return flush();
}

Status MysqlSink::WriteTable(TablePlan* plan, const std::vector<const BundleRef*>& bundles) {
  if (bulk_insert_) return WriteWithBulkInsert(plan, bundles);
  if (!load_data_) return WriteWithInsert(plan, bundles);
  DBS_RETURN_IF_ERROR(WriteWithLoadData(plan, bundles));
  if (plan->upsert) {
    DBS_RETURN_IF_ERROR(conn_->Exec(plan->merge_sql, "writing " + plan->key));
    DBS_RETURN_IF_ERROR(conn_->Exec("DELETE FROM " + plan->tmp_qualified, "writing " + plan->key));
  }
  return Status::Ok();
}

Result<size_t> MysqlSink::ApplyOnce(const std::vector<BundleRef>& bundles) {
  // Plans (and any DDL) before the transaction.
  std::vector<TablePlan*> plans(bundles.size());
  for (size_t i = 0; i < bundles.size(); ++i) {
    const BundleRef& b = bundles[i];
    if (b.table == nullptr || b.bundle == nullptr) {
      return Status::InvalidArgument("bundle " + b.id + " has no table or data");
    }
    if (b.bundle->is_pg_copy()) {
      return Status::InvalidArgument("bundle " + b.id +
                                     " holds PostgreSQL COPY tuples, which only a PostgreSQL "
                                     "target takes");
    }
    DBS_ASSIGN_OR_RETURN(plans[i], PlanFor(*b.table));
    if (b.bundle->columns.size() != plans[i]->source_columns) {
      return Status::InvalidArgument(
          "bundle " + b.id + " has " + std::to_string(b.bundle->columns.size()) +
          " columns, table " + plans[i]->key + " " + std::to_string(plans[i]->source_columns));
    }
    DBS_RETURN_IF_ERROR(b.bundle->Validate());
    for (RowOp op : b.bundle->ops) {
      if (op != RowOp::kInsert) {
        return Status::Unsupported("bundle " + b.id +
                                   " carries CDC updates or deletes; the MySQL sink applies "
                                   "snapshot rows (inserts) only");
      }
    }
    if (plans[i]->upsert && load_data_ && !bulk_insert_ && !plans[i]->tmp_ready) {
      // Outside the transaction: MySQL with GTIDs refuses CREATE TEMPORARY TABLE inside one.
      DBS_RETURN_IF_ERROR(conn_->Exec("CREATE TEMPORARY TABLE IF NOT EXISTS " +
                                          plans[i]->tmp_qualified + " LIKE " + plans[i]->qualified,
                                      "preparing the upsert of " + plans[i]->key));
      plans[i]->tmp_ready = true;
    }
  }

  DBS_RETURN_IF_ERROR(conn_->Exec("START TRANSACTION", "starting a write transaction"));
  bool unique_checks_off = false;
  auto body = [&]() -> Result<size_t> {
    // Which bundles are new: the id row is inserted (1 affected row) or already there (0).
    std::vector<TablePlan*> order;
    std::map<TablePlan*, std::vector<const BundleRef*>> groups;
    const std::string stream = conn_->Literal(options_.stream);
    size_t fresh = 0;
    for (size_t i = 0; i < bundles.size(); ++i) {
      DBS_RETURN_IF_ERROR(conn_->Exec(
          "INSERT INTO `_dbstreams`.`applied` (`stream`, `bundle_id`) VALUES (" + stream + ", " +
              conn_->Literal(bundles[i].id) + ") ON DUPLICATE KEY UPDATE `bundle_id` = `bundle_id`",
          "recording bundle " + bundles[i].id));
      if (conn_->affected_rows() != 1) continue;
      ++fresh;
      auto& g = groups[plans[i]];
      if (g.empty()) order.push_back(plans[i]);
      g.push_back(&bundles[i]);
    }
    for (TablePlan* p : order) {
      if (p->created && !p->upsert && !unique_checks_off) {
        DBS_RETURN_IF_ERROR(conn_->Exec("SET SESSION unique_checks = 0", "writing " + p->key));
        unique_checks_off = true;
      }
      DBS_RETURN_IF_ERROR(WriteTable(p, groups[p]));
    }
    DBS_RETURN_IF_ERROR(conn_->Exec("COMMIT", "committing the write transaction"));
    return fresh;
  };
  auto result = body();
  if (!result.ok() && !conn_->broken()) (void)conn_->Exec("ROLLBACK", "rolling back");
  if (unique_checks_off && !conn_->broken()) {
    Status s = conn_->Exec("SET SESSION unique_checks = 1", "restoring unique_checks");
    if (result.ok() && !s.ok()) return s;
  }
  return result;
}

Result<size_t> MysqlSink::Apply(const std::vector<BundleRef>& bundles) {
  if (bundles.empty()) return size_t{0};
  DBS_RETURN_IF_ERROR(EnsureConnected());
  return ApplyOnce(bundles);
}

namespace {

// "CREATE [UNIQUE |FULLTEXT |SPATIAL ]INDEX `n` ON `db`.`t` (...)" -> "ADD ... INDEX `n` (...)",
// so all of a table's indexes are built by one ALTER TABLE. Empty when the shape differs.
std::string IndexClause(const std::string& create, const std::string& qualified) {
  const std::string on = " ON " + qualified;
  const size_t p = create.find(on);
  if (create.rfind("CREATE ", 0) != 0 || p == std::string::npos) return "";
  return "ADD " + create.substr(7, p - 7) + create.substr(p + on.size());
}

}  // namespace

Status MysqlSink::FinishStream(const std::vector<TableSchema>& tables) {
  DBS_RETURN_IF_ERROR(EnsureConnected());
  {
    std::string run;
    DBS_ASSIGN_OR_RETURN(bool ended, HasPhase("", "run", &run));
    if (ended && run == "swapped") return Status::Ok();
    if (ended) {
      return Status::Aborted("the run failed; its shadow tables are not swapped in")
          .WithRetry(Retry::kFail);
    }
  }
  // Where a table of the run is until the swap: its shadow database for new tables.
  auto shadow_of = [&](const std::string& key) -> Result<std::string> {
    std::string info;
    DBS_ASSIGN_OR_RETURN(bool prepared, HasPhase(key, "prepared", &info));
    if (!prepared || info.rfind("new:", 0) != 0) return std::string();
    return ShadowOf(info);
  };
  struct Phase {
    const char* name;
    bool wanted;
  };
  // Indexes of every table first: foreign keys need the referenced keys' indexes.
  const Phase phases[] = {{"indexes", options_.structure.indexes},
                          {"foreign_keys", options_.structure.foreign_keys},
                          {"checks", options_.structure.checks}};
  for (const Phase& phase : phases) {
    if (!phase.wanted) continue;
    for (const TableSchema& t : tables) {
      const std::string db = TargetDatabase(t.schema);
      const std::string key = db + "." + t.name;
      const std::string ctx = "finishing " + key + " (" + phase.name + ")";
      DBS_RETURN_IF_ERROR(WithTableLock(key, [&]() -> Status {
        std::string info;
        DBS_ASSIGN_OR_RETURN(bool prepared, HasPhase(key, "prepared", &info));
        const bool is_new = info.rfind("new:", 0) == 0;
        if (!prepared || (info != "created" && !is_new)) return Status::Ok();  // not ours
        DBS_ASSIGN_OR_RETURN(bool done, HasPhase(key, phase.name));
        if (done) return Status::Ok();
        const std::string in_db = is_new ? ShadowOf(info) : db;
        const std::string qualified = QuoteQualified(in_db, t.name);
        std::vector<std::string> warnings;
        DdlOptions ddl;
        ddl.target_schema = in_db;
        ApplyTypeMapping(options_.type_mapping, false,
                         conn_->is_mariadb() && conn_->server_version() >= 101000, &ddl);
        ddl.warnings = &warnings;
        const Dialect source = DialectOf(options_.source_engine);
        std::vector<std::string> statements;
        if (std::string(phase.name) == "indexes") {
          std::vector<std::string> clauses;
          for (const Index& ix : t.indexes) {
            auto sql = CreateIndexSql(t, ix, Dialect::kMysql, source, ddl);
            if (!sql.ok()) return sql.status().WithContext(ctx);
            if (sql->empty()) continue;
            const std::string clause = IndexClause(*sql, qualified);
            // InnoDB builds one FULLTEXT index per statement.
            if (clause.empty() || Lower(ix.method) == "fulltext") {
              statements.push_back(*sql);
            } else {
              clauses.push_back(clause);
            }
          }
          if (!clauses.empty()) {
            std::string alter = "ALTER TABLE " + qualified + " ";
            for (size_t i = 0; i < clauses.size(); ++i) alter += (i ? ", " : "") + clauses[i];
            statements.insert(statements.begin(), alter);
          }
        } else if (std::string(phase.name) == "foreign_keys") {
          for (const ForeignKey& fk : t.foreign_keys) {
            auto sql = AddForeignKeySql(t, fk, Dialect::kMysql, source, ddl);
            if (!sql.ok()) return sql.status().WithContext(ctx);
            if (sql->empty()) continue;
            // The referenced table as the statement names it, and where it is until the swap:
            // a new table of the run is in its shadow database (the foreign key follows it when
            // it is renamed into place), any other in its target database.
            const bool same = fk.ref_schema.empty() || fk.ref_schema == t.schema;
            const std::string named = same ? in_db : fk.ref_schema;
            const std::string ref_db = same ? db : fk.ref_schema;
            DBS_ASSIGN_OR_RETURN(std::string ref_shadow, shadow_of(ref_db + "." + fk.ref_table));
            const std::string wanted = ref_shadow.empty() ? ref_db : ref_shadow;
            std::string stmt = *sql;
            if (wanted != named) {
              stmt = Replace(stmt, "REFERENCES " + QuoteQualified(named, fk.ref_table),
                             "REFERENCES " + QuoteQualified(wanted, fk.ref_table));
            }
            statements.push_back(stmt);
          }
        } else {
          for (const CheckConstraint& ck : t.checks) {
            auto sql = AddCheckSql(t, ck, Dialect::kMysql, source, ddl);
            if (!sql.ok()) return sql.status().WithContext(ctx);
            if (!sql->empty()) statements.push_back(*sql);
          }
        }
        for (const std::string& w : warnings) {
          Log(LogLevel::kWarn, kLog, w, {F("table", key), F("stream", options_.stream)});
        }
        for (const std::string& sql : statements) DBS_RETURN_IF_ERROR(conn_->Exec(sql, ctx));
        return RecordPhase(key, phase.name, std::to_string(statements.size()) + " statement(s)");
      }));
    }
  }
  return SwapIn(tables);
}

Result<TableDdlPlan> MysqlSink::PlanTable(const TableSchema& src) {
  DBS_RETURN_IF_ERROR(EnsureConnected());
  TableDdlPlan p;
  const std::string db = TargetDatabase(src.schema);
  p.target = db + "." + src.name;
  DBS_ASSIGN_OR_RETURN(bool exists, TableExists(db, src.name));
  bool create = false;
  p.action = PlannedAction(options_.schema_policy, options_.write_mode, exists, &create);
  if (!create || !options_.structure.tables) return p;
  DdlOptions ddl;
  ddl.target_schema = db;
  ApplyTypeMapping(options_.type_mapping, false,
                   conn_->is_mariadb() && conn_->server_version() >= 101000, &ddl);
  ddl.warnings = &p.warnings;
  const Dialect source = DialectOf(options_.source_engine);
  TableSchema t = src;  // as PrepareTable creates it: the primary key only
  t.indexes.clear();
  t.foreign_keys.clear();
  t.checks.clear();
  DBS_ASSIGN_OR_RETURN(std::string create_sql, CreateTableSql(t, Dialect::kMysql, source, ddl));
  p.statements.push_back(std::move(create_sql));
  if (options_.structure.indexes) {
    for (const Index& ix : src.indexes) {
      DBS_ASSIGN_OR_RETURN(std::string sql, CreateIndexSql(src, ix, Dialect::kMysql, source, ddl));
      if (!sql.empty()) p.statements.push_back(std::move(sql));
    }
  }
  if (options_.structure.foreign_keys) {
    for (const ForeignKey& fk : src.foreign_keys) {
      DBS_ASSIGN_OR_RETURN(std::string sql,
                           AddForeignKeySql(src, fk, Dialect::kMysql, source, ddl));
      if (!sql.empty()) p.statements.push_back(std::move(sql));
    }
  }
  if (options_.structure.checks) {
    for (const CheckConstraint& ck : src.checks) {
      DBS_ASSIGN_OR_RETURN(std::string sql, AddCheckSql(src, ck, Dialect::kMysql, source, ddl));
      if (!sql.empty()) p.statements.push_back(std::move(sql));
    }
  }
  return p;
}

std::vector<ObjectOutcome> MysqlSink::PlanObjects(const std::vector<TableSchema>& tables,
                                                  const std::vector<SchemaObject>& objects) {
  ObjectPlanInput in;
  in.objects = &objects;
  in.tables = &tables;
  in.source = options_.source_engine;
  in.target = Engine::kMysql;
  in.mode = options_.mode;
  in.enabled = options_.structure.objects;
  in.target_schema = [this](const std::string& s) { return TargetDatabase(s); };
  return dbs::PlanObjects(in);
}

Result<std::vector<ObjectOutcome>> MysqlSink::ObjectOutcomes() {
  DBS_RETURN_IF_ERROR(EnsureConnected());
  DBS_ASSIGN_OR_RETURN(
      auto rows, conn_->Query("SELECT `objects` FROM `_dbstreams`.`report` WHERE `stream` = " +
                                  conn_->Literal(options_.stream),
                              "reading the run's report"));
  if (rows.empty()) return std::vector<ObjectOutcome>();
  return OutcomesFromJson(nlohmann::json::parse(Str(rows[0], 0), nullptr, false));
}

Status MysqlSink::CreateObjectsAndReport(const std::vector<TableSchema>& tables) {
  std::vector<ObjectOutcome> planned = PlanObjects(tables, options_.objects);
  if (planned.empty()) return Status::Ok();
  const std::string ctx = "creating the schema objects";
  mysql::CreateObjectsOptions co;
  co.replace = options_.schema_policy == SchemaPolicy::kDropAndRecreate;
  co.mode = options_.mode;
  co.target_database = [this](const std::string& s) { return TargetDatabase(s); };
  // Objects an earlier attempt of this swap created (MySQL DDL commits at once).
  DBS_ASSIGN_OR_RETURN(auto done,
                       conn_->Query("SELECT `tbl` FROM `_dbstreams`.`state` WHERE "
                                    "`stream` = " +
                                        conn_->Literal(options_.stream) + " AND `phase` = 'object'",
                                    ctx));
  for (const TextRow& r : done) co.done_before.insert(Str(r, 0));
  co.created = [this](const std::string& source) {
    return RecordPhase(source, "object", "created");
  };
  std::vector<ObjectOutcome> outcomes = std::move(planned);
  if (options_.source_engine == Engine::kMysql) {
    DBS_ASSIGN_OR_RETURN(
        outcomes, mysql::CreateObjects(conn_.get(), std::move(outcomes), options_.objects, co));
  }
  for (const ObjectOutcome& o : outcomes) {
    if (!o.migrated) {
      Log(LogLevel::kWarn, kLog,
          std::string(ObjectKindName(o.kind)) + " " + o.source + ": " + o.reason);
    }
  }
  return conn_->Exec("INSERT INTO `_dbstreams`.`report` (`stream`, `objects`) VALUES (" +
                         conn_->Literal(options_.stream) + ", " +
                         conn_->Literal(ToJson(outcomes).dump()) +
                         ") ON DUPLICATE KEY UPDATE `objects` = VALUES(`objects`)",
                     ctx);
}

Status MysqlSink::ForgetStream() {
  DBS_RETURN_IF_ERROR(EnsureConnected());
  const std::string stream = conn_->Literal(options_.stream);
  const std::string ctx = "forgetting stream " + options_.stream;
  // In slices, so no single transaction holds every row lock of a large stream.
  while (true) {
    DBS_RETURN_IF_ERROR(conn_->Exec(
        "DELETE FROM `_dbstreams`.`applied` WHERE `stream` = " + stream + " LIMIT 10000", ctx));
    if (conn_->affected_rows() < 10000) break;
  }
  // The state rows stay: a writer looking at this run after another finished it must see
  // "finished", never apply the schema policy again.
  return Status::Ok();
}

std::string MysqlSink::ShadowOf(const std::string& info) {
  const size_t colon = info.find(':');
  return colon == std::string::npos ? std::string() : info.substr(colon + 1);
}

std::string MysqlSink::ShadowDatabase(const std::string& db) const {
  return "_dbs_sh_" + Hash16(options_.stream + "\n" + db);
}

Result<bool> MysqlSink::TableExists(const std::string& db, const std::string& name) {
  DBS_ASSIGN_OR_RETURN(
      auto r, conn_->Query("SELECT 1 FROM information_schema.TABLES WHERE "
                           "TABLE_SCHEMA = " +
                               conn_->Literal(db) + " AND TABLE_NAME = " + conn_->Literal(name),
                           "looking up " + db + "." + name));
  return !r.empty();
}

Status MysqlSink::RepointForeignKeys(const std::string& db, const std::string& old_name,
                                     const std::string& name) {
  const std::string ctx = "re-pointing the foreign keys to " + db + "." + name;
  DBS_ASSIGN_OR_RETURN(
      auto fks, conn_->Query("SELECT CONSTRAINT_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, UPDATE_RULE, "
                             "DELETE_RULE FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE "
                             "UNIQUE_CONSTRAINT_SCHEMA = " +
                                 conn_->Literal(db) +
                                 " AND REFERENCED_TABLE_NAME = " + conn_->Literal(old_name) +
                                 " AND TABLE_NAME NOT LIKE '\\_dbs\\_old\\_%'",
                             ctx));
  for (const TextRow& fk : fks) {
    const std::string schema = Str(fk, 0), table = Str(fk, 1), constraint = Str(fk, 2);
    DBS_ASSIGN_OR_RETURN(
        auto cols,
        conn_->Query("SELECT COLUMN_NAME, REFERENCED_COLUMN_NAME FROM "
                     "information_schema.KEY_COLUMN_USAGE WHERE CONSTRAINT_SCHEMA = " +
                         conn_->Literal(schema) + " AND TABLE_NAME = " + conn_->Literal(table) +
                         " AND CONSTRAINT_NAME = " + conn_->Literal(constraint) +
                         " AND REFERENCED_TABLE_NAME IS NOT NULL ORDER BY "
                         "ORDINAL_POSITION",
                     ctx));
    std::string own, ref;
    for (const TextRow& c : cols) {
      own += (own.empty() ? "" : ", ") + QuoteName(Str(c, 0));
      ref += (ref.empty() ? "" : ", ") + QuoteName(Str(c, 1));
    }
    auto definition = [&](const std::string& n) {
      return "ADD CONSTRAINT " + QuoteName(n) + " FOREIGN KEY (" + own + ") REFERENCES " +
             QuoteQualified(db, name) + " (" + ref + ") ON UPDATE " + Str(fk, 3) + " ON DELETE " +
             Str(fk, 4);
    };
    // InnoDB refuses to drop and add one name in one statement: through a temporary name, so
    // the constraint exists at every moment.
    const std::string tmp = "_dbs_fk_" + Hash16(schema + "." + table + "." + constraint);
    const std::string qualified = QuoteQualified(schema, table);
    Status s = conn_->Exec("ALTER TABLE " + qualified + " " + definition(tmp) +
                               ", DROP FOREIGN KEY " + QuoteName(constraint),
                           ctx);
    if (s.ok()) {
      s = conn_->Exec("ALTER TABLE " + qualified + " " + definition(constraint) +
                          ", DROP FOREIGN KEY " + QuoteName(tmp),
                      ctx);
    }
    if (!s.ok()) {
      Log(LogLevel::kWarn, kLog,
          "a foreign key of another table pointed at the replaced table and could not be "
          "re-created on the new one: re-create it by hand",
          {F("constraint", schema + "." + table + "." + constraint),
           F("references", db + "." + name), F("error", s.ToString())});
    }
  }
  return Status::Ok();
}

namespace {

// Test hook: sleeps for the seconds in environment variable `var`, if set, logging `what`.
void TestPause(const char* var, const char* what) {
  const char* pause = std::getenv(var);
  if (pause == nullptr || *pause == '\0') return;
  Log(LogLevel::kWarn, kLog, what, {F("seconds", pause)});
  std::this_thread::sleep_for(std::chrono::seconds(std::atoi(pause)));
}

}  // namespace

Status MysqlSink::SwapIn(const std::vector<TableSchema>& tables) {
  const std::string ctx = "swapping the new tables in";
  Status s = WithTableLock("", [&]() -> Status {
    std::string run;
    DBS_ASSIGN_OR_RETURN(bool ended, HasPhase("", "run", &run));
    if (ended && run == "swapped") return Status::Ok();
    if (ended) {
      return Status::Aborted("the run failed; its shadow tables are not swapped in")
          .WithRetry(Retry::kFail);
    }
    struct Move {
      std::string db, name, key, shadow;
      bool copy = false;
    };
    std::vector<Move> moves;
    std::set<std::string> shadows;
    for (const TableSchema& t : tables) {
      Move m;
      m.db = TargetDatabase(t.schema);
      m.name = t.name;
      m.key = m.db + "." + t.name;
      std::string info;
      DBS_ASSIGN_OR_RETURN(bool prepared, HasPhase(m.key, "prepared", &info));
      if (!prepared) {
        return Status::FailedPrecondition("table " + m.key + " was never prepared");
      }
      m.shadow = ShadowOf(info);
      if (m.shadow.empty()) continue;
      m.copy = info.rfind("copy:", 0) == 0;
      shadows.insert(m.shadow);
      moves.push_back(std::move(m));
    }
    // 1. New tables: ONE RENAME TABLE (atomic) moves every shadow into place. A table it
    //    replaces is renamed aside in its own database (a table with triggers cannot change
    //    database) and dropped afterwards. A move done by an earlier attempt is skipped.
    std::string rename;
    std::vector<const Move*> replaced;
    for (const Move& m : moves) {
      if (m.copy) continue;
      const std::string old_name = "_dbs_old_" + Hash16(options_.stream + "\n" + m.key);
      DBS_ASSIGN_OR_RETURN(bool pending, TableExists(m.shadow, m.name));
      DBS_ASSIGN_OR_RETURN(bool old_exists, TableExists(m.db, old_name));
      if (old_exists) replaced.push_back(&m);
      if (!pending) continue;
      DBS_RETURN_IF_ERROR(conn_->Exec(
          "CREATE DATABASE IF NOT EXISTS " + QuoteName(m.db) + " DEFAULT CHARACTER SET utf8mb4",
          ctx));
      DBS_ASSIGN_OR_RETURN(bool exists, TableExists(m.db, m.name));
      if (exists) {
        rename += (rename.empty() ? "" : ", ") + QuoteQualified(m.db, m.name) + " TO " +
                  QuoteQualified(m.db, old_name);
        if (!old_exists) replaced.push_back(&m);
      }
      rename += (rename.empty() ? "" : ", ") + QuoteQualified(m.shadow, m.name) + " TO " +
                QuoteQualified(m.db, m.name);
    }
    if (!rename.empty()) DBS_RETURN_IF_ERROR(conn_->Exec("RENAME TABLE " + rename, ctx));
    TestPause("DBS_TEST_MYSQL_SWAP_PAUSE", "test hook: pausing between the rename and the refill");
    // 2. Foreign keys of other tables followed the old tables aside (InnoDB renames the
    //    reference with the table): point them at the new ones, then drop the old tables.
    for (const Move* m : replaced) {
      const std::string old_name = "_dbs_old_" + Hash16(options_.stream + "\n" + m->key);
      DBS_RETURN_IF_ERROR(RepointForeignKeys(m->db, old_name, m->name));
    }
    for (const Move* m : replaced) {
      const std::string old_name = "_dbs_old_" + Hash16(options_.stream + "\n" + m->key);
      DBS_RETURN_IF_ERROR(
          conn_->Exec("DROP TABLE IF EXISTS " + QuoteQualified(m->db, old_name), ctx));
    }
    // 3. Refilled tables (truncate_and_load of existing tables): ONE transaction empties each
    //    and copies its shadow in, and records it, so a second attempt skips it.
    bool open = false;
    auto refill = [&]() -> Status {
      for (const Move& m : moves) {
        if (!m.copy) continue;
        DBS_ASSIGN_OR_RETURN(bool done, HasPhase(m.key, "refilled"));
        if (done) continue;
        if (!open) {
          DBS_RETURN_IF_ERROR(conn_->Exec("START TRANSACTION", ctx));
          open = true;
        }
        DBS_ASSIGN_OR_RETURN(
            auto cols,
            conn_->Query("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE "
                         "TABLE_SCHEMA = " +
                             conn_->Literal(m.db) + " AND TABLE_NAME = " + conn_->Literal(m.name) +
                             " AND EXTRA NOT LIKE '%GENERATED%' AND EXTRA NOT LIKE "
                             "'%VIRTUAL%' AND EXTRA NOT LIKE '%PERSISTENT%' AND EXTRA "
                             "NOT LIKE '%STORED%' ORDER BY ORDINAL_POSITION",
                         ctx));
        std::string list;
        for (const TextRow& c : cols) list += (list.empty() ? "" : ", ") + QuoteName(Str(c, 0));
        DBS_RETURN_IF_ERROR(conn_->Exec("DELETE FROM " + QuoteQualified(m.db, m.name), ctx));
        DBS_RETURN_IF_ERROR(conn_->Exec("INSERT INTO " + QuoteQualified(m.db, m.name) + " (" +
                                            list + ") SELECT " + list + " FROM " +
                                            QuoteQualified(m.shadow, m.name),
                                        ctx));
        DBS_RETURN_IF_ERROR(RecordPhase(m.key, "refilled", ""));
      }
      if (open) DBS_RETURN_IF_ERROR(conn_->Exec("COMMIT", ctx));
      open = false;
      return Status::Ok();
    };
    Status r = refill();
    if (!r.ok()) {
      if (open && !conn_->broken()) (void)conn_->Exec("ROLLBACK", "rolling back");
      return r;
    }
    // 4. The shadow databases go; the schema objects are created; the run is swapped in.
    for (const std::string& db : shadows) {
      DBS_RETURN_IF_ERROR(conn_->Exec("DROP DATABASE IF EXISTS " + QuoteName(db), ctx));
    }
    TestPause("DBS_TEST_MYSQL_SWAP_END_PAUSE",
              "test hook: pausing after the shadow databases were dropped");
    DBS_RETURN_IF_ERROR(CreateObjectsAndReport(tables));
    return RecordPhase("", "run", "swapped");
  });
  if (!s.ok()) return s.WithContext(ctx);
  plans_.clear();  // writes from now on (CDC) go to the target tables
  return Status::Ok();
}

Status MysqlSink::DropStaleRuns() {
  if (stale_dropped_) return Status::Ok();
  const size_t dot = options_.stream.rfind('.');
  if (dot == std::string::npos) {
    stale_dropped_ = true;
    return Status::Ok();
  }
  const std::string prefix = options_.stream.substr(0, dot + 1);
  const std::string ctx = "dropping what earlier runs of the stream left";
  const std::string where = " WHERE LEFT(`stream`, " + std::to_string(prefix.size()) +
                            ") = " + conn_->Literal(prefix) + " AND `stream` <> " +
                            conn_->Literal(options_.stream);
  DBS_RETURN_IF_ERROR(WithTableLock("stale:" + prefix, [&]() -> Status {
    DBS_ASSIGN_OR_RETURN(auto rows,
                         conn_->Query("SELECT DISTINCT `info` FROM `_dbstreams`.`state`" + where +
                                          " AND `phase` = 'prepared' AND (`info` LIKE 'new:%' OR "
                                          "`info` LIKE 'copy:%')",
                                      ctx));
    for (const TextRow& r : rows) {
      const std::string db = ShadowOf(Str(r, 0));
      if (db.rfind("_dbs_sh_", 0) != 0) continue;  // never anything but a shadow database
      DBS_RETURN_IF_ERROR(conn_->Exec("DROP DATABASE IF EXISTS " + QuoteName(db), ctx));
    }
    DBS_RETURN_IF_ERROR(conn_->Exec("DELETE FROM `_dbstreams`.`state`" + where, ctx));
    DBS_RETURN_IF_ERROR(conn_->Exec("DELETE FROM `_dbstreams`.`report`" + where, ctx));
    return conn_->Exec("DELETE FROM `_dbstreams`.`applied`" + where, ctx);
  }));
  stale_dropped_ = true;
  return Status::Ok();
}

Result<std::vector<std::string>> MysqlSink::AbandonStream(bool keep_partial) {
  // Without creating the bookkeeping: another writer of the run may have dropped it already.
  if (conn_ == nullptr || conn_->broken()) {
    conn_.reset();
    DBS_RETURN_IF_ERROR(Connect(/*bookkeeping=*/false));
  }
  std::vector<std::string> kept;
  bool undo = false;
  const std::string ctx = "cleaning up after the failed run";
  Status s = WithTableLock("", [&]() -> Status {
    DBS_ASSIGN_OR_RETURN(bool bookkeeping, TableExists("_dbstreams", "state"));
    if (!bookkeeping) return Status::Ok();  // another writer of the run cleaned up
    std::string run;
    DBS_ASSIGN_OR_RETURN(bool ended, HasPhase("", "run", &run));
    if (ended && run == "swapped") return Status::Ok();  // the new data is in
    // Another writer of the run abandoned it already (its shadow databases are gone, which
    // would look like a swap in progress below).
    if (ended && run == "failed") return Status::Ok();
    const std::string stream = conn_->Literal(options_.stream);
    DBS_ASSIGN_OR_RETURN(auto rows,
                         conn_->Query("SELECT `tbl`, `info` FROM `_dbstreams`.`state` WHERE "
                                      "`stream` = " +
                                          stream +
                                          " AND `phase` = 'prepared' AND (`info` LIKE 'new:%' OR "
                                          "`info` LIKE 'copy:%')",
                                      ctx));
    // A swap that started (a table renamed into place or refilled) is finished, not undone:
    // every row was in before it began, and half a swap is neither the old nor the new data.
    DBS_ASSIGN_OR_RETURN(
        auto started, conn_->Query("SELECT 1 FROM `_dbstreams`.`state` WHERE `stream` = " + stream +
                                       " AND `phase` = 'refilled' LIMIT 1",
                                   ctx));
    bool mid_swap = !started.empty();
    std::set<std::string> shadows;
    for (const TextRow& r : rows) {
      const std::string key = Str(r, 0), shadow = ShadowOf(Str(r, 1));
      const std::string name = key.substr(key.find('.') + 1);
      shadows.insert(shadow);
      DBS_ASSIGN_OR_RETURN(bool in_shadow, TableExists(shadow, name));
      if (Str(r, 1).rfind("new:", 0) == 0 && !in_shadow) mid_swap = true;
      if (keep_partial && in_shadow) kept.push_back(shadow + "." + name);
    }
    if (mid_swap) {
      Log(LogLevel::kWarn, kLog,
          "the run failed during the swap of its tables: finishing the swap (every row was in)",
          {F("stream", options_.stream)});
      return Status::Aborted("mid-swap");  // finished below, outside this lock
    }
    undo = true;
    DBS_RETURN_IF_ERROR(RecordPhase("", "run", "failed"));
    if (keep_partial) return Status::Ok();
    for (const std::string& db : shadows) {
      if (db.rfind("_dbs_sh_", 0) != 0) continue;
      DBS_RETURN_IF_ERROR(conn_->Exec("DROP DATABASE IF EXISTS " + QuoteName(db), ctx));
    }
    while (true) {
      DBS_RETURN_IF_ERROR(conn_->Exec(
          "DELETE FROM `_dbstreams`.`applied` WHERE `stream` = " + stream + " LIMIT 10000", ctx));
      if (conn_->affected_rows() < 10000) break;
    }
    return DropBookkeepingIfOnlyOurs();  // under the lock: no other writer is in here
  });
  if (!s.ok() && s.message() == "mid-swap") {
    return Status::FailedPrecondition(
        "the run failed while its tables were being swapped in: some target tables hold the "
        "new data, the others the old; start the stream again (or let a writer of this run "
        "resume) to bring them all to the new data");
  }
  if (!s.ok()) return s.WithContext(ctx);
  if (undo && dropped_bookkeeping_) conn_.reset();  // Connect() would create it again
  return kept;
}

Status MysqlSink::DropBookkeepingIfOnlyOurs() {
  const std::string ctx = "dropping the bookkeeping of the failed run";
  const std::string other = " WHERE `stream` <> " + conn_->Literal(options_.stream) + " LIMIT 1";
  DBS_ASSIGN_OR_RETURN(auto tables, conn_->Query("SELECT COUNT(*) FROM information_schema.TABLES "
                                                 "WHERE TABLE_SCHEMA = '_dbstreams'",
                                                 ctx));
  // Ours: state, applied, cdc_checkpoint and (since the schema-object report) report.
  if (tables.empty() || (Str(tables[0], 0) != "3" && Str(tables[0], 0) != "4")) {
    return Status::Ok();
  }
  std::vector<std::string> ours = {"state", "applied", "cdc_checkpoint"};
  if (Str(tables[0], 0) == "4") ours.push_back("report");
  for (const std::string& table : ours) {
    DBS_ASSIGN_OR_RETURN(auto r,
                         conn_->Query("SELECT 1 FROM `_dbstreams`.`" + table + "`" + other, ctx));
    if (!r.empty()) return Status::Ok();
  }
  DBS_RETURN_IF_ERROR(conn_->Exec("DROP DATABASE `_dbstreams`", ctx));
  dropped_bookkeeping_ = true;
  return Status::Ok();
}

// --- CDC -------------------------------------------------------------------------------------

namespace {

// Values compared with a column are written as bare numbers when they are plain integers or
// decimals: a quoted string compared with a numeric column is compared as a double in MySQL,
// which loses digits beyond 2^53.
bool BareNumber(const ColumnWriter& w, std::string_view text) {
  if (!w.expression.empty() || text.empty()) return false;
  switch (w.kind) {
    case TextKind::kSigned:
    case TextKind::kUnsigned:
    case TextKind::kBool:
      return true;
    case TextKind::kRaw:
      if (w.data_type != "decimal") return false;
      for (char c : text) {
        if (!((c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
      }
      return true;
    default:
      return false;
  }
}

// Constraint violations while applying changes are rejected values, not a gap.
Status AsRejected(Status s) {
  if (s.ok() || s.code() != StatusCode::kFailedPrecondition) return s;
  return Status(StatusCode::kInvalidArgument, Retry::kFail, s.message());
}

}  // namespace

Status MysqlSink::AppendValue(const TablePlan& plan, size_t j, const cdc::Cell& cell,
                              std::string* sql) {
  if (cell.null()) {
    *sql += "NULL";
    return Status::Ok();
  }
  const ColumnWriter& w = plan.writers[j];
  std::string text;
  Status s = mysql::CellText(w, *cell.col, cell.row, &text);
  if (!s.ok()) return s.WithContext("table " + plan.key + ", column " + w.name);
  if (BareNumber(w, text)) {
    *sql += text;
    return Status::Ok();
  }
  const std::string lit = conn_->Literal(text);
  *sql += w.expression.empty() ? lit : Replace(w.expression, "?", lit);
  return Status::Ok();
}

Result<CdcCheckpoint> MysqlSink::ReadCdcCheckpoint(int partition) {
  DBS_RETURN_IF_ERROR(EnsureConnected());
  const std::string stream = cdc::CdcStreamName(options_);
  DBS_ASSIGN_OR_RETURN(auto rows, conn_->Query("SELECT `seq`, `position_kind`, `position`, "
                                               "`file_pos` FROM `_dbstreams`.`cdc_checkpoint` "
                                               "WHERE `stream` = " +
                                                   conn_->Literal(stream) + " AND `partition` = " +
                                                   std::to_string(partition),
                                               "reading the CDC checkpoint of stream " + stream));
  CdcCheckpoint cp;
  if (rows.empty()) return cp;
  cp.seq = std::strtoull(Str(rows[0], 0).c_str(), nullptr, 10);
  cp.position.kind = cdc::PositionKindFromName(Str(rows[0], 1));
  cp.position.value = Str(rows[0], 2);
  cp.position.file_pos = Str(rows[0], 3);
  return cp;
}

Status MysqlSink::RunStep(const cdc::Step& step, TablePlan* plan) {
  using K = cdc::Step::Kind;
  const std::string ctx = "applying changes to " + plan->key;
  if (step.kind == K::kTruncate) {
    // TRUNCATE would commit the transaction: DELETE keeps the batch atomic.
    return conn_->Exec("DELETE FROM " + plan->qualified, ctx);
  }
  std::vector<int> writer_of(plan->source_columns, -1);
  for (size_t j = 0; j < plan->writers.size(); ++j) {
    writer_of[plan->source_index[j]] = static_cast<int>(j);
  }
  for (size_t k : step.key) {
    if (writer_of[k] < 0) {
      return Status::FailedPrecondition("table " + plan->key + ": key column " +
                                        step.table->columns[k].name + " is not writable");
    }
  }
  auto is_key = [&](size_t source_index) {
    return std::find(step.key.begin(), step.key.end(), source_index) != step.key.end();
  };
  // `k1` = v1 AND `k2` = v2 for an image's key.
  auto key_cond = [&](const cdc::Image& img, std::string* sql) -> Status {
    for (size_t i = 0; i < step.key.size(); ++i) {
      const size_t j = static_cast<size_t>(writer_of[step.key[i]]);
      *sql += (i ? " AND " : "") + QuoteName(plan->writers[j].name) + " = ";
      DBS_RETURN_IF_ERROR(AppendValue(*plan, j, img[step.key[i]], sql));
    }
    return Status::Ok();
  };
  // WHERE clause matching a list of keys: `k` IN (...) or (.. AND ..) OR (.. AND ..).
  auto keys_where = [&](const std::vector<const cdc::Image*>& imgs, std::string* sql) -> Status {
    if (step.key.size() == 1) {
      const size_t j = static_cast<size_t>(writer_of[step.key[0]]);
      *sql += QuoteName(plan->writers[j].name) + " IN (";
      for (size_t i = 0; i < imgs.size(); ++i) {
        if (i) *sql += ", ";
        DBS_RETURN_IF_ERROR(AppendValue(*plan, j, (*imgs[i])[step.key[0]], sql));
      }
      *sql += ")";
      return Status::Ok();
    }
    for (size_t i = 0; i < imgs.size(); ++i) {
      *sql += i ? " OR (" : "(";
      DBS_RETURN_IF_ERROR(key_cond(*imgs[i], sql));
      *sql += ")";
    }
    return Status::Ok();
  };

  if (step.kind == K::kKeyed || step.kind == K::kKeylessInsert) {
    std::vector<const cdc::Image*> deletes, upserts;
    if (step.kind == K::kKeyed) {
      for (const cdc::KeyedEntry& e : step.entries) {
        if (e.kind == cdc::KeyedEntry::Kind::kDelete) deletes.push_back(&e.image);
        if (e.kind == cdc::KeyedEntry::Kind::kUpsert) upserts.push_back(&e.image);
      }
    } else {
      for (const cdc::Image& r : step.rows) upserts.push_back(&r);
    }
    // Deletes, in statements of bounded size.
    for (size_t first = 0; first < deletes.size();) {
      std::vector<const cdc::Image*> chunk;
      size_t bytes = 0;
      while (first < deletes.size() && chunk.size() < 2000 && bytes < max_statement_bytes_ / 2) {
        chunk.push_back(deletes[first++]);
        bytes += 64;
      }
      std::string sql = "DELETE FROM " + plan->qualified + " WHERE ";
      DBS_RETURN_IF_ERROR(keys_where(chunk, &sql));
      DBS_RETURN_IF_ERROR(conn_->Exec(sql, ctx));
    }
    // Upserts (keyless tables: plain inserts) as multi-row INSERTs.
    if (!upserts.empty()) {
      std::string head = "INSERT INTO " + plan->qualified + " (";
      std::string tail;
      for (size_t j = 0; j < plan->writers.size(); ++j) {
        head += (j ? ", " : "") + QuoteName(plan->writers[j].name);
        if (step.kind == K::kKeyed && !is_key(plan->source_index[j])) {
          const std::string n = QuoteName(plan->writers[j].name);
          tail += (tail.empty() ? " ON DUPLICATE KEY UPDATE " : ", ") + n + " = VALUES(" + n + ")";
        }
      }
      head += ") VALUES ";
      if (step.kind == K::kKeyed && tail.empty()) {
        const std::string n =
            QuoteName(plan->writers[static_cast<size_t>(writer_of[step.key[0]])].name);
        tail = " ON DUPLICATE KEY UPDATE " + n + " = " + n;
      }
      std::string sql;
      for (size_t i = 0; i < upserts.size(); ++i) {
        sql += sql.empty() ? head : ",";
        sql += '(';
        for (size_t j = 0; j < plan->writers.size(); ++j) {
          if (j) sql += ", ";
          DBS_RETURN_IF_ERROR(AppendValue(*plan, j, (*upserts[i])[plan->source_index[j]], &sql));
        }
        sql += ')';
        if (sql.size() >= max_statement_bytes_ || i + 1 == upserts.size()) {
          DBS_RETURN_IF_ERROR(conn_->Exec(sql + tail, ctx));
          sql.clear();
        }
      }
    }
    // Partial updates: per group of rows setting the same columns, UPDATE ... SET c = CASE
    // <key> ... END WHERE <keys>, in chunks (the CASE is evaluated per matched row).
    if (step.kind == K::kKeyed) {
      for (const std::vector<size_t>& group : cdc::GroupUpdates(step)) {
        const cdc::Image& first_img = step.entries[group.front()].image;
        std::vector<size_t> set_cols;
        for (size_t j = 0; j < plan->writers.size(); ++j) {
          const size_t si = plan->source_index[j];
          if (first_img[si].present() && !is_key(si)) set_cols.push_back(j);
        }
        if (set_cols.empty()) continue;
        for (size_t first = 0; first < group.size(); first += 200) {
          const size_t end = std::min(group.size(), first + 200);
          std::vector<const cdc::Image*> chunk;
          for (size_t g = first; g < end; ++g) chunk.push_back(&step.entries[group[g]].image);
          std::string sql = "UPDATE " + plan->qualified + " SET ";
          for (size_t c = 0; c < set_cols.size(); ++c) {
            const size_t j = set_cols[c];
            const std::string n = QuoteName(plan->writers[j].name);
            sql += (c ? ", " : "") + n + " = CASE";
            for (const cdc::Image* img : chunk) {
              sql += " WHEN ";
              DBS_RETURN_IF_ERROR(key_cond(*img, &sql));
              sql += " THEN ";
              DBS_RETURN_IF_ERROR(AppendValue(*plan, j, (*img)[plan->source_index[j]], &sql));
            }
            sql += " ELSE " + n + " END";
          }
          sql += " WHERE ";
          DBS_RETURN_IF_ERROR(keys_where(chunk, &sql));
          DBS_RETURN_IF_ERROR(conn_->Exec(sql, ctx));
        }
      }
    }
    return Status::Ok();
  }

  // One row: kMove, kKeylessDelete, kKeylessUpdate.
  std::string sets;
  if (step.kind != K::kKeylessDelete) {
    for (size_t j = 0; j < plan->writers.size(); ++j) {
      const cdc::Cell& c = step.after[plan->source_index[j]];
      if (!c.present()) continue;
      sets += (sets.empty() ? "" : ", ") + QuoteName(plan->writers[j].name) + " = ";
      DBS_RETURN_IF_ERROR(AppendValue(*plan, j, c, &sets));
    }
    if (sets.empty()) return Status::Ok();
  }
  std::string where;
  if (step.kind == K::kMove) {
    DBS_RETURN_IF_ERROR(key_cond(step.before, &where));
    return conn_->Exec("UPDATE " + plan->qualified + " SET " + sets + " WHERE " + where, ctx);
  }
  // Keyless: one row equal (NULL-safe) to every present old value. FLOAT and JSON columns are
  // not compared (their text does not compare exactly).
  for (size_t j = 0; j < plan->writers.size(); ++j) {
    const cdc::Cell& c = step.before[plan->source_index[j]];
    const std::string& dt = plan->writers[j].data_type;
    if (!c.present() || dt == "float" || dt == "json") continue;
    where += (where.empty() ? "" : " AND ") + QuoteName(plan->writers[j].name) + " <=> ";
    DBS_RETURN_IF_ERROR(AppendValue(*plan, j, c, &where));
  }
  if (where.empty()) {
    return Status::InvalidArgument("table " + plan->key +
                                   " has no primary key and a change carries no old column "
                                   "values to find its row by");
  }
  if (step.kind == K::kKeylessDelete) {
    return conn_->Exec("DELETE FROM " + plan->qualified + " WHERE " + where + " LIMIT 1", ctx);
  }
  return conn_->Exec("UPDATE " + plan->qualified + " SET " + sets + " WHERE " + where + " LIMIT 1",
                     ctx);
}

Result<size_t> MysqlSink::ApplyChanges(const ChangeBatch& batch) {
  const std::string stream = cdc::CdcStreamName(options_);
  const std::string what = "stream " + stream + ", partition " + std::to_string(batch.partition);
  if (batch.first_seq == 0 || batch.last_seq < batch.first_seq) {
    return Status::InvalidArgument("change batch of " + what + " has sequence numbers " +
                                   std::to_string(batch.first_seq) + ".." +
                                   std::to_string(batch.last_seq));
  }
  DBS_ASSIGN_OR_RETURN(cdc::Plan plan, cdc::PlanBatch(batch));
  DBS_RETURN_IF_ERROR(EnsureConnected());
  // Plans (and any DDL) before the transaction.
  std::vector<TablePlan*> plans(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const TableSchema& t = *plan.steps[i].table;
    auto it = plans_.find(t.schema + "\n" + t.name);
    // Changes come only after the load was swapped in (by this writer or another one, whose
    // swap this writer's plans did not see): a plan that still writes to a shadow is stale.
    if (it != plans_.end() &&
        (it->second->source_columns != t.columns.size() || !it->second->shadow.empty())) {
      plans_.erase(it);
    }
    DBS_ASSIGN_OR_RETURN(plans[i], PlanFor(t));
  }
  const std::string lit = conn_->Literal(stream);
  const std::string part = std::to_string(batch.partition);
  bool already = false;
  auto body = [&]() -> Status {
    DBS_RETURN_IF_ERROR(conn_->Exec("START TRANSACTION", "starting to apply changes of " + what));
    DBS_RETURN_IF_ERROR(
        conn_->Exec("INSERT INTO `_dbstreams`.`cdc_checkpoint` (`stream`, `partition`) VALUES (" +
                        lit + ", " + part + ") ON DUPLICATE KEY UPDATE `seq` = `seq`",
                    "locking the CDC checkpoint of " + what));
    DBS_ASSIGN_OR_RETURN(auto rows,
                         conn_->Query("SELECT `seq` FROM `_dbstreams`.`cdc_checkpoint` "
                                      "WHERE `stream` = " +
                                          lit + " AND `partition` = " + part + " FOR UPDATE",
                                      "locking the CDC checkpoint of " + what));
    const uint64_t seq = rows.empty() ? 0 : std::strtoull(Str(rows[0], 0).c_str(), nullptr, 10);
    if (batch.last_seq <= seq) {
      already = true;
      return conn_->Exec("ROLLBACK", "ending a redelivered batch");
    }
    if (batch.first_seq != seq + 1) {
      return Status::FailedPrecondition(
          "change batch " + std::to_string(batch.first_seq) + ".." +
          std::to_string(batch.last_seq) + " of " + what +
          " does not follow the target's checkpoint " + std::to_string(seq) + " (expected " +
          std::to_string(seq + 1) +
          "): another writer is behind or ahead; wait for it or redeliver from " +
          std::to_string(seq + 1));
    }
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      DBS_RETURN_IF_ERROR(AsRejected(RunStep(plan.steps[i], plans[i])));
    }
    DBS_RETURN_IF_ERROR(conn_->Exec(
        "UPDATE `_dbstreams`.`cdc_checkpoint` SET `seq` = " + std::to_string(batch.last_seq) +
            ", `position_kind` = " + conn_->Literal(cdc::PositionKindName(batch.position.kind)) +
            ", `position` = " + conn_->Literal(batch.position.value) +
            ", `file_pos` = " + conn_->Literal(batch.position.file_pos) +
            ", `updated_at` = CURRENT_TIMESTAMP(6) WHERE `stream` = " + lit +
            " AND `partition` = " + part,
        "moving the CDC checkpoint of " + what));
    return conn_->Exec("COMMIT", "committing changes of " + what);
  };
  Status s = body();
  if (!s.ok()) {
    if (!conn_->broken()) (void)conn_->Exec("ROLLBACK", "rolling back");
    return s;
  }
  if (already) return size_t{0};
  return plan.changes;
}

Status MysqlSink::AddColumns(const TableSchema& new_schema, const std::vector<std::string>& added) {
  DBS_RETURN_IF_ERROR(EnsureConnected());
  const std::string db = TargetDatabase(new_schema.schema);
  const std::string key = db + "." + new_schema.name;
  const std::string qualified = QuoteQualified(db, new_schema.name);
  const std::string ctx = "adding columns to " + key;
  DBS_ASSIGN_OR_RETURN(auto cols, conn_->Query("SELECT COLUMN_NAME FROM information_schema.COLUMNS "
                                               "WHERE TABLE_SCHEMA = " +
                                                   conn_->Literal(db) + " AND TABLE_NAME = " +
                                                   conn_->Literal(new_schema.name),
                                               ctx));
  if (cols.empty()) return Status::NotFound(ctx + ": the table does not exist on the target");
  std::vector<std::string> warnings;
  DdlOptions ddl;
  ddl.target_schema = db;
  ApplyTypeMapping(options_.type_mapping, false,
                   conn_->is_mariadb() && conn_->server_version() >= 101000, &ddl);
  ddl.warnings = &warnings;
  const Dialect source = DialectOf(options_.source_engine);
  std::string clauses;
  for (const std::string& name : added) {
    const int i = new_schema.FindColumn(name);
    if (i < 0) {
      return Status::InvalidArgument(ctx + ": the new schema of the table has no column " + name);
    }
    bool exists = false;
    for (const TextRow& r : cols) exists = exists || Lower(Str(r, 0)) == Lower(name);
    if (exists) continue;
    const Column& c = new_schema.columns[static_cast<size_t>(i)];
    auto type = TargetType(c, Dialect::kMysql, source, ddl);
    if (!type.ok()) return type.status().WithContext(ctx);
    std::string clause = "ADD COLUMN " + QuoteName(c.name) + " " + *type;
    auto def = TargetDefault(c, Dialect::kMysql, source, ddl);
    if (!def.ok()) return def.status().WithContext(ctx);
    if (*def) {
      clause += " DEFAULT " + **def;
      if (!c.nullable) clause += " NOT NULL";
    }
    clauses += (clauses.empty() ? "" : ", ") + clause;
  }
  for (const std::string& w : warnings) Log(LogLevel::kWarn, kLog, w, {F("table", key)});
  if (!clauses.empty()) {
    DBS_RETURN_IF_ERROR(conn_->Exec("ALTER TABLE " + qualified + " " + clauses, ctx));
  }
  plans_.erase(new_schema.schema + "\n" + new_schema.name);  // re-read on next use
  return Status::Ok();
}

}  // namespace dbs

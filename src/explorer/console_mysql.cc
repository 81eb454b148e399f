// QuerySession for MySQL/MariaDB (console.h): one connection without the multi-statement flag,
// results streamed with mysql_use_result, cancellation by KILL QUERY from a second connection.
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <mutex>

#include "explorer/console_internal.h"
#include "explorer/sql_text.h"
#include "mysql/mysql_client.h"

namespace dbs::explorer {

using nlohmann::json;

namespace {

constexpr unsigned kBinaryCharset = 63;

bool IsBinary(const MYSQL_FIELD& f) {
  if (f.charsetnr != kBinaryCharset) return false;
  switch (f.type) {
    case MYSQL_TYPE_STRING:
    case MYSQL_TYPE_VAR_STRING:
    case MYSQL_TYPE_VARCHAR:
    case MYSQL_TYPE_TINY_BLOB:
    case MYSQL_TYPE_MEDIUM_BLOB:
    case MYSQL_TYPE_LONG_BLOB:
    case MYSQL_TYPE_BLOB:
    case MYSQL_TYPE_BIT:
    case MYSQL_TYPE_GEOMETRY:
      return true;
    default:
      return false;
  }
}

std::string Hex(const char* data, unsigned long len) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\\x";
  out.reserve(2 + 2 * len);
  for (unsigned long i = 0; i < len; ++i) {
    const auto c = static_cast<unsigned char>(data[i]);
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

}  // namespace

std::string MysqlTypeName(const MYSQL_FIELD& f) {
  const bool unsig = (f.flags & UNSIGNED_FLAG) != 0;
  const bool binary = f.charsetnr == kBinaryCharset;
  auto num = [&](const char* n) { return std::string(n) + (unsig ? " UNSIGNED" : ""); };
  switch (f.type) {
    case MYSQL_TYPE_TINY:
      return num("TINYINT");
    case MYSQL_TYPE_SHORT:
      return num("SMALLINT");
    case MYSQL_TYPE_INT24:
      return num("MEDIUMINT");
    case MYSQL_TYPE_LONG:
      return num("INT");
    case MYSQL_TYPE_LONGLONG:
      return num("BIGINT");
    case MYSQL_TYPE_FLOAT:
      return num("FLOAT");
    case MYSQL_TYPE_DOUBLE:
      return num("DOUBLE");
    case MYSQL_TYPE_DECIMAL:
    case MYSQL_TYPE_NEWDECIMAL: {
      // length counts the digits, the point and (signed) the sign.
      const unsigned long digits =
          f.length - (f.decimals > 0 ? 1 : 0) - (unsig || f.length == 0 ? 0 : 1);
      return num(
          ("DECIMAL(" + std::to_string(digits) + "," + std::to_string(f.decimals) + ")").c_str());
    }
    case MYSQL_TYPE_DATE:
    case MYSQL_TYPE_NEWDATE:
      return "DATE";
    case MYSQL_TYPE_TIME:
    case MYSQL_TYPE_TIME2:
      return "TIME";
    case MYSQL_TYPE_DATETIME:
    case MYSQL_TYPE_DATETIME2:
      return "DATETIME";
    case MYSQL_TYPE_TIMESTAMP:
    case MYSQL_TYPE_TIMESTAMP2:
      return "TIMESTAMP";
    case MYSQL_TYPE_YEAR:
      return "YEAR";
    case MYSQL_TYPE_BIT:
      return "BIT";
    case MYSQL_TYPE_JSON:
      return "JSON";
    case MYSQL_TYPE_ENUM:
      return "ENUM";
    case MYSQL_TYPE_SET:
      return "SET";
    case MYSQL_TYPE_GEOMETRY:
      return "GEOMETRY";
    case MYSQL_TYPE_NULL:
      return "NULL";
    case MYSQL_TYPE_TINY_BLOB:
    case MYSQL_TYPE_MEDIUM_BLOB:
    case MYSQL_TYPE_LONG_BLOB:
    case MYSQL_TYPE_BLOB:
      return binary ? "BLOB" : "TEXT";
    case MYSQL_TYPE_STRING:
      if (f.flags & ENUM_FLAG) return "ENUM";
      if (f.flags & SET_FLAG) return "SET";
      return binary ? "BINARY" : "CHAR";
    case MYSQL_TYPE_VAR_STRING:
    case MYSQL_TYPE_VARCHAR:
      return binary ? "VARBINARY" : "VARCHAR";
    default:
      return "TYPE " + std::to_string(static_cast<int>(f.type));
  }
}

json MysqlValue(const MYSQL_FIELD& f, const char* data, unsigned long len) {
  if (data == nullptr) return nullptr;
  const std::string s(data, len);
  switch (f.type) {
    case MYSQL_TYPE_TINY:
    case MYSQL_TYPE_SHORT:
    case MYSQL_TYPE_INT24:
    case MYSQL_TYPE_LONG:
    case MYSQL_TYPE_LONGLONG:
    case MYSQL_TYPE_YEAR: {
      char* end = nullptr;
      if ((f.flags & UNSIGNED_FLAG) != 0) {
        const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
        if (end != nullptr && *end == '\0' && !s.empty()) return static_cast<uint64_t>(v);
      } else {
        const long long v = std::strtoll(s.c_str(), &end, 10);
        if (end != nullptr && *end == '\0' && !s.empty()) return static_cast<int64_t>(v);
      }
      return s;
    }
    case MYSQL_TYPE_FLOAT:
    case MYSQL_TYPE_DOUBLE: {
      char* end = nullptr;
      const double d = std::strtod(s.c_str(), &end);
      if (end != nullptr && *end == '\0' && !s.empty() && std::isfinite(d)) return d;
      return s;
    }
    default:
      break;
  }
  if (IsBinary(f)) return Hex(data, len);
  return s;
}

namespace {

class MysqlSession : public QuerySession {
 public:
  MysqlSession(std::unique_ptr<mysql::MysqlConnection> conn, const ConnectionConfig& config,
               bool read_only)
      : conn_(std::move(conn)), config_(config), read_only_(read_only) {
    thread_id_ = static_cast<int64_t>(mysql_thread_id(conn_->handle()));
  }
  ~MysqlSession() override { (void)Close(); }

  Status Setup() {
    if (!read_only_) return Status::Ok();
    // The session setting covers the transaction a DDL statement's implicit commit starts.
    DBS_RETURN_IF_ERROR(
        conn_->Exec("SET SESSION TRANSACTION READ ONLY", "starting a read-only session"));
    return conn_->Exec("START TRANSACTION READ ONLY", "starting a read-only transaction");
  }

  Result<ConsolePage> Execute(const std::string& input, int64_t max_rows) override {
    if (mode_ != Mode::kIdle) return Status::FailedPrecondition("a statement already ran");
    const std::string sql = TrimStatement(input);
    if (sql.empty()) return Status::InvalidArgument("sql is empty");
    mode_ = Mode::kDone;
    MYSQL* m = conn_->handle();
    if (mysql_real_query(m, sql.data(), static_cast<unsigned long>(sql.size())) != 0) {
      return Failed("running the statement");
    }
    if (mysql_field_count(m) == 0) {
      ConsolePage page;
      page.rows_affected = static_cast<int64_t>(mysql_affected_rows(m));
      return page;
    }
    result_.reset(mysql_use_result(m));
    if (result_ == nullptr) return Failed("reading the result");
    const unsigned n = mysql_num_fields(result_.get());
    fields_ = mysql_fetch_fields(result_.get());
    for (unsigned i = 0; i < n; ++i) {
      columns_.push_back(
          {std::string(fields_[i].name, fields_[i].name_length), MysqlTypeName(fields_[i])});
    }
    mode_ = Mode::kStreaming;
    return Fetch(max_rows);
  }

  Result<ConsolePage> Fetch(int64_t max_rows) override {
    ConsolePage page;
    page.columns = columns_;
    if (mode_ != Mode::kStreaming) return page;
    const unsigned n = static_cast<unsigned>(columns_.size());
    while (static_cast<int64_t>(pending_.size()) <= max_rows && !exhausted_) {
      MYSQL_ROW row = mysql_fetch_row(result_.get());
      if (row == nullptr) {
        exhausted_ = true;
        if (mysql_errno(conn_->handle()) != 0) {
          mode_ = Mode::kDone;
          return Failed("reading rows");
        }
        break;
      }
      const unsigned long* lengths = mysql_fetch_lengths(result_.get());
      json out = json::array();
      for (unsigned i = 0; i < n; ++i) out.push_back(MysqlValue(fields_[i], row[i], lengths[i]));
      pending_.push_back(std::move(out));
    }
    while (!pending_.empty() && static_cast<int64_t>(page.rows.size()) < max_rows) {
      page.rows.push_back(std::move(pending_.front()));
      pending_.pop_front();
    }
    page.has_more = !pending_.empty();
    if (!page.has_more && exhausted_) {
      result_.reset();
      DrainResults();
      mode_ = Mode::kDone;
    }
    return page;
  }

  Result<ConsolePlan> Explain(const std::string& input, bool analyze) override {
    if (mode_ != Mode::kIdle) return Status::FailedPrecondition("a statement already ran");
    const std::string sql = TrimStatement(input);
    if (sql.empty()) return Status::InvalidArgument("sql is empty");
    if (analyze && read_only_) {
      return Status::InvalidArgument("analyze runs the statement: it needs readOnly false");
    }
    mode_ = Mode::kDone;
    if (analyze) {
      // ANALYZE runs the statement: in a transaction that is rolled back.
      DBS_RETURN_IF_ERROR(conn_->Exec("START TRANSACTION", "starting a transaction"));
      rollback_ = true;
    }
    const bool maria = conn_->is_mariadb();
    ConsolePlan plan;
    const std::string text_sql =
        analyze ? (maria ? "ANALYZE " : "EXPLAIN ANALYZE ") + sql : "EXPLAIN " + sql;
    auto text = conn_->Query(text_sql, "explaining");
    if (!text.ok()) return Classify(text.status());
    plan.text = TextTable(text_sql, *text);
    const std::string json_sql =
        (analyze && maria ? "ANALYZE FORMAT=JSON " : "EXPLAIN FORMAT=JSON ") + sql;
    auto js = conn_->Query(json_sql, "explaining");
    if (!js.ok()) return Classify(js.status());
    if (!js->empty() && !(*js)[0].empty() && (*js)[0][0]) {
      plan.json = json::parse(*(*js)[0][0], nullptr, false);
      if (plan.json.is_discarded()) plan.json = nullptr;
    }
    return plan;
  }

  void Cancel(bool timeout) override {
    {
      std::lock_guard<std::mutex> l(cancel_mu_);
      if (reason_.load() == Reason::kNone) {
        reason_ = timeout ? Reason::kTimeout : Reason::kCancelled;
      }
    }
    Kill();
  }

  Status Close() override {
    if (closed_) return Status::Ok();
    closed_ = true;
    if (mode_ == Mode::kStreaming && !exhausted_) {
      // Rows still coming: stop the statement rather than read them all.
      Kill();
    }
    result_.reset();
    DrainResults();
    Status s = Status::Ok();
    if (read_only_ || rollback_) {
      if (!conn_->broken()) s = conn_->Exec("ROLLBACK", "ending the transaction");
    }
    conn_.reset();
    return s;
  }

  int64_t server_session_id() const override { return thread_id_; }
  bool read_only() const override { return read_only_; }

 private:
  enum class Mode { kIdle, kStreaming, kDone };
  enum class Reason { kNone, kCancelled, kTimeout };

  // KILL QUERY from a second connection: the statement stops, the connection stays.
  void Kill() {
    mysql::ConnectOptions o;
    o.use_database = false;
    o.connect_timeout_seconds = 5;
    auto killer = mysql::MysqlConnection::Open(config_, o);
    if (!killer.ok()) return;
    (void)(*killer)->Exec("KILL QUERY " + std::to_string(thread_id_), "cancelling the statement");
  }

  // Further results of a multi-result statement (CALL).
  void DrainResults() {
    if (conn_ == nullptr || conn_->broken()) return;
    MYSQL* m = conn_->handle();
    while (mysql_more_results(m)) {
      if (mysql_next_result(m) != 0) break;
      mysql::ResultHandle r(mysql_store_result(m));
    }
  }

  Status Failed(std::string_view context) {
    const unsigned code = mysql_errno(conn_->handle());
    return Classify(conn_->LastError(context), code);
  }
  Status Classify(const Status& s, unsigned code = 0) {
    // 1317: query execution was interrupted (KILL QUERY); 3024/1969: a server-side timeout.
    const bool interrupted = code == 1317 || s.message().find("error 1317") != std::string::npos;
    if (interrupted || code == 3024 || code == 1969) {
      if (reason_.load() == Reason::kCancelled) {
        return Status::Cancelled("the statement was cancelled (on the server: " + s.message() +
                                 ")");
      }
      return Status::Timeout("the statement ran over its timeout (on the server: " + s.message() +
                             ")");
    }
    // 1792: cannot execute statement in a READ ONLY transaction.
    const bool ro = code == 1792 || s.message().find("error 1792") != std::string::npos;
    return ClassifyReadOnly(ro, s);
  }

  // MySQL's EXPLAIN rows as an aligned text table.
  static std::string TextTable(const std::string& sql, const std::vector<mysql::TextRow>& rows) {
    (void)sql;
    std::vector<size_t> widths;
    for (const auto& r : rows) {
      if (widths.size() < r.size()) widths.resize(r.size(), 0);
      for (size_t i = 0; i < r.size(); ++i) {
        widths[i] = std::max(widths[i], r[i] ? r[i]->size() : size_t{4});
      }
    }
    std::string out;
    for (const auto& r : rows) {
      for (size_t i = 0; i < r.size(); ++i) {
        std::string v = r[i] ? *r[i] : "NULL";
        if (i + 1 < r.size()) v.resize(widths[i], ' ');
        out += (i ? " | " : "") + v;
      }
      out += "\n";
    }
    return out;
  }

  std::unique_ptr<mysql::MysqlConnection> conn_;
  const ConnectionConfig config_;
  const bool read_only_;
  int64_t thread_id_ = 0;
  std::mutex cancel_mu_;
  std::atomic<Reason> reason_{Reason::kNone};
  Mode mode_ = Mode::kIdle;
  bool closed_ = false;
  bool rollback_ = false;
  bool exhausted_ = false;
  mysql::ResultHandle result_;
  MYSQL_FIELD* fields_ = nullptr;
  std::vector<ConsoleColumn> columns_;
  std::deque<json> pending_;
};

}  // namespace

Result<std::unique_ptr<QuerySession>> OpenMysqlSession(const ConnectionConfig& config,
                                                       bool read_only, int64_t timeout_ms) {
  (void)timeout_ms;  // the caller's watchdog cancels at the deadline (KILL QUERY)
  mysql::ConnectOptions o;
  DBS_ASSIGN_OR_RETURN(auto conn, mysql::MysqlConnection::Open(config, o));
  auto s = std::make_unique<MysqlSession>(std::move(conn), config, read_only);
  DBS_RETURN_IF_ERROR(s->Setup());
  return std::unique_ptr<QuerySession>(std::move(s));
}

}  // namespace dbs::explorer

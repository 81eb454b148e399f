// QuerySession for PostgreSQL (console.h): libpq, one connection, the extended protocol for the
// user's statement (one statement per call), DECLARE CURSOR for SELECT-like statements and
// single-row mode for the others.
#include <libpq-fe.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>

#include "explorer/console_internal.h"
#include "explorer/sql_text.h"
#include "postgres/pg_client.h"

namespace dbs::explorer {

using nlohmann::json;

namespace {

constexpr const char kCursor[] = "dbs_console_cursor";

}  // namespace

// Names of the built-in types a result may have, for results whose types cannot be looked up
// (a streaming statement holds the connection).
std::string PgBuiltinTypeName(Oid oid) {
  static const std::map<Oid, std::string> names = {
      {16, "boolean"},
      {17, "bytea"},
      {18, "\"char\""},
      {19, "name"},
      {20, "bigint"},
      {21, "smallint"},
      {23, "integer"},
      {25, "text"},
      {26, "oid"},
      {114, "json"},
      {142, "xml"},
      {650, "cidr"},
      {700, "real"},
      {701, "double precision"},
      {790, "money"},
      {829, "macaddr"},
      {869, "inet"},
      {1042, "character"},
      {1043, "character varying"},
      {1082, "date"},
      {1083, "time without time zone"},
      {1114, "timestamp without time zone"},
      {1184, "timestamp with time zone"},
      {1186, "interval"},
      {1266, "time with time zone"},
      {1560, "bit"},
      {1562, "bit varying"},
      {1700, "numeric"},
      {2950, "uuid"},
      {3802, "jsonb"},
      {1000, "boolean[]"},
      {1005, "smallint[]"},
      {1007, "integer[]"},
      {1016, "bigint[]"},
      {1009, "text[]"},
      {1015, "character varying[]"},
      {1021, "real[]"},
      {1022, "double precision[]"},
      {1231, "numeric[]"},
  };
  auto it = names.find(oid);
  return it != names.end() ? it->second : "oid " + std::to_string(oid);
}

// A field as JSON (console.h: numbers and booleans as such, everything else as text).
json PgValue(const PGresult* res, int row, int col) {
  if (PQgetisnull(res, row, col)) return nullptr;
  const std::string_view text = pg::Text(res, row, col);
  switch (PQftype(res, col)) {
    case 16:
      return text == "t";
    case 20:
    case 21:
    case 23:
    case 26: {
      char* end = nullptr;
      const std::string s(text);
      const long long v = std::strtoll(s.c_str(), &end, 10);
      if (end != nullptr && *end == '\0') return static_cast<int64_t>(v);
      return s;
    }
    case 700:
    case 701: {
      const std::string s(text);
      char* end = nullptr;
      const double d = std::strtod(s.c_str(), &end);
      if (end != nullptr && *end == '\0' && std::isfinite(d)) return d;
      return s;
    }
    default:
      return std::string(text);
  }
}

namespace {

class PgSession : public QuerySession {
 public:
  PgSession(pg::ConnPtr conn, bool read_only) : conn_(std::move(conn)), read_only_(read_only) {
    cancel_ = PQgetCancel(conn_.get());
    pid_ = PQbackendPID(conn_.get());
  }
  ~PgSession() override {
    (void)Close();
    if (cancel_ != nullptr) PQfreeCancel(cancel_);
  }

  Status Setup(int64_t timeout_ms) {
    if (timeout_ms > 0) {
      DBS_RETURN_IF_ERROR(pg::Command(conn_.get(),
                                      "SET statement_timeout = " + std::to_string(timeout_ms),
                                      "setting the statement timeout"));
    }
    return Status::Ok();
  }

  Result<ConsolePage> Execute(const std::string& input, int64_t max_rows) override {
    if (mode_ != Mode::kIdle) return Status::FailedPrecondition("a statement already ran");
    const std::string sql = TrimStatement(input);
    if (sql.empty()) return Status::InvalidArgument("sql is empty");
    DBS_RETURN_IF_ERROR(BeginTransaction(IsSelectLike(sql)));
    if (IsSelectLike(sql)) {
      auto declared = DeclareCursor(sql);
      if (!declared.ok()) return declared.status();
      if (*declared) {
        mode_ = Mode::kCursor;
        DBS_ASSIGN_OR_RETURN(ConsolePage page, FetchCursor(max_rows));
        DBS_RETURN_IF_ERROR(LookUpTypes(&page));
        return page;
      }
    }
    // Not behind a cursor: send it as it is and stream its rows.
    if (PQsendQueryParams(conn_.get(), sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) ==
        0) {
      return Failed(nullptr, "running the statement");
    }
    PQsetSingleRowMode(conn_.get());
    mode_ = Mode::kStreaming;
    return FetchStreaming(max_rows);
  }

  Result<ConsolePage> Fetch(int64_t max_rows) override {
    if (mode_ == Mode::kCursor) return FetchCursor(max_rows);
    if (mode_ == Mode::kStreaming) return FetchStreaming(max_rows);
    ConsolePage page;
    page.columns = columns_;
    return page;  // nothing more
  }

  Result<ConsolePlan> Explain(const std::string& input, bool analyze) override {
    if (mode_ != Mode::kIdle) return Status::FailedPrecondition("a statement already ran");
    const std::string sql = TrimStatement(input);
    if (sql.empty()) return Status::InvalidArgument("sql is empty");
    if (analyze && read_only_) {
      return Status::InvalidArgument("analyze runs the statement: it needs readOnly false");
    }
    // ANALYZE runs the statement: in a transaction that is rolled back, whatever read_only.
    DBS_RETURN_IF_ERROR(BeginTransaction(true));
    mode_ = Mode::kDone;
    if (analyze) rollback_ = true;
    const std::string opts = analyze ? "ANALYZE, " : "";
    ConsolePlan plan;
    DBS_ASSIGN_OR_RETURN(pg::ResultPtr text,
                         Run("EXPLAIN (" + opts + "FORMAT TEXT) " + sql, "explaining"));
    for (int i = 0; i < PQntuples(text.get()); ++i) {
      plan.text += std::string(pg::Text(text.get(), i, 0)) + "\n";
    }
    DBS_ASSIGN_OR_RETURN(pg::ResultPtr js,
                         Run("EXPLAIN (" + opts + "FORMAT JSON) " + sql, "explaining"));
    if (PQntuples(js.get()) > 0) {
      plan.json = json::parse(std::string(pg::Text(js.get(), 0, 0)), nullptr, false);
      if (plan.json.is_discarded()) plan.json = nullptr;
    }
    return plan;
  }

  void Cancel(bool timeout) override {
    std::lock_guard<std::mutex> l(cancel_mu_);
    if (reason_.load() == Reason::kNone) {
      reason_ = timeout ? Reason::kTimeout : Reason::kCancelled;
    }
    if (cancel_ == nullptr) return;
    char err[256];
    (void)PQcancel(cancel_, err, sizeof err);
  }

  Status Close() override {
    if (conn_ == nullptr || closed_) return Status::Ok();
    closed_ = true;
    PGconn* c = conn_.get();
    if (mode_ == Mode::kStreaming) {
      // Rows still coming: a read-only statement is stopped, a writing one is let finish.
      if (read_only_) {
        char err[256];
        if (cancel_ != nullptr) (void)PQcancel(cancel_, err, sizeof err);
      }
      while (PGresult* r = PQgetResult(c)) PQclear(r);
    }
    Status s = Status::Ok();
    const PGTransactionStatusType ts = PQtransactionStatus(c);
    if (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR) {
      const bool commit = !read_only_ && !rollback_ && ts == PQTRANS_INTRANS;
      s = pg::Command(c, commit ? "COMMIT" : "ROLLBACK", "ending the transaction");
    }
    conn_.reset();
    return s;
  }

  int64_t server_session_id() const override { return pid_; }
  bool read_only() const override { return read_only_; }

 private:
  enum class Mode { kIdle, kCursor, kStreaming, kDone };
  enum class Reason { kNone, kCancelled, kTimeout };

  // Read-only: BEGIN TRANSACTION READ ONLY and a first query, which takes the snapshot so that
  // SET TRANSACTION READ WRITE is refused from then on. Writing: a transaction only when
  // `needed` (a cursor needs one).
  Status BeginTransaction(bool needed) {
    if (read_only_) {
      return pg::Command(conn_.get(), "BEGIN TRANSACTION READ ONLY; SELECT 1",
                         "starting a read-only transaction");
    }
    if (!needed) return Status::Ok();
    return pg::Command(conn_.get(), "BEGIN", "starting a transaction");
  }

  // True when the statement now sits behind the cursor; false when it cannot (a data-modifying
  // WITH, say): then the savepoint is rolled back and the caller sends it as it is.
  Result<bool> DeclareCursor(const std::string& sql) {
    DBS_RETURN_IF_ERROR(pg::Command(conn_.get(), "SAVEPOINT dbs_console", "opening a cursor"));
    const std::string declare = std::string("DECLARE ") + kCursor + " NO SCROLL CURSOR FOR " + sql;
    pg::ResultPtr r(
        PQexecParams(conn_.get(), declare.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0));
    if (r && PQresultStatus(r.get()) == PGRES_COMMAND_OK) return true;
    const std::string state(pg::SqlState(r.get()));
    if (state == "57014" || PQstatus(conn_.get()) != CONNECTION_OK) {
      return Failed(r.get(), "running the statement");
    }
    DBS_RETURN_IF_ERROR(
        pg::Command(conn_.get(), "ROLLBACK TO SAVEPOINT dbs_console", "opening a cursor"));
    return false;
  }

  Result<ConsolePage> FetchCursor(int64_t max_rows) {
    ConsolePage page;
    const int64_t want = max_rows + 1 - static_cast<int64_t>(pending_.size());
    if (want > 0 && !exhausted_) {
      const std::string fetch =
          "FETCH FORWARD " + std::to_string(want) + " FROM " + std::string(kCursor);
      pg::ResultPtr r(
          PQexecParams(conn_.get(), fetch.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0));
      if (!r || PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
        return Failed(r.get(), "reading rows");
      }
      if (columns_.empty()) ReadColumns(r.get());
      const int n = PQntuples(r.get());
      for (int i = 0; i < n; ++i) pending_.push_back(Row(r.get(), i));
      if (n < want) exhausted_ = true;
    }
    page.columns = columns_;
    while (!pending_.empty() && static_cast<int64_t>(page.rows.size()) < max_rows) {
      page.rows.push_back(std::move(pending_.front()));
      pending_.pop_front();
    }
    page.has_more = !pending_.empty();
    if (!page.has_more) mode_ = Mode::kDone;
    return page;
  }

  Result<ConsolePage> FetchStreaming(int64_t max_rows) {
    ConsolePage page;
    while (static_cast<int64_t>(pending_.size()) <= max_rows && !exhausted_) {
      pg::ResultPtr r(PQgetResult(conn_.get()));
      if (!r) {
        exhausted_ = true;
        break;
      }
      switch (PQresultStatus(r.get())) {
        case PGRES_SINGLE_TUPLE:
          if (columns_.empty()) ReadColumns(r.get());
          pending_.push_back(Row(r.get(), 0));
          break;
        case PGRES_TUPLES_OK:
          if (columns_.empty()) ReadColumns(r.get());
          command_ = PQcmdStatus(r.get());
          break;
        case PGRES_COMMAND_OK: {
          command_ = PQcmdStatus(r.get());
          const char* n = PQcmdTuples(r.get());
          if (n != nullptr && *n != '\0') affected_ = std::strtoll(n, nullptr, 10);
          break;
        }
        case PGRES_EMPTY_QUERY:
          break;
        default: {
          Status s = Failed(r.get(), "running the statement");
          while (PGresult* rest = PQgetResult(conn_.get())) PQclear(rest);
          exhausted_ = true;
          mode_ = Mode::kDone;
          return s;
        }
      }
    }
    page.columns = columns_;
    while (!pending_.empty() && static_cast<int64_t>(page.rows.size()) < max_rows) {
      page.rows.push_back(std::move(pending_.front()));
      pending_.pop_front();
    }
    page.has_more = !pending_.empty();
    page.command = command_;
    page.rows_affected = affected_;
    if (!page.has_more && exhausted_) mode_ = Mode::kDone;
    return page;
  }

  void ReadColumns(const PGresult* r) {
    for (int c = 0; c < PQnfields(r); ++c) {
      columns_.push_back({PQfname(r, c), PgBuiltinTypeName(PQftype(r, c))});
      oids_.push_back(PQftype(r, c));
      mods_.push_back(PQfmod(r, c));
    }
  }

  json Row(const PGresult* r, int i) {
    json row = json::array();
    for (int c = 0; c < PQnfields(r); ++c) row.push_back(PgValue(r, i, c));
    return row;
  }

  // The exact type names (format_type: "numeric(10,2)", domains, enums) of a cursor's columns;
  // the connection is free between fetches.
  Status LookUpTypes(ConsolePage* page) {
    if (columns_.empty()) return Status::Ok();
    std::vector<std::string> oids, mods;
    for (size_t i = 0; i < oids_.size(); ++i) {
      oids.push_back(std::to_string(oids_[i]));
      mods.push_back(std::to_string(mods_[i]));
    }
    auto r = pg::ExecParams(conn_.get(),
                            "SELECT format_type(t.o, NULLIF(t.m, -1)) FROM unnest($1::oid[], "
                            "$2::int[]) WITH ORDINALITY AS t(o, m, n) ORDER BY t.n",
                            {pg::TextArrayLiteral(oids), pg::TextArrayLiteral(mods)},
                            "looking up the result's types");
    if (!r.ok()) return r.status();
    for (int i = 0; i < PQntuples(r->get()) && i < static_cast<int>(columns_.size()); ++i) {
      columns_[static_cast<size_t>(i)].type = std::string(pg::Text(r->get(), i, 0));
    }
    page->columns = columns_;
    return Status::Ok();
  }

  Result<pg::ResultPtr> Run(const std::string& sql, std::string_view context) {
    pg::ResultPtr r(
        PQexecParams(conn_.get(), sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0));
    const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) return Failed(r.get(), context);
    return r;
  }

  // The error of a failed call, with cancellation, timeouts and read-only refusals told apart.
  Status Failed(const PGresult* r, std::string_view context) {
    const std::string state(pg::SqlState(r));
    Status s = pg::ErrorStatus(conn_.get(), r, context);
    if (state == "57014") {
      if (reason_.load() == Reason::kCancelled) {
        return Status::Cancelled("the statement was cancelled (on the server: " + s.message() +
                                 ")");
      }
      return Status::Timeout("the statement ran over its timeout (on the server: " + s.message() +
                             ")");
    }
    return ClassifyReadOnly(state == "25006", s);
  }

  pg::ConnPtr conn_;
  const bool read_only_;
  PGcancel* cancel_ = nullptr;
  std::mutex cancel_mu_;
  std::atomic<Reason> reason_{Reason::kNone};
  int64_t pid_ = 0;
  Mode mode_ = Mode::kIdle;
  bool closed_ = false;
  bool rollback_ = false;
  bool exhausted_ = false;
  std::vector<ConsoleColumn> columns_;
  std::vector<Oid> oids_;
  std::vector<int> mods_;
  std::deque<json> pending_;
  std::string command_;
  int64_t affected_ = -1;
};

}  // namespace

Result<std::unique_ptr<QuerySession>> OpenPostgresSession(const ConnectionConfig& config,
                                                          bool read_only, int64_t timeout_ms) {
  DBS_ASSIGN_OR_RETURN(pg::ConnPtr conn, pg::Connect(config));
  auto s = std::make_unique<PgSession>(std::move(conn), read_only);
  DBS_RETURN_IF_ERROR(s->Setup(timeout_ms));
  return std::unique_ptr<QuerySession>(std::move(s));
}

}  // namespace dbs::explorer

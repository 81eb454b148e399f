#include "sources/postgres/pg_change_stream.h"

#include <poll.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "core/logging.h"
#include "core/temporal.h"
#include "postgres/pg_binary.h"
#include "postgres/pg_decode.h"
#include "sources/postgres/catalog.h"
#include "sources/postgres/pg_text.h"
#include "sources/postgres/pgoutput.h"
#include "sources/postgres/row_reader.h"

namespace dbs::pg {

namespace {

constexpr std::string_view kLog = "pg-cdc";
// A streamed transaction's buffered messages stay in memory up to this size, then spill.
constexpr size_t kSpillBytes = 1u << 20;
constexpr std::chrono::milliseconds kMaxStatusInterval{1000};
constexpr std::chrono::microseconds kCoalesce{300};  // see Next()
// A shutting-down server's reply requests (OnCopyData): this many within this time.
constexpr uint32_t kShutdownPings = 32;
constexpr std::chrono::milliseconds kShutdownPingWindow{2000};

using Clock = std::chrono::steady_clock;

std::string Key(const TableRef& t) { return t.schema + '\0' + t.name; }

bool ValidName(std::string_view n) {
  if (n.empty() || n.size() > 63) return false;
  for (char c : n) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

SourcePosition LsnPosition(uint64_t lsn) {
  SourcePosition p;
  p.kind = SourcePosition::Kind::kPgLsn;
  p.value = FormatLsn(lsn);
  return p;
}

int64_t NowPgMicros() {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return us - kUnixToEpochMicros;
}

// The followed tables, resolved to their real schema and name (all tables when none named).
Result<std::vector<RelationInfo>> ResolveTables(PGconn* conn, const CdcOptions& options) {
  std::vector<TableRef> refs = options.tables;
  if (refs.empty()) {
    DBS_ASSIGN_OR_RETURN(refs, ListTables(conn));
  }
  std::vector<RelationInfo> out;
  for (const TableRef& t : refs) {
    DBS_ASSIGN_OR_RETURN(RelationInfo r, ResolveRelation(conn, t));
    if (r.kind != 'r' && r.kind != 'p') {
      return Status::InvalidArgument("cannot follow changes of " + t.QualifiedName() +
                                     ": only tables have a change stream");
    }
    out.push_back(std::move(r));
  }
  return out;
}

struct SlotInfo {
  bool exists = false;
  std::string plugin;
  std::string database;
  bool active = false;
  std::string active_pid;
  std::string confirmed_flush;
  std::string slot_type;
};

Result<SlotInfo> LookupSlot(PGconn* conn, const std::string& slot) {
  DBS_ASSIGN_OR_RETURN(
      ResultPtr res,
      ExecParams(conn,
                 "SELECT coalesce(plugin, ''), coalesce(database::text, ''), active, "
                 "coalesce(active_pid::text, ''), coalesce(confirmed_flush_lsn::text, ''), "
                 "slot_type FROM pg_replication_slots WHERE slot_name = $1",
                 {slot}, "looking up replication slot " + slot));
  SlotInfo s;
  if (PQntuples(res.get()) == 0) return s;
  s.exists = true;
  s.plugin = Text(res.get(), 0, 0);
  s.database = Text(res.get(), 0, 1);
  s.active = Bool(res.get(), 0, 2);
  s.active_pid = Text(res.get(), 0, 3);
  s.confirmed_flush = Text(res.get(), 0, 4);
  s.slot_type = Text(res.get(), 0, 5);
  return s;
}

Result<std::string> CurrentDatabase(PGconn* conn) {
  DBS_ASSIGN_OR_RETURN(ResultPtr res, Exec(conn, "SELECT current_database()", "reading database"));
  return std::string(Text(res.get(), 0, 0));
}

// Slot sanity for reuse: pgoutput, this database.
Status CheckSlotUsable(PGconn* conn, const std::string& slot, const SlotInfo& s) {
  if (!s.exists) return Status::Ok();
  DBS_ASSIGN_OR_RETURN(std::string db, CurrentDatabase(conn));
  if (s.slot_type != "logical" || s.plugin != "pgoutput") {
    return Status::FailedPrecondition("replication slot " + slot +
                                      " exists but is not a logical pgoutput slot (plugin '" +
                                      s.plugin + "'): drop it (SELECT pg_drop_replication_slot('" +
                                      slot + "')) or choose another slot name");
  }
  if (s.database != db) {
    return Status::FailedPrecondition("replication slot " + slot + " belongs to database " +
                                      s.database + ", not " + db + ": choose another slot name");
  }
  return Status::Ok();
}

Status EnsurePublication(PGconn* conn, const std::string& pub,
                         const std::vector<RelationInfo>& tables, bool all_tables) {
  const std::string ctx = "setting up publication " + pub;
  DBS_ASSIGN_OR_RETURN(
      ResultPtr res,
      ExecParams(conn, "SELECT puballtables FROM pg_publication WHERE pubname = $1", {pub}, ctx));
  if (PQntuples(res.get()) == 0) {
    std::string sql = "CREATE PUBLICATION " + QuoteIdent(pub);
    if (all_tables) {
      sql += " FOR ALL TABLES";
    } else {
      sql += " FOR TABLE ";
      for (size_t i = 0; i < tables.size(); ++i) {
        if (i) sql += ", ";
        sql += QualifiedName(tables[i].schema, tables[i].name);
      }
    }
    // Changes of partitions are published as their (followed) partitioned table's.
    if (PQserverVersion(conn) >= 130000) sql += " WITH (publish_via_partition_root = true)";
    Log(LogLevel::kInfo, kLog, "creating publication " + pub);
    return Command(conn, sql, ctx);
  }
  if (Bool(res.get(), 0, 0)) return Status::Ok();
  DBS_ASSIGN_OR_RETURN(ResultPtr have,
                       ExecParams(conn,
                                  "SELECT schemaname, tablename FROM pg_publication_tables "
                                  "WHERE pubname = $1",
                                  {pub}, ctx));
  std::set<std::string> present;
  for (int i = 0; i < PQntuples(have.get()); ++i) {
    present.insert(
        Key(TableRef{std::string(Text(have.get(), i, 0)), std::string(Text(have.get(), i, 1))}));
  }
  std::string missing;
  for (const RelationInfo& t : tables) {
    if (present.count(Key(TableRef{t.schema, t.name}))) continue;
    if (!missing.empty()) missing += ", ";
    missing += QualifiedName(t.schema, t.name);
  }
  if (missing.empty()) return Status::Ok();
  Log(LogLevel::kInfo, kLog, "adding tables to publication " + pub + ": " + missing);
  return Command(conn, "ALTER PUBLICATION " + QuoteIdent(pub) + " ADD TABLE " + missing, ctx);
}

// A replication command's failure, with dropped slots and publications made loud.
Status ReplicationError(PGconn* conn, const PGresult* res, const std::string& ctx,
                        const CdcNames& names) {
  Status s = ErrorStatus(conn, res, ctx);
  const std::string_view state = SqlState(res);
  const std::string& msg = s.message();
  const char* primary_c = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  const std::string primary = primary_c ? primary_c : "";
  if (state == "42704" || primary.find("does not exist") != std::string::npos) {
    if (primary.find("replication slot") != std::string::npos) {
      return Status(StatusCode::kFailedPrecondition, Retry::kFail,
                    "replication slot " + names.slot +
                        " does not exist (it was dropped): the changes since the last "
                        "confirmed position are lost; start the stream again with a full "
                        "load (" +
                        msg + ")");
    }
    if (primary.find("publication") != std::string::npos) {
      return Status(StatusCode::kFailedPrecondition, Retry::kFail,
                    "publication " + names.publication +
                        " does not exist (it was dropped): recreate it (CREATE PUBLICATION " +
                        names.publication +
                        " FOR TABLE ...) before the dropped point is decoded, or start the "
                        "stream again with a full load (" +
                        msg + ")");
    }
  }
  if (state == "55006") {  // object in use: the slot is active in another session
    return Status(StatusCode::kUnavailable, Retry::kRetry,
                  msg + " (another reader is streaming from replication slot " + names.slot +
                      "; stop it, or wait until its connection ends)");
  }
  return s;
}

// Buffered messages of one streamed (in-progress) transaction: u32 length + bytes records,
// in memory and then in an anonymous temporary file.
class StreamBuffer {
 public:
  explicit StreamBuffer(uint32_t xid) : xid_(xid) {}
  ~StreamBuffer() {
    if (file_) std::fclose(file_);
  }
  Status Append(std::string_view msg) {
    if (!file_ && mem_.size() + msg.size() + 4 > kSpillBytes) {
      file_ = std::tmpfile();
      if (!file_)
        return Status::IoError(
            "cannot create a temporary file to spill a large "
            "streamed transaction (check TMPDIR)");
      if (!mem_.empty() && std::fwrite(mem_.data(), 1, mem_.size(), file_) != mem_.size()) {
        return Status::IoError("cannot write a streamed transaction's spill file");
      }
      mem_.clear();
      mem_.shrink_to_fit();
      Log(LogLevel::kInfo, kLog,
          "streamed transaction " + std::to_string(xid_) +
              " exceeds 1 MB: spilling it to a temporary file until it commits");
    }
    char len[4];
    StoreBE32(len, static_cast<uint32_t>(msg.size()));
    if (file_) {
      if (std::fwrite(len, 1, 4, file_) != 4 ||
          std::fwrite(msg.data(), 1, msg.size(), file_) != msg.size()) {
        return Status::IoError("cannot write a streamed transaction's spill file");
      }
    } else {
      mem_.append(len, 4);
      mem_.append(msg);
    }
    ++records_;
    return Status::Ok();
  }
  void Abort(uint32_t subxid) { aborted_.insert(subxid); }
  bool IsAborted(uint32_t xid) const { return aborted_.count(xid) != 0; }
  Status StartReading() {
    if (file_ && (std::fflush(file_) != 0 || std::fseek(file_, 0, SEEK_SET) != 0)) {
      return Status::IoError("cannot read back a streamed transaction's spill file");
    }
    return Status::Ok();
  }
  // The next record into *out; false at the end.
  Result<bool> Read(std::string* out) {
    if (read_ == records_) return false;
    uint32_t n = 0;
    if (file_) {
      char len[4];
      if (std::fread(len, 1, 4, file_) != 4) return Status::IoError("short spill file read");
      n = LoadBE32(len);
      out->resize(n);
      if (n && std::fread(out->data(), 1, n, file_) != n) {
        return Status::IoError("short spill file read");
      }
    } else {
      if (mem_.size() - pos_ < 4) return Status::Internal("stream buffer underflow");
      n = LoadBE32(mem_.data() + pos_);
      pos_ += 4;
      out->assign(mem_, pos_, n);
      pos_ += n;
    }
    ++read_;
    return true;
  }

 private:
  uint32_t xid_;
  std::string mem_;
  size_t pos_ = 0;
  FILE* file_ = nullptr;
  uint64_t records_ = 0;
  uint64_t read_ = 0;
  std::set<uint32_t> aborted_;
};

// How one column of a table is decoded.
struct ColumnDecoder {
  int rel_index = -1;  // index in the Relation message's columns; -1: not sent (generated)
  bool key = false;    // part of the replica identity key
  TextPlan text;
  std::optional<FieldPlan> binary;
};

struct RelState {
  TableRef table;
  bool followed = false;
  std::vector<std::string> names;  // the Relation message's columns
  std::vector<uint32_t> oids;
  std::vector<int32_t> mods;
  std::vector<bool> keys;
  std::vector<ColumnDecoder> columns;  // per TableSchema column
};

// A streamed transaction being handed out after its Stream Commit.
struct Replay {
  std::unique_ptr<StreamBuffer> buffer;
  uint64_t end_lsn = 0;
  std::string record;
};

class PgChangeStream : public ChangeStream {
 public:
  PgChangeStream(ConnectionConfig config, CdcOptions options, CdcNames names)
      : config_(std::move(config)), options_(std::move(options)), names_(std::move(names)) {}

  Status Open();
  Result<ChangeEvent> Next(std::chrono::milliseconds timeout) override;
  Status Confirm(const SourcePosition& position) override;
  Result<TableSchema> TableSchemaOf(const TableRef& table) override;

 private:
  Status Fail(Status s) {
    if (failed_.ok()) failed_ = s;
    return s;
  }
  Status OnCopyData(std::string_view data);
  Status OnXLogData(std::string_view payload);
  Status Handle(const PgoutputMessage& m);
  Status ReplayStep();
  Status SendStatus(bool reply_requested);
  Status MaybeSendStatus(bool check_now);
  Status WaitReadable(Clock::time_point until);
  Status ReadCopyEnd();

  void BeginTxn(uint32_t xid, uint64_t final_lsn, int64_t ts, bool skip);
  void CommitTxn(uint64_t end_lsn);
  void EmitPart();
  Status OnRelation(const PgoutputMessage& m);
  Status OnRow(const PgoutputMessage& m);
  Status OnTruncate(const PgoutputMessage& m);
  Status BuildDecoders(RelState* rel, const TableSchema& schema);
  Status AppendRow(RelState* rel, const std::vector<TupleCell>& cells, bool key_only, RowOp op);
  ChangeSegment* SegmentFor(const TableRef& table);
  bool Quiescent() const {
    return !txn_open_ && !in_stream_ && streams_.empty() && !replay_ && queue_.empty() &&
           confirmed_lsn_ >= last_emitted_lsn_;
  }

  const ConnectionConfig config_;
  const CdcOptions options_;
  const CdcNames names_;
  ConnPtr control_;
  ConnPtr repl_;
  TypeCache types_;
  int server_version_ = 0;
  int proto_ = 1;
  bool binary_ = false;
  std::map<std::string, TableSchema> schemas_;  // followed tables by Key()
  std::map<std::string, std::vector<std::pair<std::string, uint32_t>>> open_types_;
  std::unordered_map<uint32_t, RelState> rels_;

  uint64_t start_lsn_ = 0;
  uint64_t last_emitted_lsn_ = 0;  // the last final transaction handed out (or start)
  uint64_t confirmed_lsn_ = 0;
  uint64_t received_lsn_ = 0;  // write position reported to the server
  uint64_t idle_lsn_ = 0;      // heartbeat position (a keepalive's WAL end, all confirmed)
  Clock::time_point next_status_{};
  uint32_t status_ticks_ = 0;
  uint32_t burst_ = 0;  // messages read since the buffer last ran dry
  // Keepalives asking for a reply, back to back at the same WAL end with no data between
  // (OnCopyData): how many, and when the first came.
  uint32_t pings_ = 0;
  uint64_t ping_lsn_ = 0;
  Clock::time_point first_ping_{};
  std::chrono::milliseconds status_interval_{kMaxStatusInterval};
  std::deque<ChangeEvent> queue_;
  Status failed_;
  PgoutputMessage msg_;

  // The transaction being assembled.
  bool txn_open_ = false;
  bool txn_skip_ = false;
  bool txn_part_emitted_ = false;
  size_t txn_rows_ = 0;
  bool new_segment_ = false;
  ChangeTxn txn_;

  // Streaming (protocol 2).
  bool in_stream_ = false;
  uint32_t stream_xid_ = 0;
  std::map<uint32_t, std::unique_ptr<StreamBuffer>> streams_;
  std::optional<Replay> replay_;
};

Status PgChangeStream::Open() {
  const std::string where = config_.Redacted();
  DBS_ASSIGN_OR_RETURN(control_, Connect(config_));
  server_version_ = PQserverVersion(control_.get());
  if (server_version_ < 100000) {
    return Status::Unsupported("PostgreSQL " + std::to_string(server_version_ / 10000) + " at " +
                               where + " has no pgoutput logical replication");
  }
  DBS_ASSIGN_OR_RETURN(std::vector<RelationInfo> tables, ResolveTables(control_.get(), options_));
  std::vector<uint32_t> all_oids;
  for (const RelationInfo& r : tables) {
    const TableRef ref{r.schema, r.name};
    DBS_ASSIGN_OR_RETURN(TableSchema schema, DescribeTable(control_.get(), &types_, ref));
    DBS_ASSIGN_OR_RETURN(
        ResultPtr res,
        ExecParams(control_.get(),
                   "SELECT attname, atttypid FROM pg_attribute WHERE attrelid = $1 AND "
                   "attnum > 0 AND NOT attisdropped ORDER BY attnum",
                   {std::to_string(r.oid)}, "reading the columns of " + ref.QualifiedName()));
    auto& cols = open_types_[Key(ref)];
    for (int i = 0; i < PQntuples(res.get()); ++i) {
      const auto oid = static_cast<uint32_t>(Int(res.get(), i, 1));
      cols.emplace_back(std::string(Text(res.get(), i, 0)), oid);
      all_oids.push_back(oid);
    }
    schemas_[Key(ref)] = std::move(schema);
  }
  DBS_RETURN_IF_ERROR(types_.Load(control_.get(), all_oids));
  // Binary values when the server can send them and every column has a binary decoder.
  binary_ = server_version_ >= 140000;
  for (const auto& [key, schema] : schemas_) {
    for (const auto& [name, oid] : open_types_[key]) {
      const int ci = schema.FindColumn(name);
      if (ci < 0 || !DirectBinaryPlan(schema.columns[static_cast<size_t>(ci)], types_, oid)) {
        binary_ = false;
      }
    }
  }
  proto_ = server_version_ >= 140000 ? 2 : 1;
  DBS_RETURN_IF_ERROR(
      EnsurePublication(control_.get(), names_.publication, tables, options_.tables.empty()));

  DBS_ASSIGN_OR_RETURN(repl_, Connect(config_, /*replication=*/true));
  DBS_RETURN_IF_ERROR(Command(repl_.get(), "SET IntervalStyle = 'iso_8601'",
                              "setting up the replication session on " + where));
  {
    ResultPtr res(PQexec(repl_.get(), "IDENTIFY_SYSTEM"));
    if (PQresultStatus(res.get()) != PGRES_TUPLES_OK) {
      return ReplicationError(repl_.get(), res.get(), "IDENTIFY_SYSTEM on " + where, names_);
    }
    Log(LogLevel::kDebug, kLog,
        "replication connection: system " + std::string(Text(res.get(), 0, 0)) + " timeline " +
            std::string(Text(res.get(), 0, 1)) + " WAL " + std::string(Text(res.get(), 0, 2)));
  }

  DBS_ASSIGN_OR_RETURN(SlotInfo slot, LookupSlot(control_.get(), names_.slot));
  DBS_RETURN_IF_ERROR(CheckSlotUsable(control_.get(), names_.slot, slot));
  if (!options_.start.empty()) {
    if (options_.start.kind != SourcePosition::Kind::kPgLsn) {
      return Status::InvalidArgument("start position " + options_.start.value +
                                     " is not a PostgreSQL LSN");
    }
    DBS_ASSIGN_OR_RETURN(start_lsn_, ParseLsn(options_.start.value));
    if (!slot.exists) {
      return Status(StatusCode::kFailedPrecondition, Retry::kFail,
                    "replication slot " + names_.slot + " on " + where +
                        " does not exist (it was dropped): the changes after position " +
                        options_.start.value +
                        " are lost; start the stream again with a full load");
    }
  } else if (slot.exists) {
    DBS_ASSIGN_OR_RETURN(start_lsn_, ParseLsn(slot.confirmed_flush));
  } else {
    const std::string sql =
        "CREATE_REPLICATION_SLOT " + QuoteIdent(names_.slot) + " LOGICAL pgoutput " +
        (server_version_ >= 150000 ? "(SNAPSHOT 'nothing')" : "NOEXPORT_SNAPSHOT");
    ResultPtr res(PQexec(repl_.get(), sql.c_str()));
    if (PQresultStatus(res.get()) != PGRES_TUPLES_OK) {
      return ReplicationError(repl_.get(), res.get(),
                              "creating replication slot " + names_.slot + " on " + where, names_);
    }
    DBS_ASSIGN_OR_RETURN(start_lsn_, ParseLsn(Text(res.get(), 0, 1)));
    Log(LogLevel::kInfo, kLog,
        "created replication slot " + names_.slot + " at " + FormatLsn(start_lsn_));
  }
  last_emitted_lsn_ = confirmed_lsn_ = received_lsn_ = idle_lsn_ = start_lsn_;
  status_interval_ = std::min(kMaxStatusInterval, options_.heartbeat);
  if (status_interval_ <= std::chrono::milliseconds(0)) status_interval_ = kMaxStatusInterval;

  std::string sql = "START_REPLICATION SLOT " + QuoteIdent(names_.slot) + " LOGICAL " +
                    FormatLsn(start_lsn_) + " (proto_version '" + std::to_string(proto_) +
                    "', publication_names " + QuoteLiteral(QuoteIdent(names_.publication));
  if (binary_) sql += ", binary 'true'";
  if (proto_ >= 2) sql += ", streaming 'on'";
  sql += ")";
  ResultPtr res(PQexec(repl_.get(), sql.c_str()));
  if (PQresultStatus(res.get()) != PGRES_COPY_BOTH) {
    return ReplicationError(repl_.get(), res.get(),
                            "starting replication from slot " + names_.slot + " on " + where,
                            names_);
  }
  Log(LogLevel::kInfo, kLog,
      "streaming changes from slot " + names_.slot + " (publication " + names_.publication +
          ") after " + FormatLsn(start_lsn_) + (binary_ ? ", binary" : ", text") +
          " values, protocol " + std::to_string(proto_));
  return SendStatus(false);
}

Status PgChangeStream::SendStatus(bool reply_requested) {
  std::string msg;
  msg.push_back('r');
  AppendBE64(&msg, std::max(received_lsn_, confirmed_lsn_));
  AppendBE64(&msg, confirmed_lsn_);
  AppendBE64(&msg, confirmed_lsn_);
  AppendBE64(&msg, static_cast<uint64_t>(NowPgMicros()));
  msg.push_back(reply_requested ? 1 : 0);
  if (PQputCopyData(repl_.get(), msg.data(), static_cast<int>(msg.size())) != 1 ||
      PQflush(repl_.get()) != 0) {
    return Status(StatusCode::kUnavailable, Retry::kRetry,
                  "lost the replication connection to " + config_.Redacted() + ": " +
                      PQerrorMessage(repl_.get()));
  }
  next_status_ = Clock::now() + status_interval_;
  return Status::Ok();
}

Status PgChangeStream::MaybeSendStatus(bool check_now) {
  // Asking for a reply makes the server answer with a keepalive carrying its WAL end, so an
  // idle stream learns within a second how far it has read (drains, heartbeats). While messages
  // stream in, the clock is read every 256th message only (reading it is not free).
  if (!check_now && (++status_ticks_ & 255u) != 0) return Status::Ok();
  if (Clock::now() >= next_status_) return SendStatus(/*reply_requested=*/true);
  return Status::Ok();
}

Status PgChangeStream::WaitReadable(Clock::time_point until) {
  const auto now = Clock::now();
  int ms = 0;
  if (until > now) {
    ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count() + 1);
  }
  pollfd p{PQsocket(repl_.get()), POLLIN, 0};
  if (p.fd < 0) {
    return Status(StatusCode::kUnavailable, Retry::kRetry,
                  "lost the replication connection to " + config_.Redacted());
  }
  const int r = poll(&p, 1, ms);
  if (r < 0 && errno != EINTR) {
    return Status(StatusCode::kUnavailable, Retry::kRetry, "poll on the replication connection");
  }
  if (PQconsumeInput(repl_.get()) == 0) {
    return Status(StatusCode::kUnavailable, Retry::kRetry,
                  "lost the replication connection to " + config_.Redacted() + ": " +
                      PQerrorMessage(repl_.get()));
  }
  return Status::Ok();
}

Status PgChangeStream::ReadCopyEnd() {
  // The server ended the copy: its final result is the error (dropped slot, shutdown, ...).
  ResultPtr res(PQgetResult(repl_.get()));
  const std::string ctx =
      "streaming from replication slot " + names_.slot + " on " + config_.Redacted();
  if (!res || PQresultStatus(res.get()) == PGRES_COMMAND_OK ||
      PQresultStatus(res.get()) == PGRES_COPY_OUT) {
    return Status(StatusCode::kUnavailable, Retry::kRetry,
                  ctx + ": the server ended replication (shutting down?)");
  }
  Status s = ReplicationError(repl_.get(), res.get(), ctx, names_);
  if (PQstatus(repl_.get()) == CONNECTION_BAD && s.code() != StatusCode::kFailedPrecondition) {
    return Status(StatusCode::kUnavailable, Retry::kRetry, s.message());
  }
  return s;
}

Result<ChangeEvent> PgChangeStream::Next(std::chrono::milliseconds timeout) {
  std::optional<Clock::time_point> deadline;  // set when the buffer first runs dry
  while (true) {
    if (!queue_.empty()) {
      ChangeEvent ev = std::move(queue_.front());
      queue_.pop_front();
      return ev;
    }
    if (!failed_.ok()) return failed_;
    if (replay_) {
      Status s = ReplayStep();
      if (!s.ok()) return Fail(std::move(s));
      continue;
    }
    Status s = MaybeSendStatus(/*check_now=*/false);
    if (!s.ok()) return Fail(std::move(s));
    char* raw = nullptr;
    const int n = PQgetCopyData(repl_.get(), &raw, 1);
    if (n > 0) {
      FreePtr buf(raw);
      ++burst_;
      s = OnCopyData(std::string_view(raw, static_cast<size_t>(n)));
      if (!s.ok()) return Fail(std::move(s));
      continue;
    }
    if (n == 0) {
      if (burst_ > 0) {
        // The buffer ran dry in the middle of a burst (a backlog being read): the server sends
        // each message on its own, so waking up for every one would cost two system calls per
        // message. Let the kernel collect a batch first; this adds at most kCoalesce of
        // latency, and only while messages are flowing.
        burst_ = 0;
        std::this_thread::sleep_for(kCoalesce);
        if (PQconsumeInput(repl_.get()) == 0) {
          return Fail(Status(StatusCode::kUnavailable, Retry::kRetry,
                             "lost the replication connection to " + config_.Redacted() + ": " +
                                 PQerrorMessage(repl_.get())));
        }
        continue;
      }
      s = MaybeSendStatus(/*check_now=*/true);
      if (!s.ok()) return Fail(std::move(s));
      const auto now = Clock::now();
      if (!deadline) deadline = now + timeout;
      if (now >= *deadline) {
        ChangeEvent ev;
        ev.kind = ChangeEvent::Kind::kIdle;
        // Nothing open: every transaction that committed before the WAL position the server
        // last reported has been received (drains compare with it). Confirmation is separate.
        const bool nothing_open =
            !txn_open_ && !in_stream_ && streams_.empty() && !replay_ && queue_.empty();
        ev.position = LsnPosition(std::max(
            last_emitted_lsn_, nothing_open ? std::max(received_lsn_, idle_lsn_) : uint64_t{0}));
        return ev;
      }
      s = WaitReadable(std::min(*deadline, next_status_));
      if (!s.ok()) return Fail(std::move(s));
      continue;
    }
    if (n == -1) return Fail(ReadCopyEnd());
    return Fail(Status(StatusCode::kUnavailable, Retry::kRetry,
                       "lost the replication connection to " + config_.Redacted() + ": " +
                           PQerrorMessage(repl_.get())));
  }
}

Status PgChangeStream::OnCopyData(std::string_view data) {
  if (data.empty()) return Status::Corruption("empty replication message from the server");
  if (data[0] == 'w') {
    if (data.size() < 25) return Status::Corruption("truncated XLogData message");
    const uint64_t start = LoadBE64(data.data() + 1);
    received_lsn_ = std::max(received_lsn_, start);
    pings_ = 0;
    return OnXLogData(data.substr(25));
  }
  if (data[0] == 'k') {
    if (data.size() < 18) return Status::Corruption("truncated keepalive message");
    const uint64_t wal_end = LoadBE64(data.data() + 1);
    const bool reply = data[17] != 0;
    received_lsn_ = std::max(received_lsn_, wal_end);
    if (Quiescent() && wal_end > confirmed_lsn_) {
      // Nothing open and everything handed out confirmed: what lies before the server's WAL
      // position has no changes of the followed tables, so the slot may move past it.
      confirmed_lsn_ = idle_lsn_ = wal_end;
      return SendStatus(false);
    }
    if (!reply) return Status::Ok();
    // A server shutting down keeps its walsender until the client confirms every WAL position
    // it sent, and asks again as soon as the client answers: a storm of reply requests at one
    // WAL end. While changes are handed out but not yet committed by the target (the writers
    // may be unable to reach it: it may be the same server), the confirmed position cannot
    // honestly move, so the shutdown would wait until killed. Hang up instead: nothing is lost
    // (the slot keeps the unconfirmed changes and the caller reconnects, from the last
    // confirmed position, when the server is back). A running server asks for a reply only
    // after half its wal_sender_timeout without one, never dozens of times a second.
    const Clock::time_point now = Clock::now();
    // A new WAL end, or requests too far apart to be a storm: count afresh from this one.
    if (pings_ == 0 || wal_end != ping_lsn_ || now - first_ping_ >= kShutdownPingWindow) {
      pings_ = 0;
      ping_lsn_ = wal_end;
      first_ping_ = now;
    }
    if (++pings_ >= kShutdownPings) {
      repl_.reset();
      return Status(StatusCode::kUnavailable, Retry::kRetry,
                    "the server " + config_.Redacted() +
                        " is shutting down and waits for changes the target has not committed "
                        "yet; disconnected so that it can stop, and reconnecting");
    }
    return SendStatus(false);
  }
  return Status::Corruption("unknown replication message type " + std::to_string(data[0]));
}

Status PgChangeStream::OnXLogData(std::string_view payload) {
  DBS_RETURN_IF_ERROR(DecodePgoutput(payload, proto_, in_stream_, &msg_));
  const PgoutputMessage& m = msg_;
  switch (m.kind) {
    case PgoutputKind::kStreamStart: {
      if (in_stream_) return Status::Corruption("nested Stream Start from the server");
      in_stream_ = true;
      stream_xid_ = m.xid;
      auto& buf = streams_[m.xid];
      if (!buf) buf = std::make_unique<StreamBuffer>(m.xid);
      return Status::Ok();
    }
    case PgoutputKind::kStreamStop:
      if (!in_stream_) return Status::Corruption("Stream Stop outside a stream block");
      in_stream_ = false;
      return Status::Ok();
    case PgoutputKind::kStreamAbort: {
      auto it = streams_.find(m.xid);
      if (it == streams_.end()) return Status::Ok();
      if (m.subxid == m.xid || m.subxid == 0) {
        streams_.erase(it);
      } else {
        it->second->Abort(m.subxid);
      }
      return Status::Ok();
    }
    case PgoutputKind::kStreamCommit: {
      auto it = streams_.find(m.xid);
      std::unique_ptr<StreamBuffer> buf;
      if (it != streams_.end()) {
        buf = std::move(it->second);
        streams_.erase(it);
      } else {
        buf = std::make_unique<StreamBuffer>(m.xid);
      }
      DBS_RETURN_IF_ERROR(buf->StartReading());
      BeginTxn(m.xid, m.lsn, m.timestamp, m.end_lsn <= start_lsn_);
      replay_.emplace();
      replay_->buffer = std::move(buf);
      replay_->end_lsn = m.end_lsn;
      return Status::Ok();
    }
    default:
      break;
  }
  if (in_stream_) {
    auto& buf = streams_[stream_xid_];
    if (!buf) buf = std::make_unique<StreamBuffer>(stream_xid_);
    return buf->Append(payload);
  }
  return Handle(m);
}

Status PgChangeStream::ReplayStep() {
  Replay& r = *replay_;
  DBS_ASSIGN_OR_RETURN(bool more, r.buffer->Read(&r.record));
  if (!more) {
    const uint64_t end = r.end_lsn;
    replay_.reset();
    CommitTxn(end);
    return Status::Ok();
  }
  DBS_RETURN_IF_ERROR(DecodePgoutput(r.record, proto_, /*in_stream=*/true, &msg_));
  if (r.buffer->IsAborted(msg_.xid)) return Status::Ok();
  return Handle(msg_);
}

Status PgChangeStream::Handle(const PgoutputMessage& m) {
  switch (m.kind) {
    case PgoutputKind::kBegin:
      BeginTxn(m.xid, m.lsn, m.timestamp, m.lsn < start_lsn_);
      return Status::Ok();
    case PgoutputKind::kCommit:
      if (!txn_open_) return Status::Corruption("Commit without Begin from the server");
      CommitTxn(m.end_lsn);
      return Status::Ok();
    case PgoutputKind::kRelation:
      return OnRelation(m);
    case PgoutputKind::kInsert:
    case PgoutputKind::kUpdate:
    case PgoutputKind::kDelete:
      return OnRow(m);
    case PgoutputKind::kTruncate:
      return OnTruncate(m);
    default:  // Origin, Type (types come from the catalog), Message: nothing to apply
      return Status::Ok();
  }
}

void PgChangeStream::BeginTxn(uint32_t xid, uint64_t final_lsn, int64_t ts, bool skip) {
  (void)final_lsn;
  txn_open_ = true;
  txn_skip_ = skip;
  txn_part_emitted_ = false;
  txn_rows_ = 0;
  txn_ = ChangeTxn{};
  txn_.xid = std::to_string(xid);
  txn_.commit_time_us = ts + kUnixToEpochMicros;
}

void PgChangeStream::EmitPart() {
  ChangeEvent ev;
  ev.kind = ChangeEvent::Kind::kTransaction;
  ev.txn = std::move(txn_);
  ev.txn.final = false;
  ev.txn.position = LsnPosition(last_emitted_lsn_);
  ev.position = ev.txn.position;
  txn_ = ChangeTxn{};
  txn_.xid = ev.txn.xid;
  txn_.commit_time_us = ev.txn.commit_time_us;
  txn_rows_ = 0;
  txn_part_emitted_ = true;
  queue_.push_back(std::move(ev));
}

void PgChangeStream::CommitTxn(uint64_t end_lsn) {
  txn_open_ = false;
  if (txn_skip_ || (end_lsn <= start_lsn_ && !txn_part_emitted_)) {
    txn_ = ChangeTxn{};
    return;
  }
  if (txn_.segments.empty() && !txn_part_emitted_) {
    // Nothing of the followed tables: not handed out; the heartbeat moves past it.
    txn_ = ChangeTxn{};
    return;
  }
  ChangeEvent ev;
  ev.kind = ChangeEvent::Kind::kTransaction;
  ev.txn = std::move(txn_);
  ev.txn.final = true;
  ev.txn.position = LsnPosition(end_lsn);
  ev.position = ev.txn.position;
  txn_ = ChangeTxn{};
  last_emitted_lsn_ = std::max(last_emitted_lsn_, end_lsn);
  queue_.push_back(std::move(ev));
}

Status PgChangeStream::BuildDecoders(RelState* rel, const TableSchema& schema) {
  DBS_RETURN_IF_ERROR(types_.Load(control_.get(), rel->oids));
  rel->columns.assign(schema.columns.size(), ColumnDecoder{});
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    const Column& c = schema.columns[i];
    ColumnDecoder& d = rel->columns[i];
    auto it = std::find(rel->names.begin(), rel->names.end(), c.name);
    if (it == rel->names.end()) continue;  // generated columns are not sent
    d.rel_index = static_cast<int>(it - rel->names.begin());
    d.key = rel->keys[static_cast<size_t>(d.rel_index)];
    const uint32_t oid = rel->oids[static_cast<size_t>(d.rel_index)];
    d.binary = DirectBinaryPlan(c, types_, oid);
    d.text.type = c.type;
    d.text.element_type = c.element_type;
    const TypeInfo* base = types_.Base(oid);
    if (base && c.type == LogicalType::kArray && base->element != 0) {
      base = types_.Base(base->element);
    }
    if (base) {
      d.text.bpchar = base->name == "bpchar";
      d.text.money = base->name == "money";
    }
    if (!TextDecodable(c.type, c.element_type) && !d.binary) {
      return Status::Unsupported("column " + c.name + " of " + schema.QualifiedName() + " (" +
                                 c.source_type + ") cannot be decoded from the change stream");
    }
  }
  return Status::Ok();
}

Status PgChangeStream::OnRelation(const PgoutputMessage& m) {
  const TableRef table{std::string(m.nspname), std::string(m.name)};
  const std::string key = Key(table);
  std::vector<std::string> names;
  std::vector<uint32_t> oids;
  std::vector<int32_t> mods;
  std::vector<bool> keys;
  for (const RelationColumn& c : m.columns) {
    keys.push_back(c.key());
    names.emplace_back(c.name);
    oids.push_back(c.type_oid);
    mods.push_back(c.type_mod);
  }
  auto it = rels_.find(m.oid);
  if (it != rels_.end() && it->second.table == table && it->second.names == names &&
      it->second.oids == oids && it->second.mods == mods) {
    return Status::Ok();  // unchanged
  }
  RelState rel;
  rel.table = table;
  rel.names = std::move(names);
  rel.oids = std::move(oids);
  rel.mods = std::move(mods);
  rel.keys = std::move(keys);
  auto sit = schemas_.find(key);
  rel.followed = sit != schemas_.end() || options_.tables.empty();
  if (!rel.followed) {
    rels_[m.oid] = std::move(rel);
    return Status::Ok();
  }
  // Does the known schema still describe what the server sends?
  bool same = false;
  if (sit != schemas_.end()) {
    if (it != rels_.end()) {
      same = it->second.names == rel.names && it->second.oids == rel.oids &&
             it->second.mods == rel.mods;
    } else {
      // First sight in this session: compare with the columns read when the stream opened.
      std::vector<std::string> open_names;
      std::vector<uint32_t> open_oids;
      for (const auto& [n, o] : open_types_[key]) {
        // Generated columns are not sent by pgoutput.
        const int ci = sit->second.FindColumn(n);
        if (ci >= 0 && sit->second.columns[static_cast<size_t>(ci)].generated_expr) continue;
        open_names.push_back(n);
        open_oids.push_back(o);
      }
      same = open_names == rel.names && open_oids == rel.oids;
    }
  }
  if (sit == schemas_.end()) {
    // A table of a FOR ALL TABLES publication seen for the first time.
    DBS_ASSIGN_OR_RETURN(TableSchema schema, DescribeTable(control_.get(), &types_, table));
    sit = schemas_.emplace(key, std::move(schema)).first;
  } else if (!same) {
    // The columns changed: describe the table again and tell the consumer first.
    DBS_ASSIGN_OR_RETURN(TableSchema schema, DescribeTable(control_.get(), &types_, table));
    SchemaChange change;
    change.table = table;
    const TableSchema& old = sit->second;
    bool prefix = schema.columns.size() > old.columns.size();
    for (size_t i = 0; prefix && i < old.columns.size(); ++i) {
      prefix = old.columns[i].name == schema.columns[i].name &&
               old.columns[i].type == schema.columns[i].type &&
               old.columns[i].element_type == schema.columns[i].element_type;
    }
    std::string desc;
    if (prefix) {
      change.only_added_columns = true;
      for (size_t i = old.columns.size(); i < schema.columns.size(); ++i) {
        change.added_columns.push_back(schema.columns[i].name);
        desc += (desc.empty() ? "" : ", ") + schema.columns[i].name + " " +
                schema.columns[i].source_type;
      }
      change.statement = "ALTER TABLE " + table.QualifiedName() + " ADD COLUMN " + desc;
    } else {
      for (const Column& c : schema.columns) {
        desc += (desc.empty() ? "" : ", ") + c.name + " " + c.source_type;
      }
      change.statement = "columns of " + table.QualifiedName() + " changed to (" + desc + ")";
    }
    change.schema = schema;
    Log(LogLevel::kInfo, kLog, "schema change: " + change.statement);
    if (txn_open_ && txn_rows_ > 0) EmitPart();
    ChangeEvent ev;
    ev.kind = ChangeEvent::Kind::kSchemaChange;
    ev.schema_change = std::move(change);
    ev.position = LsnPosition(last_emitted_lsn_);
    queue_.push_back(std::move(ev));
    sit->second = std::move(schema);
    // A segment already open for this table has the old columns: start a new one.
    new_segment_ = true;
  }
  DBS_RETURN_IF_ERROR(BuildDecoders(&rel, sit->second));
  rels_[m.oid] = std::move(rel);
  return Status::Ok();
}

ChangeSegment* PgChangeStream::SegmentFor(const TableRef& table) {
  const TableSchema& schema = schemas_[Key(table)];
  if (txn_.segments.empty() || !(txn_.segments.back().table == table) ||
      txn_.segments.back().truncate ||
      txn_.segments.back().rows.columns.size() != schema.columns.size() || new_segment_) {
    new_segment_ = false;
    ChangeSegment seg;
    seg.table = table;
    for (const Column& c : schema.columns) seg.rows.columns.emplace_back(c.type, c.element_type);
    txn_.segments.push_back(std::move(seg));
  }
  return &txn_.segments.back();
}

Status PgChangeStream::AppendRow(RelState* rel, const std::vector<TupleCell>& cells, bool key_only,
                                 RowOp op) {
  if (cells.size() != rel->names.size()) {
    return Status::Corruption("change of " + rel->table.QualifiedName() + " has " +
                              std::to_string(cells.size()) + " columns, its relation " +
                              std::to_string(rel->names.size()));
  }
  ChangeSegment* seg = SegmentFor(rel->table);
  const TableSchema& schema = schemas_[Key(rel->table)];
  DecodeScratch scratch;
  for (size_t i = 0; i < rel->columns.size(); ++i) {
    const ColumnDecoder& d = rel->columns[i];
    ColumnVector& col = seg->rows.columns[i];
    if (d.rel_index < 0) {
      col.AppendUnchanged();
      continue;
    }
    const TupleCell& cell = cells[static_cast<size_t>(d.rel_index)];
    Status s;
    switch (cell.kind) {
      case TupleCell::Kind::kNull:
        // An old key tuple ('K') sends only the key columns; the others are not known.
        if (key_only && !d.key) {
          col.AppendUnchanged();
        } else {
          col.AppendNull();
        }
        break;
      case TupleCell::Kind::kUnchanged:
        col.AppendUnchanged();
        break;
      case TupleCell::Kind::kText:
        s = DecodeTextField(d.text, cell.data, &col);
        break;
      case TupleCell::Kind::kBinary:
        if (!d.binary) {
          s = Status(StatusCode::kUnsupported, Retry::kRetry,
                     "binary value without a binary decoder (reopen the stream to switch to "
                     "text values)");
        } else {
          s = DecodeField(*d.binary, cell.data, &col, &scratch);
        }
        break;
    }
    if (!s.ok()) {
      // Keep the columns the same length: the bundle is dropped with the error anyway.
      return s.WithContext("decoding column " + schema.columns[i].name + " of " +
                           rel->table.QualifiedName() + " in transaction " + txn_.xid);
    }
  }
  seg->rows.ops.push_back(op);
  ++txn_rows_;
  return Status::Ok();
}

Status PgChangeStream::OnRow(const PgoutputMessage& m) {
  if (!txn_open_) return Status::Corruption("row change outside a transaction from the server");
  if (txn_skip_) return Status::Ok();
  auto it = rels_.find(m.oid);
  if (it == rels_.end()) {
    return Status::Corruption("row change for relation " + std::to_string(m.oid) +
                              " before its Relation message");
  }
  RelState& rel = it->second;
  if (!rel.followed) return Status::Ok();
  const size_t need = m.kind == PgoutputKind::kUpdate && m.old_kind ? 2 : 1;
  if (txn_rows_ > 0 && txn_rows_ + need > std::max<size_t>(options_.max_part_rows, 2)) {
    EmitPart();
  }
  switch (m.kind) {
    case PgoutputKind::kInsert:
      return AppendRow(&rel, m.new_tuple, false, RowOp::kInsert);
    case PgoutputKind::kUpdate:
      if (m.old_kind) {
        DBS_RETURN_IF_ERROR(AppendRow(&rel, m.old_tuple, m.old_kind == 'K', RowOp::kUpdateBefore));
      }
      return AppendRow(&rel, m.new_tuple, false, RowOp::kUpdate);
    case PgoutputKind::kDelete:
      return AppendRow(&rel, m.old_tuple, m.old_kind == 'K', RowOp::kDelete);
    default:
      return Status::Internal("not a row change");
  }
}

Status PgChangeStream::OnTruncate(const PgoutputMessage& m) {
  if (!txn_open_) return Status::Corruption("Truncate outside a transaction from the server");
  if (txn_skip_) return Status::Ok();
  for (uint32_t oid : m.truncate_oids) {
    auto it = rels_.find(oid);
    if (it == rels_.end()) {
      return Status::Corruption("Truncate of relation " + std::to_string(oid) +
                                " before its Relation message");
    }
    if (!it->second.followed) continue;
    ChangeSegment seg;
    seg.table = it->second.table;
    seg.truncate = true;
    txn_.segments.push_back(std::move(seg));
  }
  return Status::Ok();
}

Status PgChangeStream::Confirm(const SourcePosition& position) {
  if (position.kind != SourcePosition::Kind::kPgLsn) {
    return Status::InvalidArgument("Confirm: " + position.value + " is not a PostgreSQL LSN");
  }
  DBS_ASSIGN_OR_RETURN(uint64_t lsn, ParseLsn(position.value));
  if (lsn <= confirmed_lsn_) return Status::Ok();
  confirmed_lsn_ = lsn;
  if (!failed_.ok()) return failed_;
  Status s = SendStatus(false);
  if (!s.ok()) return Fail(std::move(s));
  return Status::Ok();
}

Result<TableSchema> PgChangeStream::TableSchemaOf(const TableRef& table) {
  auto it = schemas_.find(Key(table));
  if (it == schemas_.end() && table.schema.empty()) {
    for (const auto& [k, s] : schemas_) {
      if (s.name == table.name) return s;
    }
  }
  if (it == schemas_.end()) {
    return Status::NotFound("table " + table.QualifiedName() + " is not followed by this stream");
  }
  return it->second;
}

}  // namespace

std::string FormatLsn(uint64_t lsn) {
  // "%X/%X", without printf: this runs for every transaction.
  char buf[20];
  char* p = std::to_chars(buf, buf + 8, static_cast<uint32_t>(lsn >> 32), 16).ptr;
  *p++ = '/';
  p = std::to_chars(p, p + 8, static_cast<uint32_t>(lsn & 0xffffffffu), 16).ptr;
  for (char* c = buf; c < p; ++c) {
    if (*c >= 'a' && *c <= 'f') *c = static_cast<char>(*c - 'a' + 'A');
  }
  return std::string(buf, p);
}

Result<uint64_t> ParseLsn(std::string_view v) {
  const size_t slash = v.find('/');
  uint32_t hi = 0, lo = 0;
  auto parse = [](std::string_view s, uint32_t* out) {
    if (s.empty() || s.size() > 8) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
    return ec == std::errc() && p == s.data() + s.size();
  };
  if (slash == std::string_view::npos || !parse(v.substr(0, slash), &hi) ||
      !parse(v.substr(slash + 1), &lo)) {
    return Status::InvalidArgument("not a PostgreSQL LSN: '" + std::string(v) +
                                   "' (expected like 0/16B3748)");
  }
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

Result<CdcNames> ResolveCdcNames(const CdcOptions& options) {
  std::string def = "dbs_";
  for (char c : options.stream) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    def.push_back((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '_' ? l : '_');
  }
  if (def.size() > 63) def.resize(63);
  CdcNames n;
  n.slot = options.slot_name.empty() ? def : options.slot_name;
  n.publication = options.publication_name.empty() ? def : options.publication_name;
  if (options.slot_name.empty() && options.stream.empty()) {
    return Status::InvalidArgument("CDC needs a stream name or a slot name");
  }
  if (!ValidName(n.slot)) {
    return Status::InvalidArgument("replication slot name '" + n.slot +
                                   "' is invalid: use 1 to 63 lower-case letters, digits or _");
  }
  if (!ValidName(n.publication)) {
    return Status::InvalidArgument("publication name '" + n.publication +
                                   "' is invalid: use 1 to 63 lower-case letters, digits or _");
  }
  return n;
}

Status CheckPgCdc(PGconn* conn, const CdcOptions& options) {
  DBS_ASSIGN_OR_RETURN(CdcNames names, ResolveCdcNames(options));
  DBS_ASSIGN_OR_RETURN(
      ResultPtr res,
      Exec(conn,
           "SELECT current_setting('wal_level'), r.rolname, r.rolreplication, r.rolsuper, "
           "current_setting('max_replication_slots')::int, "
           "(SELECT count(*) FROM pg_replication_slots), "
           "current_setting('max_wal_senders')::int, "
           "has_database_privilege(current_database(), 'CREATE') "
           "FROM pg_roles r WHERE r.rolname = current_user",
           "checking the CDC settings"));
  const std::string wal_level(Text(res.get(), 0, 0));
  const std::string role(Text(res.get(), 0, 1));
  const bool replication = Bool(res.get(), 0, 2);
  const bool super = Bool(res.get(), 0, 3);
  if (wal_level != "logical") {
    return Status::FailedPrecondition(
        "wal_level is '" + wal_level +
        "' but change data capture needs logical decoding: set wal_level = logical (ALTER "
        "SYSTEM SET wal_level = logical, or in postgresql.conf) and restart PostgreSQL (the "
        "setting takes effect only after a restart)");
  }
  if (!replication && !super) {
    return Status::PermissionDenied(
        "role " + role +
        " may not stream changes: it needs the REPLICATION attribute or must be a superuser "
        "(ALTER ROLE " +
        QuoteIdent(role) + " REPLICATION)");
  }
  if (Int(res.get(), 0, 6) < 1) {
    return Status::FailedPrecondition(
        "max_wal_senders is 0: set it to at least 1 (10 is the default) and restart PostgreSQL");
  }
  DBS_ASSIGN_OR_RETURN(SlotInfo slot, LookupSlot(conn, names.slot));
  DBS_RETURN_IF_ERROR(CheckSlotUsable(conn, names.slot, slot));
  if (!slot.exists && Int(res.get(), 0, 5) >= Int(res.get(), 0, 4)) {
    return Status::FailedPrecondition(
        "no free replication slot for " + names.slot + ": all " +
        std::string(Text(res.get(), 0, 4)) +
        " (max_replication_slots) are used; drop unused slots (pg_replication_slots) or raise "
        "max_replication_slots and restart PostgreSQL");
  }
  if (slot.active) {
    return Status::FailedPrecondition("replication slot " + names.slot + " is in use by process " +
                                      slot.active_pid + ": stop the other reader first");
  }
  DBS_ASSIGN_OR_RETURN(
      ResultPtr pub,
      ExecParams(conn, "SELECT puballtables FROM pg_publication WHERE pubname = $1",
                 {names.publication}, "looking up publication " + names.publication));
  const bool pub_exists = PQntuples(pub.get()) > 0;
  if (!pub_exists && options.tables.empty() && !super) {
    return Status::PermissionDenied(
        "following every table needs a FOR ALL TABLES publication, which only a superuser can "
        "create: create publication " +
        names.publication + " as a superuser, or name the tables to follow");
  }
  if (!pub_exists && !super && !Bool(res.get(), 0, 7)) {
    return Status::PermissionDenied("role " + role + " may not create publication " +
                                    names.publication +
                                    ": GRANT CREATE ON DATABASE to it, or "
                                    "create the publication as a superuser");
  }
  DBS_ASSIGN_OR_RETURN(std::vector<RelationInfo> tables, ResolveTables(conn, options));
  for (const RelationInfo& t : tables) {
    const std::string name = QualifiedName(t.schema, t.name);
    DBS_ASSIGN_OR_RETURN(
        ResultPtr r,
        ExecParams(conn,
                   "SELECT c.relreplident, "
                   "EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND "
                   "(i.indisprimary OR (c.relreplident = 'i' AND i.indisreplident))), "
                   "pg_has_role(c.relowner, 'USAGE') "
                   "FROM pg_class c WHERE c.oid = $1",
                   {std::to_string(t.oid)}, "checking the replica identity of " + name));
    const std::string ident(Text(r.get(), 0, 0));
    const bool key = Bool(r.get(), 0, 1);
    if (ident == "n" || ((ident == "d" || ident == "i") && !key)) {
      return Status::FailedPrecondition(
          "table " + name + " has no usable replica identity (" +
          (ident == "n" ? std::string("REPLICA IDENTITY NOTHING")
                        : std::string("no primary key and REPLICA IDENTITY DEFAULT")) +
          "): its updates and deletes cannot be streamed; add a primary key, or run ALTER "
          "TABLE " +
          name + " REPLICA IDENTITY FULL");
    }
    if (!pub_exists && !super && !Bool(r.get(), 0, 2)) {
      return Status::PermissionDenied("role " + role + " does not own table " + name +
                                      " and so cannot add it to publication " + names.publication +
                                      ": create the publication as the owner or a superuser");
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<ChangeStream>> OpenPgChangeStream(const ConnectionConfig& config,
                                                         const CdcOptions& options) {
  DBS_ASSIGN_OR_RETURN(CdcNames names, ResolveCdcNames(options));
  auto stream = std::make_unique<PgChangeStream>(config, options, std::move(names));
  DBS_RETURN_IF_ERROR(stream->Open());
  return std::unique_ptr<ChangeStream>(std::move(stream));
}

Result<ExportedSlot> CreateSlotWithSnapshot(const ConnectionConfig& config,
                                            const CdcOptions& options) {
  DBS_ASSIGN_OR_RETURN(CdcNames names, ResolveCdcNames(options));
  const std::string where = config.Redacted();
  DBS_ASSIGN_OR_RETURN(ConnPtr control, Connect(config));
  DBS_ASSIGN_OR_RETURN(std::vector<RelationInfo> tables, ResolveTables(control.get(), options));
  // The publication must exist before the slot: pgoutput reads it as of each change's time.
  DBS_RETURN_IF_ERROR(
      EnsurePublication(control.get(), names.publication, tables, options.tables.empty()));
  DBS_ASSIGN_OR_RETURN(SlotInfo slot, LookupSlot(control.get(), names.slot));
  if (slot.exists) {
    if (slot.active) {
      return Status::FailedPrecondition("replication slot " + names.slot +
                                        " is in use by process " + slot.active_pid +
                                        ": stop the other reader before starting a new load");
    }
    Log(LogLevel::kWarn, kLog,
        "dropping existing replication slot " + names.slot + " (confirmed up to " +
            slot.confirmed_flush + "): a load with CDC starts afresh");
    DBS_RETURN_IF_ERROR(ExecParams(control.get(), "SELECT pg_drop_replication_slot($1)",
                                   {names.slot}, "dropping replication slot " + names.slot)
                            .status());
  }
  ExportedSlot out;
  DBS_ASSIGN_OR_RETURN(out.conn, Connect(config, /*replication=*/true));
  const int version = PQserverVersion(out.conn.get());
  const std::string sql = "CREATE_REPLICATION_SLOT " + QuoteIdent(names.slot) +
                          " LOGICAL pgoutput " +
                          (version >= 150000 ? "(SNAPSHOT 'export')" : "EXPORT_SNAPSHOT");
  ResultPtr res(PQexec(out.conn.get(), sql.c_str()));
  if (PQresultStatus(res.get()) != PGRES_TUPLES_OK) {
    return ReplicationError(out.conn.get(), res.get(),
                            "creating replication slot " + names.slot + " on " + where, names);
  }
  DBS_ASSIGN_OR_RETURN(uint64_t lsn, ParseLsn(Text(res.get(), 0, 1)));
  out.snapshot = Text(res.get(), 0, 2);
  out.position = LsnPosition(lsn);
  Log(LogLevel::kInfo, kLog,
      "created replication slot " + names.slot + " at " + out.position.value + " with snapshot " +
          out.snapshot);
  return out;
}

}  // namespace dbs::pg

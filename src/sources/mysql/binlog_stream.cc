#include "sources/mysql/binlog_stream.h"

#include <mysql.h>
// mysql.h first: mariadb_rpl.h relies on its types.
#include <mariadb_rpl.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

#include "core/logging.h"
#include "mysql/mysql_client.h"
#include "sources/mysql/binlog_event.h"
#include "sources/mysql/mysql_source.h"
#include "sources/mysql/mysql_text_decode.h"

namespace dbs {

using mysql::MysqlConnection;
namespace bl = mysql::binlog;

namespace {

constexpr const char* kLog = "binlog";

std::string Upper(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return o;
}

// --- a minimal SQL tokenizer for the DDL statements the stream has to recognize -------------

struct Token {
  std::string text;  // identifiers unquoted; keywords as written
  bool quoted = false;
  char symbol = 0;  // '.', ',', '(' ... for punctuation
};

std::vector<Token> Tokenize(std::string_view s, size_t max_tokens = 64) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size() && out.size() < max_tokens) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      // MySQL executable comments /*!NNNNN ... */ hold real SQL: read their body.
      size_t body = i + 2;
      if (body < s.size() && s[body] == '!') {
        ++body;
        while (body < s.size() && std::isdigit(static_cast<unsigned char>(s[body]))) ++body;
        i = body;
        continue;
      }
      size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 2;
    } else if (c == '*' && i + 1 < s.size() && s[i + 1] == '/') {
      i += 2;  // end of an executable comment
    } else if ((c == '-' && i + 1 < s.size() && s[i + 1] == '-') || c == '#') {
      size_t end = s.find('\n', i);
      i = end == std::string_view::npos ? s.size() : end + 1;
    } else if (c == '`' || c == '"') {
      Token t;
      t.quoted = true;
      size_t j = i + 1;
      while (j < s.size()) {
        if (s[j] == c) {
          if (j + 1 < s.size() && s[j + 1] == c) {
            t.text += c;
            j += 2;
            continue;
          }
          break;
        }
        t.text += s[j++];
      }
      i = j + 1;
      out.push_back(std::move(t));
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
               static_cast<unsigned char>(c) >= 0x80) {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' ||
                              s[j] == '$' || static_cast<unsigned char>(s[j]) >= 0x80)) {
        ++j;
      }
      out.push_back({std::string(s.substr(i, j - i)), false, 0});
      i = j;
    } else {
      Token t;
      t.symbol = c;
      t.text = std::string(1, c);
      out.push_back(std::move(t));
      ++i;
    }
  }
  return out;
}

bool Kw(const std::vector<Token>& t, size_t i, const char* word) {
  return i < t.size() && !t[i].quoted && t[i].symbol == 0 && Upper(t[i].text) == word;
}

// Reads [db.]name at t[*i]; advances *i.
std::optional<TableRef> ReadName(const std::vector<Token>& t, size_t* i,
                                 const std::string& default_db) {
  if (*i >= t.size() || t[*i].symbol != 0) return std::nullopt;
  TableRef r{default_db, t[*i].text};
  ++*i;
  if (*i + 1 < t.size() && t[*i].symbol == '.' && t[*i + 1].symbol == 0) {
    r.schema = r.name;
    r.name = t[*i + 1].text;
    *i += 2;
  }
  return r;
}

enum class DdlKind { kNone, kTruncate, kAlter, kCreate, kDrop, kRename, kOther };

struct Ddl {
  DdlKind kind = DdlKind::kNone;
  std::vector<TableRef> tables;  // affected (RENAME: old and new names)
  bool only_add_column_clauses = false;
  std::vector<std::string> added_names;  // ALTER: the names of ADD [COLUMN] clauses
};

Ddl ParseDdl(std::string_view stmt, const std::string& db) {
  Ddl d;
  std::vector<Token> t = Tokenize(stmt, 4096);
  size_t i = 0;
  if (Kw(t, i, "TRUNCATE")) {
    ++i;
    if (Kw(t, i, "TABLE")) ++i;
    d.kind = DdlKind::kTruncate;
    if (auto n = ReadName(t, &i, db)) d.tables.push_back(*n);
    return d;
  }
  if (Kw(t, i, "ALTER")) {
    ++i;
    while (Kw(t, i, "ONLINE") || Kw(t, i, "IGNORE")) ++i;
    if (!Kw(t, i, "TABLE")) return d;
    ++i;
    if (Kw(t, i, "IF") && Kw(t, i + 1, "EXISTS")) i += 2;
    d.kind = DdlKind::kAlter;
    auto n = ReadName(t, &i, db);
    if (!n) return d;
    d.tables.push_back(*n);
    // Clauses separated by top-level commas: each must be ADD [COLUMN] <name> ... (not an
    // index, key or constraint).
    bool all_add = i < t.size();
    int depth = 0;
    bool clause_start = true;
    for (; i < t.size(); ++i) {
      if (t[i].symbol == '(') ++depth;
      if (t[i].symbol == ')') --depth;
      if (depth == 0 && t[i].symbol == ',') {
        clause_start = true;
        continue;
      }
      if (clause_start) {
        clause_start = false;
        if (!Kw(t, i, "ADD")) {
          all_add = false;
          break;
        }
        size_t k = i + 1;
        if (Kw(t, k, "COLUMN")) ++k;
        if (Kw(t, k, "IF") && Kw(t, k + 1, "NOT")) k += 3;
        for (const char* w : {"INDEX", "KEY", "UNIQUE", "PRIMARY", "CONSTRAINT", "FOREIGN",
                              "FULLTEXT", "SPATIAL", "CHECK", "PARTITION", "PERIOD", "SYSTEM"}) {
          if (Kw(t, k, w)) all_add = false;
        }
        if (!all_add) break;
        if (k < t.size() && t[k].symbol == 0) {
          d.added_names.push_back(t[k].text);
        } else {
          all_add = false;  // ADD (a INT, b INT): fall back to comparing schemas
          break;
        }
      }
    }
    d.only_add_column_clauses = all_add;
    return d;
  }
  if (Kw(t, i, "CREATE")) {
    ++i;
    if (Kw(t, i, "OR") && Kw(t, i + 1, "REPLACE")) i += 2;
    if (Kw(t, i, "TEMPORARY")) return d;
    if (!Kw(t, i, "TABLE")) return d;
    ++i;
    if (Kw(t, i, "IF") && Kw(t, i + 1, "NOT") && Kw(t, i + 2, "EXISTS")) i += 3;
    d.kind = DdlKind::kCreate;
    if (auto n = ReadName(t, &i, db)) d.tables.push_back(*n);
    return d;
  }
  if (Kw(t, i, "DROP")) {
    ++i;
    if (Kw(t, i, "TEMPORARY")) return d;
    if (!Kw(t, i, "TABLE")) return d;
    ++i;
    if (Kw(t, i, "IF") && Kw(t, i + 1, "EXISTS")) i += 2;
    d.kind = DdlKind::kDrop;
    while (auto n = ReadName(t, &i, db)) {
      d.tables.push_back(*n);
      if (i < t.size() && t[i].symbol == ',') {
        ++i;
      } else {
        break;
      }
    }
    return d;
  }
  if (Kw(t, i, "RENAME") && Kw(t, i + 1, "TABLE")) {
    i += 2;
    d.kind = DdlKind::kRename;
    while (auto a = ReadName(t, &i, db)) {
      d.tables.push_back(*a);
      if (!Kw(t, i, "TO")) break;
      ++i;
      if (auto b = ReadName(t, &i, db)) d.tables.push_back(*b);
      if (i < t.size() && t[i].symbol == ',') {
        ++i;
      } else {
        break;
      }
    }
    return d;
  }
  d.kind = DdlKind::kOther;
  return d;
}

// --- GTID state --------------------------------------------------------------------------------

// The executed GTID set as the stream advances: MariaDB keeps the last GTID per domain, MySQL
// the intervals per source uuid.
class GtidState {
 public:
  bool empty() const { return maria_.empty() && mysql_.empty(); }

  Status Parse(const std::string& text) {
    maria_.clear();
    mysql_.clear();
    std::string s;
    for (char c : text) {
      if (!std::isspace(static_cast<unsigned char>(c))) s += c;
    }
    size_t p = 0;
    while (p < s.size()) {
      size_t comma = s.find(',', p);
      if (comma == std::string::npos) comma = s.size();
      std::string item = s.substr(p, comma - p);
      p = comma + 1;
      if (item.empty()) continue;
      auto colon = item.find(':');
      if (colon == std::string::npos) {
        unsigned long long d = 0, sv = 0, q = 0;
        char tail = 0;
        if (std::sscanf(item.c_str(), "%llu-%llu-%llu%c", &d, &sv, &q, &tail) != 3) {
          return Status::InvalidArgument("not a MariaDB GTID position: '" + text + "'");
        }
        bl::MariaGtid g;
        g.domain_id = static_cast<uint32_t>(d);
        g.server_id = static_cast<uint32_t>(sv);
        g.sequence = q;
        maria_[g.domain_id] = g;
      } else {
        auto& iv = mysql_[item.substr(0, colon)];
        size_t q = colon + 1;
        while (q <= item.size()) {
          size_t next = item.find(':', q);
          if (next == std::string::npos) next = item.size();
          std::string range = item.substr(q, next - q);
          unsigned long long a = 0, b = 0;
          if (std::sscanf(range.c_str(), "%llu-%llu", &a, &b) == 2) {
            iv.emplace_back(a, b);
          } else if (std::sscanf(range.c_str(), "%llu", &a) == 1) {
            iv.emplace_back(a, a);
          } else {
            return Status::InvalidArgument("not a MySQL GTID set: '" + text + "'");
          }
          q = next + 1;
        }
      }
    }
    return Status::Ok();
  }

  bool ContainsMaria(const bl::MariaGtid& g) const {
    auto it = maria_.find(g.domain_id);
    return it != maria_.end() && g.sequence <= it->second.sequence;
  }
  bool ContainsMysql(const bl::MysqlGtid& g) const {
    auto it = mysql_.find(g.uuid);
    if (it == mysql_.end()) return false;
    for (const auto& [a, b] : it->second) {
      if (a <= g.gno && g.gno <= b) return true;
    }
    return false;
  }
  void AddMaria(const bl::MariaGtid& g) { maria_[g.domain_id] = g; }
  void AddMysql(const bl::MysqlGtid& g) {
    auto& iv = mysql_[g.uuid];
    iv.emplace_back(g.gno, g.gno);
    std::sort(iv.begin(), iv.end());
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (const auto& r : iv) {
      if (!merged.empty() && r.first <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    iv = std::move(merged);
  }

  std::string ToString() const {
    std::string out;
    for (const auto& [d, g] : maria_) {
      if (!out.empty()) out += ',';
      out += g.ToString();
    }
    for (const auto& [uuid, iv] : mysql_) {
      if (!out.empty()) out += ',';
      out += uuid;
      for (const auto& [a, b] : iv) {
        out += ":" + std::to_string(a);
        if (b != a) out += "-" + std::to_string(b);
      }
    }
    return out;
  }

 private:
  std::map<uint32_t, bl::MariaGtid> maria_;
  std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> mysql_;
};

bool ParseFilePos(const std::string& v, std::string* file, uint64_t* offset) {
  auto colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= v.size()) return false;
  return mysql::ParseUInt64(v.substr(colon + 1), offset) && (*file = v.substr(0, colon), true);
}

// --- the stream --------------------------------------------------------------------------------

struct RplCloser {
  void operator()(MARIADB_RPL* r) const { mariadb_rpl_close(r); }
};
struct RplEventFreer {
  void operator()(MARIADB_RPL_EVENT* e) const { mariadb_free_rpl_event(e); }
};

struct TableState {
  TableSchema schema;
  // For the current table map: binlog column -> schema column (-1: not in the schema).
  uint64_t mapped_table_id = UINT64_MAX;
  std::vector<int> to_schema;
  std::vector<bool> schema_has_binlog;  // per schema column
};

class BinlogStream : public ChangeStream {
 public:
  BinlogStream(ConnectionConfig config, CdcOptions options)
      : config_(std::move(config)), options_(std::move(options)) {
    if (options_.max_part_rows < 2) options_.max_part_rows = 2;
  }
  ~BinlogStream() override {
    event_.reset();
    rpl_.reset();
  }

  Status Open();
  Result<ChangeEvent> Next(std::chrono::milliseconds timeout) override;
  Status Confirm(const SourcePosition& position) override {
    confirmed_ = position;  // the binlog has no slot: nothing to release on the server
    return Status::Ok();
  }
  Result<TableSchema> TableSchemaOf(const TableRef& table) override {
    TableRef t = Normalize(table);
    DBS_ASSIGN_OR_RETURN(TableState * ts, State(t));
    return ts->schema;
  }

 private:
  TableRef Normalize(const TableRef& t) const {
    return TableRef{t.schema.empty() ? config_.database : t.schema, t.name};
  }
  static std::string Key(const TableRef& t) { return t.schema + "." + t.name; }
  bool Followed(const TableRef& t) const;
  Result<TableState*> State(const TableRef& t);
  Status MapColumns(TableState* ts, const bl::TableMap& map, bool* stale);

  Result<std::string_view> FetchRaw();
  Status Handle(std::string_view raw);
  void BeginGroup();
  Status HandleQuery(const bl::Event& ev);
  Status HandleDdl(const bl::Query& q);
  Status HandleRows(const bl::Event& ev);
  void Commit(const bl::Event& ev);
  void FlushPart();
  SourcePosition CurrentPosition() const;
  ChangeSegment* Segment(const TableRef& t, const TableSchema& schema);

  ConnectionConfig config_;
  CdcOptions options_;
  std::unique_ptr<MysqlSource> control_;
  std::unique_ptr<MysqlConnection> conn_;
  std::unique_ptr<MARIADB_RPL, RplCloser> rpl_;
  std::unique_ptr<MARIADB_RPL_EVENT, RplEventFreer> event_;
  bool mariadb_ = false;

  bl::FormatDescription fd_;
  bl::ChecksumAlg alg_ = bl::ChecksumAlg::kOff;
  std::string file_;
  uint64_t offset_ = 0;
  GtidState gtid_;
  GtidState start_gtid_;
  bool skip_by_gtid_ = false;
  SourcePosition last_pos_;
  SourcePosition confirmed_;

  // The transaction being read.
  bool in_group_ = false;
  bool standalone_ = false;
  bool saw_begin_ = false;
  bool skip_group_ = false;
  bool parts_emitted_ = false;
  std::optional<bl::MariaGtid> maria_gtid_;
  std::optional<bl::MysqlGtid> mysql_gtid_;
  ChangeTxn cur_;
  std::vector<SchemaChange> schema_changes_;

  std::unordered_map<uint64_t, bl::TableMap> table_maps_;
  std::map<std::string, TableState> tables_;
  std::deque<ChangeEvent> ready_;
};

bool BinlogStream::Followed(const TableRef& t) const {
  if (options_.tables.empty()) {
    if (!config_.database.empty()) return t.schema == config_.database;
    static const char* kSystem[] = {"mysql", "information_schema", "performance_schema", "sys",
                                    "_dbstreams"};
    for (const char* s : kSystem) {
      if (t.schema == s) return false;
    }
    return true;
  }
  for (const TableRef& f : options_.tables) {
    if (Normalize(f) == t) return true;
  }
  return false;
}

Result<TableState*> BinlogStream::State(const TableRef& t) {
  auto it = tables_.find(Key(t));
  if (it != tables_.end()) return &it->second;
  DBS_ASSIGN_OR_RETURN(TableSchema schema, control_->Describe(t));
  TableState ts;
  ts.schema = std::move(schema);
  return &tables_.emplace(Key(t), std::move(ts)).first->second;
}

Status BinlogStream::MapColumns(TableState* ts, const bl::TableMap& map, bool* stale) {
  *stale = false;
  const size_t n = map.column_count();
  const size_t m = ts->schema.columns.size();
  ts->to_schema.assign(n, -1);
  ts->schema_has_binlog.assign(m, false);
  if (!map.column_names.empty()) {
    for (size_t i = 0; i < n; ++i) {
      const int k = ts->schema.FindColumn(map.column_names[i]);
      if (k < 0) {
        *stale = true;
        return Status::Ok();
      }
      ts->to_schema[i] = k;
      ts->schema_has_binlog[static_cast<size_t>(k)] = true;
    }
  } else {
    if (n != m) {
      *stale = true;
      return Status::Ok();
    }
    for (size_t i = 0; i < n; ++i) {
      ts->to_schema[i] = static_cast<int>(i);
      ts->schema_has_binlog[i] = true;
    }
  }
  ts->mapped_table_id = map.table_id;
  return Status::Ok();
}

Status BinlogStream::Open() {
  DBS_ASSIGN_OR_RETURN(control_, MysqlSource::Open(config_));
  mysql::ConnectOptions o;
  o.role = mysql::SessionRole::kRead;
  DBS_ASSIGN_OR_RETURN(conn_, MysqlConnection::Open(config_, o));
  mariadb_ = conn_->is_mariadb();
  const std::string ctx = "preparing the binlog stream on " + conn_->endpoint();

  DBS_ASSIGN_OR_RETURN(auto cs, conn_->Query("SELECT @@GLOBAL.binlog_checksum", ctx));
  const std::string checksum = !cs.empty() && cs[0][0] ? Upper(*cs[0][0]) : "NONE";
  alg_ = checksum == "CRC32" ? bl::ChecksumAlg::kCrc32 : bl::ChecksumAlg::kOff;
  DBS_RETURN_IF_ERROR(conn_->Exec("SET @master_binlog_checksum = @@GLOBAL.binlog_checksum", ctx));
  DBS_RETURN_IF_ERROR(conn_->Exec("SET @source_binlog_checksum = @@GLOBAL.binlog_checksum", ctx));
  // The fetch below blocks until an event arrives; on a quiet source only the server's
  // heartbeat ends it, so its period bounds how late Next(timeout) returns (wake_interval).
  const auto period = std::clamp<int64_t>(
      std::min(options_.heartbeat.count(), options_.wake_interval.count()), 10, 1000);
  DBS_RETURN_IF_ERROR(
      conn_->Exec("SET @master_heartbeat_period = " + std::to_string(period * 1'000'000), ctx));
  if (mariadb_) {
    DBS_RETURN_IF_ERROR(conn_->Exec("SET @mariadb_slave_capability = 4", ctx));
  }

  // Where to start.
  std::string start_file;
  uint64_t start_offset = 4;
  bool by_gtid = false;
  const SourcePosition& st = options_.start;
  auto gtid_at = [&](const std::string& file, uint64_t off) -> Result<std::string> {
    if (!mariadb_) return std::string();
    DBS_ASSIGN_OR_RETURN(auto r, conn_->Query("SELECT BINLOG_GTID_POS(" + conn_->Literal(file) +
                                                  ", " + std::to_string(off) + ")",
                                              ctx));
    if (r.empty() || !r[0][0]) {
      return Status::FailedPrecondition(
          "the binlog position " + file + ":" + std::to_string(off) + " is not in the binlog of " +
          conn_->endpoint() +
          " (the file was purged or the offset is not an event boundary): take a new snapshot");
    }
    return *r[0][0];
  };
  if (st.empty()) {
    auto ms = conn_->Query("SHOW MASTER STATUS", ctx);
    if (!ms.ok() && ms.status().code() == StatusCode::kInvalidArgument) {
      ms = conn_->Query("SHOW BINARY LOG STATUS", ctx);
    }
    if (!ms.ok()) return ms.status();
    if (ms->empty() || !(*ms)[0][0] || !(*ms)[0][1]) {
      return Status::FailedPrecondition("the binary log is off on " + conn_->endpoint() +
                                        ": start the server with log_bin and binlog_format=ROW");
    }
    start_file = *(*ms)[0][0];
    if (!mysql::ParseUInt64(*(*ms)[0][1], &start_offset)) {
      return Status::Internal("SHOW MASTER STATUS returned a bad position");
    }
    if (mariadb_) {
      DBS_ASSIGN_OR_RETURN(std::string g, gtid_at(start_file, start_offset));
      DBS_RETURN_IF_ERROR(gtid_.Parse(g));
    } else {
      auto g =
          conn_->Query("SELECT IF(@@GLOBAL.gtid_mode = 'ON', @@GLOBAL.gtid_executed, '')", ctx);
      if (g.ok() && !g->empty() && (*g)[0][0]) DBS_RETURN_IF_ERROR(gtid_.Parse(*(*g)[0][0]));
    }
  } else if (st.kind == SourcePosition::Kind::kMysqlFilePos) {
    if (!ParseFilePos(st.value, &start_file, &start_offset)) {
      return Status::InvalidArgument("not a binlog position: '" + st.value + "'");
    }
    if (mariadb_) {
      DBS_ASSIGN_OR_RETURN(std::string g, gtid_at(start_file, start_offset));
      DBS_RETURN_IF_ERROR(gtid_.Parse(g));
    }
  } else if (st.kind == SourcePosition::Kind::kMysqlGtid) {
    DBS_RETURN_IF_ERROR(start_gtid_.Parse(st.value));
    DBS_RETURN_IF_ERROR(gtid_.Parse(st.value));
    skip_by_gtid_ = true;
    if (mariadb_) {
      by_gtid = true;
      DBS_RETURN_IF_ERROR(
          conn_->Exec("SET @slave_connect_state = " + conn_->Literal(st.value), ctx));
      DBS_RETURN_IF_ERROR(conn_->Exec("SET @slave_gtid_strict_mode = 1", ctx));
      DBS_RETURN_IF_ERROR(conn_->Exec("SET @slave_gtid_ignore_duplicates = 0", ctx));
    } else if (!ParseFilePos(st.file_pos, &start_file, &start_offset)) {
      return Status::Unsupported(
          "starting a MySQL binlog stream from a GTID set alone is not supported: the position "
          "needs its file_pos (file:offset) as well");
    }
  } else {
    return Status::InvalidArgument("a MySQL change stream cannot start at a position of kind " +
                                   std::to_string(static_cast<int>(st.kind)));
  }
  file_ = start_file;
  offset_ = start_offset;
  last_pos_ = CurrentPosition();
  if (by_gtid) last_pos_ = st;

  const uint32_t server_id =
      options_.server_id != 0 ? options_.server_id : BinlogServerId(options_.stream);
  rpl_.reset(mariadb_rpl_init(conn_->handle()));
  if (!rpl_) return conn_->LastError(ctx);
  mariadb_rpl_optionsv(rpl_.get(), MARIADB_RPL_SERVER_ID, server_id);
  mariadb_rpl_optionsv(rpl_.get(), MARIADB_RPL_START, static_cast<unsigned long>(start_offset));
  mariadb_rpl_optionsv(rpl_.get(), MARIADB_RPL_FILENAME, by_gtid ? "" : start_file.c_str(),
                       by_gtid ? size_t{0} : start_file.size());
  mariadb_rpl_optionsv(rpl_.get(), MARIADB_RPL_FLAGS, 0u);
  if (mariadb_rpl_open(rpl_.get()) != 0) {
    Status s = conn_->LastError("opening the binlog dump on " + conn_->endpoint());
    return s;
  }
  Log(LogLevel::kInfo, kLog, "binlog stream opened",
      {F("endpoint", conn_->endpoint()), F("server_id", std::to_string(server_id)),
       F("start", by_gtid ? st.value : start_file + ":" + std::to_string(start_offset))});
  return Status::Ok();
}

SourcePosition BinlogStream::CurrentPosition() const {
  SourcePosition p;
  const std::string fp = file_.empty() ? std::string() : file_ + ":" + std::to_string(offset_);
  if (!gtid_.empty()) {
    p.kind = SourcePosition::Kind::kMysqlGtid;
    p.value = gtid_.ToString();
    p.file_pos = fp;
  } else {
    p.kind = SourcePosition::Kind::kMysqlFilePos;
    p.value = fp;
  }
  return p;
}

Result<std::string_view> BinlogStream::FetchRaw() {
  // A fresh event each time: on some errors libmariadb frees an event passed in for reuse,
  // which would make our own free a double free.
  event_.reset();
  MARIADB_RPL_EVENT* ev = mariadb_rpl_fetch(rpl_.get(), nullptr);
  if (ev == nullptr) {
    MYSQL* m = conn_->handle();
    const unsigned code = mysql_errno(m);
    if (code == 1236) {  // ER_MASTER_FATAL_ERROR_READING_BINLOG
      return Status::FailedPrecondition(
          "the server cannot continue the binlog stream from " +
          (last_pos_.value.empty() ? std::string("the requested position") : last_pos_.value) +
          " (" + mysql_error(m) +
          "): the binlog was purged or the GTID position is unknown to the server; take a new "
          "snapshot");
    }
    if (code == 0) {
      return Status::Unavailable("the server ended the binlog stream on " + conn_->endpoint() +
                                 "; reopen from the last position");
    }
    // Connection loss (client errors 2006/2013, a killed connection 1927, ...) is retryable:
    // the caller reopens from its last position.
    return conn_->LastError("reading the binlog from " + conn_->endpoint());
  }
  event_.reset(ev);
  std::string_view raw(reinterpret_cast<const char*>(ev->raw_data), ev->raw_data_size);
  // The packet starts with the OK byte (0x00) before the event.
  if (!raw.empty() && raw[0] == '\0' && raw.size() >= 1 + bl::kHeaderSize) {
    std::string_view rest = raw.substr(1);
    const uint32_t len = static_cast<uint8_t>(rest[9]) | static_cast<uint8_t>(rest[10]) << 8 |
                         static_cast<uint8_t>(rest[11]) << 16 |
                         static_cast<uint32_t>(static_cast<uint8_t>(rest[12])) << 24;
    if (len == rest.size()) raw = rest;
  }
  return raw;
}

Result<ChangeEvent> BinlogStream::Next(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (ready_.empty()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ChangeEvent idle;
      idle.kind = ChangeEvent::Kind::kIdle;
      idle.position = last_pos_;
      return idle;
    }
    DBS_ASSIGN_OR_RETURN(std::string_view raw, FetchRaw());
    Status s = Handle(raw);
    if (!s.ok()) {
      return s.WithContext("binlog " + file_ + ":" + std::to_string(offset_) + " on " +
                           conn_->endpoint());
    }
  }
  ChangeEvent e = std::move(ready_.front());
  ready_.pop_front();
  return e;
}

void BinlogStream::BeginGroup() {
  in_group_ = true;
  standalone_ = false;
  saw_begin_ = false;
  skip_group_ = false;
  parts_emitted_ = false;
  maria_gtid_.reset();
  mysql_gtid_.reset();
  cur_ = ChangeTxn{};
  schema_changes_.clear();
}

Status BinlogStream::Handle(std::string_view raw) {
  if (raw.size() < bl::kHeaderSize)
    return Status::Corruption("binlog: event shorter than 19 bytes");
  const uint8_t type = static_cast<uint8_t>(raw[4]);
  if (type == bl::kFormatDescriptionEvent) {
    DBS_ASSIGN_OR_RETURN(fd_, bl::ParseFormatDescription(raw));
    alg_ = fd_.checksum;
    return Status::Ok();
  }
  DBS_ASSIGN_OR_RETURN(bl::Event ev, bl::ParseEvent(raw, alg_, true));
  Status s;
  switch (type) {
    case bl::kRotateEvent: {
      DBS_ASSIGN_OR_RETURN(bl::Rotate rot, bl::ParseRotate(ev));
      file_ = rot.file;
      offset_ = rot.position;
      table_maps_.clear();
      return Status::Ok();
    }
    case bl::kHeartbeatEvent:
    case bl::kMysqlHeartbeatV2:
      return Status::Ok();
    case bl::kMariaGtidEvent: {
      DBS_ASSIGN_OR_RETURN(bl::MariaGtid g, bl::ParseMariaGtid(ev));
      BeginGroup();
      maria_gtid_ = g;
      standalone_ = g.standalone();
      skip_group_ = skip_by_gtid_ && start_gtid_.ContainsMaria(g);
      cur_.xid = g.ToString();
      break;
    }
    case bl::kMysqlGtidEvent: {
      DBS_ASSIGN_OR_RETURN(bl::MysqlGtid g, bl::ParseMysqlGtid(ev));
      BeginGroup();
      mysql_gtid_ = g;
      skip_group_ = skip_by_gtid_ && start_gtid_.ContainsMysql(g);
      cur_.xid = g.ToString();
      break;
    }
    case bl::kMysqlAnonymousGtidEvent:
      BeginGroup();
      break;
    case bl::kQueryEvent:
      s = HandleQuery(ev);
      break;
    case bl::kTableMapEvent: {
      DBS_ASSIGN_OR_RETURN(bl::TableMap map, bl::ParseTableMap(ev, fd_));
      table_maps_[map.table_id] = std::move(map);
      break;
    }
    case bl::kXidEvent:
      if (in_group_) Commit(ev);
      break;
    case bl::kMysqlTransactionPayloadEvent:
      return Status::Unsupported(
          "the binlog has compressed transactions (MySQL binlog_transaction_compression=ON), "
          "which are not supported: run SET GLOBAL binlog_transaction_compression = OFF");
    case bl::kXaPrepareEvent:
      if (!in_group_ || skip_group_ || (cur_.segments.empty() && !parts_emitted_)) {
        in_group_ = false;  // no followed rows: nothing lost
        break;
      }
      return Status::Unsupported(
          "the binlog has an XA PREPARE transaction, which the change stream does not support "
          "(its rows would be lost): avoid XA transactions on followed tables");
    default:
      if (bl::IsRowsEvent(type) || type == bl::kMysqlPartialUpdateRowsEvent ||
          (type >= bl::kMariaWriteRowsCompressedV1 && type <= bl::kMariaDeleteRowsCompressedV2)) {
        s = HandleRows(ev);
      }
      break;
  }
  if (ev.header.next_position != 0) offset_ = ev.header.next_position;
  return s;
}

Status BinlogStream::HandleQuery(const bl::Event& ev) {
  DBS_ASSIGN_OR_RETURN(bl::Query q, bl::ParseQuery(ev, fd_));
  std::vector<Token> t = Tokenize(q.statement, 3);
  if (Kw(t, 0, "BEGIN") || (Kw(t, 0, "START") && Kw(t, 1, "TRANSACTION")) ||
      (Kw(t, 0, "XA") && Kw(t, 1, "START"))) {
    if (!in_group_) BeginGroup();
    saw_begin_ = true;
    return Status::Ok();
  }
  if (Kw(t, 0, "COMMIT") || (Kw(t, 0, "XA") && Kw(t, 1, "COMMIT"))) {
    if (in_group_) Commit(ev);
    return Status::Ok();
  }
  if (Kw(t, 0, "ROLLBACK") && !Kw(t, 1, "TO")) {
    in_group_ = false;
    cur_ = ChangeTxn{};
    return Status::Ok();
  }
  if (!in_group_) BeginGroup();
  if (!skip_group_) DBS_RETURN_IF_ERROR(HandleDdl(q));
  // MariaDB's GTID event says whether its group ends here (standalone, e.g. DDL) or with an
  // XID/COMMIT (SAVEPOINT and ROLLBACK TO statements inside a transaction); elsewhere a
  // statement outside BEGIN .. COMMIT is its own transaction.
  if (maria_gtid_ ? standalone_ : !saw_begin_) {
    // A DDL (or a statement outside BEGIN/COMMIT) is its own transaction; the event's end is
    // the position after it.
    offset_ = ev.header.next_position != 0 ? ev.header.next_position : offset_;
    Commit(ev);
  }
  return Status::Ok();
}

Status BinlogStream::HandleDdl(const bl::Query& q) {
  Ddl d = ParseDdl(q.statement, q.database);
  if (d.kind == DdlKind::kNone || d.kind == DdlKind::kOther) return Status::Ok();
  for (size_t k = 0; k < d.tables.size(); ++k) {
    const TableRef t = d.tables[k];
    if (!Followed(t)) continue;
    switch (d.kind) {
      case DdlKind::kTruncate: {
        ChangeSegment seg;
        seg.table = t;
        seg.truncate = true;
        cur_.segments.push_back(std::move(seg));
        break;
      }
      case DdlKind::kCreate:
        tables_.erase(Key(t));
        break;
      case DdlKind::kAlter: {
        std::optional<TableSchema> old;
        if (auto it = tables_.find(Key(t)); it != tables_.end()) old = it->second.schema;
        tables_.erase(Key(t));
        auto st = State(t);
        if (!st.ok()) {
          return Status::FailedPrecondition("table " + t.QualifiedName() +
                                            " cannot be described after the statement '" +
                                            q.statement + "': " + st.status().message());
        }
        SchemaChange sc;
        sc.table = t;
        sc.schema = (*st)->schema;
        sc.statement = q.statement;
        if (old) {
          // The statement is authoritative (the table is described as it is now, possibly
          // after later DDL): only ADD COLUMN clauses, and every old column still there.
          bool kept = true;
          for (const Column& c : old->columns) {
            if (sc.schema.FindColumn(c.name) < 0) kept = false;
          }
          if (d.only_add_column_clauses) {
            sc.added_columns = d.added_names;
          } else {
            for (const Column& c : sc.schema.columns) {
              if (old->FindColumn(c.name) < 0) sc.added_columns.push_back(c.name);
            }
          }
          sc.only_added_columns = kept && d.only_add_column_clauses && !d.added_names.empty();
        }
        schema_changes_.push_back(std::move(sc));
        break;
      }
      case DdlKind::kDrop:
      case DdlKind::kRename:
        tables_.erase(Key(t));
        if (d.kind == DdlKind::kRename && k % 2 == 1) break;  // the new name of a rename
        return Status::FailedPrecondition("followed table " + t.QualifiedName() + " was " +
                                          (d.kind == DdlKind::kDrop ? "dropped" : "renamed") +
                                          " in the source by '" + q.statement +
                                          "': remove it from the stream or take a new snapshot");
      default:
        break;
    }
  }
  return Status::Ok();
}

ChangeSegment* BinlogStream::Segment(const TableRef& t, const TableSchema& schema) {
  if (!cur_.segments.empty() && cur_.segments.back().table == t && !cur_.segments.back().truncate) {
    return &cur_.segments.back();
  }
  ChangeSegment seg;
  seg.table = t;
  for (const Column& c : schema.columns) seg.rows.columns.emplace_back(c.type, c.element_type);
  cur_.segments.push_back(std::move(seg));
  return &cur_.segments.back();
}

void BinlogStream::FlushPart() {
  ChangeEvent e;
  e.kind = ChangeEvent::Kind::kTransaction;
  e.txn = std::move(cur_);
  e.txn.final = false;
  e.txn.position = last_pos_;  // resuming repeats the whole transaction
  e.position = last_pos_;
  cur_ = ChangeTxn{};
  cur_.xid = e.txn.xid;
  cur_.commit_time_us = e.txn.commit_time_us;
  parts_emitted_ = true;
  ready_.push_back(std::move(e));
}

Status BinlogStream::HandleRows(const bl::Event& ev) {
  DBS_ASSIGN_OR_RETURN(bl::RowsEvent rows, bl::ParseRowsEvent(ev, fd_));
  if (!in_group_) BeginGroup();  // a rows event outside a group (should not happen)
  if (skip_group_) return Status::Ok();
  auto it = table_maps_.find(rows.table_id);
  if (it == table_maps_.end()) {
    return Status::Corruption("binlog: rows event for table id " + std::to_string(rows.table_id) +
                              " without a preceding table map");
  }
  const bl::TableMap& map = it->second;
  const TableRef t{map.database, map.table};
  if (!Followed(t)) return Status::Ok();
  if (rows.column_count != map.column_count()) {
    return Status::Corruption("binlog: rows event for " + t.QualifiedName() + " has " +
                              std::to_string(rows.column_count) + " columns, its table map " +
                              std::to_string(map.column_count()));
  }
  DBS_ASSIGN_OR_RETURN(TableState * ts, State(t));
  if (ts->mapped_table_id != map.table_id) {
    bool stale = false;
    DBS_RETURN_IF_ERROR(MapColumns(ts, map, &stale));
    if (stale) {
      tables_.erase(Key(t));
      DBS_ASSIGN_OR_RETURN(ts, State(t));
      DBS_RETURN_IF_ERROR(MapColumns(ts, map, &stale));
      if (stale) {
        return Status::FailedPrecondition(
            "the binlog rows of " + t.QualifiedName() + " have " +
            std::to_string(map.column_count()) +
            " columns that do not match the table as it is now (" +
            std::to_string(ts->schema.columns.size()) +
            " columns): the table changed after these changes were written; take a new "
            "snapshot");
      }
    }
  }
  if (cur_.commit_time_us == 0) cur_.commit_time_us = int64_t{ev.header.timestamp} * 1'000'000;
  const size_t per_row = rows.kind == bl::RowsKind::kUpdate ? 2 : 1;
  size_t pos = 0;
  std::vector<bl::ColumnTarget> targets(map.column_count());
  while (pos < rows.rows.size()) {
    if (cur_.rows() > 0 && cur_.rows() + per_row > options_.max_part_rows) FlushPart();
    ChangeSegment* seg = Segment(t, ts->schema);
    for (size_t i = 0; i < targets.size(); ++i) {
      const int k = ts->to_schema[i];
      targets[i].column = k >= 0 ? &ts->schema.columns[static_cast<size_t>(k)] : nullptr;
      targets[i].out = k >= 0 ? &seg->rows.columns[static_cast<size_t>(k)] : nullptr;
    }
    auto image = [&](const std::vector<bool>& present, RowOp op) -> Status {
      DBS_RETURN_IF_ERROR(bl::DecodeRow(map, present, rows.rows, &pos, targets));
      for (size_t c = 0; c < ts->schema_has_binlog.size(); ++c) {
        if (!ts->schema_has_binlog[c]) seg->rows.columns[c].AppendUnchanged();
      }
      seg->rows.ops.push_back(op);
      return Status::Ok();
    };
    Status s;
    switch (rows.kind) {
      case bl::RowsKind::kWrite:
        s = image(rows.present, RowOp::kInsert);
        break;
      case bl::RowsKind::kDelete:
        s = image(rows.present, RowOp::kDelete);
        break;
      case bl::RowsKind::kUpdate:
        s = image(rows.present, RowOp::kUpdateBefore);
        if (s.ok()) s = image(rows.present_after, RowOp::kUpdate);
        break;
    }
    if (!s.ok()) return s.WithContext("decoding a row of " + t.QualifiedName());
  }
  return Status::Ok();
}

void BinlogStream::Commit(const bl::Event& ev) {
  if (ev.header.next_position != 0) offset_ = ev.header.next_position;
  const bool skipped = skip_group_;
  if (!skipped) {
    if (maria_gtid_) gtid_.AddMaria(*maria_gtid_);
    if (mysql_gtid_) gtid_.AddMysql(*mysql_gtid_);
  }
  in_group_ = false;
  if (skipped) return;
  last_pos_ = CurrentPosition();
  if (!cur_.segments.empty() || parts_emitted_) {
    ChangeEvent e;
    e.kind = ChangeEvent::Kind::kTransaction;
    e.txn = std::move(cur_);
    e.txn.final = true;
    e.txn.position = last_pos_;
    if (e.txn.xid.empty()) {
      e.txn.xid =
          last_pos_.kind == SourcePosition::Kind::kMysqlGtid ? last_pos_.file_pos : last_pos_.value;
    }
    // The commit event's time (rows events carry their statement's start time).
    e.txn.commit_time_us = int64_t{ev.header.timestamp} * 1'000'000;
    e.position = last_pos_;
    ready_.push_back(std::move(e));
  }
  for (SchemaChange& sc : schema_changes_) {
    ChangeEvent e;
    e.kind = ChangeEvent::Kind::kSchemaChange;
    e.schema_change = std::move(sc);
    e.position = last_pos_;
    ready_.push_back(std::move(e));
  }
  schema_changes_.clear();
  cur_ = ChangeTxn{};
}

}  // namespace

uint32_t BinlogServerId(const std::string& stream) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (char c : stream) {
    h ^= static_cast<uint8_t>(c);
    h *= 16777619u;
  }
  return 100000u + h % (0x7FFFFFFFu - 100000u);
}

Result<std::unique_ptr<ChangeStream>> OpenBinlogStream(const ConnectionConfig& config,
                                                       const CdcOptions& options) {
  auto s = std::make_unique<BinlogStream>(config, options);
  DBS_RETURN_IF_ERROR(s->Open());
  return std::unique_ptr<ChangeStream>(std::move(s));
}

}  // namespace dbs

#include "federated/federated.h"
#include "federated/result_stream.h"
#include "sources/files/duck.h"
#include "sources/files/duck_read.h"

#include <duckdb.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "core/logging.h"
#include "core/temporal.h"
#include "federated/pushdown.h"
#include "federated/s3_urls.h"
#include "mysql/mysql_client.h"
#include "postgres/pg_client.h"
#include "sources/files/duck_vector.h"
#include "sources/files/file_source.h"
#include "sources/files/remote.h"
#include "sources/mysql/mysql_source.h"
#include "sources/postgres/postgres_source.h"
#include "sources/source.h"

namespace dbs::federated {

using nlohmann::json;

namespace {

constexpr const char kLog[] = "federated";
constexpr size_t kMaxBundleBytes = 16u << 20;

// --- types --------------------------------------------------------------------------------

// The DuckDB type a column is offered as (see docs/federated.md for the mapping).
duckdb_logical_type DuckType(const Column& c) {
  switch (c.type) {
    case LogicalType::kBool:
      return duckdb_create_logical_type(DUCKDB_TYPE_BOOLEAN);
    case LogicalType::kInt8:
      return duckdb_create_logical_type(DUCKDB_TYPE_TINYINT);
    case LogicalType::kInt16:
      return duckdb_create_logical_type(DUCKDB_TYPE_SMALLINT);
    case LogicalType::kInt32:
      return duckdb_create_logical_type(DUCKDB_TYPE_INTEGER);
    case LogicalType::kInt64:
      return duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
    case LogicalType::kUInt8:
      return duckdb_create_logical_type(DUCKDB_TYPE_UTINYINT);
    case LogicalType::kUInt16:
      return duckdb_create_logical_type(DUCKDB_TYPE_USMALLINT);
    case LogicalType::kUInt32:
      return duckdb_create_logical_type(DUCKDB_TYPE_UINTEGER);
    case LogicalType::kUInt64:
      return duckdb_create_logical_type(DUCKDB_TYPE_UBIGINT);
    case LogicalType::kFloat32:
      return duckdb_create_logical_type(DUCKDB_TYPE_FLOAT);
    case LogicalType::kFloat64:
      return duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
    case LogicalType::kDecimal:
      if (c.precision && *c.precision >= 1 && *c.precision <= 38) {
        return duckdb_create_decimal_type(static_cast<uint8_t>(*c.precision),
                                          static_cast<uint8_t>(c.scale.value_or(0)));
      }
      return duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
    case LogicalType::kBytes:
      return duckdb_create_logical_type(DUCKDB_TYPE_BLOB);
    case LogicalType::kDate:
      return duckdb_create_logical_type(DUCKDB_TYPE_DATE);
    case LogicalType::kTime:
      return duckdb_create_logical_type(DUCKDB_TYPE_TIME);
    case LogicalType::kTimestamp:
      return duckdb_create_logical_type(DUCKDB_TYPE_TIMESTAMP);
    case LogicalType::kTimestampTz:
      return duckdb_create_logical_type(DUCKDB_TYPE_TIMESTAMP_TZ);
    case LogicalType::kInterval:
      return duckdb_create_logical_type(DUCKDB_TYPE_INTERVAL);
    default:
      return duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  }
}

bool IsNumeric(LogicalType t) {
  return IsSignedInt(t) || IsUnsignedInt(t) || t == LogicalType::kFloat32 ||
         t == LogicalType::kFloat64 || t == LogicalType::kDecimal;
}

// --- what a source is asked for -----------------------------------------------------------

// The first error a source reader reported during a statement (DuckDB only passes on text).
struct SourceError {
  std::mutex mu;
  std::optional<Status> status;
  void Record(const std::string& alias, const Status& s) {
    std::lock_guard<std::mutex> l(mu);
    if (!status) status = Status(s.code(), alias + ": " + s.message());
  }
};

// A member's own source. Not Source::Open: that one opens federated sources too, and so
// lives above this library (sources/source.cc).
Result<std::unique_ptr<Source>> OpenMember(const ConnectionConfig& c) {
  switch (c.engine) {
    case Engine::kPostgres:
      return OpenPostgresSource(c);
    case Engine::kMysql:
      return OpenMysqlSource(c);
    case Engine::kFile:
      return OpenFileSource(c);
    case Engine::kFederated:
      break;
  }
  return Status::InvalidArgument("a federated source cannot name another federated source");
}

// One source table of the statement: the table function's extra info.
struct ScanTarget {
  std::string alias;     // as the request wrote it
  std::string function;  // dbs_scan_<n>
  Source* source = nullptr;
  std::mutex* source_mu = nullptr;
  Engine engine = Engine::kPostgres;
  TableSchema table;
  std::string filter;  // source SQL; empty: none
  const FederatedOptions* options = nullptr;
  SourceError* error = nullptr;

  std::string Quote(const std::string& name) const {
    return engine == Engine::kMysql ? mysql::QuoteName(name) : pg::QuoteIdent(name);
  }
  std::string Statement(const std::vector<std::string>& columns) const {
    std::string sql = "SELECT ";
    for (size_t i = 0; i < columns.size(); ++i) sql += (i ? ", " : "") + Quote(columns[i]);
    sql += " FROM ";
    sql += engine == Engine::kMysql ? mysql::QuoteQualified(table.schema, table.name)
                                    : pg::QualifiedName(table.schema, table.name);
    if (!filter.empty()) sql += " WHERE " + filter;
    return sql;
  }
};

std::string StringLiteral(Engine engine, const std::string& s) {
  if (engine != Engine::kMysql) return pg::QuoteLiteral(s);
  // The readers' MySQL sessions keep backslash escapes (sql_mode NO_ENGINE_SUBSTITUTION).
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "''";
    else if (c == '\\')
      out += "\\\\";
    else if (c == '\0')
      out += "\\0";
    else
      out += c;
  }
  return out + "'";
}

// A constant in the source's SQL for a column of type `t`; nullopt when not sent.
std::optional<std::string> Literal(Engine engine, LogicalType t, const json& value) {
  const json& type = value["type"];
  const std::string id = type.is_object() ? type.value("id", "") : "";
  const json& v = value["value"];
  if (IsNumeric(t)) {
    static const std::set<std::string> ints = {"TINYINT",  "SMALLINT",  "INTEGER",  "BIGINT",
                                               "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"};
    if (ints.count(id) && v.is_number_integer()) return v.dump();
    if (id == "DECIMAL" && v.is_number_integer() && type["type_info"].is_object()) {
      const int scale = type["type_info"].value("scale", 0);
      std::string digits =
          std::to_string(v.get<int64_t>() < 0 ? -v.get<int64_t>() : v.get<int64_t>());
      while (static_cast<int>(digits.size()) <= scale) digits.insert(0, "0");
      std::string out = (v.get<int64_t>() < 0 ? "-" : "") + digits.substr(0, digits.size() - scale);
      if (scale > 0) out += "." + digits.substr(digits.size() - scale);
      return out;
    }
    if ((id == "DOUBLE" || id == "FLOAT") && v.is_number() && std::isfinite(v.get<double>())) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", v.get<double>());
      return std::string(buf);
    }
    return std::nullopt;
  }
  if ((t == LogicalType::kText || t == LogicalType::kEnum) && id == "VARCHAR" && v.is_string()) {
    return StringLiteral(engine, v.get<std::string>());
  }
  return std::nullopt;
}

// The source SQL of the predicates that can be sent (AND of them), "" when none.
std::string FilterSql(const ScanTarget& t, const std::vector<Predicate>& preds) {
  std::string out;
  for (const Predicate& p : preds) {
    int ci = -1;
    for (size_t i = 0; i < t.table.columns.size(); ++i) {
      if (Lower(t.table.columns[i].name) == Lower(p.column)) ci = static_cast<int>(i);
    }
    if (ci < 0) continue;
    const Column& col = t.table.columns[static_cast<size_t>(ci)];
    const std::string name = t.Quote(col.name);
    std::string sql;
    switch (p.kind) {
      case Predicate::Kind::kIsNull:
        sql = name + " IS NULL";
        break;
      case Predicate::Kind::kIsNotNull:
        sql = name + " IS NOT NULL";
        break;
      case Predicate::Kind::kCompare: {
        // Text compares by collation at the source: only equality is sent (a case- or
        // pad-insensitive collation then reads a superset, which DuckDB narrows).
        if (!IsNumeric(col.type) && p.op != "=") continue;
        auto lit = Literal(t.engine, col.type, p.values[0]);
        if (!lit) continue;
        sql = name + " " + p.op + " " + *lit;
        break;
      }
      case Predicate::Kind::kIn: {
        std::string list;
        bool ok = true;
        for (const json& v : p.values) {
          auto lit = Literal(t.engine, col.type, v);
          if (!lit)
            ok = false;
          else
            list += (list.empty() ? "" : ", ") + *lit;
        }
        if (!ok) continue;
        sql = name + " IN (" + list + ")";
        break;
      }
    }
    out += (out.empty() ? "(" : " AND (") + sql + ")";
  }
  return out;
}

// --- the table function --------------------------------------------------------------------

struct GlobalScan {
  std::vector<int> out_to_read;  // output column -> index in spec.columns; -1: no data (NULL)
  ReadSpec spec;
  std::unique_ptr<Snapshot> snapshot;
  std::mutex mu;
  std::vector<KeyRange> ranges;
  size_t next = 0;
};

struct LocalScan {
  std::unique_ptr<RowReader> reader;
  bool reader_done = true;
  Bundle bundle;
  size_t pos = 0;
};

void ScanBind(duckdb_bind_info info) {
  auto* t = static_cast<ScanTarget*>(duckdb_bind_get_extra_info(info));
  for (const Column& c : t->table.columns) {
    duckdb_logical_type lt = DuckType(c);
    duckdb_bind_add_result_column(info, c.name.c_str(), lt);
    duckdb_destroy_logical_type(&lt);
  }
  if (t->table.estimated_rows) duckdb_bind_set_cardinality(info, *t->table.estimated_rows, false);
}

void ScanInit(duckdb_init_info info) {
  auto* t = static_cast<ScanTarget*>(duckdb_init_get_extra_info(info));
  auto g = std::make_unique<GlobalScan>();
  g->spec.table = t->table;
  g->spec.filter = t->filter;
  const idx_t n = duckdb_init_get_column_count(info);
  for (idx_t i = 0; i < n; ++i) {
    const idx_t ci = duckdb_init_get_column_index(info, i);
    if (ci < t->table.columns.size()) {
      g->out_to_read.push_back(static_cast<int>(g->spec.columns.size()));
      g->spec.columns.push_back(t->table.columns[ci].name);
    } else {
      g->out_to_read.push_back(-1);  // a virtual column (row id): nothing to read
    }
  }
  if (g->spec.columns.empty()) {
    // count(*) and the like: read the narrowest thing there is, the key or the first column.
    g->spec.columns.push_back(t->table.primary_key.empty() ? t->table.columns.at(0).name
                                                           : t->table.primary_key[0]);
  }
  Log(LogLevel::kInfo, kLog, "reading a source table",
      {F("alias", t->alias), F("statement", t->Statement(g->spec.columns))});
  Status s;
  {
    std::lock_guard<std::mutex> l(*t->source_mu);
    auto ranges = t->source->Split(t->table, t->options->rows_per_chunk);
    if (!ranges.ok()) {
      s = ranges.status();
    } else {
      g->ranges = std::move(*ranges);
      // A source that does not split the table is read whole, by one reader.
      if (g->ranges.empty()) g->ranges.push_back(KeyRange{});
      const int readers =
          std::max(1, std::min(t->options->threads, static_cast<int>(g->ranges.size())));
      auto snap = t->source->BeginSnapshot(readers);
      if (snap.ok()) {
        g->snapshot = std::move(*snap);
        duckdb_init_set_max_threads(info, static_cast<idx_t>(readers));
      } else {
        s = snap.status();
      }
    }
  }
  if (!s.ok()) {
    t->error->Record(t->alias, s);
    duckdb_init_set_error(info, (t->alias + ": " + s.ToString()).c_str());
    return;
  }
  duckdb_init_set_init_data(info, g.release(), [](void* p) { delete static_cast<GlobalScan*>(p); });
}

void ScanLocalInit(duckdb_init_info info) {
  duckdb_init_set_init_data(info, new LocalScan(),
                            [](void* p) { delete static_cast<LocalScan*>(p); });
}

// Copies rows [from, from+count) of `src` into `dst` (a vector of DuckType(col)).
void CopyColumn(const Column& col, const ColumnVector& src, size_t from, size_t count,
                duckdb_vector dst) {
  duckdb_vector_ensure_validity_writable(dst);
  uint64_t* validity = duckdb_vector_get_validity(dst);
  for (size_t r = 0; r < count; ++r) {
    const size_t row = from + r;
    if (src.IsNull(row)) {
      duckdb_validity_set_row_invalid(validity, r);
      continue;
    }
    if (PutFixedWidth(col.type, src, row, dst, r)) continue;
    switch (col.type) {
      case LogicalType::kDecimal: {
        const std::string_view text = src.GetBytes(row);
        if (!(col.precision && *col.precision >= 1 && *col.precision <= 38)) {
          VectorData<double>(dst)[r] = std::strtod(std::string(text).c_str(), nullptr);
          break;
        }
        __int128 v = 0;
        if (!ScaledDecimal(text, col.scale.value_or(0), &v)) {
          duckdb_validity_set_row_invalid(validity, r);  // NaN or infinity: no DECIMAL value
          break;
        }
        PutDecimal(dst, r, *col.precision, v);
        break;
      }
      case LogicalType::kBytes:
      case LogicalType::kText:
      case LogicalType::kJson:
      case LogicalType::kEnum:
      case LogicalType::kSet: {
        const std::string_view b = src.GetBytes(row);
        duckdb_vector_assign_string_element_len(dst, r, b.data(), b.size());
        break;
      }
      case LogicalType::kDate: {
        const int32_t d = src.GetDate(row);
        const TemporalKind k = DateKind(d);
        if (k == TemporalKind::kZeroDate) {
          duckdb_validity_set_row_invalid(validity, r);
        } else if (k == TemporalKind::kPosInfinity) {
          VectorData<int32_t>(dst)[r] = std::numeric_limits<int32_t>::max();
        } else if (k == TemporalKind::kNegInfinity) {
          VectorData<int32_t>(dst)[r] = -std::numeric_limits<int32_t>::max();
        } else {
          VectorData<int32_t>(dst)[r] = static_cast<int32_t>(d + kUnixToEpochDays);
        }
        break;
      }
      case LogicalType::kTime:
        VectorData<int64_t>(dst)[r] = src.GetMicros(row);
        break;
      case LogicalType::kTimestamp:
      case LogicalType::kTimestampTz: {
        const int64_t ts = src.GetMicros(row);
        const TemporalKind k = TimestampKind(ts);
        if (k == TemporalKind::kZeroDate) {
          duckdb_validity_set_row_invalid(validity, r);
        } else if (k == TemporalKind::kPosInfinity) {
          VectorData<int64_t>(dst)[r] = std::numeric_limits<int64_t>::max();
        } else if (k == TemporalKind::kNegInfinity) {
          VectorData<int64_t>(dst)[r] = -std::numeric_limits<int64_t>::max();
        } else {
          VectorData<int64_t>(dst)[r] = ts + kUnixToEpochMicros;
        }
        break;
      }
      case LogicalType::kInterval: {
        const Interval iv = src.GetInterval(row);
        VectorData<duckdb_interval>(dst)[r] = duckdb_interval{iv.months, iv.days, iv.micros};
        break;
      }
      default: {
        const std::string text = src.Get(row).ToString();
        duckdb_vector_assign_string_element_len(dst, r, text.data(), text.size());
        break;
      }
    }
  }
}

void Scan(duckdb_function_info info, duckdb_data_chunk output) {
  auto* t = static_cast<ScanTarget*>(duckdb_function_get_extra_info(info));
  auto* g = static_cast<GlobalScan*>(duckdb_function_get_init_data(info));
  auto* l = static_cast<LocalScan*>(duckdb_function_get_local_init_data(info));
  const size_t cap = duckdb_vector_size();
  auto fail = [&](const Status& s) {
    t->error->Record(t->alias, s);
    duckdb_function_set_error(info, (t->alias + ": " + s.ToString()).c_str());
    duckdb_data_chunk_set_size(output, 0);
  };
  while (true) {
    if (l->pos < l->bundle.rows()) {
      const size_t n = std::min(cap, l->bundle.rows() - l->pos);
      for (size_t o = 0; o < g->out_to_read.size(); ++o) {
        duckdb_vector v = duckdb_data_chunk_get_vector(output, o);
        const int k = g->out_to_read[o];
        if (k < 0) {
          duckdb_vector_ensure_validity_writable(v);
          uint64_t* validity = duckdb_vector_get_validity(v);
          for (size_t r = 0; r < n; ++r) duckdb_validity_set_row_invalid(validity, r);
          continue;
        }
        const std::string& name = g->spec.columns[static_cast<size_t>(k)];
        const Column& col = t->table.columns[static_cast<size_t>(t->table.FindColumn(name))];
        CopyColumn(col, l->bundle.columns[static_cast<size_t>(k)], l->pos, n, v);
      }
      l->pos += n;
      duckdb_data_chunk_set_size(output, n);
      return;
    }
    if (l->reader && !l->reader_done) {
      // The readers append to columns of the read columns' types.
      l->bundle = Bundle{};
      for (const std::string& name : g->spec.columns) {
        const Column& col = t->table.columns[static_cast<size_t>(t->table.FindColumn(name))];
        l->bundle.columns.emplace_back(col.type, col.element_type);
      }
      l->pos = 0;
      auto more = l->reader->Next(&l->bundle, cap, kMaxBundleBytes);
      if (!more.ok()) return fail(more.status());
      if (!*more) {
        l->reader_done = true;
        l->reader.reset();
      }
      continue;
    }
    ReadSpec spec;
    {
      std::lock_guard<std::mutex> lock(g->mu);
      if (g->next >= g->ranges.size()) {
        duckdb_data_chunk_set_size(output, 0);
        return;
      }
      spec = g->spec;
      const KeyRange& range = g->ranges[g->next++];
      if (range.files || range.pages || (!range.column.empty() && (range.lower || range.upper))) {
        spec.range = range;
      }
    }
    auto reader = g->snapshot->OpenReader(spec);
    if (!reader.ok()) return fail(reader.status());
    l->reader = std::move(*reader);
    l->reader_done = false;
  }
}

// --- one call: its DuckDB database, sources and scans ------------------------------------

class Session {
 public:
  ~Session() {
    if (con_) duckdb_disconnect(&con_);
    if (db_) duckdb_close(&db_);
  }

  Status Open(const FederatedOptions& options) {
    options_ = options;
    duckdb_config config;
    if (duckdb_create_config(&config) != DuckDBSuccess) {
      return Status::Internal("cannot create a DuckDB configuration");
    }
    const std::string threads = std::to_string(std::max(1, options.threads));
    duckdb_set_config(config, "threads", threads.c_str());
    duckdb_set_config(config, "memory_limit", options.memory_limit.c_str());
    duckdb_set_config(config, "autoinstall_known_extensions", "false");
    if (!options.temp_dir.empty()) {
      duckdb_set_config(config, "temp_directory", options.temp_dir.c_str());
    }
    char* err = nullptr;
    const bool ok = duckdb_open_ext(nullptr, &db_, config, &err) == DuckDBSuccess;
    duckdb_destroy_config(&config);
    if (!ok) {
      std::string m = err ? err : "unknown error";
      if (err) duckdb_free(err);
      return Status::InvalidArgument("DuckDB could not start: " + m);
    }
    if (duckdb_connect(db_, &con_) != DuckDBSuccess) {
      return Status::Internal("cannot connect to the embedded DuckDB");
    }
    if (options.temp_dir.empty()) DBS_RETURN_IF_ERROR(Exec("SET temp_directory = ''"));
    return Status::Ok();
  }

  Status Exec(const std::string& sql) {
    duckdb_result res;
    const bool ok = duckdb_query(con_, sql.c_str(), &res) == DuckDBSuccess;
    std::string err = ok ? "" : duckdb_result_error(&res);
    duckdb_destroy_result(&res);
    if (!ok) return Status::InvalidArgument(err);
    return Status::Ok();
  }

  // json_serialize_sql of `sql`: one SELECT, or InvalidArgument.
  Result<json> Parse(const std::string& sql) {
    duckdb_prepared_statement st;
    if (duckdb_prepare(con_, "SELECT json_serialize_sql($1::VARCHAR)", &st) != DuckDBSuccess) {
      std::string e = duckdb_prepare_error(st);
      duckdb_destroy_prepare(&st);
      return Status::Internal("cannot parse with DuckDB: " + e);
    }
    duckdb_bind_varchar(st, 1, sql.c_str());
    duckdb_result res;
    const bool ok = duckdb_execute_prepared(st, &res) == DuckDBSuccess;
    duckdb_destroy_prepare(&st);
    std::string text;
    if (ok) {
      char* v = duckdb_value_varchar(&res, 0, 0);
      if (v) text = v;
      duckdb_free(v);
    } else {
      text = duckdb_result_error(&res);
    }
    duckdb_destroy_result(&res);
    if (!ok) return Status::InvalidArgument("sql: " + text);
    json ast = json::parse(text, nullptr, false);
    if (ast.is_discarded()) return Status::Internal("DuckDB's syntax tree is not JSON");
    if (ast.value("error", false)) {
      std::string m = ast.value("error_message", "cannot parse the statement");
      if (m.find("Only SELECT") != std::string::npos) {
        return Status::InvalidArgument("sql must be one read-only SELECT (or WITH ... SELECT)");
      }
      return Status::InvalidArgument("sql: " + m);
    }
    if (!ast["statements"].is_array() || ast["statements"].size() != 1) {
      return Status::InvalidArgument("sql must be exactly one SELECT statement");
    }
    return ast;
  }

  // Opens the sources the statement names, describes their tables, works out the filters,
  // registers one table function per table and a view named like it.
  Status Prepare(const std::vector<FederatedSource>& sources, const json& ast) {
    std::map<std::string, const FederatedSource*> by_alias;
    std::set<std::string> aliases;
    for (const auto& s : sources) {
      DBS_RETURN_IF_ERROR(ValidateAlias(s.alias));
      if (!by_alias.emplace(Lower(s.alias), &s).second) {
        return Status::InvalidArgument("sources: the alias " + s.alias + " is used twice");
      }
      aliases.insert(Lower(s.alias));
    }
    std::vector<TableName> tables = CollectTables(ast, aliases);
    std::map<TableKey, ScanTarget*> by_key;
    for (const TableName& tn : tables) {
      const FederatedSource* fs = by_alias.at(tn.key.alias);
      OpenSource& os = opened_[tn.key.alias];
      if (!os.source) {
        auto src = OpenMember(fs->connection);
        if (!src.ok()) return Prefix(fs->alias, src.status());
        os.source = std::move(*src);
        os.mu = std::make_unique<std::mutex>();
      }
      auto t = std::make_unique<ScanTarget>();
      t->alias = fs->alias;
      t->function = "dbs_scan_" + std::to_string(targets_.size());
      t->source = os.source.get();
      t->source_mu = os.mu.get();
      t->engine = fs->connection.engine;
      t->options = &options_;
      t->error = &error_;
      TableRef ref{tn.key.schema.empty() ? os.source->DefaultSchema() : tn.schema_as_written,
                   tn.table_as_written};
      auto described = os.source->Describe(ref);
      if (!described.ok()) {
        return Prefix(fs->alias + "." + ref.QualifiedName(), described.status());
      }
      if (described->columns.empty()) {
        return Status::NotFound(fs->alias + "." + ref.QualifiedName() + " has no columns");
      }
      t->table = std::move(*described);
      by_key[tn.key] = t.get();
      refs_[tn.key] = tn.references;
      names_[tn.key] = tn;
      targets_.push_back(std::move(t));
    }
    auto preds = CollectPredicates(ast, aliases, [&](const TableKey& k, const std::string& c) {
      auto it = by_key.find(k);
      if (it == by_key.end()) return false;
      for (const auto& col : it->second->table.columns) {
        if (Lower(col.name) == Lower(c)) return true;
      }
      return false;
    });
    for (auto& [key, t] : by_key) {
      // A table named more than once (a self-join, a subquery) is read once per reference
      // with the same function: its filter would have to hold for every reference.
      // File tables (folders, buckets) are filtered by DuckDB alone: their reader's columns
      // are the stored ones, which a pushed condition would have to match.
      if (refs_[key] == 1 && preds.count(key) && t->engine != Engine::kFile) {
        t->filter = FilterSql(*t, preds[key]);
      }
    }
    std::set<std::string> attached, schemas;
    for (auto& [key, t] : by_key) {
      duckdb_table_function f = duckdb_create_table_function();
      duckdb_table_function_set_name(f, t->function.c_str());
      duckdb_table_function_set_extra_info(f, t, nullptr);
      duckdb_table_function_set_bind(f, ScanBind);
      duckdb_table_function_set_init(f, ScanInit);
      duckdb_table_function_set_local_init(f, ScanLocalInit);
      duckdb_table_function_set_function(f, Scan);
      duckdb_table_function_supports_projection_pushdown(f, true);
      const bool ok = duckdb_register_table_function(con_, f) == DuckDBSuccess;
      duckdb_destroy_table_function(&f);
      if (!ok) return Status::Internal("cannot register " + t->function + " with DuckDB");
      const std::string cat = QuoteDuck(key.alias);
      if (attached.insert(key.alias).second) {
        DBS_RETURN_IF_ERROR(Exec("ATTACH ':memory:' AS " + cat));
      }
      const TableName& tn = names_[key];
      const std::string schema = key.schema.empty() ? "main" : tn.schema_as_written;
      if (schemas.insert(key.alias + "." + Lower(schema)).second) {
        DBS_RETURN_IF_ERROR(Exec("CREATE SCHEMA IF NOT EXISTS " + cat + "." + QuoteDuck(schema)));
      }
      DBS_RETURN_IF_ERROR(Exec("CREATE VIEW " + cat + "." + QuoteDuck(schema) + "." +
                               QuoteDuck(tn.table_as_written) + " AS SELECT * FROM " + t->function +
                               "()"));
    }
    // From here on the statement may read files only in the allowed folders.
    std::string dirs;
    for (const auto& d : options_.allowed_directories) {
      std::string p = d;
      if (!p.empty() && p.back() != '/') p += '/';
      dirs += (dirs.empty() ? "" : ", ") + QuoteDuckString(p);
    }
    if (!dirs.empty()) DBS_RETURN_IF_ERROR(Exec("SET allowed_directories = [" + dirs + "]"));
    DBS_RETURN_IF_ERROR(Exec("SET enable_external_access = false"));
    return Exec("SET lock_configuration = true");
  }

  duckdb_connection con() const { return con_; }
  // `s`, or the error a source recorded when DuckDB failed because of it.
  Status WithSourceError(const Status& s) {
    if (s.ok()) return s;
    std::lock_guard<std::mutex> l(error_.mu);
    return error_.status ? *error_.status : s;
  }
  static std::string TypeNameOf(duckdb_logical_type lt) { return TypeName(lt); }
  // DESCRIBE's spelling of a result column's type (files::ColumnFromDuck reads it).
  static std::string DescribeName(duckdb_logical_type lt) {
    const std::string t = TypeName(lt);
    return t == "LIST" ? "VARCHAR[]" : t;
  }

  Result<FederatedResult> Run(const std::string& sql) {
    FederatedResult out;
    const std::string wrapped = "SELECT * FROM (\n" + sql + "\n) AS dbs_result LIMIT " +
                                std::to_string(options_.max_rows + 1);
    duckdb_result res;
    Status st = WithTimeout([&] {
      if (duckdb_query(con_, wrapped.c_str(), &res) == DuckDBSuccess) return Status::Ok();
      Status s = Status::InvalidArgument(std::string("sql: ") + duckdb_result_error(&res));
      duckdb_destroy_result(&res);
      return s;
    });
    if (!st.ok()) return st;
    const idx_t cols = duckdb_column_count(&res);
    const idx_t rows = duckdb_row_count(&res);
    for (idx_t c = 0; c < cols; ++c) {
      duckdb_logical_type lt = duckdb_column_logical_type(&res, c);
      out.columns.push_back({duckdb_column_name(&res, c), TypeName(lt)});
      duckdb_destroy_logical_type(&lt);
    }
    const idx_t keep = std::min<idx_t>(rows, static_cast<idx_t>(options_.max_rows));
    out.truncated = rows > keep;
    for (idx_t r = 0; r < keep; ++r) {
      json row = json::array();
      for (idx_t c = 0; c < cols; ++c) row.push_back(Cell(&res, c, r));
      out.rows.push_back(std::move(row));
    }
    duckdb_destroy_result(&res);
    return out;
  }

  Result<FederatedPlan> Explain(const std::string& sql) {
    FederatedPlan plan;
    DBS_ASSIGN_OR_RETURN(std::vector<std::string> text, Column1("EXPLAIN " + sql, 1));
    for (const auto& t : text) plan.text += t;
    DBS_ASSIGN_OR_RETURN(std::vector<std::string> js, Column1("EXPLAIN (FORMAT JSON) " + sql, 1));
    json tree = json::parse(js.empty() ? "[]" : js[0], nullptr, false);
    std::map<std::string, std::vector<std::string>> projections;
    std::function<void(const json&)> walk = [&](const json& j) {
      if (j.is_array()) {
        for (const auto& x : j) walk(x);
        return;
      }
      if (!j.is_object()) return;
      if (j.contains("extra_info") && j["extra_info"].is_object()) {
        const json& ei = j["extra_info"];
        const std::string fn = Lower(ei.value("Function", ""));
        if (fn.rfind("dbs_scan_", 0) == 0 && ei.contains("Projections")) {
          std::vector<std::string> cols;
          if (ei["Projections"].is_array()) {
            for (const auto& p : ei["Projections"]) cols.push_back(p.get<std::string>());
          } else if (ei["Projections"].is_string()) {
            std::string s = ei["Projections"].get<std::string>();
            size_t b = 0;
            while (b <= s.size()) {
              size_t e = s.find('\n', b);
              if (e == std::string::npos) e = s.size();
              if (e > b) cols.push_back(s.substr(b, e - b));
              b = e + 1;
            }
          }
          projections[fn] = cols;
        }
      }
      if (j.contains("children")) walk(j["children"]);
    };
    walk(tree);
    for (const auto& t : targets_) {
      std::vector<std::string> cols;
      auto it = projections.find(t->function);
      if (it != projections.end() && !it->second.empty()) {
        cols = it->second;
      } else {
        for (const auto& c : t->table.columns) cols.push_back(c.name);
      }
      plan.sources.push_back({t->alias, t->Statement(cols)});
    }
    plan.sources.insert(plan.sources.end(), s3_reads_.begin(), s3_reads_.end());
    return plan;
  }

  // Mirrors the objects of the statement's s3:// URLs (s3_urls.h) into a private folder that
  // DuckDB may read, and rewrites *sql to read the mirror. Before Prepare.
  Status MirrorS3(const std::vector<FederatedSource>& sources,
                  const std::vector<S3UrlLiteral>& urls, std::string* sql) {
    DBS_ASSIGN_OR_RETURN(mirror_, files::SpillDir::Create("federated-s3"));
    DBS_ASSIGN_OR_RETURN(MirroredS3 m,
                         MirrorS3Urls(sources, *sql, urls, mirror_->path(), options_.max_s3_bytes));
    *sql = std::move(m.sql);
    s3_reads_ = std::move(m.statements);
    options_.allowed_directories.push_back(mirror_->path());
    return Status::Ok();
  }

 private:
  struct OpenSource {
    std::unique_ptr<Source> source;
    std::unique_ptr<std::mutex> mu;
  };

  static Status Prefix(const std::string& what, const Status& s) {
    return Status(s.code(), what + ": " + s.message());
  }
  static std::string QuoteDuck(const std::string& name) {
    std::string out = "\"";
    for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  }
  static std::string QuoteDuckString(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
  }

  // Runs `fn` with duckdb_interrupt after timeout_ms.
  Status WithTimeout(const std::function<Status()>& fn) {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::atomic<bool> fired{false};
    std::thread watchdog([&] {
      std::unique_lock<std::mutex> l(mu);
      if (!cv.wait_for(l, std::chrono::milliseconds(options_.timeout_ms), [&] { return done; })) {
        fired = true;
        duckdb_interrupt(con_);
      }
    });
    Status s = fn();
    {
      std::lock_guard<std::mutex> l(mu);
      done = true;
    }
    cv.notify_all();
    watchdog.join();
    if (!s.ok() && error_.status) return *error_.status;
    if (fired && !s.ok()) {
      return Status::Timeout("the federated query ran over its timeout of " +
                             std::to_string(options_.timeout_ms) + " ms");
    }
    return s;
  }

  Result<std::vector<std::string>> Column1(const std::string& sql, idx_t col) {
    duckdb_result res;
    std::vector<std::string> out;
    Status s = WithTimeout([&] {
      if (duckdb_query(con_, sql.c_str(), &res) == DuckDBSuccess) return Status::Ok();
      Status e = Status::InvalidArgument(std::string("sql: ") + duckdb_result_error(&res));
      duckdb_destroy_result(&res);
      return e;
    });
    if (!s.ok()) return s;
    for (idx_t r = 0; r < duckdb_row_count(&res); ++r) {
      char* v = duckdb_value_varchar(&res, col, r);
      out.push_back(v ? v : "");
      duckdb_free(v);
    }
    duckdb_destroy_result(&res);
    return out;
  }

  static std::string TypeName(duckdb_logical_type lt) {
    switch (duckdb_get_type_id(lt)) {
      case DUCKDB_TYPE_BOOLEAN:
        return "BOOLEAN";
      case DUCKDB_TYPE_TINYINT:
        return "TINYINT";
      case DUCKDB_TYPE_SMALLINT:
        return "SMALLINT";
      case DUCKDB_TYPE_INTEGER:
        return "INTEGER";
      case DUCKDB_TYPE_BIGINT:
        return "BIGINT";
      case DUCKDB_TYPE_UTINYINT:
        return "UTINYINT";
      case DUCKDB_TYPE_USMALLINT:
        return "USMALLINT";
      case DUCKDB_TYPE_UINTEGER:
        return "UINTEGER";
      case DUCKDB_TYPE_UBIGINT:
        return "UBIGINT";
      case DUCKDB_TYPE_HUGEINT:
        return "HUGEINT";
      case DUCKDB_TYPE_FLOAT:
        return "FLOAT";
      case DUCKDB_TYPE_DOUBLE:
        return "DOUBLE";
      case DUCKDB_TYPE_DECIMAL:
        return "DECIMAL(" + std::to_string(duckdb_decimal_width(lt)) + "," +
               std::to_string(duckdb_decimal_scale(lt)) + ")";
      case DUCKDB_TYPE_VARCHAR:
        return "VARCHAR";
      case DUCKDB_TYPE_BLOB:
        return "BLOB";
      case DUCKDB_TYPE_DATE:
        return "DATE";
      case DUCKDB_TYPE_TIME:
        return "TIME";
      case DUCKDB_TYPE_TIMESTAMP:
        return "TIMESTAMP";
      case DUCKDB_TYPE_TIMESTAMP_TZ:
        return "TIMESTAMP WITH TIME ZONE";
      case DUCKDB_TYPE_INTERVAL:
        return "INTERVAL";
      case DUCKDB_TYPE_UUID:
        return "UUID";
      case DUCKDB_TYPE_LIST:
        return "LIST";
      case DUCKDB_TYPE_STRUCT:
        return "STRUCT";
      case DUCKDB_TYPE_MAP:
        return "MAP";
      case DUCKDB_TYPE_ENUM:
        return "ENUM";
      default:
        return "OTHER";
    }
  }

  // A result cell as JSON: numbers and booleans as such, everything else as DuckDB's text.
  static json Cell(duckdb_result* res, idx_t c, idx_t r) {
    if (duckdb_value_is_null(res, c, r)) return nullptr;
    switch (duckdb_column_type(res, c)) {
      case DUCKDB_TYPE_BOOLEAN:
        return duckdb_value_boolean(res, c, r);
      case DUCKDB_TYPE_TINYINT:
      case DUCKDB_TYPE_SMALLINT:
      case DUCKDB_TYPE_INTEGER:
      case DUCKDB_TYPE_BIGINT:
        return duckdb_value_int64(res, c, r);
      case DUCKDB_TYPE_UTINYINT:
      case DUCKDB_TYPE_USMALLINT:
      case DUCKDB_TYPE_UINTEGER:
      case DUCKDB_TYPE_UBIGINT:
        return duckdb_value_uint64(res, c, r);
      case DUCKDB_TYPE_FLOAT:
      case DUCKDB_TYPE_DOUBLE: {
        const double d = duckdb_value_double(res, c, r);
        if (std::isfinite(d)) return d;
        break;
      }
      default:
        break;
    }
    char* v = duckdb_value_varchar(res, c, r);
    json out = v ? json(std::string(v)) : json(nullptr);
    duckdb_free(v);
    return out;
  }

  // Copies of the objects the statement's s3:// URLs name (removed after DuckDB closed).
  std::unique_ptr<files::SpillDir> mirror_;
  std::vector<SourceStatement> s3_reads_;  // what each URL read, for Explain
  FederatedOptions options_;
  SourceError error_;
  duckdb_database db_ = nullptr;
  duckdb_connection con_ = nullptr;
  std::map<std::string, OpenSource> opened_;
  std::vector<std::unique_ptr<ScanTarget>> targets_;
  std::map<TableKey, int> refs_;
  std::map<TableKey, TableName> names_;
};

std::string Trim(const std::string& sql) {
  size_t e = sql.size();
  while (e > 0 && (std::isspace(static_cast<unsigned char>(sql[e - 1])) || sql[e - 1] == ';')) --e;
  return sql.substr(0, e);
}

Status CheckInput(const std::vector<FederatedSource>& sources, const std::string& sql,
                  const FederatedOptions& options) {
  if (Trim(sql).empty()) return Status::InvalidArgument("sql is empty");
  if (options.max_rows < 0) return Status::InvalidArgument("maxRows must be 0 or more");
  if (options.timeout_ms <= 0) return Status::InvalidArgument("timeoutMs must be positive");
  for (const auto& s : sources) {
    if (s.connection.engine != Engine::kPostgres && s.connection.engine != Engine::kMysql &&
        s.connection.engine != Engine::kFile) {
      return Status::InvalidArgument("sources: " + s.alias +
                                     " is not a database, folder or bucket connection");
    }
  }
  return Status::Ok();
}

// Checks the input, opens the session's DuckDB and registers the statement's source tables;
// the statement as it runs (trimmed) in *body.
Status OpenSession(Session* s, const std::vector<FederatedSource>& sources, const std::string& sql,
                   const FederatedOptions& options, std::string* body) {
  DBS_RETURN_IF_ERROR(CheckInput(sources, sql, options));
  *body = Trim(sql);
  DBS_RETURN_IF_ERROR(s->Open(options));
  DBS_ASSIGN_OR_RETURN(json ast, s->Parse(*body));
  DBS_ASSIGN_OR_RETURN(std::vector<S3UrlLiteral> urls, FindS3Urls(ast, *body));
  if (!urls.empty()) DBS_RETURN_IF_ERROR(s->MirrorS3(sources, urls, body));
  return s->Prepare(sources, ast);
}

}  // namespace

Status ValidateAlias(const std::string& alias) {
  bool ok =
      !alias.empty() && alias.size() <= 63 && std::isalpha(static_cast<unsigned char>(alias[0]));
  for (char c : alias) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  }
  if (!ok) {
    return Status::InvalidArgument("alias '" + alias.substr(0, 64) +
                                   "' must be a letter followed by letters, digits or _ "
                                   "(at most 63 characters)");
  }
  static const std::set<std::string> reserved = {"main", "memory", "system", "temp"};
  if (reserved.count(Lower(alias))) {
    return Status::InvalidArgument("alias '" + alias + "' is reserved by DuckDB");
  }
  return Status::Ok();
}

Result<FederatedResult> Run(const std::vector<FederatedSource>& sources, const std::string& sql,
                            const FederatedOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  Session s;
  std::string body;
  DBS_RETURN_IF_ERROR(OpenSession(&s, sources, sql, options, &body));
  DBS_ASSIGN_OR_RETURN(FederatedResult out, s.Run(body));
  out.elapsed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  return out;
}

Result<FederatedPlan> Explain(const std::vector<FederatedSource>& sources, const std::string& sql,
                              const FederatedOptions& options) {
  Session s;
  std::string body;
  DBS_RETURN_IF_ERROR(OpenSession(&s, sources, sql, options, &body));
  return s.Explain(body);
}

// --- a federated SELECT as a stream's source ------------------------------------------------

struct ResultStream::Impl {
  Session session;
  std::vector<Column> columns;
  duckdb_prepared_statement stmt = nullptr;
  duckdb_result res{};
  bool has_res = false;
  duckdb_data_chunk chunk = nullptr;
  ~Impl() {
    if (chunk != nullptr) duckdb_destroy_data_chunk(&chunk);
    if (has_res) duckdb_destroy_result(&res);
    if (stmt != nullptr) duckdb_destroy_prepare(&stmt);
  }
};

ResultStream::ResultStream() : impl_(std::make_unique<Impl>()) {}
ResultStream::~ResultStream() = default;
const std::vector<Column>& ResultStream::columns() const { return impl_->columns; }

namespace {

// Prepares `sql` (wrapped) on the session and describes its columns as logical columns, with
// the SELECT list that reads each as its read type.
Status DescribeOn(Session* s, const std::string& body, std::vector<Column>* columns,
                  std::string* select) {
  const std::string wrapped = "SELECT * FROM (\n" + body + "\n) AS dbs_result";
  duckdb_prepared_statement st = nullptr;
  if (duckdb_prepare(s->con(), wrapped.c_str(), &st) != DuckDBSuccess) {
    Status e = Status::InvalidArgument(std::string("sql: ") + duckdb_prepare_error(st));
    duckdb_destroy_prepare(&st);
    return e;
  }
  std::string list;
  for (idx_t c = 0; c < duckdb_prepared_statement_column_count(st); ++c) {
    duckdb_logical_type lt = duckdb_prepared_statement_column_logical_type(st, c);
    const std::string name = duckdb_prepared_statement_column_name(st, c);
    std::string expr;
    Column col = files::ColumnFromDuck(name, Session::DescribeName(lt), &expr);
    duckdb_destroy_logical_type(&lt);
    for (const Column& other : *columns) {
      if (Lower(other.name) == Lower(name)) {
        duckdb_destroy_prepare(&st);
        return Status::InvalidArgument("sql: the result has two columns named " + name +
                                       ": give each column of a stream's query its own name");
      }
    }
    columns->push_back(std::move(col));
    list += (list.empty() ? "" : ", ") + expr + " AS " + files::SqlIdent(name);
  }
  duckdb_destroy_prepare(&st);
  *select = "SELECT " + list + " FROM (\n" + body + "\n) AS dbs_result";
  return Status::Ok();
}

}  // namespace

Result<std::vector<Column>> DescribeSelect(const std::vector<FederatedSource>& sources,
                                           const std::string& sql,
                                           const FederatedOptions& options) {
  Session s;
  std::string body;
  DBS_RETURN_IF_ERROR(OpenSession(&s, sources, sql, options, &body));
  std::vector<Column> columns;
  std::string select;
  DBS_RETURN_IF_ERROR(DescribeOn(&s, body, &columns, &select));
  return columns;
}

Result<std::unique_ptr<ResultStream>> ResultStream::Open(
    const std::vector<FederatedSource>& sources, const std::string& sql,
    const FederatedOptions& options) {
  std::unique_ptr<ResultStream> out(new ResultStream());
  Impl& im = *out->impl_;
  std::string body;
  DBS_RETURN_IF_ERROR(OpenSession(&im.session, sources, sql, options, &body));
  std::string select;
  DBS_RETURN_IF_ERROR(DescribeOn(&im.session, body, &im.columns, &select));
  if (duckdb_prepare(im.session.con(), select.c_str(), &im.stmt) != DuckDBSuccess) {
    return Status::InvalidArgument(std::string("sql: ") + duckdb_prepare_error(im.stmt));
  }
  duckdb_pending_result pending;
  if (duckdb_pending_prepared_streaming(im.stmt, &pending) != DuckDBSuccess) {
    Status e = Status::InvalidArgument(std::string("sql: ") + duckdb_pending_error(pending));
    duckdb_destroy_pending(&pending);
    return e;
  }
  const duckdb_state st = duckdb_execute_pending(pending, &im.res);
  duckdb_destroy_pending(&pending);
  im.has_res = true;
  if (st != DuckDBSuccess) {
    const char* e = duckdb_result_error(&im.res);
    return Status::InvalidArgument(std::string("sql: ") + (e ? e : "the statement failed"));
  }
  return out;
}

Result<duckdb_data_chunk> ResultStream::Next() {
  Impl& im = *impl_;
  if (im.chunk != nullptr) duckdb_destroy_data_chunk(&im.chunk);
  im.chunk = duckdb_fetch_chunk(im.res);
  if (im.chunk == nullptr) {
    const char* err = duckdb_result_error(&im.res);
    if (err != nullptr && *err != '\0') return Status::InvalidArgument(std::string("sql: ") + err);
    return static_cast<duckdb_data_chunk>(nullptr);
  }
  if (duckdb_data_chunk_get_size(im.chunk) == 0) {
    duckdb_destroy_data_chunk(&im.chunk);
    return static_cast<duckdb_data_chunk>(nullptr);
  }
  return im.chunk;
}

// --- a federated SELECT read page by page (the console) ------------------------------------

namespace {

bool NativeCell(duckdb_type t) {
  switch (t) {
    case DUCKDB_TYPE_BOOLEAN:
    case DUCKDB_TYPE_TINYINT:
    case DUCKDB_TYPE_SMALLINT:
    case DUCKDB_TYPE_INTEGER:
    case DUCKDB_TYPE_BIGINT:
    case DUCKDB_TYPE_UTINYINT:
    case DUCKDB_TYPE_USMALLINT:
    case DUCKDB_TYPE_UINTEGER:
    case DUCKDB_TYPE_UBIGINT:
    case DUCKDB_TYPE_FLOAT:
    case DUCKDB_TYPE_DOUBLE:
      return true;
    default:
      return false;
  }
}

// Row `r` of a chunk column of type `t` (a native type, or VARCHAR for the others) as JSON:
// what Run's cells are.
json ChunkCell(duckdb_vector v, duckdb_type t, idx_t r) {
  uint64_t* validity = duckdb_vector_get_validity(v);
  if (validity != nullptr && !duckdb_validity_row_is_valid(validity, r)) return nullptr;
  void* data = duckdb_vector_get_data(v);
  switch (t) {
    case DUCKDB_TYPE_BOOLEAN:
      return static_cast<const bool*>(data)[r];
    case DUCKDB_TYPE_TINYINT:
      return static_cast<const int8_t*>(data)[r];
    case DUCKDB_TYPE_SMALLINT:
      return static_cast<const int16_t*>(data)[r];
    case DUCKDB_TYPE_INTEGER:
      return static_cast<const int32_t*>(data)[r];
    case DUCKDB_TYPE_BIGINT:
      return static_cast<const int64_t*>(data)[r];
    case DUCKDB_TYPE_UTINYINT:
      return static_cast<const uint8_t*>(data)[r];
    case DUCKDB_TYPE_USMALLINT:
      return static_cast<const uint16_t*>(data)[r];
    case DUCKDB_TYPE_UINTEGER:
      return static_cast<const uint32_t*>(data)[r];
    case DUCKDB_TYPE_UBIGINT:
      return static_cast<const uint64_t*>(data)[r];
    case DUCKDB_TYPE_FLOAT:
    case DUCKDB_TYPE_DOUBLE: {
      const double d = t == DUCKDB_TYPE_FLOAT ? static_cast<const float*>(data)[r]
                                              : static_cast<const double*>(data)[r];
      if (std::isfinite(d)) return d;
      return d != d ? "nan" : d > 0 ? "inf" : "-inf";
    }
    default: {
      duckdb_string_t* str = static_cast<duckdb_string_t*>(data) + r;
      return std::string(duckdb_string_t_data(str), duckdb_string_t_length(*str));
    }
  }
}

}  // namespace

struct QueryCursor::Impl {
  Session session;
  std::vector<ResultColumn> columns;
  std::vector<duckdb_type> cell_types;  // what each chunk column holds (native or VARCHAR)
  duckdb_prepared_statement stmt = nullptr;
  duckdb_pending_result pending = nullptr;  // between Open and Start
  duckdb_result res{};
  bool has_res = false;
  duckdb_data_chunk chunk = nullptr;
  idx_t chunk_row = 0;
  bool ended = false;
  std::atomic<bool> interrupted{false};
  ~Impl() {
    if (chunk != nullptr) duckdb_destroy_data_chunk(&chunk);
    if (pending != nullptr) duckdb_destroy_pending(&pending);
    if (has_res) duckdb_destroy_result(&res);
    if (stmt != nullptr) duckdb_destroy_prepare(&stmt);
  }
  // The next chunk into `chunk` (nullptr at the end).
  Status Advance() {
    if (chunk != nullptr) duckdb_destroy_data_chunk(&chunk);
    chunk_row = 0;
    chunk = duckdb_fetch_chunk(res);
    if (chunk == nullptr) {
      const char* err = duckdb_result_error(&res);
      if (err != nullptr && *err != '\0') {
        return session.WithSourceError(Status::InvalidArgument(std::string("sql: ") + err));
      }
      ended = true;
      return Status::Ok();
    }
    if (duckdb_data_chunk_get_size(chunk) == 0) {
      duckdb_destroy_data_chunk(&chunk);
      ended = true;
    }
    return Status::Ok();
  }
};

QueryCursor::QueryCursor() : impl_(std::make_unique<Impl>()) {}
QueryCursor::~QueryCursor() = default;
const std::vector<ResultColumn>& QueryCursor::columns() const { return impl_->columns; }
void QueryCursor::Interrupt() {
  impl_->interrupted = true;
  duckdb_interrupt(impl_->session.con());
}
bool QueryCursor::interrupted() const { return impl_->interrupted.load(); }

Result<std::unique_ptr<QueryCursor>> QueryCursor::Open(const std::vector<FederatedSource>& sources,
                                                       const std::string& sql,
                                                       const FederatedOptions& options) {
  std::unique_ptr<QueryCursor> out(new QueryCursor());
  Impl& im = *out->impl_;
  std::string body;
  DBS_RETURN_IF_ERROR(OpenSession(&im.session, sources, sql, options, &body));
  // Described first: native cells stay as they are, every other column is read as DuckDB's text.
  const std::string wrapped = "SELECT * FROM (\n" + body + "\n) AS dbs_result";
  duckdb_prepared_statement st = nullptr;
  if (duckdb_prepare(im.session.con(), wrapped.c_str(), &st) != DuckDBSuccess) {
    Status e = Status::InvalidArgument(std::string("sql: ") + duckdb_prepare_error(st));
    duckdb_destroy_prepare(&st);
    return e;
  }
  std::string list, names;
  for (idx_t c = 0; c < duckdb_prepared_statement_column_count(st); ++c) {
    duckdb_logical_type lt = duckdb_prepared_statement_column_logical_type(st, c);
    const duckdb_type t = duckdb_get_type_id(lt);
    const std::string name = duckdb_prepared_statement_column_name(st, c);
    im.columns.push_back({name, Session::TypeNameOf(lt)});
    duckdb_destroy_logical_type(&lt);
    const bool native = NativeCell(t);
    im.cell_types.push_back(native ? t : DUCKDB_TYPE_VARCHAR);
    // Result columns renamed by position (two may share a name: SELECT a.id, b.id).
    const std::string ref = "dbs_c" + std::to_string(c + 1);
    names += (names.empty() ? "" : ", ") + ref;
    list += (list.empty() ? "" : ", ") + (native ? ref : "CAST(" + ref + " AS VARCHAR)");
  }
  duckdb_destroy_prepare(&st);
  const std::string select =
      list.empty() ? wrapped
                   : "SELECT " + list + " FROM (\n" + body + "\n) AS dbs_result(" + names + ")";
  if (duckdb_prepare(im.session.con(), select.c_str(), &im.stmt) != DuckDBSuccess) {
    return Status::InvalidArgument(std::string("sql: ") + duckdb_prepare_error(im.stmt));
  }
  // The pending query exists from here: an Interrupt() from now on stops Start().
  if (duckdb_pending_prepared_streaming(im.stmt, &im.pending) != DuckDBSuccess) {
    Status e = Status::InvalidArgument(std::string("sql: ") + duckdb_pending_error(im.pending));
    return e;
  }
  return out;
}

Status QueryCursor::Start() {
  Impl& im = *impl_;
  if (im.pending == nullptr) return Status::FailedPrecondition("the cursor was started already");
  const duckdb_state state = duckdb_execute_pending(im.pending, &im.res);
  duckdb_destroy_pending(&im.pending);
  im.pending = nullptr;
  im.has_res = true;
  if (state != DuckDBSuccess) {
    const char* e = duckdb_result_error(&im.res);
    return im.session.WithSourceError(
        Status::InvalidArgument(std::string("sql: ") + (e ? e : "the statement failed")));
  }
  return Status::Ok();
}

Result<json> QueryCursor::Next(int64_t max_rows, bool* more) {
  Impl& im = *impl_;
  if (!im.has_res) return Status::FailedPrecondition("the cursor was not started");
  json rows = json::array();
  while (static_cast<int64_t>(rows.size()) < max_rows && !im.ended) {
    if (im.chunk == nullptr || im.chunk_row >= duckdb_data_chunk_get_size(im.chunk)) {
      DBS_RETURN_IF_ERROR(im.Advance());
      continue;
    }
    const idx_t n = duckdb_data_chunk_get_size(im.chunk);
    const idx_t cols = im.cell_types.size();
    std::vector<duckdb_vector> vectors(cols);
    for (idx_t c = 0; c < cols; ++c) vectors[c] = duckdb_data_chunk_get_vector(im.chunk, c);
    for (; im.chunk_row < n && static_cast<int64_t>(rows.size()) < max_rows; ++im.chunk_row) {
      json row = json::array();
      for (idx_t c = 0; c < cols; ++c) {
        row.push_back(ChunkCell(vectors[c], im.cell_types[c], im.chunk_row));
      }
      rows.push_back(std::move(row));
    }
  }
  // Whether rows remain: the current chunk has more, or the next one has any.
  if (!im.ended && (im.chunk == nullptr || im.chunk_row >= duckdb_data_chunk_get_size(im.chunk))) {
    DBS_RETURN_IF_ERROR(im.Advance());
  }
  *more = !im.ended;
  return rows;
}

}  // namespace dbs::federated

#include "sources/postgres/postgres_source.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <vector>

#include "postgres/pg_client.h"
#include "postgres/pg_types.h"
#include "sources/postgres/catalog.h"
#include "sources/postgres/objects.h"
#include "sources/postgres/pg_change_stream.h"
#include "sources/postgres/row_reader.h"

namespace dbs {

namespace {

using pg::ConnPtr;
using pg::ResultPtr;

// Connections of one snapshot between readers: a chunk's reader takes one (or a new one joins
// the snapshot) and hands it back when its COPY ended cleanly. A server backend costs far more
// to start and warm (its own process, mapping the shared buffers it touches: about 0.4 CPU s
// each on 2026-12-07's machine, see docs/benchmarks.md) than a COPY of a chunk on a warm one.
struct PgReaderPool {
  std::mutex mu;
  std::vector<ConnPtr> idle;  // idle in the snapshot's transaction
};

class PgSnapshot : public Snapshot {
 public:
  PgSnapshot(ConnectionConfig config, ConnPtr conn, std::string id, SourcePosition position)
      : config_(std::move(config)),
        conn_(std::move(conn)),
        id_(std::move(id)),
        position_(std::move(position)) {}

  const SourcePosition& position() const override { return position_; }

  // Thread-safe: touches only immutable members and the pool (under its lock); the connection
  // is the reader's until it hands it back.
  Result<std::unique_ptr<RowReader>> OpenReader(const ReadSpec& spec) override {
    ConnPtr conn;
    {
      std::lock_guard<std::mutex> l(pool_->mu);
      if (!pool_->idle.empty()) {
        conn = std::move(pool_->idle.back());
        pool_->idle.pop_back();
      }
    }
    if (!conn) {
      DBS_ASSIGN_OR_RETURN(conn, pg::Connect(config_));
      DBS_RETURN_IF_ERROR(pg::Command(conn.get(),
                                      "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; "
                                      "SET TRANSACTION SNAPSHOT " +
                                          pg::QuoteLiteral(id_),
                                      "importing snapshot " + id_));
    }
    // The pool outlives the snapshot while a reader holds it: the release keeps it alive.
    std::shared_ptr<PgReaderPool> pool = pool_;
    return pg::OpenRowReader(std::move(conn), spec, [pool](ConnPtr done) {
      if (PQtransactionStatus(done.get()) != PQTRANS_INTRANS) return;  // closed instead
      std::lock_guard<std::mutex> l(pool->mu);
      pool->idle.push_back(std::move(done));
    });
  }

 private:
  const ConnectionConfig config_;
  ConnPtr conn_;  // holds the exporting transaction open; never used after construction
  const std::string id_;
  const SourcePosition position_;
  const std::shared_ptr<PgReaderPool> pool_ = std::make_shared<PgReaderPool>();
};

class PostgresSource : public Source {
 public:
  PostgresSource(ConnectionConfig config, ConnPtr conn, std::string default_schema)
      : config_(std::move(config)),
        conn_(std::move(conn)),
        default_schema_(std::move(default_schema)) {}

  Result<std::vector<TableRef>> ListTables() override { return pg::ListTables(conn_.get()); }

  std::string DefaultSchema() const override { return default_schema_; }

  Result<TableSchema> Describe(const TableRef& table) override {
    return pg::DescribeTable(conn_.get(), &types_, table);
  }

  Result<TableSchema> DescribeQuery(const std::string& query, const TableRef& name) override {
    return pg::DescribeQuery(conn_.get(), &types_, query, name);
  }

  Result<std::vector<SchemaObject>> DescribeObjects(
      const std::vector<TableSchema>& tables) override {
    return pg::DescribeObjects(conn_.get(), tables);
  }

  uint64_t DefaultSplitRows() const override { return 0; }
  Result<std::vector<KeyRange>> Split(const TableSchema& table, uint64_t rows_per_chunk) override;

  Result<std::unique_ptr<Snapshot>> BeginSnapshot(int max_readers) override;
  // CDC over logical replication with pgoutput (pg_change_stream.h).
  Status CheckCdc(const CdcOptions& options) override {
    return pg::CheckPgCdc(conn_.get(), options);
  }
  Result<std::unique_ptr<Snapshot>> BeginCdcSnapshot(int max_readers,
                                                     const CdcOptions& options) override;
  Result<std::unique_ptr<ChangeStream>> OpenChangeStream(const CdcOptions& options) override {
    return pg::OpenPgChangeStream(config_, options);
  }

 private:
  const ConnectionConfig config_;
  ConnPtr conn_;
  const std::string default_schema_;
  pg::TypeCache types_;
};

Result<std::vector<KeyRange>> PostgresSource::Split(const TableSchema& table,
                                                    uint64_t rows_per_chunk) {
  std::vector<KeyRange> whole = {KeyRange{}};
  if (rows_per_chunk == 0) return whole;
  DBS_ASSIGN_OR_RETURN(pg::RelationInfo rel,
                       pg::ResolveRelation(conn_.get(), TableRef{table.schema, table.name}));
  // PostgreSQL 14+ reads a ctid range of a plain table with a TID range scan: each chunk reads
  // only its own pages, in page order, whatever the key (or with none). Key ranges read each
  // chunk through the primary key's index instead, which costs the server more per row.
  if (rel.kind == 'r' && rel.reltuples > 0 && PQserverVersion(conn_.get()) >= 140000) {
    DBS_ASSIGN_OR_RETURN(ResultPtr size,
                         pg::Exec(conn_.get(),
                                  "SELECT pg_relation_size(" + std::to_string(rel.oid) +
                                      ") / current_setting('block_size')::int8",
                                  "splitting " + table.QualifiedName()));
    const int64_t pages = pg::Int(size.get(), 0, 0);
    int64_t chunks =
        static_cast<int64_t>(std::ceil(rel.reltuples / static_cast<double>(rows_per_chunk)));
    chunks = std::min<int64_t>({chunks, pages, 100000});
    if (chunks <= 1) return whole;
    const int64_t width = (pages + chunks - 1) / chunks;
    std::vector<KeyRange> out;
    std::optional<int64_t> lower;
    for (int64_t b = width; b < pages; b += width) {
      out.push_back(KeyRange{"ctid", lower, b, true});
      lower = b;
    }
    // Open-ended: pages added after the size was read hold no row of the snapshot, but the
    // chunk covers them anyway.
    out.push_back(KeyRange{"ctid", lower, std::nullopt, true});
    return out;
  }
  if (table.primary_key.size() != 1) return whole;
  const std::string& key = table.primary_key[0];
  whole[0].column = key;
  int ci = table.FindColumn(key);
  if (ci < 0) return whole;
  const LogicalType kt = table.columns[static_cast<size_t>(ci)].type;
  if (kt != LogicalType::kInt16 && kt != LogicalType::kInt32 && kt != LogicalType::kInt64) {
    return whole;
  }
  const std::string from =
      std::string(rel.kind == 'r' ? "ONLY " : "") + pg::QualifiedName(rel.schema, rel.name);
  const std::string k = pg::QuoteIdent(key);
  DBS_ASSIGN_OR_RETURN(
      ResultPtr res,
      pg::Exec(conn_.get(), "SELECT min(" + k + ")::int8, max(" + k + ")::int8 FROM " + from,
               "splitting " + table.QualifiedName()));
  if (pg::IsNull(res.get(), 0, 0)) return whole;  // empty
  const int64_t lo = pg::Int(res.get(), 0, 0);
  const int64_t hi = pg::Int(res.get(), 0, 1);
  const __int128 span = static_cast<__int128>(hi) - lo + 1;
  const double estimate = rel.reltuples > 0 ? rel.reltuples : static_cast<double>(span);
  double chunks_d = std::ceil(estimate / static_cast<double>(rows_per_chunk));
  chunks_d = std::min(chunks_d, 100000.0);
  __int128 chunks = static_cast<__int128>(chunks_d);
  if (chunks > span) chunks = span;
  if (chunks <= 1) return whole;
  const __int128 width = (span + chunks - 1) / chunks;
  std::vector<KeyRange> out;
  std::optional<int64_t> lower;
  for (__int128 i = 1; i < chunks; ++i) {
    const __int128 b = static_cast<__int128>(lo) + i * width;
    if (b > hi) break;
    out.push_back(KeyRange{key, lower, static_cast<int64_t>(b)});
    lower = static_cast<int64_t>(b);
  }
  out.push_back(KeyRange{key, lower, std::nullopt});
  return out;
}

Result<std::unique_ptr<Snapshot>> PostgresSource::BeginSnapshot(int max_readers) {
  if (max_readers < 1) return Status::InvalidArgument("BeginSnapshot needs max_readers >= 1");
  DBS_ASSIGN_OR_RETURN(ConnPtr conn, pg::Connect(config_));
  const std::string ctx = "starting a snapshot on " + config_.Redacted();
  // The exporting session idles while readers work: no idle-in-transaction timeout for it.
  DBS_RETURN_IF_ERROR(pg::Command(conn.get(),
                                  "SET idle_in_transaction_session_timeout = 0; "
                                  "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                                  ctx));
  DBS_ASSIGN_OR_RETURN(ResultPtr res,
                       pg::Exec(conn.get(),
                                "SELECT pg_export_snapshot(), CASE WHEN pg_is_in_recovery() "
                                "THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END::text",
                                ctx));
  std::string id(pg::Text(res.get(), 0, 0));
  SourcePosition pos;
  pos.kind = SourcePosition::Kind::kPgLsn;
  pos.value = pg::Text(res.get(), 0, 1);
  return std::unique_ptr<Snapshot>(
      std::make_unique<PgSnapshot>(config_, std::move(conn), std::move(id), std::move(pos)));
}

Result<std::unique_ptr<Snapshot>> PostgresSource::BeginCdcSnapshot(int max_readers,
                                                                   const CdcOptions& options) {
  if (max_readers < 1) return Status::InvalidArgument("BeginCdcSnapshot needs max_readers >= 1");
  // The replication connection that created the slot holds the exported snapshot for as long
  // as it stays idle: the Snapshot keeps it.
  DBS_ASSIGN_OR_RETURN(pg::ExportedSlot slot, pg::CreateSlotWithSnapshot(config_, options));
  return std::unique_ptr<Snapshot>(std::make_unique<PgSnapshot>(
      config_, std::move(slot.conn), std::move(slot.snapshot), std::move(slot.position)));
}

}  // namespace

Result<std::unique_ptr<Source>> OpenPostgresSource(const ConnectionConfig& config) {
  if (config.engine != Engine::kPostgres) {
    return Status::InvalidArgument("not a PostgreSQL connection: " + config.Redacted());
  }
  DBS_ASSIGN_OR_RETURN(ConnPtr conn, pg::Connect(config));
  DBS_ASSIGN_OR_RETURN(ResultPtr res,
                       pg::Exec(conn.get(), "SELECT coalesce(current_schema(), 'public')",
                                "reading the default schema"));
  std::string schema(pg::Text(res.get(), 0, 0));
  return std::unique_ptr<Source>(
      std::make_unique<PostgresSource>(config, std::move(conn), std::move(schema)));
}

}  // namespace dbs

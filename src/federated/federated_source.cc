#include "federated/federated_source.h"

#include "federated/result_stream.h"
#include "sources/files/duck_read.h"
#include "sources/files/remote.h"

namespace dbs::federated {
namespace {

std::vector<FederatedSource> Members(const ConnectionConfig& c) {
  std::vector<FederatedSource> out;
  for (const FederatedMember& m : c.federated) out.push_back({m.alias, m.connection});
  return out;
}

Status NoTables() {
  return Status(StatusCode::kInvalidArgument, Retry::kFail,
                "a federated source has no tables of its own: give each table of the stream a "
                "name and a query ({\"name\": \"t\", \"query\": \"SELECT ...\"})");
}

FederatedOptions ReadOptions(const std::string& spill) {
  FederatedOptions o;
  o.max_rows = 0;
  o.timeout_ms = int64_t{7} * 24 * 3600 * 1000;  // a load runs as long as it takes
  o.memory_limit = "512MB";
  o.temp_dir = spill;
  o.threads = 2;
  return o;
}

class FederatedRowReader : public RowReader {
 public:
  FederatedRowReader(std::unique_ptr<files::SpillDir> spill, std::unique_ptr<ResultStream> stream,
                     std::vector<size_t> cols, uint64_t limit)
      : spill_(std::move(spill)),
        stream_(std::move(stream)),
        cols_(std::move(cols)),
        limit_(limit) {}

  Result<bool> Next(Bundle* out, size_t max_rows, size_t max_bytes) override {
    size_t added = 0;
    while (added < max_rows) {
      if (limit_ != 0 && emitted_ >= limit_) return false;
      if (chunk_ == nullptr || offset_ >= chunk_rows_) {
        DBS_ASSIGN_OR_RETURN(chunk_, stream_->Next());
        if (chunk_ == nullptr) return false;
        chunk_rows_ = duckdb_data_chunk_get_size(chunk_);
        offset_ = 0;
        continue;
      }
      for (size_t i = 0; i < cols_.size(); ++i) {
        const Column& c = stream_->columns()[cols_[i]];
        Status s = files::AppendCell(duckdb_data_chunk_get_vector(chunk_, cols_[i]), offset_, c,
                                     &out->columns[i]);
        if (!s.ok()) return s.WithContext("result row " + std::to_string(emitted_ + 1));
      }
      ++offset_;
      ++added;
      ++emitted_;
      if ((added & 63) == 0 && out->ByteSize() >= max_bytes) return true;
    }
    return true;
  }

 private:
  std::unique_ptr<files::SpillDir> spill_;  // outlives the stream's DuckDB
  std::unique_ptr<ResultStream> stream_;
  std::vector<size_t> cols_;
  uint64_t limit_;
  duckdb_data_chunk chunk_ = nullptr;  // owned by stream_
  size_t chunk_rows_ = 0, offset_ = 0;
  uint64_t emitted_ = 0;
};

class FederatedSnapshot : public Snapshot {
 public:
  explicit FederatedSnapshot(std::vector<FederatedSource> members) : members_(std::move(members)) {}
  const SourcePosition& position() const override { return position_; }

  Result<std::unique_ptr<RowReader>> OpenReader(const ReadSpec& spec) override {
    if (spec.query.empty()) return NoTables();
    if (!spec.filter.empty()) {
      return Status::InvalidArgument("a federated query takes its conditions in its WHERE clause");
    }
    DBS_ASSIGN_OR_RETURN(auto spill, files::SpillDir::Create("federated"));
    DBS_ASSIGN_OR_RETURN(auto stream,
                         ResultStream::Open(members_, spec.query, ReadOptions(spill->path())));
    std::vector<size_t> cols;
    const std::vector<Column>& have = stream->columns();
    auto find = [&](const std::string& name) -> int {
      for (size_t i = 0; i < have.size(); ++i) {
        if (have[i].name == name) return static_cast<int>(i);
      }
      return -1;
    };
    std::vector<std::string> names = spec.columns;
    if (names.empty()) {
      for (const Column& c : spec.table.columns) names.push_back(c.name);
    }
    for (const std::string& n : names) {
      const int i = find(n);
      if (i < 0) return Status::NotFound("column " + n + " is not in the federated query's result");
      cols.push_back(static_cast<size_t>(i));
    }
    return std::unique_ptr<RowReader>(
        new FederatedRowReader(std::move(spill), std::move(stream), std::move(cols), spec.limit));
  }

 private:
  std::vector<FederatedSource> members_;
  SourcePosition position_;
};

class FederatedStreamSource : public LoadOnlySource {
 public:
  explicit FederatedStreamSource(ConnectionConfig config) : config_(std::move(config)) {}

  Result<std::vector<TableRef>> ListTables() override { return std::vector<TableRef>(); }
  std::string DefaultSchema() const override { return "public"; }
  Result<TableSchema> Describe(const TableRef&) override { return NoTables(); }
  Result<TableSchema> DescribeQuery(const std::string& query, const TableRef& name) override {
    // Nothing is scanned: no spill folder.
    DBS_ASSIGN_OR_RETURN(std::vector<Column> columns,
                         DescribeSelect(Members(config_), query, ReadOptions("")));
    TableSchema t;
    t.schema = name.schema.empty() ? DefaultSchema() : name.schema;
    t.name = name.name;
    t.columns = std::move(columns);
    return t;
  }
  Result<std::vector<KeyRange>> Split(const TableSchema&, uint64_t) override {
    return std::vector<KeyRange>();
  }
  Result<std::unique_ptr<Snapshot>> BeginSnapshot(int) override {
    return std::unique_ptr<Snapshot>(new FederatedSnapshot(Members(config_)));
  }

 private:
  std::string NoCdcReason() const override {
    return "a federated query is a load source only (mode load): it has no change stream";
  }
  ConnectionConfig config_;
};

}  // namespace

Result<std::unique_ptr<Source>> OpenFederatedSource(const ConnectionConfig& config) {
  if (config.engine != Engine::kFederated || config.federated.empty()) {
    return Status::InvalidArgument("not a federated source");
  }
  return std::unique_ptr<Source>(new FederatedStreamSource(config));
}

}  // namespace dbs::federated

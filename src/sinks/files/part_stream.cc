#include "sinks/files/part_stream.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "sinks/files/naming.h"
#include "sinks/files/stage.h"
#include "sources/files/duck.h"

namespace dbs::files {

struct PartStream::Feed {
  TableSchema table;
  ZeroDatePolicy zero_date = ZeroDatePolicy::kError;
  std::vector<duckdb_logical_type> types;  // StageType of each column
  std::unique_ptr<Duck> duck;
  std::thread copier;

  std::mutex mu;
  std::condition_variable cv;
  // The bundles being handed over (nullptr: none), and the next row to hand out. DuckDB's
  // string vectors point into them (StringFill::kBorrow), so a batch whose rows are all handed
  // out (`handed_out`) is released only at the next scan call, once DuckDB has consumed the
  // chunk holding its last rows.
  const std::vector<const Bundle*>* batch = nullptr;
  size_t bundle = 0, row = 0;
  bool handed_out = false;
  bool closing = false, aborting = false, finished = false;
  Status error;        // the first conversion error
  Status copy_status;  // the COPY's outcome, once finished

  ~Feed() {
    for (duckdb_logical_type& t : types) duckdb_destroy_logical_type(&t);
  }
};

namespace {

using Feed = PartStream::Feed;

constexpr uint64_t kRowGroupMin = 16384;
constexpr uint64_t kRowGroupMax = 122880;

void FeedBind(duckdb_bind_info info) {
  auto* f = static_cast<Feed*>(duckdb_bind_get_extra_info(info));
  for (size_t i = 0; i < f->table.columns.size(); ++i) {
    duckdb_bind_add_result_column(info, f->table.columns[i].name.c_str(), f->types[i]);
  }
}

void FeedInit(duckdb_init_info info) { duckdb_init_set_max_threads(info, 1); }

// Hands DuckDB up to one vector of rows of the current batch; waits for a batch, and ends the
// scan (an empty chunk) once the stream is closing and nothing is left. A chunk never mixes two
// batches: the one that takes a batch's last rows is returned at once, and the batch released
// (Add returns) at the next call.
void FeedScan(duckdb_function_info info, duckdb_data_chunk out) {
  auto* f = static_cast<Feed*>(duckdb_function_get_extra_info(info));
  const size_t cap = duckdb_vector_size();
  std::unique_lock<std::mutex> lock(f->mu);
  if (f->handed_out) {  // the chunk returned last is consumed: its batch may go
    f->handed_out = false;
    f->batch = nullptr;
    f->bundle = 0;
    f->cv.notify_all();
  }
  while (true) {
    f->cv.wait(lock, [f] { return f->batch != nullptr || f->closing || f->aborting; });
    if (f->aborting) {
      duckdb_function_set_error(info, "the part file was abandoned");
      duckdb_data_chunk_set_size(out, 0);
      return;
    }
    if (f->batch == nullptr) {  // closing, and everything handed over: the end of the rows
      duckdb_data_chunk_set_size(out, 0);
      return;
    }
    size_t filled = 0;
    while (filled < cap && !f->handed_out) {
      const Bundle& b = *(*f->batch)[f->bundle];
      const size_t take = std::min(cap - filled, b.rows() - f->row);
      if (take > 0) {
        Status s =
            FillChunk(f->table, b, f->row, take, out, filled, f->zero_date, StringFill::kBorrow);
        if (!s.ok()) {
          f->error = s;
          f->batch = nullptr;
          f->cv.notify_all();
          duckdb_function_set_error(info, s.message().c_str());
          duckdb_data_chunk_set_size(out, 0);
          return;
        }
        filled += take;
        f->row += take;
      }
      if (f->row == b.rows()) {
        f->row = 0;
        if (++f->bundle == f->batch->size()) f->handed_out = true;
      }
    }
    if (filled > 0) {
      duckdb_data_chunk_set_size(out, filled);
      return;
    }
    // A batch of empty bundles: nothing of it is in DuckDB's hands, release it now (an empty
    // chunk would end the scan).
    f->handed_out = false;
    f->batch = nullptr;
    f->bundle = 0;
    f->cv.notify_all();
  }
}

}  // namespace

Result<std::unique_ptr<PartStream>> PartStream::Open(const TableSchema& table,
                                                     const FileOptions& fo,
                                                     ZeroDatePolicy zero_date, std::string path,
                                                     uint64_t row_bytes) {
  std::unique_ptr<PartStream> ps(new PartStream());
  ps->path_ = std::move(path);
  auto f = std::make_unique<Feed>();
  f->table = table;
  f->zero_date = zero_date;
  // One thread and 128 MB, as the other file targets' DuckDB (file_sink.cc): the COPY holds
  // about one row group.
  DBS_ASSIGN_OR_RETURN(f->duck, Duck::Open(1, "128MB"));
  std::string probe;
  for (const Column& c : table.columns) {
    probe += std::string(probe.empty() ? "" : ", ") + "NULL::" + StageType(c);
  }
  {
    DBS_ASSIGN_OR_RETURN(DuckResult r, f->duck->Query("SELECT " + probe + " LIMIT 0"));
    for (size_t i = 0; i < table.columns.size(); ++i) {
      f->types.push_back(duckdb_column_logical_type(r.raw(), i));
    }
  }
  duckdb_table_function tf = duckdb_create_table_function();
  duckdb_table_function_set_name(tf, "dbs_part_feed");
  duckdb_table_function_set_extra_info(tf, f.get(), nullptr);
  duckdb_table_function_set_bind(tf, FeedBind);
  duckdb_table_function_set_init(tf, FeedInit);
  duckdb_table_function_set_function(tf, FeedScan);
  const bool registered = duckdb_register_table_function(f->duck->con(), tf) == DuckDBSuccess;
  duckdb_destroy_table_function(&tf);
  if (!registered) return Status::Internal("cannot register the part feed with DuckDB");
  std::string options = CopyOptions(fo);
  if (fo.format == FileFormat::kParquet) {
    // DuckDB holds a row group in memory until it writes it: aim at about 6 MiB of the rows'
    // bytes (Bundle::ByteSize), between 16,384 rows and DuckDB's default of 122,880. Measured
    // on the 2M-row bench table (181 bytes a row, 34,816 rows a group, two writers): 122,880
    // rows took the process to 226 MB, 32,768 to 148 MB, with files 2% larger and no slower.
    // The connection's rowGroupSize, when set, instead (DuckDB ends a group with the chunk
    // that reaches it: up to 2,047 rows more).
    const uint64_t rows = std::clamp<uint64_t>((6u << 20) / std::max<uint64_t>(1, row_bytes),
                                               kRowGroupMin, kRowGroupMax);
    const uint64_t group = fo.row_group_rows != 0 ? fo.row_group_rows : rows / 2048 * 2048;
    options.insert(options.size() - 1, ", ROW_GROUP_SIZE " + std::to_string(group));
  }
  const std::string sql = "COPY (SELECT " + ExportList(table, fo) + " FROM dbs_part_feed()) TO " +
                          SqlString(ps->path_) + " " + options;
  Feed* raw = f.get();
  raw->copier = std::thread([raw, sql] {
    Status s = raw->duck->Exec(sql);
    std::lock_guard<std::mutex> lock(raw->mu);
    raw->copy_status = std::move(s);
    raw->finished = true;
    raw->cv.notify_all();
  });
  ps->feed_ = std::move(f);
  return ps;
}

PartStream::~PartStream() {
  if (feed_ && feed_->copier.joinable()) {
    {
      std::lock_guard<std::mutex> lock(feed_->mu);
      feed_->aborting = true;
      feed_->cv.notify_all();
    }
    feed_->copier.join();
  }
}

Status PartStream::Add(const std::vector<const Bundle*>& bundles) {
  if (bundles.empty()) return Status::Ok();
  uint64_t rows = 0;
  for (const Bundle* b : bundles) {
    DBS_RETURN_IF_ERROR(CheckBundle(feed_->table, *b));
    rows += b->rows();
  }
  Feed& f = *feed_;
  std::unique_lock<std::mutex> lock(f.mu);
  if (!f.error.ok()) return f.error;
  if (f.finished || f.closing) {
    return f.copy_status.ok() ? Status::Internal("the part file " + path_ + " is closed")
                              : f.copy_status;
  }
  f.batch = &bundles;
  f.bundle = 0;
  f.row = 0;
  f.cv.notify_all();
  f.cv.wait(lock, [&f] { return f.batch == nullptr || f.finished; });
  if (!f.error.ok()) return f.error;
  if (f.batch != nullptr) {  // the COPY ended (failed) before taking every row
    f.batch = nullptr;
    return f.copy_status.ok() ? Status::Internal("the COPY of " + path_ + " ended early")
                              : f.copy_status;
  }
  rows_ += rows;
  return Status::Ok();
}

Result<uint64_t> PartStream::Close() {
  Feed& f = *feed_;
  {
    std::lock_guard<std::mutex> lock(f.mu);
    f.closing = true;
    f.cv.notify_all();
  }
  if (f.copier.joinable()) f.copier.join();
  if (!f.error.ok()) return f.error;
  if (!f.copy_status.ok()) return f.copy_status.WithContext("writing " + path_);
  return rows_;
}

}  // namespace dbs::files

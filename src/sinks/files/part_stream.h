// PartStream: one part file of a table written while the load runs, in its final format and
// compression, by a DuckDB COPY that reads the bundles handed to it (no staging pass and no
// second encoding at the end of the run).
//
// Contract:
//  - Open() starts `COPY (SELECT <the table's export list> FROM <feed>) TO path <options>` on a
//    thread of its own, against a DuckDB of its own (one thread, 128 MB, spilling beyond it).
//    The feed is a table function that hands DuckDB the rows Add() passes in, so memory holds
//    about one row group of the file (about 6 MiB of rows), whatever its size.
//  - Add() blocks until DuckDB has consumed every row of the bundles: its string vectors point
//    into them (no copy) until then. The bundles may be freed when it returns. An error (a value
//    the file cannot hold, named by table and column) fails the part: every later call returns it.
//  - Close() ends the COPY and returns the rows written; the file at `path` is then complete
//    (not synced: the caller syncs and renames it). Destroying an unclosed PartStream aborts
//    the COPY; the file it leaves at `path` is incomplete, the caller removes it.
//  - Used from one thread (the sink's).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/stream_config.h"
#include "core/bundle.h"
#include "core/result.h"
#include "core/schema.h"
#include "sources/files/file_common.h"

namespace dbs::files {

class PartStream {
 public:
  // row_bytes: about how many bytes a row takes (Bundle::ByteSize / rows), which sizes the
  // Parquet row groups (about 6 MiB of rows each).
  static Result<std::unique_ptr<PartStream>> Open(const TableSchema& table, const FileOptions& fo,
                                                  ZeroDatePolicy zero_date, std::string path,
                                                  uint64_t row_bytes);
  ~PartStream();
  PartStream(const PartStream&) = delete;
  PartStream& operator=(const PartStream&) = delete;

  Status Add(const std::vector<const Bundle*>& bundles);
  Result<uint64_t> Close();

  uint64_t rows() const { return rows_; }  // rows added so far
  const std::string& path() const { return path_; }

  struct Feed;  // the state shared with DuckDB's thread (part_stream.cc)

 private:
  PartStream() = default;
  std::string path_;
  uint64_t rows_ = 0;
  std::unique_ptr<Feed> feed_;
};

}  // namespace dbs::files

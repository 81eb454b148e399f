// PartStream (sinks/files/part_stream.h): DuckDB's string vectors point into the bundles
// handed to Add() (no copy), so Add() must not return before DuckDB has consumed them. Each
// bundle here is overwritten and freed as soon as Add() returns; the file must still hold every
// value exactly, across batch ends that fall inside a DuckDB vector, batches of empty bundles,
// short (inlined) and long strings, NULLs and empty strings.
#include "sinks/files/part_stream.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "sinks/files/naming.h"
#include "sources/files/duck.h"

namespace dbs::files {
namespace {

TableSchema Table() {
  TableSchema t;
  t.name = "t";
  Column id;
  id.name = "id";
  id.type = LogicalType::kInt64;
  Column s;
  s.name = "s";
  s.type = LogicalType::kText;
  Column b;
  b.name = "b";
  b.type = LogicalType::kBytes;
  t.columns = {id, s, b};
  return t;
}

// The text of row n: NULL every 7th, empty every 11th, else short or long (past the 12 bytes
// DuckDB inlines).
std::optional<std::string> TextOf(int64_t n) {
  if (n % 7 == 3) return std::nullopt;
  if (n % 11 == 5) return std::string();
  if (n % 2 == 0) return "r" + std::to_string(n);
  return "a longer value of row " + std::to_string(n) + std::string(n % 40, 'x');
}

std::unique_ptr<Bundle> Rows(int64_t first, int64_t count) {
  auto b = std::make_unique<Bundle>();
  b->columns.emplace_back(LogicalType::kInt64);
  b->columns.emplace_back(LogicalType::kText);
  b->columns.emplace_back(LogicalType::kBytes);
  for (int64_t n = first; n < first + count; ++n) {
    b->columns[0].AppendInt(n);
    const auto text = TextOf(n);
    if (text) {
      b->columns[1].AppendBytes(*text);
      b->columns[2].AppendBytes(*text + std::string(1, '\0'));
    } else {
      b->columns[1].AppendNull();
      b->columns[2].AppendNull();
    }
  }
  return b;
}

TEST(PartStream, BundlesMayGoOnceAddReturns) {
  const std::string dir = ::testing::TempDir() + "part_stream_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/p.parquet";
  FileOptions fo;
  fo.format = FileFormat::kParquet;
  fo.compression = "zstd";
  auto opened = PartStream::Open(Table(), fo, ZeroDatePolicy::kError, path, 64);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<PartStream> ps = std::move(*opened);
  // Batch sizes that end inside DuckDB's 2048-row vectors, one of empty bundles, one that
  // spans several vectors in several bundles.
  const std::vector<std::vector<int64_t>> batches = {{1000},          {1500, 7}, {0},   {0, 0},
                                                     {3000, 2048, 1}, {1},       {4097}};
  int64_t next = 0;
  for (const auto& sizes : batches) {
    std::vector<std::unique_ptr<Bundle>> owned;
    std::vector<const Bundle*> batch;
    for (int64_t n : sizes) {
      owned.push_back(Rows(next, n));
      batch.push_back(owned.back().get());
      next += n;
    }
    ASSERT_TRUE(ps->Add(batch).ok());
    // What DuckDB read from these bundles must already be its own: scribble over them, then
    // free them.
    for (auto& b : owned) {
      b->columns[1] = ColumnVector(LogicalType::kText);
      b->columns[2] = ColumnVector(LogicalType::kBytes);
      for (int i = 0; i < 64; ++i) b->columns[1].AppendBytes(std::string(100, '#'));
    }
    owned.clear();
  }
  auto closed = ps->Close();
  ASSERT_TRUE(closed.ok()) << closed.status().ToString();
  EXPECT_EQ(*closed, static_cast<uint64_t>(next));

  auto duck = Duck::Open(1, "128MB");
  ASSERT_TRUE(duck.ok());
  auto r = (*duck)->Query("SELECT id, s, b FROM read_parquet(" + SqlString(path) + ") ORDER BY id");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rows(), static_cast<size_t>(next));
  for (int64_t n = 0; n < next; ++n) {
    SCOPED_TRACE("row " + std::to_string(n));
    ASSERT_EQ(r->Text(0, n), std::to_string(n));
    const auto text = TextOf(n);
    ASSERT_EQ(r->Text(1, n), text);
    if (text) {
      // BLOB text: printable bytes as they are, the NUL byte escaped.
      ASSERT_EQ(r->Text(2, n), *text + "\\x00");
    } else {
      ASSERT_FALSE(r->Text(2, n).has_value());
    }
  }
  std::filesystem::remove_all(dir);
}

// Part names sort in number order past 99,999, and the first 100,000 keep their five digits.
TEST(PartNames, SortInNumberOrder) {
  FileOptions o;
  o.format = FileFormat::kParquet;
  EXPECT_EQ(PartName(42, o), "part-00042.parquet");
  EXPECT_EQ(PartName(100000, o), "part-a0000100000.parquet");
  std::vector<std::string> names;
  for (int64_t n :
       std::vector<int64_t>{0, 1, 9999, 99998, 99999, 100000, 100001, 999999, 12345678901}) {
    names.push_back(PartName(n, o));
    EXPECT_EQ(PartNumber(names.back()), n) << names.back();
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(PartNumber("part-.parquet"), -1);
  EXPECT_EQ(PartNumber("part-a.parquet"), -1);
  EXPECT_EQ(PartNumber("seg-00001.parquet"), -1);
}

}  // namespace
}  // namespace dbs::files

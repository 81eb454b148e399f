// Files as endpoints, end to end through NATS JetStream with real servers: MariaDB tables into
// CSV, JSONL and Parquet folders and back into PostgreSQL and MariaDB with the source's
// checksums; hand-written CSV/JSONL/Parquet files into PostgreSQL; exactly-once file writes
// under redelivery, restart and a killed writer; malformed CSV named by file, line and column.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/stream_config.h"
#include "core/subprocess.h"
#include "run/local_run.h"
#include "sinks/sink.h"
#include "sources/files/duck.h"
#include "sources/files/file_common.h"
#include "support/servers.h"
#include "support/streams.h"
#include "verify/checksum.h"

namespace dbs {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::MariaDbServer;
using testing::PostgresServer;
using testing::SharedServers;

std::string ReadFile(const std::string& path) {
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

  std::string NewMariaDb(const std::string& name) { return testing::FreshMariaDb(maria_, name); }
  std::string NewPostgres(const std::string& name) { return testing::FreshPostgres(pg_, name); }
  std::string Folder(const std::string& name) {
    fs::path p = dir_ / name;
    fs::create_directories(p);
    return p.string();
  }

  StreamConfig Config(const std::string& name, const json& src, const json& dst,
                      json extra = json::object()) {
    return testing::MakeStreamConfig(name, src, dst, extra);
  }

  Result<RunSummary> Run(const StreamConfig& c, int writers = 2) {
    return testing::RunStream(c, writers, (dir_ / "nats").string());
  }
  void RunAndVerify(const StreamConfig& c, int writers = 2) {
    testing::RunAndExpectVerified(c, writers, (dir_ / "nats").string());
  }
  void ExpectSameData(const json& src, const json& dst, const json& tables,
                      const std::string& target_schema = "") {
    testing::ExpectSameChecksums(src, dst, tables, target_schema);
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

// A manifest's parts: at least ceil(rows / per) of them, each of at most `per` rows (a writer
// commits a part before a bundle would take it past rowsPerFile), the data files listed.
void ExpectParts(const files::Manifest& m, const fs::path& table_dir, uint64_t rows, uint64_t per) {
  EXPECT_EQ(m.rows, rows);
  EXPECT_GE(m.files.size(), (rows + per - 1) / per);
  uint64_t sum = 0;
  std::vector<std::string> names;
  for (const auto& f : m.files) {
    EXPECT_GT(f.rows, 0u) << f.name;
    EXPECT_LE(f.rows, per) << f.name;
    EXPECT_EQ(f.sha256.size(), 64u) << f.name;
    sum += f.rows;
    names.push_back(f.name);
  }
  EXPECT_EQ(sum, rows);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(DataFiles(table_dir), names) << "no temporary or stray files";
}

class FilesRoundTrip : public FilesTest, public ::testing::WithParamInterface<const char*> {
 protected:
  // Runs stream `name` from `src` into folder `folder` in the test's format (1,000 rows a
  // part, 300 a bundle), verified; checks the parts of `table` (2,500 rows); returns the root.
  std::string ToFiles(const std::string& name, const std::string& src, const std::string& folder,
                      const std::string& table) {
    const std::string root = Folder(folder);
    RunAndVerify(Config(name, src, "file://" + root + "?format=" + GetParam() + "&rowsPerFile=1000",
                        {{"dataBundleSize", 300}}));
    const fs::path dir = fs::path(root) / table;
    auto m = files::ReadManifest(dir.string());
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (m.ok()) ExpectParts(*m, dir, 2500, 1000);
    return root;
  }
};

TEST_P(FilesRoundTrip, MariaDbToFilesAndBackKeepsTheChecksums) {
  const std::string format = GetParam();
  const std::string db = "files_rt_" + format;
  const std::string src = NewMariaDb(db);
  ASSERT_TRUE(maria_->Exec(kEdgeTable, db).ok());
  // MariaDB -> files, verified by reading the files back.
  const std::string root = ToFiles("m2f-" + format, src, "rt-" + format, "edge");
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

// A PostgreSQL table of many types and their edges (modelled on Pagila's columns: numeric
// money, timestamptz, arrays, bytea, jsonb), as the Parquet, CSV and JSONL targets store them.
constexpr char kPgEdgeTable[] = R"sql(
  CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
  CREATE TABLE pedge (
    id int PRIMARY KEY,
    n numeric(38,10), nu numeric, f4 real, f8 double precision,
    t text, vc varchar(50), ch char(5), b bytea, u uuid, jb jsonb, js json,
    ts timestamp(6), tz timestamptz, d date, tm time, ttz timetz, iv interval,
    ia int[], ta text[], bo boolean, sm smallint, bi bigint, bits varbit(16),
    ip inet, mac macaddr, m mood
  );
  INSERT INTO pedge VALUES
    (1, 1234567890123456789012345678.0123456789, 'NaN', 'Infinity', '-0', E'tab\there, "q"\nnew',
     'ünïcødé ✓ 日本語 🎉', 'ab', '\x00ff5c27220a0d', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
     '{"b": [1, 2.50, "x"], "a": 1}', '{"a":  1,  "dup": 1, "dup": 2}', '2024-02-29 23:59:59.123456',
     '2024-02-29 23:59:59.123456+05:30', '2024-02-29', '23:59:59.999999', '12:00:00+02',
     '1 year 2 mons 3 days 04:05:06.789', '{1,NULL,3}', '{"a,b","",NULL,"q\"t"}', true, -32768,
     -9223372036854775808, B'1010', '192.168.0.1/24', '08:00:2b:01:02:03', 'happy'),
    (2, -0.0000000001, '-123456789012345678901234567890.123456789012345678901234567890', 'NaN',
     '-Infinity', '', '', '', '', '00000000-0000-0000-0000-000000000000', '[]', 'null',
     '0001-01-01 00:00:00', '1970-01-01 00:00:00.000001+00', '0001-01-01', '00:00:00', '00:00:00-12',
     '-1 days -00:00:00.000001', '{}', '{}', false, 32767, 9223372036854775807, B'', '::1',
     'ff:ff:ff:ff:ff:ff', 'sad'),
    (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    (4, 0, '0.000000000000000000000000000001', 1.17549435e-38, 2.2250738585072014e-308, 'NULL',
     '\N', 'x', '\x5c4e', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '{"k": "v\u00e9"}', '{}',
     '9999-12-31 23:59:59.999999', '9999-12-31 23:59:59.999999+00', '9999-12-31', '24:00:00',
     '23:59:59+14', '0', '{{1,2},{3,4}}', '{"NULL"}', NULL, 0, 0, B'1111111111111111', '10.0.0.0/8',
     '00:00:00:00:00:00', 'ok');
  INSERT INTO pedge (id, n, t, tz)
    SELECT g, g / 7.0, 'row ' || g, '2023-01-01 00:00:00+00'::timestamptz + g * interval '1 second'
    FROM generate_series(5, 2500) g;
)sql";

TEST_P(FilesRoundTrip, PostgresToFilesAndBackKeepsTheChecksums) {
  const std::string format = GetParam();
  const std::string db = "files_prt_" + format;
  const std::string src = NewPostgres(db);
  ASSERT_TRUE(pg_->Exec(kPgEdgeTable, db).ok());
  const std::string root = ToFiles("p2f-" + format, src, "prt-" + format, "pedge");
  if (format == "jsonl") {  // strict JSON: NaN and the infinities as strings, not bare words
    size_t lines = 0;
    for (const std::string& name : DataFiles(fs::path(root) / "pedge")) {
      std::ifstream in(fs::path(root) / "pedge" / name);
      for (std::string line; std::getline(in, line); ++lines) {
        EXPECT_TRUE(json::accept(line)) << name << ": " << line.substr(0, 200);
      }
    }
    EXPECT_EQ(lines, 2500u);
  }
  // files -> PostgreSQL, verified against the files and against the original table.
  const std::string back_db = "files_prt_back_" + format;
  const std::string back = NewPostgres(back_db);
  RunAndVerify(Config("f2p-" + format, "file://" + root, back));
  ExpectSameData(src, back, json::array({"public.pedge"}), "public");
  auto v = pg_->Query(
      "SELECT n::text, nu::text, f4::text, f8::text, t, encode(b, 'hex'), jb::text, js::text, "
      "tz::text, tm::text, ttz::text, iv::text, ia::text, ta::text, bits::text, ip::text, m::text "
      "FROM public.pedge WHERE id IN (1, 4) ORDER BY id",
      back_db);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_EQ(v->size(), 2u);
  const std::vector<std::string> want1 = {"1234567890123456789012345678.0123456789",
                                          "NaN",
                                          "Infinity",
                                          "-0",
                                          "tab\there, \"q\"\nnew",
                                          "00ff5c27220a0d",
                                          "{\"a\": 1, \"b\": [1, 2.50, \"x\"]}",
                                          "{\"a\":  1,  \"dup\": 1, \"dup\": 2}",
                                          "2024-02-29 18:29:59.123456+00",
                                          "23:59:59.999999",
                                          "12:00:00+02",
                                          "1 year 2 mons 3 days 04:05:06.789",
                                          "{1,NULL,3}",
                                          "{\"a,b\",\"\",NULL,\"q\\\"t\"}",
                                          "1010",
                                          "192.168.0.1/24",
                                          "happy"};
  for (size_t i = 0; i < want1.size(); ++i) EXPECT_EQ((*v)[0][i], want1[i]) << "column " << i;
  EXPECT_EQ((*v)[1][4], "NULL") << "the text NULL is not a NULL";
  EXPECT_EQ((*v)[1][9], "24:00:00");
  EXPECT_EQ((*v)[1][12], "{{1,2},{3,4}}");
  EXPECT_EQ((*v)[1][13], "{\"NULL\"}");
}

// Files written by others (sniffed: no manifest) into PostgreSQL: a CSV file, a JSONL file, a
// Parquet file and a folder of CSV files (one table).
TEST_F(FilesTest, CsvJsonlAndParquetFilesIntoPostgres) {
  const fs::path in = Folder("in");
  {
    std::ofstream csv(in / "people.csv");
    csv << "id,name,balance,born,note\n";
    for (int i = 1; i <= 500; ++i) {
      csv << i << ",name " << i << "," << i << "." << (i % 100) << ",2000-01-" << (1 + i % 28)
          << "," << (i % 7 == 0 ? "" : "\"n, " + std::to_string(i) + "\"") << "\n";
    }
    csv << "501,\"Zoë \"\"quoted\"\"\",-1.5,1999-12-31,日本\n";
    std::ofstream jsonl(in / "events.jsonl");
    for (int i = 1; i <= 300; ++i) {
      jsonl << "{\"id\": " << i << ", \"kind\": \"k" << (i % 3)
            << "\", \"ok\": " << (i % 2 ? "true" : "false")
            << ", \"at\": \"2024-05-01T10:00:00\", \"tags\": [\"a\", " << i << "]}\n";
    }
    fs::create_directories(in / "logs");
    for (int f = 0; f < 2; ++f) {
      std::ofstream part(in / "logs" / ("part-" + std::to_string(f) + ".csv"));
      part << "seq,msg\n";
      for (int i = 0; i < 100; ++i) part << (f * 100 + i) << ",m" << i << "\n";
    }
  }
  {
    auto duck = files::Duck::Open();
    ASSERT_TRUE(duck.ok()) << duck.status().ToString();
    ASSERT_TRUE((*duck)
                    ->Exec("COPY (SELECT i AS id, CAST(i / 3 AS DECIMAL(18,4)) AS amount, "
                           "'v' || i AS label, TIMESTAMP '2024-01-01' + INTERVAL (i) MINUTE AS ts, "
                           "CASE WHEN i % 5 = 0 THEN NULL ELSE i % 2 = 0 END AS even, "
                           "encode('b' || i) AS raw FROM range(1, 1201) t(i)) TO " +
                           files::SqlString((in / "orders.parquet").string()) + " (FORMAT parquet)")
                    .ok());
  }
  const std::string pg = NewPostgres("files_in_pg");
  RunAndVerify(Config("files-in", "file://" + in.string(), pg));
  auto counts = pg_->Query(
      "SELECT (SELECT count(*) FROM people), (SELECT count(*) FROM events), "
      "(SELECT count(*) FROM orders), (SELECT count(*) FROM logs)",
      "files_in_pg");
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ((*counts)[0][0], "501");
  EXPECT_EQ((*counts)[0][1], "300");
  EXPECT_EQ((*counts)[0][2], "1200");
  EXPECT_EQ((*counts)[0][3], "200");
  auto v = pg_->Query(
      "SELECT name, note IS NULL, (SELECT amount::text FROM orders WHERE id = 1), "
      "(SELECT encode(raw, 'escape') FROM orders WHERE id = 7), "
      "(SELECT tags::text FROM events WHERE id = 2) FROM people WHERE id = 501",
      "files_in_pg");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ((*v)[0][0], "Zoë \"quoted\"");
  EXPECT_EQ((*v)[0][1], "f");
  EXPECT_EQ((*v)[0][2], "0.3333");
  EXPECT_EQ((*v)[0][3], "b7");
  EXPECT_EQ((*v)[0][4], "[\"a\",2]");
}

// A CSV row that does not fit fails the run naming the file, the line and the column.
TEST_F(FilesTest, MalformedCsvNamesFileLineAndColumn) {
  const fs::path in = Folder("bad");
  {
    std::ofstream csv(in / "amounts.csv");
    csv << "id,amount,label\n";
    for (int i = 1; i <= 30000; ++i) csv << i << "," << i * 2 << ",x" << i << "\n";
    csv << "30001,12x,broken\n";  // line 30002: past DuckDB's sniffing sample
  }
  const std::string pg = NewPostgres("files_bad_pg");
  auto r = Run(Config("files-bad", "file://" + in.string(), pg), 1);
  ASSERT_FALSE(r.ok());
  const std::string msg = r.status().ToString();
  EXPECT_NE(msg.find("amounts.csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("30002"), std::string::npos) << msg;
  EXPECT_NE(msg.find("amount"), std::string::npos) << msg;
  // A row with a field too many, within the sample.
  const fs::path in2 = Folder("bad2");
  {
    std::ofstream csv(in2 / "wide.csv");
    csv << "a,b\n1,2\n3,4\n5,6,7\n8,9\n";
  }
  auto r2 = Run(Config("files-bad2", "file://" + in2.string(), pg), 1);
  ASSERT_FALSE(r2.ok());
  const std::string msg2 = r2.status().ToString();
  EXPECT_NE(msg2.find("wide.csv"), std::string::npos) << msg2;
  EXPECT_NE(msg2.find("Line: 4"), std::string::npos) << msg2;
}

// rows [from, from + n) of the two-column table below.
Bundle Rows(int64_t from, int64_t n) {
  Bundle b;
  b.columns.emplace_back(LogicalType::kInt64);
  b.columns.emplace_back(LogicalType::kText);
  for (int64_t i = from; i < from + n; ++i) {
    b.columns[0].AppendInt(i);
    b.columns[1].AppendBytes("v" + std::to_string(i));
  }
  return b;
}

TableSchema TwoColumns() {
  TableSchema t;
  t.schema = "s";
  t.name = "t";
  Column id;
  id.name = "id";
  id.type = LogicalType::kInt64;
  id.nullable = false;
  Column v;
  v.name = "v";
  v.type = LogicalType::kText;
  t.columns = {id, v};
  t.primary_key = {"id"};
  return t;
}

// Row count and distinct ids of the table folder, read back through the file source.
std::pair<int64_t, int64_t> CountBack(const std::string& root) {
  auto duck = files::Duck::Open();
  EXPECT_TRUE(duck.ok());
  auto m = files::ReadManifest(root + "/t");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!duck.ok() || !m.ok()) return {-1, -1};
  std::string list;
  for (const auto& f : m->files)
    list += (list.empty() ? "" : ", ") + files::SqlString(root + "/t/" + f.name);
  auto r = (*duck)->Query("SELECT count(*), count(DISTINCT id) FROM read_parquet([" + list + "])");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {-1, -1};
  return {std::stoll(r->Text(0, 0).value_or("-1")), std::stoll(r->Text(1, 0).value_or("-1"))};
}

// The sink's exactly-once rules, driven directly: redelivered and regrouped bundles, a restarted
// writer (a new sink on the same run), what a killed writer leaves behind, a second finishing
// writer, append and replace runs, and an abandoned run.
TEST_F(FilesTest, RedeliveryRestartAndDebrisLeaveExactFiles) {
  const std::string root = Folder("once");
  auto cfg = ParseConnectionUrl("file://" + root + "?format=parquet&rowsPerFile=250");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  const TableSchema t = TwoColumns();
  SinkOptions so;
  so.stream = "once.run1";
  std::vector<Bundle> b;
  for (int i = 0; i < 6; ++i) b.push_back(Rows(i * 100, 100));
  auto ref = [&](int i) { return BundleRef{"0.0." + std::to_string(i), &t, &b[i]}; };
  auto ids = [](const std::vector<std::string>& v) {
    return std::set<std::string>(v.begin(), v.end());
  };
  using Ids = std::set<std::string>;
  {
    auto sink = Sink::Open(*cfg, so);
    ASSERT_TRUE(sink.ok()) << sink.status().ToString();
    EXPECT_TRUE((*sink)->DefersCommit());
    ASSERT_TRUE((*sink)->PrepareTable(t).ok());
    auto n = (*sink)->Apply({ref(0), ref(1)});
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, 2u);
    EXPECT_TRUE((*sink)->TakeSettled().committed.empty()) << "staged, not committed yet";
    // Bundle 1 again, with bundle 2: 300 rows would pass rowsPerFile, so the part of 0 and 1
    // is committed first and bundle 2 starts the next one.
    n = (*sink)->Apply({ref(1), ref(2)});
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 1u);
    auto first = (*sink)->TakeSettled();
    EXPECT_EQ(ids(first.committed), (Ids{"0.0.0", "0.0.1"}));
    EXPECT_TRUE(first.dropped.empty());
    n = (*sink)->Apply({ref(2), ref(2)});
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 0u);
    // Destroyed with bundle 2 staged: a writer killed before committing; its message was
    // never acknowledged and comes back.
  }
  // What a writer killed between writing a segment and committing it leaves, a temporary file
  // of an open part, and a stray part file and temporary file of a finish that died half-way.
  const fs::path stage = fs::path(root) / ".dbs" / "runs" / "once.run1" / "t";
  ASSERT_TRUE(fs::is_directory(stage));
  fs::copy_file(stage / "seg-0.0.0.parquet", stage / "seg-0.0.9.parquet");
  std::ofstream(stage / ".seg-0.0.7-0123456789abcdef.parquet.tmp") << "partial";
  fs::create_directories(fs::path(root) / "t");
  std::ofstream(fs::path(root) / "t" / "part-00007.parquet") << "partial";
  std::ofstream(fs::path(root) / "t" / ".part-00000.parquet.tmp") << "partial";
  EXPECT_FALSE(fs::exists(fs::path(root) / "t" / "_manifest.json"))
      << "nothing of the run is committed before it finishes";
  {
    auto sink = Sink::Open(*cfg, so);  // restarted writer
    ASSERT_TRUE(sink.ok());
    ASSERT_TRUE((*sink)->PrepareTable(t).ok());
    auto n = (*sink)->Apply({ref(0), ref(3), ref(1), ref(4)});
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, 2u) << "bundles another sink committed are skipped";
    EXPECT_EQ(ids((*sink)->TakeSettled().committed), (Ids{"0.0.0", "0.0.1"}))
        << "and settled at once";
    // Two writers staged bundle 4 (a redelivery while the first held it): the second commits
    // first, so the first's part (3 and 4) is dropped whole and its bundles come back.
    auto other = Sink::Open(*cfg, so);
    ASSERT_TRUE(other.ok());
    ASSERT_TRUE((*other)->Apply({ref(4)}).ok());
    ASSERT_TRUE((*other)->CommitStaged().ok());
    EXPECT_EQ(ids((*other)->TakeSettled().committed), (Ids{"0.0.4"}));
    ASSERT_TRUE((*sink)->CommitStaged().ok());
    auto settled = (*sink)->TakeSettled();
    EXPECT_TRUE(settled.committed.empty());
    EXPECT_EQ(ids(settled.dropped), (Ids{"0.0.3", "0.0.4"}));
    // Redelivered: 4 is skipped, 3 is staged again, and 2 comes back from the writer that was
    // killed; the other writer takes bundle 5.
    n = (*sink)->Apply({ref(4), ref(3), ref(2)});
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, 2u);
    ASSERT_TRUE((*other)->Apply({ref(5)}).ok());
    ASSERT_TRUE((*other)->CommitStaged().ok());
    ASSERT_TRUE((*sink)->FinishStream({t}).ok());
    EXPECT_EQ(ids((*sink)->TakeSettled().committed), (Ids{"0.0.4", "0.0.3", "0.0.2"}));
    ASSERT_TRUE((*other)->FinishStream({t}).ok());  // a second writer finishing the same run
    ASSERT_TRUE((*other)->ForgetStream().ok());
    ASSERT_TRUE((*sink)->ForgetStream().ok());
  }
  EXPECT_FALSE(fs::exists(stage)) << "the staging is removed once the run is over";
  auto m = files::ReadManifest(root + "/t");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ExpectParts(*m, fs::path(root) / "t", 600, 250);
  // In the order of their first bundles: 0 and 1, 3 and 2 (staged again in that order), 4, 5.
  std::vector<uint64_t> rows;
  for (const auto& f : m->files) rows.push_back(f.rows);
  EXPECT_EQ(rows, (std::vector<uint64_t>{200, 200, 100, 100}));
  EXPECT_EQ(m->files[0].name, "part-00000.parquet");
  EXPECT_EQ(m->files[3].name, "part-00003.parquet");
  EXPECT_EQ(CountBack(root), std::make_pair(int64_t{600}, int64_t{600}));

  // An appending run adds files after the committed ones; a truncate_and_load run replaces.
  so.stream = "once.run2";
  {
    auto sink = Sink::Open(*cfg, so);
    ASSERT_TRUE(sink.ok());
    ASSERT_TRUE((*sink)->PrepareTable(t).ok());
    ASSERT_TRUE((*sink)->Apply({ref(5)}).ok());
    ASSERT_TRUE((*sink)->FinishStream({t}).ok());
  }
  m = files::ReadManifest(root + "/t");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->rows, 700u);
  ASSERT_EQ(m->files.size(), 5u);
  EXPECT_EQ(m->files[4].name, "part-00004.parquet");
  so.stream = "once.run3";
  so.write_mode = WriteMode::kTruncateAndLoad;
  {
    auto sink = Sink::Open(*cfg, so);
    ASSERT_TRUE(sink.ok());
    ASSERT_TRUE((*sink)->PrepareTable(t).ok());
    ASSERT_TRUE((*sink)->Apply({ref(4)}).ok());
    ASSERT_TRUE((*sink)->FinishStream({t}).ok());
  }
  m = files::ReadManifest(root + "/t");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->rows, 100u);
  EXPECT_EQ(DataFiles(fs::path(root) / "t"), (std::vector<std::string>{"part-00005.parquet"}));
  // An abandoned run leaves the committed files alone and writes nothing more.
  so.stream = "once.run4";
  {
    auto sink = Sink::Open(*cfg, so);
    ASSERT_TRUE(sink.ok());
    ASSERT_TRUE((*sink)->PrepareTable(t).ok());
    ASSERT_TRUE((*sink)->Apply({ref(0), ref(1)}).ok());
    auto kept = (*sink)->AbandonStream(false);
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    EXPECT_TRUE(kept->empty());
    EXPECT_FALSE((*sink)->PrepareTable(t).ok());
    EXPECT_FALSE((*sink)->Apply({ref(2)}).ok());
  }
  EXPECT_FALSE(fs::exists(fs::path(root) / ".dbs" / "runs" / "once.run4"));
  EXPECT_EQ(DataFiles(fs::path(root) / "t"), (std::vector<std::string>{"part-00005.parquet"}));
  EXPECT_EQ(CountBack(root), std::make_pair(int64_t{100}, int64_t{100}));
}

using Proc = testing::BinaryProc;

// Committed segments of the run(s) staged under a file target's root.
int CountSegments(const fs::path& root) {
  int n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root / ".dbs" / "runs", ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->path().extension() == ".ids") ++n;
  }
  return n;
}

// A slow source (a query that yields a row every 300 ms, a bundle per row): the writers' fetches
// often find nothing, and they keep their parts open until the reader is done instead of
// committing a part file per bundle. (Rows of 20 kB: PostgreSQL sends each one at once.)
TEST_F(FilesTest, SlowSourceDoesNotLeaveAFilePerBundle) {
  const std::string src = NewPostgres("files_slow");
  const fs::path root = Folder("slow");
  json tables =
      json::array({{{"name", "trickle"},
                    {"query",
                     "SELECT g AS id, repeat('v', 20000) || g AS v FROM generate_series(1, 12) g "
                     "WHERE pg_sleep(0.3)::text = ''"}}});
  RunAndVerify(Config("slow", src, "file://" + root.string() + "?format=parquet",
                      {{"dataBundleSize", 1}, {"tables", tables}}));
  auto m = files::ReadManifest((root / "trickle").string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->rows, 12u);
  EXPECT_LE(m->files.size(), 2u) << "one part per writer, not one per bundle (12 bundles)";
}

// bytesPerFile rolls parts over by the size of their files, and rowGroupSize sets the rows of a
// Parquet row group; every row still arrives once (verified) and the manifest lists each part.
TEST_F(FilesTest, PartsRollOverBySizeAndRowGroupsHaveTheirSize) {
  const std::string db = "files_sized";
  const std::string src = NewPostgres(db);
  ASSERT_TRUE(pg_->Exec("CREATE TABLE big AS SELECT g AS id, md5(g::text) || repeat('x', 100) AS v "
                        "FROM generate_series(1, 20000) g; ALTER TABLE big ADD PRIMARY KEY (id)",
                        db)
                  .ok());
  // CSV: about 2.8 MB of text, parts of at least 500 kB (the size is checked per bundle).
  const fs::path csv = Folder("sized-csv");
  RunAndVerify(Config("sized-csv", src,
                      "file://" + csv.string() + "?format=csv&bytesPerFile=500000",
                      {{"dataBundleSize", 500}}));
  auto m = files::ReadManifest((csv / "big").string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->rows, 20000u);
  EXPECT_GE(m->files.size(), 3u) << "parts of about 500 kB, not one file";
  uint64_t small = 0;
  for (const auto& f : m->files) {
    EXPECT_LT(f.bytes, 500000u + 100000u) << f.name << ": one bundle past the limit at most";
    small += f.bytes < 500000 ? 1 : 0;
  }
  EXPECT_LE(small, 2u) << "only each writer's last part is under the limit";
  EXPECT_EQ(DataFiles(csv / "big").size(), m->files.size());

  // Parquet: row groups of 4,000 rows; DuckDB cuts a group at the first chunk (of at most
  // 2,048 rows) that reaches the size.
  const fs::path pq = Folder("sized-parquet");
  RunAndVerify(Config("sized-pq", src,
                      "file://" + pq.string() + "?format=parquet&rowGroupSize=4000",
                      {{"dataBundleSize", 500}}));
  auto duck = files::Duck::Open();
  ASSERT_TRUE(duck.ok()) << duck.status().ToString();
  auto groups = [&](const std::string& what) -> int64_t {
    auto r = (*duck)->Query("SELECT (" + what +
                            ")::VARCHAR FROM (SELECT DISTINCT file_name, row_group_id, "
                            "row_group_num_rows AS n FROM parquet_metadata(" +
                            files::SqlString((pq / "big" / "*.parquet").string()) + "))");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::stoll(r->Text(0, 0).value_or("-1")) : -1;
  };
  EXPECT_EQ(groups("sum(n)"), 20000);
  EXPECT_GE(groups("count(*)"), 4);
  EXPECT_LE(groups("max(n)"), 4000 + 2047);
  EXPECT_EQ(groups("count(*) FILTER (WHERE n < 4000)"), groups("count(DISTINCT file_name)"))
      << "only a part's last group is short";

  // rowGroupSize is a Parquet setting.
  auto s = Run(Config("sized-bad", src, "file://" + csv.string() + "?format=csv&rowGroupSize=10"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("rowGroupSize applies to Parquet files only"),
            std::string::npos)
      << s.status().ToString();
}

// A writer process SIGKILLed mid-load and a new one started: every row once, no partial file.
TEST_F(FilesTest, WriterKilledMidLoadLeavesNoDuplicateOrPartialFile) {
  auto nats = testing::NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status().ToString();
  const std::string src = NewPostgres("files_kill_src");
  ASSERT_TRUE(
      pg_->Exec("CREATE TABLE t (id int PRIMARY KEY, v varchar(200)); "
                "INSERT INTO t SELECT g, repeat('x', g % 200) FROM generate_series(1, 300000) g",
                "files_kill_src")
          .ok());
  const fs::path root = Folder("kill");
  json j = {{"name", "files-kill"},
            {"source", src},
            {"target", "file://" + root.string() + "?format=parquet&rowsPerFile=100000"},
            {"dataBundleSize", 500}};
  const std::string cfg = (dir_ / "files-kill.json").string();
  std::ofstream(cfg) << j.dump(2);
  const std::string url = (*nats)->url();
  const std::string logs = dir_.string();
  Proc r(DBS_READER_BIN, {"--nats-url", url, cfg}, logs + "/r.log");
  {
    Proc w(DBS_WRITER_BIN, {"--nats-url", url, "--id", "victim", cfg}, logs + "/victim.log");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    int n = 0;
    while (std::chrono::steady_clock::now() < deadline && (n = CountSegments(root)) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_GT(n, 0) << ReadFile(logs + "/victim.log");
    w.Kill();
    w.Wait(std::chrono::seconds(10));
    EXPECT_FALSE(fs::exists(root / "t" / "_manifest.json")) << "killed before the end";
  }
  Proc again(DBS_WRITER_BIN, {"--nats-url", url, "--id", "again", cfg}, logs + "/again.log");
  EXPECT_EQ(again.Wait(std::chrono::seconds(300)), 0) << ReadFile(logs + "/again.log");
  EXPECT_EQ(r.Wait(std::chrono::seconds(60)), 0) << ReadFile(logs + "/r.log");
  auto m = files::ReadManifest((root / "t").string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ExpectParts(*m, root / "t", 300000, 100000);
  EXPECT_EQ(CountBack(root.string()), std::make_pair(int64_t{300000}, int64_t{300000}));
  auto c = ParseStreamConfig(j);
  ASSERT_TRUE(c.ok());
  auto v = VerifyStream(*c);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  for (const auto& t : *v) EXPECT_TRUE(t.match()) << t.Describe();
}

}  // namespace
}  // namespace dbs

// File sources without a manifest, end to end into PostgreSQL through NATS JetStream with real
// servers: Hive-style partition folders read as columns, per-column type overrides of sniffed
// files, and the malformed-row policies (fail, skip) on CSV and JSONL files.
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config/stream_config.h"
#include "objstore/object_store.h"
#include "reader/load_reader.h"
#include "run/local_run.h"
#include "sources/files/duck.h"
#include "sources/source.h"
#include "support/servers.h"
#include "support/streams.h"

namespace dbs {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::PostgresServer;
using testing::SharedServers;

class FileSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = SharedServers::Postgres();
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pg_ = *p;
    dir_ = fs::temp_directory_path() / ("dbstreams-file-source-test-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (std::getenv("DBS_KEEP_TEST_FILES") != nullptr) return;  // for inspection
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Writes `text` to dir_/rel (creating its folders); returns the path.
  fs::path Write(const std::string& rel, const std::string& text) {
    const fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  // Writes `text` gzip-compressed to dir_/rel (creating its folders).
  void WriteGzip(const std::string& rel, const std::string& text) {
    const fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    gzFile gz = gzopen(p.c_str(), "wb");
    ASSERT_NE(gz, nullptr);
    ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())),
              static_cast<int>(text.size()));
    ASSERT_EQ(gzclose(gz), Z_OK);
  }
  // Runs a DuckDB statement (writing Parquet files, reading folders back as DuckDB sees them).
  files::DuckResult Duck(const std::string& sql) {
    if (!duck_) {
      auto d = files::Duck::Open();
      EXPECT_TRUE(d.ok()) << d.status().ToString();
      if (!d.ok()) return files::DuckResult();
      duck_ = std::move(d).value();
    }
    auto r = duck_->Query(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    return r.ok() ? std::move(r).value() : files::DuckResult();
  }
  std::string NewPostgres(const std::string& name) { return testing::FreshPostgres(pg_, name); }
  StreamConfig Config(const std::string& name, const json& src, const json& dst,
                      json extra = json::object()) {
    return testing::MakeStreamConfig(name, src, dst, extra);
  }
  Result<RunSummary> Run(const StreamConfig& c) {
    return testing::RunStream(c, 2, (dir_ / "nats").string());
  }
  void RunAndVerify(const StreamConfig& c) {
    testing::RunAndExpectVerified(c, 2, (dir_ / "nats").string());
  }
  // The rows of a query on PostgreSQL database `db`, NULL as "NULL" (a failed query fails the
  // test).
  std::vector<std::vector<std::string>> Pg(const std::string& sql, const std::string& db) {
    auto r = pg_->Query(sql, db);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    std::vector<std::vector<std::string>> out;
    if (!r.ok()) return out;
    for (const auto& row : *r) {
      out.emplace_back();
      for (const auto& v : row) out.back().push_back(v.value_or("NULL"));
    }
    return out;
  }
  // column -> data_type of a PostgreSQL table.
  std::map<std::string, std::string> PgTypes(const std::string& table, const std::string& db) {
    std::map<std::string, std::string> out;
    for (const auto& row :
         Pg("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '" +
                table + "'",
            db)) {
      out[row[0]] = row[1];
    }
    return out;
  }

  PostgresServer* pg_ = nullptr;
  fs::path dir_;
  std::unique_ptr<files::Duck> duck_;
};

// Parquet, CSV and JSONL tables in key=value folders: one table each, the keys as columns typed
// as DuckDB's hive_partitioning types them, other folders and hidden files ignored.
TEST_F(FileSourceTest, PartitionFoldersBecomeColumns) {
  const fs::path in = dir_ / "in";
  // events: Parquet, two levels, 300 rows.
  const std::vector<std::tuple<std::string, int, int>> parts = {{"year=2026/month=11", 1, 100},
                                                                {"year=2026/month=12", 101, 250},
                                                                {"year=2025/month=1", 251, 300}};
  for (const auto& [folder, from, to] : parts) {
    fs::create_directories(in / "events" / folder);
    Duck(
        "COPY (SELECT i AS id, CAST(i / 8 AS DECIMAL(12,2)) AS amount, 'e' || i AS label "
        "FROM range(" +
        std::to_string(from) + ", " + std::to_string(to + 1) + ") t(i)) TO " +
        files::SqlString((in / "events" / folder / "part-0.parquet").string()) +
        " (FORMAT parquet)");
  }
  Write("in/events/year=2026/month=11/.part-0.parquet.crc", "not data");
  Write("in/events/_staging/part-9.csv", "id,amount,label\n999,1,x\n");  // not a partition folder
  // clicks: CSV; the date key types as DATE, the hour key (leading zero) stays text.
  Write("in/clicks/day=2024-01-05/hour=07/a.csv", "user,n\nu1,3\nu2,4\n");
  Write("in/clicks/day=2024-01-06/hour=12/b.csv", "user,n\nu3,5\n");
  Write("in/clicks/day=2024-01-06/hour=13/c.csv", "user,n\nu4,6\nu5,7\nu6,8\n");
  // logs: JSONL, one percent-encoded value.
  Write("in/logs/region=eu%2Dwest/x.jsonl", "{\"msg\": \"a\"}\n{\"msg\": \"b\"}\n");
  Write("in/logs/region=us/x.jsonl", "{\"msg\": \"c\"}\n");

  const std::string db = "fsrc_hive_pg";
  const std::string pg = NewPostgres(db);
  RunAndVerify(Config("fsrc-hive", "file://" + in.string(), pg));

  auto per =
      Pg("SELECT year, month, count(*), sum(amount)::text FROM events GROUP BY 1, 2 ORDER BY 1, 2",
         db);
  ASSERT_EQ(per.size(), 3u);
  EXPECT_EQ(per[0][2], "50");
  EXPECT_EQ(per[1][2], "100");
  EXPECT_EQ(per[2][2], "150");
  // The same figures as DuckDB's own hive_partitioning read of the folder.
  auto oracle =
      Duck("SELECT year, month, count(*), CAST(sum(amount) AS VARCHAR) FROM read_parquet(" +
           files::SqlString((in / "events" / "**" / "*.parquet").string()) +
           ", hive_partitioning = true) GROUP BY 1, 2 ORDER BY 1, 2");
  ASSERT_EQ(oracle.rows(), 3u);
  for (size_t r = 0; r < 3; ++r) {
    for (size_t c = 0; c < 4; ++c) EXPECT_EQ(oracle.Text(c, r).value_or(""), per[r][c]);
  }
  EXPECT_EQ(Pg("SELECT count(*) FROM events WHERE id = 999", db)[0][0], "0")
      << "files outside partition folders are not part of the table";

  auto types = PgTypes("events", db);
  EXPECT_EQ(types["year"], "bigint");
  EXPECT_EQ(types["month"], "bigint");
  EXPECT_EQ(types["amount"], "numeric");
  types = PgTypes("clicks", db);
  EXPECT_EQ(types["day"], "date");
  EXPECT_EQ(types["hour"], "text");
  auto describe = Duck("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_csv(" +
                       files::SqlString((in / "clicks" / "**" / "*.csv").string()) +
                       ", hive_partitioning = true)) WHERE column_name IN ('day', 'hour') "
                       "ORDER BY 1");
  ASSERT_EQ(describe.rows(), 2u);
  EXPECT_EQ(describe.Text(1, 0).value_or(""), "DATE") << "as DuckDB types it";
  EXPECT_EQ(describe.Text(1, 1).value_or(""), "VARCHAR") << "as DuckDB types it";
  auto clicks =
      Pg("SELECT day::text, hour, count(*), sum(n) FROM clicks GROUP BY 1, 2 ORDER BY 1, 2", db);
  ASSERT_EQ(clicks.size(), 3u);
  EXPECT_EQ(clicks[0], (std::vector<std::string>{"2024-01-05", "07", "2", "7"}));
  EXPECT_EQ(clicks[1], (std::vector<std::string>{"2024-01-06", "12", "1", "5"}));
  EXPECT_EQ(clicks[2], (std::vector<std::string>{"2024-01-06", "13", "3", "21"}));
  auto logs =
      Pg("SELECT region, string_agg(msg, ',' ORDER BY msg) FROM logs GROUP BY 1 ORDER BY 1", db);
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0], (std::vector<std::string>{"eu-west", "a,b"}));
  EXPECT_EQ(logs[1], (std::vector<std::string>{"us", "c"}));

  // A filter on a partition column reads only that partition.
  const std::string db2 = "fsrc_hive_filter_pg";
  const std::string pg2 = NewPostgres(db2);
  RunAndVerify(
      Config("fsrc-hive-filter", "file://" + in.string(), pg2,
             {{"tables", json::array({{{"name", "events"}, {"filter", "year = 2026"}}})}}));
  EXPECT_EQ(Pg("SELECT count(*), min(id), max(id) FROM events", db2)[0],
            (std::vector<std::string>{"250", "1", "250"}));
}

// A connection path whose sub-folders are partition folders is one table; a folder with data
// files both directly and in partition folders, or partition folders with different keys, is
// refused naming the folder.
TEST_F(FileSourceTest, PartitionedRootAndInconsistentFolders) {
  Write("root/sales/region=eu/a.csv", "id,v\n1,10\n2,20\n");
  Write("root/sales/region=us/b.csv", "id,v\n3,30\n");
  auto cfg = ParseConnectionUrl("file://" + (dir_ / "root" / "sales").string());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto source = Source::Open(*cfg);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto tables = (*source)->ListTables();
  ASSERT_TRUE(tables.ok()) << tables.status().ToString();
  ASSERT_EQ(tables->size(), 1u);
  EXPECT_EQ((*tables)[0].name, "sales");
  auto schema = (*source)->Describe((*tables)[0]);
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  ASSERT_EQ(schema->columns.size(), 3u);
  EXPECT_EQ(schema->columns[2].name, "region");
  EXPECT_EQ(schema->columns[2].type, LogicalType::kText);

  Write("mixed/t/a.csv", "id\n1\n");
  Write("mixed/t/k=1/b.csv", "id\n2\n");
  const std::string pg = NewPostgres("fsrc_hive_bad_pg");
  auto r = Run(Config("fsrc-hive-mixed", "file://" + (dir_ / "mixed").string(), pg));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("both directly and in partition folders"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find((dir_ / "mixed" / "t").string()), std::string::npos)
      << r.status().ToString();

  Write("keys/t/a=1/b=2/x.csv", "id\n1\n");
  Write("keys/t/b=2/a=1/y.csv", "id\n2\n");
  r = Run(Config("fsrc-hive-keys", "file://" + (dir_ / "keys").string(), pg));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("do not have the same keys"), std::string::npos)
      << r.status().ToString();
}

// Partition folders of an S3 prefix: the same table as from a local folder (objects are read
// through local copies, whose paths have no partition folders: the values come from the keys).
TEST_F(FileSourceTest, PartitionFoldersOnS3) {
  auto s3 = testing::S3Server::Start();
  ASSERT_TRUE(s3.ok()) << s3.status().ToString();
  ASSERT_TRUE((*s3)->CreateBucket("fsrc").ok());
  S3Settings o;
  o.endpoint = (*s3)->endpoint();
  o.bucket = "fsrc";
  o.prefix = "lake";
  o.access_key = (*s3)->access_key();
  o.secret_key = (*s3)->secret_key();
  auto store = OpenS3Store(o);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto put = [&](const std::string& key, const std::string& bytes) {
    auto w = (*store)->Create(key);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->Write(bytes).ok());
    ASSERT_TRUE((*w)->Commit().ok());
  };
  put("sales/region=eu/day=2024-01-05/a.csv", "id,v\n1,10\n2,20\n");
  put("sales/region=us/day=2024-01-06/b.csv", "id,v\n3,30\n");
  put("sales/region=us/day=2024-01-07/c.csv", "id,v\n4,40\n5,50\n");
  put("sales/_tmp/x.csv", "id,v\n99,1\n");  // not a partition folder
  put("orders.csv", "id\n1\n2\n");
  // Spark's markers. They also make the test server (s3rver) list the folders: it drops a
  // common prefix whose objects are all two or more folders deeper (S3 does not).
  put("sales/_SUCCESS", "");
  put("sales/region=eu/_SUCCESS", "");
  put("sales/region=us/_SUCCESS", "");
  auto s3_url = [&](const std::string& prefix) {
    return json{{"url", "s3://fsrc/" + prefix + "?endpoint=" + (*s3)->endpoint()},
                {"user", (*s3)->access_key()},
                {"password", (*s3)->secret_key()}};
  };
  const std::string db = "fsrc_hive_s3_pg";
  const std::string pg = NewPostgres(db);
  RunAndVerify(Config("fsrc-hive-s3", s3_url("lake"), pg));
  EXPECT_EQ(Pg("SELECT string_agg(id || ':' || v || ':' || region || ':' || day, ' ' ORDER BY id) "
               "FROM sales",
               db)[0][0],
            "1:10:eu:2024-01-05 2:20:eu:2024-01-05 3:30:us:2024-01-06 4:40:us:2024-01-07 "
            "5:50:us:2024-01-07");
  auto types = PgTypes("sales", db);
  EXPECT_EQ(types["region"], "text");
  EXPECT_EQ(types["day"], "date");
  EXPECT_EQ(Pg("SELECT count(*) FROM orders", db)[0][0], "2");

  // A glob across folders is one table: only the us days, with their partition columns.
  const std::string glob_db = "fsrc_glob_s3_pg";
  const std::string glob_pg = NewPostgres(glob_db);
  RunAndVerify(Config("fsrc-glob-s3", s3_url("lake"), glob_pg,
                      {{"tables", json::array({json{{"name", "us_sales"},
                                                    {"files", "sales/region=us/*/*.csv"}}})}}));
  EXPECT_EQ(Pg("SELECT string_agg(id || ':' || day, ' ' ORDER BY id) FROM us_sales", glob_db)[0][0],
            "3:2024-01-06 4:2024-01-07 5:2024-01-07");

  // The partitioned prefix itself is the table.
  auto cfg = ParseConnection(s3_url("lake/sales"), "source");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto source = Source::Open(*cfg);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto tables = (*source)->ListTables();
  ASSERT_TRUE(tables.ok()) << tables.status().ToString();
  ASSERT_EQ(tables->size(), 1u);
  EXPECT_EQ((*tables)[0].name, "sales");
  auto schema = (*source)->Describe((*tables)[0]);
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  ASSERT_EQ(schema->columns.size(), 4u);
  EXPECT_EQ(schema->columns[2].name, "region");
  EXPECT_EQ(schema->columns[3].name, "day");
  EXPECT_EQ(schema->columns[3].type, LogicalType::kDate);
}

// A CSV money column sniffed as DOUBLE, typed DECIMAL(12,2) by the selector, lands as
// numeric(12,2) with the file's exact values; JSONL and Parquet columns and a partition key
// are typed the same way.
TEST_F(FileSourceTest, ColumnTypesReplaceSniffedTypes) {
  std::string csv = "id,price,qty\n";
  std::vector<std::string> prices = {"0.10", "0.20", "19.99", "1234567.89", "-0.01", "7.00"};
  for (size_t i = 0; i < prices.size(); ++i) {
    csv += std::to_string(i + 1) + "," + prices[i] + "," + std::to_string(i * 3) + "\n";
  }
  Write("in/orders.csv", csv);
  Write("in/items.jsonl",
        "{\"sku\": \"a\", \"amount\": \"12.345\"}\n{\"sku\": \"b\", \"amount\": 0.5}\n"
        "{\"sku\": \"c\", \"amount\": null}\n");
  fs::create_directories(dir_ / "in" / "rates" / "year=2026");
  Duck(
      "COPY (SELECT 'r' || i AS name, CAST(i * 1.25 AS VARCHAR) AS rate FROM range(1, 5) t(i)) "
      "TO " +
      files::SqlString((dir_ / "in" / "rates" / "year=2026" / "r.parquet").string()) +
      " (FORMAT parquet)");
  const std::string db = "fsrc_types_pg";
  const std::string pg = NewPostgres(db);
  const json tables = json::array(
      {json{{"name", "orders"}, {"columnTypes", {{"price", "DECIMAL(12,2)"}, {"qty", "INTEGER"}}}},
       json{{"name", "items"}, {"columnTypes", {{"amount", "DECIMAL(10,3)"}}}},
       json{{"name", "rates"}, {"columnTypes", {{"rate", "DECIMAL(6,2)"}, {"year", "INTEGER"}}}}});
  RunAndVerify(Config("fsrc-types", "file://" + (dir_ / "in").string(), pg, {{"tables", tables}}));

  auto cols =
      Pg("SELECT table_name, column_name, data_type, coalesce(numeric_precision, 0), "
         "coalesce(numeric_scale, 0) FROM information_schema.columns WHERE table_schema = 'public' "
         "AND column_name IN ('price', 'qty', 'amount', 'rate', 'year') ORDER BY 1, 2",
         db);
  ASSERT_EQ(cols.size(), 5u);
  EXPECT_EQ(cols[0], (std::vector<std::string>{"items", "amount", "numeric", "10", "3"}));
  EXPECT_EQ(cols[1], (std::vector<std::string>{"orders", "price", "numeric", "12", "2"}));
  EXPECT_EQ(cols[2], (std::vector<std::string>{"orders", "qty", "integer", "32", "0"}));
  EXPECT_EQ(cols[3], (std::vector<std::string>{"rates", "rate", "numeric", "6", "2"}));
  EXPECT_EQ(cols[4], (std::vector<std::string>{"rates", "year", "integer", "32", "0"}));
  // Exact values: 0.10 + 0.20 is 0.30, not 0.30000000000000004.
  auto sums =
      Pg("SELECT (SELECT sum(price) FROM orders WHERE id IN (1, 2))::text, "
         "(SELECT sum(price) FROM orders WHERE id IN (1, 2)) = 0.30, "
         "(SELECT string_agg(price::text, ',' ORDER BY id) FROM orders), "
         "(SELECT string_agg(coalesce(amount::text, 'NULL'), ',' ORDER BY sku) FROM items), "
         "(SELECT string_agg(rate::text, ',' ORDER BY name) FROM rates)",
         db);
  ASSERT_EQ(sums.size(), 1u);
  EXPECT_EQ(sums[0][0], "0.30");
  EXPECT_EQ(sums[0][1], "t");
  EXPECT_EQ(sums[0][2], "0.10,0.20,19.99,1234567.89,-0.01,7.00");
  EXPECT_EQ(sums[0][3], "12.345,0.500,NULL");
  EXPECT_EQ(sums[0][4], "1.25,2.50,3.75,5.00");
}

// A value that does not fit its column's type fails the run naming the file, the line (the
// row, for Parquet) and the column; a type for a column the files lack is refused.
TEST_F(FileSourceTest, ValuesThatDoNotFitTheTypeFailNamingLineAndColumn) {
  const std::string pg = NewPostgres("fsrc_types_bad_pg");
  auto run = [&](const std::string& folder, const json& tables) {
    auto r = Run(
        Config("fsrc-types-bad", "file://" + (dir_ / folder).string(), pg, {{"tables", tables}}));
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.status().ToString();
  };
  Write("csv/orders.csv", "id,price\n1,0.10\n2,0.20\n3,12345678901.00\n4,0.40\n");
  std::string msg =
      run("csv",
          json::array({json{{"name", "orders"}, {"columnTypes", {{"price", "DECIMAL(12,2)"}}}}}));
  EXPECT_NE(msg.find("orders.csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Line: 4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"price\""), std::string::npos) << msg;

  Write("jsonl/items.jsonl", "{\"id\": 1}\n{\"id\": 2}\n{\"id\": \"three\"}\n");
  msg = run("jsonl", json::array({json{{"name", "items"}, {"columnTypes", {{"id", "BIGINT"}}}}}));
  EXPECT_NE(msg.find("items.jsonl, line 3: column \"id\": \"three\" is not a valid BIGINT"),
            std::string::npos)
      << msg;

  fs::create_directories(dir_ / "parquet");
  Duck("COPY (SELECT * FROM (VALUES ('1'), ('2'), ('x3')) t(code)) TO " +
       files::SqlString((dir_ / "parquet" / "codes.parquet").string()) + " (FORMAT parquet)");
  msg = run("parquet",
            json::array({json{{"name", "codes"}, {"columnTypes", {{"code", "INTEGER"}}}}}));
  EXPECT_NE(msg.find("codes.parquet"), std::string::npos) << msg;
  EXPECT_NE(msg.find("row 3, column \"code\": 'x3' is not a valid INTEGER"), std::string::npos)
      << msg;

  msg =
      run("csv", json::array({json{{"name", "orders"}, {"columnTypes", {{"prize", "INTEGER"}}}}}));
  EXPECT_NE(msg.find("columnTypes of table orders names column 'prize', which it does not have "
                     "(columns: id, price)"),
            std::string::npos)
      << msg;
  msg = run("csv", json::array({json{{"name", "orders"}, {"columnTypes", {{"price", "MONEY"}}}}}));
  EXPECT_NE(msg.find("columnTypes of table orders"), std::string::npos) << msg;
  EXPECT_NE(msg.find("MONEY"), std::string::npos) << msg;
}

// Lines of the skipped rows of one table, and their reasons by line.
std::map<uint64_t, std::string> SkippedLines(const SkipReport& r) {
  std::map<uint64_t, std::string> out;
  for (const SkippedRow& s : r.first) out[s.line] = s.file + ": " + s.reason;
  return out;
}

// malformedRows skip: a CSV and a JSONL file with bad rows (wrong field count, bad number,
// invalid UTF-8, broken JSON, not an object) land without them, the good rows exactly; each
// left-out row is reported with file, line and reason, and the run verifies.
TEST_F(FileSourceTest, SkipLeavesOutMalformedRowsAndReportsThem) {
  Write("in/people.csv",
        "id,name,amount\n"  // line 1
        "1,a,10\n"
        "2,b\n"           // 3: a field too few
        "3,c,12x\n"       // 4: not a number
        "4,\xff\xfe,5\n"  // 5: not UTF-8
        "5,e,6,7\n"       // 6: a field too many
        "6,\"f, g\",8\n"
        "7,h,-9\n");
  Write("in/events.jsonl",
        "{\"id\": 1, \"kind\": \"a\"}\n"
        "{\"id\": 2, \"kind\": \"b\"\n"           // 2: broken JSON
        "{\"id\": \"three\", \"kind\": \"c\"}\n"  // 3: not a number
        "\n"                                      // 4: blank, not a row
        "{\"id\": 4, \"kind\": \"\xff\"}\n"       // 5: not UTF-8
        "[1, 2]\n"                                // 6: not an object
        "{\"id\": 5, \"kind\": \"e\", \"extra\": true}\n");
  // Batches of lines: bad lines at a batch boundary and further on.
  std::string big;
  std::set<uint64_t> bad_big = {2048, 2049, 4097, 6000};
  uint64_t big_sum = 0, big_rows = 0;
  for (uint64_t line = 1; line <= 6000; ++line) {
    if (bad_big.count(line)) {
      big += "{\"n\": " + std::to_string(line) + ", \"s\": }\n";
    } else {
      big += "{\"n\": " + std::to_string(line) + ", \"s\": \"v" + std::to_string(line) + "\"}\n";
      big_sum += line;
      ++big_rows;
    }
  }
  Write("in/big.jsonl", big);
  const std::string db = "fsrc_skip_pg";
  const std::string pg = NewPostgres(db);
  const json tables =
      json::array({json{{"name", "people"}, {"columnTypes", {{"amount", "BIGINT"}}}},
                   json{{"name", "events"}, {"columnTypes", {{"id", "BIGINT"}}}}, "big"});
  auto s = Run(Config("fsrc-skip", "file://" + (dir_ / "in").string(), pg,
                      {{"tables", tables}, {"malformedRows", "skip"}}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->verdicts.size(), 3u);
  for (const TableVerdict& v : s->verdicts) EXPECT_TRUE(v.match()) << v.Describe();

  EXPECT_EQ(Pg("SELECT string_agg(id || '|' || name || '|' || amount, ',' ORDER BY id) FROM people",
               db)[0][0],
            "1|a|10,6|f, g|8,7|h|-9");
  EXPECT_EQ(Pg("SELECT string_agg(id || '|' || kind, ',' ORDER BY id) FROM events", db)[0][0],
            "1|a,5|e");
  EXPECT_EQ(Pg("SELECT count(*), sum(n) FROM big", db)[0],
            (std::vector<std::string>{std::to_string(big_rows), std::to_string(big_sum)}));

  ASSERT_EQ(s->skipped.size(), 3u);
  EXPECT_EQ(s->skipped[0].count, 4u);
  auto people = SkippedLines(s->skipped[0]);
  ASSERT_EQ(people.size(), 4u);
  const std::string csv = (dir_ / "in" / "people.csv").string();
  EXPECT_EQ(people.begin()->first, 3u);
  EXPECT_NE(people[3].find(csv + ": Expected Number of Columns: 3 Found: 2"), std::string::npos)
      << people[3];
  EXPECT_NE(people[4].find("\"amount\""), std::string::npos) << people[4];
  EXPECT_NE(people[4].find("12x"), std::string::npos) << people[4];
  EXPECT_NE(people[5].find("unicode"), std::string::npos) << people[5];
  EXPECT_NE(people[6].find("Found: 4"), std::string::npos) << people[6];

  EXPECT_EQ(s->skipped[1].count, 4u);
  auto events = SkippedLines(s->skipped[1]);
  const std::string jsonl = (dir_ / "in" / "events.jsonl").string();
  EXPECT_EQ(events, (std::map<uint64_t, std::string>{
                        {2, jsonl + ": broken JSON"},
                        {3, jsonl + ": column \"id\": \"three\" is not a valid BIGINT"},
                        {5, jsonl + ": invalid UTF-8"},
                        {6, jsonl + ": not a JSON object"}}));
  EXPECT_EQ(s->skipped[2].count, 4u);
  std::set<uint64_t> lines;
  for (const SkippedRow& r : s->skipped[2].first) lines.insert(r.line);
  EXPECT_EQ(lines, bad_big);
}

// The count is exact beyond the first 100 listed.
TEST_F(FileSourceTest, SkipListsTheFirstHundred) {
  std::string csv = "id,v\n";
  for (int i = 1; i <= 1000; ++i) csv += i % 4 == 0 ? "x,1,2\n" : std::to_string(i) + ",1\n";
  Write("in/many.csv", csv);
  const std::string db = "fsrc_skip_many_pg";
  const std::string pg = NewPostgres(db);
  auto s = Run(Config("fsrc-skip-many", "file://" + (dir_ / "in").string(), pg,
                      {{"malformedRows", "skip"}}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->skipped.size(), 1u);
  EXPECT_EQ(s->skipped[0].count, 250u);
  ASSERT_EQ(s->skipped[0].first.size(), 100u);
  EXPECT_EQ(s->skipped[0].first.front().line, 5u);  // row 4, after the header
  EXPECT_EQ(s->skipped[0].first.back().line, 401u);
  EXPECT_EQ(Pg("SELECT count(*) FROM many", db)[0][0], "750");
  for (const TableVerdict& v : s->verdicts) EXPECT_TRUE(v.match()) << v.Describe();
}

// Compressed JSON Lines (gzip, zstd) are read line by line under skip too.
TEST_F(FileSourceTest, SkipReadsCompressedJsonLines) {
  std::string text;
  for (int i = 1; i <= 3000; ++i) {
    text += i == 1500 ? "{\"id\": 1500, \"v\": \n" : "{\"id\": " + std::to_string(i) + "}\n";
  }
  WriteGzip("in/g.jsonl.gz", text);
  std::string zst(ZSTD_compressBound(text.size()), '\0');
  const size_t n = ZSTD_compress(zst.data(), zst.size(), text.data(), text.size(), 3);
  ASSERT_FALSE(ZSTD_isError(n));
  zst.resize(n);
  Write("in/z.jsonl.zst", zst);
  const std::string db = "fsrc_skip_gz_pg";
  const std::string pg = NewPostgres(db);
  auto s = Run(
      Config("fsrc-skip-gz", "file://" + (dir_ / "in").string(), pg, {{"malformedRows", "skip"}}));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  for (const TableVerdict& v : s->verdicts) EXPECT_TRUE(v.match()) << v.Describe();
  ASSERT_EQ(s->skipped.size(), 2u);
  for (const SkipReport& r : s->skipped) {
    ASSERT_EQ(r.count, 1u);
    EXPECT_EQ(r.first[0].line, 1500u);
    EXPECT_EQ(r.first[0].reason, "broken JSON");
  }
  const std::string sum = std::to_string(3000 * 3001 / 2 - 1500);
  EXPECT_EQ(Pg("SELECT count(*), sum(id) FROM g", db)[0], (std::vector<std::string>{"2999", sum}));
  EXPECT_EQ(Pg("SELECT count(*), sum(id) FROM z", db)[0], (std::vector<std::string>{"2999", sum}));
}

// A selector's `files` glob makes one table of files in several folders: the glob's wildcards
// match within a path part, hidden files and other formats are left out, partition folders below
// the fixed part become columns, and a glob that matches nothing is an error naming it.
TEST_F(FileSourceTest, GlobAcrossFoldersIsOneTable) {
  Write("in/events/2026-01/a.csv", "id,kind\n1,click\n2,view\n");
  Write("in/events/2026-02/b.csv", "id,kind\n3,click\n");
  Write("in/events/2026-02/.hidden.csv", "id,kind\n98,x\n");
  Write("in/events/2025-12/c.csv", "id,kind\n99,old\n");
  Write("in/events/2026-03/notes.txt", "not data");
  Write("in/logs/year=2026/month=01/x.csv", "seq\n1\n");
  Write("in/logs/year=2026/month=02/y.csv", "seq\n2\n");
  Write("in/logs/year=2025/month=12/z.csv", "seq\n3\n");
  const std::string db = "fsrc_glob_pg";
  const std::string pg = NewPostgres(db);
  const json tables = json::array({json{{"name", "events"}, {"files", "events/2026-*/*.csv"}},
                                   json{{"name", "recent"}, {"files", "logs/year=2026/*/*.csv"}}});
  RunAndVerify(Config("fsrc-glob", "file://" + (dir_ / "in").string(), pg, {{"tables", tables}}));
  EXPECT_EQ(Pg("SELECT string_agg(id || ':' || kind, ' ' ORDER BY id) FROM events", db)[0][0],
            "1:click 2:view 3:click");
  EXPECT_EQ(
      Pg("SELECT string_agg(seq || ':' || year || ':' || month, ' ' ORDER BY seq) FROM recent",
         db)[0][0],
      "1:2026:01 2:2026:02");
  // The table's two files are two chunks, read in parallel by the reader pool.
  StreamConfig c =
      Config("fsrc-glob", "file://" + (dir_ / "in").string(), pg, {{"tables", tables}});
  auto source = Source::Open(c.source);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  ASSERT_TRUE((*source)->Configure(c).ok());
  auto schema = (*source)->Describe({"public", "events"});
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  auto ranges = (*source)->Split(*schema, 0);
  ASSERT_TRUE(ranges.ok()) << ranges.status().ToString();
  ASSERT_EQ(ranges->size(), 2u);
  EXPECT_TRUE((*ranges)[1].files);
  EXPECT_EQ((*ranges)[1].lower, 1);
  EXPECT_EQ((*ranges)[1].upper, 2);

  auto r =
      Run(Config("fsrc-glob-none", "file://" + (dir_ / "in").string(), NewPostgres(db + "_2"),
                 {{"tables", json::array({json{{"name", "e"}, {"files", "events/2027-*/*"}}})}}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.status().message().find("\"events/2027-*/*\" matches no CSV, JSON(L) or Parquet file"),
      std::string::npos)
      << r.status().ToString();
}

// Files made elsewhere into MariaDB: a Latin-1 CSV with ';', "NA" for NULL and quoted fields;
// a CSV without a header line; a gzip-compressed TSV; a JSON array of objects. The selector's
// csv settings replace what the sniffer would guess; the values arrive exactly.
TEST_F(FileSourceTest, CsvSettingsAndOtherFilesIntoMariaDb) {
  auto m = SharedServers::MariaDb();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Write("in/orders.csv",
        "id;name;note\n1;caf\xe9;\"a;b\"\n2;NA;plain\n3;Zo\xeb;NA\n4;\"say \"\"hi\"\"\";x\n");
  Write("in/raw.csv", "1|x\n2|y\n3|\n");
  const std::string tsv = "id\tkind\n1\tclick\n2\tview, with comma\n";
  WriteGzip("in/events.tsv.gz", tsv);
  Write("in/people.json",
        "[{\"id\": 1, \"name\": \"Ann\", \"score\": 1.5},\n"
        " {\"id\": 2, \"name\": null, \"score\": 2.25}]\n");
  const std::string db = "fsrc_csv_settings_my";
  const std::string my = testing::FreshMariaDb(*m, db);
  const json tables = json::array(
      {json{{"name", "orders"},
            {"csv", {{"delimiter", ";"}, {"encoding", "latin-1"}, {"nullString", "NA"}}}},
       json{{"name", "raw"}, {"csv", {{"delimiter", "|"}, {"header", false}}}}, "events",
       "people"});
  RunAndVerify(
      Config("fsrc-csv-settings", "file://" + (dir_ / "in").string(), my, {{"tables", tables}}));
  auto rows = [&](const std::string& sql) {
    auto r = (*m)->Query(sql, db);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    std::vector<std::string> out;
    if (!r.ok()) return out;
    for (const auto& row : *r) {
      std::string line;
      for (const auto& v : row) line += (line.empty() ? "" : "|") + v.value_or("NULL");
      out.push_back(line);
    }
    return out;
  };
  EXPECT_EQ(rows("SELECT id, name, note FROM orders ORDER BY id"),
            (std::vector<std::string>{"1|caf\xc3\xa9|a;b", "2|NULL|plain", "3|Zo\xc3\xab|NULL",
                                      "4|say \"hi\"|x"}));
  EXPECT_EQ(rows("SELECT column0, coalesce(column1, '(null)') FROM raw ORDER BY column0"),
            (std::vector<std::string>{"1|x", "2|y", "3|(null)"}));
  EXPECT_EQ(rows("SELECT id, kind FROM events ORDER BY id"),
            (std::vector<std::string>{"1|click", "2|view, with comma"}));
  EXPECT_EQ(rows("SELECT id, coalesce(name, '(null)'), score FROM people ORDER BY id"),
            (std::vector<std::string>{"1|Ann|1.5", "2|(null)|2.25"}));

  // csv settings on a table whose files are not CSV: refused, naming the table.
  auto s = Run(
      Config("fsrc-csv-settings-bad", "file://" + (dir_ / "in").string(), my,
             {{"tables", json::array({json{{"name", "people"}, {"csv", {{"delimiter", ";"}}}}})}}));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("csv settings of table people: its files are jsonl, not CSV"),
            std::string::npos)
      << s.status().ToString();
}

// malformedRows fail (the default): the same kinds of rows fail the run naming the file and
// the line.
TEST_F(FileSourceTest, FailNamesTheLine) {
  const std::string pg = NewPostgres("fsrc_fail_pg");
  Write("csv/people.csv", "id,name,amount\n1,a,10\n2,b\n3,c,12x\n");
  auto r = Run(Config("fsrc-fail", "file://" + (dir_ / "csv").string(), pg,
                      {{"tables", json::array({json{{"name", "people"},
                                                    {"columnTypes", {{"amount", "BIGINT"}}}}})}}));
  ASSERT_FALSE(r.ok());
  std::string msg = r.status().ToString();
  EXPECT_NE(msg.find("people.csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Line: 3"), std::string::npos) << msg;
  r = Run(
      Config("fsrc-fail", "file://" + (dir_ / "csv").string(), pg, {{"malformedRows", "fail"}}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("Line: 3"), std::string::npos) << r.status().ToString();

  Write("jsonl/events.jsonl", "{\"id\": 1}\n{\"id\": 2}\n{\"id\": 3, \n{\"id\": 4}\n");
  r = Run(Config("fsrc-fail", "file://" + (dir_ / "jsonl").string(), pg));
  ASSERT_FALSE(r.ok());
  msg = r.status().ToString();
  EXPECT_NE(msg.find("events.jsonl, line 3: broken JSON"), std::string::npos)
      << "the line read_json's parser stopped at is a later one: " << msg;
}

}  // namespace
}  // namespace dbs

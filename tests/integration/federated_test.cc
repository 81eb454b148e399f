// Federated SQL against real servers: a PostgreSQL table, a MariaDB table and a local Parquet
// file joined by the embedded DuckDB with a known result; projection and filter pushdown seen
// in the servers' own statement logs (PostgreSQL log_statement=all, MariaDB general log);
// read-only refusals; a large join that fits its memory limit only by spilling.
#include <duckdb.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "config/stream_config.h"
#include "federated/federated.h"
#include "objstore/object_store.h"
#include "run/local_run.h"
#include "sources/files/file_common.h"
#include "support/servers.h"

namespace dbs::federated {
namespace {

using testing::MariaDbServer;
using testing::PostgresServer;

class Federated : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    testing::PostgresServerOptions o;
    o.settings = {{"log_statement", "all"}};
    auto pg = PostgresServer::Start(o);
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    pg_ = pg->release();
    auto my = testing::SharedServers::MariaDb();
    ASSERT_TRUE(my.ok()) << my.status().ToString();
    my_ = *my;
    dir_ = "/tmp/dbstreams-federated-test-" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);

    ASSERT_TRUE(pg_->CreateDatabase("fed").ok());
    ASSERT_TRUE(pg_->Exec("CREATE TABLE public.users (id int PRIMARY KEY, name text, note text);"
                          "INSERT INTO public.users SELECT i, 'user' || i, 'unused' "
                          "FROM generate_series(1, 1000) i; ANALYZE public.users",
                          "fed")
                    .ok());
    ASSERT_TRUE(my_->Exec("DROP DATABASE IF EXISTS fed_shop; CREATE DATABASE fed_shop").ok());
    Status s = my_->Exec(
        "CREATE TABLE orders (id int PRIMARY KEY, user_id int, amount decimal(10,2), "
        "status varchar(10), note varchar(20));"
        "INSERT INTO orders SELECT seq, (seq - 1) % 1000 + 1, seq * 0.5, "
        "IF(seq % 2 = 0, 'paid', 'open'), 'unused' FROM seq_1_to_3000",
        "fed_shop");
    ASSERT_TRUE(s.ok()) << s.ToString();
    // The Parquet file, written by DuckDB itself.
    duckdb_database db;
    duckdb_connection con;
    ASSERT_EQ(duckdb_open(nullptr, &db), DuckDBSuccess);
    ASSERT_EQ(duckdb_connect(db, &con), DuckDBSuccess);
    const std::string copy =
        "COPY (SELECT i::INTEGER AS user_id, 'seg' || (i % 4) AS segment FROM range(1, 1001) "
        "t(i)) TO '" +
        dir_ + "/segments.parquet' (FORMAT parquet)";
    duckdb_result res;
    ASSERT_EQ(duckdb_query(con, copy.c_str(), &res), DuckDBSuccess) << duckdb_result_error(&res);
    duckdb_destroy_result(&res);
    duckdb_disconnect(&con);
    duckdb_close(&db);
  }
  static void TearDownTestSuite() {
    delete pg_;
    pg_ = nullptr;
    std::filesystem::remove_all(dir_);
  }

  static std::vector<FederatedSource> Sources() {
    auto pg = ParseConnectionUrl(pg_->UrlFor("fed"));
    auto my = ParseConnectionUrl(my_->url() + "fed_shop");
    EXPECT_TRUE(pg.ok() && my.ok());
    return {{"pg1", *pg}, {"my1", *my}};
  }
  static FederatedOptions Options() {
    FederatedOptions o;
    o.allowed_directories = {dir_};
    o.temp_dir = dir_ + "/spill";
    return o;
  }
  static std::string PgLog() {
    std::ifstream in(pg_->dir() + "/server.log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // Lines of `log` that contain `needle`.
  static std::vector<std::string> Lines(const std::string& log, const std::string& needle) {
    std::vector<std::string> out;
    std::istringstream in(log);
    for (std::string line; std::getline(in, line);) {
      if (line.find(needle) != std::string::npos) out.push_back(line);
    }
    return out;
  }

  static std::string JoinSql() {
    return "SELECT s.segment, count(*) AS orders, CAST(sum(o.amount) * 100 AS BIGINT) AS cents "
           "FROM pg1.public.users u "
           "JOIN my1.fed_shop.orders o ON o.user_id = u.id "
           "JOIN read_parquet('" +
           dir_ +
           "/segments.parquet') s ON s.user_id = u.id "
           "WHERE u.id <= 100 AND o.status = 'paid' "
           "GROUP BY s.segment ORDER BY s.segment";
  }

  static PostgresServer* pg_;
  static MariaDbServer* my_;
  static std::string dir_;
};

PostgresServer* Federated::pg_ = nullptr;
MariaDbServer* Federated::my_ = nullptr;
std::string Federated::dir_;

TEST_F(Federated, JoinsPostgresMariaDbAndParquetWithAKnownResult) {
  // Expected, computed here: orders with an even id (paid) of users 1..100, by segment.
  std::map<std::string, std::pair<int64_t, int64_t>> want;  // segment -> (count, cents)
  for (int64_t id = 2; id <= 3000; id += 2) {
    const int64_t user = (id - 1) % 1000 + 1;
    if (user > 100) continue;
    auto& w = want["seg" + std::to_string(user % 4)];
    w.first++;
    w.second += id * 50;
  }
  ASSERT_TRUE(my_->Exec("SET GLOBAL log_output = 'TABLE'; SET GLOBAL general_log = 1; "
                        "TRUNCATE TABLE mysql.general_log")
                  .ok());
  auto out = federated::Run(Sources(), JoinSql(), Options());
  ASSERT_TRUE(my_->Exec("SET GLOBAL general_log = 0").ok());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->columns.size(), 3u);
  EXPECT_EQ(out->columns[0].name, "segment");
  EXPECT_EQ(out->columns[1].type, "BIGINT");
  ASSERT_EQ(out->rows.size(), want.size());
  EXPECT_FALSE(out->truncated);
  size_t i = 0;
  for (const auto& [seg, w] : want) {
    EXPECT_EQ(out->rows[i][0], seg);
    EXPECT_EQ(out->rows[i][1].get<int64_t>(), w.first) << seg;
    EXPECT_EQ(out->rows[i][2].get<int64_t>(), w.second) << seg;
    ++i;
  }

  // PostgreSQL was asked for the key alone, with the key range: no name, no note.
  std::vector<std::string> pg_lines;
  for (const auto& l : Lines(PgLog(), "\"public\".\"users\"")) {
    if (l.find("COPY (SELECT") != std::string::npos) pg_lines.push_back(l);
  }
  ASSERT_FALSE(pg_lines.empty()) << PgLog();
  const std::string& pl = pg_lines.back();
  EXPECT_NE(pl.find("(\"id\" <= 100)"), std::string::npos) << pl;
  EXPECT_EQ(pl.find("\"name\""), std::string::npos) << pl;
  EXPECT_EQ(pl.find("\"note\""), std::string::npos) << pl;

  // MariaDB was asked for three columns, only the paid orders (the reader's statements are
  // prepared: logged as Prepare, then Execute).
  auto my_log = my_->Query(
      "SELECT argument FROM mysql.general_log WHERE command_type IN ('Query', 'Execute') AND "
      "argument LIKE '%`fed_shop`.`orders`%'");
  ASSERT_TRUE(my_log.ok()) << my_log.status().ToString();
  ASSERT_FALSE(my_log->empty());
  const std::string ml = *my_log->back()[0];
  EXPECT_NE(ml.find("(`status` = 'paid')"), std::string::npos) << ml;
  EXPECT_NE(ml.find("`user_id`"), std::string::npos) << ml;
  EXPECT_EQ(ml.find("`note`"), std::string::npos) << ml;
}

// The same join with the Parquet file as an object in an S3 bucket (s3rver), named through an
// s3 connection's alias like a table: the same known result.
TEST_F(Federated, JoinsPostgresMariaDbAndParquetOnS3) {
  auto s3 = testing::S3Server::Start();
  ASSERT_TRUE(s3.ok()) << s3.status().ToString();
  ASSERT_TRUE((*s3)->CreateBucket("fed-lake").ok());
  S3Settings so;
  so.endpoint = (*s3)->endpoint();
  so.bucket = "fed-lake";
  so.access_key = (*s3)->access_key();
  so.secret_key = (*s3)->secret_key();
  auto store = OpenS3Store(so);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  {
    auto bytes = files::ReadWholeFile(dir_ + "/segments.parquet");
    ASSERT_TRUE(bytes.ok());
    // The object, and a folder table of two copies of it (read in two chunks of one file).
    for (const char* key :
         {"events/segments.parquet", "events/twice/a.parquet", "events/twice/b.parquet"}) {
      auto w = (*store)->Create(key);
      ASSERT_TRUE(w.ok());
      ASSERT_TRUE((*w)->Write(*bytes).ok());
      ASSERT_TRUE((*w)->Commit().ok());
    }
  }
  auto lake = ParseConnectionUrl("s3://fed-lake/events?endpoint=" + (*s3)->endpoint());
  ASSERT_TRUE(lake.ok()) << lake.status().ToString();
  lake->user = (*s3)->access_key();
  lake->password = (*s3)->secret_key();
  std::vector<FederatedSource> sources = Sources();
  sources.push_back({"s3", *lake});
  std::string sql = JoinSql();
  const std::string local = "read_parquet('" + dir_ + "/segments.parquet')";
  sql.replace(sql.find(local), local.size(), "s3.public.segments");
  // The whole object arrives: 1000 users in 4 segments.
  auto whole = federated::Run(
      sources, "SELECT count(*), count(DISTINCT segment), sum(user_id) FROM s3.public.segments",
      Options());
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->rows, nlohmann::json::parse(R"([[1000, 4, "500500"]])"));
  auto twice =
      federated::Run(sources, "SELECT count(*), sum(user_id) FROM s3.public.twice", Options());
  ASSERT_TRUE(twice.ok()) << twice.status().ToString();
  EXPECT_EQ(twice->rows, nlohmann::json::parse(R"([[2000, "1001000"]])"))
      << "each file's chunk read once";
  auto direct = federated::Run(Sources(), JoinSql(), Options());
  auto out = federated::Run(sources, sql, Options());
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->rows.size(), 2u);  // the paid orders of users 1..100 fall in two segments
  EXPECT_EQ(out->rows, direct->rows);
  auto plan = federated::Explain(sources, sql, Options());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  bool asked = false;
  for (const SourceStatement& st : plan->sources) {
    if (st.alias == "s3") asked = st.statement.find("\"segments\"") != std::string::npos;
  }
  EXPECT_TRUE(asked);

  // The same object named by an s3:// URL in read_parquet, read with the s3 source's
  // credentials: the same rows; EXPLAIN says which objects were read.
  std::string by_url = JoinSql();
  by_url.replace(by_url.find(local), local.size(),
                 "read_parquet('s3://fed-lake/events/segments.parquet')");
  auto url_out = federated::Run(sources, by_url, Options());
  ASSERT_TRUE(url_out.ok()) << url_out.status().ToString();
  EXPECT_EQ(url_out->rows, direct->rows);
  auto url_plan = federated::Explain(sources, by_url, Options());
  ASSERT_TRUE(url_plan.ok()) << url_plan.status().ToString();
  bool got = false;
  for (const SourceStatement& st : url_plan->sources) {
    got = got || (st.alias == "s3" && st.statement.find("GET 1 object(s)") != std::string::npos &&
                  st.statement.find("segments.parquet") != std::string::npos);
  }
  EXPECT_TRUE(got);

  // A glob across Hive partition folders: every object, the partition keys as columns.
  for (const char* month : {"11", "12"}) {
    auto bytes = files::ReadWholeFile(dir_ + "/segments.parquet");
    ASSERT_TRUE(bytes.ok());
    auto w = (*store)->Create(std::string("events/part/year=2026/month=") + month + "/s.parquet");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write(*bytes).ok());
    ASSERT_TRUE((*w)->Commit().ok());
  }
  auto parts = federated::Run(
      sources,
      "SELECT count(*), count(DISTINCT month), min(year), sum(user_id) FROM "
      "read_parquet('s3://fed-lake/events/part/**/*.parquet', hive_partitioning = true)",
      Options());
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  EXPECT_EQ(parts->rows, nlohmann::json::parse(R"([[2000, 2, 2026, "1001000"]])"));
  auto one_folder = federated::Run(
      sources,
      "SELECT count(*) FROM read_parquet(['s3://fed-lake/events/part/year=2026/month=1?/*'])",
      Options());
  ASSERT_TRUE(one_folder.ok()) << one_folder.status().ToString();
  EXPECT_EQ(one_folder->rows, nlohmann::json::parse("[[2000]]"));

  // A string that is not a file function's argument is data, untouched.
  auto data =
      federated::Run(sources, "SELECT 's3://fed-lake/events/segments.parquet' AS u", Options());
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->rows[0][0], "s3://fed-lake/events/segments.parquet");

  // Refusals: no s3 source of the bucket, a glob matching nothing, a prefix outside the
  // connection's, a table named by a URL.
  auto no_source = federated::Run(
      Sources(), "SELECT count(*) FROM read_parquet('s3://fed-lake/events/segments.parquet')",
      Options());
  ASSERT_FALSE(no_source.ok());
  EXPECT_NE(no_source.status().message().find("bucket fed-lake"), std::string::npos)
      << no_source.status().ToString();
  auto none = federated::Run(
      sources, "SELECT count(*) FROM read_parquet('s3://fed-lake/events/nothing/*.parquet')",
      Options());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound) << none.status().ToString();
  auto outside = federated::Run(
      sources, "SELECT count(*) FROM read_csv('s3://fed-lake/other/x.csv')", Options());
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("bucket fed-lake"), std::string::npos)
      << outside.status().ToString();
  auto table = federated::Run(
      sources, "SELECT count(*) FROM 's3://fed-lake/events/segments.parquet'", Options());
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("read_parquet("), std::string::npos)
      << table.status().ToString();
}

// "Save as stream": a federated SELECT as a stream's source. The join of a PostgreSQL and a
// MariaDB table lands in PostgreSQL as a table of its own, and the run's verification (the
// query run again, by checksum) matches.
TEST_F(Federated, ASelectSavedAsAStreamLoadsAndVerifies) {
  ASSERT_TRUE(pg_->Exec("DROP DATABASE IF EXISTS fed_out WITH (FORCE)").ok());
  ASSERT_TRUE(pg_->CreateDatabase("fed_out").ok());
  const std::string sql =
      "SELECT u.id, u.name, count(*) AS orders, sum(o.amount) AS total, "
      "max(o.status) AS last_status FROM pg1.public.users u JOIN my1.fed_shop.orders o "
      "ON o.user_id = u.id WHERE u.id <= 300 GROUP BY u.id, u.name";
  nlohmann::json j = {{"name", "fed-saved"},
                      {"source",
                       {{"federated",
                         {{{"alias", "pg1"}, {"url", pg_->UrlFor("fed")}},
                          {{"alias", "my1"}, {"url", my_->url() + "fed_shop"}}}}}},
                      {"target", pg_->UrlFor("fed_out")},
                      {"targetSchema", "public"},
                      {"tables", {{{"name", "user_orders"}, {"query", sql}}}}};
  auto c = ParseStreamConfig(j);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->source.Redacted().rfind("federated(pg1=postgres://", 0), 0u) << c->source.Redacted();
  LocalRunOptions o;
  o.writers = 1;
  o.data_dir = dir_ + "/bus";
  auto run = RunLocal(*c, o, nullptr);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->verdicts.size(), 1u);
  EXPECT_TRUE(run->verdicts[0].match()) << run->verdicts[0].Describe();
  EXPECT_EQ(run->verdicts[0].source.rows, 300u);
  auto rows = pg_->Query(
      "SELECT count(*), sum(orders), sum(total), min(last_status) FROM public.user_orders",
      "fed_out");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  // Users 1..300 have 3 orders each (ids u, u+1000, u+2000), amounts id * 0.5.
  int64_t cents = 0;
  for (int64_t u = 1; u <= 300; ++u) cents += (u + (u + 1000) + (u + 2000)) * 50;
  EXPECT_EQ((*rows)[0][0].value_or(""), "300");
  EXPECT_EQ((*rows)[0][1].value_or(""), "900");
  EXPECT_EQ((*rows)[0][2].value_or(""), std::to_string(cents / 100) + "." +
                                            (cents % 100 < 10 ? "0" : "") +
                                            std::to_string(cents % 100));
  // A federated source is a load source: CDC is refused before anything runs.
  j["mode"] = "cdc";
  j["name"] = "fed-saved-cdc";
  auto cdc = ParseStreamConfig(j);
  std::string refused;
  if (cdc.ok()) {
    auto r = RunLocal(*cdc, o, nullptr);
    EXPECT_FALSE(r.ok());
    refused = r.status().message();
  } else {
    refused = cdc.status().message();
  }
  EXPECT_NE(refused.find("mode load"), std::string::npos) << refused;
}

TEST_F(Federated, ExplainShowsWhatEachSourceIsAskedFor) {
  auto plan = federated::Explain(Sources(), JoinSql(), Options());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_NE(plan->text.find("READ_PARQUET"), std::string::npos) << plan->text;
  ASSERT_EQ(plan->sources.size(), 2u);
  std::map<std::string, std::string> by_alias;
  for (const auto& s : plan->sources) by_alias[s.alias] = s.statement;
  EXPECT_EQ(by_alias["pg1"], "SELECT \"id\" FROM \"public\".\"users\" WHERE (\"id\" <= 100)");
  const std::string& my = by_alias["my1"];
  EXPECT_NE(my.find("FROM `fed_shop`.`orders` WHERE (`status` = 'paid')"), std::string::npos) << my;
  EXPECT_EQ(my.find("`note`"), std::string::npos) << my;
  EXPECT_EQ(my.find("`id`"), std::string::npos) << my;
}

TEST_F(Federated, PushesOnlyWhatIsSafe) {
  // IS NULL on the NULL-extended side of a LEFT JOIN stays in DuckDB; IN, BETWEEN and the
  // mirrored comparison go to the source; OR is not sent.
  auto plan =
      federated::Explain(Sources(),
                         "SELECT u.id FROM pg1.public.users u LEFT JOIN my1.fed_shop.orders o "
                         "ON o.user_id = u.id WHERE o.note IS NULL AND 10 > u.id "
                         "AND u.id BETWEEN 2 AND 8 AND u.name IN ('user3', 'user4') "
                         "AND (u.note = 'x' OR u.note = 'y')",
                         Options());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::map<std::string, std::string> by_alias;
  for (const auto& s : plan->sources) by_alias[s.alias] = s.statement;
  EXPECT_EQ(by_alias["my1"].find("WHERE"), std::string::npos) << by_alias["my1"];
  EXPECT_NE(by_alias["pg1"].find("WHERE (\"id\" < 10) AND (\"id\" >= 2) AND (\"id\" <= 8) AND "
                                 "(\"name\" IN ('user3', 'user4'))"),
            std::string::npos)
      << by_alias["pg1"];
  auto out =
      federated::Run(Sources(),
                     "SELECT u.id FROM pg1.public.users u LEFT JOIN my1.fed_shop.orders o "
                     "ON o.user_id = u.id AND o.status = 'none' WHERE o.note IS NULL AND u.id < 4 "
                     "ORDER BY u.id",
                     Options());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->rows, nlohmann::json::parse("[[1],[2],[3]]"));
}

TEST_F(Federated, RefusesAnythingButOneSelect) {
  for (const char* sql : {"DELETE FROM pg1.public.users", "UPDATE my1.fed_shop.orders SET id = 1",
                          "SELECT 1; DROP TABLE pg1.public.users",
                          "COPY (SELECT 1) TO '/tmp/x.csv'", "ATTACH 'x.db'"}) {
    auto out = federated::Run(Sources(), sql, Options());
    ASSERT_FALSE(out.ok()) << sql;
    EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument) << out.status().ToString();
  }
  auto count = pg_->Query("SELECT count(*) FROM public.users", "fed");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*(*count)[0][0], "1000");
  // Files outside the allowed folders are refused.
  auto file = federated::Run(Sources(), "SELECT * FROM read_csv('/etc/passwd')", Options());
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("/etc/passwd"), std::string::npos)
      << file.status().ToString();
  auto up = federated::Run(Sources(), "SELECT * FROM read_csv('" + dir_ + "/../../etc/passwd')",
                           Options());
  ASSERT_FALSE(up.ok());
  EXPECT_NE(up.status().message().find("Permission"), std::string::npos) << up.status().ToString();
  EXPECT_FALSE(ValidateAlias("1pg").ok());
  EXPECT_FALSE(ValidateAlias("pg-1").ok());
  EXPECT_TRUE(ValidateAlias("pg_1").ok());
}

TEST_F(Federated, CapsRowsAndReadsRangesInParallel) {
  FederatedOptions o = Options();
  o.max_rows = 10;
  o.rows_per_chunk = 100;  // 1000 users: several key ranges
  auto out = federated::Run(Sources(), "SELECT id, name FROM pg1.public.users ORDER BY id", o);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->truncated);
  ASSERT_EQ(out->rows.size(), 10u);
  EXPECT_EQ(out->rows[9], nlohmann::json::parse("[10, \"user10\"]"));
  auto sum = federated::Run(Sources(), "SELECT count(*), sum(id) FROM pg1.users WHERE id > 0", o);
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_EQ(sum->rows, nlohmann::json::parse("[[1000, \"500500\"]]"));
  // Several ranged statements reached PostgreSQL: heap page ranges (14+, the table is
  // analyzed) or key ranges.
  size_t ranged = 0;
  for (const char* range :
       {"\"public\".\"users\" WHERE ctid >= '(", "\"public\".\"users\" WHERE \"id\" >= "}) {
    for (const auto& l : Lines(PgLog(), range)) {
      ranged += l.find("COPY (SELECT \"id\", \"name\"") != std::string::npos;
    }
  }
  EXPECT_GE(ranged, 2u) << PgLog();
}

TEST_F(Federated, LargeJoinSpillsWithinItsMemoryLimit) {
  const int n = 300000;
  ASSERT_TRUE(pg_->Exec("CREATE TABLE public.big (id int PRIMARY KEY, pad text);"
                        "INSERT INTO public.big SELECT i, repeat(md5(i::text), 12) "
                        "FROM generate_series(1, " +
                            std::to_string(n) + ") i",
                        "fed")
                  .ok());
  Status s = my_->Exec(
      "CREATE TABLE big2 (id int PRIMARY KEY, pad varchar(400));"
      "INSERT INTO big2 SELECT seq, REPEAT(MD5(seq), 12) FROM seq_1_to_" +
          std::to_string(n),
      "fed_shop");
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::string sql =
      "SELECT count(*) AS n, sum(length(a.pad) + length(b.pad)) AS bytes "
      "FROM pg1.public.big a JOIN my1.fed_shop.big2 b ON a.id = b.id";
  FederatedOptions o = Options();
  o.memory_limit = "100MB";
  o.timeout_ms = 600000;
  o.rows_per_chunk = 100000;
  auto out = federated::Run(Sources(), sql, o);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->rows, nlohmann::json::parse("[[" + std::to_string(n) + ", \"" +
                                             std::to_string(int64_t{n} * 768) + "\"]]"));
  // The process stayed near its limit although the joined rows are ~230 MB.
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  const long peak_mb = ru.ru_maxrss / 1024;
  RecordProperty("peak_rss_mb", static_cast<int>(peak_mb));
  EXPECT_LT(peak_mb, 400) << "peak RSS " << peak_mb << " MB";
  // A timeout interrupts the statement.
  FederatedOptions quick = o;
  quick.timeout_ms = 200;
  auto slow = federated::Run(Sources(), sql, quick);
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.status().code(), StatusCode::kTimeout) << slow.status().ToString();
  // The same statement without a spill folder does not fit.
  o.temp_dir.clear();
  auto no_spill = federated::Run(Sources(), sql, o);
  ASSERT_FALSE(no_spill.ok());
  EXPECT_NE(no_spill.status().message().find("emory"), std::string::npos)
      << no_spill.status().ToString();
}

}  // namespace
}  // namespace dbs::federated

// Migration fidelity (issue 11 §1-§2) with real servers: no value changes silently, in any
// direction between MariaDB and PostgreSQL, and verification compares exactly and names what
// differs. Each test builds its own edge-case tables (modelled on the kinds of columns public
// sample databases and pgloader's test cases have; none of their files are used).
//
// The round-trip tests check A -> B -> A: the final table holds exactly the first table's
// values, judged by the source server's own text form of each column.
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/stream_config.h"
#include "run/local_run.h"
#include "support/servers.h"
#include "verify/checksum.h"

namespace dbs {
namespace {

using nlohmann::json;
using testing::MariaDbServer;
using testing::PostgresServer;
using testing::SharedServers;

class FidelityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = SharedServers::MariaDb();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    maria_ = *m;
    auto p = SharedServers::Postgres();
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pg_ = *p;
    data_dir_ = std::filesystem::temp_directory_path() /
                ("dbstreams-fidelity-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(data_dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(data_dir_, ec);
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
  void Maria(const std::string& db, const std::string& sql) {
    Status s = maria_->Exec(sql, db);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void Pg(const std::string& db, const std::string& sql) {
    Status s = pg_->Exec(sql, db);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // The rows of one query, each row's cells joined with '|' (NULL as "NULL").
  std::vector<std::string> MariaRows(const std::string& db, const std::string& sql) {
    return Flatten(maria_->Query(sql, db));
  }
  std::vector<std::string> PgRows(const std::string& db, const std::string& sql) {
    return Flatten(pg_->Query(sql, db));
  }
  static std::vector<std::string> Flatten(const Result<testing::Rows>& r) {
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::string> out;
    if (!r.ok()) return out;
    for (const auto& row : *r) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) {
        line += (i == 0 ? "" : "|") + (row[i] ? *row[i] : std::string("NULL"));
      }
      out.push_back(line);
    }
    return out;
  }

  StreamConfig Config(const std::string& name, const std::string& src, const std::string& dst,
                      json extra = json::object()) {
    json j = {{"name", name}, {"source", src}, {"target", dst}};
    for (auto& [k, v] : extra.items()) j[k] = v;
    auto c = ParseStreamConfig(j);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : StreamConfig{};
  }

  Result<RunSummary> Run(const StreamConfig& c) {
    LocalRunOptions o;
    o.writers = 1;
    o.data_dir = data_dir_.string();
    return RunLocal(c, o, nullptr);
  }

  // Runs the stream and expects it to succeed with every table verified equal.
  void RunExact(const StreamConfig& c) {
    auto s = Run(c);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_FALSE(s->verdicts.empty());
    for (const TableVerdict& v : s->verdicts) EXPECT_TRUE(v.match()) << v.Describe();
  }

  // Runs the stream and expects it to fail with a message holding every one of `parts`.
  void RunFails(const StreamConfig& c, const std::vector<std::string>& parts) {
    auto s = Run(c);
    ASSERT_FALSE(s.ok()) << "the run succeeded; it had to fail naming " << parts[0];
    std::cerr << "failed as expected: " << s.status().ToString() << "\n";
    for (const std::string& p : parts) {
      EXPECT_NE(s.status().ToString().find(p), std::string::npos)
          << "'" << p << "' missing in: " << s.status().ToString();
    }
  }

  MariaDbServer* maria_ = nullptr;
  PostgresServer* pg_ = nullptr;
  std::filesystem::path data_dir_;
};

// ---------------------------------------------------------------------------------------------
// §1 Legacy character sets.

TEST_F(FidelityTest, LegacyCharsetsConvertExactly) {
  std::string src = NewMariaDb("fid_cs_src");
  Maria("fid_cs_src",
        "CREATE TABLE films (id int PRIMARY KEY, "
        "  title_latin1 varchar(40) CHARACTER SET latin1, "
        "  title_cp1251 varchar(40) CHARACTER SET cp1251, "
        "  title_gbk varchar(40) CHARACTER SET gbk, "
        "  note text CHARACTER SET latin1); "
        "INSERT INTO films VALUES "
        "(1, 'Amélie à Paris', 'Москва слезам не верит', '你好世界', 'tab\\there\\nnew line'), "
        "(2, CONVERT(UNHEX('8081FF') USING latin1), 'ёЁ№', '中文', NULL)");
  std::string dst = NewPostgres("fid_cs_dst");
  RunExact(Config("fid-cs", src, dst));
  EXPECT_EQ(PgRows("fid_cs_dst",
                   "SELECT id, title_latin1, title_cp1251, title_gbk, coalesce(note, 'NULL') "
                   "FROM fid_cs_src.films ORDER BY id"),
            (std::vector<std::string>{
                "1|Amélie à Paris|Москва слезам не верит|你好世界|tab\there\nnew line",
                "2|€\u0081ÿ|ёЁ№|中文|NULL"}));
}

TEST_F(FidelityTest, LegacyCharsetByteWithoutUnicodeMappingFailsNamingTableColumnAndKey) {
  std::string src = NewMariaDb("fid_cs_bad_src");
  // cp1251 has no character at 0x98: MariaDB would read it as '?'.
  Maria("fid_cs_bad_src",
        "CREATE TABLE customer (id int PRIMARY KEY, name varchar(20) CHARACTER SET cp1251); "
        "INSERT INTO customer VALUES (1, 'Иван'), (2, CONCAT('a', CONVERT(UNHEX('98') USING "
        "cp1251), 'b')), (3, 'Пётр')");
  std::string dst = NewPostgres("fid_cs_bad_dst");
  RunFails(Config("fid-cs-bad", src, dst),
           {"fid_cs_bad_src.customer", "column 'name'", "cp1251", "key (id)=(2)"});
  // Verification alone reports the same instead of "checksum equal".
  auto v = VerifyStream(Config("fid-cs-bad", src, dst));
  EXPECT_FALSE(v.ok());
}

// ---------------------------------------------------------------------------------------------
// §1 INET6 and inet.

TEST_F(FidelityTest, Inet6ToInetAndBackKeepsValuesAndType) {
  std::string src = NewMariaDb("fid_inet_src");
  Maria("fid_inet_src",
        "CREATE TABLE hosts (id int PRIMARY KEY, addr inet6, addr_text varchar(45)); "
        "INSERT INTO hosts VALUES (1, '::1', '::1'), (2, '::ffff:192.0.2.1', '192.0.2.1'), "
        "(3, '2001:db8::1', '2001:db8::/32'), (4, NULL, NULL)");
  std::string mid = NewPostgres("fid_inet_mid");
  RunExact(Config("fid-inet-a", src, mid));
  // No /128 or /32 added: PostgreSQL's own form of a host address.
  EXPECT_EQ(
      PgRows("fid_inet_mid",
             "SELECT id, format_type(atttypid, atttypmod), addr::text, abbrev(addr) FROM "
             "fid_inet_src.hosts, pg_attribute WHERE attrelid = 'fid_inet_src.hosts'::regclass "
             "AND attname = 'addr' ORDER BY id"),
      (std::vector<std::string>{"1|inet|::1/128|::1",
                                "2|inet|::ffff:192.0.2.1/128|::ffff:192.0.2.1",
                                "3|inet|2001:db8::1/128|2001:db8::1", "4|inet|NULL|NULL"}));
  // Back into MariaDB with pgInetAsInet6: the column is INET6 again, values unchanged.
  std::string back = NewMariaDb("fid_inet_back");
  RunExact(Config("fid-inet-b", pg_->UrlFor("fid_inet_mid"), back,
                  {{"tables", {"fid_inet_src.*"}}, {"typeMapping", {{"pgInetAsInet6", true}}}}));
  EXPECT_EQ(MariaRows("fid_inet_back",
                      "SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                      "'fid_inet_back' AND TABLE_NAME = 'hosts' AND COLUMN_NAME = 'addr'"),
            (std::vector<std::string>{"inet6"}));
  EXPECT_EQ(MariaRows("fid_inet_back", "SELECT id, addr, addr_text FROM hosts ORDER BY id"),
            MariaRows("fid_inet_src", "SELECT id, addr, addr_text FROM hosts ORDER BY id"));
}

TEST_F(FidelityTest, PostgresInetIntoMysqlTextHasNoAddedSuffix) {
  std::string src = NewPostgres("fid_pginet_src");
  Pg("fid_pginet_src",
     "CREATE TABLE net (id int PRIMARY KEY, a inet, c cidr, arr inet[]); "
     "INSERT INTO net VALUES (1, '10.0.0.1', '10.0.0.0/8', '{10.0.0.1,::1/128}'), "
     "(2, '10.1.0.0/16', '2001:db8::/32', '[0:0]={192.0.2.1/24}'), (3, '::1', NULL, NULL)");
  std::string dst = NewMariaDb("fid_pginet_dst");
  RunFails(Config("fid-pginet-bounds", pg_->UrlFor("fid_pginet_src"), dst),
           {"fid_pginet_dst.net", "key (id)=(2)", "column 'arr'", "lower bound"});
  Pg("fid_pginet_src", "UPDATE net SET arr = '{192.0.2.1/24}' WHERE id = 2");
  std::string dst2 = NewMariaDb("fid_pginet_dst2");
  RunExact(Config("fid-pginet", pg_->UrlFor("fid_pginet_src"), dst2));
  EXPECT_EQ(MariaRows("fid_pginet_dst2", "SELECT id, a, c, JSON_COMPACT(arr) FROM net ORDER BY id"),
            (std::vector<std::string>{"1|10.0.0.1|10.0.0.0/8|[\"10.0.0.1\",\"::1\"]",
                                      "2|10.1.0.0/16|2001:db8::/32|[\"192.0.2.1/24\"]",
                                      "3|::1|NULL|NULL"}));
}

// ---------------------------------------------------------------------------------------------
// §1 Arrays with lower bounds, -0.0, intervals.

TEST_F(FidelityTest, ArrayLowerBoundsKeptSameEngineAndRefusedAcross) {
  std::string src = NewPostgres("fid_arr_src");
  Pg("fid_arr_src",
     "CREATE TABLE a (id int PRIMARY KEY, v int[], t text[]); "
     "INSERT INTO a VALUES (1, '[0:2]={1,NULL,3}', '{x,y}'), (2, '{{1,2},{3,4}}', "
     "'[-5:-4]={\"a b\",NULL}'), (3, '{}', NULL)");
  std::string dst = NewPostgres("fid_arr_dst");
  RunExact(Config("fid-arr", pg_->UrlFor("fid_arr_src"), dst));
  const std::string q = "SELECT id, v::text, t::text FROM public.a ORDER BY id";
  EXPECT_EQ(PgRows("fid_arr_dst", q), PgRows("fid_arr_src", q));
  EXPECT_EQ(PgRows("fid_arr_dst", "SELECT v::text FROM a WHERE id = 1"),
            (std::vector<std::string>{"[0:2]={1,NULL,3}"}));
  std::string my = NewMariaDb("fid_arr_my");
  RunFails(Config("fid-arr-my", pg_->UrlFor("fid_arr_src"), my),
           {"fid_arr_my.a", "key (id)=(1)", "column 'v'", "lower bound of 0"});
}

TEST_F(FidelityTest, NegativeZeroKeptOnPostgresAndRefusedByMysql) {
  std::string src = NewPostgres("fid_nz_src");
  Pg("fid_nz_src",
     "CREATE TABLE m (id int PRIMARY KEY, d double precision, r real); "
     "INSERT INTO m VALUES (1, 0, 0), (2, '-0', '-0'), (3, 'NaN', 'Infinity'), "
     "(4, 1.7976931348623157e308, -3.4028235e38), (5, 4.9e-324, 1.4e-45)");
  std::string dst = NewPostgres("fid_nz_dst");
  RunExact(Config("fid-nz", pg_->UrlFor("fid_nz_src"), dst));
  const std::string q = "SELECT id, d::text, r::text FROM m ORDER BY id";
  EXPECT_EQ(PgRows("fid_nz_dst", q), PgRows("fid_nz_src", q));
  Pg("fid_nz_src", "DELETE FROM m WHERE id = 3");
  std::string my = NewMariaDb("fid_nz_my");
  RunFails(Config("fid-nz-my", pg_->UrlFor("fid_nz_src"), my),
           {"fid_nz_my.m", "key (id)=(2)", "column 'd'", "-0"});
}

TEST_F(FidelityTest, IntervalTravelsInPostgresOutputFormAndCastsBack) {
  std::string src = NewPostgres("fid_iv_src");
  Pg("fid_iv_src",
     "CREATE TABLE iv (id int PRIMARY KEY, i interval, t time(6)); "
     "INSERT INTO iv VALUES (1, '1 year 2 mons 3 days 04:05:06.5', '23:59:59.999999'), "
     "(2, '-1 years -2 mons +3 days -04:05:06', '00:00:00'), (3, '0', '12:00:00.000001'), "
     "(4, '-3 days', NULL), (5, '1 mon -00:00:01', '01:02:03'), (6, '178000000 years', NULL), "
     "(7, '2562047788:00:54.775807', NULL)");
  std::string my = NewMariaDb("fid_iv_my");
  RunExact(Config("fid-iv", pg_->UrlFor("fid_iv_src"), my));
  EXPECT_EQ(MariaRows("fid_iv_my", "SELECT id, i FROM iv WHERE id <= 2 ORDER BY id"),
            (std::vector<std::string>{"1|1 year 2 mons 3 days 04:05:06.5",
                                      "2|-1 years -2 mons +3 days -04:05:06"}));
  // Back to PostgreSQL: the text casts to the same interval.
  std::string back = NewPostgres("fid_iv_back");
  RunExact(Config("fid-iv-back", my, back));
  EXPECT_EQ(
      PgRows("fid_iv_back", "SELECT id, i::interval::text, t::text FROM fid_iv_my.iv ORDER BY id"),
      PgRows("fid_iv_src", "SELECT id, i::text, t::text FROM iv ORDER BY id"));
}

// ---------------------------------------------------------------------------------------------
// §1 JSON and the typeMapping section.

TEST_F(FidelityTest, JsonKeepsItsTextByDefaultAndJsonbIsOptIn) {
  std::string src = NewMariaDb("fid_json_src");
  Maria("fid_json_src",
        "CREATE TABLE doc (id int PRIMARY KEY, j json); "
        "INSERT INTO doc VALUES (1, '{\"b\": 1, \"a\": 2, \"b\": 3}'), "
        "(2, '{ \"esc\" : \"\\\\u00e9\\\\n\\\\\\\\\" ,\"n\":1.50}'), (3, '[\"\\\\u0000\"]'), "
        "(4, 'null'), (5, NULL)");
  const std::string q = "SELECT id, j FROM doc ORDER BY id";
  std::vector<std::string> want = MariaRows("fid_json_src", q);
  ASSERT_EQ(want.size(), 5u);
  std::string dst = NewPostgres("fid_json_dst");
  RunExact(Config("fid-json", src, dst));
  EXPECT_EQ(PgRows("fid_json_dst",
                   "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                   "WHERE attrelid = 'fid_json_src.doc'::regclass AND attname = 'j'"),
            (std::vector<std::string>{"json"}));
  EXPECT_EQ(PgRows("fid_json_dst", "SELECT id, j::text FROM fid_json_src.doc ORDER BY id"), want);
  // And back into MariaDB: the same text.
  std::string back = NewMariaDb("fid_json_back");
  RunExact(
      Config("fid-json-back", pg_->UrlFor("fid_json_dst"), back, {{"tables", {"fid_json_src.*"}}}));
  EXPECT_EQ(MariaRows("fid_json_back", q), want);

  // jsonb on request: the document normalized (duplicate key dropped); \u0000 cannot be held.
  Maria("fid_json_src", "DELETE FROM doc WHERE id = 3");
  std::string dst2 = NewPostgres("fid_json_dst2");
  RunExact(Config("fid-jsonb", src, dst2, {{"typeMapping", {{"pgJsonb", true}}}}));
  EXPECT_EQ(PgRows("fid_json_dst2", "SELECT j::text FROM fid_json_src.doc WHERE id = 1"),
            (std::vector<std::string>{"{\"a\": 2, \"b\": 3}"}));
}

TEST_F(FidelityTest, TypeMappingSectionIsValidatedAndApplied) {
  auto bad = ParseStreamConfig(json{{"name", "x"},
                                    {"source", "mysql://u@h/d"},
                                    {"target", "postgres://u@h/d"},
                                    {"typeMapping", {{"pg_jsonb", false}}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("typeMapping.pg_jsonb is not a known field"),
            std::string::npos)
      << bad.status().ToString();
  auto wrong = ParseStreamConfig(json{{"name", "x"},
                                      {"source", "mysql://u@h/d"},
                                      {"target", "postgres://u@h/d"},
                                      {"typeMapping", {{"pgUint64AsBigint", "yes"}}}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("typeMapping.pgUint64AsBigint"), std::string::npos);

  std::string src = NewMariaDb("fid_tm_src");
  Maria("fid_tm_src",
        "CREATE TABLE t (id bigint unsigned PRIMARY KEY, d time(3), "
        "  q int CHECK (q >= 0)); "
        "INSERT INTO t VALUES (18446744073709551615, '-838:59:59.000', 1), (0, '25:00:00.5', 2)");
  // Default: time fails beyond 24h, naming the column.
  RunFails(Config("fid-tm-time", src, NewPostgres("fid_tm_dst0")),
           {"fid_tm_src.t", "column d", "key (id)=(", "typeMapping.mysqlTimeAsInterval"});
  std::string dst = NewPostgres("fid_tm_dst");
  json tm = {{"mysqlTimeAsInterval", true}, {"crossDialectChecks", true}};
  RunExact(Config("fid-tm", src, dst, {{"typeMapping", tm}}));
  EXPECT_EQ(PgRows("fid_tm_dst",
                   "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE "
                   "attrelid = 'fid_tm_src.t'::regclass AND attnum > 0 ORDER BY attnum"),
            (std::vector<std::string>{"id|numeric(20,0)", "d|interval(3)", "q|integer"}));
  EXPECT_EQ(PgRows("fid_tm_dst",
                   "SELECT count(*) FROM pg_constraint WHERE contype = 'c' AND "
                   "conrelid = 'fid_tm_src.t'::regclass"),
            (std::vector<std::string>{"1"}));
  // pgUint64AsBigint: bigint, and the unsigned maximum fails at write time.
  RunFails(Config("fid-tm-u64", src, NewPostgres("fid_tm_dst2"),
                  {{"typeMapping", {{"pgUint64AsBigint", true}, {"mysqlTimeAsInterval", true}}}}),
           {"18446744073709551615"});
}

// ---------------------------------------------------------------------------------------------
// §2 Verification.

TEST_F(FidelityTest, VerificationNamesTableColumnKeyAndValues) {
  std::string src = NewMariaDb("fid_vf_src");
  Maria("fid_vf_src",
        "CREATE TABLE actor (actor_id int PRIMARY KEY, first_name varchar(45), "
        "  last_name varchar(45), addr inet6); "
        "INSERT INTO actor SELECT seq, CONCAT('first', seq), CONCAT('last', seq), "
        "  CONCAT('2001:db8::', HEX(seq)) FROM seq_1_to_3000; "
        "CREATE TABLE log (msg varchar(20), n int); "
        "INSERT INTO log VALUES ('a', 1), ('a', 1), ('b', 2)");
  std::string dst = NewPostgres("fid_vf_dst");
  StreamConfig c = Config("fid-vf", src, dst);
  RunExact(c);  // INET6 -> inet verifies equal
  Pg("fid_vf_dst",
     "UPDATE fid_vf_src.actor SET last_name = 'l?st' WHERE actor_id = 1234; "
     "DELETE FROM fid_vf_src.log WHERE n = 2; INSERT INTO fid_vf_src.log VALUES ('c', 3)");
  auto v = VerifyStream(c);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_EQ(v->size(), 2u);
  const TableVerdict& actor = (*v)[0].source_table == "fid_vf_src.actor" ? (*v)[0] : (*v)[1];
  const TableVerdict& log = &actor == &(*v)[0] ? (*v)[1] : (*v)[0];
  EXPECT_FALSE(actor.match());
  EXPECT_EQ(actor.columns, (std::vector<std::string>{"last_name"}));
  EXPECT_EQ(actor.sample, "key actor_id='1234': column last_name: source 'last1234', target 'l?st'")
      << actor.Describe();
  EXPECT_FALSE(log.match());
  // The first differing bucket holds either the deleted or the inserted row.
  const bool deleted =
      log.sample.find("msg='b', n='2'): in the source, not in the target") != std::string::npos;
  const bool inserted =
      log.sample.find("msg='c', n='3'): in the target, not in the source") != std::string::npos;
  EXPECT_TRUE(deleted || inserted) << log.Describe();
  EXPECT_NE(actor.Describe().find("fid_vf_src.actor"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// §1 Round trips over edge-case tables, both directions.

// Each pair: the expression on the first table, the expression on the final table (the final
// column may have another type: an enum that became text, an interval kept as its text).
using ColumnPairs = std::vector<std::pair<std::string, std::string>>;

std::string SelectList(const ColumnPairs& cols, bool final_side) {
  std::string out;
  for (const auto& [a, b] : cols) out += (out.empty() ? "" : ", ") + (final_side ? b : a);
  return out;
}

TEST_F(FidelityTest, RoundTripMariaDbToPostgresToMariaDbIsExact) {
  std::string src = NewMariaDb("fid_rt_my");
  // A film-rental-like table: one column per type, one row of minimums, one of maximums, one
  // of awkward middles, one of NULLs.
  Maria("fid_rt_my", R"sql(
    CREATE TABLE film_edge (
      id int PRIMARY KEY, ti tinyint, tiu tinyint unsigned, si smallint, siu smallint unsigned,
      mi mediumint, miu mediumint unsigned, i int, iu int unsigned, bi bigint,
      biu bigint unsigned, f float, d double, dec1 decimal(65,30), dec2 decimal(10,0),
      dt date, dtm datetime(6), ts timestamp(6) NULL, tm time(6), yr year, bt bit(10),
      rating enum('G','PG','PG-13','R','NC-17'),
      features set('Trailers','Commentaries','Deleted Scenes','Behind the Scenes'),
      js json, descr text, title varchar(100), code char(5), poster blob, tag varbinary(20),
      ip inet6, uid uuid, city varchar(40) CHARACTER SET latin1,
      city_ru varchar(40) CHARACTER SET cp1251, city_cn varchar(40) CHARACTER SET gbk);
    SET time_zone = '+00:00';
    INSERT INTO film_edge VALUES
      (1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0,
       -3.40282e38, -1.7976931348623157e308,
       '-99999999999999999999999999999999999.999999999999999999999999999999', -9999999999,
       '0001-01-01', '0001-01-01 00:00:00', '1970-01-01 00:00:01', '00:00:00', 1901,
       b'0000000000', 'G', '', '{}', '', '', '', '', '', '::',
       '00000000-0000-0000-0000-000000000000', '', '', ''),
      (2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295,
       9223372036854775807, 18446744073709551615, 3.40282e38, 1.7976931348623157e308,
       '99999999999999999999999999999999999.999999999999999999999999999999', 9999999999,
       '9999-12-31', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.999999',
       '23:59:59.999999', 2155, b'1111111111', 'NC-17',
       'Trailers,Commentaries,Deleted Scenes,Behind the Scenes',
       '{"b": 1, "a": [1, 2.50, "x\\"y"], "b": {"c": null}, "u": "\\u0000\\u00e9"}',
       'line1\nline2\ttab\\backslash "dq" ''sq'' ünïcödé 😀', REPEAT('x', 100), 'abcde',
       (SELECT UNHEX(GROUP_CONCAT(LPAD(HEX(seq), 2, '0') ORDER BY seq SEPARATOR ''))
          FROM seq_0_to_255), UNHEX('00FF0A0D5C'),
       'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
       'Ærøskøbing', 'Санкт-Петербург', '北京'),
      (3, 0, 1, -1, 1, 0, 1, 0, 1, -1, 9223372036854775808, 1.5, 0.1,
       '0.000000000000000000000000000001', 0, '2024-02-29', '2024-02-29 12:34:56.5',
       '2001-09-09 01:46:40.000001', '12:34:56.000001', 2024, b'0101010101', 'PG-13',
       'Commentaries,Behind the Scenes', '[ 1 , "two" , null ]', 'a\0b', ' lead and trail ',
       'ab', UNHEX(''), UNHEX('00'), '::ffff:192.0.2.1', '123e4567-e89b-12d3-a456-426614174000',
       'café', 'ёж', '中文'),
      (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL);
  )sql");
  // descr of row 3 holds a NUL byte, which PostgreSQL text cannot hold: the run must say so.
  std::string pg_fail = NewPostgres("fid_rt_my_pg0");
  RunFails(Config("fid-rt-my-nul", src, pg_fail), {"descr"});
  Maria("fid_rt_my", "UPDATE film_edge SET descr = 'a b' WHERE id = 3");

  std::string mid = NewPostgres("fid_rt_my_pg");
  RunExact(Config("fid-rt-my-a", src, mid));
  std::string back = NewMariaDb("fid_rt_my_back");
  RunExact(Config("fid-rt-my-b", pg_->UrlFor("fid_rt_my_pg"), back,
                  {{"tables", {"fid_rt_my.*"}}, {"typeMapping", {{"pgInetAsInet6", true}}}}));
  const ColumnPairs cols = {{"id", "id"},
                            {"ti", "ti"},
                            {"tiu", "tiu"},
                            {"si", "si"},
                            {"siu", "siu"},
                            {"mi", "mi"},
                            {"miu", "miu"},
                            {"i", "i"},
                            {"iu", "iu"},
                            {"bi", "bi"},
                            {"biu", "biu"},
                            {"f", "f"},
                            {"d", "d"},
                            {"dec1", "dec1"},
                            {"dec2", "dec2"},
                            {"dt", "dt"},
                            {"dtm", "dtm"},
                            {"ts", "ts"},
                            {"tm", "tm"},
                            {"yr", "yr"},
                            {"bt + 0", "bt + 0"},
                            {"rating", "rating"},
                            {"features", "features"},
                            {"js", "js"},
                            {"descr", "descr"},
                            {"title", "title"},
                            {"code", "code"},
                            {"HEX(poster)", "HEX(poster)"},
                            {"HEX(tag)", "HEX(tag)"},
                            {"ip", "ip"},
                            {"uid", "uid"},
                            {"city", "city"},
                            {"city_ru", "city_ru"},
                            {"city_cn", "city_cn"}};
  const std::string tz = "SET time_zone = '+00:00'; ";
  std::vector<std::string> want = MariaRows(
      "fid_rt_my", tz + "SELECT " + SelectList(cols, false) + " FROM film_edge ORDER BY id");
  ASSERT_EQ(want.size(), 4u);
  EXPECT_EQ(MariaRows("fid_rt_my_back",
                      tz + "SELECT " + SelectList(cols, true) + " FROM film_edge ORDER BY id"),
            want);
}

TEST_F(FidelityTest, RoundTripPostgresToMariaDbToPostgresIsExact) {
  std::string src = NewPostgres("fid_rt_pg");
  // A music-store-like table (invoices, tracks): one column per type with its edge values.
  Pg("fid_rt_pg", R"sql(
    CREATE TYPE mpaa_rating AS ENUM ('G', 'PG', 'PG-13', 'R', 'NC-17');
    CREATE TABLE track_edge (
      id int PRIMARY KEY, si smallint, i integer, bi bigint, r real, d double precision,
      n numeric(65,30), n2 numeric(20,5), b boolean, t text, vc varchar(50), ch char(4),
      bin bytea, dt date, ts timestamp(6), tstz timestamptz(6), tm time(6), tmtz timetz,
      iv interval, u uuid, j json, jb jsonb, ip inet, cn cidr, mac macaddr, bt bit(8),
      vbt varbit(16), rating mpaa_rating, arr int[], tarr text[]);
    INSERT INTO track_edge VALUES
      (1, -32768, -2147483648, -9223372036854775808, -3.4028235e38, -1.7976931348623157e308,
       '-99999999999999999999999999999999999.999999999999999999999999999999',
       '-999999999999999.99999', false, '', '', '', '\x', '0001-01-01', '0001-01-01 00:00:00',
       '0001-01-01 00:00:00+00', '00:00:00', '00:00:00+14', '-178000000 years',
       '00000000-0000-0000-0000-000000000000', '{}', '{}', '0.0.0.0', '0.0.0.0/0',
       '00:00:00:00:00:00', '00000000', '', 'G', '{}', '{}'),
      (2, 32767, 2147483647, 9223372036854775807, 3.4028235e38, 1.7976931348623157e308,
       '99999999999999999999999999999999999.999999999999999999999999999999',
       '999999999999999.99999', true, E'line1\nline2\ttab\\back "dq" ''sq'' ünïcödé 😀',
       repeat('y', 50), 'abcd', (SELECT string_agg(set_byte('\x00'::bytea, 0, g), ''::bytea
       ORDER BY g) FROM generate_series(0, 255) g), '9999-12-31', '9999-12-31 23:59:59.999999',
       '9999-12-31 23:59:59.999999+00', '24:00:00', '23:59:59.999999-12:30',
       '1 year 2 mons 3 days 04:05:06.5', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
       '{"b":1,"a":[1,2.50,"x\"y"],"b":{"c":null},"u":"\u0000\u00e9"}',
       '{"k": [1, 2.50, "x\"y"], "z": {"n": null}}', '::1', '2001:db8::/32',
       'ff:ff:ff:ff:ff:ff', '11111111', '1010101010101010', 'NC-17', '{{1,2},{3,4}}',
       '{"a,b","c\"d",NULL,""}'),
      (3, 0, 1, -1, 1.17549435e-38, 2.2250738585072014e-308, '0.000000000000000000000000000001',
       '0.00001', false, ' lead and trail ', 'ab', 'ab', '\x00ff', '2024-02-29',
       '2024-02-29 12:34:56.5', '2001-09-09 01:46:40.000001+00', '12:34:56.000001',
       '13:45:00.25+05:30', '-1 days +00:00:01', '123e4567-e89b-12d3-a456-426614174000',
       '[ 1 , "two" , null ]', '[1, "two", null]', '192.168.0.0/16', '10.0.0.0/8',
       '08:00:2b:01:02:03', '10101010', '1', 'PG-13', '{1,NULL,3}', '{x}'),
      (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
  )sql");
  std::string mid = NewMariaDb("fid_rt_pg_my");
  RunExact(Config("fid-rt-pg-a", src, mid));
  std::string back = NewPostgres("fid_rt_pg_back");
  RunExact(Config("fid-rt-pg-b", mid, back));
  const ColumnPairs cols = {{"id", "id"},
                            {"si", "si"},
                            {"i", "i"},
                            {"bi", "bi"},
                            {"r::text", "r::text"},
                            {"d::text", "d::text"},
                            {"n", "n"},
                            {"n2", "n2"},
                            {"b::int", "b"},
                            {"t", "t"},
                            {"vc", "vc"},
                            {"ch::text", "ch::text"},
                            {"bin", "bin"},
                            {"dt", "dt"},
                            {"ts", "ts"},
                            {"tstz AT TIME ZONE 'UTC'", "tstz"},
                            {"tm", "tm"},
                            {"tmtz::text", "tmtz::text"},
                            {"iv::text", "iv::interval::text"},
                            {"u", "u::uuid"},
                            {"j::text", "j::text"},
                            {"jb::text", "jb::text"},
                            {"abbrev(ip)", "ip"},
                            {"cn::text", "cn"},
                            {"mac::text", "mac"},
                            {"bt::text", "bt::text"},
                            {"vbt::text", "vbt"},
                            {"rating::text", "rating"},
                            {"array_to_json(arr)::jsonb::text", "arr::jsonb::text"},
                            {"array_to_json(tarr)::jsonb::text", "tarr::jsonb::text"}};
  std::vector<std::string> want =
      PgRows("fid_rt_pg", "SELECT " + SelectList(cols, false) + " FROM track_edge ORDER BY id");
  ASSERT_EQ(want.size(), 4u);
  EXPECT_EQ(PgRows("fid_rt_pg_back", "SELECT " + SelectList(cols, true) +
                                         " FROM fid_rt_pg_my.track_edge ORDER BY id"),
            want);
}

TEST_F(FidelityTest, ValuesMysqlCannotHoldFailNamingTheColumn) {
  // Each value on its own row of its own table: the failure must name that column.
  struct Case {
    const char* table;
    const char* ddl_and_row;
    const char* column;
    const char* key;  // the row: the server's own check (wide) names only the column
  };
  const Case cases[] = {
      {"nan",
       "CREATE TABLE nan (id int PRIMARY KEY, x double precision); "
       "INSERT INTO nan VALUES (1, 'NaN')",
       "column 'x'", "key (id)=(1)"},
      {"inf",
       "CREATE TABLE inf (id int PRIMARY KEY, x real); "
       "INSERT INTO inf VALUES (1, '-Infinity')",
       "column 'x'", "key (id)=(1)"},
      {"bc",
       "CREATE TABLE bc (id int PRIMARY KEY, x date); "
       "INSERT INTO bc VALUES (1, '0044-03-15 BC')",
       "column 'x'", "key (id)=(1)"},
      {"wide",
       "CREATE TABLE wide (id int PRIMARY KEY, x numeric); "
       "INSERT INTO wide VALUES (1, 1e40)",
       "column 'x'", "fid_cant_wide.wide"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.table);
    std::string db = std::string("fid_cant_") + c.table;
    std::string src = NewPostgres(db);
    Pg(db, c.ddl_and_row);
    RunFails(Config(std::string("fid-cant-") + c.table, pg_->UrlFor(db), NewMariaDb(db)),
             {c.column, c.key});
  }
}

// CDC: binlog row images carry text in the column's own character set; they arrive as exact
// UTF-8, and a byte without a Unicode mapping stops the run naming the column.
TEST_F(FidelityTest, LegacyCharsetsThroughTheBinlog) {
  std::string src = NewMariaDb("fid_cdc_cs");
  Maria("fid_cdc_cs",
        "CREATE TABLE city (id int PRIMARY KEY, name_l1 varchar(40) CHARACTER SET latin1, "
        "  name_ru varchar(40) CHARACTER SET cp1251, name_cn text CHARACTER SET gbk); "
        "INSERT INTO city VALUES (1, 'Zürich', 'Москва', '上海')");
  auto run_around = [&](const std::string& name, const std::string& dst,
                        const std::string& changes) -> Result<RunSummary> {
    auto c = ParseStreamConfig(json{{"name", name},
                                    {"mode", "load+cdc"},
                                    {"source", src},
                                    {"target", dst},
                                    {"schemaPolicy", "drop_and_recreate"}});
    if (!c.ok()) return c.status();
    std::atomic<bool> pinned{false}, done{false};
    LocalRunOptions o;
    o.writers = 1;
    o.data_dir = data_dir_.string();
    o.drain_when = [&] { return done.load(); };
    Result<RunSummary> result = Status::Internal("not run");
    std::thread run([&] {
      result = RunLocal(*c, o, [&](const std::vector<TableProgress>& t, double) {
        if (!t.empty()) pinned.store(true);
      });
    });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!pinned.load() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    Status s = maria_->Exec(changes, "fid_cdc_cs");
    done.store(true);
    run.join();
    if (!s.ok()) return s;
    return result;
  };
  std::string dst = NewPostgres("fid_cdc_cs_dst");
  auto ok = run_around("fid-cdc-cs", dst,
                       "INSERT INTO city VALUES (2, 'Ærøskøbing €', 'Санкт-Петербург', '北京'); "
                       "UPDATE city SET name_l1 = CONVERT(UNHEX('80818D') USING latin1) "
                       "WHERE id = 1");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_GT(ok->cdc.read, 0u);
  for (const TableVerdict& v : ok->verdicts) EXPECT_TRUE(v.match()) << v.Describe();
  EXPECT_EQ(PgRows("fid_cdc_cs_dst",
                   "SELECT id, name_l1, name_ru, name_cn FROM fid_cdc_cs.city "
                   "ORDER BY id"),
            (std::vector<std::string>{"1|€\u0081\u008d|Москва|上海",
                                      "2|Ærøskøbing €|Санкт-Петербург|北京"}));
  auto bad = run_around("fid-cdc-cs-bad", NewPostgres("fid_cdc_cs_bad"),
                        "INSERT INTO city VALUES (3, 'x', CONVERT(UNHEX('98') USING cp1251), 'y')");
  ASSERT_FALSE(bad.ok()) << "a cp1251 0x98 passed through the binlog";
  std::cerr << "failed as expected: " << bad.status().ToString() << "\n";
  EXPECT_NE(bad.status().ToString().find("column 'name_ru'"), std::string::npos)
      << bad.status().ToString();
  EXPECT_NE(bad.status().ToString().find("cp1251"), std::string::npos);
}

}  // namespace
}  // namespace dbs

// PostgreSQL source and sink against a real server (the shared test PostgreSQL): a type zoo
// copied between two databases and compared row by row, exactly-once redelivery, parallel
// chunked reads of one snapshot, the schema policies and write modes, the error messages, and a
// throughput measurement.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/connection.h"
#include "core/bundle.h"
#include "postgres/pg_decode.h"
#include "sinks/sink.h"
#include "sources/source.h"
#include "support/servers.h"

namespace dbs {
namespace {

using testing::PostgresServer;
using testing::Rows;
using testing::SharedServers;

#define ASSERT_OK(expr)                                       \
  do {                                                        \
    const ::dbs::Status st_ = (expr);                         \
    ASSERT_TRUE(st_.ok()) << #expr << ": " << st_.ToString(); \
  } while (0)

#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                  \
  auto DBS_CONCAT_(r_, __LINE__) = (expr);                               \
  ASSERT_TRUE(DBS_CONCAT_(r_, __LINE__).ok())                            \
      << #expr << ": " << DBS_CONCAT_(r_, __LINE__).status().ToString(); \
  lhs = std::move(DBS_CONCAT_(r_, __LINE__)).value()

std::string Cell(const Rows& rows, size_t row = 0, size_t col = 0) {
  if (rows.size() <= row || rows[row].size() <= col) return "<missing>";
  return rows[row][col].value_or("<NULL>");
}

class PgSourceSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pg = SharedServers::Postgres();
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    pg_ = *pg;
    // One pair of databases per test: names from the test's name.
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    src_db_ = "src_" + Lower(name);
    dst_db_ = "dst_" + Lower(name);
    ASSERT_OK(pg_->CreateDatabase(src_db_));
    ASSERT_OK(pg_->CreateDatabase(dst_db_));
  }

  static std::string Lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s.substr(0, 50);
  }

  ConnectionConfig Config(const std::string& db) {
    auto c = ParseConnectionUrl(pg_->UrlFor(db));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : ConnectionConfig{};
  }

  std::unique_ptr<Source> OpenSource() {
    auto s = Source::Open(Config(src_db_));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  std::unique_ptr<Sink> OpenSink(SinkOptions o = {}) {
    if (o.stream.empty()) o.stream = "s1";
    auto s = Sink::Open(Config(dst_db_), o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  // Reads the whole table through a snapshot in bundles of `bundle_rows`, passes each bundle
  // through the bundle codec (as the bus would) and applies them to the sink in batches of
  // `batch` bundles with ids "<table>:0:<n>". Returns the rows copied.
  // `pg_copy`: ask for COPY tuples (ReadSpec::pg_copy_rows).
  Result<uint64_t> Copy(Source* source, Sink* sink, const TableSchema& schema,
                        size_t bundle_rows = 500, size_t batch = 4, bool pg_copy = false) {
    DBS_ASSIGN_OR_RETURN(TargetTable target, sink->PrepareTable(schema));
    (void)target;
    DBS_ASSIGN_OR_RETURN(auto snap, source->BeginSnapshot(1));
    ReadSpec spec;
    spec.table = schema;
    spec.pg_copy_rows = pg_copy;
    DBS_ASSIGN_OR_RETURN(auto reader, snap->OpenReader(spec));
    uint64_t rows = 0;
    int seq = 0;
    std::vector<Bundle> pending;
    auto flush = [&]() -> Status {
      std::vector<BundleRef> refs;
      for (size_t i = 0; i < pending.size(); ++i) {
        refs.push_back({schema.name + ":0:" + std::to_string(seq++), &schema, &pending[i]});
      }
      DBS_ASSIGN_OR_RETURN(size_t n, sink->Apply(refs));
      if (n != refs.size()) return Status::Internal("applied " + std::to_string(n));
      pending.clear();
      return Status::Ok();
    };
    bool more = true;
    while (more) {
      Bundle b;
      DBS_ASSIGN_OR_RETURN(more, reader->Next(&b, bundle_rows, 1u << 20));
      if (b.rows() == 0) continue;
      rows += b.rows();
      std::string bytes;
      DBS_RETURN_IF_ERROR(EncodeBundle(b, EncodeOptions{}, &bytes));
      DBS_ASSIGN_OR_RETURN(Bundle decoded, DecodeBundle(bytes));
      pending.push_back(std::move(decoded));
      if (pending.size() >= batch) DBS_RETURN_IF_ERROR(flush());
    }
    if (!pending.empty()) DBS_RETURN_IF_ERROR(flush());
    return rows;
  }

  // Every row's text form, by id, and the column types, on one side.
  Rows RowsOf(const std::string& db, const std::string& table) {
    auto r = pg_->Query("SELECT id::text, t::text FROM " + table + " t ORDER BY id", db);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Rows{};
  }
  Rows TypesOf(const std::string& db, const std::string& table) {
    auto r = pg_->Query(
        "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = '" +
            table + "'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
        db);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Rows{};
  }

  // Same column types (domains excepted: they arrive as their base type) and the same rows.
  void ExpectSameTable(const std::string& table,
                       const std::map<std::string, std::string>& domains = {}) {
    Rows want = TypesOf(src_db_, table), got = TypesOf(dst_db_, table);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      auto d = domains.find(Cell(want, i));
      EXPECT_EQ(d != domains.end() ? d->second : Cell(want, i, 1), Cell(got, i, 1))
          << "column " << Cell(want, i);
    }
    Rows a = RowsOf(src_db_, table), b = RowsOf(dst_db_, table);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string sa = Cell(a, i, 1), sb = Cell(b, i, 1);
      EXPECT_EQ(sa.size(), sb.size()) << "row " << Cell(a, i, 0);
      if (sa.size() < 4000) {
        EXPECT_EQ(sa, sb) << "row " << Cell(a, i, 0);
      } else {
        EXPECT_TRUE(sa == sb) << "big row " << Cell(a, i, 0) << " differs";
      }
    }
  }

  PostgresServer* pg_ = nullptr;
  std::string src_db_, dst_db_;
};

// --- the type zoo ------------------------------------------------------------------------------

const char kZooTypes[] = R"sql(
CREATE EXTENSION IF NOT EXISTS citext;
CREATE EXTENSION IF NOT EXISTS hstore;
CREATE TYPE pair AS (a int, b text);
)sql";

const char kZooSchema[] = R"sql(
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'it''s "quoted"');
CREATE DOMAIN posnum AS numeric(10,2) CHECK (VALUE > 0);
CREATE TABLE zoo (
  id int PRIMARY KEY,
  c_int2 smallint, c_int4 integer, c_int8 bigint, c_oid oid,
  c_float4 real, c_float8 double precision,
  c_numeric numeric, c_numeric_ps numeric(12,4), c_money money, c_bool boolean,
  c_text text, c_varchar varchar(20), c_char char(5), c_name name, c_char1 "char",
  c_citext citext, c_bytea bytea,
  c_date date, c_time time, c_time3 time(3), c_timetz timetz, c_ts timestamp,
  c_tstz timestamptz, c_interval interval,
  c_uuid uuid, c_json json, c_jsonb jsonb, c_xml xml,
  c_inet inet, c_cidr cidr, c_macaddr macaddr, c_macaddr8 macaddr8,
  c_bit bit(5), c_varbit varbit, c_tsvector tsvector, c_tsquery tsquery,
  c_point point, c_line line, c_lseg lseg, c_box box, c_path path, c_polygon polygon,
  c_circle circle,
  c_int4range int4range, c_tstzrange tstzrange, c_numrange numrange,
  c_multirange int4multirange,
  c_pair pair, c_mood mood, c_domain posnum, c_lsn pg_lsn, c_jsonpath jsonpath,
  c_hstore hstore, c_xid8 xid8,
  a_int4 int[], a_text text[], a_numeric numeric[], a_mood mood[], a_inet inet[],
  a_tstz timestamptz[], a_uuid uuid[], a_bytea bytea[], a_bool bool[], a_float8 float8[],
  a_date date[], a_jsonb jsonb[], a_varchar varchar(10)[], a_interval interval[],
  a_money money[], a_pair pair[], a_bit bit(3)[], a_timetz timetz[], a_int2 int2[],
  a_int8 int8[], a_float4 real[], a_char char(2)[]
);
)sql";

const char kZooRows[] = R"sql(
INSERT INTO zoo VALUES (1,
  42, 123456, 1234567890123, 4294967295,
  1.5, 3.141592653589793,
  12345.678900, 1234.5678, 1234.56, true,
  'hello, world', 'varchar "quoted"', 'ab', 'a_name', 'x', 'CaseInsensitive', '\x000102ff',
  '2024-02-29', '13:45:00.123456', '13:45:00.123', '13:45:00+02', '2024-02-29 13:45:00.5',
  '2024-02-29 13:45:00.5+00', '1 year 2 mons 3 days 04:05:06.789',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"b": 1, "a": [1, 2.50, "x"]}',
  '{"b": 1, "a": [1, 2.50, "x"]}', '<a href="x">t&amp;</a>',
  '192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05',
  B'10101', B'1101100', 'a fat cat sat on a mat', 'fat & (rat | cat)',
  '(1.5,2.5)', '{1,2,3}', '[(0,0),(1,1)]', '(1,1),(0,0)', '[(0,0),(1,1),(2,0)]',
  '((0,0),(1,1),(2,0))', '<(0,0),5>',
  '[1,10)', '[2024-01-01 00:00+00,2024-02-01 00:00+00)', '(1.5,2.5]', '{[1,3),[5,7)}',
  ROW(1, 'x,y "z"'), 'happy', 12.34, '16/B374D848', '$.a[*] ? (@ > 1)', 'a=>1, "b c"=>NULL',
  '12345678901',
  '{1,2,3}', '{"a","b,c","d\"e","NULL",NULL,"","{}"}', '{1.5,NaN,-Infinity}',
  '{sad,happy,"it''s \"quoted\""}', '{192.168.0.1,::1/128}', '{"2024-01-01 00:00+00",infinity}',
  '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}', '{"\\x00ff",NULL}', '{t,f,NULL}',
  '{NaN,Infinity,-0,4.9e-324}', '{2024-02-29,-infinity}', '{"{\"k\": 1}",null}',
  '{ab,"c d"}', '{"1 day","-00:00:01"}', '{1.23,-4.56}', '{"(1,a)","(2,\"b c\")",NULL}',
  '{101,010}', '{13:45:00+02,00:00:00-12}', '{1,-32768}', '{9223372036854775807}',
  '{1.5,NaN}', '{ab,c}');
INSERT INTO zoo (id) VALUES (2);
INSERT INTO zoo VALUES (3,
  -32768, -2147483648, -9223372036854775808, 0,
  '-Infinity', 'NaN',
  'NaN', -99999999.9999, '-92233720368547758.08'::numeric::money, false,
  '', '', '', '', '', '', '',
  'infinity', '24:00:00', '00:00:00', '00:00:00+14:59', 'infinity', '-infinity',
  '-1 years -2 mons +3 days -04:05:06.000001',
  '00000000-0000-0000-0000-000000000000', '""', '[]', '',
  '::/0', '::/0', 'ff:ff:ff:ff:ff:ff', '00:00:00:00:00:00:00:00',
  B'00000', B'', '', 'a',
  '(-1e+308,1e-308)', '{1,-1,0}', '[(0,0),(0,0)]', '(0,0),(0,0)', '((0,0))', '((0,0))',
  '<(0,0),0>',
  'empty', '(,)', 'empty', '{}',
  ROW(NULL, NULL), 'it''s "quoted"', 0.01, '0/0', '$', '', '0',
  '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}',
  '{}', '{}', '{}', '{}', '{}', '{}');
INSERT INTO zoo (id, c_int2, c_int4, c_int8, c_float4, c_float8, c_numeric, c_money, c_text,
  c_varchar, c_char, c_citext, c_date, c_time, c_timetz, c_ts, c_tstz, c_interval, c_json,
  c_jsonb, c_varbit, a_int4, a_text, a_numeric, a_float8, a_date, a_tstz, a_interval, a_mood)
VALUES (4, 32767, 2147483647, 9223372036854775807, '1e-45', '-0',
  'Infinity', '92233720368547758.07'::numeric::money,
  E'emoji \U0001F600 tab\t nl\n backslash \\ quote '' "', E'\U0001F600\U0001F601',
  E'\U0001F600', E'\U0001F600',
  '4713-11-24 BC', '00:00:00.000001', '23:59:59.999999-15:59', '294276-12-31 23:59:59.999999',
  '4713-11-24 00:00:00+00 BC', '178000000 years 11 mons 30 days 23:59:59.999999',
  E'{"emoji": "\U0001F600", "esc": "\\u0000x\\n", "big": 1e400}',
  E'{"emoji": "\U0001F600", "num": 1.0000000000000000000001}',
  B'1010101010101010101010101010101010101010101010101010101010101010101',
  '[0:1][-1:0]={{1,NULL},{3,4}}', '{{a,b},{NULL,"x y"}}',
  '[-5:-4][1:2][1:1]={{{1.5},{NULL}},{{-0.001},{NaN}}}',
  '{-Infinity,1e308,-2.2250738585072014e-308}', '{infinity,1999-12-31,2000-01-01}',
  '{{"1999-12-31 23:59:59.999999+00",NULL},{-infinity,infinity}}',
  '{"-178000000 years","1 mon -1 days 00:00:00.000001"}', '{ok,NULL,sad}');
UPDATE zoo SET c_numeric = ('-' || repeat('9', 600) || '.' || repeat('0123456789', 50))::numeric,
  c_numeric_ps = 99999999.9999 WHERE id = 4;
INSERT INTO zoo (id, c_text, c_bytea, c_jsonb, a_text)
SELECT 5, repeat(E'\u00e9\U0001F600x', 300000),
  decode(repeat((SELECT string_agg(lpad(to_hex(i), 2, '0'), '') FROM generate_series(0, 255) i),
                4096), 'hex'),
  jsonb_build_object('big', repeat('y', 200000)),
  ARRAY[repeat('z', 100000), NULL, ''];
)sql";

TEST_F(PgSourceSinkTest, TypeZooRoundTripsExactly) {
  ASSERT_OK(pg_->Exec(kZooTypes, src_db_));
  ASSERT_OK(pg_->Exec(kZooSchema, src_db_));
  ASSERT_OK(pg_->Exec(kZooRows, src_db_));
  // User-defined composite types and extensions must exist in the target; enums are created.
  ASSERT_OK(pg_->Exec(kZooTypes, dst_db_));

  auto source = OpenSource();
  auto sink = OpenSink();
  ASSERT_TRUE(source && sink);
  ASSERT_OK_AND_ASSIGN(TableSchema zoo, source->Describe({"public", "zoo"}));
  EXPECT_EQ(zoo.primary_key, std::vector<std::string>{"id"});
  ASSERT_OK_AND_ASSIGN(uint64_t rows, Copy(source.get(), sink.get(), zoo, /*bundle_rows=*/2));
  EXPECT_EQ(rows, 5u);
  ExpectSameTable("zoo", {{"c_domain", "numeric(10,2)"}});
}

// --- exactly once ------------------------------------------------------------------------------

TEST_F(PgSourceSinkTest, RedeliveredBundlesAreWrittenOnce) {
  ASSERT_OK(
      pg_->Exec("CREATE TABLE t (id bigint PRIMARY KEY, v text);"
                "INSERT INTO t SELECT i, 'v' || i FROM generate_series(1, 1000) i",
                src_db_));
  auto source = OpenSource();
  auto sink = OpenSink();
  ASSERT_TRUE(source && sink);
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"", "t"}));
  ASSERT_OK_AND_ASSIGN(auto prepared, sink->PrepareTable(t));
  EXPECT_EQ(prepared.schema, "public");
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
  ReadSpec spec;
  spec.table = t;
  ASSERT_OK_AND_ASSIGN(auto reader, snap->OpenReader(spec));
  std::vector<Bundle> bundles;
  bool more = true;
  while (more) {
    Bundle b;
    ASSERT_OK_AND_ASSIGN(more, reader->Next(&b, 300, 1u << 20));
    if (b.rows()) bundles.push_back(std::move(b));
  }
  ASSERT_EQ(bundles.size(), 4u);
  std::vector<BundleRef> first = {{"t:0:0", &t, &bundles[0]}, {"t:0:1", &t, &bundles[1]}};
  ASSERT_OK_AND_ASSIGN(size_t n1, sink->Apply(first));
  EXPECT_EQ(n1, 2u);
  // A redelivery of both, plus the rest with one id repeated inside the batch.
  std::vector<BundleRef> again = {{"t:0:0", &t, &bundles[0]},
                                  {"t:0:1", &t, &bundles[1]},
                                  {"t:0:2", &t, &bundles[2]},
                                  {"t:0:3", &t, &bundles[3]},
                                  {"t:0:3", &t, &bundles[3]}};
  ASSERT_OK_AND_ASSIGN(size_t n2, sink->Apply(again));
  EXPECT_EQ(n2, 2u);
  ASSERT_OK_AND_ASSIGN(size_t n3, sink->Apply(again));
  EXPECT_EQ(n3, 0u);
  ASSERT_OK_AND_ASSIGN(Rows r, pg_->Query("SELECT count(*), sum(id) FROM t", dst_db_));
  EXPECT_EQ(Cell(r, 0, 0), "1000");
  EXPECT_EQ(Cell(r, 0, 1), "500500");
  // A second sink (another writer) sees the same checkpoint rows.
  auto sink2 = OpenSink();
  ASSERT_OK(sink2->PrepareTable(t).status());
  ASSERT_OK_AND_ASSIGN(size_t n4, sink2->Apply(again));
  EXPECT_EQ(n4, 0u);
  ASSERT_OK(sink->ForgetStream());
  ASSERT_OK_AND_ASSIGN(r, pg_->Query("SELECT count(*) FROM _dbstreams.applied", dst_db_));
  EXPECT_EQ(Cell(r), "0");
  // The stream's state stays: a late writer does not apply a schema policy again.
  SinkOptions late;
  late.schema_policy = SchemaPolicy::kDropAndRecreate;
  ASSERT_OK(OpenSink(late)->PrepareTable(t).status());
  ASSERT_OK_AND_ASSIGN(r, pg_->Query("SELECT count(*) FROM t", dst_db_));
  EXPECT_EQ(Cell(r), "1000");
}

// --- same-engine COPY tuples --------------------------------------------------------------------

// Every built-in scalar type that travels as COPY tuples, with NULLs, extremes and unicode.
const char kBuiltinTable[] = R"sql(
CREATE TABLE bi (
  id int PRIMARY KEY, c_int2 smallint, c_int8 bigint, c_oid oid, c_float4 real,
  c_float8 double precision, c_numeric numeric, c_numeric_ps numeric(12,4), c_bool boolean,
  c_text text, c_varchar varchar(20), c_char char(5), c_name name, c_bytea bytea, c_json json,
  c_jsonb jsonb, c_uuid uuid, c_bit bit(5), c_varbit varbit, c_date date, c_time time,
  c_timetz timetz, c_ts timestamp, c_tstz timestamptz, c_interval interval, c_xid8 xid8);
INSERT INTO bi VALUES
 (1, 42, 1234567890123, 4294967295, 1.5, 3.141592653589793, 12345.678900, 1234.5678, true,
  E'emoji \U0001F600 tab\t nl\n', 'varchar "q"', 'ab', 'a_name', '\x000102ff',
  '{"b": 1, "a": [1, 2.50]}', '{"b": 1, "a": [1, 2.50]}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
  B'10101', B'1101100', '2024-02-29', '13:45:00.123456', '13:45:00+02', '2024-02-29 13:45:00.5',
  '2024-02-29 13:45:00.5+00', '1 year 2 mons 3 days 04:05:06.789', '12345678901'),
 (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (3, -32768, -9223372036854775808, 0, '-Infinity', 'NaN', 'NaN', -99999999.9999, false, '', '',
  '', '', '', '""', '[]', '00000000-0000-0000-0000-000000000000', B'00000', B'', 'infinity',
  '24:00:00', '00:00:00+14:59', 'infinity', '-infinity',
  '-1 years -2 mons +3 days -04:05:06.000001', '0'),
 (4, 32767, 9223372036854775807, 1, '1e-45', '-0', 'Infinity', 99999999.9999, true,
  E'\U0001F600\U0001F601', E'\U0001F600', E'\U0001F600', 'n', '\xff', E'{"e": "\U0001F600"}',
  E'{"num": 1.0000000000000000000001}', 'ffffffff-ffff-ffff-ffff-ffffffffffff', B'11111',
  B'1010101010101010101010101010101010101010101010101010101010101010101', '4713-11-24 BC',
  '00:00:00.000001', '23:59:59.999999-15:59', '294276-12-31 23:59:59.999999',
  '4713-11-24 00:00:00+00 BC', '178000000 years 11 mons 30 days 23:59:59.999999',
  '18446744073709551615');
INSERT INTO bi (id, c_int8, c_text, c_numeric)
SELECT g, g * 7, repeat('t', g % 50), g / 3.0 FROM generate_series(5, 3000) g;
)sql";

TEST_F(PgSourceSinkTest, CopyTuplesPassThroughOrAreDecoded) {
  ASSERT_OK(pg_->Exec(kBuiltinTable, src_db_));
  auto source = OpenSource();
  ASSERT_TRUE(source);
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"", "bi"}));

  // The reader hands the rows over as COPY tuples; they survive the bundle codec, and decoding
  // them gives exactly the columns the plain read gives.
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
  auto read_all = [&](bool pg_copy) {
    ReadSpec spec;
    spec.table = t;
    spec.pg_copy_rows = pg_copy;
    Bundle b;
    auto reader = snap->OpenReader(spec);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    if (!reader.ok()) return b;
    auto more = (*reader)->Next(&b, 10000, 64u << 20);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    return b;
  };
  Bundle plain = read_all(false);
  Bundle tuples = read_all(true);
  ASSERT_FALSE(plain.is_pg_copy());
  ASSERT_TRUE(tuples.is_pg_copy());
  ASSERT_EQ(tuples.rows(), 3000u);
  ASSERT_EQ(tuples.pg_copy.type_oids.size(), t.columns.size());
  std::string bytes;
  ASSERT_OK(EncodeBundle(tuples, EncodeOptions{}, &bytes));
  ASSERT_OK_AND_ASSIGN(Bundle back, DecodeBundle(bytes));
  ASSERT_TRUE(back.is_pg_copy());
  EXPECT_EQ(back.pg_copy.tuples, tuples.pg_copy.tuples);
  EXPECT_EQ(back.pg_copy.type_oids, tuples.pg_copy.type_oids);
  ASSERT_OK_AND_ASSIGN(Bundle decoded, pg::DecodeCopyRows(back.pg_copy, t.columns));
  ASSERT_EQ(decoded.rows(), plain.rows());
  for (size_t c = 0; c < t.columns.size(); ++c) {
    for (size_t r = 0; r < plain.rows(); ++r) {
      ASSERT_EQ(decoded.columns[c].Get(r).ToString(), plain.columns[c].Get(r).ToString())
          << "column " << t.columns[c].name << ", row " << r;
      ASSERT_EQ(decoded.columns[c].IsNull(r), plain.columns[c].IsNull(r));
    }
  }

  // Into a table the sink creates (same columns and types): the tuples go in as they are.
  {
    auto sink = OpenSink();
    ASSERT_TRUE(sink);
    ASSERT_OK_AND_ASSIGN(uint64_t n, Copy(source.get(), sink.get(), t, 700, 3, true));
    EXPECT_EQ(n, 3000u);
    ExpectSameTable("bi");
  }

  // Into an existing table whose columns are in another order and partly of other types: the
  // sink decodes the tuples and writes them as columns.
  ASSERT_OK(pg_->Exec("DROP TABLE bi", dst_db_));
  std::string create = "CREATE TABLE bi (c_text varchar(100), c_int8 numeric, ";
  for (size_t i = t.columns.size(); i-- > 0;) {
    const std::string& name = t.columns[i].name;
    if (name == "c_text" || name == "c_int8") continue;
    ASSERT_OK_AND_ASSIGN(Rows ty,
                         pg_->Query("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                                    "WHERE attrelid = 'bi'::regclass AND attname = '" +
                                        name + "'",
                                    src_db_));
    create += name + " " + Cell(ty) + (name == "id" ? " PRIMARY KEY" : "") + (i ? ", " : "");
  }
  ASSERT_OK(pg_->Exec(create + ")", dst_db_));
  {
    SinkOptions o;
    o.stream = "s2";
    o.schema_policy = SchemaPolicy::kValidateExisting;
    auto sink = OpenSink(o);
    ASSERT_TRUE(sink);
    ASSERT_OK_AND_ASSIGN(uint64_t n, Copy(source.get(), sink.get(), t, 700, 3, true));
    EXPECT_EQ(n, 3000u);
  }
  std::string cols;
  for (const Column& c : t.columns) {
    cols += (cols.empty() ? "" : ", ") + c.name + (c.name == "c_int8" ? "::bigint" : "") +
            (c.name == "c_text" ? "::text" : "");
  }
  const std::string q = "SELECT ROW(" + cols + ")::text FROM bi ORDER BY id";
  ASSERT_OK_AND_ASSIGN(Rows want, pg_->Query(q, src_db_));
  ASSERT_OK_AND_ASSIGN(Rows got, pg_->Query(q, dst_db_));
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(Cell(want, i), Cell(got, i)) << "row " << i;
}

// --- parallel chunks ---------------------------------------------------------------------------

// PostgreSQL 14+ splits an analyzed plain table into ranges of heap pages (TID range scans),
// key or no key: each row of the snapshot is read once, also when updates moved row versions
// to other pages. Older servers split the integer key's span.
TEST_F(PgSourceSinkTest, ParallelChunksOfOneSnapshot) {
  ASSERT_OK(
      pg_->Exec("CREATE TABLE big (id bigint PRIMARY KEY, v text);"
                "INSERT INTO big SELECT i, md5(i::text) FROM generate_series(1, 200000) i;"
                "UPDATE big SET v = v || 'x' WHERE id % 3 = 0;"
                "ANALYZE big",
                src_db_));
  auto source = OpenSource();
  ASSERT_TRUE(source);
  ASSERT_OK_AND_ASSIGN(TableSchema big, source->Describe({"public", "big"}));
  ASSERT_OK_AND_ASSIGN(std::vector<KeyRange> ranges, source->Split(big, 50000));
  ASSERT_OK_AND_ASSIGN(Rows version, pg_->Query("SHOW server_version_num", src_db_));
  const bool pages = std::stoi(Cell(version)) >= 140000;
  ASSERT_EQ(ranges.size(), 4u);
  for (const KeyRange& r : ranges) EXPECT_EQ(r.pages, pages);
  EXPECT_FALSE(ranges.front().lower.has_value());
  EXPECT_FALSE(ranges.back().upper.has_value());
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(2));
  EXPECT_EQ(snap->position().kind, SourcePosition::Kind::kPgLsn);
  EXPECT_NE(snap->position().value.find('/'), std::string::npos);
  // Rows committed after the snapshot are not seen.
  ASSERT_OK(pg_->Exec("INSERT INTO big VALUES (0, 'late'), (300000, 'late')", src_db_));

  std::atomic<uint64_t> rows{0}, sum{0};
  std::atomic<int> next{0};
  std::vector<std::string> errors(2);
  auto work = [&](int w) {
    for (int i = next++; i < static_cast<int>(ranges.size()); i = next++) {
      ReadSpec spec;
      spec.table = big;
      spec.range = ranges[static_cast<size_t>(i)];
      auto reader = snap->OpenReader(spec);
      if (!reader.ok()) {
        errors[static_cast<size_t>(w)] = reader.status().ToString();
        return;
      }
      bool more = true;
      while (more) {
        Bundle b;
        auto r = (*reader)->Next(&b, 1000, 1u << 20);
        if (!r.ok()) {
          errors[static_cast<size_t>(w)] = r.status().ToString();
          return;
        }
        more = *r;
        for (size_t k = 0; k < b.rows(); ++k) sum += static_cast<uint64_t>(b.columns[0].GetInt(k));
        rows += b.rows();
      }
    }
  };
  std::thread t1(work, 0), t2(work, 1);
  t1.join();
  t2.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  EXPECT_EQ(rows.load(), 200000u);
  EXPECT_EQ(sum.load(), 200000ull * 200001ull / 2);

  // No key at all: page ranges still read it in parallel chunks, each row once.
  if (!pages) return;
  ASSERT_OK(
      pg_->Exec("CREATE TABLE heap (n int, v text);"
                "INSERT INTO heap SELECT i, md5(i::text) FROM generate_series(1, 90000) i;"
                "ANALYZE heap",
                src_db_));
  ASSERT_OK_AND_ASSIGN(TableSchema heap, source->Describe({"public", "heap"}));
  ASSERT_OK_AND_ASSIGN(ranges, source->Split(heap, 30000));
  ASSERT_EQ(ranges.size(), 3u);
  ASSERT_OK_AND_ASSIGN(auto heap_snap, source->BeginSnapshot(1));
  uint64_t heap_rows = 0, heap_sum = 0;
  for (const KeyRange& r : ranges) {
    ReadSpec spec;
    spec.table = heap;
    spec.range = r;
    ASSERT_OK_AND_ASSIGN(auto reader, heap_snap->OpenReader(spec));
    for (bool more = true; more;) {
      Bundle b;
      ASSERT_OK_AND_ASSIGN(more, reader->Next(&b, 1000, 1u << 20));
      for (size_t k = 0; k < b.rows(); ++k)
        heap_sum += static_cast<uint64_t>(b.columns[0].GetInt(k));
      heap_rows += b.rows();
    }
  }
  EXPECT_EQ(heap_rows, 90000u);
  EXPECT_EQ(heap_sum, 90000ull * 90001ull / 2);
}

// A table's chunks are read on the connections of earlier chunks whose COPY ended cleanly
// (still in the snapshot's transaction), not on a new server backend each; a reader dropped
// before its end, or one that failed, does not hand its connection back, and the next reader
// still reads exactly the snapshot.
TEST_F(PgSourceSinkTest, ChunkReadersReuseCleanConnections) {
  ASSERT_OK(
      pg_->Exec("CREATE TABLE reuse (id bigint PRIMARY KEY, v text);"
                "INSERT INTO reuse SELECT i, md5(i::text) FROM generate_series(1, 30000) i;"
                "ANALYZE reuse",
                src_db_));
  auto source = OpenSource();
  ASSERT_TRUE(source);
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"public", "reuse"}));
  ASSERT_OK_AND_ASSIGN(std::vector<KeyRange> ranges, source->Split(t, 10000));
  ASSERT_EQ(ranges.size(), 3u);
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
  ASSERT_OK(pg_->Exec("DELETE FROM reuse WHERE id % 2 = 0", src_db_));  // after the snapshot
  // The server backends of this database whose last statement was a reader's COPY (running,
  // or idle in the snapshot's transaction).
  auto backends = [&]() -> std::set<std::string> {
    std::set<std::string> out;
    auto rows = pg_->Query(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND state <> 'idle' AND query LIKE 'COPY (SELECT %'",
        src_db_);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    if (rows.ok()) {
      for (const auto& r : *rows) out.insert(r[0].value_or(""));
    }
    return out;
  };
  // Reads `range` to its end (or only its first bundle); the rows' count and id sum, and the
  // backends while the reader was open.
  std::set<std::string> seen;
  auto read = [&](const KeyRange& range, bool to_end, uint64_t* rows, uint64_t* sum) {
    ReadSpec spec;
    spec.table = t;
    spec.range = range;
    ASSERT_OK_AND_ASSIGN(auto reader, snap->OpenReader(spec));
    seen = backends();
    for (bool more = true; more;) {
      Bundle b;
      ASSERT_OK_AND_ASSIGN(more, reader->Next(&b, 1000, 1u << 20));
      for (size_t k = 0; k < b.rows(); ++k) *sum += static_cast<uint64_t>(b.columns[0].GetInt(k));
      *rows += b.rows();
      if (!to_end) break;
    }
  };
  uint64_t rows = 0, sum = 0;
  read(ranges[0], true, &rows, &sum);
  const std::set<std::string> first = seen;
  ASSERT_EQ(first.size(), 1u);
  read(ranges[1], true, &rows, &sum);
  EXPECT_EQ(seen, first) << "a chunk reader started a backend of its own";
  read(ranges[2], true, &rows, &sum);
  EXPECT_EQ(seen, first) << "a chunk reader started a backend of its own";
  EXPECT_EQ(rows, 30000u);  // the snapshot's rows, not the deletes after it
  EXPECT_EQ(sum, 30000ull * 30001ull / 2);

  // Dropped after its first bundle: its connection is closed, not handed to the next reader.
  uint64_t part_rows = 0, part_sum = 0;
  read(ranges[0], false, &part_rows, &part_sum);
  EXPECT_EQ(part_rows, 1000u);
  EXPECT_EQ(seen, first);
  rows = sum = 0;
  read(ranges[0], true, &rows, &sum);
  const std::set<std::string> second = seen;
  EXPECT_NE(second, first) << "a dropped reader's connection was handed on";
  // A reader that fails on the pooled connection (a filter the server rejects, which aborts
  // its transaction) does not hand it back either.
  ReadSpec bad;
  bad.table = t;
  bad.filter = "no_such_column > 0";
  EXPECT_FALSE(snap->OpenReader(bad).ok());
  read(ranges[1], true, &rows, &sum);
  EXPECT_NE(seen, second) << "a failed reader's connection was handed on";
  read(ranges[2], true, &rows, &sum);
  EXPECT_EQ(rows, 30000u);
  EXPECT_EQ(sum, 30000ull * 30001ull / 2);
}

// --- errors ------------------------------------------------------------------------------------

TEST_F(PgSourceSinkTest, ConnectionErrorsSayWhy) {
  // Unreachable: a port nobody listens on.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  ConnectionConfig c = Config(src_db_);
  c.port = ntohs(addr.sin_port);
  auto r = Source::Open(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_TRUE(r.status().retryable());

  c = Config(src_db_);
  c.password = "wrong-password";
  r = Source::Open(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated) << r.status().ToString();
  EXPECT_FALSE(r.status().retryable());
  EXPECT_EQ(r.status().message().find("wrong-password"), std::string::npos);

  c = Config(src_db_);
  c.database = "no_such_database";
  r = Source::Open(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  EXPECT_NE(r.status().message().find("no_such_database"), std::string::npos);

  SinkOptions so;
  so.stream = "s1";
  auto s = Sink::Open(c, so);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound) << s.status().ToString();
}

TEST_F(PgSourceSinkTest, SourceErrorsNameTheObject) {
  ASSERT_OK(pg_->Exec(
      "CREATE TABLE secret (id int PRIMARY KEY, v text); INSERT INTO secret VALUES (1, 'x');"
      "CREATE TABLE odd (id int, g gtsvector);"
      "DO $$ BEGIN CREATE ROLE limited LOGIN PASSWORD 'limited-pw'; "
      "EXCEPTION WHEN duplicate_object THEN NULL; END $$",
      src_db_));
  auto source = OpenSource();
  ASSERT_TRUE(source);
  auto d = source->Describe({"public", "nope"});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find("nope"), std::string::npos) << d.status().ToString();

  d = source->Describe({"public", "odd"});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(d.status().message().find("'g'"), std::string::npos) << d.status().ToString();
  EXPECT_NE(d.status().message().find("gtsvector"), std::string::npos) << d.status().ToString();
  EXPECT_NE(d.status().message().find("odd"), std::string::npos) << d.status().ToString();

  ASSERT_OK_AND_ASSIGN(TableSchema secret, source->Describe({"public", "secret"}));
  ConnectionConfig lc = Config(src_db_);
  lc.user = "limited";
  lc.password = "limited-pw";
  ASSERT_OK_AND_ASSIGN(auto limited, Source::Open(lc));
  d = limited->Describe({"public", "secret"});
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kPermissionDenied) << d.status().ToString();
  EXPECT_NE(d.status().message().find("public.secret"), std::string::npos);
  // Reading with a description made by someone else: the COPY is refused, naming the table.
  ASSERT_OK_AND_ASSIGN(auto snap, limited->BeginSnapshot(1));
  ReadSpec spec;
  spec.table = secret;
  auto reader = snap->OpenReader(spec);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), StatusCode::kPermissionDenied) << reader.status().ToString();
  EXPECT_NE(reader.status().message().find("secret"), std::string::npos);
  // A column that changed type since it was described (text columns read anything as text).
  ASSERT_OK(pg_->Exec("ALTER TABLE secret ALTER COLUMN id TYPE bigint", src_db_));
  ASSERT_OK_AND_ASSIGN(auto snap2, source->BeginSnapshot(1));
  reader = snap2->OpenReader(spec);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), StatusCode::kFailedPrecondition) << reader.status().ToString();
}

TEST_F(PgSourceSinkTest, SinkErrorsNameTableAndColumn) {
  ASSERT_OK(pg_->Exec(
      "CREATE TABLE nn (id int PRIMARY KEY, v text);"
      "INSERT INTO nn VALUES (1, 'a'), (2, NULL);"
      "CREATE TABLE wide (id int PRIMARY KEY, n bigint, u text);"
      "INSERT INTO wide VALUES (1, 1099511627776, 'x');"
      "CREATE TABLE txt (id int PRIMARY KEY, u text); INSERT INTO txt VALUES (1, 'not-a-uuid')",
      src_db_));
  ASSERT_OK(
      pg_->Exec("CREATE TABLE nn (id int PRIMARY KEY, v text NOT NULL);"
                "CREATE TABLE wide (id int PRIMARY KEY, n int, u text);"
                "CREATE TABLE txt (id int PRIMARY KEY, u uuid)",
                dst_db_));
  auto source = OpenSource();
  auto sink = OpenSink();
  ASSERT_TRUE(source && sink);

  ASSERT_OK_AND_ASSIGN(TableSchema nn, source->Describe({"public", "nn"}));
  auto r = Copy(source.get(), sink.get(), nn);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_FALSE(r.status().retryable());
  EXPECT_NE(r.status().message().find("public.nn"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("column v"), std::string::npos) << r.status().ToString();

  ASSERT_OK_AND_ASSIGN(TableSchema wide, source->Describe({"public", "wide"}));
  r = Copy(source.get(), sink.get(), wide);
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.status().retryable());
  EXPECT_NE(r.status().message().find("public.wide"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("column n"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("1099511627776"), std::string::npos);

  ASSERT_OK_AND_ASSIGN(TableSchema txt, source->Describe({"public", "txt"}));
  r = Copy(source.get(), sink.get(), txt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("public.txt"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("not-a-uuid"), std::string::npos) << r.status().ToString();

  // Unique violation when the same rows arrive under new bundle ids (append mode).
  ASSERT_OK(pg_->Exec("UPDATE nn SET v = 'b' WHERE id = 2", src_db_));
  ASSERT_OK_AND_ASSIGN(uint64_t rows, Copy(source.get(), sink.get(), nn));
  EXPECT_EQ(rows, 2u);
  ASSERT_OK_AND_ASSIGN(TargetTable tt, sink->PrepareTable(nn));
  (void)tt;
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
  ReadSpec spec;
  spec.table = nn;
  ASSERT_OK_AND_ASSIGN(auto reader, snap->OpenReader(spec));
  Bundle b;
  ASSERT_OK(reader->Next(&b, 100, 1u << 20).status());
  auto a = sink->Apply({{"nn:9:9", &nn, &b}});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kFailedPrecondition) << a.status().ToString();
  EXPECT_NE(a.status().message().find("nn_pkey"), std::string::npos) << a.status().ToString();
  // The failed batch left no checkpoint row behind: it can be applied once fixed.
  ASSERT_OK_AND_ASSIGN(Rows cp, pg_->Query("SELECT count(*) FROM _dbstreams.applied "
                                           "WHERE bundle_id = 'nn:9:9'",
                                           dst_db_));
  EXPECT_EQ(Cell(cp), "0");

  // Connection loss is retryable, and the next call reconnects.
  ASSERT_OK(pg_->Exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" +
                          dst_db_ + "' AND application_name = 'dbstreams'",
                      "postgres"));
  a = sink->Apply({{"nn:9:10", &nn, &b}});
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(a.status().retryable()) << a.status().ToString();
  ASSERT_OK(pg_->Exec("TRUNCATE nn", dst_db_));
  ASSERT_OK_AND_ASSIGN(size_t n, sink->Apply({{"nn:9:10", &nn, &b}}));
  EXPECT_EQ(n, 1u);
}

// --- schema policies and write modes -----------------------------------------------------------

TEST_F(PgSourceSinkTest, SchemaPoliciesAndWriteModes) {
  ASSERT_OK(pg_->Exec(
      "CREATE TABLE p (id int PRIMARY KEY, v text); INSERT INTO p VALUES (1, 'a'), (2, 'b');"
      "CREATE TABLE nokey (v text); INSERT INTO nokey VALUES ('x')",
      src_db_));
  ASSERT_OK(pg_->Exec("CREATE TABLE p (junk int); INSERT INTO p VALUES (7)", dst_db_));
  auto source = OpenSource();
  ASSERT_TRUE(source);
  ASSERT_OK_AND_ASSIGN(TableSchema p, source->Describe({"public", "p"}));
  ASSERT_OK_AND_ASSIGN(TableSchema nokey, source->Describe({"public", "nokey"}));

  SinkOptions o;
  o.stream = "fail";
  o.schema_policy = SchemaPolicy::kFailIfExists;
  auto prep = OpenSink(o)->PrepareTable(p);
  ASSERT_FALSE(prep.ok());
  EXPECT_EQ(prep.status().code(), StatusCode::kAlreadyExists) << prep.status().ToString();
  EXPECT_NE(prep.status().message().find("public.p"), std::string::npos);

  o.stream = "validate";
  o.schema_policy = SchemaPolicy::kValidateExisting;
  prep = OpenSink(o)->PrepareTable(p);
  ASSERT_FALSE(prep.ok());
  EXPECT_EQ(prep.status().code(), StatusCode::kFailedPrecondition) << prep.status().ToString();
  EXPECT_NE(prep.status().message().find("column id is missing"), std::string::npos)
      << prep.status().ToString();
  EXPECT_NE(prep.status().message().find("column v is missing"), std::string::npos);

  o.stream = "recreate";
  o.schema_policy = SchemaPolicy::kDropAndRecreate;
  o.defer_primary_key = true;
  auto sink = OpenSink(o);
  ASSERT_OK_AND_ASSIGN(uint64_t rows, Copy(source.get(), sink.get(), p));
  EXPECT_EQ(rows, 2u);
  ExpectSameTable("p");
  // The table was created without its primary key; finishing the stream adds it.
  auto has_key = [&]() {
    auto r = pg_->Query(
        "SELECT count(*) FROM pg_constraint WHERE conrelid = 'public.p'::regclass AND contype = "
        "'p'",
        dst_db_);
    return r.ok() && Cell(*r) == "1";
  };
  EXPECT_FALSE(has_key());
  ASSERT_OK(sink->FinishStream({p}));
  EXPECT_TRUE(has_key());
  o.defer_primary_key = false;
  // Applied exactly once per stream: a second writer does not drop the loaded table again.
  ASSERT_OK(OpenSink(o)->PrepareTable(p).status());
  ASSERT_OK_AND_ASSIGN(Rows cnt, pg_->Query("SELECT count(*) FROM p", dst_db_));
  EXPECT_EQ(Cell(cnt), "2");

  o.stream = "notempty";
  o.schema_policy = SchemaPolicy::kCreateMissing;
  o.write_mode = WriteMode::kFailIfNotEmpty;
  prep = OpenSink(o)->PrepareTable(p);
  ASSERT_FALSE(prep.ok());
  EXPECT_EQ(prep.status().code(), StatusCode::kFailedPrecondition) << prep.status().ToString();
  EXPECT_NE(prep.status().message().find("not empty"), std::string::npos);

  o.stream = "validate-ok";
  o.schema_policy = SchemaPolicy::kValidateExisting;
  o.write_mode = WriteMode::kTruncateAndLoad;
  sink = OpenSink(o);
  ASSERT_OK(pg_->Exec("INSERT INTO p VALUES (100, 'extra')", dst_db_));
  ASSERT_OK_AND_ASSIGN(rows, Copy(source.get(), sink.get(), p));
  ExpectSameTable("p");

  o.stream = "upsert";
  o.schema_policy = SchemaPolicy::kCreateMissing;
  o.write_mode = WriteMode::kUpsert;
  sink = OpenSink(o);
  prep = sink->PrepareTable(nokey);
  ASSERT_FALSE(prep.ok());
  EXPECT_EQ(prep.status().code(), StatusCode::kFailedPrecondition) << prep.status().ToString();
  EXPECT_NE(prep.status().message().find("primary key"), std::string::npos);
  ASSERT_OK(
      pg_->Exec("UPDATE p SET v = 'changed' WHERE id = 2; INSERT INTO p VALUES (3, 'c')", src_db_));
  ASSERT_OK_AND_ASSIGN(rows, Copy(source.get(), sink.get(), p));
  EXPECT_EQ(rows, 3u);
  ExpectSameTable("p");
}

TEST_F(PgSourceSinkTest, FinishStreamAddsIndexesKeysAndChecksOnce) {
  const char* ddl =
      "CREATE TABLE parent (id int PRIMARY KEY, code text UNIQUE);"
      "CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent(id) "
      "  ON DELETE CASCADE, qty int CHECK (qty > 0), name text);"
      "CREATE INDEX child_name_lower ON child (lower(name) DESC) WHERE qty > 1;"
      "INSERT INTO parent VALUES (1, 'a'), (2, 'b');"
      "INSERT INTO child VALUES (1, 1, 5, 'x'), (2, 2, 1, 'y')";
  ASSERT_OK(pg_->Exec(ddl, src_db_));
  auto source = OpenSource();
  auto sink = OpenSink();
  ASSERT_TRUE(source && sink);
  ASSERT_OK_AND_ASSIGN(std::vector<TableRef> tables, source->ListTables());
  ASSERT_EQ(tables.size(), 2u);
  std::vector<TableSchema> schemas;
  for (const TableRef& ref : tables) {
    ASSERT_OK_AND_ASSIGN(TableSchema s, source->Describe(ref));
    ASSERT_OK(Copy(source.get(), sink.get(), s).status());
    schemas.push_back(s);
  }
  ASSERT_OK(sink->FinishStream(schemas));
  ASSERT_OK(sink->FinishStream(schemas));
  ASSERT_OK(OpenSink()->FinishStream(schemas));
  // Keys and checks are the same; a UNIQUE constraint comes back as a unique index of the same
  // name (the schema model has no unique constraints).
  const std::string constraints =
      "SELECT conname::text || ' ' || pg_get_constraintdef(oid) FROM pg_constraint "
      "WHERE conrelid IN ('parent'::regclass, 'child'::regclass) AND contype <> 'u' ORDER BY 1";
  ASSERT_OK_AND_ASSIGN(Rows defs, pg_->Query(constraints, dst_db_));
  ASSERT_OK_AND_ASSIGN(Rows want, pg_->Query(constraints, src_db_));
  EXPECT_EQ(defs, want);
  EXPECT_EQ(defs.size(), 4u);
  ASSERT_OK_AND_ASSIGN(Rows idx, pg_->Query("SELECT indexdef FROM pg_indexes WHERE tablename IN "
                                            "('parent', 'child') ORDER BY 1",
                                            dst_db_));
  ASSERT_OK_AND_ASSIGN(Rows idx_want,
                       pg_->Query("SELECT indexdef FROM pg_indexes WHERE tablename IN "
                                  "('parent', 'child') ORDER BY 1",
                                  src_db_));
  EXPECT_EQ(idx, idx_want);
}

TEST_F(PgSourceSinkTest, CustomQueryAndFilter) {
  ASSERT_OK(
      pg_->Exec("CREATE TABLE q (id int PRIMARY KEY, amount numeric(10,2), tags text[]);"
                "INSERT INTO q SELECT i, i * 1.5, ARRAY['t' || i] FROM generate_series(1, 100) i",
                src_db_));
  auto source = OpenSource();
  ASSERT_TRUE(source);
  ASSERT_OK_AND_ASSIGN(TableSchema qs,
                       source->DescribeQuery("SELECT id, amount * 2 AS doubled, tags[1] AS tag "
                                             "FROM q;",
                                             {"public", "q_view"}));
  ASSERT_EQ(qs.columns.size(), 3u);
  EXPECT_EQ(qs.columns[1].type, LogicalType::kDecimal);
  EXPECT_EQ(qs.columns[2].type, LogicalType::kText);
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
  ReadSpec spec;
  spec.table = qs;
  spec.query = "SELECT id, amount * 2 AS doubled, tags[1] AS tag FROM q  -- a comment";
  spec.filter = "id % 10 = 0";
  spec.limit = 5;
  ASSERT_OK_AND_ASSIGN(auto reader, snap->OpenReader(spec));
  Bundle b;
  ASSERT_OK_AND_ASSIGN(bool more, reader->Next(&b, 100, 1u << 20));
  EXPECT_FALSE(more);
  ASSERT_EQ(b.rows(), 5u);
  EXPECT_EQ(b.columns[1].GetBytes(0), "30.00");
  EXPECT_EQ(b.columns[2].GetBytes(4), "t50");

  auto bad = source->DescribeQuery("SELEC 1", {"public", "x"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status().ToString();
}

// --- throughput --------------------------------------------------------------------------------

TEST_F(PgSourceSinkTest, Throughput16Columns200kRows) {
  ASSERT_OK(pg_->Exec(
      "CREATE TABLE perf (id bigint PRIMARY KEY, a int, b int, c bigint, d double precision, "
      "  e double precision, f numeric(12,2), g numeric(12,2), h text, i text, j text, "
      "  k timestamptz, l timestamptz, m date, n boolean, o uuid);"
      "INSERT INTO perf SELECT s, s % 1000, s % 7, s * 31, s / 3.0, sqrt(s), s * 1.25, "
      "  s % 100000 * 0.01, md5(s::text), 'name ' || s, repeat('x', 40 + s % 40), "
      "  '2024-01-01'::timestamptz + s * interval '1 second', now(), "
      "  '2000-01-01'::date + s % 9000, s % 2 = 0, md5(s::text)::uuid "
      "FROM generate_series(1, 200000) s; ANALYZE perf",
      src_db_));
  auto source = OpenSource();
  auto sink = OpenSink();
  ASSERT_TRUE(source && sink);
  ASSERT_OK_AND_ASSIGN(TableSchema perf, source->Describe({"public", "perf"}));

  auto t0 = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
  ReadSpec spec;
  spec.table = perf;
  ASSERT_OK_AND_ASSIGN(auto reader, snap->OpenReader(spec));
  uint64_t rows = 0;
  bool more = true;
  while (more) {
    Bundle b;
    ASSERT_OK_AND_ASSIGN(more, reader->Next(&b, 1000, 768u << 10));
    rows += b.rows();
  }
  const double read_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(rows, 200000u);

  t0 = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(uint64_t copied, Copy(source.get(), sink.get(), perf, 1000, 16));
  const double copy_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(copied, 200000u);
  std::printf("[ perf     ] read %.0f rows/s; read+codec+write %.0f rows/s (no secondary index)\n",
              rows / read_s, copied / copy_s);
  RecordProperty("read_rows_per_s", static_cast<int>(rows / read_s));
  RecordProperty("copy_rows_per_s", static_cast<int>(copied / copy_s));
  ExpectSameTable("perf");
}

}  // namespace
}  // namespace dbs

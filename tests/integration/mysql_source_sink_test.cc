// MySQL source and sink against a real MariaDB (the fixture's shared server, tests/support):
//  - a "type zoo" with every MySQL/MariaDB type (extremes, zero dates, 4-byte UTF-8, odd enum
//    labels, bit(64), geometry, 1 MB blobs, ...) read by MysqlSource, written by MysqlSink into
//    another database and compared exactly on the server (a join on every column) and through
//    the reader, with spot checks of values that are easy to get wrong;
//  - redelivery (the same bundle ids twice are written once), upserts, the INSERT fallback when
//    local_infile is off, structures after the data, schema policies and write modes;
//  - a 200k-row, 16-column table split into chunks and copied by 2 parallel readers/writers
//    (count, SUM(id) and a full comparison), with read and write throughput printed;
//  - the messages of common mistakes: wrong password, unreachable server, unknown database,
//    missing table, missing privilege (a limited user), a value the target rejects.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "config/connection.h"
#include "core/temporal.h"
#include "mysql/mysql_client.h"
#include "run/local_run.h"
#include "sinks/mysql/mysql_sink.h"
#include "sources/mysql/mysql_source.h"
#include "support/servers.h"

namespace dbs {
namespace {

using testing::MariaDbServer;
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

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Reads what `spec` selects into bundles of at most `rows` rows.
Result<std::vector<Bundle>> ReadAll(Snapshot* snap, const ReadSpec& spec, size_t rows = 1000,
                                    size_t max_bytes = 4u << 20) {
  DBS_ASSIGN_OR_RETURN(auto reader, snap->OpenReader(spec));
  std::vector<Bundle> out;
  bool more = true;
  while (more) {
    Bundle b;
    for (const Column& c : spec.table.columns) b.columns.emplace_back(c.type, c.element_type);
    DBS_ASSIGN_OR_RETURN(more, reader->Next(&b, rows, max_bytes));
    if (b.rows() > 0) out.push_back(std::move(b));
  }
  return out;
}

// Applies `bundles` of `table` with ids "<prefix>.<i>"; returns the bundles written.
Result<size_t> WriteAll(Sink* sink, const TableSchema& table, const std::vector<Bundle>& bundles,
                        const std::string& prefix, size_t batch = 8) {
  size_t written = 0;
  for (size_t i = 0; i < bundles.size(); i += batch) {
    std::vector<BundleRef> refs;
    for (size_t k = i; k < bundles.size() && k < i + batch; ++k) {
      refs.push_back({prefix + "." + std::to_string(k), &table, &bundles[k]});
    }
    DBS_ASSIGN_OR_RETURN(size_t n, sink->Apply(refs));
    written += n;
  }
  return written;
}

class MysqlSourceSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = SharedServers::MariaDb();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = *s;
  }

  ConnectionConfig Config(const std::string& db) {
    auto c = ParseConnectionUrl(server_->url());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    ConnectionConfig cfg = c.ok() ? *c : ConnectionConfig{};
    cfg.database = db;
    return cfg;
  }

  void Exec(const std::string& sql, const std::string& db = "") {
    Status s = server_->Exec(sql, db);
    ASSERT_TRUE(s.ok()) << s.ToString() << "\nSQL: " << sql.substr(0, 400);
  }

  // A fresh database `src` holding the zoo table and its rows; database `dst` dropped.
  void MakeZoo(const std::string& src, const std::string& dst);

  // Removes what earlier runs of these streams recorded on the (possibly reused) server.
  void ForgetStreams(const std::vector<std::string>& streams) {
    for (const std::string& st : streams) {
      (void)server_->Exec("DELETE FROM _dbstreams.applied WHERE stream = '" + st +
                          "'; DELETE FROM _dbstreams.state WHERE stream = '" + st + "'");
    }
  }

  std::string Scalar(const std::string& sql, const std::string& db = "") {
    auto r = server_->Query(sql, db);
    EXPECT_TRUE(r.ok()) << r.status().ToString() << "\nSQL: " << sql;
    if (!r.ok() || r->empty() || r->front().empty()) return "<none>";
    return r->front().front().value_or("<NULL>");
  }

  // Rows of src.t with an equal row in dst.t, compared column by column on the server
  // (floats by value, everything else by its bytes), and both row counts.
  void ExpectSameRows(const std::string& src, const std::string& dst, const std::string& t) {
    auto cols = server_->Query(
        "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_KEY FROM information_schema.COLUMNS WHERE "
        "TABLE_SCHEMA = '" +
        src + "' AND TABLE_NAME = '" + t + "' ORDER BY ORDINAL_POSITION");
    ASSERT_TRUE(cols.ok()) << cols.status().ToString();
    std::string on;
    for (const auto& row : *cols) {  // the key first, so the join can use it
      if (*row[2] != "PRI") continue;
      const std::string c = "`" + *row[0] + "`";
      on += (on.empty() ? "" : " AND ") + ("a." + c + " = b." + c);
    }
    for (const auto& row : *cols) {
      const std::string c = "`" + *row[0] + "`";
      const std::string& type = *row[1];
      if (!on.empty()) on += " AND ";
      if (type == "float" || type == "double") {
        on += "a." + c + " <=> b." + c;
      } else {
        on += "BINARY a." + c + " <=> BINARY b." + c;
      }
    }
    const std::string s = "`" + src + "`.`" + t + "`", d = "`" + dst + "`.`" + t + "`";
    const std::string n = Scalar("SELECT COUNT(*) FROM " + s);
    EXPECT_EQ(Scalar("SELECT COUNT(*) FROM " + d), n) << t;
    EXPECT_EQ(Scalar("SELECT COUNT(*) FROM " + s + " a JOIN " + d + " b ON " + on), n)
        << "rows of " << s << " without an identical row in " << d;
  }

  MariaDbServer* server_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// The type zoo.

constexpr const char* kZooTable = R"(
CREATE TABLE zoo (
  id INT NOT NULL PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  bo BOOL, dec65 DECIMAL(65,30), dec5 DECIMAL(5,2) UNSIGNED, f FLOAT, d DOUBLE,
  c CHAR(10), vc VARCHAR(300), l1 VARCHAR(20) CHARACTER SET latin1, tt TINYTEXT, tx TEXT,
  mt MEDIUMTEXT, lt LONGTEXT,
  bn BINARY(4), vb VARBINARY(64), tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
  e ENUM('a', 'b c', 'd,e', 'quote''s', 'back\\slash', ''), st SET('x', 'y z', 'w'),
  bit1 BIT(1), bit7 BIT(7), bit64 BIT(64),
  dt DATE, dtm DATETIME, dtm6 DATETIME(6), ts TIMESTAMP(6) NULL DEFAULT NULL, tm TIME,
  tm6 TIME(6), yr YEAR,
  j JSON, g GEOMETRY, pt POINT, u UUID, ip4 INET4, ip6 INET6,
  gen BIGINT AS (id * 2) VIRTUAL,
  KEY k_vc (vc(20)), UNIQUE KEY uk_bi (bi, id), KEY k_multi (si, dtm DESC), FULLTEXT KEY ft_tx (tx)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4)";

constexpr const char* kZooColumns =
    "id, ti, tiu, si, siu, mi, miu, i, iu, bi, biu, bo, dec65, dec5, f, d, c, vc, l1, tt, tx, mt, "
    "lt, bn, vb, tb, bl, mb, lb, e, st, bit1, bit7, bit64, dt, dtm, dtm6, ts, tm, tm6, yr, j, g, "
    "pt, u, ip4, ip6";

constexpr const char* kZooRows = R"(
(1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0, 0,
 -99999999999999999999999999999999999.999999999999999999999999999999, 0.00, -3.40282346e38,
 -1.7976931348623157e308, '', '', 'é', '', '', '', '',
 X'00000000', X'', X'', X'', X'', X'', '', '', b'0', b'0000000', b'0',
 '0000-00-00', '0000-00-00 00:00:00', '1000-01-01 00:00:00.000000', '1970-01-01 00:00:01',
 '-838:59:59', '-838:59:59.999999', 1901, '[]',
 ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0))'), ST_GeomFromText('POINT(-1.5 2.25)', 4326),
 '00000000-0000-0000-0000-000000000000', '0.0.0.0', '::'),
(2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807,
 18446744073709551615, 1, 99999999999999999999999999999999999.999999999999999999999999999999,
 999.99, 3.40282346e38, 1.7976931348623157e308, 'ten chars!', REPEAT('ü', 300), 'ÿ', 'x', 'y',
 'z', 'w', X'FFFFFFFF', X'00FF090A0D5C4E', X'5C', X'0D0A', X'09', X'5C4E', 'quote''s', 'x,y z,w',
 b'1', b'1111111', b'1111111111111111111111111111111111111111111111111111111111111111',
 '9999-12-31', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.999999',
 '838:59:59', '838:59:59.999999', 2155, '{"a": [1, 2.5, "x\\"y"], "b": null, "c": {"d": true}}',
 ST_GeomFromText('MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((2 2,3 2,3 3,2 2)))'),
 ST_GeomFromText('POINT(180 90)'), 'ffffffff-ffff-ffff-ffff-ffffffffffff', '255.255.255.255',
 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'),
(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
(4, 0, 1, -1, 1, 0, 1, 0, 1, -1, 9223372036854775808, 1, 0.000000000000000000000000000001, 0.01,
 16777215, 0.1, 'a', 'tab\there', 'x', 'line\nbreak', 'back\\slash \\N', '😀𝄞 four-byte',
 REPEAT('€', 400000), X'0102', X'00', X'FF', X'', REPEAT(X'00FF5C0A', 300000),
 REPEAT(X'0D5C4E09', 300000), 'back\\slash', 'y z', b'1', b'1010101',
 b'1000000000000000000000000000000000000000000000000000000000000001', '2020-00-15',
 '2020-02-00 12:34:56', '2024-02-29 23:59:59.000001', '2000-01-01 00:00:00.5', '00:00:00',
 '-00:00:00.000001', 0, '"just a string"',
 ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1),LINESTRING(0 0,1 1,2 3))'),
 ST_GeomFromText('POINT(0 0)'), '123e4567-e89b-12d3-a456-426614174000', '192.168.0.1',
 '2001:db8::1'),
(5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 1.5, 1.5, 1.4e-45, 5e-324, NULL, '', NULL, '', NULL, '',
 NULL, NULL, X'', NULL, X'', NULL, X'', 'a', 'x', NULL, NULL, NULL, '0000-01-01',
 '0001-01-01 00:00:00', NULL, NULL, '-01:00:00', '12:00:00.5', 1970, 'null', NULL, NULL, NULL,
 NULL, NULL),
(6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -0.5, 0, 0.1, 0.30000000000000004, 'Ab', 'A', 'A', 'A',
 'A', 'A', 'A', X'61', X'61', X'61', X'61', X'61', X'61', 'b c', 'w,x', b'0', b'1', b'1',
 '2024-02-29', '2024-02-29 12:00:00', '2024-02-29 12:00:00.123456', '2024-02-29 12:00:00.123456',
 '12:34:56', '12:34:56.654321', 1999, '{"k": 1e300, "s": "😀"}', NULL, NULL, NULL, NULL, NULL),
(7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.17549435e-38, 2.2250738585072014e-308, NULL, NULL,
 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'd,e', '', NULL, NULL, NULL,
 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
)";

void MysqlSourceSinkTest::MakeZoo(const std::string& src, const std::string& dst) {
  Exec("DROP DATABASE IF EXISTS " + src + "; DROP DATABASE IF EXISTS " + dst +
       "; CREATE DATABASE " + src);
  Exec(kZooTable, src);
  Exec(std::string("SET time_zone = '+00:00'; SET sql_mode = ''; INSERT INTO zoo (") + kZooColumns +
           ") VALUES " + kZooRows,
       src);
}

TEST_F(MysqlSourceSinkTest, TypeZooCopiesExactly) {
  ForgetStreams({"zoo"});
  Exec("DROP DATABASE IF EXISTS zoo_src; DROP DATABASE IF EXISTS zoo_dst; CREATE DATABASE zoo_src");
  Exec(kZooTable, "zoo_src");
  Exec(std::string("SET time_zone = '+00:00'; SET sql_mode = ''; INSERT INTO zoo (") + kZooColumns +
           ") VALUES " + kZooRows,
       "zoo_src");

  ASSERT_OK_AND_ASSIGN(auto source, MysqlSource::Open(Config("zoo_src")));
  ASSERT_OK_AND_ASSIGN(std::vector<TableRef> tables, source->ListTables());
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].schema, "zoo_src");
  EXPECT_EQ(tables[0].name, "zoo");
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"", "zoo"}));
  ASSERT_EQ(t.columns.size(), 48u);
  EXPECT_EQ(t.primary_key, std::vector<std::string>{"id"});
  auto type_of = [&](const std::string& n) {
    int i = t.FindColumn(n);
    return i < 0 ? LogicalType::kNone : t.columns[static_cast<size_t>(i)].type;
  };
  EXPECT_EQ(type_of("biu"), LogicalType::kUInt64);
  EXPECT_EQ(type_of("f"), LogicalType::kFloat32);
  EXPECT_EQ(type_of("j"), LogicalType::kJson);  // MariaDB: longtext + CHECK json_valid
  EXPECT_EQ(type_of("u"), LogicalType::kUuid);
  EXPECT_EQ(type_of("ts"), LogicalType::kTimestampTz);
  EXPECT_EQ(type_of("bit64"), LogicalType::kBit);
  EXPECT_EQ(type_of("g"), LogicalType::kGeometry);
  ASSERT_EQ(t.indexes.size(), 4u);
  bool saw_desc = false, saw_prefix = false, saw_fulltext = false;
  for (const Index& ix : t.indexes) {
    for (const IndexColumn& ic : ix.columns) {
      saw_desc |= ic.descending;
      saw_prefix |= ic.prefix_length == 20u;
    }
    saw_fulltext |= ix.method == "fulltext";
    if (ix.name == "uk_bi") {
      EXPECT_TRUE(ix.unique);
    }
  }
  EXPECT_TRUE(saw_desc);
  EXPECT_TRUE(saw_prefix);
  EXPECT_TRUE(saw_fulltext);

  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
  EXPECT_NE(snap->position().kind, SourcePosition::Kind::kNone);  // the fixture logs binlogs
  ReadSpec spec;
  spec.table = t;
  // Small byte budget: the 1 MB rows must end bundles early, never be split or dropped.
  ASSERT_OK_AND_ASSIGN(std::vector<Bundle> bundles, ReadAll(snap.get(), spec, 3, 256 << 10));
  size_t rows = 0;
  for (const Bundle& b : bundles) rows += b.rows();
  EXPECT_EQ(rows, 7u);
  bool alone = false;  // the row with 3.6 MB of blobs and text travels alone
  for (const Bundle& b : bundles) alone |= b.rows() == 1;
  EXPECT_TRUE(alone);
  EXPECT_GE(bundles.size(), 3u);

  SinkOptions so;
  so.source_engine = Engine::kMysql;
  so.stream = "zoo";
  so.target_schema = "zoo_dst";
  ASSERT_OK_AND_ASSIGN(auto sink, MysqlSink::Open(Config(""), so));
  EXPECT_TRUE(sink->uses_bulk_insert());  // MariaDB: the bulk INSERT by default
  EXPECT_FALSE(sink->uses_load_data());
  ASSERT_OK_AND_ASSIGN(TargetTable target, sink->PrepareTable(t));
  EXPECT_EQ(target.schema, "zoo_dst");
  ASSERT_OK_AND_ASSIGN(size_t written, WriteAll(sink.get(), t, bundles, "zoo"));
  EXPECT_EQ(written, bundles.size());
  ASSERT_OK(sink->FinishStream({t}));

  ExpectSameRows("zoo_src", "zoo_dst", "zoo");
  // Structures came after the data.
  EXPECT_EQ(Scalar("SELECT COUNT(DISTINCT INDEX_NAME) FROM information_schema.STATISTICS WHERE "
                   "TABLE_SCHEMA = 'zoo_dst' AND TABLE_NAME = 'zoo'"),
            "5");
  EXPECT_EQ(Scalar("SELECT mb = REPEAT(X'00FF5C0A', 300000) FROM zoo_dst.zoo WHERE id = 4"), "1");

  // The target read back through the source equals what was read from the source.
  ASSERT_OK_AND_ASSIGN(auto target_source, MysqlSource::Open(Config("zoo_dst")));
  ASSERT_OK_AND_ASSIGN(TableSchema td, target_source->Describe({"", "zoo"}));
  ASSERT_OK_AND_ASSIGN(auto tsnap, target_source->BeginSnapshot(1));
  ReadSpec all_src, all_dst;
  all_src.table = t;
  all_src.limit = 1000;  // ORDER BY the key
  all_dst.table = td;
  all_dst.columns.clear();
  for (const Column& c : t.columns) all_dst.columns.push_back(c.name);
  all_dst.limit = 1000;
  ASSERT_OK_AND_ASSIGN(auto a, ReadAll(snap.get(), all_src, 100, 64u << 20));
  ASSERT_OK_AND_ASSIGN(auto b, ReadAll(tsnap.get(), all_dst, 100, 64u << 20));
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  for (size_t c = 0; c < t.columns.size(); ++c) {
    for (size_t r = 0; r < a[0].rows(); ++r) {
      EXPECT_EQ(a[0].columns[c].Get(r), b[0].columns[c].Get(r))
          << "column " << t.columns[c].name << " row " << r + 1 << ": "
          << a[0].columns[c].Get(r).ToString() << " vs " << b[0].columns[c].Get(r).ToString();
    }
  }

  // Spot checks of values that are easy to get wrong (rows in id order).
  const Bundle& z = a[0];
  auto col = [&](const std::string& n) -> const ColumnVector& {
    return z.columns[static_cast<size_t>(t.FindColumn(n))];
  };
  EXPECT_EQ(col("f").GetFloat32(3), 16777215.0f);  // MySQL prints 1.67772e7
  EXPECT_EQ(col("f").GetFloat32(0), -std::numeric_limits<float>::max());
  EXPECT_EQ(col("f").GetFloat32(4), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(col("f").GetFloat32(5), 0.1f);
  EXPECT_EQ(col("d").GetFloat64(4), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(col("d").GetFloat64(5), 0.30000000000000004);
  EXPECT_EQ(col("biu").GetUInt(1), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(col("bi").GetInt(0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(col("dec65").GetBytes(0),
            "-99999999999999999999999999999999999.999999999999999999999999999999");
  EXPECT_EQ(col("mt").GetBytes(3), "😀𝄞 four-byte");
  EXPECT_EQ(col("l1").GetBytes(0), "é");
  EXPECT_EQ(col("vc").GetBytes(4), "");
  EXPECT_TRUE(col("tx").IsNull(4));
  EXPECT_EQ(col("e").GetBytes(3), "back\\slash");
  EXPECT_EQ(col("st").GetBytes(1), "x,y z,w");
  EXPECT_EQ(col("bit64").Get(1).ToString(), std::string(64, '1'));
  EXPECT_EQ(col("bit7").Get(3).ToString(), "1010101");
  EXPECT_EQ(col("bit1").Get(1).ToString(), "1");
  EXPECT_EQ(FormatDate(col("dt").GetDate(0)), "0000-00-00");
  EXPECT_EQ(FormatDate(col("dt").GetDate(3)), "2020-00-15");
  EXPECT_EQ(FormatTime(col("tm6").GetMicros(0)), "-838:59:59.999999");
  EXPECT_EQ(FormatTime(col("tm6").GetMicros(3)), "-00:00:00.000001");
  EXPECT_EQ(col("ts").Get(0).ToString(), "1970-01-01 00:00:01+00");
  EXPECT_EQ(col("yr").GetInt(3), 0);
  EXPECT_EQ(Scalar("SELECT yr FROM zoo_dst.zoo WHERE id = 4"), "0000");
  EXPECT_EQ(col("lt").GetBytes(3).size(), 400000u * 3);
  EXPECT_EQ(col("mb").GetBytes(3).size(), 1200000u);
  EXPECT_EQ(col("u").Get(1).ToString(), "ffffffff-ffff-ffff-ffff-ffffffffffff");
  // Geometry: u32 LE SRID, then WKB (a point is 21 bytes).
  std::string_view pt = col("pt").GetBytes(0);
  ASSERT_EQ(pt.size(), 25u);
  uint32_t srid;
  std::memcpy(&srid, pt.data(), 4);
  EXPECT_EQ(srid, 4326u);
}

// The project's shared MariaDB zoo (tests/integration/sql/mariadb_zoo.sql), through Source::Open
// and Sink::Open.
TEST_F(MysqlSourceSinkTest, SharedZooCopiesExactly) {
  ForgetStreams({"shared-zoo"});
  std::ifstream in(std::string(DBS_SOURCE_DIR) + "/tests/integration/sql/mariadb_zoo.sql");
  ASSERT_TRUE(in.good());
  std::stringstream sql;
  sql << in.rdbuf();
  Exec(
      "DROP DATABASE IF EXISTS szoo_src; DROP DATABASE IF EXISTS szoo_dst; CREATE DATABASE "
      "szoo_src");
  Exec("SET time_zone = '+00:00'; " + sql.str(), "szoo_src");

  ASSERT_OK_AND_ASSIGN(auto source, Source::Open(Config("szoo_src")));
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"szoo_src", "zoo"}));
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(2));
  ReadSpec spec;
  spec.table = t;
  ASSERT_OK_AND_ASSIGN(auto bundles, ReadAll(snap.get(), spec, 2, 512u << 10));
  SinkOptions so;
  so.source_engine = Engine::kMysql;
  so.stream = "shared-zoo";
  so.target_schema = "szoo_dst";
  ASSERT_OK_AND_ASSIGN(auto sink, Sink::Open(Config(""), so));
  ASSERT_OK(sink->PrepareTable(t).status());
  ASSERT_OK_AND_ASSIGN(size_t n, WriteAll(sink.get(), t, bundles, "zoo", 2));
  EXPECT_EQ(n, bundles.size());
  ASSERT_OK(sink->FinishStream({t}));
  ExpectSameRows("szoo_src", "szoo_dst", "zoo");
}

// ---------------------------------------------------------------------------------------------

TEST_F(MysqlSourceSinkTest, RedeliveredBundlesAreWrittenOnce) {
  ForgetStreams({"redo"});
  Exec(
      "DROP DATABASE IF EXISTS redo_src; DROP DATABASE IF EXISTS redo_dst; CREATE DATABASE "
      "redo_src");
  Exec(
      "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO t VALUES (1, 'a'), (2, "
      "'b'), (3, 'c'), (4, 'd'), (5, 'e'), (6, 'f')",
      "redo_src");
  ASSERT_OK_AND_ASSIGN(auto source, MysqlSource::Open(Config("redo_src")));
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"", "t"}));
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
  ReadSpec spec;
  spec.table = t;
  ASSERT_OK_AND_ASSIGN(auto bundles, ReadAll(snap.get(), spec, 2));
  ASSERT_EQ(bundles.size(), 3u);

  SinkOptions so;
  so.source_engine = Engine::kMysql;
  so.stream = "redo";
  so.target_schema = "redo_dst";
  ASSERT_OK_AND_ASSIGN(auto sink, MysqlSink::Open(Config(""), so));
  ASSERT_OK(sink->PrepareTable(t).status());
  // Bundles 0 and 1, then 1 and 2 again (1 redelivered), then everything again.
  std::vector<BundleRef> first = {{"t.0.0", &t, &bundles[0]}, {"t.0.1", &t, &bundles[1]}};
  std::vector<BundleRef> second = {{"t.0.1", &t, &bundles[1]}, {"t.0.2", &t, &bundles[2]}};
  ASSERT_OK_AND_ASSIGN(size_t n1, sink->Apply(first));
  EXPECT_EQ(n1, 2u);
  ASSERT_OK_AND_ASSIGN(size_t n2, sink->Apply(second));
  EXPECT_EQ(n2, 1u);
  // Another writer (its own sink) sees the same ids as applied.
  ASSERT_OK_AND_ASSIGN(auto sink2, MysqlSink::Open(Config(""), so));
  ASSERT_OK_AND_ASSIGN(size_t n3, sink2->Apply(first));
  EXPECT_EQ(n3, 0u);
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM redo_dst.t"), "6");
  ExpectSameRows("redo_src", "redo_dst", "t");

  // A failed batch records nothing: its ids stay new.
  Exec("ALTER TABLE redo_dst.t MODIFY v VARCHAR(20) NOT NULL");
  Exec("INSERT INTO redo_src.t VALUES (7, NULL)");
  ReadSpec seven = spec;
  seven.filter = "id = 7";
  ASSERT_OK_AND_ASSIGN(auto snap2, source->BeginSnapshot(1));
  ASSERT_OK_AND_ASSIGN(auto b7, ReadAll(snap2.get(), seven));
  ASSERT_EQ(b7.size(), 1u);
  std::vector<BundleRef> bad = {{"t.1.0", &t, &b7[0]}};
  auto failed = sink->Apply(bad);
  ASSERT_FALSE(failed.ok());
  std::printf("[ message ] %s\n", failed.status().ToString().c_str());
  EXPECT_FALSE(failed.status().retryable());
  EXPECT_NE(failed.status().message().find("redo_dst.t"), std::string::npos)
      << failed.status().ToString();
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM _dbstreams.applied WHERE stream = 'redo' AND bundle_id "
                   "= 't.1.0'"),
            "0");

  ASSERT_OK(sink->ForgetStream());
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM _dbstreams.applied WHERE stream = 'redo'"), "0");
}

// Two writers of one run with shadow tables: while the first one swaps (it paused after dropping
// the shadow databases, test hook DBS_TEST_MYSQL_SWAP_END_PAUSE), the second one prepares the
// table for the first time. It waits for the swap and writes in place; it does not take the
// missing shadow copy for an abandoned run.
TEST_F(MysqlSourceSinkTest, SecondWriterPreparesWhileTheFirstSwaps) {
  ForgetStreams({"mid-swap"});
  Exec(
      "DROP DATABASE IF EXISTS swap_src; DROP DATABASE IF EXISTS swap_dst; CREATE DATABASE "
      "swap_src; CREATE DATABASE swap_dst");
  Exec(
      "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO t VALUES (1, 'a'), (2, 'b')",
      "swap_src");
  Exec("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO t VALUES (9, 'old')",
       "swap_dst");
  ASSERT_OK_AND_ASSIGN(auto source, MysqlSource::Open(Config("swap_src")));
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"", "t"}));
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
  ReadSpec spec;
  spec.table = t;
  ASSERT_OK_AND_ASSIGN(auto bundles, ReadAll(snap.get(), spec));
  ASSERT_EQ(bundles.size(), 1u);

  SinkOptions so;
  so.source_engine = Engine::kMysql;
  so.stream = "mid-swap";
  so.target_schema = "swap_dst";
  so.write_mode = WriteMode::kTruncateAndLoad;  // the existing table is refilled from a copy
  so.shadow_tables = true;
  ASSERT_OK_AND_ASSIGN(auto first, MysqlSink::Open(Config(""), so));
  ASSERT_OK(first->PrepareTable(t).status());
  ASSERT_OK(first->Apply({{"t.0.0", &t, &bundles[0]}}).status());

  const std::string info = Scalar(
      "SELECT info FROM _dbstreams.state WHERE stream = 'mid-swap' AND tbl = 'swap_dst.t' AND "
      "phase = 'prepared'");
  ASSERT_EQ(info.rfind("copy:_dbs_sh_", 0), 0u) << info;
  const std::string shadow = info.substr(5);
  ::setenv("DBS_TEST_MYSQL_SWAP_END_PAUSE", "2", 1);
  Status swap = Status::Internal("not run");
  std::thread swapper([&] { swap = first->FinishStream({t}); });
  // The shadow database goes before the pause.
  bool dropped = false;
  for (int i = 0; i < 200 && !dropped; ++i) {
    dropped = Scalar("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '" +
                     shadow + "'") == "0";
    if (!dropped) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_OK_AND_ASSIGN(auto second, MysqlSink::Open(Config(""), so));
  auto prepared = second->PrepareTable(t);
  swapper.join();
  ::unsetenv("DBS_TEST_MYSQL_SWAP_END_PAUSE");
  ASSERT_TRUE(dropped);
  ASSERT_OK(swap);
  ASSERT_OK(prepared.status());
  ASSERT_OK(second->FinishStream({t}));  // the run is swapped in already: nothing to do
  ExpectSameRows("swap_src", "swap_dst", "t");
}

TEST_F(MysqlSourceSinkTest, UpsertUpdatesByPrimaryKey) {
  ForgetStreams({"up"});
  Exec("DROP DATABASE IF EXISTS up_src; DROP DATABASE IF EXISTS up_dst; CREATE DATABASE up_src");
  Exec(
      "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20), b BLOB); INSERT INTO t VALUES (1, "
      "'a', X'00'), (2, 'b', NULL), (3, 'c', X'5C')",
      "up_src");
  ASSERT_OK_AND_ASSIGN(auto source, MysqlSource::Open(Config("up_src")));
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"", "t"}));
  SinkOptions so;
  so.source_engine = Engine::kMysql;
  so.stream = "up";
  so.target_schema = "up_dst";
  so.write_mode = WriteMode::kUpsert;
  ASSERT_OK_AND_ASSIGN(auto sink, MysqlSink::Open(Config(""), so));
  ASSERT_OK(sink->PrepareTable(t).status());
  {
    ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
    ReadSpec spec;
    spec.table = t;
    ASSERT_OK_AND_ASSIGN(auto bundles, ReadAll(snap.get(), spec));
    ASSERT_OK(WriteAll(sink.get(), t, bundles, "first").status());
  }
  Exec(
      "UPDATE t SET v = 'changed', b = X'FF' WHERE id = 2; DELETE FROM t WHERE id = 3; INSERT "
      "INTO t VALUES (4, 'd', NULL)",
      "up_src");
  {
    ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
    ReadSpec spec;
    spec.table = t;
    ASSERT_OK_AND_ASSIGN(auto bundles, ReadAll(snap.get(), spec));
    ASSERT_OK(WriteAll(sink.get(), t, bundles, "second").status());
  }
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM up_dst.t"), "4");  // 3 stays: upserts do not delete
  EXPECT_EQ(Scalar("SELECT CONCAT(v, HEX(b)) FROM up_dst.t WHERE id = 2"), "changedFF");
  EXPECT_EQ(Scalar("SELECT v FROM up_dst.t WHERE id = 4"), "d");
}

TEST_F(MysqlSourceSinkTest, InsertFallbackWhenLocalInfileIsOff) {
  ForgetStreams({"zoo-insert"});
  MakeZoo("zoo_src2", "zoo_ins");
  ASSERT_OK_AND_ASSIGN(auto source, MysqlSource::Open(Config("zoo_src2")));
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"", "zoo"}));
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
  ReadSpec spec;
  spec.table = t;
  ASSERT_OK_AND_ASSIGN(auto bundles, ReadAll(snap.get(), spec, 2));

  Exec("SET GLOBAL local_infile = 0");
  SinkOptions so;
  so.source_engine = Engine::kMysql;
  so.stream = "zoo-insert";
  so.target_schema = "zoo_ins";
  auto sink = MysqlSink::Open(Config(""), so);
  Exec("SET GLOBAL local_infile = 1");
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  EXPECT_FALSE((*sink)->uses_load_data());
  ASSERT_OK((*sink)->PrepareTable(t).status());
  ASSERT_OK_AND_ASSIGN(size_t written, WriteAll(sink->get(), t, bundles, "zoo"));
  EXPECT_EQ(written, bundles.size());
  ExpectSameRows("zoo_src2", "zoo_ins", "zoo");
}

// writeMethod=load_data (what MySQL targets use): the zoo through LOAD DATA LOCAL INFILE, the
// same values as the bulk INSERT path; an unknown method is refused with the choices.
TEST_F(MysqlSourceSinkTest, LoadDataWhenAskedFor) {
  ForgetStreams({"zoo-loaddata"});
  MakeZoo("zoo_src4", "zoo_ld");
  ASSERT_OK_AND_ASSIGN(auto source, MysqlSource::Open(Config("zoo_src4")));
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"", "zoo"}));
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
  ReadSpec spec;
  spec.table = t;
  ASSERT_OK_AND_ASSIGN(auto bundles, ReadAll(snap.get(), spec, 2));

  SinkOptions so;
  so.source_engine = Engine::kMysql;
  so.stream = "zoo-loaddata";
  so.target_schema = "zoo_ld";
  ConnectionConfig cfg = Config("");
  cfg.params["writeMethod"] = "load_data";
  ASSERT_OK_AND_ASSIGN(auto sink, MysqlSink::Open(cfg, so));
  EXPECT_TRUE(sink->uses_load_data());
  EXPECT_FALSE(sink->uses_bulk_insert());
  ASSERT_OK(sink->PrepareTable(t).status());
  ASSERT_OK_AND_ASSIGN(size_t written, WriteAll(sink.get(), t, bundles, "zoo"));
  EXPECT_EQ(written, bundles.size());
  ExpectSameRows("zoo_src4", "zoo_ld", "zoo");

  cfg.params["writeMethod"] = "fast";
  auto bad = MysqlSink::Open(cfg, so);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("writeMethod='fast': use auto, bulk_insert, load_data"),
            std::string::npos)
      << bad.status().ToString();
}

// The source reads with prepared statements (binary protocol); a server that forbids them
// (max_prepared_stmt_count = 0) is read with the text protocol, and written with LOAD DATA
// instead of bulk INSERTs, with the same values.
TEST_F(MysqlSourceSinkTest, TextProtocolWhenTheServerPreparesNoStatements) {
  ForgetStreams({"zoo-text"});
  MakeZoo("zoo_src3", "zoo_txt");
  ASSERT_OK_AND_ASSIGN(auto source, MysqlSource::Open(Config("zoo_src3")));
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"", "zoo"}));
  const std::string before = Scalar("SELECT @@GLOBAL.max_prepared_stmt_count");
  Exec("SET GLOBAL max_prepared_stmt_count = 0");
  std::vector<Bundle> bundles;
  {
    auto snap = source->BeginSnapshot(1);
    ReadSpec spec;
    spec.table = t;
    auto read = snap.ok() ? ReadAll(snap->get(), spec, 2) : snap.status();
    Exec("SET GLOBAL max_prepared_stmt_count = " + before);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    bundles = std::move(read).value();
  }
  size_t rows = 0;
  for (const Bundle& b : bundles) rows += b.rows();
  EXPECT_EQ(rows, 7u);
  SinkOptions so;
  so.source_engine = Engine::kMysql;
  so.stream = "zoo-text";
  so.target_schema = "zoo_txt";
  ASSERT_OK_AND_ASSIGN(auto sink, MysqlSink::Open(Config(""), so));
  ASSERT_OK(sink->PrepareTable(t).status());
  EXPECT_TRUE(sink->uses_bulk_insert());
  // The sink's bulk INSERT cannot be prepared either: the rows go by LOAD DATA instead.
  Exec("SET GLOBAL max_prepared_stmt_count = 0");
  auto written = WriteAll(sink.get(), t, bundles, "zoo");
  Exec("SET GLOBAL max_prepared_stmt_count = " + before);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(*written, bundles.size());
  EXPECT_FALSE(sink->uses_bulk_insert());
  EXPECT_TRUE(sink->uses_load_data());
  ExpectSameRows("zoo_src3", "zoo_txt", "zoo");
}

TEST_F(MysqlSourceSinkTest, SchemaPoliciesAndWriteModes) {
  ForgetStreams({"pol-a", "pol-b", "pol-c"});
  Exec(
      "DROP DATABASE IF EXISTS pol_src; DROP DATABASE IF EXISTS pol_dst; CREATE DATABASE pol_src; "
      "CREATE DATABASE pol_dst");
  Exec(
      "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20)); "
      "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')",
      "pol_src");
  Exec("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(2)); INSERT INTO t VALUES (9, 'zz')",
       "pol_dst");
  ASSERT_OK_AND_ASSIGN(auto source, MysqlSource::Open(Config("pol_src")));
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"", "t"}));

  SinkOptions so;
  so.source_engine = Engine::kMysql;
  so.target_schema = "pol_dst";
  so.stream = "pol-a";
  so.schema_policy = SchemaPolicy::kFailIfExists;
  ASSERT_OK_AND_ASSIGN(auto s1, MysqlSink::Open(Config(""), so));
  auto r1 = s1->PrepareTable(t);
  ASSERT_FALSE(r1.ok());
  std::printf("[ message ] %s\n", r1.status().ToString().c_str());
  EXPECT_EQ(r1.status().code(), StatusCode::kAlreadyExists) << r1.status().ToString();

  so.stream = "pol-b";
  so.schema_policy = SchemaPolicy::kValidateExisting;
  so.write_mode = WriteMode::kFailIfNotEmpty;
  ASSERT_OK_AND_ASSIGN(auto s2, MysqlSink::Open(Config(""), so));
  auto r2 = s2->PrepareTable(t);
  ASSERT_FALSE(r2.ok());
  std::printf("[ message ] %s\n", r2.status().ToString().c_str());
  EXPECT_EQ(r2.status().code(), StatusCode::kFailedPrecondition) << r2.status().ToString();

  // truncate_and_load empties the table once per stream, not once per writer.
  so.stream = "pol-c";
  so.write_mode = WriteMode::kTruncateAndLoad;
  ASSERT_OK_AND_ASSIGN(auto s3, MysqlSink::Open(Config(""), so));
  ASSERT_OK(s3->PrepareTable(t).status());
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM pol_dst.t"), "0");
  Exec("INSERT INTO pol_dst.t VALUES (8, 'yy')");
  ASSERT_OK_AND_ASSIGN(auto s4, MysqlSink::Open(Config(""), so));
  ASSERT_OK(s4->PrepareTable(t).status());
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM pol_dst.t"), "1");

  // A value the target rejects: non-retryable, names the table and the column.
  Exec("UPDATE t SET v = 'far too long' WHERE id = 4", "pol_src");
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
  ReadSpec spec;
  spec.table = t;
  ASSERT_OK_AND_ASSIGN(auto bundles, ReadAll(snap.get(), spec));
  auto w = s4->Apply({{"t.0.0", &t, &bundles[0]}});
  ASSERT_FALSE(w.ok());
  std::printf("[ message ] %s\n", w.status().ToString().c_str());
  EXPECT_FALSE(w.status().retryable());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument) << w.status().ToString();
  EXPECT_NE(w.status().message().find("pol_dst.t"), std::string::npos) << w.status().ToString();
  EXPECT_NE(w.status().message().find("'v'"), std::string::npos) << w.status().ToString();
  // The bulk INSERT's "at row N" becomes the source row.
  EXPECT_NE(w.status().message().find("source table pol_src.t, column v, key (id)=(4)"),
            std::string::npos)
      << w.status().ToString();
}

// A value the client cannot encode (NaN: MySQL has none) aborts the load mid-stream; the batch
// is rolled back and the sink keeps working.
TEST_F(MysqlSourceSinkTest, EncodingErrorRollsBackAndSinkStaysUsable) {
  ForgetStreams({"nan"});
  Exec("DROP DATABASE IF EXISTS nan_dst");
  TableSchema t;
  t.schema = "nan_src";
  t.name = "t";
  Column id;
  id.name = "id";
  id.source_type = "int";
  id.type = LogicalType::kInt32;
  id.nullable = false;
  Column d;
  d.name = "d";
  d.source_type = "double";
  d.type = LogicalType::kFloat64;
  t.columns = {id, d};
  t.primary_key = {"id"};
  auto make = [&](std::vector<std::pair<int, double>> rows) {
    Bundle b;
    b.columns.emplace_back(LogicalType::kInt32);
    b.columns.emplace_back(LogicalType::kFloat64);
    for (auto [k, v] : rows) {
      b.columns[0].AppendInt(k);
      b.columns[1].AppendFloat64(v);
    }
    return b;
  };
  // Enough good rows before the NaN that part of the file was already sent.
  std::vector<std::pair<int, double>> rows;
  for (int i = 1; i <= 50000; ++i) rows.emplace_back(i, i / 3.0);
  rows.emplace_back(50001, std::nan(""));
  Bundle bad = make(rows);
  Bundle good = make({{1, 0.5}, {2, -0.25}});
  SinkOptions so;
  so.source_engine = Engine::kMysql;
  so.stream = "nan";
  so.target_schema = "nan_dst";
  ASSERT_OK_AND_ASSIGN(auto sink, MysqlSink::Open(Config(""), so));
  ASSERT_OK(sink->PrepareTable(t).status());
  auto r = sink->Apply({{"t.0.0", &t, &good}, {"t.0.1", &t, &bad}});
  ASSERT_FALSE(r.ok());
  std::printf("[ message ] %s\n", r.status().ToString().c_str());
  EXPECT_FALSE(r.status().retryable());
  EXPECT_NE(r.status().message().find("'d'"), std::string::npos);
  EXPECT_NE(r.status().message().find("t.0.1"), std::string::npos);
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM nan_dst.t"), "0");
  ASSERT_OK_AND_ASSIGN(size_t n, sink->Apply({{"t.0.0", &t, &good}}));
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(Scalar("SELECT SUM(d) FROM nan_dst.t"), "0.25");
}

TEST_F(MysqlSourceSinkTest, ForeignKeysAndChecksAfterTheData) {
  ForgetStreams({"fk"});
  Exec("DROP DATABASE IF EXISTS fk_src; DROP DATABASE IF EXISTS fk_dst; CREATE DATABASE fk_src");
  Exec(
      "CREATE TABLE parent (id INT PRIMARY KEY, code VARCHAR(10) NOT NULL, UNIQUE KEY (code)); "
      "CREATE TABLE child (id INT PRIMARY KEY, parent_code VARCHAR(10), qty INT, "
      "CONSTRAINT fk_parent FOREIGN KEY (parent_code) REFERENCES parent (code) ON DELETE "
      "CASCADE, CONSTRAINT qty_positive CHECK (qty > 0)); "
      "INSERT INTO parent VALUES (1, 'p1'), (2, 'p2'); INSERT INTO child VALUES (1, 'p1', 3), "
      "(2, 'p2', 4)",
      "fk_src");
  ASSERT_OK_AND_ASSIGN(auto source, MysqlSource::Open(Config("fk_src")));
  ASSERT_OK_AND_ASSIGN(TableSchema parent, source->Describe({"", "parent"}));
  ASSERT_OK_AND_ASSIGN(TableSchema child, source->Describe({"", "child"}));
  ASSERT_EQ(child.foreign_keys.size(), 1u);
  EXPECT_EQ(child.foreign_keys[0].ref_table, "parent");
  EXPECT_EQ(child.foreign_keys[0].on_delete, "CASCADE");
  ASSERT_EQ(child.checks.size(), 1u);
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(2));
  SinkOptions so;
  so.source_engine = Engine::kMysql;
  so.stream = "fk";
  so.target_schema = "fk_dst";
  ASSERT_OK_AND_ASSIGN(auto sink, MysqlSink::Open(Config(""), so));
  // The child first: foreign keys do not exist yet, so the order does not matter.
  for (const TableSchema* t : {&child, &parent}) {
    ReadSpec spec;
    spec.table = *t;
    ASSERT_OK_AND_ASSIGN(auto bundles, ReadAll(snap.get(), spec));
    ASSERT_OK(sink->PrepareTable(*t).status());
    ASSERT_OK(WriteAll(sink.get(), *t, bundles, t->name).status());
  }
  ASSERT_OK(sink->FinishStream({child, parent}));
  ASSERT_OK(sink->FinishStream({child, parent}));  // once only
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE "
                   "CONSTRAINT_SCHEMA = 'fk_dst' AND TABLE_NAME = 'child'"),
            "1");
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM information_schema.CHECK_CONSTRAINTS WHERE "
                   "CONSTRAINT_SCHEMA = 'fk_dst' AND TABLE_NAME = 'child'"),
            "1");
  ExpectSameRows("fk_src", "fk_dst", "parent");
  ExpectSameRows("fk_src", "fk_dst", "child");
}

TEST_F(MysqlSourceSinkTest, CustomQuery) {
  Exec("DROP DATABASE IF EXISTS q_src; CREATE DATABASE q_src");
  Exec(
      "CREATE TABLE t (id INT PRIMARY KEY, f FLOAT, v VARCHAR(10)); INSERT INTO t VALUES (1, "
      "16777215, 'x'), (2, 0.1, NULL)",
      "q_src");
  ASSERT_OK_AND_ASSIGN(auto source, MysqlSource::Open(Config("q_src")));
  const std::string q =
      "SELECT id * 2 AS twice, f, UPPER(v) AS v, CAST(id AS DECIMAL(10,3)) AS "
      "dm FROM t";
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->DescribeQuery(q, {"q_src", "doubled"}));
  ASSERT_EQ(t.columns.size(), 4u);
  EXPECT_EQ(t.columns[1].type, LogicalType::kFloat32);
  EXPECT_EQ(t.columns[3].type, LogicalType::kDecimal);
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
  ReadSpec spec;
  spec.table = t;
  spec.query = q;
  spec.filter = "twice > 2";
  ASSERT_OK_AND_ASSIGN(auto bundles, ReadAll(snap.get(), spec));
  ASSERT_EQ(bundles.size(), 1u);
  ASSERT_EQ(bundles[0].rows(), 1u);
  EXPECT_EQ(bundles[0].columns[1].GetFloat32(0), 0.1f);
  EXPECT_TRUE(bundles[0].columns[2].IsNull(0));
  EXPECT_EQ(bundles[0].columns[3].GetBytes(0), "2.000");
}

// ---------------------------------------------------------------------------------------------
// 200k rows, 16 columns, 2 parallel readers and writers.

TEST_F(MysqlSourceSinkTest, ParallelChunksOf200kRows) {
  ForgetStreams({"big", "big-write"});
  Exec(
      "DROP DATABASE IF EXISTS big_src; DROP DATABASE IF EXISTS big_dst; CREATE DATABASE "
      "big_src");
  Exec(R"(
CREATE TABLE big (id BIGINT NOT NULL PRIMARY KEY, a INT, b INT UNSIGNED, c BIGINT, d SMALLINT,
  e DECIMAL(12,2), f DOUBLE, g FLOAT, h VARCHAR(64), i VARCHAR(32), j CHAR(8), k DATE,
  l DATETIME(3), m TIMESTAMP NULL, n TINYINT, o TEXT);
CREATE TABLE digits (x INT);
INSERT INTO digits VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9);
SET time_zone = '+00:00';
INSERT INTO big SELECT n, n * 7 - 1000000, n * 3, n * 1000003, n % 32000, n / 100, n / 7,
  n / 3, MD5(n), CONCAT('name-', n), LPAD(n % 100000, 8, '0'), '2020-01-01' + INTERVAL n % 3000 DAY,
  '2020-01-01 00:00:00.123' + INTERVAL n SECOND, FROM_UNIXTIME(1600000000 + n), n % 100,
  REPEAT(CONCAT(MD5(n), ' '), 3)
FROM (SELECT 1 + a.x + 10 * b.x + 100 * c.x + 1000 * d.x + 10000 * e.x + 100000 * f.x AS n
      FROM digits a, digits b, digits c, digits d, digits e, digits f WHERE f.x < 2) s;
ANALYZE TABLE big;)",
       "big_src");
  ASSERT_EQ(Scalar("SELECT COUNT(*) FROM big_src.big"), "200000");

  ASSERT_OK_AND_ASSIGN(auto source, MysqlSource::Open(Config("big_src")));
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"", "big"}));
  ASSERT_EQ(t.columns.size(), 16u);
  ASSERT_OK_AND_ASSIGN(std::vector<KeyRange> ranges, source->Split(t, 50000));
  EXPECT_GE(ranges.size(), 3u);
  EXPECT_FALSE(ranges.front().lower.has_value());
  EXPECT_FALSE(ranges.back().upper.has_value());

  // Read throughput: one reader, decode only.
  {
    ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(1));
    ReadSpec spec;
    spec.table = t;
    auto start = std::chrono::steady_clock::now();
    ASSERT_OK_AND_ASSIGN(auto reader, snap->OpenReader(spec));
    size_t rows = 0;
    bool more = true;
    while (more) {
      Bundle b;
      for (const Column& c : t.columns) b.columns.emplace_back(c.type, c.element_type);
      ASSERT_OK_AND_ASSIGN(more, reader->Next(&b, 2000, 768u << 10));
      rows += b.rows();
    }
    const double s = Seconds(start);
    EXPECT_EQ(rows, 200000u);
    std::printf("[ perf ] read 200k rows x 16 columns: %.2f s, %.0f rows/s\n", s, rows / s);
  }

  // Parallel copy: 2 readers on one snapshot, 2 writers (one sink each).
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(2));
  SinkOptions so;
  so.source_engine = Engine::kMysql;
  so.stream = "big";
  so.target_schema = "big_dst";
  std::deque<std::pair<size_t, KeyRange>> tasks;
  for (size_t i = 0; i < ranges.size(); ++i) tasks.emplace_back(i, ranges[i]);
  std::mutex mu;
  Status first_error;
  std::atomic<uint64_t> rows_written{0};
  auto worker = [&]() {
    auto sink = MysqlSink::Open(Config(""), so);
    if (!sink.ok()) {
      std::lock_guard<std::mutex> l(mu);
      first_error = sink.status();
      return;
    }
    auto fail = [&](const Status& s) {
      std::lock_guard<std::mutex> l(mu);
      if (first_error.ok()) first_error = s;
    };
    if (auto p = (*sink)->PrepareTable(t); !p.ok()) return fail(p.status());
    while (true) {
      std::pair<size_t, KeyRange> task;
      {
        std::lock_guard<std::mutex> l(mu);
        if (tasks.empty() || !first_error.ok()) return;
        task = tasks.front();
        tasks.pop_front();
      }
      ReadSpec spec;
      spec.table = t;
      spec.range = task.second;
      auto reader = snap->OpenReader(spec);
      if (!reader.ok()) return fail(reader.status());
      bool more = true;
      size_t seq = 0;
      while (more) {
        Bundle b;
        for (const Column& c : t.columns) b.columns.emplace_back(c.type, c.element_type);
        auto r = (*reader)->Next(&b, 2000, 768u << 10);
        if (!r.ok()) return fail(r.status());
        more = *r;
        if (b.rows() == 0) continue;
        const std::string id = "big." + std::to_string(task.first) + "." + std::to_string(seq++);
        auto n = (*sink)->Apply({{id, &t, &b}});
        if (!n.ok()) return fail(n.status());
        rows_written += b.rows();
      }
    }
  };
  auto start = std::chrono::steady_clock::now();
  std::thread w1(worker), w2(worker);
  w1.join();
  w2.join();
  const double secs = Seconds(start);
  ASSERT_OK(first_error);
  std::printf("[ perf ] parallel copy (2 readers, 2 writers, bulk INSERT): %.2f s, %.0f rows/s\n",
              secs, rows_written.load() / secs);
  EXPECT_EQ(rows_written.load(), 200000u);
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM big_dst.big"), "200000");
  EXPECT_EQ(Scalar("SELECT SUM(id) FROM big_dst.big"), Scalar("SELECT SUM(id) FROM big_src.big"));
  ExpectSameRows("big_src", "big_dst", "big");

  // Write throughput: one writer, bundles already in memory.
  {
    ReadSpec spec;
    spec.table = t;
    ASSERT_OK_AND_ASSIGN(auto bundles, ReadAll(snap.get(), spec, 2000, 768u << 10));
    SinkOptions wo;
    wo.source_engine = Engine::kMysql;
    wo.stream = "big-write";
    wo.target_schema = "big_dst2";
    wo.schema_policy = SchemaPolicy::kDropAndRecreate;
    ASSERT_OK_AND_ASSIGN(auto sink, MysqlSink::Open(Config(""), wo));
    ASSERT_OK(sink->PrepareTable(t).status());
    auto ws = std::chrono::steady_clock::now();
    ASSERT_OK_AND_ASSIGN(size_t n, WriteAll(sink.get(), t, bundles, "big", 8));
    const double s = Seconds(ws);
    EXPECT_EQ(n, bundles.size());
    std::printf(
        "[ perf ] write 200k rows x 16 columns (1 writer, bulk INSERT): %.2f s, %.0f "
        "rows/s\n",
        s, 200000 / s);
    ExpectSameRows("big_src", "big_dst2", "big");
    ASSERT_OK(sink->ForgetStream());
  }
}

// ---------------------------------------------------------------------------------------------
// The whole pipeline: `dbstreams run` (reader, 2 writers, NATS JetStream) with verification.

TEST_F(MysqlSourceSinkTest, EndToEndRunVerifies) {
  ForgetStreams({"mysql-e2e"});
  Exec(
      "DROP DATABASE IF EXISTS e2e_src; DROP DATABASE IF EXISTS e2e_dst; CREATE DATABASE "
      "e2e_src");
  Exec(kZooTable, "e2e_src");
  Exec(std::string("SET time_zone = '+00:00'; SET sql_mode = ''; INSERT INTO zoo (") + kZooColumns +
           ") VALUES " + kZooRows,
       "e2e_src");
  Exec(
      "CREATE TABLE parent (id INT PRIMARY KEY, code VARCHAR(10) NOT NULL UNIQUE); CREATE TABLE "
      "child (id BIGINT UNSIGNED PRIMARY KEY, parent_id INT, note TEXT, FOREIGN KEY (parent_id) "
      "REFERENCES parent (id)); INSERT INTO parent VALUES (1, 'a'), (2, 'b'); INSERT INTO child "
      "SELECT seq, 1 + seq % 2, REPEAT('n', seq % 50) FROM seq_1_to_5000; ANALYZE TABLE child",
      "e2e_src");

  testing::NatsServerOptions no;
  no.max_payload = 16 << 20;  // the zoo has rows of several MB
  ASSERT_OK_AND_ASSIGN(auto nats, testing::NatsServer::Start(no));
  StreamConfig cfg;
  cfg.name = "mysql-e2e";
  cfg.source = Config("e2e_src");
  cfg.target = Config("");
  cfg.target_schema = "e2e_dst";
  cfg.tables = {TableSelector{"*", {}, "", "", ""}};
  cfg.bundle_size = 500;
  cfg.split_rows = 1000;  // the child table goes in chunks
  cfg.readers = 2;
  LocalRunOptions lo;
  lo.writers = 2;
  lo.nats_url = nats->url();
  ASSERT_OK_AND_ASSIGN(RunSummary summary, RunLocal(cfg, lo, nullptr));
  EXPECT_EQ(summary.Mismatches(), "");
  EXPECT_EQ(summary.verdicts.size(), 3u);
  for (const TableVerdict& v : summary.verdicts) {
    EXPECT_TRUE(v.match()) << v.source_table;
    EXPECT_GT(v.source.rows, 0u) << v.source_table;
  }
  ExpectSameRows("e2e_src", "e2e_dst", "zoo");
  ExpectSameRows("e2e_src", "e2e_dst", "parent");
  ExpectSameRows("e2e_src", "e2e_dst", "child");
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE "
                   "CONSTRAINT_SCHEMA = 'e2e_dst'"),
            "1");
}

// ---------------------------------------------------------------------------------------------
// Error messages.

TEST_F(MysqlSourceSinkTest, ClearErrors) {
  {
    ConnectionConfig c = Config("");
    c.password = "wrong";
    auto s = MysqlSource::Open(c);
    ASSERT_FALSE(s.ok());
    std::printf("[ message ] %s\n", s.status().ToString().c_str());
    EXPECT_EQ(s.status().code(), StatusCode::kUnauthenticated) << s.status().ToString();
    EXPECT_FALSE(s.status().retryable());
    EXPECT_NE(s.status().message().find("'root'"), std::string::npos) << s.status().ToString();
  }
  {
    ConnectionConfig c = Config("");
    c.port = 1;  // nothing listens there
    auto s = MysqlSource::Open(c);
    ASSERT_FALSE(s.ok());
    std::printf("[ message ] %s\n", s.status().ToString().c_str());
    EXPECT_EQ(s.status().code(), StatusCode::kUnavailable) << s.status().ToString();
    EXPECT_TRUE(s.status().retryable());
  }
  {
    ConnectionConfig c = Config("");
    c.ssl.mode = "require";  // the fixture's server has no TLS
    auto s = MysqlSource::Open(c);
    ASSERT_FALSE(s.ok());
    std::printf("[ message ] %s\n", s.status().ToString().c_str());
    EXPECT_FALSE(s.status().retryable());
  }
  {
    auto s = MysqlSource::Open(Config("no_such_db"));
    ASSERT_FALSE(s.ok());
    std::printf("[ message ] %s\n", s.status().ToString().c_str());
    EXPECT_EQ(s.status().code(), StatusCode::kNotFound) << s.status().ToString();
    EXPECT_NE(s.status().message().find("no_such_db"), std::string::npos);
  }
  Exec(
      "DROP DATABASE IF EXISTS err_src; CREATE DATABASE err_src; CREATE TABLE err_src.secret (id "
      "INT PRIMARY KEY); CREATE TABLE err_src.open (id INT PRIMARY KEY); INSERT INTO "
      "err_src.open VALUES (1), (2); DROP USER IF EXISTS 'limited'@'%', 'limited'@'localhost'; "
      "CREATE USER 'limited'@'%' IDENTIFIED BY 'limited-pw'; CREATE USER 'limited'@'localhost' "
      "IDENTIFIED BY 'limited-pw'; GRANT SELECT ON err_src.open TO 'limited'@'%'; GRANT SELECT "
      "ON err_src.open TO 'limited'@'localhost'");
  {
    ASSERT_OK_AND_ASSIGN(auto source, MysqlSource::Open(Config("err_src")));
    auto d = source->Describe({"", "missing"});
    ASSERT_FALSE(d.ok());
    std::printf("[ message ] %s\n", d.status().ToString().c_str());
    EXPECT_EQ(d.status().code(), StatusCode::kNotFound) << d.status().ToString();
    EXPECT_NE(d.status().message().find("err_src.missing"), std::string::npos);
  }
  ConnectionConfig limited = Config("err_src");
  limited.user = "limited";
  limited.password = "limited-pw";
  ASSERT_OK_AND_ASSIGN(auto source, MysqlSource::Open(limited));
  auto d = source->Describe({"", "secret"});
  ASSERT_FALSE(d.ok());
  std::printf("[ message ] %s\n", d.status().ToString().c_str());
  EXPECT_EQ(d.status().code(), StatusCode::kPermissionDenied) << d.status().ToString();
  EXPECT_NE(d.status().message().find("err_src.secret"), std::string::npos)
      << d.status().ToString();
  ASSERT_OK_AND_ASSIGN(std::vector<TableRef> visible, source->ListTables());
  ASSERT_EQ(visible.size(), 1u);
  EXPECT_EQ(visible[0].name, "open");
  // No RELOAD privilege: one consistent reader instead of FLUSH TABLES WITH READ LOCK.
  ASSERT_OK_AND_ASSIGN(TableSchema t, source->Describe({"", "open"}));
  ASSERT_OK_AND_ASSIGN(auto snap, source->BeginSnapshot(2));
  ReadSpec spec;
  spec.table = t;
  ASSERT_OK_AND_ASSIGN(auto bundles, ReadAll(snap.get(), spec));
  ASSERT_EQ(bundles.size(), 1u);
  EXPECT_EQ(bundles[0].rows(), 2u);
  // A filter that does not parse is the caller's mistake.
  spec.filter = "id >";
  auto bad = snap->OpenReader(spec);
  ASSERT_FALSE(bad.ok());
  std::printf("[ message ] %s\n", bad.status().ToString().c_str());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status().ToString();
}

// TLS: a private server with a certificate signed by a test CA.
TEST_F(MysqlSourceSinkTest, TlsModes) {
  const std::string dir = "/tmp/dbstreams-mysql-tls-" + std::to_string(getpid());
  const std::string script =
      "set -e; rm -rf " + dir + "; mkdir -p " + dir + "; cd " + dir +
      "; openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=dbs-test-ca -keyout "
      "ca.key -out ca.pem; openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "
      "/CN=other-ca -keyout other.key -out other.pem; openssl req -newkey rsa:2048 -nodes -subj "
      "/CN=127.0.0.1 -keyout server.key -out server.csr; printf "
      "'subjectAltName=IP:127.0.0.1\\n' > san.ext; openssl x509 -req -in server.csr -CA "
      "ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext -out server.pem; openssl req "
      "-newkey rsa:2048 -nodes -subj /CN=dbs-client -keyout client.key -out client.csr; openssl "
      "x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out "
      "client.pem";
  ASSERT_EQ(std::system(("(" + script + ") > /dev/null 2>&1").c_str()), 0) << script;
  testing::MariaDbServerOptions o;
  o.log_bin = false;
  o.extra_args = {"--ssl-ca=" + dir + "/ca.pem", "--ssl-cert=" + dir + "/server.pem",
                  "--ssl-key=" + dir + "/server.key"};
  ASSERT_OK_AND_ASSIGN(auto tls_server, testing::MariaDbServer::Start(o));
  ASSERT_OK_AND_ASSIGN(ConnectionConfig base, ParseConnectionUrl(tls_server->url()));

  auto cipher = [&](const ConnectionConfig& c) -> Result<std::string> {
    DBS_ASSIGN_OR_RETURN(auto conn, mysql::MysqlConnection::Open(c, {}));
    DBS_ASSIGN_OR_RETURN(auto rows, conn->Query("SHOW SESSION STATUS LIKE 'Ssl_cipher'", "tls"));
    if (rows.empty() || !rows[0][1]) return std::string();
    return *rows[0][1];
  };
  ConnectionConfig c = base;
  c.ssl.mode = "require";
  ASSERT_OK_AND_ASSIGN(std::string required, cipher(c));
  EXPECT_FALSE(required.empty());
  c.ssl.mode = "verify-full";
  c.ssl.ca = dir + "/ca.pem";
  ASSERT_OK_AND_ASSIGN(std::string verified, cipher(c));
  EXPECT_FALSE(verified.empty());
  c.ssl.ca = dir + "/other.pem";  // a CA that did not sign the server's certificate
  auto wrong = cipher(c);
  ASSERT_FALSE(wrong.ok());
  std::printf("[ message ] %s\n", wrong.status().ToString().c_str());
  EXPECT_FALSE(wrong.status().retryable());
  c.ssl.mode = "disable";
  ASSERT_OK_AND_ASSIGN(std::string plain, cipher(c));
  EXPECT_TRUE(plain.empty());
  // The source and the sink use the same connection code.
  c.ssl.mode = "verify-ca";
  c.ssl.ca = dir + "/ca.pem";
  ASSERT_OK(MysqlSource::Open(c).status());
  // The CA, the client certificate and its key given as PEM text (the web UI's upload), as
  // the drivers' files are.
  auto text = [&](const std::string& name) {
    std::ifstream f(dir + "/" + name);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  c.ssl.mode = "verify-full";
  c.ssl.ca = text("ca.pem");
  c.ssl.cert = text("client.pem");
  c.ssl.key = text("client.key");
  ASSERT_TRUE(IsInlinePem(c.ssl.ca) && IsInlinePem(c.ssl.key));
  ASSERT_OK_AND_ASSIGN(std::string inline_pem, cipher(c));
  EXPECT_FALSE(inline_pem.empty());
  c.ssl.ca = text("other.pem");
  EXPECT_FALSE(cipher(c).ok());
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace dbs

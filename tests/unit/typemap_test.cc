// Tests for src/typemap/: the MySQL and PostgreSQL metadata parsers, the SQL text helpers and
// the DDL generator. Table-driven: each row is one source type or one DDL case.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "typemap/ddl.h"
#include "typemap/mysql_types.h"
#include "typemap/postgres_types.h"
#include "typemap/sql.h"

namespace dbs {
namespace {

using LT = LogicalType;
constexpr Dialect kPg = Dialect::kPostgres;
constexpr Dialect kMy = Dialect::kMysql;

// ---------------------------------------------------------------------------------------------
// SQL text helpers.

TEST(TypemapSql, QuoteIdent) {
  struct Case {
    std::string name;
    Dialect d;
    std::string want;
  };
  const Case cases[] = {
      {"plain", kPg, "\"plain\""},
      {"MixedCase", kPg, "\"MixedCase\""},
      {"a\"b", kPg, "\"a\"\"b\""},
      {"semi;colon", kPg, "\"semi;colon\""},
      {"back`tick", kPg, "\"back`tick\""},
      {"\"", kPg, "\"\"\"\""},
      {"plain", kMy, "`plain`"},
      {"a`b", kMy, "`a``b`"},
      {"semi;colon", kMy, "`semi;colon`"},
      {"dq\"", kMy, "`dq\"`"},
      {"`; DROP TABLE t; --", kMy, "```; DROP TABLE t; --`"},
      {"", kPg, "\"\""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(QuoteIdent(c.name, c.d), c.want) << c.name;
  }
  EXPECT_EQ(QualifiedName("s\"x", "t", kPg), "\"s\"\"x\".\"t\"");
  EXPECT_EQ(QualifiedName("", "t", kMy), "`t`");
}

TEST(TypemapSql, QuoteAndUnquoteLiteral) {
  struct Case {
    std::string text;
    Dialect d;
    std::string want;
  };
  const Case cases[] = {
      {"abc", kPg, "'abc'"},
      {"it's", kPg, "'it''s'"},
      {"a\\b", kPg, "E'a\\\\b'"},
      {"'; DROP TABLE t; --", kPg, "'''; DROP TABLE t; --'"},
      {"", kPg, "''"},
      {"abc", kMy, "'abc'"},
      {"it's", kMy, "'it''s'"},
      {"a\\b", kMy, "'a\\\\b'"},
      {std::string("n\0l", 3), kMy, "'n\\0l'"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(QuoteLiteral(c.text, c.d), c.want) << c.text;
    std::string back;
    ASSERT_TRUE(UnquoteLiteral(c.want, c.d, &back)) << c.want;
    EXPECT_EQ(back, c.text);
  }
  std::string v;
  EXPECT_TRUE(UnquoteLiteral("_utf8mb4'x'", kMy, &v));
  EXPECT_EQ(v, "x");
  EXPECT_TRUE(UnquoteLiteral("'a\\'b'", kMy, &v));
  EXPECT_EQ(v, "a'b");
  EXPECT_TRUE(UnquoteLiteral("'a\\b'", kPg, &v));  // standard string: backslash is literal
  EXPECT_EQ(v, "a\\b");
  EXPECT_TRUE(UnquoteLiteral("E'tab\\there'", kPg, &v));
  EXPECT_EQ(v, "tab\there");
  EXPECT_FALSE(UnquoteLiteral("'a'::text", kPg, &v));
  EXPECT_FALSE(UnquoteLiteral("'a' || 'b'", kPg, &v));
  EXPECT_FALSE(UnquoteLiteral("'open", kMy, &v));
  EXPECT_FALSE(UnquoteLiteral("42", kMy, &v));
}

TEST(TypemapSql, CheckIdentifier) {
  EXPECT_TRUE(CheckIdentifier("ok", kPg).ok());
  EXPECT_TRUE(CheckIdentifier(std::string(63, 'a'), kPg).ok());
  EXPECT_FALSE(CheckIdentifier(std::string(64, 'a'), kPg).ok());
  EXPECT_TRUE(CheckIdentifier(std::string(64, 'a'), kMy).ok());
  EXPECT_FALSE(CheckIdentifier(std::string(65, 'a'), kMy).ok());
  // 64 two-byte characters are 128 bytes but 64 characters: fine for MySQL, not PostgreSQL.
  std::string wide;
  for (int i = 0; i < 64; ++i) wide += "\xc3\xa9";
  EXPECT_TRUE(CheckIdentifier(wide, kMy).ok());
  EXPECT_FALSE(CheckIdentifier(wide, kPg).ok());
  EXPECT_FALSE(CheckIdentifier("trailing ", kMy).ok());
  EXPECT_TRUE(CheckIdentifier("trailing ", kPg).ok());
  EXPECT_FALSE(CheckIdentifier("", kPg).ok());
  EXPECT_FALSE(CheckIdentifier(std::string("a\0b", 3), kMy).ok());
}

TEST(TypemapSql, CheckSqlFragment) {
  struct Case {
    std::string text;
    Dialect d;
    bool ok;
  };
  const Case cases[] = {
      {"0", kPg, true},
      {"'a;b'", kPg, true},
      {"nextval('s'::regclass)", kPg, true},
      {"\"we;ird\" > 0", kPg, true},
      {"$$a;b$$", kPg, true},
      {"$tag$x;$$y$tag$", kPg, true},
      {"E'it\\'s;'", kPg, true},
      {"'a\\'", kPg, true},  // standard string ending in a backslash
      {"(`a;b` * 2)", kMy, true},
      {"'it\\'s;'", kMy, true},
      {"\"dq;\"", kMy, true},
      {"1; DROP TABLE t", kPg, false},
      {"1; DROP TABLE t", kMy, false},
      {"0 -- comment", kPg, false},
      {"0 /* comment */", kMy, false},
      {"0 # comment", kMy, false},
      {"(a", kPg, false},
      {"a)", kMy, false},
      {"'open", kPg, false},
      {"`open", kMy, false},
      {"$$open", kPg, false},
      {"int; DROP TABLE x", kMy, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CheckSqlFragment(c.text, c.d, "x").ok(), c.ok) << c.text;
  }
}

// ---------------------------------------------------------------------------------------------
// MySQL / MariaDB.

MysqlColumnInfo MyInfo(const std::string& data_type, const std::string& column_type) {
  MysqlColumnInfo i;
  i.column_name = "c";
  i.data_type = data_type;
  i.column_type = column_type;
  return i;
}

TEST(TypemapMysql, EveryType) {
  struct Case {
    std::string data_type;
    std::string column_type;
    LT want;
    std::optional<uint32_t> length;
    std::optional<uint32_t> precision;
    std::optional<uint32_t> scale;
  };
  const Case cases[] = {
      {"tinyint", "tinyint(4)", LT::kInt8, {}, {}, {}},
      {"tinyint", "tinyint(1)", LT::kInt8, {}, {}, {}},  // bool alias stays an integer
      {"tinyint", "tinyint", LT::kInt8, {}, {}, {}},
      {"tinyint", "tinyint(3) unsigned", LT::kUInt8, {}, {}, {}},
      {"tinyint", "tinyint(3) unsigned zerofill", LT::kUInt8, {}, {}, {}},
      {"smallint", "smallint(6)", LT::kInt16, {}, {}, {}},
      {"smallint", "smallint(5) unsigned", LT::kUInt16, {}, {}, {}},
      {"mediumint", "mediumint(9)", LT::kInt32, {}, {}, {}},
      {"mediumint", "mediumint(8) unsigned", LT::kUInt32, {}, {}, {}},
      {"int", "int(11)", LT::kInt32, {}, {}, {}},
      {"int", "int", LT::kInt32, {}, {}, {}},
      {"int", "int unsigned", LT::kUInt32, {}, {}, {}},
      {"int", "int(10) unsigned zerofill", LT::kUInt32, {}, {}, {}},
      {"int", "int(10) zerofill", LT::kUInt32, {}, {}, {}},  // zerofill implies unsigned
      {"bigint", "bigint(20)", LT::kInt64, {}, {}, {}},
      {"bigint", "bigint(20) unsigned", LT::kUInt64, {}, {}, {}},
      {"bigint", "bigint unsigned", LT::kUInt64, {}, {}, {}},
      {"year", "year(4)", LT::kInt16, {}, {}, {}},
      {"year", "year", LT::kInt16, {}, {}, {}},
      {"float", "float", LT::kFloat32, {}, {}, {}},
      {"float", "float(7,3)", LT::kFloat32, {}, {}, {}},
      {"float", "float unsigned", LT::kFloat32, {}, {}, {}},
      {"double", "double", LT::kFloat64, {}, {}, {}},
      {"double", "double(10,2) unsigned", LT::kFloat64, {}, {}, {}},
      {"decimal", "decimal(12,2)", LT::kDecimal, {}, 12, 2},
      {"decimal", "decimal(65,30)", LT::kDecimal, {}, 65, 30},
      {"decimal", "decimal(10,0) unsigned", LT::kDecimal, {}, 10, 0},
      {"decimal", "decimal(5)", LT::kDecimal, {}, 5, 0},
      {"char", "char(10)", LT::kText, 10, {}, {}},
      {"char", "char(0)", LT::kText, 0, {}, {}},
      {"varchar", "varchar(255)", LT::kText, 255, {}, {}},
      {"tinytext", "tinytext", LT::kText, {}, {}, {}},
      {"text", "text", LT::kText, {}, {}, {}},
      {"mediumtext", "mediumtext", LT::kText, {}, {}, {}},
      {"longtext", "longtext", LT::kText, {}, {}, {}},
      {"binary", "binary(16)", LT::kBytes, 16, {}, {}},
      {"varbinary", "varbinary(255)", LT::kBytes, 255, {}, {}},
      {"tinyblob", "tinyblob", LT::kBytes, {}, {}, {}},
      {"blob", "blob", LT::kBytes, {}, {}, {}},
      {"mediumblob", "mediumblob", LT::kBytes, {}, {}, {}},
      {"longblob", "longblob", LT::kBytes, {}, {}, {}},
      {"bit", "bit(1)", LT::kBit, 1, {}, {}},
      {"bit", "bit(7)", LT::kBit, 7, {}, {}},
      {"bit", "bit(64)", LT::kBit, 64, {}, {}},
      {"date", "date", LT::kDate, {}, {}, {}},
      {"datetime", "datetime", LT::kTimestamp, {}, 0, {}},
      {"datetime", "datetime(6)", LT::kTimestamp, {}, 6, {}},
      {"timestamp", "timestamp", LT::kTimestampTz, {}, 0, {}},
      {"timestamp", "timestamp(3)", LT::kTimestampTz, {}, 3, {}},
      {"time", "time", LT::kTime, {}, 0, {}},
      {"time", "time(6)", LT::kTime, {}, 6, {}},
      {"json", "json", LT::kJson, {}, {}, {}},
      {"geometry", "geometry", LT::kGeometry, {}, {}, {}},
      {"point", "point", LT::kGeometry, {}, {}, {}},
      {"linestring", "linestring", LT::kGeometry, {}, {}, {}},
      {"polygon", "polygon", LT::kGeometry, {}, {}, {}},
      {"multipoint", "multipoint", LT::kGeometry, {}, {}, {}},
      {"multilinestring", "multilinestring", LT::kGeometry, {}, {}, {}},
      {"multipolygon", "multipolygon", LT::kGeometry, {}, {}, {}},
      {"geometrycollection", "geometrycollection", LT::kGeometry, {}, {}, {}},
      {"geomcollection", "geomcollection", LT::kGeometry, {}, {}, {}},
      {"uuid", "uuid", LT::kUuid, {}, {}, {}},
      {"inet4", "inet4", LT::kText, {}, {}, {}},
      {"inet6", "inet6", LT::kText, {}, {}, {}},
      {"", "int(11) unsigned", LT::kUInt32, {}, {}, {}},  // DATA_TYPE missing: from COLUMN_TYPE
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.column_type);
    auto r = ColumnFromMysql(MyInfo(c.data_type, c.column_type));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->type, c.want);
    EXPECT_EQ(r->source_type, c.column_type);
    EXPECT_EQ(r->length, c.length);
    EXPECT_EQ(r->precision, c.precision);
    EXPECT_EQ(r->scale, c.scale);
    EXPECT_EQ(r->element_type, LT::kNone);
  }
}

TEST(TypemapMysql, CatalogNumbersWin) {
  MysqlColumnInfo i = MyInfo("varchar", "varchar(20)");
  i.character_maximum_length = 20;
  i.character_set_name = "utf8mb4";
  i.collation_name = "utf8mb4_0900_ai_ci";
  i.is_nullable = false;
  i.column_comment = "a comment";
  auto r = ColumnFromMysql(i);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->length, 20u);
  EXPECT_EQ(r->charset, "utf8mb4");
  EXPECT_EQ(r->collation, "utf8mb4_0900_ai_ci");
  EXPECT_FALSE(r->nullable);
  EXPECT_EQ(r->comment, "a comment");

  i = MyInfo("decimal", "decimal(12,2)");
  i.numeric_precision = 12;
  i.numeric_scale = 2;
  EXPECT_EQ(ColumnFromMysql(i)->precision, 12u);
  i = MyInfo("datetime", "datetime(6)");
  i.datetime_precision = 6;
  EXPECT_EQ(ColumnFromMysql(i)->precision, 6u);
  i = MyInfo("point", "point");
  i.srs_id = 4326;
  EXPECT_EQ(ColumnFromMysql(i)->srid, 4326u);
}

TEST(TypemapMysql, BinaryCharsetAndMariadbJson) {
  MysqlColumnInfo i = MyInfo("varchar", "varchar(10)");
  i.character_set_name = "binary";
  EXPECT_EQ(ColumnFromMysql(i)->type, LT::kBytes);
  i = MyInfo("text", "text");
  i.character_set_name = "binary";
  EXPECT_EQ(ColumnFromMysql(i)->type, LT::kBytes);

  i = MyInfo("longtext", "longtext");
  i.is_mariadb = true;
  i.character_set_name = "utf8mb4";
  i.collation_name = "utf8mb4_bin";
  EXPECT_EQ(ColumnFromMysql(i)->type, LT::kText);
  i.mariadb_json = true;
  auto r = ColumnFromMysql(i);
  EXPECT_EQ(r->type, LT::kJson);
  EXPECT_EQ(r->source_type, "longtext");
  EXPECT_EQ(r->collation, "utf8mb4_bin");
  i = MyInfo("text", "text");
  i.mariadb_json = true;  // only LONGTEXT can be MariaDB's JSON
  EXPECT_EQ(ColumnFromMysql(i)->type, LT::kText);
}

TEST(TypemapMysql, MariadbJsonCheckColumn) {
  struct Case {
    std::string clause;
    std::optional<std::string> want;
  };
  const Case cases[] = {
      {"json_valid(`doc`)", "doc"},
      {"JSON_VALID(`doc`)", "doc"},
      {"(json_valid(`a``b`))", "a`b"},
      {"json_valid(doc)", "doc"},
      {"json_valid( `we ird` )", "we ird"},
      {"json_valid(`doc`) and `x` > 0", std::nullopt},
      {"json_valid(concat(`a`,`b`))", std::nullopt},
      {"length(`doc`) > 0", std::nullopt},
      {"", std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(MariadbJsonCheckColumn(c.clause), c.want) << c.clause;
}

TEST(TypemapMysql, EnumAndSetLabels) {
  struct Case {
    std::string column_type;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {"enum('a','b')", {"a", "b"}},
      {"enum('it''s','x')", {"it's", "x"}},
      {"enum('a,b','c)d','(e')", {"a,b", "c)d", "(e"}},
      {"set('x','y z')", {"x", "y z"}},
      {"enum('back\\\\slash')", {"back\\slash"}},
      {"enum('esc\\'q')", {"esc'q"}},
      {"enum('')", {""}},
      {"enum( 'sp' , 'aced' )", {"sp", "aced"}},
      {"enum('\xc3\xa9t\xc3\xa9','''')", {"\xc3\xa9t\xc3\xa9", "'"}},
  };
  for (const Case& c : cases) {
    auto r = ParseMysqlEnumLabels(c.column_type);
    ASSERT_TRUE(r.ok()) << c.column_type << ": " << r.status().ToString();
    EXPECT_EQ(*r, c.want) << c.column_type;
  }
  for (const char* bad : {"enum('a'", "enum(a)", "enum('a' 'b')", "enum", "enum('a') x"}) {
    EXPECT_FALSE(ParseMysqlEnumLabels(bad).ok()) << bad;
  }

  auto r = ColumnFromMysql(MyInfo("enum", "enum('new','it''s','a,b')"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->type, LT::kEnum);
  EXPECT_EQ(r->enum_values, (std::vector<std::string>{"new", "it's", "a,b"}));
  r = ColumnFromMysql(MyInfo("set", "set('r','w','x')"));
  EXPECT_EQ(r->type, LT::kSet);
  EXPECT_EQ(r->enum_values.size(), 3u);
  EXPECT_FALSE(ColumnFromMysql(MyInfo("enum", "enum('open")).ok());
}

TEST(TypemapMysql, UnsupportedNamesColumnAndType) {
  MysqlColumnInfo i = MyInfo("vector", "vector(3)");
  i.column_name = "embedding";
  auto r = ColumnFromMysql(i);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("embedding"), std::string::npos);
  EXPECT_NE(r.status().message().find("vector(3)"), std::string::npos);
  EXPECT_FALSE(ColumnFromMysql(MyInfo("datetime", "datetime(7)")).ok());
}

TEST(TypemapMysql, Defaults) {
  struct Case {
    bool mariadb;
    std::string data_type;
    std::string column_type;
    std::string extra;
    std::optional<std::string> raw;
    std::optional<std::string> want;
    std::optional<std::string> on_update;
  };
  const Case cases[] = {
      // MySQL: raw literal text.
      {false, "int", "int(11)", "", "0", "0", {}},
      {false, "int", "int(11)", "", "-5", "-5", {}},
      {false, "decimal", "decimal(5,2)", "", "1.50", "1.50", {}},
      {false, "varchar", "varchar(10)", "", "it's", "'it''s'", {}},
      {false, "varchar", "varchar(10)", "", "a\\b", "'a\\\\b'", {}},
      {false, "varchar", "varchar(10)", "", "", "''", {}},
      {false, "varchar", "varchar(10)", "", "5", "'5'", {}},
      {false, "enum", "enum('a','b')", "", "b", "'b'", {}},
      {false, "bit", "bit(3)", "", "b'101'", "b'101'", {}},
      {false, "varbinary", "varbinary(4)", "", "0x6162", "0x6162", {}},
      {false, "datetime", "datetime", "", "0000-00-00 00:00:00", "'0000-00-00 00:00:00'", {}},
      {false, "datetime", "datetime(6)", "DEFAULT_GENERATED on update CURRENT_TIMESTAMP(6)",
       "CURRENT_TIMESTAMP(6)", "CURRENT_TIMESTAMP(6)", "CURRENT_TIMESTAMP(6)"},
      {false, "timestamp", "timestamp", "on update CURRENT_TIMESTAMP", "CURRENT_TIMESTAMP",
       "CURRENT_TIMESTAMP", "CURRENT_TIMESTAMP"},  // MySQL 5.7: no DEFAULT_GENERATED
      {false, "char", "char(36)", "DEFAULT_GENERATED", "uuid()", "(uuid())", {}},
      {false, "text", "text", "DEFAULT_GENERATED", "_utf8mb4\\'abc\\'", "(_utf8mb4'abc')", {}},
      {false, "int", "int", "DEFAULT_GENERATED", "(rand() * 10)", "(rand() * 10)", {}},
      {false, "int", "int", "", std::nullopt, std::nullopt, {}},
      // MariaDB 10.2.7+: SQL expressions.
      {true, "int", "int(11)", "", "0", "0", {}},
      {true, "int", "int(11)", "", "NULL", std::nullopt, {}},
      {true, "varchar", "varchar(10)", "", "'it''s'", "'it''s'", {}},
      {true, "varchar", "varchar(10)", "", "'a\\\\b'", "'a\\\\b'", {}},
      {true, "varchar", "varchar(10)", "", "'NULL'", "'NULL'", {}},
      {true, "datetime", "datetime(6)", "on update current_timestamp(6)", "current_timestamp(6)",
       "CURRENT_TIMESTAMP(6)", "CURRENT_TIMESTAMP(6)"},
      {true, "timestamp", "timestamp", "on update current_timestamp()", "current_timestamp()",
       "CURRENT_TIMESTAMP", "CURRENT_TIMESTAMP"},
      {true, "char", "char(36)", "", "uuid()", "(uuid())", {}},
      {true, "bit", "bit(2)", "", "b'10'", "b'10'", {}},
      {true, "double", "double", "", "1.5e3", "1.5e3", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.column_type + " " + c.raw.value_or("<null>"));
    MysqlColumnInfo i = MyInfo(c.data_type, c.column_type);
    i.is_mariadb = c.mariadb;
    i.extra = c.extra;
    i.column_default = c.raw;
    auto r = ColumnFromMysql(i);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->default_expr, c.want);
    EXPECT_EQ(r->on_update, c.on_update);
  }
}

TEST(TypemapMysql, AutoIncrementAndGenerated) {
  MysqlColumnInfo i = MyInfo("bigint", "bigint(20) unsigned");
  i.extra = "auto_increment";
  i.is_nullable = false;
  auto r = ColumnFromMysql(i);
  EXPECT_TRUE(r->auto_increment);
  EXPECT_FALSE(r->default_expr.has_value());

  i = MyInfo("varchar", "varchar(101)");
  i.extra = "VIRTUAL GENERATED";
  i.generation_expression = "concat(`first`,_utf8mb4\\' \\',`last`)";
  r = ColumnFromMysql(i);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->generated_expr, "concat(`first`,_utf8mb4' ',`last`)");
  EXPECT_FALSE(r->generated_stored);

  i.extra = "STORED GENERATED";
  i.is_mariadb = true;
  i.generation_expression = "concat(`first`,' ',`last`)";
  r = ColumnFromMysql(i);
  EXPECT_EQ(r->generated_expr, "concat(`first`,' ',`last`)");
  EXPECT_TRUE(r->generated_stored);

  i.generation_expression = "";
  EXPECT_FALSE(ColumnFromMysql(i).ok());
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL.

PgColumnInfo PgInfo(const std::string& formatted, const std::string& typname, char typtype = 'b',
                    char category = 'U') {
  PgColumnInfo i;
  i.name = "c";
  i.type.formatted = formatted;
  i.type.name = typname;
  i.type.type_type = typtype;
  i.type.category = category;
  return i;
}

PgColumnInfo PgArray(const std::string& formatted, const std::string& typname,
                     const std::string& element, char element_typtype = 'b') {
  PgColumnInfo i = PgInfo(formatted, typname, 'b', 'A');
  i.type.element_name = element;
  i.type.element_type_type = element_typtype;
  return i;
}

TEST(TypemapPostgres, EveryBuiltinType) {
  struct Case {
    std::string formatted;
    std::string typname;
    LT want;
    std::optional<uint32_t> length;
    std::optional<uint32_t> precision;
    std::optional<uint32_t> scale;
  };
  const Case cases[] = {
      {"smallint", "int2", LT::kInt16, {}, {}, {}},
      {"integer", "int4", LT::kInt32, {}, {}, {}},
      {"bigint", "int8", LT::kInt64, {}, {}, {}},
      {"oid", "oid", LT::kUInt32, {}, {}, {}},
      {"xid", "xid", LT::kUInt32, {}, {}, {}},
      {"cid", "cid", LT::kUInt32, {}, {}, {}},
      {"xid8", "xid8", LT::kUInt64, {}, {}, {}},
      {"real", "float4", LT::kFloat32, {}, {}, {}},
      {"double precision", "float8", LT::kFloat64, {}, {}, {}},
      {"numeric(12,2)", "numeric", LT::kDecimal, {}, 12, 2},
      {"numeric(5,0)", "numeric", LT::kDecimal, {}, 5, 0},
      {"numeric(3,-2)", "numeric", LT::kDecimal, {}, 5, 0},  // PostgreSQL 15 negative scale
      {"numeric", "numeric", LT::kDecimal, {}, {}, {}},
      {"money", "money", LT::kDecimal, {}, 19, 2},
      {"character(10)", "bpchar", LT::kText, 10, {}, {}},
      {"bpchar", "bpchar", LT::kText, 1, {}, {}},
      {"character varying(20)", "varchar", LT::kText, 20, {}, {}},
      {"character varying", "varchar", LT::kText, {}, {}, {}},
      {"text", "text", LT::kText, {}, {}, {}},
      {"name", "name", LT::kText, 63, {}, {}},
      {"\"char\"", "char", LT::kText, 1, {}, {}},
      {"citext", "citext", LT::kText, {}, {}, {}},
      {"bytea", "bytea", LT::kBytes, {}, {}, {}},
      {"boolean", "bool", LT::kBool, {}, {}, {}},
      {"date", "date", LT::kDate, {}, {}, {}},
      {"time without time zone", "time", LT::kTime, {}, {}, {}},
      {"time(3) without time zone", "time", LT::kTime, {}, 3, {}},
      {"time with time zone", "timetz", LT::kTimeTz, {}, {}, {}},
      {"timestamp without time zone", "timestamp", LT::kTimestamp, {}, {}, {}},
      {"timestamp(6) without time zone", "timestamp", LT::kTimestamp, {}, 6, {}},
      {"timestamp with time zone", "timestamptz", LT::kTimestampTz, {}, {}, {}},
      {"timestamp(0) with time zone", "timestamptz", LT::kTimestampTz, {}, 0, {}},
      {"interval", "interval", LT::kInterval, {}, {}, {}},
      {"interval year to month", "interval", LT::kInterval, {}, {}, {}},
      {"uuid", "uuid", LT::kUuid, {}, {}, {}},
      {"json", "json", LT::kJson, {}, {}, {}},
      {"jsonb", "jsonb", LT::kJson, {}, {}, {}},
      {"jsonpath", "jsonpath", LT::kText, {}, {}, {}},
      {"xml", "xml", LT::kText, {}, {}, {}},
      {"inet", "inet", LT::kText, {}, {}, {}},
      {"cidr", "cidr", LT::kText, {}, {}, {}},
      {"macaddr", "macaddr", LT::kText, {}, {}, {}},
      {"macaddr8", "macaddr8", LT::kText, {}, {}, {}},
      {"bit(8)", "bit", LT::kBit, 8, {}, {}},
      {"bit varying(16)", "varbit", LT::kBit, 16, {}, {}},
      {"bit varying", "varbit", LT::kBit, {}, {}, {}},
      {"tsvector", "tsvector", LT::kText, {}, {}, {}},
      {"tsquery", "tsquery", LT::kText, {}, {}, {}},
      {"point", "point", LT::kText, {}, {}, {}},
      {"line", "line", LT::kText, {}, {}, {}},
      {"lseg", "lseg", LT::kText, {}, {}, {}},
      {"box", "box", LT::kText, {}, {}, {}},
      {"path", "path", LT::kText, {}, {}, {}},
      {"polygon", "polygon", LT::kText, {}, {}, {}},
      {"circle", "circle", LT::kText, {}, {}, {}},
      {"pg_lsn", "pg_lsn", LT::kText, {}, {}, {}},
      {"regclass", "regclass", LT::kText, {}, {}, {}},
      {"tid", "tid", LT::kText, {}, {}, {}},
      {"hstore", "hstore", LT::kText, {}, {}, {}},
      {"geometry", "geometry", LT::kGeometry, {}, {}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.formatted);
    auto r = ColumnFromPostgres(PgInfo(c.formatted, c.typname));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->type, c.want);
    EXPECT_EQ(r->source_type, c.formatted);
    EXPECT_EQ(r->length, c.length);
    EXPECT_EQ(r->precision, c.precision);
    EXPECT_EQ(r->scale, c.scale);
  }
}

TEST(TypemapPostgres, TypmodFieldsWinOverText) {
  PgColumnInfo i = PgInfo("numeric(12,2)", "numeric");
  i.type.precision = 14;
  i.type.scale = 4;
  auto r = ColumnFromPostgres(i);
  EXPECT_EQ(r->precision, 14u);
  EXPECT_EQ(r->scale, 4u);
  i = PgInfo("character varying(20)", "varchar");
  i.type.length = 30;
  EXPECT_EQ(ColumnFromPostgres(i)->length, 30u);
}

TEST(TypemapPostgres, PostgisSrid) {
  auto r = ColumnFromPostgres(PgInfo("geometry(Point,4326)", "geometry"));
  EXPECT_EQ(r->type, LT::kGeometry);
  EXPECT_EQ(r->srid, 4326u);
  PgColumnInfo i = PgInfo("geography(Polygon,4326)", "geography");
  i.srid = 4269;  // the typmod field wins
  EXPECT_EQ(ColumnFromPostgres(i)->srid, 4269u);
}

TEST(TypemapPostgres, EnumsDomainsCompositesRanges) {
  PgColumnInfo i = PgInfo("mood", "mood", 'e', 'E');
  i.type.enum_labels = {"sad", "it's", "a,b"};
  auto r = ColumnFromPostgres(i);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->type, LT::kEnum);
  EXPECT_EQ(r->source_type, "mood");
  EXPECT_EQ(r->enum_values, i.type.enum_labels);
  i.type.enum_labels.clear();
  EXPECT_EQ(ColumnFromPostgres(i).status().code(), StatusCode::kInvalidArgument);

  // Domains map through their base type.
  i = PgInfo("positive_amount", "positive_amount", 'd', 'N');
  EXPECT_EQ(ColumnFromPostgres(i).status().code(), StatusCode::kInvalidArgument);
  PgTypeInfo base;
  base.formatted = "numeric(10,2)";
  base.name = "numeric";
  base.category = 'N';
  i.domain_base = base;
  r = ColumnFromPostgres(i);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->type, LT::kDecimal);
  EXPECT_EQ(r->source_type, "numeric(10,2)");
  EXPECT_EQ(r->precision, 10u);

  // A domain over an array.
  PgTypeInfo arr;
  arr.formatted = "text[]";
  arr.name = "_text";
  arr.category = 'A';
  arr.element_name = "text";
  i.domain_base = arr;
  r = ColumnFromPostgres(i);
  EXPECT_EQ(r->type, LT::kArray);
  EXPECT_EQ(r->element_type, LT::kText);

  struct Case {
    std::string formatted;
    char typtype;
  };
  for (const Case& c : {Case{"int4range", 'r'}, Case{"tstzrange", 'r'}, Case{"int4multirange", 'm'},
                        Case{"shop.address", 'c'}}) {
    r = ColumnFromPostgres(PgInfo(c.formatted, c.formatted, c.typtype));
    ASSERT_TRUE(r.ok()) << c.formatted;
    EXPECT_EQ(r->type, LT::kText);
    EXPECT_EQ(r->source_type, c.formatted);
  }
}

TEST(TypemapPostgres, Arrays) {
  struct Case {
    PgColumnInfo info;
    LT element;
    std::optional<uint32_t> length;
  };
  PgColumnInfo enum_array = PgArray("mood[]", "_mood", "mood", 'e');
  enum_array.type.enum_labels = {"a", "b"};
  PgColumnInfo domain_array = PgArray("email[]", "_email", "email", 'd');
  PgTypeInfo base;
  base.formatted = "character varying(320)";
  base.name = "varchar";
  domain_array.domain_base = base;
  const Case cases[] = {
      {PgArray("integer[]", "_int4", "int4"), LT::kInt32, {}},
      {PgArray("bigint[]", "_int8", "int8"), LT::kInt64, {}},
      {PgArray("text[]", "_text", "text"), LT::kText, {}},
      {PgArray("character varying(20)[]", "_varchar", "varchar"), LT::kText, 20},
      {PgArray("numeric(10,2)[]", "_numeric", "numeric"), LT::kDecimal, {}},
      {PgArray("uuid[]", "_uuid", "uuid"), LT::kUuid, {}},
      {PgArray("jsonb[]", "_jsonb", "jsonb"), LT::kJson, {}},
      {PgArray("timestamp with time zone[]", "_timestamptz", "timestamptz"), LT::kTimestampTz, {}},
      {PgArray("boolean[]", "_bool", "bool"), LT::kBool, {}},
      {PgArray("bytea[]", "_bytea", "bytea"), LT::kBytes, {}},
      {PgArray("int4range[]", "_int4range", "int4range", 'r'), LT::kText, {}},
      {enum_array, LT::kEnum, {}},
      {domain_array, LT::kText, 320},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.info.type.formatted);
    auto r = ColumnFromPostgres(c.info);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->type, LT::kArray);
    EXPECT_EQ(r->element_type, c.element);
    EXPECT_EQ(r->length, c.length);
  }
  auto r = ColumnFromPostgres(enum_array);
  EXPECT_EQ(r->enum_values, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r->source_type, "mood[]");
  r = ColumnFromPostgres(PgArray("numeric(10,2)[]", "_numeric", "numeric"));
  EXPECT_EQ(r->precision, 10u);
  EXPECT_EQ(r->scale, 2u);
  EXPECT_EQ(ColumnFromPostgres(domain_array)->source_type, "character varying(320)[]");
  // int2vector is category A but not a true array.
  EXPECT_EQ(ColumnFromPostgres(PgInfo("int2vector", "int2vector", 'b', 'A'))->type, LT::kText);
}

TEST(TypemapPostgres, IdentitySerialGenerated) {
  PgColumnInfo i = PgInfo("integer", "int4");
  i.default_expr = "nextval('orders_id_seq'::regclass)";
  i.not_null = true;
  auto r = ColumnFromPostgres(i);
  EXPECT_TRUE(r->auto_increment);
  EXPECT_EQ(r->default_expr, i.default_expr);
  EXPECT_FALSE(r->nullable);

  for (char identity : {'a', 'd'}) {
    i = PgInfo("bigint", "int8");
    i.identity = identity;
    r = ColumnFromPostgres(i);
    EXPECT_TRUE(r->auto_increment);
    EXPECT_FALSE(r->default_expr.has_value());
  }

  i = PgInfo("numeric(14,2)", "numeric");
  i.generated = 's';
  i.default_expr = "(amount * 1.2)";
  r = ColumnFromPostgres(i);
  EXPECT_EQ(r->generated_expr, "(amount * 1.2)");
  EXPECT_TRUE(r->generated_stored);
  EXPECT_FALSE(r->default_expr.has_value());
  i.default_expr.reset();
  EXPECT_FALSE(ColumnFromPostgres(i).ok());

  i = PgInfo("text", "text");
  i.default_expr = "'x'::text";
  i.collation = "C";
  i.comment = "note";
  r = ColumnFromPostgres(i);
  EXPECT_EQ(r->default_expr, "'x'::text");
  EXPECT_FALSE(r->auto_increment);
  EXPECT_EQ(r->collation, "C");
  EXPECT_EQ(r->comment, "note");
}

TEST(TypemapPostgres, Unsupported) {
  PgColumnInfo i = PgInfo("anyelement", "anyelement", 'p', 'P');
  i.name = "weird";
  auto r = ColumnFromPostgres(i);
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("weird"), std::string::npos);
  EXPECT_NE(r.status().message().find("anyelement"), std::string::npos);

  i = PgInfo("semver", "semver");
  EXPECT_EQ(ColumnFromPostgres(i).status().code(), StatusCode::kUnsupported);
  PgMappingOptions lenient;
  lenient.unknown_as_text = true;
  r = ColumnFromPostgres(i, lenient);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->type, LT::kText);
  EXPECT_EQ(r->source_type, "semver");
}

// ---------------------------------------------------------------------------------------------
// DDL: types.

Column MyCol(const std::string& data_type, const std::string& column_type) {
  MysqlColumnInfo i = MyInfo(data_type, column_type);
  i.column_name = "c";
  auto r = ColumnFromMysql(i);
  EXPECT_TRUE(r.ok()) << column_type << ": " << r.status().ToString();
  return r.ok() ? *r : Column();
}

Column PgCol(const std::string& formatted, const std::string& typname, char typtype = 'b') {
  PgColumnInfo i = PgInfo(formatted, typname, typtype);
  if (typtype == 'e') i.type.enum_labels = {"happy", "it's"};
  auto r = ColumnFromPostgres(i);
  EXPECT_TRUE(r.ok()) << formatted << ": " << r.status().ToString();
  return r.ok() ? *r : Column();
}

Column PgArrayCol(const std::string& formatted, const std::string& typname,
                  const std::string& element) {
  auto r = ColumnFromPostgres(PgArray(formatted, typname, element));
  EXPECT_TRUE(r.ok()) << formatted;
  return r.ok() ? *r : Column();
}

TEST(TypemapDdl, MysqlToPostgresTypes) {
  struct Case {
    std::string data_type;
    std::string column_type;
    std::string want;
  };
  const Case cases[] = {
      {"tinyint", "tinyint(1)", "smallint"},
      {"tinyint", "tinyint(3) unsigned", "smallint"},
      {"smallint", "smallint(6)", "smallint"},
      {"smallint", "smallint(5) unsigned", "integer"},
      {"mediumint", "mediumint(9)", "integer"},
      {"mediumint", "mediumint(8) unsigned", "bigint"},
      {"int", "int(11)", "integer"},
      {"int", "int(10) unsigned", "bigint"},
      {"bigint", "bigint(20)", "bigint"},
      {"bigint", "bigint(20) unsigned", "numeric(20,0)"},
      {"year", "year(4)", "smallint"},
      {"float", "float", "real"},
      {"double", "double", "double precision"},
      {"decimal", "decimal(12,2)", "numeric(12,2)"},
      {"decimal", "decimal(65,30)", "numeric(65,30)"},
      {"char", "char(10)", "varchar(10)"},
      {"char", "char(0)", "varchar(1)"},
      {"varchar", "varchar(255)", "varchar(255)"},
      {"tinytext", "tinytext", "text"},
      {"text", "text", "text"},
      {"mediumtext", "mediumtext", "text"},
      {"longtext", "longtext", "text"},
      {"binary", "binary(16)", "bytea"},
      {"varbinary", "varbinary(20)", "bytea"},
      {"blob", "blob", "bytea"},
      {"longblob", "longblob", "bytea"},
      {"enum", "enum('a','b')", "text"},
      {"set", "set('a','b')", "text"},
      {"bit", "bit(1)", "bit(1)"},
      {"bit", "bit(7)", "bit(7)"},
      {"date", "date", "date"},
      {"datetime", "datetime", "timestamp(0)"},
      {"datetime", "datetime(6)", "timestamp(6)"},
      {"timestamp", "timestamp", "timestamp(0) with time zone"},
      {"timestamp", "timestamp(3)", "timestamp(3) with time zone"},
      {"time", "time", "time(0)"},
      {"time", "time(6)", "time(6)"},
      {"json", "json", "json"},  // lossless by default; jsonb with typeMapping.pgJsonb
      {"geometry", "geometry", "bytea"},
      {"point", "point", "bytea"},
      {"uuid", "uuid", "uuid"},
      {"inet4", "inet4", "inet"},
      {"inet6", "inet6", "inet"},
  };
  for (const Case& c : cases) {
    auto r = TargetType(MyCol(c.data_type, c.column_type), kPg, kMy);
    ASSERT_TRUE(r.ok()) << c.column_type << ": " << r.status().ToString();
    EXPECT_EQ(*r, c.want) << c.column_type;
  }

  DdlOptions o;
  o.pg_jsonb = true;
  o.mysql_time_as_interval = true;
  EXPECT_EQ(*TargetType(MyCol("json", "json"), kPg, kMy, o), "jsonb");
  EXPECT_EQ(*TargetType(MyCol("time", "time(3)"), kPg, kMy, o), "interval(3)");
  o.postgis = true;
  Column pt = MyCol("point", "point");
  pt.srid = 4326;
  EXPECT_EQ(*TargetType(pt, kPg, kMy, o), "geometry(Point,4326)");
  EXPECT_EQ(*TargetType(MyCol("geometry", "geometry"), kPg, kMy, o), "geometry");
  EXPECT_EQ(*TargetType(MyCol("multipolygon", "multipolygon"), kPg, kMy, o),
            "geometry(MultiPolygon)");
  EXPECT_EQ(*TargetType(MyCol("geomcollection", "geomcollection"), kPg, kMy, o),
            "geometry(GeometryCollection)");
}

TEST(TypemapDdl, PostgresToMysqlTypes) {
  struct Case {
    Column column;
    std::string want;
  };
  const Case cases[] = {
      {PgCol("smallint", "int2"), "smallint"},
      {PgCol("integer", "int4"), "int"},
      {PgCol("bigint", "int8"), "bigint"},
      {PgCol("oid", "oid"), "int unsigned"},
      {PgCol("xid8", "xid8"), "bigint unsigned"},
      {PgCol("real", "float4"), "float"},
      {PgCol("double precision", "float8"), "double"},
      {PgCol("numeric(12,2)", "numeric"), "decimal(12,2)"},
      {PgCol("numeric(65,30)", "numeric"), "decimal(65,30)"},
      {PgCol("numeric", "numeric"), "decimal(65,30)"},
      {PgCol("numeric(100,2)", "numeric"), "decimal(65,30)"},
      {PgCol("money", "money"), "decimal(19,2)"},
      {PgCol("boolean", "bool"), "tinyint(1)"},
      {PgCol("text", "text"), "longtext"},
      {PgCol("citext", "citext"), "longtext"},
      {PgCol("character varying(20)", "varchar"), "varchar(20)"},
      {PgCol("character varying(16383)", "varchar"), "varchar(16383)"},
      {PgCol("character varying(16384)", "varchar"), "longtext"},
      {PgCol("character varying", "varchar"), "longtext"},
      {PgCol("character(10)", "bpchar"), "char(10)"},
      {PgCol("character(300)", "bpchar"), "varchar(300)"},
      {PgCol("name", "name"), "varchar(63)"},
      {PgCol("\"char\"", "char"), "char(1)"},
      {PgCol("bytea", "bytea"), "longblob"},
      {PgCol("date", "date"), "date"},
      {PgCol("time without time zone", "time"), "time(6)"},
      {PgCol("time(3) without time zone", "time"), "time(3)"},
      {PgCol("time with time zone", "timetz"), "varchar(32)"},
      {PgCol("timestamp without time zone", "timestamp"), "datetime(6)"},
      {PgCol("timestamp(0) without time zone", "timestamp"), "datetime(0)"},
      {PgCol("timestamp with time zone", "timestamptz"), "datetime(6)"},
      {PgCol("timestamp(3) with time zone", "timestamptz"), "datetime(3)"},
      {PgCol("interval", "interval"), "varchar(80)"},
      {PgCol("uuid", "uuid"), "char(36)"},
      {PgCol("json", "json"), "json"},
      {PgCol("jsonb", "jsonb"), "json"},
      {PgCol("xml", "xml"), "longtext"},
      {PgCol("inet", "inet"), "varchar(43)"},
      {PgCol("cidr", "cidr"), "varchar(43)"},
      {PgCol("macaddr", "macaddr"), "varchar(17)"},
      {PgCol("macaddr8", "macaddr8"), "varchar(23)"},
      {PgCol("pg_lsn", "pg_lsn"), "varchar(17)"},
      {PgCol("bit(8)", "bit"), "bit(8)"},
      {PgCol("bit(64)", "bit"), "bit(64)"},
      {PgCol("bit(100)", "bit"), "varchar(100)"},
      {PgCol("bit varying(10)", "varbit"), "varchar(10)"},
      {PgCol("bit varying", "varbit"), "longtext"},
      {PgCol("tsvector", "tsvector"), "longtext"},
      {PgCol("tsquery", "tsquery"), "longtext"},
      {PgCol("point", "point"), "longtext"},
      {PgCol("polygon", "polygon"), "longtext"},
      {PgCol("circle", "circle"), "longtext"},
      {PgCol("int4range", "int4range", 'r'), "longtext"},
      {PgCol("shop.address", "address", 'c'), "longtext"},
      {PgCol("mood", "mood", 'e'), "enum('happy','it''s')"},
      {PgCol("geometry(Point,4326)", "geometry"), "point"},
      {PgCol("geometry(MultiPolygonZ,4326)", "geometry"), "multipolygon"},
      {PgCol("geometry", "geometry"), "geometry"},
      {PgCol("geography(Point,4326)", "geography"), "geometry"},
      {PgArrayCol("integer[]", "_int4", "int4"), "json"},
      {PgArrayCol("text[]", "_text", "text"), "json"},
  };
  for (const Case& c : cases) {
    auto r = TargetType(c.column, kMy, kPg);
    ASSERT_TRUE(r.ok()) << c.column.source_type << ": " << r.status().ToString();
    EXPECT_EQ(*r, c.want) << c.column.source_type;
  }

  std::vector<std::string> warnings;
  DdlOptions o;
  o.warnings = &warnings;
  o.mariadb_native_types = true;
  EXPECT_EQ(*TargetType(PgCol("uuid", "uuid"), kMy, kPg, o), "uuid");
  EXPECT_EQ(*TargetType(PgCol("numeric", "numeric"), kMy, kPg, o), "decimal(65,30)");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("unconstrained numeric"), std::string::npos);

  // Enum labels MySQL cannot hold fall back to varchar.
  Column e = PgCol("mood", "mood", 'e');
  e.enum_values = {"ok", "trailing "};
  EXPECT_EQ(*TargetType(e, kMy, kPg, o), "varchar(9)");
  EXPECT_EQ(warnings.size(), 2u);
}

TEST(TypemapDdl, SameDialectKeepsSourceType) {
  struct Case {
    Column column;
    Dialect d;
    std::string want;
  };
  Column maria_json;
  {
    MysqlColumnInfo i = MyInfo("longtext", "longtext");
    i.is_mariadb = true;
    i.mariadb_json = true;
    maria_json = *ColumnFromMysql(i);
  }
  const Case cases[] = {
      {MyCol("int", "int(10) unsigned zerofill"), kMy, "int(10) unsigned zerofill"},
      {MyCol("enum", "enum('a','it''s')"), kMy, "enum('a','it''s')"},
      {MyCol("set", "set('x','y')"), kMy, "set('x','y')"},
      {MyCol("decimal", "decimal(12,2)"), kMy, "decimal(12,2)"},
      {MyCol("bit", "bit(7)"), kMy, "bit(7)"},
      {MyCol("datetime", "datetime(6)"), kMy, "datetime(6)"},
      {MyCol("year", "year(4)"), kMy, "year(4)"},
      {MyCol("mediumblob", "mediumblob"), kMy, "mediumblob"},
      {MyCol("point", "point"), kMy, "point"},
      {maria_json, kMy, "json"},
      {MyCol("uuid", "uuid"), kMy, "char(36)"},
      {MyCol("inet4", "inet4"), kMy, "varchar(15)"},
      {MyCol("inet6", "inet6"), kMy, "varchar(45)"},
      {PgCol("character varying(20)", "varchar"), kPg, "character varying(20)"},
      {PgCol("mood", "mood", 'e'), kPg, "mood"},
      {PgCol("int4range", "int4range", 'r'), kPg, "int4range"},
      {PgCol("geometry(Point,4326)", "geometry"), kPg, "geometry(Point,4326)"},
      {PgCol("money", "money"), kPg, "money"},
      {PgCol("interval year to month", "interval"), kPg, "interval year to month"},
      {PgArrayCol("character varying(20)[]", "_varchar", "varchar"), kPg,
       "character varying(20)[]"},
  };
  for (const Case& c : cases) {
    auto r = TargetType(c.column, c.d, c.d);
    ASSERT_TRUE(r.ok()) << c.column.source_type << ": " << r.status().ToString();
    EXPECT_EQ(*r, c.want) << c.column.source_type;
  }
  DdlOptions o;
  o.mariadb_native_types = true;
  EXPECT_EQ(*TargetType(MyCol("uuid", "uuid"), kMy, kMy, o), "uuid");
  EXPECT_EQ(*TargetType(MyCol("inet6", "inet6"), kMy, kMy, o), "inet6");

  Column evil = MyCol("int", "int");
  evil.source_type = "int; DROP TABLE x";
  EXPECT_EQ(TargetType(evil, kMy, kMy).status().code(), StatusCode::kInvalidArgument);
  // A column without a source type falls back to the logical mapping.
  Column bare;
  bare.name = "b";
  bare.type = LT::kArray;
  bare.element_type = LT::kInt64;
  EXPECT_EQ(*TargetType(bare, kPg, kPg), "bigint[]");
}

// ---------------------------------------------------------------------------------------------
// DDL: defaults.

Column WithDefault(Column c, std::string d) {
  c.default_expr = std::move(d);
  return c;
}

TEST(TypemapDdl, MysqlDefaultsToPostgres) {
  struct Case {
    Column column;
    std::optional<std::string> want;
    bool warns;
  };
  Column ts3 = MyCol("timestamp", "timestamp(3)");
  const Case cases[] = {
      {WithDefault(MyCol("int", "int"), "0"), "0", false},
      {WithDefault(MyCol("int", "int"), "-5"), "-5", false},
      {WithDefault(MyCol("decimal", "decimal(5,2)"), "1.50"), "1.50", false},
      {WithDefault(MyCol("varchar", "varchar(5)"), "'it''s'"), "'it''s'", false},
      {WithDefault(MyCol("varchar", "varchar(5)"), "'a\\\\b'"), "E'a\\\\b'", false},
      {WithDefault(MyCol("enum", "enum('new','old')"), "'new'"), "'new'", false},
      {WithDefault(MyCol("set", "set('a','b')"), "'a,b'"), "'a,b'", false},
      {WithDefault(MyCol("datetime", "datetime(6)"), "CURRENT_TIMESTAMP(6)"), "LOCALTIMESTAMP(6)",
       false},
      {WithDefault(MyCol("datetime", "datetime"), "CURRENT_TIMESTAMP"), "LOCALTIMESTAMP", false},
      {WithDefault(ts3, "CURRENT_TIMESTAMP(3)"), "CURRENT_TIMESTAMP(3)", false},
      {WithDefault(MyCol("timestamp", "timestamp"), "'2020-01-01 00:00:00'"),
       "'2020-01-01 00:00:00+00'", false},
      {WithDefault(MyCol("datetime", "datetime"), "'0000-00-00 00:00:00'"), std::nullopt, true},
      {WithDefault(MyCol("date", "date"), "'2020-00-15'"), std::nullopt, true},
      {WithDefault(MyCol("date", "date"), "(curdate())"), "CURRENT_DATE", false},
      {WithDefault(MyCol("time", "time"), "(curtime())"), "LOCALTIME", false},
      {WithDefault(MyCol("bit", "bit(8)"), "b'101'"), "B'00000101'", false},
      {WithDefault(MyCol("varbinary", "varbinary(4)"), "0x6162"), "E'\\\\x6162'::bytea", false},
      {WithDefault(MyCol("varbinary", "varbinary(4)"), "'ab'"), "E'\\\\x6162'::bytea", false},
      {WithDefault(MyCol("char", "char(36)"), "(uuid())"), "(gen_random_uuid())::text", false},
      {WithDefault(MyCol("uuid", "uuid"), "(uuid())"), "gen_random_uuid()", false},
      {WithDefault(MyCol("text", "text"), "(_utf8mb4'abc')"), "'abc'", false},
      {WithDefault(MyCol("int", "int"), "(rand() * 10)"), std::nullopt, true},
      {WithDefault(MyCol("json", "json"), "(json_array())"), std::nullopt, true},
      {WithDefault(MyCol("int", "int"), "NULL"), std::nullopt, false},
  };
  for (const Case& c : cases) {
    std::vector<std::string> warnings;
    DdlOptions o;
    o.warnings = &warnings;
    auto r = TargetDefault(c.column, kPg, kMy, o);
    ASSERT_TRUE(r.ok()) << *c.column.default_expr << ": " << r.status().ToString();
    EXPECT_EQ(*r, c.want) << *c.column.default_expr;
    EXPECT_EQ(!warnings.empty(), c.warns) << *c.column.default_expr;
  }
}

TEST(TypemapDdl, PostgresDefaultsToMysql) {
  struct Case {
    Column column;
    std::optional<std::string> want;
    bool warns;
  };
  Column serial = PgCol("integer", "int4");
  serial.default_expr = "nextval('t_id_seq'::regclass)";
  serial.auto_increment = true;
  const Case cases[] = {
      {WithDefault(PgCol("integer", "int4"), "0"), "0", false},
      {WithDefault(PgCol("integer", "int4"), "'-1'::integer"), "-1", false},
      {WithDefault(PgCol("integer", "int4"), "(-1)"), "-1", false},
      {WithDefault(PgCol("numeric(5,2)", "numeric"), "1.50"), "1.50", false},
      {WithDefault(PgCol("numeric", "numeric"), "'NaN'::numeric"), std::nullopt, true},
      {WithDefault(PgCol("boolean", "bool"), "true"), "1", false},
      {WithDefault(PgCol("boolean", "bool"), "false"), "0", false},
      {WithDefault(PgCol("character varying(5)", "varchar"), "'abc'::character varying"), "'abc'",
       false},
      {WithDefault(PgCol("character varying(5)", "varchar"), "'it''s'::character varying"),
       "'it''s'", false},
      {WithDefault(PgCol("text", "text"), "'abc'::text"), "('abc')", false},
      {WithDefault(PgCol("text", "text"), "E'a\\\\b'::text"), "('a\\\\b')", false},
      {WithDefault(PgCol("text", "text"), "upper('x'::text)"), std::nullopt, true},
      {WithDefault(PgCol("timestamp without time zone", "timestamp"), "now()"),
       "CURRENT_TIMESTAMP(6)", false},
      {WithDefault(PgCol("timestamp(0) without time zone", "timestamp"), "CURRENT_TIMESTAMP"),
       "CURRENT_TIMESTAMP", false},
      {WithDefault(PgCol("timestamp with time zone", "timestamptz"), "now()"), "(UTC_TIMESTAMP(6))",
       false},
      {WithDefault(PgCol("timestamp with time zone", "timestamptz"),
                   "'2020-01-01 02:00:00+02'::timestamp with time zone"),
       "'2020-01-01 00:00:00'", false},
      {WithDefault(PgCol("date", "date"), "CURRENT_DATE"), "(CURRENT_DATE)", false},
      {WithDefault(PgCol("time without time zone", "time"), "LOCALTIME"), "(CURTIME())", false},
      {WithDefault(PgCol("date", "date"), "'2024-02-29'::date"), "'2024-02-29'", false},
      {WithDefault(PgCol("date", "date"), "'infinity'::date"), std::nullopt, true},
      {WithDefault(PgCol("uuid", "uuid"), "gen_random_uuid()"), "(uuid())", false},
      {WithDefault(PgCol("bytea", "bytea"), "'\\x6162'::bytea"), "(0x6162)", false},
      {WithDefault(PgCol("bit(3)", "bit"), "'101'::\"bit\""), "b'101'", false},
      {WithDefault(PgCol("jsonb", "jsonb"), "'{\"a\": 1}'::jsonb"), "('{\"a\": 1}')", false},
      {WithDefault(PgArrayCol("integer[]", "_int4", "int4"), "'{}'::integer[]"), "(json_array())",
       false},
      {WithDefault(PgArrayCol("integer[]", "_int4", "int4"), "'{1,2}'::integer[]"), std::nullopt,
       true},
      {WithDefault(PgCol("mood", "mood", 'e'), "'happy'::mood"), "'happy'", false},
      {WithDefault(PgCol("interval", "interval"), "'1 day'::interval"), "'1 day'", false},
      {WithDefault(PgCol("character varying(5)", "varchar"), "NULL::character varying"),
       std::nullopt, false},
      {serial, std::nullopt, false},
  };
  for (const Case& c : cases) {
    std::vector<std::string> warnings;
    DdlOptions o;
    o.warnings = &warnings;
    auto r = TargetDefault(c.column, kMy, kPg, o);
    ASSERT_TRUE(r.ok()) << *c.column.default_expr << ": " << r.status().ToString();
    EXPECT_EQ(*r, c.want) << *c.column.default_expr;
    EXPECT_EQ(!warnings.empty(), c.warns) << *c.column.default_expr;
  }
}

TEST(TypemapMysql, UnescapeCatalogText) {
  EXPECT_EQ(UnescapeMysqlCatalogText("(`c` <> _utf8mb4\\'x\\')"), "(`c` <> _utf8mb4'x')");
  EXPECT_EQ(UnescapeMysqlCatalogText("_utf8mb4\\'a\\\\\\\\b\\'"), "_utf8mb4'a\\\\b'");
  EXPECT_EQ(UnescapeMysqlCatalogText("plain \\n"), "plain \\n");
}

TEST(TypemapDdl, SameDialectDefaultsAreKept) {
  Column c = WithDefault(PgCol("text", "text"), "'x'::text");
  EXPECT_EQ(*TargetDefault(c, kPg, kPg), "'x'::text");
  c = WithDefault(MyCol("char", "char(36)"), "(uuid())");
  EXPECT_EQ(*TargetDefault(c, kMy, kMy), "(uuid())");
  // MariaDB's literal TEXT default becomes an expression MySQL 8 accepts.
  c = WithDefault(MyCol("text", "text"), "'abc'");
  EXPECT_EQ(*TargetDefault(c, kMy, kMy), "('abc')");
  c = WithDefault(MyCol("int", "int"), "1; DROP TABLE t");
  EXPECT_EQ(TargetDefault(c, kMy, kMy).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(TargetDefault(c, kPg, kMy).status().code(), StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// DDL: tables.

Column Named(Column c, const std::string& name, bool nullable = true) {
  c.name = name;
  c.nullable = nullable;
  return c;
}

TableSchema MysqlOrders() {
  TableSchema t;
  t.schema = "shop";
  t.name = "orders";
  Column id = Named(MyCol("bigint", "bigint(20) unsigned"), "id", false);
  id.auto_increment = true;
  Column status = WithDefault(Named(MyCol("enum", "enum('new','it''s','a,b')"), "status"), "'new'");
  status.charset = "utf8mb4";
  status.collation = "utf8mb4_0900_ai_ci";
  Column tags = WithDefault(Named(MyCol("set", "set('x','y')"), "tags"), "''");
  Column amount = WithDefault(Named(MyCol("decimal", "decimal(12,2)"), "amount", false), "0.00");
  Column created =
      WithDefault(Named(MyCol("datetime", "datetime(6)"), "created"), "CURRENT_TIMESTAMP(6)");
  created.on_update = "CURRENT_TIMESTAMP(6)";
  Column total = Named(MyCol("decimal", "decimal(14,2)"), "total");
  total.generated_expr = "(`amount` * 1.2)";
  Column note = Named(MyCol("text", "text"), "note");
  note.comment = "it's free";
  t.columns = {id, status, tags, amount, created, total, note};
  t.primary_key = {"id"};
  t.comment = "orders table";
  return t;
}

TEST(TypemapDdl, CreateTableMysqlToPostgres) {
  std::vector<std::string> warnings;
  DdlOptions o;
  o.warnings = &warnings;
  auto r = CreateTableSql(MysqlOrders(), kPg, kMy, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r,
            "CREATE TABLE \"shop\".\"orders\" (\n"
            "  \"id\" numeric(20,0) DEFAULT nextval('\"shop\".\"orders_id_seq\"'::regclass) NOT "
            "NULL,\n"
            "  \"status\" text DEFAULT 'new' CHECK (\"status\" IN ('new', 'it''s', 'a,b')),\n"
            "  \"tags\" text DEFAULT '' CHECK (string_to_array(\"tags\", ',') <@ "
            "ARRAY['x', 'y']::text[]),\n"
            "  \"amount\" numeric(12,2) DEFAULT 0.00 NOT NULL,\n"
            "  \"created\" timestamp(6) DEFAULT LOCALTIMESTAMP(6),\n"
            "  \"total\" numeric(14,2),\n"
            "  \"note\" text,\n"
            "  PRIMARY KEY (\"id\")\n"
            ")");
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("shop.orders.created: ON UPDATE"), std::string::npos);
  EXPECT_NE(warnings[1].find("shop.orders.total: generated column"), std::string::npos);

  EXPECT_EQ(*PrepareTableSql(MysqlOrders(), kPg, kMy, o),
            (std::vector<std::string>{"CREATE SEQUENCE \"shop\".\"orders_id_seq\""}));
  auto finish = FinishTableSql(MysqlOrders(), kPg, kMy, o);
  ASSERT_TRUE(finish.ok());
  EXPECT_EQ(*finish, (std::vector<std::string>{
                         "ALTER SEQUENCE \"shop\".\"orders_id_seq\" OWNED BY "
                         "\"shop\".\"orders\".\"id\"",
                         "COMMENT ON TABLE \"shop\".\"orders\" IS 'orders table'",
                         "COMMENT ON COLUMN \"shop\".\"orders\".\"note\" IS 'it''s free'"}));
  auto sync = SyncAutoIncrementSql(MysqlOrders(), kPg, kMy, o);
  ASSERT_TRUE(sync.ok());
  EXPECT_EQ(*sync, (std::vector<std::string>{
                       "SELECT setval(pg_get_serial_sequence('\"shop\".\"orders\"', 'id'), "
                       "COALESCE(MAX(\"id\"), 0)::bigint + 1, false) FROM \"shop\".\"orders\""}));

  // bigint unsigned as bigint: a real identity, no sequence of our own.
  o.pg_uint64_as_bigint = true;
  o.if_not_exists = true;
  r = CreateTableSql(MysqlOrders(), kPg, kMy, o);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->find("CREATE TABLE IF NOT EXISTS \"shop\".\"orders\" (\n"
                    "  \"id\" bigint GENERATED BY DEFAULT AS IDENTITY NOT NULL,\n"),
            std::string::npos)
      << *r;
  EXPECT_TRUE(PrepareTableSql(MysqlOrders(), kPg, kMy, o)->empty());
  EXPECT_EQ(FinishTableSql(MysqlOrders(), kPg, kMy, o)->size(), 2u);
  EXPECT_EQ(*TargetType(MysqlOrders().columns[0], kPg, kMy, o), "bigint");
}

TEST(TypemapDdl, DeferredPrimaryKey) {
  DdlOptions o;
  o.defer_primary_key = true;
  auto pg = CreateTableSql(MysqlOrders(), kPg, kMy, o);
  ASSERT_TRUE(pg.ok()) << pg.status().ToString();
  EXPECT_EQ(pg->find("PRIMARY KEY"), std::string::npos) << *pg;
  EXPECT_EQ(*AddPrimaryKeySql(MysqlOrders(), kPg, o),
            "ALTER TABLE \"shop\".\"orders\" ADD PRIMARY KEY (\"id\")");
  // MySQL keeps the key in CREATE TABLE (InnoDB clusters by it).
  auto my = CreateTableSql(MysqlOrders(), kMy, kMy, o);
  ASSERT_TRUE(my.ok());
  EXPECT_NE(my->find("PRIMARY KEY (`id`)"), std::string::npos) << *my;
  TableSchema keyless = MysqlOrders();
  keyless.primary_key.clear();
  EXPECT_EQ(*AddPrimaryKeySql(keyless, kPg, o), "");
}

TEST(TypemapDdl, CreateTableMysqlToMysql) {
  std::vector<std::string> warnings;
  DdlOptions o;
  o.warnings = &warnings;
  o.target_schema = "copy";
  o.if_not_exists = true;
  auto r = CreateTableSql(MysqlOrders(), kMy, kMy, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r,
            "CREATE TABLE IF NOT EXISTS `copy`.`orders` (\n"
            "  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,\n"
            "  `status` enum('new','it''s','a,b') CHARACTER SET utf8mb4 COLLATE "
            "utf8mb4_0900_ai_ci NULL DEFAULT 'new',\n"
            "  `tags` set('x','y') NULL DEFAULT '',\n"
            "  `amount` decimal(12,2) NOT NULL DEFAULT 0.00,\n"
            "  `created` datetime(6) NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE "
            "CURRENT_TIMESTAMP(6),\n"
            "  `total` decimal(14,2) GENERATED ALWAYS AS (`amount` * 1.2) VIRTUAL,\n"
            "  `note` text NULL COMMENT 'it''s free',\n"
            "  PRIMARY KEY (`id`)\n"
            ") ENGINE=InnoDB COMMENT='orders table'");
  EXPECT_TRUE(warnings.empty());
  EXPECT_TRUE(FinishTableSql(MysqlOrders(), kMy, kMy, o)->empty());
  EXPECT_TRUE(SyncAutoIncrementSql(MysqlOrders(), kMy, kMy, o)->empty());
}

PgColumnInfo WithDefaultInfo(PgColumnInfo i, std::string d) {
  i.default_expr = std::move(d);
  return i;
}

TableSchema PostgresDocs() {
  TableSchema t;
  t.schema = "public";
  t.name = "docs";
  auto col = [](PgColumnInfo i, const std::string& name, bool not_null = false) {
    i.name = name;
    i.not_null = not_null;
    auto r = ColumnFromPostgres(i);
    EXPECT_TRUE(r.ok()) << name << ": " << r.status().ToString();
    return *r;
  };
  PgColumnInfo mood = PgInfo("mood", "mood", 'e');
  mood.type.enum_labels = {"happy", "it's"};
  PgColumnInfo title = PgInfo("text", "text");
  title.collation = "C";
  PgColumnInfo total = PgInfo("numeric(14,2)", "numeric");
  total.generated = 's';
  total.default_expr = "(price * 1.2)";
  t.columns = {
      col(WithDefaultInfo(PgInfo("integer", "int4"), "nextval('docs_id_seq'::regclass)"), "id",
          true),
      col(PgInfo("text", "text"), "tenant", true),
      col(title, "title"),
      col(WithDefaultInfo(PgArray("integer[]", "_int4", "int4"), "'{}'::integer[]"), "tags"),
      col(WithDefaultInfo(PgInfo("timestamp with time zone", "timestamptz"), "now()"), "created"),
      col(WithDefaultInfo(PgInfo("boolean", "bool"), "true"), "flag"),
      col(PgInfo("numeric", "numeric"), "price"),
      col(WithDefaultInfo(mood, "'happy'::mood"), "mood"),
      col(total, "total"),
  };
  t.primary_key = {"tenant", "id"};
  return t;
}

TEST(TypemapDdl, CreateTablePostgresToMysql) {
  std::vector<std::string> warnings;
  DdlOptions o;
  o.warnings = &warnings;
  auto r = CreateTableSql(PostgresDocs(), kMy, kPg, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r,
            "CREATE TABLE `public`.`docs` (\n"
            "  `id` int NOT NULL AUTO_INCREMENT,\n"
            "  `tenant` varchar(767) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n"
            "  `title` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,\n"
            "  `tags` json NULL DEFAULT (json_array()),\n"
            "  `created` datetime(6) NULL DEFAULT (UTC_TIMESTAMP(6)),\n"
            "  `flag` tinyint(1) NULL DEFAULT 1,\n"
            "  `price` decimal(65,30) NULL,\n"
            "  `mood` enum('happy','it''s') CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL "
            "DEFAULT 'happy',\n"
            "  `total` decimal(14,2) NULL,\n"
            "  PRIMARY KEY (`tenant`, `id`),\n"
            "  KEY `dbs_autoinc_id` (`id`)\n"
            ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin");
  std::string all;
  for (const std::string& w : warnings) all += w + "\n";
  EXPECT_NE(all.find("public.docs.price: unconstrained numeric"), std::string::npos) << all;
  EXPECT_NE(all.find("public.docs.tenant: part of a key, so created as varchar(767) instead of "
                     "longtext"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("public.docs.total: generated column"), std::string::npos) << all;
  EXPECT_NE(all.find("public.docs.id: index dbs_autoinc_id added"), std::string::npos) << all;
  EXPECT_TRUE(PrepareTableSql(PostgresDocs(), kMy, kPg, o)->empty());
}

TEST(TypemapDdl, CreateTablePostgresToPostgres) {
  std::vector<std::string> warnings;
  DdlOptions o;
  o.warnings = &warnings;
  auto r = CreateTableSql(PostgresDocs(), kPg, kPg, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r,
            "CREATE TABLE \"public\".\"docs\" (\n"
            "  \"id\" integer GENERATED BY DEFAULT AS IDENTITY NOT NULL,\n"
            "  \"tenant\" text NOT NULL,\n"
            "  \"title\" text COLLATE \"C\",\n"
            "  \"tags\" integer[] DEFAULT '{}'::integer[],\n"
            "  \"created\" timestamp with time zone DEFAULT now(),\n"
            "  \"flag\" boolean DEFAULT true,\n"
            "  \"price\" numeric,\n"
            "  \"mood\" mood DEFAULT 'happy'::mood,\n"
            "  \"total\" numeric(14,2) GENERATED ALWAYS AS (price * 1.2) STORED,\n"
            "  PRIMARY KEY (\"tenant\", \"id\")\n"
            ")");
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(*PrepareTableSql(PostgresDocs(), kPg, kPg, o),
            (std::vector<std::string>{"CREATE TYPE mood AS ENUM ('happy', 'it''s')"}));
  o.if_not_exists = true;
  EXPECT_EQ(*PrepareTableSql(PostgresDocs(), kPg, kPg, o),
            (std::vector<std::string>{
                "DO $dbs$ BEGIN CREATE TYPE mood AS ENUM ('happy', 'it''s'); EXCEPTION WHEN "
                "duplicate_object THEN NULL; END $dbs$"}));
}

TEST(TypemapDdl, MysqlKeyAndRowLimits) {
  TableSchema t;
  t.name = "wide";
  for (int k = 0; k < 12; ++k) {
    t.columns.push_back(
        Named(PgCol("character varying(2000)", "varchar"), "v" + std::to_string(k)));
  }
  t.columns.push_back(Named(PgCol("text", "text"), "a", false));
  t.columns.push_back(Named(PgCol("text", "text"), "b", false));
  t.columns.push_back(Named(PgCol("bytea", "bytea"), "blob"));
  t.primary_key = {"a"};
  Index ux;
  ux.name = "ux_ab";
  ux.unique = true;
  ux.columns = {IndexColumn{"a", false, std::nullopt}, IndexColumn{"b", false, std::nullopt}};
  Index ub;
  ub.name = "ux_blob";
  ub.unique = true;
  ub.columns = {IndexColumn{"blob", false, std::nullopt}};
  t.indexes = {ux, ub};
  std::vector<std::string> warnings;
  DdlOptions o;
  o.warnings = &warnings;
  auto r = CreateTableSql(t, kMy, kPg, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // a shares the unique key with b: 3072 bytes / 2 / 4 bytes per character.
  EXPECT_NE(r->find("`a` varchar(384) "), std::string::npos) << *r;
  EXPECT_NE(r->find("`b` varchar(384) "), std::string::npos) << *r;
  EXPECT_NE(r->find("`blob` varbinary(3072) NULL"), std::string::npos) << *r;
  // 12 x varchar(2000) utf8mb4 passes the 65535-byte row limit: the last ones become text.
  EXPECT_NE(r->find("`v0` varchar(2000) "), std::string::npos) << *r;
  EXPECT_NE(r->find("`v11` text "), std::string::npos) << *r;
  int demoted = 0;
  for (const std::string& w : warnings) {
    if (w.find("65535-byte row limit") != std::string::npos) ++demoted;
  }
  EXPECT_EQ(demoted, 5);
}

TEST(TypemapDdl, QuotingOfHostileIdentifiers) {
  TableSchema t;
  t.schema = "s\"`;";
  t.name = "we\"ird`; DROP TABLE x; --";
  Column c = Named(MyCol("int", "int"), "a\"b`c;d", false);
  t.columns = {c};
  t.primary_key = {c.name};
  auto pg = CreateTableSql(t, kPg, kMy);
  ASSERT_TRUE(pg.ok()) << pg.status().ToString();
  EXPECT_EQ(*pg,
            "CREATE TABLE \"s\"\"`;\".\"we\"\"ird`; DROP TABLE x; --\" (\n"
            "  \"a\"\"b`c;d\" integer NOT NULL,\n"
            "  PRIMARY KEY (\"a\"\"b`c;d\")\n"
            ")");
  auto my = CreateTableSql(t, kMy, kMy);
  ASSERT_TRUE(my.ok()) << my.status().ToString();
  EXPECT_EQ(*my,
            "CREATE TABLE `s\"``;`.`we\"ird``; DROP TABLE x; --` (\n"
            "  `a\"b``c;d` int NOT NULL,\n"
            "  PRIMARY KEY (`a\"b``c;d`)\n"
            ") ENGINE=InnoDB");
  EXPECT_EQ(*DropTableSql(t, kMy), "DROP TABLE IF EXISTS `s\"``;`.`we\"ird``; DROP TABLE x; --`");
  EXPECT_EQ(*DropTableSql(t, kPg),
            "DROP TABLE IF EXISTS \"s\"\"`;\".\"we\"\"ird`; DROP TABLE x; --\"");
}

TEST(TypemapDdl, CreateTableErrors) {
  TableSchema t;
  t.name = std::string(64, 't');
  t.columns = {Named(MyCol("int", "int"), "a")};
  EXPECT_EQ(CreateTableSql(t, kPg, kMy).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CreateTableSql(t, kMy, kMy).ok());
  t.name = "t";
  t.columns.push_back(Named(MyCol("int", "int"), "a"));
  EXPECT_EQ(CreateTableSql(t, kPg, kMy).status().code(), StatusCode::kInvalidArgument);
  t.columns.pop_back();
  t.primary_key = {"ghost"};
  EXPECT_EQ(CreateTableSql(t, kPg, kMy).status().code(), StatusCode::kInvalidArgument);
  t.primary_key.clear();
  t.columns[0].default_expr = "0); DROP TABLE t; --";
  EXPECT_EQ(CreateTableSql(t, kMy, kMy).status().code(), StatusCode::kInvalidArgument);
  t.columns[0].default_expr.reset();
  t.columns[0].generated_expr = "1; DROP TABLE t";
  EXPECT_EQ(CreateTableSql(t, kMy, kMy).status().code(), StatusCode::kInvalidArgument);
  t.columns.clear();
  EXPECT_FALSE(CreateTableSql(t, kPg, kPg).ok());
}

// ---------------------------------------------------------------------------------------------
// DDL: indexes, foreign keys, checks.

TEST(TypemapDdl, CreateIndex) {
  TableSchema my = MysqlOrders();
  Column body = Named(MyCol("text", "text"), "body");
  my.columns.push_back(body);
  Column geo = Named(MyCol("point", "point"), "geo", false);
  my.columns.push_back(geo);
  TableSchema pg = PostgresDocs();
  pg.columns.push_back(Named(PgCol("text", "text"), "body"));
  pg.columns.push_back(Named(PgCol("geometry(Point,4326)", "geometry"), "geo", false));
  pg.columns.push_back(Named(PgCol("geometry(Point,4326)", "geometry"), "geo_null"));

  auto idx = [](const std::string& name, bool unique, const std::string& method,
                std::vector<IndexColumn> cols, std::optional<std::string> pred = std::nullopt) {
    Index i;
    i.name = name;
    i.unique = unique;
    i.method = method;
    i.columns = std::move(cols);
    i.predicate = std::move(pred);
    return i;
  };
  auto col = [](const std::string& n, bool desc = false, std::optional<uint32_t> prefix = {}) {
    return IndexColumn{n, desc, prefix};
  };
  DdlOptions postgis;
  postgis.postgis = true;
  struct Case {
    const TableSchema* table;
    Index index;
    Dialect target;
    Dialect source;
    DdlOptions options;
    std::string want;  // empty: skipped with a warning
  };
  const Case cases[] = {
      {&my,
       idx("ux_status", true, "BTREE", {col("status"), col("amount", true)}),
       kPg,
       kMy,
       {},
       "CREATE UNIQUE INDEX \"orders_ux_status\" ON \"shop\".\"orders\" (\"status\", \"amount\" "
       "DESC)"},
      {&my,
       idx("ix_body", false, "BTREE", {col("body", false, 20)}),
       kPg,
       kMy,
       {},
       "CREATE INDEX \"orders_ix_body\" ON \"shop\".\"orders\" (\"body\")"},
      {&my, idx("ft_body", false, "FULLTEXT", {col("body")}), kPg, kMy, {}, ""},
      {&my, idx("sp_geo", false, "SPATIAL", {col("geo")}), kPg, kMy, {}, ""},
      {&my, idx("sp_geo", false, "SPATIAL", {col("geo")}), kPg, kMy, postgis,
       "CREATE INDEX \"orders_sp_geo\" ON \"shop\".\"orders\" USING gist (\"geo\")"},
      {&my,
       idx("ix_body", false, "BTREE", {col("body", false, 20)}),
       kMy,
       kMy,
       {},
       "CREATE INDEX `ix_body` ON `shop`.`orders` (`body`(20))"},
      {&my,
       idx("ft_body", false, "FULLTEXT", {col("body")}),
       kMy,
       kMy,
       {},
       "CREATE FULLTEXT INDEX `ft_body` ON `shop`.`orders` (`body`)"},
      {&my,
       idx("ix_expr", false, "BTREE", {col("(`amount` * 2)")}),
       kMy,
       kMy,
       {},
       "CREATE INDEX `ix_expr` ON `shop`.`orders` ((`amount` * 2))"},
      {&my, idx("ix_expr", false, "BTREE", {col("(`amount` * 2)")}), kPg, kMy, {}, ""},
      {&pg,
       idx("ix_body", false, "btree", {col("body"), col("title", true)}),
       kMy,
       kPg,
       {},
       "CREATE INDEX `ix_body` ON `public`.`docs` (`body`(255), `title`(255) DESC)"},
      {&pg, idx("ix_tags", false, "gin", {col("tags")}), kMy, kPg, {}, ""},
      {&pg,
       idx("ix_tags", false, "gin", {col("tags")}),
       kPg,
       kPg,
       {},
       "CREATE INDEX \"ix_tags\" ON \"public\".\"docs\" USING gin (\"tags\")"},
      {&pg, idx("ux_live", true, "btree", {col("title")}, "(flag = true)"), kMy, kPg, {}, ""},
      {&pg,
       idx("ix_live", false, "btree", {col("id")}, "(flag = true)"),
       kMy,
       kPg,
       {},
       "CREATE INDEX `ix_live` ON `public`.`docs` (`id`)"},
      {&pg,
       idx("ux_live", true, "btree", {col("title")}, "(flag = true)"),
       kPg,
       kPg,
       {},
       "CREATE UNIQUE INDEX \"ux_live\" ON \"public\".\"docs\" (\"title\") WHERE (flag = true)"},
      {&pg,
       idx("ix_lower", false, "btree", {col("lower(title)")}),
       kPg,
       kPg,
       {},
       "CREATE INDEX \"ix_lower\" ON \"public\".\"docs\" ((lower(title)))"},
      {&pg,
       idx("ix_geo", false, "gist", {col("geo")}),
       kMy,
       kPg,
       {},
       "CREATE SPATIAL INDEX `ix_geo` ON `public`.`docs` (`geo`)"},
      {&pg, idx("ix_geo_null", false, "gist", {col("geo_null")}), kMy, kPg, {}, ""},
      {&pg, idx("ix_tags_json", false, "btree", {col("tags")}), kMy, kPg, {}, ""},
  };
  for (const Case& c : cases) {
    std::vector<std::string> warnings;
    DdlOptions o = c.options;
    o.warnings = &warnings;
    auto r = CreateIndexSql(*c.table, c.index, c.target, c.source, o);
    ASSERT_TRUE(r.ok()) << c.index.name << ": " << r.status().ToString();
    EXPECT_EQ(*r, c.want) << c.index.name;
    if (c.want.empty()) {
      EXPECT_FALSE(warnings.empty()) << c.index.name;
    }
  }

  // Four TEXT parts share the 3072-byte key: 192 characters each.
  TableSchema four;
  four.name = "four";
  Index ix4;
  ix4.name = "ix4";
  for (const char* n : {"a", "b", "c", "d"}) {
    four.columns.push_back(Named(PgCol("text", "text"), n));
    ix4.columns.push_back(col(n));
  }
  EXPECT_EQ(*CreateIndexSql(four, ix4, kMy, kPg),
            "CREATE INDEX `ix4` ON `four` (`a`(192), `b`(192), `c`(192), `d`(192))");
  // Long varchars get prefixes too when the key would pass 3072 bytes; short ones stay whole.
  TableSchema varchars;
  varchars.name = "vc";
  varchars.columns = {Named(PgCol("character varying(2000)", "varchar"), "long"),
                      Named(PgCol("character varying(20)", "varchar"), "short"),
                      Named(PgCol("bigint", "int8"), "n")};
  Index ixv;
  ixv.name = "ixv";
  ixv.columns = {col("long"), col("short"), col("n")};
  EXPECT_EQ(*CreateIndexSql(varchars, ixv, kMy, kPg),
            "CREATE INDEX `ixv` ON `vc` (`long`(745), `short`, `n`)");
  // Long MySQL -> PostgreSQL index names are shortened with a hash.
  TableSchema longname = four;
  longname.name = std::string(40, 't');
  Index ixl = ix4;
  ixl.name = std::string(40, 'i');
  auto r = CreateIndexSql(longname, ixl, kPg, kMy);
  ASSERT_TRUE(r.ok());
  size_t open = r->find('"');
  size_t close = r->find('"', open + 1);
  EXPECT_EQ(close - open - 1, 63u) << *r;
  EXPECT_FALSE(CreateIndexSql(four, Index{}, kPg, kPg).ok());
}

TEST(TypemapDdl, AddForeignKey) {
  TableSchema t = MysqlOrders();
  ForeignKey fk;
  fk.name = "fk_cust";
  fk.columns = {"id"};
  fk.ref_schema = "shop";
  fk.ref_table = "customers";
  fk.ref_columns = {"id"};
  fk.on_delete = "CASCADE";
  fk.on_update = "set null";
  EXPECT_EQ(*AddForeignKeySql(t, fk, kPg, kMy),
            "ALTER TABLE \"shop\".\"orders\" ADD CONSTRAINT \"fk_cust\" FOREIGN KEY (\"id\") "
            "REFERENCES \"shop\".\"customers\" (\"id\") ON DELETE CASCADE ON UPDATE SET NULL");
  DdlOptions o;
  o.target_schema = "copy";
  std::vector<std::string> warnings;
  o.warnings = &warnings;
  fk.on_update = "SET DEFAULT";
  fk.on_delete = "NO ACTION";
  EXPECT_EQ(*AddForeignKeySql(t, fk, kMy, kMy, o),
            "ALTER TABLE `copy`.`orders` ADD CONSTRAINT `fk_cust` FOREIGN KEY (`id`) REFERENCES "
            "`copy`.`customers` (`id`)");
  EXPECT_EQ(warnings.size(), 1u);
  fk.ref_schema = "other";
  fk.on_update = "RESTRICT";
  EXPECT_EQ(*AddForeignKeySql(t, fk, kPg, kMy, o),
            "ALTER TABLE \"copy\".\"orders\" ADD CONSTRAINT \"fk_cust\" FOREIGN KEY (\"id\") "
            "REFERENCES \"other\".\"customers\" (\"id\") ON UPDATE RESTRICT");
  fk.on_update = "EXPLODE";
  EXPECT_FALSE(AddForeignKeySql(t, fk, kPg, kMy).ok());
  fk.on_update = "";
  fk.columns = {"ghost"};
  EXPECT_FALSE(AddForeignKeySql(t, fk, kPg, kMy).ok());
  fk.columns = {"id", "amount"};
  EXPECT_FALSE(AddForeignKeySql(t, fk, kPg, kMy).ok());
}

TEST(TypemapDdl, AddCheck) {
  TableSchema t = MysqlOrders();
  CheckConstraint ck{"ck_amount", "(`amount` >= 0)"};
  EXPECT_EQ(*AddCheckSql(t, ck, kMy, kMy),
            "ALTER TABLE `shop`.`orders` ADD CONSTRAINT `ck_amount` CHECK (`amount` >= 0)");
  std::vector<std::string> warnings;
  DdlOptions o;
  o.warnings = &warnings;
  EXPECT_EQ(*AddCheckSql(t, ck, kPg, kMy, o), "");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("ck_amount: skipped"), std::string::npos);
  o.cross_dialect_checks = true;
  ck.expression = "(`amount` >= 0 and `status` <> 'it\\'s')";
  EXPECT_EQ(*AddCheckSql(t, ck, kPg, kMy, o),
            "ALTER TABLE \"shop\".\"orders\" ADD CONSTRAINT \"ck_amount\" CHECK (\"amount\" >= 0 "
            "and \"status\" <> 'it''s')");

  // MariaDB's JSON check disappears: the JSON type validates.
  TableSchema j;
  j.name = "j";
  MysqlColumnInfo info = MyInfo("longtext", "longtext");
  info.column_name = "doc";
  info.is_mariadb = true;
  info.mariadb_json = true;
  j.columns = {*ColumnFromMysql(info)};
  warnings.clear();
  EXPECT_EQ(*AddCheckSql(j, CheckConstraint{"doc", "json_valid(`doc`)"}, kMy, kMy, o), "");
  EXPECT_EQ(*AddCheckSql(j, CheckConstraint{"doc", "json_valid(`doc`)"}, kPg, kMy, o), "");
  EXPECT_TRUE(warnings.empty());

  TableSchema p = PostgresDocs();
  EXPECT_EQ(*AddCheckSql(p, CheckConstraint{"ck_price", "(price > (0)::numeric)"}, kPg, kPg),
            "ALTER TABLE \"public\".\"docs\" ADD CONSTRAINT \"ck_price\" CHECK (price > "
            "(0)::numeric)");
  EXPECT_FALSE(AddCheckSql(p, CheckConstraint{"x", "true); DROP TABLE t; --"}, kPg, kPg).ok());
}

}  // namespace
}  // namespace dbs

namespace dbs {
namespace {

// The stream file's typeMapping choices reach the DDL, each only where the target supports it.
TEST(TypemapSettings, ApplyTypeMappingCopiesEveryChoice) {
  TypeMappingOptions tm;
  DdlOptions o;
  ApplyTypeMapping(tm, /*target_has_postgis=*/true, /*target_has_native_types=*/true, &o);
  EXPECT_FALSE(o.pg_jsonb);
  EXPECT_TRUE(o.postgis);
  EXPECT_TRUE(o.mariadb_native_types);
  EXPECT_FALSE(o.pg_inet_as_inet6);
  tm.pg_jsonb = tm.mysql_time_as_interval = tm.pg_uint64_as_bigint = tm.cross_dialect_checks =
      tm.pg_inet_as_inet6 = true;
  tm.postgis = false;
  tm.mysql_text_collation = "utf8mb4_nopad_bin";
  ApplyTypeMapping(tm, true, true, &o);
  EXPECT_TRUE(o.pg_jsonb && o.mysql_time_as_interval && o.pg_uint64_as_bigint &&
              o.cross_dialect_checks && o.pg_inet_as_inet6);
  EXPECT_FALSE(o.postgis);
  EXPECT_EQ(o.mysql_text_collation, "utf8mb4_nopad_bin");
  Column inet;
  inet.name = "a";
  inet.type = LogicalType::kText;
  inet.source_type = "inet";
  EXPECT_EQ(*TargetType(inet, Dialect::kMysql, Dialect::kPostgres, o), "inet6");
  // A server without native types: INET6 cannot be chosen.
  ApplyTypeMapping(tm, true, /*target_has_native_types=*/false, &o);
  EXPECT_FALSE(o.pg_inet_as_inet6);
  EXPECT_EQ(*TargetType(inet, Dialect::kMysql, Dialect::kPostgres, o), "varchar(43)");
}

}  // namespace
}  // namespace dbs

#include "config/stream_config.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

namespace dbs {
namespace {

using nlohmann::json;

TEST(Connection, ParsesUrls) {
  auto c =
      ParseConnectionUrl("mysql://app:p%40ss@db.local:3307/shop?ssl-mode=REQUIRED&ssl-ca=/ca.pem");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->engine, Engine::kMysql);
  EXPECT_EQ(c->user, "app");
  EXPECT_EQ(c->password, "p@ss");
  EXPECT_EQ(c->host, "db.local");
  EXPECT_EQ(c->port, 3307);
  EXPECT_EQ(c->database, "shop");
  EXPECT_EQ(c->ssl.mode, "require");
  EXPECT_EQ(c->ssl.ca, "/ca.pem");
  EXPECT_EQ(c->Redacted(), "mysql://app@db.local:3307/shop");

  auto p = ParseConnectionUrl("postgresql://u:it's@[::1]/db?sslmode=verify-full");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->host, "::1");
  EXPECT_EQ(p->EffectivePort(), 5432);
  EXPECT_NE(p->LibpqConninfo().find("password='it\\'s'"), std::string::npos);

  EXPECT_FALSE(ParseConnectionUrl("oracle://x").ok());
  EXPECT_FALSE(ParseConnectionUrl("postgres://h:99999/db").ok());
  EXPECT_FALSE(ParseConnectionUrl("postgres://h/db?sslmode=sometimes").ok());
  EXPECT_FALSE(ParseConnectionUrl("no scheme").ok());
}

// s3:// URLs: the bucket, the prefix, the keys as user and password, the session token as a
// secret of the object form; none of the secrets in Redacted().
TEST(Connection, ParsesS3Urls) {
  auto c = ParseConnectionUrl(
      "s3://AKID:s%2Fcret@lake/exports/2026/?endpoint=http://127.0.0.1:9000&region=eu-west-1"
      "&format=parquet");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->engine, Engine::kFile);
  EXPECT_TRUE(c->s3);
  EXPECT_EQ(c->host, "lake");
  EXPECT_EQ(c->database, "exports/2026");
  EXPECT_EQ(c->user, "AKID");
  EXPECT_EQ(c->password, "s/cret");
  EXPECT_EQ(c->params.at("endpoint"), "http://127.0.0.1:9000");
  EXPECT_EQ(c->Redacted(), "s3://lake/exports/2026 at http://127.0.0.1:9000");

  auto o = ParseConnection(json{{"url", "s3://lake"},
                                {"user", "AKID"},
                                {"password", "secret"},
                                {"sessionToken", "tok"},
                                {"endpoint", "https://s3.example"},
                                {"addressing", "virtual"}},
                           "target");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->session_token, "tok");
  EXPECT_EQ(o->params.at("addressing"), "virtual");
  EXPECT_EQ(o->Redacted().find("tok"), std::string::npos);
  EXPECT_EQ(o->Redacted().find("secret"), std::string::npos);

  EXPECT_FALSE(ParseConnectionUrl("s3:///prefix").ok()) << "no bucket";
  EXPECT_FALSE(ParseConnectionUrl("s3://lake:9000/x").ok()) << "the server goes in endpoint";
  EXPECT_FALSE(ParseConnectionUrl("s3://lake/x?addressing=sideways").ok());
  EXPECT_FALSE(ParseConnection(json{{"url", "postgres://h/db"}, {"sessionToken", "t"}}, "c").ok());
}

json Minimal() {
  return json{{"name", "s1"},
              {"source", "mysql://root@127.0.0.1/shop"},
              {"target", {{"url", "postgres://pg@127.0.0.1/x"}, {"password", "pw"}}}};
}

// Inline PEM (the web UI's upload) goes to private files while a connection is opened; paths
// pass through; the files are gone with the object.
TEST(Connection, InlinePemGoesToPrivateFiles) {
  SslSettings in;
  in.mode = "verify-full";
  in.ca = "/etc/ssl/ca.pem";
  in.key = "-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----\n";
  EXPECT_TRUE(IsInlinePem(in.key));
  EXPECT_FALSE(IsInlinePem(in.ca));
  std::string dir, key_path;
  {
    auto files = PemFiles::Write(in);
    ASSERT_TRUE(files.ok()) << files.status().ToString();
    PemFiles moved = std::move(files).value();  // moving keeps the files
    const SslSettings& out = moved.settings();
    EXPECT_EQ(out.mode, "verify-full");
    EXPECT_EQ(out.ca, "/etc/ssl/ca.pem");
    EXPECT_TRUE(out.cert.empty());
    key_path = out.key;
    ASSERT_NE(key_path, in.key);
    dir = std::filesystem::path(key_path).parent_path();
    std::ifstream f(key_path);
    std::stringstream text;
    text << f.rdbuf();
    EXPECT_EQ(text.str(), in.key);
    struct stat st {};
    ASSERT_EQ(::stat(key_path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
  }
  EXPECT_FALSE(std::filesystem::exists(key_path));
  EXPECT_FALSE(std::filesystem::exists(dir));
  // Nothing inline: no folder at all.
  in.key = "/etc/ssl/private/client.key";
  auto none = PemFiles::Write(in);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->settings().key, in.key);
}

TEST(StreamConfig, DefaultsAndFullForm) {
  auto c = ParseStreamConfig(Minimal());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // Bundles are sized by bytes unless the user caps the rows.
  EXPECT_EQ(c->bundle_size, 100'000u);
  EXPECT_EQ(c->bundle_bytes, 1u << 20);
  EXPECT_EQ(c->mode, StreamMode::kLoad);
  EXPECT_EQ(c->schema_policy, SchemaPolicy::kCreateMissing);
  ASSERT_EQ(c->tables.size(), 1u);
  EXPECT_EQ(c->tables[0].pattern, "*");
  EXPECT_EQ(c->target.password, "pw");

  json j = Minimal();
  j["mode"] = "load+cdc";
  j["tables"] = json::array(
      {"orders", json{{"name", "shop.items"}, {"columns", {"id", "sku"}}, {"filter", "id > 10"}}});
  j["exclude"] = {"shop.tmp_*"};
  j["dataBundleSize"] = 5000;
  j["dataBundleBytes"] = 65536;
  j["schemaPolicy"] = "drop_and_recreate";
  j["writeMode"] = "upsert";
  j["structure"] = {{"foreignKeys", false}};
  j["limits"] = {{"rows", 10}, {"seconds", 60}};
  j["compression"] = "zstd";
  auto f = ParseStreamConfig(j);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->mode, StreamMode::kLoadCdc);
  EXPECT_EQ(f->tables[1].columns.size(), 2u);
  EXPECT_EQ(f->tables[1].filter, "id > 10");
  EXPECT_FALSE(f->structure.foreign_keys);
  EXPECT_TRUE(f->structure.indexes);
  EXPECT_EQ(f->limits.elapsed.count(), 60);
  EXPECT_EQ(f->compression, Compression::kZstd);
  EXPECT_EQ(f->bundle_size, 5000u);
  EXPECT_EQ(f->bundle_bytes, 65536u);
}

TEST(StreamConfig, ErrorsNameTheField) {
  auto msg = [](json j) { return ParseStreamConfig(j).status().message(); };
  json j = Minimal();
  j["dataBundleSize"] = 0;
  EXPECT_EQ(msg(j), "dataBundleSize must be between 1 and 1000000 (got 0)");
  j = Minimal();
  j["dataBundleBytes"] = 100;
  EXPECT_EQ(msg(j), "dataBundleBytes must be between 4096 and 67108864 (got 100)");
  j = Minimal();
  j["writeMode"] = "overwrite";
  EXPECT_EQ(msg(j),
            "writeMode 'overwrite' is not one of: append, truncate_and_load, upsert, "
            "fail_if_not_empty");
  j = Minimal();
  j["tables"] = json::array({json{{"name", "t"}, {"columns", "id"}}});
  EXPECT_EQ(msg(j), "tables[0].columns must be an array of strings");
  j = Minimal();
  j["bundleSize"] = 10;
  EXPECT_NE(msg(j).find("bundleSize is not a known field"), std::string::npos);
  j = Minimal();
  j["name"] = "bad name; drop";
  EXPECT_NE(msg(j).find("name is required"), std::string::npos);
  j = Minimal();
  j.erase("target");
  EXPECT_EQ(msg(j), "target is required");
  j = Minimal();
  j["source"] = {{"url", "mysql://h/db"}, {"ssl", {{"mode", "maybe"}}}};
  EXPECT_EQ(msg(j), "source.ssl.mode 'maybe' is not a known mode");
}

TEST(StreamConfig, TablePatterns) {
  EXPECT_TRUE(MatchTablePattern("*", "shop", "orders", "shop"));
  EXPECT_FALSE(MatchTablePattern("*", "other", "orders", "shop"));
  EXPECT_TRUE(MatchTablePattern("*.*", "other", "orders", "shop"));
  EXPECT_TRUE(MatchTablePattern("shop.ord*", "shop", "orders", "x"));
  EXPECT_TRUE(MatchTablePattern("shop.order?", "shop", "orders", "x"));
  EXPECT_FALSE(MatchTablePattern("shop.order?", "shop", "order", "x"));
  EXPECT_TRUE(MatchTablePattern("orders", "public", "orders", "public"));
}

}  // namespace
}  // namespace dbs

namespace dbs {
namespace {

TEST(StreamConfig, DocumentedExamplesParse) {
  for (const char* f : {"mysql-to-postgres.json", "postgres-to-postgres.json"}) {
    auto c = LoadStreamConfigFile(std::string(DBS_SOURCE_DIR) + "/docs/examples/" + f);
    EXPECT_TRUE(c.ok()) << f << ": " << c.status().ToString();
  }
  auto missing = LoadStreamConfigFile("/nonexistent/stream.json");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// Issue 11 (errors a user can act on): a syntax error names its line and column.
TEST(StreamConfig, SyntaxErrorNamesLineAndColumn) {
  const std::string text = "{\n  \"name\": \"s\",\n  \"mode\": \"load\"\n  \"tables\": []\n}\n";
  const std::string e = JsonSyntaxError("stream.json", text);
  EXPECT_NE(e.find("stream.json is not valid JSON: line 4, column "), std::string::npos) << e;
  EXPECT_NE(e.find("expected '}'"), std::string::npos) << e;
  const std::string end = JsonSyntaxError("s.json", "{\"name\": ");
  EXPECT_NE(end.find("line 1, column"), std::string::npos) << end;
}

}  // namespace
}  // namespace dbs

namespace dbs {
namespace {

TEST(StreamConfigTypeMapping, ParsedValidatedAndDefaultedLosslessly) {
  nlohmann::json base = {
      {"name", "s"}, {"source", "mysql://u@h/d"}, {"target", "postgres://u@h/d"}};
  auto d = ParseStreamConfig(base);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_FALSE(d->type_mapping.pg_jsonb);  // json keeps the text
  EXPECT_EQ(d->type_mapping, TypeMappingOptions{});

  nlohmann::json j = base;
  j["typeMapping"] = {{"pgJsonb", true},
                      {"mysqlTimeAsInterval", true},
                      {"pgUint64AsBigint", true},
                      {"crossDialectChecks", true},
                      {"mariadbNativeTypes", false},
                      {"pgInetAsInet6", true},
                      {"postgis", false},
                      {"mysqlTextCollation", "utf8mb4_nopad_bin"}};
  auto c = ParseStreamConfig(j);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const TypeMappingOptions& tm = c->type_mapping;
  EXPECT_TRUE(tm.pg_jsonb && tm.mysql_time_as_interval && tm.pg_uint64_as_bigint &&
              tm.cross_dialect_checks && tm.pg_inet_as_inet6);
  EXPECT_FALSE(tm.mariadb_native_types || tm.postgis);
  EXPECT_EQ(tm.mysql_text_collation, "utf8mb4_nopad_bin");

  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {{{"pg_jsonb", false}}, "typeMapping.pg_jsonb is not a known field"},
      {{{"cross_dialect_checks", true}}, "typeMapping.cross_dialect_checks is not a known field"},
      {{{"pgJsonb", "no"}}, "typeMapping.pgJsonb must be true or false"},
      {{{"mysqlTextCollation", "x; DROP"}}, "typeMapping.mysqlTextCollation"},
      {nlohmann::json::array(), "typeMapping must be an object"},
  };
  for (const auto& [tmj, want] : bad) {
    nlohmann::json b = base;
    b["typeMapping"] = tmj;
    auto r = ParseStreamConfig(b);
    ASSERT_FALSE(r.ok()) << tmj.dump();
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().ToString();
  }
}

}  // namespace
}  // namespace dbs

namespace dbs {
namespace {

// File sources: a selector's columnTypes and the stream's malformedRows, validated; neither
// applies to database sources.
TEST(StreamConfigFileSource, ColumnTypesAndMalformedRows) {
  json j = {{"name", "f"},
            {"source", "file:///data/in"},
            {"target", "postgres://u@h/db"},
            {"malformedRows", "skip"},
            {"tables", json::array({json{{"name", "orders"},
                                         {"columnTypes",
                                          {{"price", "DECIMAL(12,2)"},
                                           {"id", "BIGINT"},
                                           {"at", "TIMESTAMP WITH TIME ZONE"},
                                           {"tags", "VARCHAR[]"}}}},
                                    "other"})}};
  auto c = ParseStreamConfig(j);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->malformed_rows, MalformedRows::kSkip);
  ASSERT_EQ(c->tables.size(), 2u);
  EXPECT_EQ(c->tables[0].column_types.at("price"), "DECIMAL(12,2)");
  EXPECT_EQ(c->tables[0].column_types.size(), 4u);
  EXPECT_TRUE(c->tables[1].column_types.empty());
  j.erase("malformedRows");
  EXPECT_EQ(ParseStreamConfig(j)->malformed_rows, MalformedRows::kFail) << "the default";

  auto msg = [](json j) { return ParseStreamConfig(j).status().message(); };
  json bad = j;
  bad["malformedRows"] = "ignore";
  EXPECT_EQ(msg(bad), "malformedRows 'ignore' is not one of: fail, skip");
  for (const char* type : {"BIGINT); DROP TABLE x; --", "DECIMAL(12,2", "DECIMAL(a)", "",
                           "VARCHAR 'x'", "INT  EGER", "DECIMAL(12,2)) AS x, (1"}) {
    bad = j;
    bad["tables"][0]["columnTypes"]["price"] = type;
    EXPECT_NE(msg(bad).find("tables[0].columnTypes.price must be a DuckDB type name"),
              std::string::npos)
        << type;
  }
  bad = j;
  bad["tables"][0]["columnTypes"] = json::array({"price"});
  EXPECT_EQ(msg(bad), "tables[0].columnTypes must be an object of column name to type");
  bad = j;
  bad["source"] = "mysql://u@h/db";
  EXPECT_EQ(msg(bad), "tables[0].columnTypes applies to file sources only");
  bad["tables"] = json::array({"t"});
  bad["malformedRows"] = "skip";
  EXPECT_EQ(msg(bad), "malformedRows applies to file sources only");
  EXPECT_TRUE(ValidColumnType("DECIMAL( 38 , 10 )"));
  EXPECT_TRUE(ValidColumnType("double"));
  EXPECT_FALSE(ValidColumnType("DOUBLE[3"));
}

// File sources: a selector's csv dialect settings, each optional and validated.
TEST(StreamConfigFileSource, CsvDialectSettings) {
  json j = {{"name", "f"},
            {"source", "file:///data/in"},
            {"target", "postgres://u@h/db"},
            {"tables", json::array({json{{"name", "orders"},
                                         {"csv",
                                          {{"delimiter", ";"},
                                           {"quote", ""},
                                           {"escape", "\\"},
                                           {"header", false},
                                           {"nullString", "NA"},
                                           {"encoding", "ISO-8859-1"}}}},
                                    json{{"name", "t"}, {"csv", {{"delimiter", "\t"}}}}})}};
  auto c = ParseStreamConfig(j);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const CsvDialectSettings& d = c->tables[0].csv;
  EXPECT_EQ(d.delimiter, ";");
  EXPECT_EQ(d.quote, "");
  EXPECT_EQ(d.escape, "\\");
  EXPECT_EQ(d.header, false);
  EXPECT_EQ(d.null_string, "NA");
  EXPECT_EQ(d.encoding, "latin-1") << "spellings of ISO-8859-1 are one name";
  EXPECT_EQ(c->tables[1].csv.delimiter, "\t");
  EXPECT_FALSE(c->tables[1].csv.header.has_value()) << "unset: sniffed";

  auto msg = [](json j) { return ParseStreamConfig(j).status().message(); };
  // field, value, the start of the error.
  const std::vector<std::tuple<std::string, json, std::string>> cases = {
      {"delimiter", ";;", "tables[0].csv.delimiter must be one character"},
      {"delimiter", "", "tables[0].csv.delimiter must be one character"},
      {"quote", "\n", "tables[0].csv.quote cannot be a line break"},
      {"quote", ";", "tables[0].csv: the delimiter and the quote must differ"},
      {"header", "no", "tables[0].csv.header must be true or false"},
      {"encoding", "cp1252", "tables[0].csv.encoding must be \"utf-8\", \"utf-16\" or \"latin-1\""},
      {"sep", ",", "tables[0].csv.sep is not a known field"},
      {"escape", ";", "tables[0].csv: the delimiter and the escape must differ"},
      {"quote", "\x01", "tables[0].csv.quote must be a printable character or a tab"},
  };
  for (const auto& [field, value, error] : cases) {
    json bad = j;
    bad["tables"][0]["csv"][field] = value;
    EXPECT_EQ(msg(bad).rfind(error, 0), 0u) << field << ": " << msg(bad);
  }
  json bad = j;
  bad["tables"][0]["csv"] = ";";
  EXPECT_NE(msg(bad).find("tables[0].csv must be an object"), std::string::npos);
  bad = j;
  bad["source"] = "mysql://u@h/db";
  EXPECT_EQ(msg(bad), "tables[0].csv applies to file sources only");
}

// File sources: a selector's `files` glob, relative to the source and for one named table.
TEST(StreamConfigFileSource, FilesGlob) {
  json j = {
      {"name", "f"},
      {"source", "file:///data/in"},
      {"target", "postgres://u@h/db"},
      {"tables", json::array({json{{"name", "events"}, {"files", "events/2026-*/*.parquet"}}})}};
  auto c = ParseStreamConfig(j);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->tables[0].files, "events/2026-*/*.parquet");
  auto msg = [](json j) { return ParseStreamConfig(j).status().message(); };
  for (const char* bad : {"/abs/*.csv", "../up/*.csv", "a/../b.csv", "./a.csv", "a//b.csv", "a/"}) {
    json b = j;
    b["tables"][0]["files"] = bad;
    EXPECT_NE(msg(b).find("tables[0].files must be a path relative to the source"),
              std::string::npos)
        << bad << ": " << msg(b);
  }
  json b = j;
  b["tables"][0]["name"] = "ev*";
  EXPECT_EQ(msg(b), "tables[0]: files needs a plain table name and no query");
  b = j;
  b["source"] = "mysql://u@h/db";
  EXPECT_EQ(msg(b), "tables[0].files applies to file sources only");
}

}  // namespace
}  // namespace dbs

// Which source tables a stream selects (issue 11, errors a user can act on): names without a
// schema mean the source's default schema; other schemas (PostgreSQL) and other databases
// (MySQL/MariaDB, as browsing shows them) are selected with 'schema.table', 'schema.*' or
// '*.*', several in one stream; a selection that matches nothing says why and what is there.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "config/stream_config.h"
#include "run/local_run.h"
#include "support/servers.h"
#include "support/subprocess.h"

namespace dbs {
namespace {

using nlohmann::json;

class SelectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pg = testing::SharedServers::Postgres();
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    pg_ = *pg;
    auto my = testing::SharedServers::MariaDb();
    ASSERT_TRUE(my.ok()) << my.status().ToString();
    my_ = *my;
    dir_ = std::string(testing::kTestRoot) + "/selection-" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Result<RunSummary> Run(const std::string& name, const std::string& src, const std::string& dst,
                         const json& tables) {
    auto c =
        ParseStreamConfig({{"name", name}, {"source", src}, {"target", dst}, {"tables", tables}});
    if (!c.ok()) return c.status();
    LocalRunOptions o;
    o.writers = 1;
    o.data_dir = dir_;
    return RunLocal(*c, o, nullptr);
  }
  std::string Pg(const std::string& db) {
    EXPECT_TRUE(pg_->Exec("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)").ok());
    EXPECT_TRUE(pg_->CreateDatabase(db).ok());
    return pg_->UrlFor(db);
  }

  testing::PostgresServer* pg_ = nullptr;
  testing::MariaDbServer* my_ = nullptr;
  std::string dir_;
};

TEST_F(SelectionTest, PostgresSchemasBeyondPublic) {
  const std::string src = Pg("sel_pg_src");
  ASSERT_TRUE(pg_->Exec("CREATE SCHEMA inv; CREATE SCHEMA hr;"
                        "CREATE TABLE inv.item (id int PRIMARY KEY, v text);"
                        "CREATE TABLE hr.person (id int PRIMARY KEY, v text);"
                        "INSERT INTO inv.item VALUES (1, 'a'), (2, 'b');"
                        "INSERT INTO hr.person VALUES (1, 'x')",
                        "sel_pg_src")
                  .ok());
  // "*" means public, which is empty here: the error says so and lists what there is.
  auto none = Run("sel-none", src, Pg("sel_pg_dst0"), {"*"});
  ASSERT_FALSE(none.ok());
  const std::string msg = none.status().message();
  EXPECT_NE(msg.find("default schema 'public'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'schema.*' or '*.*'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("hr (1), inv (1)"), std::string::npos) << msg;
  // Two schemas in one stream.
  auto both = Run("sel-both", src, Pg("sel_pg_dst1"), {"inv.*", "hr.person"});
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  ASSERT_EQ(both->verdicts.size(), 2u);
  for (const auto& v : both->verdicts) EXPECT_TRUE(v.match()) << v.source_table;
  auto all = Run("sel-all", src, Pg("sel_pg_dst2"), {"*.*"});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->verdicts.size(), 2u);
}

TEST_F(SelectionTest, MysqlDatabasesBeyondTheConnections) {
  ASSERT_TRUE(my_->Exec("DROP DATABASE IF EXISTS sel_a; DROP DATABASE IF EXISTS sel_b;"
                        "CREATE DATABASE sel_a; CREATE DATABASE sel_b;"
                        "CREATE TABLE sel_a.t1 (id INT PRIMARY KEY, v TEXT);"
                        "CREATE TABLE sel_b.t2 (id INT PRIMARY KEY, v TEXT);"
                        "INSERT INTO sel_a.t1 VALUES (1, 'one');"
                        "INSERT INTO sel_b.t2 VALUES (1, 'uno'), (2, 'dos')")
                  .ok());
  // The connection names sel_a; sel_b's table is selected by its qualified name, as browsing
  // lists it.
  auto r = Run("sel-my", my_->url() + "sel_a", Pg("sel_my_dst"), {"t1", "sel_b.t2"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->verdicts.size(), 2u);
  for (const auto& v : r->verdicts) EXPECT_TRUE(v.match()) << v.source_table;
  auto rows = pg_->Query("SELECT count(*) FROM sel_b.t2", "sel_my_dst");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ((*rows)[0][0].value_or(""), "2");
}

}  // namespace
}  // namespace dbs

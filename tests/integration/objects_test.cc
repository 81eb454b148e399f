// Every schema object accounted for (issue 11 §5), with real servers: a DVD-rental-style sample
// of our own for each engine (tests/integration/sql/*_objects.sql) with views, routines,
// triggers, sequences, a partitioned table, inheritance, policies, an extension type and a
// domain, copied in all four directions. Same engine: every object arrives and works, with its
// values (sequences, AUTO_INCREMENT counters). Across engines: the whole sample migrates
// (defaults and foreign-key actions MySQL refuses are translated or dropped with a warning),
// and the report names every object that is not migrated, with the reason. `dbstreams plan`
// says all of it before anything is written, and writes nothing. A target that lacks an
// extension the tables need, and may not create it, fails before anything is written.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "config/stream_config.h"
#include "run/local_run.h"
#include "run/plan.h"
#include "support/servers.h"

namespace dbs {
namespace {

using nlohmann::json;
using testing::MariaDbServer;
using testing::PostgresServer;
using testing::SharedServers;

std::string SqlFile(const std::string& name) {
  std::ifstream f(std::string(DBS_SOURCE_DIR) + "/tests/integration/sql/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class ObjectsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = SharedServers::MariaDb();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    auto p = SharedServers::Postgres();
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    // The two samples, loaded once.
    ASSERT_TRUE((*p)->Exec("DROP DATABASE IF EXISTS obj_pg WITH (FORCE)").ok());
    ASSERT_TRUE((*p)->CreateDatabase("obj_pg").ok());
    Status s = (*p)->Exec(SqlFile("pg_objects.sql"), "obj_pg");
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE((*m)->Exec("DROP DATABASE IF EXISTS obj_my; CREATE DATABASE obj_my CHARACTER SET "
                           "utf8mb4 COLLATE utf8mb4_bin")
                    .ok());
    s = (*m)->Exec("SET SESSION sql_mode = 'STRICT_ALL_TABLES'; " + SqlFile("mariadb_objects.sql"),
                   "obj_my");
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  void SetUp() override {
    maria_ = *SharedServers::MariaDb();
    pg_ = *SharedServers::Postgres();
    data_dir_ = std::filesystem::temp_directory_path() /
                ("dbstreams-objects-test-" + std::to_string(getpid()));
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
  std::string PgSource() { return pg_->UrlFor("obj_pg"); }
  std::string MariaSource() { return maria_->url() + "obj_my"; }

  StreamConfig Config(const std::string& name, const std::string& src, const std::string& dst,
                      json extra = json::object()) {
    json j = {{"name", name}, {"source", src}, {"target", dst}, {"tables", {"*"}}};
    for (auto& [k, v] : extra.items()) j[k] = v;
    auto c = ParseStreamConfig(j);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : StreamConfig{};
  }

  // Runs and expects success with every table verified equal; returns the summary.
  RunSummary RunExact(const StreamConfig& c) {
    LocalRunOptions o;
    o.writers = 2;
    o.data_dir = data_dir_.string();
    auto s = RunLocal(c, o, nullptr);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return RunSummary{};
    EXPECT_FALSE(s->verdicts.empty());
    for (const TableVerdict& v : s->verdicts) EXPECT_TRUE(v.match()) << v.Describe();
    return *s;
  }

  std::string PgOne(const std::string& db, const std::string& sql) {
    auto r = pg_->Query(sql, db);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    if (!r.ok() || r->empty() || (*r)[0].empty()) return "<none>";
    return (*r)[0][0].value_or("NULL");
  }
  std::string MariaOne(const std::string& db, const std::string& sql) {
    auto r = maria_->Query(sql, db);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    if (!r.ok() || r->empty() || (*r)[0].empty()) return "<none>";
    return (*r)[0][0].value_or("NULL");
  }

  static const ObjectOutcome* Find(const RunPlan& report, ObjectKind kind,
                                   const std::string& source) {
    for (const ObjectOutcome& o : report.objects) {
      if (o.kind == kind && o.source == source) return &o;
    }
    return nullptr;
  }
  // Every object in the report is migrated except those listed (kind name + " " + source).
  static void ExpectOnlyNotMigrated(const RunPlan& report, std::vector<std::string> expected) {
    std::vector<std::string> missing;
    for (const ObjectOutcome& o : report.objects) {
      if (o.migrated) continue;
      const std::string id = std::string(ObjectKindName(o.kind)) + " " + o.source;
      missing.push_back(id);
      EXPECT_FALSE(o.reason.empty()) << id << " has no reason";
    }
    std::sort(missing.begin(), missing.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(missing, expected) << FormatPlan(report, false);
  }

  MariaDbServer* maria_ = nullptr;
  PostgresServer* pg_ = nullptr;
  std::filesystem::path data_dir_;
};

TEST_F(ObjectsTest, PostgresToPostgresMigratesEveryObjectWithItsValues) {
  const std::string dst = NewPostgres("obj_p2p");
  // The target database has no citext: the run creates it before any table.
  ASSERT_EQ(PgOne("obj_p2p", "SELECT count(*) FROM pg_extension WHERE extname = 'citext'"), "0");
  RunSummary s =
      RunExact(Config("obj-p2p", PgSource(), dst, {{"schemaPolicy", "drop_and_recreate"}}));
  ExpectOnlyNotMigrated(s.report, {"domain public.year"});
  const std::string db = "obj_p2p";
  // Views (one on another), with the source's rows; the materialized view populated.
  EXPECT_EQ(PgOne(db,
                  "SELECT string_agg(actor_id || ':' || films, ',' ORDER BY actor_id) FROM "
                  "actor_info"),
            "1:2,2:1,3:2");
  EXPECT_EQ(PgOne(db, "SELECT count(*) FROM busy_actors"), "2");
  EXPECT_EQ(PgOne(db, "SELECT obj_description('actor_info'::regclass, 'pg_class')"),
            "actors and how many films they are in");
  EXPECT_EQ(PgOne(db, "SELECT sum(films) FROM rental_by_rating"), "4");
  // Routines: a set-returning SQL function, a procedure, an aggregate.
  EXPECT_EQ(PgOne(db, "SELECT string_agg(x::text, ',' ORDER BY x) FROM film_in_stock(1) x"), "1,2");
  EXPECT_EQ(PgOne(db,
                  "SELECT count(*) FROM pg_proc WHERE proname = 'bump_rates' AND prokind = "
                  "'p'"),
            "1");
  EXPECT_EQ(PgOne(db, "SELECT group_concat(name::text ORDER BY language_id) FROM language"),
            PgOne("obj_pg", "SELECT group_concat(name::text ORDER BY language_id) FROM language"));
  // Triggers fire (created after the load, so the loaded values are the source's).
  EXPECT_EQ(PgOne(db, "SELECT count(*) FROM pg_trigger WHERE tgname = 'last_updated'"), "2");
  ASSERT_TRUE(pg_->Exec("UPDATE film SET last_update = '2000-01-01' WHERE film_id = 1", db).ok());
  EXPECT_EQ(PgOne(db, "SELECT last_update > '2001-01-01' FROM film WHERE film_id = 1"), "t");
  // Sequences: the standalone one and the serial/identity ones continue where the source is.
  EXPECT_EQ(PgOne(db, "SELECT nextval('invoice_no')"), "1014");
  EXPECT_EQ(PgOne(db, "INSERT INTO language (name) VALUES ('German') RETURNING language_id"), "5");
  EXPECT_EQ(
      PgOne(db, "INSERT INTO actor (first_name, last_name) VALUES ('A', 'B') RETURNING actor_id"),
      "5");
  // The partitioned table is partitioned, each row in the same partition as at the source.
  EXPECT_EQ(PgOne(db, "SELECT relkind FROM pg_class WHERE relname = 'payment'"), "p");
  const std::string parts =
      "SELECT string_agg(p || '=' || n, ',' ORDER BY p) FROM (SELECT tableoid::regclass::text p, "
      "count(*) n FROM payment GROUP BY tableoid) x";
  EXPECT_EQ(PgOne(db, parts), PgOne("obj_pg", parts));
  // Autovacuum, off on the partitions while the load filled them, is back on.
  EXPECT_EQ(PgOne(db,
                  "SELECT count(*) FILTER (WHERE c.reloptions IS NULL) || '/' || count(*) FROM "
                  "pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                  "WHERE i.inhparent = 'payment'::regclass"),
            PgOne(db,
                  "SELECT count(*) || '/' || count(*) FROM pg_inherits "
                  "WHERE inhparent = 'payment'::regclass"));
  // Inheritance: the parent's SELECT returns the child's rows again.
  EXPECT_EQ(PgOne(db, "SELECT count(*) FROM city"), "3");
  EXPECT_EQ(PgOne(db, "SELECT count(*) FROM ONLY city"), "2");
  // The policy and row-level security; the extension type; the domain's base type.
  EXPECT_EQ(PgOne(db, "SELECT relrowsecurity FROM pg_class WHERE relname = 'customer'"), "t");
  EXPECT_EQ(PgOne(db, "SELECT count(*) FROM pg_policy WHERE polname = 'customer_self'"), "1");
  EXPECT_EQ(PgOne(db,
                  "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE "
                  "attrelid = 'film'::regclass AND attname = 'tag'"),
            "citext");
  EXPECT_EQ(PgOne(db, "SELECT count(*) FROM film WHERE tag = 'CLASSIC'"), "2");
  const ObjectOutcome* domain = Find(s.report, ObjectKind::kDomain, "public.year");
  ASSERT_NE(domain, nullptr);
  EXPECT_NE(domain->reason.find("base type"), std::string::npos) << domain->reason;

  // A second run replaces every object (drop_and_recreate) and reports the same.
  RunSummary again =
      RunExact(Config("obj-p2p", PgSource(), dst, {{"schemaPolicy", "drop_and_recreate"}}));
  ExpectOnlyNotMigrated(again.report, {"domain public.year"});
  EXPECT_EQ(PgOne(db, "SELECT count(*) FROM busy_actors"), "2");
}

TEST_F(ObjectsTest, PostgresToMariaDbMigratesTheWholeSampleAndReportsWhatItCannot) {
  const std::string dst = NewMariaDb("obj_p2m");
  RunSummary s = RunExact(Config("obj-p2m", PgSource(), dst));
  // Defaults PostgreSQL evaluates at insert time work the same ('now'::text::date).
  ASSERT_TRUE(
      maria_
          ->Exec("INSERT INTO customer (customer_id, first_name, language_id) VALUES (9, 'x', 1)",
                 "obj_p2m")
          .ok());
  EXPECT_EQ(MariaOne("obj_p2m",
                     "SELECT create_date = CURRENT_DATE FROM customer WHERE "
                     "customer_id = 9"),
            "1");
  // SET NULL on a NOT NULL column became NO ACTION, and says so.
  bool warned = false;
  for (const TablePlanEntry& t : s.report.tables) {
    for (const std::string& w : t.ddl.warnings) warned = warned || w.find("SET NULL") != w.npos;
  }
  EXPECT_TRUE(warned) << FormatPlan(s.report, false);
  // Generators continue where the source is.
  EXPECT_EQ(MariaOne("obj_p2m",
                     "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE "
                     "TABLE_SCHEMA = 'obj_p2m' AND TABLE_NAME = 'language'"),
            "5");
  // Everything that does not translate is named with the reason.
  ExpectOnlyNotMigrated(
      s.report,
      {"extension public.citext", "domain public.year", "sequence public.invoice_no",
       "function public.last_updated()", "function public.film_in_stock(p_film_id integer)",
       "procedure public.bump_rates(IN pct numeric)", "aggregate public.group_concat(text)",
       "view public.actor_info", "view public.busy_actors",
       "materialized view public.rental_by_rating", "trigger public.film.last_updated",
       "trigger public.actor.last_updated", "policy public.customer.customer_self",
       "partitioning public.payment", "inheritance public.capital_city inherits public.city"});
  const ObjectOutcome* view = Find(s.report, ObjectKind::kView, "public.actor_info");
  ASSERT_NE(view, nullptr);
  EXPECT_NE(view->reason.find("not translated"), std::string::npos) << view->reason;
  EXPECT_NE(view->definition.find("CREATE VIEW"), std::string::npos) << view->definition;
}

TEST_F(ObjectsTest, MariaDbToMariaDbMigratesEveryObjectWithItsValues) {
  const std::string dst = NewMariaDb("obj_m2m");
  RunSummary s = RunExact(Config("obj-m2m", MariaSource(), dst));
  ExpectOnlyNotMigrated(s.report, {});
  const std::string db = "obj_m2m";
  EXPECT_EQ(MariaOne(db,
                     "SELECT group_concat(concat(actor_id, ':', films) ORDER BY actor_id) "
                     "FROM actor_info"),
            "1:2,2:1,3:2");
  EXPECT_EQ(MariaOne(db, "SELECT count(*) FROM busy_actors"), "2");
  EXPECT_EQ(MariaOne(db, "SELECT film_count(1)"), "2");
  EXPECT_EQ(MariaOne(db,
                     "SELECT count(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = "
                     "'obj_m2m' AND ROUTINE_NAME = 'bump_rates'"),
            "1");
  EXPECT_EQ(MariaOne(db,
                     "SELECT STATUS FROM information_schema.EVENTS WHERE EVENT_SCHEMA = "
                     "'obj_m2m'"),
            "DISABLED");
  // The triggers fire on new rows (and did not during the load: film_text has its 4 rows).
  EXPECT_EQ(MariaOne(db, "SELECT count(*) FROM film_text"), "4");
  ASSERT_TRUE(
      maria_->Exec("INSERT INTO film (title, language_id) VALUES ('NEW FILM', 1)", db).ok());
  EXPECT_EQ(MariaOne(db, "SELECT film_id FROM film_text WHERE title = 'NEW FILM'"), "5");
  // Partitions and counters as at the source.
  EXPECT_EQ(MariaOne(db,
                     "SELECT count(*) FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA "
                     "= 'obj_m2m' AND TABLE_NAME = 'rental' AND PARTITION_NAME IS NOT NULL"),
            "3");
  for (const char* part : {"p2021", "p2022", "pmax"}) {
    const std::string q = std::string("SELECT count(*) FROM rental PARTITION (") + part + ")";
    EXPECT_EQ(MariaOne(db, q), MariaOne("obj_my", q)) << part;
  }
  ASSERT_TRUE(maria_->Exec("INSERT INTO language (name) VALUES ('German')", db).ok());
  EXPECT_EQ(MariaOne(db, "SELECT language_id FROM language WHERE name = 'German'"), "5");
  EXPECT_EQ(MariaOne(db, "SELECT NEXTVAL(invoice_seq)"), "110");
}

TEST_F(ObjectsTest, MariaDbToPostgresReportsWhatItCannotTranslate) {
  const std::string dst = NewPostgres("obj_m2p");
  RunSummary s = RunExact(Config("obj-m2p", MariaSource(), dst, {{"targetSchema", "public"}}));
  ExpectOnlyNotMigrated(s.report, {"view obj_my.actor_info", "view obj_my.busy_actors",
                                   "trigger obj_my.film.ins_film", "trigger obj_my.film.upd_film",
                                   "function obj_my.film_count", "procedure obj_my.bump_rates",
                                   "event obj_my.nightly_cleanup", "sequence obj_my.invoice_seq",
                                   "partitioning obj_my.rental"});
  // The AUTO_INCREMENT counter carried over to the identity.
  EXPECT_EQ(PgOne("obj_m2p", "INSERT INTO language (name) VALUES ('German') RETURNING language_id"),
            "5");
}

TEST_F(ObjectsTest, PlanSaysEverythingAndWritesNothing) {
  const std::string dst = NewMariaDb("obj_plan");
  auto plan = PlanStream(Config("obj-plan", PgSource(), dst));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const std::string text = FormatPlan(*plan, /*ddl=*/true);
  // Per table: the target, the action, the DDL, the row estimate.
  EXPECT_NE(text.find("public.film -> obj_plan.film: create"), std::string::npos) << text;
  EXPECT_NE(text.find("CREATE TABLE `obj_plan`.`film`"), std::string::npos) << text;
  // Lossy decisions and objects not migrated.
  EXPECT_NE(text.find("SET NULL"), std::string::npos) << text;
  EXPECT_NE(text.find("NOT MIGRATED view public.actor_info"), std::string::npos) << text;
  const json j = ToJson(*plan);
  EXPECT_EQ(j["tables"].size(), 8u) << j.dump(2);
  // Nothing was written: no table, no bookkeeping row (other tests' runs share the server).
  EXPECT_EQ(MariaOne("obj_plan",
                     "SELECT count(*) FROM information_schema.TABLES WHERE "
                     "TABLE_SCHEMA = 'obj_plan'"),
            "0");
  auto kept = maria_->Query(
      "SELECT count(*) FROM `_dbstreams`.`state` WHERE `stream` LIKE "
      "'obj-plan.%'");
  if (kept.ok()) {
    EXPECT_EQ((*kept)[0][0].value_or(""), "0");
  }
  // The run then reports what the plan said.
  RunSummary s = RunExact(Config("obj-plan", PgSource(), dst));
  EXPECT_EQ(ToJson(s.report)["objects"], j["objects"]);
}

TEST_F(ObjectsTest, MissingExtensionFailsBeforeAnythingIsWritten) {
  const std::string db = "obj_noext";
  NewPostgres(db);
  // A target role that may not create the extension (no CREATE on the database).
  ASSERT_TRUE(pg_->Exec("DO $$BEGIN CREATE ROLE obj_writer LOGIN PASSWORD 'obj-pw'; EXCEPTION "
                        "WHEN duplicate_object THEN NULL; END$$; "
                        "GRANT CONNECT ON DATABASE obj_noext TO obj_writer")
                  .ok());
  ASSERT_TRUE(pg_->Exec("REVOKE CREATE ON DATABASE obj_noext FROM PUBLIC; GRANT USAGE, CREATE ON "
                        "SCHEMA public TO obj_writer",
                        db)
                  .ok());
  const std::string dst =
      "postgres://obj_writer:obj-pw@127.0.0.1:" + std::to_string(pg_->port()) + "/" + db;
  LocalRunOptions o;
  o.writers = 1;
  o.data_dir = data_dir_.string();
  auto r =
      RunLocal(Config("obj-noext", PgSource(), dst, {{"tables", {"public.film"}}}), o, nullptr);
  ASSERT_FALSE(r.ok());
  const std::string msg = r.status().ToString();
  EXPECT_NE(msg.find("citext"), std::string::npos) << msg;
  EXPECT_NE(msg.find("public.film.tag"), std::string::npos) << msg;
  EXPECT_EQ(PgOne(db,
                  "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = "
                  "c.relnamespace WHERE n.nspname NOT IN ('pg_catalog', "
                  "'information_schema', 'pg_toast')"),
            "0");
}

}  // namespace
}  // namespace dbs

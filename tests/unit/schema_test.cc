#include "core/schema.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace dbs {
namespace {

Column Col(const char* name, const char* source_type, LogicalType type) {
  Column c;
  c.name = name;
  c.source_type = source_type;
  c.type = type;
  return c;
}

TableSchema Sample() {
  TableSchema t;
  t.schema = "shop";
  t.name = "orders";
  Column id = Col("id", "bigint unsigned", LogicalType::kUInt64);
  id.nullable = false;
  id.auto_increment = true;
  Column status = Col("status", "enum('new','paid')", LogicalType::kEnum);
  status.enum_values = {"new", "paid"};
  status.default_expr = "'new'";
  status.charset = "utf8mb4";
  status.collation = "utf8mb4_unicode_ci";
  Column amount = Col("amount", "decimal(12,2)", LogicalType::kDecimal);
  amount.precision = 12;
  amount.scale = 2;
  Column tags = Col("tags", "text[]", LogicalType::kArray);
  tags.element_type = LogicalType::kText;
  Column total = Col("total", "decimal(14,2)", LogicalType::kDecimal);
  total.generated_expr = "amount * 1.2";
  total.generated_stored = true;
  Column changed = Col("changed", "datetime(6)", LogicalType::kTimestamp);
  changed.default_expr = "CURRENT_TIMESTAMP(6)";
  changed.on_update = "CURRENT_TIMESTAMP(6)";
  t.columns = {id, status, amount, tags, total, changed};
  t.primary_key = {"id"};
  Index ix;
  ix.name = "ix_status";
  ix.method = "btree";
  IndexColumn ic;
  ic.name = "status";
  ic.descending = true;
  ix.columns = {ic};
  t.indexes = {ix};
  ForeignKey fk;
  fk.name = "fk_c";
  fk.columns = {"id"};
  fk.ref_schema = "shop";
  fk.ref_table = "customers";
  fk.ref_columns = {"id"};
  fk.on_delete = "CASCADE";
  t.foreign_keys = {fk};
  CheckConstraint ck;
  ck.name = "ck_amount";
  ck.expression = "amount >= 0";
  t.checks = {ck};
  t.estimated_rows = 1234;
  return t;
}

TEST(Schema, JsonRoundTrip) {
  TableSchema t = Sample();
  auto back = TableFromJson(nlohmann::json::parse(ToJson(t).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, t);
  EXPECT_EQ(t.QualifiedName(), "shop.orders");
  EXPECT_EQ(t.FindColumn("amount"), 2);
  EXPECT_EQ(t.FindColumn("nope"), -1);
}

TEST(Schema, ErrorsNameTheField) {
  nlohmann::json j = ToJson(Sample());
  j["columns"][1]["type"] = "varchar";
  auto r = TableFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "table.columns[1].type unknown type 'varchar'");

  j = ToJson(Sample());
  j["columns"][0]["length"] = -3;
  EXPECT_EQ(TableFromJson(j).status().message(),
            "table.columns[0].length must be a non-negative integer");

  j = ToJson(Sample());
  j["primaryKey"] = {"ghost"};
  EXPECT_EQ(TableFromJson(j).status().message(), "table.primaryKey names unknown column 'ghost'");

  j = ToJson(Sample());
  j["columns"][3].erase("elementType");
  EXPECT_FALSE(TableFromJson(j).ok());

  EXPECT_FALSE(TableFromJson(nlohmann::json::array()).ok());
  EXPECT_FALSE(TableFromJson(nlohmann::json{{"name", "t"}}).ok());  // no columns
}

}  // namespace
}  // namespace dbs

// Reads a SELECT's syntax tree (DuckDB's json_serialize_sql output) to find the source tables
// it names and the simple WHERE conditions that may be sent to a source.
//
// Contract:
//  - CollectTables: every table reference `alias.schema.table` or `alias.table` whose first
//    part is one of `aliases` (case-insensitive), with how often it is referenced.
//  - CollectPredicates: for each SELECT in the tree (subqueries and CTEs included), the
//    top-level AND parts of its WHERE clause that are a comparison (=, <>, <, <=, >, >=) of a
//    column with a non-NULL constant, IN with constants, IS [NOT] NULL or BETWEEN constants,
//    on a column of one source table in that SELECT's FROM (named through its alias, or
//    unqualified when the FROM holds that table alone). IS NULL is left out for a table on the
//    NULL-extended side of an outer join (it would let rows through that the join removes);
//    the other forms reject NULLs, so sending them to either side only drops rows the WHERE
//    would drop. The same forms are taken from JOIN ... ON conditions, with qualified columns:
//    an inner join's for tables on either side, a LEFT join's for the right side only (a RIGHT
//    join's for the left), which is exactly the rows the join can match. `has_column` tells
//    whether a table has a column (so a name that belongs to an outer query is never taken for
//    the table's).
//  - The statement DuckDB runs is never changed: DuckDB applies every condition again, so a
//    predicate sent to a source only narrows what is read.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dbs::federated {

// A source table as the statement names it; parts lower-cased for matching.
struct TableKey {
  std::string alias;
  std::string schema;  // empty: the source's default schema (`alias.table`)
  std::string table;
  friend auto operator<=>(const TableKey&, const TableKey&) = default;
};

struct TableName {
  TableKey key;
  // As written in the statement (source names are case-sensitive).
  std::string schema_as_written;
  std::string table_as_written;
  int references = 0;
};

struct Predicate {
  enum class Kind { kCompare, kIn, kIsNull, kIsNotNull };
  Kind kind = Kind::kCompare;
  std::string column;                  // as written
  std::string op;                      // kCompare: "=", "<>", "<", "<=", ">", ">="
  std::vector<nlohmann::json> values;  // DuckDB constant values ({"type": {...}, "value": ...})
};

// Tables by key, in first-seen order of keys.
std::vector<TableName> CollectTables(const nlohmann::json& ast,
                                     const std::set<std::string>& aliases);

std::map<TableKey, std::vector<Predicate>> CollectPredicates(
    const nlohmann::json& ast, const std::set<std::string>& aliases,
    const std::function<bool(const TableKey&, const std::string& column)>& has_column);

std::string Lower(std::string s);

}  // namespace dbs::federated

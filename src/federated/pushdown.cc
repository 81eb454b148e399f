#include "federated/pushdown.h"

#include <algorithm>
#include <cctype>
#include <optional>

namespace dbs::federated {

using nlohmann::json;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

namespace {

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The source table a BASE_TABLE reference names, if any.
std::optional<TableName> SourceTable(const json& ref, const std::set<std::string>& aliases) {
  const std::string catalog = Str(ref, "catalog_name");
  const std::string schema = Str(ref, "schema_name");
  const std::string table = Str(ref, "table_name");
  TableName t;
  if (!catalog.empty()) {
    if (!aliases.count(Lower(catalog))) return std::nullopt;
    t.key = {Lower(catalog), Lower(schema), Lower(table)};
    t.schema_as_written = schema;
  } else if (!schema.empty()) {
    if (!aliases.count(Lower(schema))) return std::nullopt;
    t.key = {Lower(schema), "", Lower(table)};
  } else {
    return std::nullopt;
  }
  t.table_as_written = table;
  return t;
}

template <typename F>
void Walk(const json& j, const F& visit) {
  if (j.is_object()) {
    visit(j);
    for (const auto& [k, v] : j.items()) Walk(v, visit);
  } else if (j.is_array()) {
    for (const auto& v : j) Walk(v, visit);
  }
}

// A name visible in one SELECT's FROM, and the source table behind it (if any).
struct Binding {
  std::string name;  // lower-cased alias or table name
  std::optional<TableKey> table;
  bool nullable = false;  // on the NULL-extended side of an outer join
};

void Bindings(const json& ref, bool nullable, const std::set<std::string>& aliases,
              std::vector<Binding>* out) {
  if (!ref.is_object()) return;
  const std::string type = Str(ref, "type");
  if (type == "JOIN") {
    const std::string jt = Str(ref, "join_type");
    const std::string rt = Str(ref, "ref_type");
    const bool plain = rt == "REGULAR" || rt == "CROSS" || rt == "NATURAL";
    bool left_null = nullable, right_null = nullable;
    if (!plain || jt == "OUTER") {
      left_null = right_null = true;
    } else if (jt == "LEFT") {
      right_null = true;
    } else if (jt == "RIGHT") {
      left_null = true;
    } else if (jt != "INNER") {
      left_null = right_null = true;  // SEMI, ANTI, MARK, ...: be conservative
    }
    Bindings(ref["left"], left_null, aliases, out);
    Bindings(ref["right"], right_null, aliases, out);
    return;
  }
  Binding b;
  b.nullable = nullable;
  const std::string alias = Str(ref, "alias");
  if (type == "BASE_TABLE") {
    b.name = Lower(alias.empty() ? Str(ref, "table_name") : alias);
    if (auto t = SourceTable(ref, aliases)) b.table = t->key;
  } else {
    b.name = Lower(alias);
  }
  out->push_back(std::move(b));
}

const Binding* Resolve(const json& colref, const std::vector<Binding>& bindings,
                       std::string* column) {
  const json& names = colref["column_names"];
  if (!names.is_array()) return nullptr;
  if (names.size() == 1 && bindings.size() == 1) {
    *column = names[0].get<std::string>();
    return &bindings[0];
  }
  if (names.size() != 2) return nullptr;
  const std::string q = Lower(names[0].get<std::string>());
  const Binding* found = nullptr;
  for (const auto& b : bindings) {
    if (b.name != q) continue;
    if (found) return nullptr;  // ambiguous
    found = &b;
  }
  if (found) *column = names[1].get<std::string>();
  return found;
}

bool IsColumn(const json& e) { return Str(e, "class") == "COLUMN_REF"; }
bool IsConstant(const json& e) {
  return Str(e, "class") == "CONSTANT" && e.contains("value") && !e["value"].value("is_null", true);
}

std::optional<std::string> CompareOp(const std::string& type, bool flipped) {
  if (type == "COMPARE_EQUAL") return "=";
  if (type == "COMPARE_NOTEQUAL") return "<>";
  if (type == "COMPARE_LESSTHAN") return flipped ? ">" : "<";
  if (type == "COMPARE_GREATERTHAN") return flipped ? "<" : ">";
  if (type == "COMPARE_LESSTHANOREQUALTO") return flipped ? ">=" : "<=";
  if (type == "COMPARE_GREATERTHANOREQUALTO") return flipped ? "<=" : ">=";
  return std::nullopt;
}

}  // namespace

std::vector<TableName> CollectTables(const json& ast, const std::set<std::string>& aliases) {
  std::vector<TableName> out;
  Walk(ast, [&](const json& j) {
    if (j.contains("class") || Str(j, "type") != "BASE_TABLE") return;
    auto t = SourceTable(j, aliases);
    if (!t) return;
    for (auto& seen : out) {
      if (seen.key == t->key) {
        seen.references++;
        return;
      }
    }
    t->references = 1;
    out.push_back(std::move(*t));
  });
  return out;
}

namespace {

using HasColumn = std::function<bool(const TableKey&, const std::string&)>;

// Adds to *out the top-level AND parts of `cond` that may narrow one of `bindings`' source
// tables. `unqualified`: a bare column name may name the only binding's column.
void Extract(const json& cond, const std::vector<Binding>& bindings, bool unqualified,
             const HasColumn& has_column, std::map<TableKey, std::vector<Predicate>>* out_map) {
  auto& out = *out_map;
  if (!cond.is_object()) return;
  std::vector<const json*> parts;
  if (Str(cond, "type") == "CONJUNCTION_AND") {
    for (const auto& c : cond["children"]) parts.push_back(&c);
  } else {
    parts.push_back(&cond);
  }
  // The table and column a column reference resolves to, when it is a source table's.
  auto target = [&](const json& colref, std::string* column) -> const Binding* {
    if (!IsColumn(colref)) return nullptr;
    if (!unqualified && colref["column_names"].size() < 2) return nullptr;
    const Binding* b = Resolve(colref, bindings, column);
    if (!b || !b->table || !has_column(*b->table, *column)) return nullptr;
    return b;
  };
  for (const json* p : parts) {
    const std::string cls = Str(*p, "class");
    const std::string type = Str(*p, "type");
    std::string column;
    if (cls == "COMPARISON") {
      const json& l = (*p)["left"];
      const json& r = (*p)["right"];
      bool flipped = false;
      const Binding* b = nullptr;
      const json* constant = nullptr;
      if (IsConstant(r)) {
        b = target(l, &column);
        constant = &r;
      } else if (IsConstant(l)) {
        b = target(r, &column);
        constant = &l;
        flipped = true;
      }
      auto op = CompareOp(type, flipped);
      if (!b || !op) continue;
      out[*b->table].push_back({Predicate::Kind::kCompare, column, *op, {(*constant)["value"]}});
    } else if (cls == "OPERATOR" && type == "COMPARE_IN") {
      const json& ch = (*p)["children"];
      if (!ch.is_array() || ch.size() < 2) continue;
      const Binding* b = target(ch[0], &column);
      if (!b) continue;
      Predicate pr{Predicate::Kind::kIn, column, "", {}};
      bool all = true;
      for (size_t i = 1; i < ch.size() && all; ++i) {
        all = IsConstant(ch[i]);
        if (all) pr.values.push_back(ch[i]["value"]);
      }
      if (all) out[*b->table].push_back(std::move(pr));
    } else if (cls == "OPERATOR" &&
               (type == "OPERATOR_IS_NULL" || type == "OPERATOR_IS_NOT_NULL")) {
      const json& ch = (*p)["children"];
      if (!ch.is_array() || ch.size() != 1) continue;
      const Binding* b = target(ch[0], &column);
      if (!b) continue;
      if (type == "OPERATOR_IS_NULL") {
        if (b->nullable) continue;
        out[*b->table].push_back({Predicate::Kind::kIsNull, column, "", {}});
      } else {
        out[*b->table].push_back({Predicate::Kind::kIsNotNull, column, "", {}});
      }
    } else if (cls == "BETWEEN") {
      const json& in = (*p)["input"];
      const json& lo = (*p)["lower"];
      const json& hi = (*p)["upper"];
      if (!IsConstant(lo) || !IsConstant(hi)) continue;
      const Binding* b = target(in, &column);
      if (!b) continue;
      out[*b->table].push_back({Predicate::Kind::kCompare, column, ">=", {lo["value"]}});
      out[*b->table].push_back({Predicate::Kind::kCompare, column, "<=", {hi["value"]}});
    }
  }
}

}  // namespace

std::map<TableKey, std::vector<Predicate>> CollectPredicates(const json& ast,
                                                             const std::set<std::string>& aliases,
                                                             const HasColumn& has_column) {
  std::map<TableKey, std::vector<Predicate>> out;
  Walk(ast, [&](const json& node) {
    const std::string type = Str(node, "type");
    if (type == "SELECT_NODE") {
      // WHERE: on every table of the FROM.
      if (!node.contains("where_clause") || !node.contains("from_table")) return;
      std::vector<Binding> bindings;
      Bindings(node["from_table"], false, aliases, &bindings);
      Extract(node["where_clause"], bindings, true, has_column, &out);
    } else if (type == "JOIN" && !node.contains("class") && Str(node, "ref_type") == "REGULAR" &&
               node.contains("condition")) {
      // ON: an inner join's condition narrows either side; an outer join's only the side
      // whose rows it picks (LEFT: the right side). Qualified columns only.
      const std::string jt = Str(node, "join_type");
      std::vector<Binding> bindings;
      if (jt == "INNER" || jt == "RIGHT") Bindings(node["left"], false, aliases, &bindings);
      if (jt == "INNER" || jt == "LEFT") Bindings(node["right"], false, aliases, &bindings);
      Extract(node["condition"], bindings, false, has_column, &out);
    }
  });
  return out;
}

}  // namespace dbs::federated

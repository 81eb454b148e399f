#include "core/schema.h"

#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

namespace dbs {

using nlohmann::json;

std::string TableSchema::QualifiedName() const {
  return schema.empty() ? name : schema + "." + name;
}

int TableSchema::FindColumn(const std::string& n) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

namespace {

template <typename T>
void PutOpt(json* j, const char* key, const std::optional<T>& v) {
  if (v) (*j)[key] = *v;
}

json ColumnJson(const Column& c) {
  json j = {{"name", c.name},
            {"sourceType", c.source_type},
            {"type", LogicalTypeName(c.type)},
            {"nullable", c.nullable}};
  if (c.element_type != LogicalType::kNone) j["elementType"] = LogicalTypeName(c.element_type);
  PutOpt(&j, "default", c.default_expr);
  PutOpt(&j, "onUpdate", c.on_update);
  PutOpt(&j, "length", c.length);
  PutOpt(&j, "precision", c.precision);
  PutOpt(&j, "scale", c.scale);
  if (!c.charset.empty()) j["charset"] = c.charset;
  if (!c.collation.empty()) j["collation"] = c.collation;
  if (!c.enum_values.empty()) j["enumValues"] = c.enum_values;
  if (c.auto_increment) j["autoIncrement"] = true;
  if (c.generated_expr) {
    j["generated"] = {{"expression", *c.generated_expr}, {"stored", c.generated_stored}};
  }
  if (!c.comment.empty()) j["comment"] = c.comment;
  if (c.srid != 0) j["srid"] = c.srid;
  PutOpt(&j, "nextValue", c.next_value);
  return j;
}

// A reader over one JSON object that records the first error with its path.
class Fields {
 public:
  Fields(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) Fail("", "must be an object");
  }
  const Status& status() const { return status_; }

  void Str(const char* key, std::string* out, bool required = false) {
    const json* v = Find(key, required);
    if (!v) return;
    if (!v->is_string()) return Fail(key, "must be a string");
    *out = v->get<std::string>();
  }
  void OptStr(const char* key, std::optional<std::string>* out) {
    const json* v = Find(key, false);
    if (!v || v->is_null()) return;
    if (!v->is_string()) return Fail(key, "must be a string");
    *out = v->get<std::string>();
  }
  void Bool(const char* key, bool* out) {
    const json* v = Find(key, false);
    if (!v) return;
    if (!v->is_boolean()) return Fail(key, "must be true or false");
    *out = v->get<bool>();
  }
  template <typename T>
  void UInt(const char* key, T* out) {
    const json* v = Find(key, false);
    if (!v) return;
    if (!v->is_number_unsigned()) return Fail(key, "must be a non-negative integer");
    uint64_t u = v->get<uint64_t>();
    if (u > std::numeric_limits<T>::max()) return Fail(key, "is too large");
    *out = static_cast<T>(u);
  }
  void Int(const char* key, int64_t* out) {
    const json* v = Find(key, false);
    if (!v) return;
    if (!v->is_number_integer()) return Fail(key, "must be an integer");
    *out = v->get<int64_t>();
  }
  void OptInt(const char* key, std::optional<int64_t>* out) {
    if (!j_.is_object() || !j_.contains(key) || j_[key].is_null()) return;
    int64_t v = 0;
    Int(key, &v);
    *out = v;
  }
  template <typename T>
  void OptUInt(const char* key, std::optional<T>* out) {
    if (!j_.is_object() || !j_.contains(key) || j_[key].is_null()) return;
    T v{};
    UInt(key, &v);
    *out = v;
  }
  void Type(const char* key, LogicalType* out, bool required) {
    std::string name;
    Str(key, &name, required);
    if (name.empty()) return;
    auto t = LogicalTypeFromName(name);
    if (!t || *t == LogicalType::kNone) return Fail(key, "unknown type '" + name + "'");
    *out = *t;
  }
  void StrList(const char* key, std::vector<std::string>* out) {
    const json* v = Find(key, false);
    if (!v) return;
    if (!v->is_array()) return Fail(key, "must be an array of strings");
    for (const json& e : *v) {
      if (!e.is_string()) return Fail(key, "must be an array of strings");
      out->push_back(e.get<std::string>());
    }
  }
  // Calls fn(element, path) for each element of an array field.
  template <typename Fn>
  void Each(const char* key, Fn fn) {
    const json* v = Find(key, false);
    if (!v) return;
    if (!v->is_array()) return Fail(key, "must be an array");
    for (size_t i = 0; i < v->size() && status_.ok(); ++i) {
      Status s = fn((*v)[i], Path(key) + "[" + std::to_string(i) + "]");
      if (!s.ok()) status_ = s;
    }
  }
  const json* Find(const char* key, bool required) {
    if (!status_.ok() || !j_.is_object()) return nullptr;
    auto it = j_.find(key);
    if (it == j_.end()) {
      if (required) Fail(key, "is required");
      return nullptr;
    }
    return &*it;
  }
  void Fail(const std::string& key, const std::string& what) {
    if (status_.ok()) status_ = Status::InvalidArgument(Path(key) + " " + what);
  }
  std::string Path(const std::string& key) const { return key.empty() ? path_ : path_ + "." + key; }

 private:
  const json& j_;
  std::string path_;
  Status status_;
};

Status ParseColumn(const json& j, const std::string& path, Column* c) {
  Fields f(j, path);
  f.Str("name", &c->name, true);
  f.Str("sourceType", &c->source_type);
  f.Type("type", &c->type, true);
  if (f.Find("elementType", false)) f.Type("elementType", &c->element_type, false);
  f.Bool("nullable", &c->nullable);
  f.OptStr("default", &c->default_expr);
  f.OptStr("onUpdate", &c->on_update);
  f.OptUInt("length", &c->length);
  f.OptUInt("precision", &c->precision);
  f.OptUInt("scale", &c->scale);
  f.Str("charset", &c->charset);
  f.Str("collation", &c->collation);
  f.StrList("enumValues", &c->enum_values);
  f.Bool("autoIncrement", &c->auto_increment);
  if (const json* g = f.Find("generated", false)) {
    Fields gf(*g, f.Path("generated"));
    std::string expr;
    gf.Str("expression", &expr, true);
    gf.Bool("stored", &c->generated_stored);
    DBS_RETURN_IF_ERROR(gf.status());
    c->generated_expr = expr;
  }
  f.Str("comment", &c->comment);
  f.UInt("srid", &c->srid);
  f.OptInt("nextValue", &c->next_value);
  DBS_RETURN_IF_ERROR(f.status());
  if (c->type == LogicalType::kArray && c->element_type == LogicalType::kNone) {
    return Status::InvalidArgument(path + ".elementType is required for array columns");
  }
  if (c->type == LogicalType::kArray && c->element_type == LogicalType::kArray) {
    return Status::InvalidArgument(path + ".elementType cannot be array");
  }
  return Status::Ok();
}

}  // namespace

json ToJson(const TableSchema& t) {
  json j = {{"schema", t.schema}, {"name", t.name}};
  json cols = json::array();
  for (const Column& c : t.columns) cols.push_back(ColumnJson(c));
  j["columns"] = std::move(cols);
  j["primaryKey"] = t.primary_key;
  json idx = json::array();
  for (const Index& i : t.indexes) {
    json ic = json::array();
    for (const IndexColumn& c : i.columns) {
      json e = {{"name", c.name}};
      if (c.descending) e["descending"] = true;
      PutOpt(&e, "prefixLength", c.prefix_length);
      ic.push_back(std::move(e));
    }
    json e = {{"name", i.name}, {"unique", i.unique}, {"method", i.method}, {"columns", ic}};
    PutOpt(&e, "predicate", i.predicate);
    idx.push_back(std::move(e));
  }
  j["indexes"] = std::move(idx);
  json fks = json::array();
  for (const ForeignKey& fk : t.foreign_keys) {
    fks.push_back({{"name", fk.name},
                   {"columns", fk.columns},
                   {"refSchema", fk.ref_schema},
                   {"refTable", fk.ref_table},
                   {"refColumns", fk.ref_columns},
                   {"onUpdate", fk.on_update},
                   {"onDelete", fk.on_delete}});
  }
  j["foreignKeys"] = std::move(fks);
  json checks = json::array();
  for (const CheckConstraint& c : t.checks) {
    checks.push_back({{"name", c.name}, {"expression", c.expression}});
  }
  j["checks"] = std::move(checks);
  if (!t.comment.empty()) j["comment"] = t.comment;
  PutOpt(&j, "estimatedRows", t.estimated_rows);
  if (!t.partition_by.empty()) j["partitionBy"] = t.partition_by;
  if (!t.partitions.empty()) {
    json parts = json::array();
    for (const Partition& p : t.partitions) {
      json e = {{"schema", p.schema}, {"name", p.name}, {"parent", p.parent}, {"bound", p.bound}};
      if (!p.partition_by.empty()) e["partitionBy"] = p.partition_by;
      parts.push_back(std::move(e));
    }
    j["partitions"] = std::move(parts);
  }
  if (!t.inherits.empty()) j["inherits"] = t.inherits;
  if (t.has_children) j["hasChildren"] = true;
  return j;
}

Result<TableSchema> TableFromJson(const json& j) {
  TableSchema t;
  Fields f(j, "table");
  f.Str("schema", &t.schema);
  f.Str("name", &t.name, true);
  f.Each("columns", [&](const json& e, const std::string& path) {
    Column c;
    DBS_RETURN_IF_ERROR(ParseColumn(e, path, &c));
    t.columns.push_back(std::move(c));
    return Status::Ok();
  });
  f.StrList("primaryKey", &t.primary_key);
  f.Each("indexes", [&](const json& e, const std::string& path) {
    Index i;
    Fields fi(e, path);
    fi.Str("name", &i.name, true);
    fi.Bool("unique", &i.unique);
    fi.Str("method", &i.method);
    fi.OptStr("predicate", &i.predicate);
    fi.Each("columns", [&](const json& ce, const std::string& cpath) {
      IndexColumn ic;
      Fields fc(ce, cpath);
      fc.Str("name", &ic.name, true);
      fc.Bool("descending", &ic.descending);
      fc.OptUInt("prefixLength", &ic.prefix_length);
      i.columns.push_back(std::move(ic));
      return fc.status();
    });
    t.indexes.push_back(std::move(i));
    return fi.status();
  });
  f.Each("foreignKeys", [&](const json& e, const std::string& path) {
    ForeignKey fk;
    Fields ff(e, path);
    ff.Str("name", &fk.name);
    ff.StrList("columns", &fk.columns);
    ff.Str("refSchema", &fk.ref_schema);
    ff.Str("refTable", &fk.ref_table, true);
    ff.StrList("refColumns", &fk.ref_columns);
    ff.Str("onUpdate", &fk.on_update);
    ff.Str("onDelete", &fk.on_delete);
    DBS_RETURN_IF_ERROR(ff.status());
    if (fk.columns.empty() || fk.columns.size() != fk.ref_columns.size()) {
      return Status::InvalidArgument(path + " must list as many columns as refColumns");
    }
    t.foreign_keys.push_back(std::move(fk));
    return Status::Ok();
  });
  f.Each("checks", [&](const json& e, const std::string& path) {
    CheckConstraint c;
    Fields fc(e, path);
    fc.Str("name", &c.name);
    fc.Str("expression", &c.expression, true);
    t.checks.push_back(std::move(c));
    return fc.status();
  });
  f.Str("comment", &t.comment);
  f.OptUInt("estimatedRows", &t.estimated_rows);
  f.Str("partitionBy", &t.partition_by);
  f.Each("partitions", [&](const json& e, const std::string& path) {
    Partition p;
    Fields fp(e, path);
    fp.Str("schema", &p.schema);
    fp.Str("name", &p.name, true);
    fp.Str("parent", &p.parent, true);
    fp.Str("bound", &p.bound, true);
    fp.Str("partitionBy", &p.partition_by);
    t.partitions.push_back(std::move(p));
    return fp.status();
  });
  f.StrList("inherits", &t.inherits);
  f.Bool("hasChildren", &t.has_children);
  DBS_RETURN_IF_ERROR(f.status());
  if (t.columns.empty()) return Status::InvalidArgument("table.columns must not be empty");
  for (const std::string& k : t.primary_key) {
    if (t.FindColumn(k) < 0) {
      return Status::InvalidArgument("table.primaryKey names unknown column '" + k + "'");
    }
  }
  return t;
}

namespace {

constexpr std::pair<ObjectKind, const char*> kObjectKinds[] = {
    {ObjectKind::kView, "view"},
    {ObjectKind::kMaterializedView, "materialized view"},
    {ObjectKind::kFunction, "function"},
    {ObjectKind::kProcedure, "procedure"},
    {ObjectKind::kAggregate, "aggregate"},
    {ObjectKind::kTrigger, "trigger"},
    {ObjectKind::kSequence, "sequence"},
    {ObjectKind::kExtension, "extension"},
    {ObjectKind::kEvent, "event"},
    {ObjectKind::kPolicy, "policy"},
    {ObjectKind::kRule, "rule"},
    {ObjectKind::kDomain, "domain"},
    {ObjectKind::kPartitioning, "partitioning"},
    {ObjectKind::kInheritance, "inheritance"},
};

}  // namespace

std::string_view ObjectKindName(ObjectKind k) {
  for (const auto& [kind, name] : kObjectKinds) {
    if (kind == k) return name;
  }
  return "object";
}

json ToJson(const SchemaObject& o) {
  json j = {{"kind", ObjectKindName(o.kind)}, {"schema", o.schema}, {"name", o.name}};
  if (!o.table.empty()) j["table"] = o.table;
  if (!o.definition.empty()) j["definition"] = o.definition;
  if (!o.reads.empty()) j["reads"] = o.reads;
  if (!o.used_by.empty()) j["usedBy"] = o.used_by;
  if (!o.comment.empty()) j["comment"] = o.comment;
  if (!o.version.empty()) j["version"] = o.version;
  if (!o.sql_mode.empty()) j["sqlMode"] = o.sql_mode;
  if (o.disabled) j["disabled"] = true;
  if (o.row_security) j["rowSecurity"] = true;
  if (o.force_row_security) j["forceRowSecurity"] = true;
  if (!o.not_describable.empty()) j["notDescribable"] = o.not_describable;
  if (o.sequence) {
    const SequenceInfo& q = *o.sequence;
    j["sequence"] = {{"dataType", q.data_type},
                     {"start", q.start},
                     {"increment", q.increment},
                     {"min", q.min},
                     {"max", q.max},
                     {"cache", q.cache},
                     {"cycle", q.cycle},
                     {"lastValue", q.last_value},
                     {"isCalled", q.is_called}};
  }
  return j;
}

Result<SchemaObject> ObjectFromJson(const json& j) {
  SchemaObject o;
  Fields f(j, "object");
  std::string kind;
  f.Str("kind", &kind, true);
  f.Str("schema", &o.schema);
  f.Str("name", &o.name, true);
  f.Str("table", &o.table);
  f.Str("definition", &o.definition);
  f.StrList("reads", &o.reads);
  f.StrList("usedBy", &o.used_by);
  f.Str("comment", &o.comment);
  f.Str("version", &o.version);
  f.Str("sqlMode", &o.sql_mode);
  f.Bool("disabled", &o.disabled);
  f.Bool("rowSecurity", &o.row_security);
  f.Bool("forceRowSecurity", &o.force_row_security);
  f.Str("notDescribable", &o.not_describable);
  if (const json* q = f.Find("sequence", false)) {
    SequenceInfo seq;
    Fields fq(*q, f.Path("sequence"));
    fq.Str("dataType", &seq.data_type);
    fq.Int("start", &seq.start);
    fq.Int("increment", &seq.increment);
    fq.Int("min", &seq.min);
    fq.Int("max", &seq.max);
    fq.Int("cache", &seq.cache);
    fq.Bool("cycle", &seq.cycle);
    fq.Int("lastValue", &seq.last_value);
    fq.Bool("isCalled", &seq.is_called);
    DBS_RETURN_IF_ERROR(fq.status());
    o.sequence = seq;
  }
  DBS_RETURN_IF_ERROR(f.status());
  bool known = false;
  for (const auto& [k, name] : kObjectKinds) {
    if (kind == name) {
      o.kind = k;
      known = true;
    }
  }
  if (!known) return Status::InvalidArgument("object.kind: unknown kind '" + kind + "'");
  return o;
}

}  // namespace dbs

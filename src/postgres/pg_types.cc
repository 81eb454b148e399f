#include "postgres/pg_types.h"

#include <nlohmann/json.hpp>

namespace dbs::pg {

namespace {

constexpr int kMaxDepth = 16;  // domains over domains over arrays ...

const char kTypeQuery[] =
    "SELECT t.oid, t.typname, n.nspname, format_type(t.oid, NULL), t.typtype, t.typcategory, "
    "  CASE WHEN t.typcategory = 'A' AND t.typlen = -1 THEN t.typelem ELSE 0 END, "
    "  t.typbasetype, "
    "  CASE WHEN t.typtype = 'd' THEN format_type(t.typbasetype, t.typtypmod) END, "
    "  CASE WHEN t.typtype = 'e' THEN (SELECT array_to_json(array_agg(e.enumlabel "
    "    ORDER BY e.enumsortorder))::text FROM pg_enum e WHERE e.enumtypid = t.oid) END "
    "FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace "
    "WHERE t.oid = ANY($1::oid[])";

}  // namespace

Status TypeCache::Load(PGconn* conn, const std::vector<uint32_t>& oids) {
  std::vector<uint32_t> want;
  for (uint32_t o : oids) {
    if (o != 0 && !types_.count(o)) want.push_back(o);
  }
  for (int depth = 0; !want.empty(); ++depth) {
    if (depth == kMaxDepth) return Status::Unsupported("types nested too deeply");
    std::string list = "{";
    for (size_t i = 0; i < want.size(); ++i) {
      if (i) list += ',';
      list += std::to_string(want[i]);
    }
    list += '}';
    DBS_ASSIGN_OR_RETURN(ResultPtr res, ExecParams(conn, kTypeQuery, {list}, "reading pg_type"));
    std::vector<uint32_t> next;
    for (int r = 0; r < PQntuples(res.get()); ++r) {
      TypeInfo t;
      t.oid = static_cast<uint32_t>(Int(res.get(), r, 0));
      t.name = Text(res.get(), r, 1);
      t.schema = Text(res.get(), r, 2);
      t.formatted = Text(res.get(), r, 3);
      t.type_type = Text(res.get(), r, 4).empty() ? 'b' : Text(res.get(), r, 4)[0];
      t.category = Text(res.get(), r, 5).empty() ? 'U' : Text(res.get(), r, 5)[0];
      t.element = static_cast<uint32_t>(Int(res.get(), r, 6));
      t.base = static_cast<uint32_t>(Int(res.get(), r, 7));
      t.base_formatted = Text(res.get(), r, 8);
      if (!IsNull(res.get(), r, 9)) {
        auto j = nlohmann::json::parse(Text(res.get(), r, 9), nullptr, false);
        if (j.is_array()) {
          for (const auto& label : j) {
            if (label.is_string()) t.enum_labels.push_back(label.get<std::string>());
          }
        }
      }
      for (uint32_t ref : {t.element, t.base}) {
        if (ref != 0 && !types_.count(ref)) next.push_back(ref);
      }
      types_[t.oid] = std::move(t);
    }
    for (uint32_t o : want) {
      if (!types_.count(o)) return Status::NotFound("type OID " + std::to_string(o) + " not found");
    }
    want.clear();
    for (uint32_t o : next) {
      if (!types_.count(o)) want.push_back(o);
    }
  }
  return Status::Ok();
}

const TypeInfo* TypeCache::Find(uint32_t oid) const {
  auto it = types_.find(oid);
  return it == types_.end() ? nullptr : &it->second;
}

const TypeInfo* TypeCache::Base(uint32_t oid) const {
  const TypeInfo* t = Find(oid);
  for (int i = 0; t != nullptr && t->type_type == 'd' && i < kMaxDepth; ++i) t = Find(t->base);
  return t;
}

std::string TypeCache::BaseFormatted(uint32_t oid, const std::string& fallback) const {
  const TypeInfo* t = Find(oid);
  const TypeInfo* last_domain = nullptr;
  for (int i = 0; t != nullptr && t->type_type == 'd' && i < kMaxDepth; ++i) {
    last_domain = t;
    t = Find(t->base);
  }
  return last_domain ? last_domain->base_formatted : fallback;
}

}  // namespace dbs::pg

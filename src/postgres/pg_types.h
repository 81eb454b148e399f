// A per-connection cache of pg_type rows: what the source and sink need to know about a type
// OID to describe a column or choose its binary encoding (domains resolved to their base type,
// arrays to their element, enum labels).
//
// Not thread-safe: one cache per connection/thread. Type OIDs are stable while a type exists;
// a cache lives as long as one source/sink session.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "postgres/pg_client.h"

namespace dbs::pg {

// Well-known built-in type OIDs (pg_type.dat); stable across PostgreSQL versions.
inline constexpr uint32_t kOidBool = 16;
inline constexpr uint32_t kOidBytea = 17;
inline constexpr uint32_t kOidInt8 = 20;
inline constexpr uint32_t kOidInt2 = 21;
inline constexpr uint32_t kOidInt4 = 23;
inline constexpr uint32_t kOidText = 25;
inline constexpr uint32_t kOidOid = 26;
inline constexpr uint32_t kOidJson = 114;
inline constexpr uint32_t kOidFloat4 = 700;
inline constexpr uint32_t kOidFloat8 = 701;
inline constexpr uint32_t kOidBpchar = 1042;
inline constexpr uint32_t kOidVarchar = 1043;
inline constexpr uint32_t kOidDate = 1082;
inline constexpr uint32_t kOidTime = 1083;
inline constexpr uint32_t kOidTimestamp = 1114;
inline constexpr uint32_t kOidTimestampTz = 1184;
inline constexpr uint32_t kOidInterval = 1186;
inline constexpr uint32_t kOidTimeTz = 1266;
inline constexpr uint32_t kOidBit = 1560;
inline constexpr uint32_t kOidVarbit = 1562;
inline constexpr uint32_t kOidNumeric = 1700;
inline constexpr uint32_t kOidUuid = 2950;
inline constexpr uint32_t kOidJsonb = 3802;

struct TypeInfo {
  uint32_t oid = 0;
  std::string name;       // typname: "int4", "_int4", "mood"
  std::string schema;     // nspname
  std::string formatted;  // format_type(oid, NULL): "integer", "integer[]", "shop.mood"
  char type_type = 'b';   // typtype: b base, c composite, d domain, e enum, p pseudo, r range,
                          // m multirange
  char category = 'U';    // typcategory
  uint32_t element = 0;   // typelem of true arrays (category 'A'), else 0
  uint32_t base = 0;      // typbasetype of domains, else 0
  // Domains: format_type(typbasetype, typtypmod), the base type with the domain's modifiers.
  std::string base_formatted;
  std::vector<std::string> enum_labels;  // enums, in enumsortorder
};

class TypeCache {
 public:
  // Makes sure the given types, their array elements and domain bases (transitively) are
  // cached: one catalog query per level of nesting, none when all are known. NotFound when an
  // OID is not a type.
  Status Load(PGconn* conn, const std::vector<uint32_t>& oids);
  // The cached type, or null.
  const TypeInfo* Find(uint32_t oid) const;
  // The non-domain type the values of `oid` are sent as (itself unless a domain); null when not
  // cached.
  const TypeInfo* Base(uint32_t oid) const;
  // Domains: the format_type text of the innermost domain's base with its modifiers; otherwise
  // `fallback`.
  std::string BaseFormatted(uint32_t oid, const std::string& fallback) const;
  void Clear() { types_.clear(); }

 private:
  std::unordered_map<uint32_t, TypeInfo> types_;
};

}  // namespace dbs::pg

// PostgreSQL column metadata -> the schema model (core/schema.h).
//
// The PostgreSQL source reader joins pg_attribute, pg_type, pg_attrdef, pg_collation and
// pg_description per column, copies the row into a PgColumnInfo and calls ColumnFromPostgres.
// Nothing here talks to a server; the functions are pure and thread-safe. The full mapping,
// with every lossy edge, is in docs/type-mapping.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/schema.h"

namespace dbs {

// What pg_type says about one type (the column's, or a domain's base type).
struct PgTypeInfo {
  // format_type(oid, typmod): "character varying(20)", "numeric(12,2)", "integer[]",
  // "timestamp(3) with time zone", "mood", "shop.mood", "geometry(Point,4326)".
  std::string formatted;
  std::string name;      // pg_type.typname: "varchar", "_int4", "mood", "geometry"
  char type_type = 'b';  // pg_type.typtype: b base, e enum, d domain, c composite, r range,
                         // m multirange, p pseudo
  char category = 'U';   // pg_type.typcategory: A array, B bool, N numeric, S string, ...
  // For arrays (category 'A' with a typelem): the element's typname ("int4") and typtype.
  std::string element_name;
  char element_type_type = 'b';
  // Labels of the enum (or, for an array, of its enum element), in enumsortorder.
  std::vector<std::string> enum_labels;
  // From the typmod (information_schema.columns gives the same numbers). When absent they are
  // read back from `formatted`. scale may be negative (PostgreSQL 15+ numeric(p,-s)).
  std::optional<int32_t> length;     // char(n), varchar(n), bit(n), varbit(n)
  std::optional<int32_t> precision;  // numeric precision; time/timestamp/interval fractional
                                     // seconds digits
  std::optional<int32_t> scale;      // numeric scale
};

struct PgColumnInfo {
  std::string name;  // pg_attribute.attname
  PgTypeInfo type;
  // For a domain column (type.type_type 'd'), or an array whose element is a domain: the
  // domain's base type, resolved through nested domains (pg_type.typbasetype/typtypmod).
  std::optional<PgTypeInfo> domain_base;
  bool not_null = false;                    // pg_attribute.attnotnull
  std::optional<std::string> default_expr;  // pg_get_expr(adbin, adrelid); nullopt if none
  char identity = '\0';                     // attidentity: 'a' always, 'd' by default, or none
  char generated = '\0';                    // attgenerated: 's' stored (expression in
                                            // default_expr, as pg_get_expr prints it)
  // Collation name when it differs from the type's default (attcollation <> typcollation),
  // schema-qualified if needed ("C", "en_US", "und-x-icu"); empty otherwise.
  std::string collation;
  std::string comment;  // col_description
  // PostGIS geometry/geography: the SRID from the typmod (postgis_typmod_srid), 0 if none.
  uint32_t srid = 0;
};

struct PgMappingOptions {
  // A base type this file does not know (from an extension) maps to kText with its source
  // type kept, instead of an Unsupported error. Every PostgreSQL type has a text form, so this
  // is lossless for PostgreSQL -> PostgreSQL; MySQL targets get the text.
  bool unknown_as_text = false;
};

// Maps one column. Every PostgreSQL 12+ built-in type is handled:
//   int2/int4/int8 -> kInt16/32/64 (serial forms: auto_increment, default kept);
//   oid, xid, cid -> kUInt32, xid8 -> kUInt64;
//   float4/float8; numeric[(p,s)] and money -> kDecimal; char/varchar/text/name/citext/"char"
//   -> kText; bytea -> kBytes; bool; date; time(p); timetz; timestamp(p); timestamptz(p);
//   interval; uuid; json/jsonb -> kJson; xml, inet, cidr, macaddr(8), tsvector, tsquery,
//   jsonpath, pg_lsn, the geometric types and reg* types -> kText; bit(n)/varbit -> kBit;
//   PostGIS geometry/geography -> kGeometry (srid); enums -> kEnum with labels; domains -> the
//   base type (domain constraints are not carried); arrays of any of these -> kArray with
//   element_type; ranges, multiranges and composites -> kText with the source type kept.
// source_type is the formatted type (for domains the base type's), so PostgreSQL -> PostgreSQL
// keeps the exact type. Identity columns and nextval() defaults set auto_increment; stored
// generated columns move the expression from default_expr to generated_expr.
// Errors: Unsupported naming the column and type (pseudo-types, unknown base types unless
// options.unknown_as_text); InvalidArgument for inconsistent input (a domain without its base).
Result<Column> ColumnFromPostgres(const PgColumnInfo& info, const PgMappingOptions& options = {});

}  // namespace dbs

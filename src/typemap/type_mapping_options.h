// TypeMappingOptions: the user's type-mapping choices, set in a stream file's `typeMapping`
// section (docs/stream-config.md) and applied by the sinks when they create target tables
// (ApplyTypeMapping in ddl.h). Every choice listed in docs/type-mapping.md is here; the
// defaults never lose a value silently.
//
// Header-only plain data: the config module parses it without linking the type mapper.
#pragma once

#include <string>

namespace dbs {

struct TypeMappingOptions {
  // `pgJsonb`: JSON into PostgreSQL becomes jsonb (indexable; normalizes whitespace, key order,
  // drops duplicate keys, cannot hold \u0000) instead of json (default: keeps the text exactly).
  bool pg_jsonb = false;
  // `mysqlTimeAsInterval`: MySQL TIME into PostgreSQL becomes interval (holds -838:59:59 ..
  // 838:59:59) instead of time (values outside 00:00 .. 24:00 fail at write time).
  bool mysql_time_as_interval = false;
  // `pgUint64AsBigint`: MySQL bigint unsigned into PostgreSQL becomes bigint instead of
  // numeric(20,0); values above 9223372036854775807 then fail at write time.
  bool pg_uint64_as_bigint = false;
  // `crossDialectChecks`: CHECK constraints are passed across dialects (identifier quoting
  // converted) instead of being skipped with a warning.
  bool cross_dialect_checks = false;
  // `mariadbNativeTypes`: on a MariaDB 10.10+ target, uuid/inet4/inet6 columns use MariaDB's
  // own types; false: char(36) / varchar(15) / varchar(45) on every MySQL target.
  bool mariadb_native_types = true;
  // `pgInetAsInet6`: PostgreSQL inet into a MariaDB 10.10+ target becomes INET6 (so a MariaDB
  // INET6 column survives MariaDB -> PostgreSQL -> MariaDB); networks (a prefix shorter than
  // the address) and IPv4 addresses not written as ::ffff:a.b.c.d then fail at write time.
  // Default false: varchar(43) holding PostgreSQL's own text form.
  bool pg_inet_as_inet6 = false;
  // `postgis`: kGeometry into a PostgreSQL target with the postgis extension becomes
  // geometry(Subtype,srid); false (or no extension): bytea holding SRID + WKB.
  bool postgis = true;
  // `mysqlTextCollation`: collation of text columns created in MySQL from PostgreSQL.
  std::string mysql_text_collation = "utf8mb4_bin";

  friend bool operator==(const TypeMappingOptions&, const TypeMappingOptions&) = default;
};

}  // namespace dbs

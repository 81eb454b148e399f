// SQL text helpers shared by the type mappers and the DDL generator: dialects, identifier and
// literal quoting, and a guard that a fragment of SQL taken from metadata is one expression.
//
// All functions are pure and thread-safe. None of them talk to a database.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace dbs {

// The SQL dialect of a source or a target. kMysql covers MySQL 5.7/8.x and MariaDB 10.x: what
// the DDL generator emits for kMysql runs on MySQL 8.0.13+ and MariaDB 10.6+.
enum class Dialect : uint8_t { kPostgres, kMysql };

// "postgres" or "mysql".
std::string_view DialectName(Dialect d);

// Quotes an identifier so it is taken literally, whatever it contains:
//   kPostgres  "name" with every " doubled   (a"b  -> "a""b")
//   kMysql     `name` with every ` doubled   (a`b  -> `a``b`)
// The quoting is always applied, even to plain names, so reserved words and case survive.
std::string QuoteIdent(std::string_view name, Dialect d);

// Quotes a string literal:
//   kPostgres  'text' with ' doubled; when the text holds a backslash, E'...' with backslashes
//              doubled too, so the result means the same under any standard_conforming_strings.
//              PostgreSQL text cannot hold NUL: the caller must not pass one.
//   kMysql     'text' with ' doubled and \ doubled (NUL as \0). The session must not use the
//              NO_BACKSLASH_ESCAPES sql_mode.
std::string QuoteLiteral(std::string_view text, Dialect d);

// QuoteIdent(schema).QuoteIdent(name), or QuoteIdent(name) when schema is empty.
std::string QualifiedName(std::string_view schema, std::string_view name, Dialect d);

// OK when `name` can be used as an identifier on `d` without being changed by the server:
// not empty, no NUL, at most 63 bytes (PostgreSQL truncates longer names silently) or 64
// characters (MySQL), and for MySQL no trailing space. Errors are InvalidArgument and name it.
Status CheckIdentifier(std::string_view name, Dialect d);

// OK when `text` is one SQL expression or type as far as its lexical structure goes: string
// literals, quoted identifiers (and PostgreSQL dollar quotes) are closed, parentheses balance,
// and there is no ';' or comment outside quotes. This guards DDL built from metadata that
// crossed the bus against statement injection; it does not check that the SQL is valid.
// `what` names the fragment in the error ("default of column x").
Status CheckSqlFragment(std::string_view text, Dialect d, std::string_view what);

// Parses `text` when it is exactly one single-quoted string literal and stores its value:
//   kPostgres  '...' with '' for a quote; E'...' also takes backslash escapes (\n, \t, \\, \').
//   kMysql     '...' or "..." with doubled quotes and backslash escapes, optionally preceded by
//              a character set introducer (_utf8mb4'...').
// Returns false (leaving *out unspecified) for anything else.
bool UnquoteLiteral(std::string_view text, Dialect d, std::string* out);

// ASCII lower-casing; other bytes are kept.
std::string AsciiLower(std::string_view s);
// `s` without leading and trailing ASCII white space.
std::string_view TrimSpace(std::string_view s);
// Case-insensitive ASCII comparison.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace dbs

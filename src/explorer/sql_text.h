// Small, engine-neutral readings of SQL text for the explorer. None of this is what keeps a
// statement read-only: the database's own read-only transaction does that (console.h). These
// only decide how a statement is run (a server-side cursor for a SELECT) and give the MCP
// server its extra statement check.
//
// Contract: pure functions, thread-safe; never throw.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace dbs::explorer {

// The first keyword of `sql`, upper-cased, after blanks, `--` and `#` line comments, `/* */`
// comments (nested, as PostgreSQL allows) and opening parentheses; "" when there is none.
std::string FirstKeyword(std::string_view sql);

// True for statements that only produce rows and can sit behind a cursor: SELECT, WITH,
// VALUES, TABLE.
bool IsSelectLike(std::string_view sql);

// `sql` without trailing blanks and semicolons.
std::string TrimStatement(std::string_view sql);

// True when `sql` holds more than one statement: a ';' outside quotes, quoted identifiers,
// dollar quotes and comments followed by anything but blanks, comments or more ';'.
bool HasSeveralStatements(std::string_view sql);

// The MCP server's statement check, on top of the read-only transaction: one statement whose
// first keyword is SELECT or WITH. InvalidArgument saying why otherwise.
Status CheckSelectOnly(std::string_view sql);

}  // namespace dbs::explorer

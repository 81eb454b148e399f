// The console over federated sources: one federated SELECT (federated/federated.h) driven
// through the console's QuerySession contract (console.h), so that a console on a bucket, a
// folder or several connections has the same query ids, pages, cancellation, deadlines,
// downloads and history as a console on one database.
//
// Contract (beyond console.h):
//  - Always read-only: DuckDB runs one SELECT (federated.h refuses anything else) and each
//    source is read in its own read-only snapshot. read_only() is true.
//  - Execute opens the sources and DuckDB, then reads the first page through a streaming
//    cursor (federated::QueryCursor); Fetch reads the next. Memory: one DuckDB chunk and a page
//    of rows; DuckDB spills to a private folder under `temp_root`, removed with the session.
//  - Cancel interrupts DuckDB (and so every source scan it drives); a cancel that comes while
//    the sources are being opened takes effect as soon as they are. The statement then fails
//    with Cancelled or Timeout, as the database sessions do.
//  - Explain returns DuckDB's plan as text, and as JSON what each source is asked for
//    ({"sources": [{"alias", "statement"}]}); analyze is refused (nothing to roll back).
//  - server_session_id() is 0: no one server runs the statement.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "explorer/console.h"
#include "federated/federated.h"

namespace dbs::explorer {

// `options.temp_dir` is ignored: the session makes its own folder under `temp_root` ("" for
// the system's temporary folder).
Result<std::unique_ptr<QuerySession>> OpenFederatedSession(
    std::vector<federated::FederatedSource> sources, federated::FederatedOptions options,
    const std::string& temp_root);

}  // namespace dbs::explorer

// The data folder of `dbstreams serve` and `stream-api`: config store, secrets file, the
// embedded nats-server's store and configuration.
//
// Contract: PrepareDataDir creates `dir` if needed, makes it 0700, and tightens everything
// already inside it (folders 0700, files 0600; only entries this user owns), so a folder made by
// an older version or another umask is fixed. It also sets the process umask to 077, so files
// created later (SQLite journals, logs, the server's store) are private too. Symbolic links are
// not followed.
#pragma once

#include <string>

#include "core/result.h"

namespace dbs::store {

Status PrepareDataDir(const std::string& dir);

}  // namespace dbs::store

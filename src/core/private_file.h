// Files only their owner may read: secrets, keys, server configurations with credentials.
#pragma once

#include <string>

#include "core/result.h"

namespace dbs {

// Replaces `path` with `data`, mode 0600: written to "<path>.tmp" (created 0600), fsynced, then
// renamed over `path`, so a reader sees the old or the new file, never a part. IoError naming
// the file otherwise.
Status WritePrivateFile(const std::string& path, const std::string& data);

}  // namespace dbs

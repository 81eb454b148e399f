// A self-signed TLS certificate for a server this process starts (the embedded nats-server
// when it listens beyond loopback). Clients trust exactly this certificate (it is their CA
// file), so no public CA is involved.
//
// Contract: EnsureSelfSigned keeps an existing pair (both files present) and otherwise writes
// a new P-256 key (mode 0600) and a certificate valid for ten years whose subject alternative
// names are `hosts` (IP addresses or DNS names) plus 127.0.0.1 and localhost.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"

namespace dbs::security {

Status EnsureSelfSigned(const std::string& cert_file, const std::string& key_file,
                        const std::vector<std::string>& hosts);

}  // namespace dbs::security

// NATS client flags shared by stream-api, stream-reader, stream-writer and `dbstreams run`
// against an external server or cluster: credentials (user/password, a .creds file or a
// token) and TLS (CA, client certificate). See docs/security.md for the roles each service's
// credentials need.
#pragma once

#include <string>
#include <vector>

#include "bus/embedded_nats.h"
#include "bus/jetstream.h"
#include "core/config.h"
#include "core/logging.h"

namespace dbs::apps {

inline std::vector<FlagSpec> NatsClientFlags() {
  return {
      {"nats-user", "NATS_USER", "", "NATS user name"},
      {"nats-password", "NATS_PASSWORD", "", "NATS password (prefer the environment variable)"},
      {"nats-creds", "NATS_CREDS", "", "NATS .creds file (JWT + nkey)"},
      {"nats-token", "NATS_TOKEN", "", "NATS token (prefer the environment variable)"},
      {"nats-tls", "NATS_TLS", "false", "require TLS (implied by tls:// URLs and --nats-ca)", true},
      {"nats-ca", "NATS_CA", "", "CA certificate file that signed the NATS server's certificate"},
      {"nats-cert", "NATS_CERT", "", "client certificate file (mutual TLS)"},
      {"nats-key", "NATS_KEY", "", "client private key file (mutual TLS)"},
  };
}

// NatsOptions from the flags above and `url`. Warns when credentials would travel in clear to
// a server beyond loopback.
inline bus::NatsOptions NatsClientOptions(const Config& cfg, const std::string& url,
                                          const std::string& client_name) {
  bus::NatsOptions o;
  o.url = url;
  o.name = client_name;
  o.user = cfg.GetString("nats-user");
  o.password = cfg.GetString("nats-password");
  o.creds_file = cfg.GetString("nats-creds");
  o.token = cfg.GetString("nats-token");
  auto tls = cfg.GetBool("nats-tls");
  o.tls = (tls.ok() && *tls) || url.rfind("tls://", 0) == 0;
  o.ca_file = cfg.GetString("nats-ca");
  o.cert_file = cfg.GetString("nats-cert");
  o.key_file = cfg.GetString("nats-key");
  const bool secure = o.tls || !o.ca_file.empty() || !o.cert_file.empty();
  if (!secure) {
    // nats://host:port[,nats://...]: any host beyond loopback gets a warning.
    size_t pos = 0;
    while (pos < url.size()) {
      size_t end = url.find(',', pos);
      std::string u = url.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      pos = end == std::string::npos ? url.size() : end + 1;
      size_t s = u.find("://");
      std::string host = s == std::string::npos ? u : u.substr(s + 3);
      if (size_t at = host.rfind('@'); at != std::string::npos) host = host.substr(at + 1);
      if (!host.empty() && host[0] == '[') {
        host = host.substr(1, host.find(']') - 1);
      } else if (size_t colon = host.find(':'); colon != std::string::npos) {
        host = host.substr(0, colon);
      }
      if (!bus::IsLoopbackHost(host)) {
        Log(LogLevel::kWarn, "nats",
            "NATS connection without TLS to a host beyond loopback: credentials and row data "
            "travel in clear; use tls:// URLs or --nats-ca",
            {F("host", host)});
        break;
      }
    }
  }
  return o;
}

}  // namespace dbs::apps

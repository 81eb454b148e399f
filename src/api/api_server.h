// ApiServer: the REST API (/api/v1, JSON), SSE streams, Prometheus /metrics and the OpenAPI
// document, over cpp-httplib. docs/api.md describes every route; docs/openapi.json is served
// at /api/v1/openapi.json.
//
// Contract:
//  - Every route needs a valid X-API-Key (401 otherwise); keys are looked up by SHA-256 hash;
//    revoked and expired keys are refused. /metrics also accepts "Authorization: Bearer
//    <metrics token>" when a metrics token is set (the token opens nothing else); an optional
//    second listener (metrics_listen) serves /metrics alone.
//  - A client address with repeated 401s is answered 429 with Retry-After for a while that
//    doubles with every further failure (AuthBackoffOptions); a success resets it. Failures are
//    logged (client, path, reason), never with key bytes.
//  - Request bodies: at most max_body_bytes (413) whatever the Content-Type, parsed as JSON
//    whatever the Content-Type; an empty or absent body (no Content-Length, not chunked) is {}.
//    Valid JSON objects only (400), no unknown fields, bounded field sizes (400 naming the
//    field). Errors are {"error": {"code", "message", "fields"?}}.
//  - Every list is paged with offset/limit and answers {items, total, offset, limit}.
//  - Passwords are write-only: never in a response, a log record or the config store.
//  - Connections are served by a growing thread pool capped at max_threads; beyond it they
//    queue (bursts slow down, the server stays up).
//  - Start() returns once the port is bound; Stop() closes it and ends SSE streams.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "api/log_hub.h"
#include "api/orchestrator.h"
#include "bus/jetstream.h"
#include "core/result.h"
#include "store/config_store.h"
#include "store/secrets_store.h"

namespace dbs::api {

// Backoff after failed authentications, per client address (the TCP peer: a proxy in front
// makes every client one address, so run the limiter there too).
struct AuthBackoffOptions {
  int max_failures = 5;                         // 401s within `window` before a block
  std::chrono::milliseconds window{60000};      // failures older than this are forgotten
  std::chrono::milliseconds first_block{1000};  // the first block; doubles per failure
  std::chrono::milliseconds max_block{60000};   // the cap
  size_t max_clients = 10000;                   // tracked addresses (oldest dropped)
};

struct ApiServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;            // 0: a free port
  std::string tls_cert_file;  // both set: HTTPS
  std::string tls_key_file;
  std::vector<std::string> cors_origins;  // allowed Origins; "*" allows any; empty: no CORS
  size_t max_body_bytes = 1 << 20;
  int max_threads = 512;
  std::string version = "0.1.0";
  // A Prometheus scrape token for GET /metrics ("Authorization: Bearer <token>"). Empty: the
  // DBS_METRICS_TOKEN environment variable; still empty: /metrics needs an API key.
  std::string metrics_token;
  // "host:port" (port 0: a free one): a second, plain-HTTP listener that serves only GET
  // /metrics, for a scraper on an internal network. It needs the metrics token when one is
  // set and is open otherwise. Empty: DBS_METRICS_LISTEN from the environment; still empty:
  // none.
  std::string metrics_listen;
  AuthBackoffOptions auth_backoff;
  OrchestratorOptions orchestrator;
  bool serve_ui = false;  // the web UI at "/" (static_ui.h), from ui_dir ("" = not built)
  std::string ui_dir;
};

struct RouteInfo {
  std::string method;  // GET, POST, PUT, DELETE
  std::string path;    // OpenAPI form: /api/v1/connections/{id}
};

class ApiServer {
 public:
  // The stores and the connection must outlive the server.
  static Result<std::unique_ptr<ApiServer>> Start(const ApiServerOptions& options,
                                                  bus::NatsConnection* nats,
                                                  store::ConfigStore* config,
                                                  store::SecretsStore* secrets);
  ~ApiServer();
  int port() const;
  std::string url() const;   // http(s)://host:port
  int metrics_port() const;  // the metrics listener's port; 0 without one
  void Stop();
  // Every registered route (for the OpenAPI consistency test).
  static std::vector<RouteInfo> Routes();
  // The OpenAPI 3 document (docs/openapi.json, compiled in).
  static const std::string& OpenApiDocument();

  struct Impl;

 private:
  explicit ApiServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Creates an API key (printed once; only its hash is stored). Returns the key.
Result<std::string> CreateApiKey(store::ConfigStore* store, const std::string& name);
// The same with an expiry (unix seconds, 0: never); `record` (optional) receives what was
// stored.
Result<std::string> CreateApiKey(store::ConfigStore* store, const std::string& name,
                                 int64_t expires_at, store::ApiKeyRecord* record);

}  // namespace dbs::api

// ApiServer: the REST API (/api/v1, JSON), SSE streams, Prometheus /metrics and the OpenAPI
// document, over cpp-httplib. docs/api.md describes every route; docs/openapi.json is served
// at /api/v1/openapi.json.
//
// Contract:
//  - Every route needs a valid X-API-Key (401 otherwise); keys are looked up by SHA-256 hash.
//  - Request bodies: at most max_body_bytes (413), valid JSON objects (400), no unknown fields
//    (400 naming the field). Errors are {"error": {"code", "message", "fields"?}}.
//  - Passwords are write-only: never in a response, a log record or the config store.
//  - Connections are served by a growing thread pool capped at max_threads; beyond it they
//    queue (bursts slow down, the server stays up).
//  - Start() returns once the port is bound; Stop() closes it and ends SSE streams.
#pragma once

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

struct ApiServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;            // 0: a free port
  std::string tls_cert_file;  // both set: HTTPS
  std::string tls_key_file;
  std::vector<std::string> cors_origins;  // allowed Origins; "*" allows any; empty: no CORS
  size_t max_body_bytes = 1 << 20;
  int max_threads = 512;
  std::string version = "0.1.0";
  OrchestratorOptions orchestrator;
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
  std::string url() const;  // http(s)://host:port
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

}  // namespace dbs::api

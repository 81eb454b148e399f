// The Data Explorer's routes (docs/explorer.md), under /api/v1/explorer, and the MCP server's
// Streamable HTTP endpoint at /mcp (src/mcp/).
//
//   POST   /explorer/console                 run one statement on a saved connection
//   POST   /explorer/console/explain         its plan (text and JSON)
//   POST   /explorer/console/download        its whole result as CSV, JSONL or Parquet
//   GET    /explorer/queries                 this key's running statements and open cursors
//   POST   /explorer/queries/{id}/next       the next page of an open cursor
//   DELETE /explorer/queries/{id}            cancel a running statement / close a cursor
//   GET    /explorer/history                 this key's query history, searchable
//   POST   /explorer/table/rows|count|ddl|profile   the table browser
//   POST   /explorer/er                      an ER diagram of a database or schema
//   POST/GET/DELETE /mcp                     MCP (JSON-RPC over Streamable HTTP)
//
// Contract: every route is behind the API key (ApiServer's gate); request bodies are strict
// (unknown fields and wrong types are 400 naming the field). Statement errors the database
// reports are 400 (404 for a missing object), a refusal by the read-only transaction is 403,
// a cancelled statement 409 `cancelled`, a timeout 503 `timeout`, an unreachable database 503.
// A handler may set the response status itself (MCP's 202); the route's status is the default.
#pragma once

#include <httplib.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/connection.h"
#include "core/result.h"
#include "store/config_store.h"

namespace dbs::api {

struct ExplorerCall {
  const httplib::Request& req;
  httplib::Response& res;
  const std::map<std::string, std::string>& params;
  const nlohmann::json& body;
};
using ExplorerHandler = std::function<Result<nlohmann::json>(ExplorerCall&)>;
using AddExplorerRoute = std::function<void(const std::string& method, const std::string& path,
                                            ExplorerHandler handler, int ok_status)>;

struct ExplorerRouteDeps {
  // A saved connection by id, password included (never sent anywhere but its database).
  std::function<Result<ConnectionConfig>(const std::string& id)> connection;
  // Query history, API key ids, and (for MCP) the connection and stream records.
  store::ConfigStore* config = nullptr;
  // A run's status (Orchestrator::RunStatus), for MCP.
  std::function<Result<nlohmann::json>(const std::string& run_id)> run_status;
  // The newest `limit` log records (oldest first) whose fields name `stream` ("" = any), for
  // MCP.
  std::function<std::vector<nlohmann::json>(const std::string& stream, size_t limit)> recent_logs;
  std::string version;    // the server's version (MCP serverInfo)
  std::string temp_root;  // DuckDB spill and export folders; "" = the system temp folder
  std::string memory_limit = "1GB";
};

// Registers the routes through `add`; `v1` is "/api/v1". The routes share one QueryRegistry
// (running statements and cursors), which lives as long as the registered handlers.
void RegisterExplorerRoutes(const std::string& v1, const AddExplorerRoute& add,
                            ExplorerRouteDeps deps);

}  // namespace dbs::api

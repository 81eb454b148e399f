// The federated SQL routes (docs/federated.md):
//   POST /api/v1/explorer/federated          run one read-only SELECT over several sources
//   POST /api/v1/explorer/federated/explain  DuckDB's plan and what each source is asked for
//   POST /api/v1/explorer/federated/stream   "Save as stream" (registered by the API server
//                                            with SavedStreamBody below)
//
// Contract: request bodies are validated here (unknown fields, aliases, limits: 400);
// connections are resolved through `deps.connection` (with their passwords, which never leave
// this process); errors from a source are 503 (the database answered), statement errors 400.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/connection.h"
#include "core/result.h"
#include "federated/federated.h"

namespace dbs::api {

using FederatedHandler = std::function<Result<nlohmann::json>(const nlohmann::json& body)>;
using AddFederatedRoute =
    std::function<void(const std::string& method, const std::string& path, FederatedHandler)>;

struct FederatedRouteDeps {
  // A saved connection by id, password included.
  std::function<Result<ConnectionConfig>(const std::string& id)> connection;
  // Where DuckDB spills (a fresh folder per request under it); empty: the system temp folder.
  std::string temp_root;
  std::string memory_limit = "1GB";
};

// The stream body of "Save as stream": {name, sources, sql, target: connection id, table
// (default "result"), and optionally targetSchema, schemaPolicy, writeMode} becomes
// {name, source: {federated: [{alias, connection}]}, target: {connection}, tables: [{name:
// table, query: sql}], ...}, after the statement was checked (one SELECT whose sources and
// columns resolve). *columns: the result's columns ({name, type}).
Result<nlohmann::json> SavedStreamBody(const nlohmann::json& body, const FederatedRouteDeps& deps,
                                       nlohmann::json* columns);

// The "sources" of a federated request: 1 to 16 {"alias"?, "connectionId"}, resolved through
// `connection`; an omitted alias defaults by kind (pg1, my1, s3, files, ...). InvalidArgument
// naming the element otherwise.
Result<std::vector<federated::FederatedSource>> ParseFederatedSources(
    const nlohmann::json& sources,
    const std::function<Result<ConnectionConfig>(const std::string&)>& connection);

// Registers the routes under `v1` ("/api/v1") through `add`.
void RegisterFederatedRoutes(const std::string& v1, const AddFederatedRoute& add,
                             FederatedRouteDeps deps);

}  // namespace dbs::api

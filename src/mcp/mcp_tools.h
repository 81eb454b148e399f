// The dbstreams tools of the MCP server: read-only looks at connections, catalogs, tables,
// rows, federated SQL, streams, runs and their logs.
//
// Contract:
//  - Nothing a tool does can change data, configuration or stream state: catalog and row reads
//    run in read-only transactions; run_select also passes CheckSelectOnly (one SELECT or WITH
//    statement); federated statements are SELECTs checked by DuckDB's parser; there is no tool
//    that creates, changes, starts or stops anything.
//  - Connections are shown by id, name and kind only: never a host, user, URL or password.
//    Everything a tool returns goes through Redact() (redact.h) first.
//  - Row limits: sample_rows 100 by default, at most 1,000; run_select and federated_run the
//    same.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/connection.h"
#include "core/result.h"
#include "mcp/mcp_server.h"
#include "store/config_store.h"

namespace dbs::mcp {

struct ToolDeps {
  // A saved connection by id, password included (it only ever goes to its database).
  std::function<Result<ConnectionConfig>(const std::string& id)> connection;
  store::ConfigStore* config = nullptr;
  // Catalog: kind databases, schemas, tables or views (api/connections.h Browse).
  std::function<Result<nlohmann::json>(const ConnectionConfig&, const std::string& kind,
                                       const std::string& schema)>
      browse;
  // Columns, keys, indexes and foreign keys of a table (api/connections.h DescribeTable).
  std::function<Result<nlohmann::json>(const ConnectionConfig&, const std::string& schema,
                                       const std::string& table)>
      describe;
  std::function<Result<nlohmann::json>(const std::string& run_id)> run_status;
  std::function<std::vector<nlohmann::json>(const std::string& stream, size_t limit)> recent_logs;
  std::string temp_root;                // DuckDB spill folders
  std::vector<std::string> file_roots;  // readable folders (explorer/files.h)
};

std::vector<McpTool> MakeTools(const ToolDeps& deps);

// What the server tells a client at initialize.
extern const char kInstructions[];

}  // namespace dbs::mcp

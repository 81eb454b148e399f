// McpServer: the Model Context Protocol (JSON-RPC 2.0) for one client session: initialize with
// protocol version negotiation, ping, tools/list and tools/call. Transports (Streamable HTTP,
// stdio) hand it one message at a time (mcp_http.h, mcp_stdio.h).
//
// Contract:
//  - Handle() takes one parsed JSON-RPC message and returns the response for a request, or
//    nothing for a notification or a response. Errors follow JSON-RPC: -32700 parse error,
//    -32600 invalid request, -32601 unknown method, -32602 invalid params (an unknown tool),
//    -32603 internal. A tool that fails answers a result with isError true and the reason as
//    text (so the model sees it), per the MCP specification.
//  - Protocol revisions 2025-06-18, 2025-03-26 and 2024-11-05; a client asking for another
//    gets the newest (it may then disconnect).
//  - Only tools are offered, all read-only (annotations readOnlyHint true, destructiveHint
//    false). Thread-safe: a session may get calls from several HTTP requests at once.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace dbs::mcp {

struct McpTool {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json input_schema;  // a JSON Schema object
  // Returns the structured result (an object), or an error whose message the model reads.
  std::function<Result<nlohmann::json>(const nlohmann::json& arguments)> run;
};

class McpServer {
 public:
  McpServer(std::string name, std::string version, std::string instructions,
            std::vector<McpTool> tools);
  std::optional<nlohmann::json> Handle(const nlohmann::json& message);
  // The revision agreed in initialize ("" before).
  std::string protocol_version();
  static const std::vector<std::string>& SupportedVersions();

 private:
  nlohmann::json Initialize(const nlohmann::json& params);
  nlohmann::json ListTools() const;
  Result<nlohmann::json> CallTool(const nlohmann::json& params);

  const std::string name_, version_, instructions_;
  const std::vector<McpTool> tools_;
  std::mutex mu_;
  std::string protocol_;
};

// A JSON-RPC error response.
nlohmann::json JsonRpcError(const nlohmann::json& id, int code, const std::string& message);

}  // namespace dbs::mcp

#include "mcp/mcp_server.h"

namespace dbs::mcp {

using nlohmann::json;

namespace {
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
}  // namespace

json JsonRpcError(const json& id, int code, const std::string& message) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

McpServer::McpServer(std::string name, std::string version, std::string instructions,
                     std::vector<McpTool> tools)
    : name_(std::move(name)),
      version_(std::move(version)),
      instructions_(std::move(instructions)),
      tools_(std::move(tools)) {}

const std::vector<std::string>& McpServer::SupportedVersions() {
  static const std::vector<std::string> v = {"2025-06-18", "2025-03-26", "2024-11-05"};
  return v;
}

std::string McpServer::protocol_version() {
  std::lock_guard<std::mutex> l(mu_);
  return protocol_;
}

std::optional<json> McpServer::Handle(const json& msg) {
  if (!msg.is_object()) return JsonRpcError(nullptr, kInvalidRequest, "a message is an object");
  const json id = msg.contains("id") ? msg["id"] : json();
  if (msg.value("jsonrpc", "") != "2.0") {
    return JsonRpcError(id, kInvalidRequest, "jsonrpc must be \"2.0\"");
  }
  if (!msg.contains("method")) return std::nullopt;  // a response to us: we send no requests
  if (!msg["method"].is_string())
    return JsonRpcError(id, kInvalidRequest, "method must be a string");
  const std::string method = msg["method"];
  const bool notification = !msg.contains("id");
  if (notification) return std::nullopt;  // notifications/initialized, cancelled, ...
  if (!id.is_string() && !id.is_number_integer()) {
    return JsonRpcError(nullptr, kInvalidRequest, "id must be a string or an integer");
  }
  const json params =
      msg.contains("params") && msg["params"].is_object() ? msg["params"] : json::object();
  json result;
  if (method == "initialize") {
    result = Initialize(params);
  } else if (method == "ping") {
    result = json::object();
  } else if (method == "tools/list") {
    result = ListTools();
  } else if (method == "tools/call") {
    auto r = CallTool(params);
    if (!r.ok()) return JsonRpcError(id, kInvalidParams, r.status().message());
    result = std::move(*r);
  } else {
    return JsonRpcError(id, kMethodNotFound, "unknown method " + method.substr(0, 64));
  }
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}};
}

json McpServer::Initialize(const json& params) {
  std::string asked = params.value("protocolVersion", "");
  std::string agreed = SupportedVersions().front();
  for (const auto& v : SupportedVersions()) {
    if (v == asked) agreed = v;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    protocol_ = agreed;
  }
  return json{
      {"protocolVersion", agreed},
      {"capabilities", {{"tools", {{"listChanged", false}}}}},
      {"serverInfo", {{"name", name_}, {"title", "dbstreams (read-only)"}, {"version", version_}}},
      {"instructions", instructions_}};
}

json McpServer::ListTools() const {
  json tools = json::array();
  for (const auto& t : tools_) {
    tools.push_back({{"name", t.name},
                     {"title", t.title},
                     {"description", t.description},
                     {"inputSchema", t.input_schema},
                     {"annotations",
                      {{"title", t.title},
                       {"readOnlyHint", true},
                       {"destructiveHint", false},
                       {"idempotentHint", true},
                       {"openWorldHint", false}}}});
  }
  return json{{"tools", tools}};
}

Result<json> McpServer::CallTool(const json& params) {
  if (!params.contains("name") || !params["name"].is_string()) {
    return Status::InvalidArgument("tools/call needs params.name");
  }
  const std::string name = params["name"];
  const McpTool* tool = nullptr;
  for (const auto& t : tools_) {
    if (t.name == name) tool = &t;
  }
  if (tool == nullptr) return Status::InvalidArgument("unknown tool " + name.substr(0, 64));
  json args = params.contains("arguments") ? params["arguments"] : json::object();
  if (args.is_null()) args = json::object();
  if (!args.is_object()) return Status::InvalidArgument("arguments must be an object");
  // Unknown arguments are refused (the model learns the real names from the answer).
  const json& props =
      tool->input_schema.contains("properties") ? tool->input_schema["properties"] : json::object();
  Status bad = Status::Ok();
  for (const auto& [k, v] : args.items()) {
    if (!props.contains(k)) {
      bad = Status::InvalidArgument("unknown argument " + k.substr(0, 64) + " for " + name);
      break;
    }
  }
  if (bad.ok() && tool->input_schema.contains("required")) {
    for (const auto& r : tool->input_schema["required"]) {
      if (!args.contains(r.get<std::string>())) {
        bad = Status::InvalidArgument("argument " + r.get<std::string>() + " is required");
        break;
      }
    }
  }
  Result<json> out = bad.ok() ? tool->run(args) : Result<json>(bad);
  if (!out.ok()) {
    return json{{"content", json::array({{{"type", "text"}, {"text", out.status().message()}}})},
                {"isError", true}};
  }
  json structured = out->is_object() ? *out : json{{"result", *out}};
  return json{
      {"content",
       json::array({{{"type", "text"},
                     {"text", structured.dump(-1, ' ', false, json::error_handler_t::replace)}}})},
      {"structuredContent", structured},
      {"isError", false}};
}

}  // namespace dbs::mcp

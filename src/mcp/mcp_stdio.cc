#include "mcp/mcp_stdio.h"

#include <httplib.h>

#include <iostream>

#include <nlohmann/json.hpp>

#include "mcp/mcp_server.h"

namespace dbs::mcp {

using nlohmann::json;

int RunStdioBridge(const std::string& url, const std::string& api_key, std::istream& in,
                   std::ostream& out, std::ostream& err) {
  httplib::Client client(url);
  client.set_connection_timeout(10, 0);
  client.set_read_timeout(3600, 0);
  client.set_write_timeout(60, 0);
  std::string session, protocol;
  std::string line;
  auto emit = [&](const json& j) {
    out << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    out.flush();
  };
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json msg = json::parse(line, nullptr, false);
    if (msg.is_discarded()) {
      emit(JsonRpcError(nullptr, -32700, "not JSON"));
      continue;
    }
    const bool request = msg.is_object() && msg.contains("method") && msg.contains("id");
    const json id = msg.is_object() && msg.contains("id") ? msg["id"] : json();
    httplib::Headers h = {{"X-API-Key", api_key},
                          {"Accept", "application/json, text/event-stream"}};
    if (!session.empty()) h.emplace("Mcp-Session-Id", session);
    if (!protocol.empty()) h.emplace("MCP-Protocol-Version", protocol);
    auto r = client.Post("/mcp", h, msg.dump(), "application/json");
    if (!r) {
      const std::string why =
          "cannot reach the dbstreams server at " + url + ": " + httplib::to_string(r.error());
      err << "dbstreams mcp: " << why << "\n";
      if (request) emit(JsonRpcError(id, -32603, why));
      continue;
    }
    if (r->has_header("Mcp-Session-Id")) session = r->get_header_value("Mcp-Session-Id");
    if (r->status == 202) continue;
    json answer = json::parse(r->body, nullptr, false);
    if (r->status == 200 && !answer.is_discarded()) {
      if (answer.contains("result") && answer["result"].is_object() &&
          answer["result"].contains("protocolVersion")) {
        protocol = answer["result"]["protocolVersion"].get<std::string>();
      }
      emit(answer);
      continue;
    }
    // An error: the JSON-RPC error the endpoint wrote, or the API's own (401, 429, ...).
    if (!answer.is_discarded() && answer.contains("jsonrpc")) {
      emit(answer);
      continue;
    }
    std::string why = "the dbstreams server answered HTTP " + std::to_string(r->status);
    if (!answer.is_discarded() && answer.contains("error") && answer["error"].is_object()) {
      why += ": " + answer["error"].value("message", "");
    }
    err << "dbstreams mcp: " << why << "\n";
    if (request) emit(JsonRpcError(id, -32603, why));
  }
  if (!session.empty()) {
    (void)client.Delete("/mcp", {{"X-API-Key", api_key}, {"Mcp-Session-Id", session}});
  }
  return 0;
}

}  // namespace dbs::mcp

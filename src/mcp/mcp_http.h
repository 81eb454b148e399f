// The MCP Streamable HTTP transport (protocol revision 2025-06-18) for one endpoint (/mcp):
// sessions, headers and status codes; the messages go to an McpServer per session.
//
// Contract:
//  - POST carries one JSON-RPC message. An initialize request opens a session: its answer has
//    the Mcp-Session-Id header (a random id), which every later request must send (400 without
//    it, 404 for an unknown or ended one). A request is answered 200 with one JSON object
//    (application/json); a notification or a response 202 with no body.
//  - An MCP-Protocol-Version header naming a revision the server does not speak is 400.
//  - GET (a server-to-client event stream) is 405: the server sends no requests of its own.
//  - DELETE ends the session (204; 404 when unknown).
//  - At most `max_sessions` sessions; the least recently used goes when a new one needs room;
//    a session unused for `idle` ends by itself. Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "mcp/mcp_server.h"

namespace dbs::mcp {

struct HttpAnswer {
  int status = 200;
  std::string content_type;  // "" with no body
  std::string body;
  std::map<std::string, std::string> headers;
};

class McpHttpEndpoint {
 public:
  using Factory = std::function<std::unique_ptr<McpServer>()>;
  explicit McpHttpEndpoint(Factory factory, size_t max_sessions = 256,
                           std::chrono::minutes idle = std::chrono::minutes(60));
  // `session` and `protocol` are the request's Mcp-Session-Id and MCP-Protocol-Version ("" when
  // absent).
  HttpAnswer Post(const nlohmann::json& message, const std::string& session,
                  const std::string& protocol);
  HttpAnswer Get();
  HttpAnswer Delete(const std::string& session);

 private:
  struct Session {
    std::shared_ptr<McpServer> server;
    std::chrono::steady_clock::time_point used;
  };
  static HttpAnswer Error(int status, const nlohmann::json& id, int code, const std::string& m);

  Factory factory_;
  const size_t max_sessions_;
  const std::chrono::minutes idle_;
  std::mutex mu_;
  std::map<std::string, Session> sessions_;
};

}  // namespace dbs::mcp

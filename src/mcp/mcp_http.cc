#include "mcp/mcp_http.h"

#include <sys/random.h>

#include <algorithm>

namespace dbs::mcp {

using nlohmann::json;

namespace {
std::string NewSessionId() {
  unsigned char b[16] = {};
  if (getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b)) {
    const auto t = std::chrono::steady_clock::now().time_since_epoch().count();
    for (size_t i = 0; i < sizeof b; ++i) b[i] = static_cast<unsigned char>(t >> (i % 8 * 8));
  }
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s += hex[c >> 4];
    s += hex[c & 15];
  }
  return s;
}
}  // namespace

McpHttpEndpoint::McpHttpEndpoint(Factory factory, size_t max_sessions, std::chrono::minutes idle)
    : factory_(std::move(factory)), max_sessions_(max_sessions), idle_(idle) {}

HttpAnswer McpHttpEndpoint::Error(int status, const json& id, int code, const std::string& m) {
  HttpAnswer a;
  a.status = status;
  a.content_type = "application/json";
  a.body = JsonRpcError(id, code, m).dump();
  return a;
}

HttpAnswer McpHttpEndpoint::Post(const json& message, const std::string& session,
                                 const std::string& protocol) {
  const json id = message.is_object() && message.contains("id") ? message["id"] : json();
  if (!protocol.empty()) {
    const auto& v = McpServer::SupportedVersions();
    if (std::find(v.begin(), v.end(), protocol) == v.end()) {
      return Error(400, id, -32600, "unsupported MCP-Protocol-Version " + protocol.substr(0, 32));
    }
  }
  const bool initialize = message.is_object() && message.value("method", "") == "initialize";
  std::shared_ptr<McpServer> server;
  std::string sid = session;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      it = now - it->second.used > idle_ ? sessions_.erase(it) : std::next(it);
    }
    if (initialize && session.empty()) {
      if (sessions_.size() >= max_sessions_) {
        auto oldest = std::min_element(
            sessions_.begin(), sessions_.end(),
            [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
        sessions_.erase(oldest);
      }
      sid = NewSessionId();
      server = factory_();
      sessions_[sid] = {server, now};
    } else if (session.empty()) {
      return Error(400, id, -32600, "Mcp-Session-Id is required (send initialize first)");
    } else {
      auto it = sessions_.find(session);
      if (it == sessions_.end()) return Error(404, id, -32600, "unknown or ended MCP session");
      it->second.used = now;
      server = it->second.server;
    }
  }
  std::optional<json> reply = server->Handle(message);
  HttpAnswer a;
  if (!reply) {
    a.status = 202;
    return a;
  }
  a.content_type = "application/json";
  a.body = reply->dump(-1, ' ', false, json::error_handler_t::replace);
  if (initialize) a.headers["Mcp-Session-Id"] = sid;
  return a;
}

HttpAnswer McpHttpEndpoint::Get() {
  HttpAnswer a;
  a.status = 405;
  a.headers["Allow"] = "POST, DELETE";
  a.content_type = "application/json";
  a.body =
      JsonRpcError(nullptr, -32000, "this server sends no messages of its own: use POST").dump();
  return a;
}

HttpAnswer McpHttpEndpoint::Delete(const std::string& session) {
  std::lock_guard<std::mutex> l(mu_);
  HttpAnswer a;
  a.status = sessions_.erase(session) > 0 ? 204 : 404;
  return a;
}

}  // namespace dbs::mcp

// The explorer's and the MCP server's pure parts: statement readings, redaction, the JSON-RPC
// protocol and the Streamable HTTP sessions (no servers).
#include <gtest/gtest.h>

#include "explorer/sql_text.h"
#include "mcp/mcp_http.h"
#include "mcp/mcp_server.h"
#include "mcp/redact.h"

namespace dbs {
namespace {

using nlohmann::json;

TEST(SqlText, FirstKeywordSkipsCommentsAndParentheses) {
  EXPECT_EQ(explorer::FirstKeyword("  -- hi\n /* a /* nested */ b */ (select 1)"), "SELECT");
  EXPECT_EQ(explorer::FirstKeyword("# mysql comment\nWith x AS (SELECT 1) SELECT * FROM x"),
            "WITH");
  EXPECT_EQ(explorer::FirstKeyword("update t set a = 1"), "UPDATE");
  EXPECT_EQ(explorer::FirstKeyword("  "), "");
  EXPECT_TRUE(explorer::IsSelectLike("VALUES (1)"));
  EXPECT_FALSE(explorer::IsSelectLike("EXPLAIN SELECT 1"));
  EXPECT_EQ(explorer::TrimStatement("  SELECT 1 ;; \n"), "SELECT 1");
}

TEST(SqlText, SeveralStatementsOutsideQuotesOnly) {
  EXPECT_FALSE(explorer::HasSeveralStatements("SELECT 1;"));
  EXPECT_FALSE(explorer::HasSeveralStatements("SELECT 1; -- done\n ;"));
  EXPECT_FALSE(explorer::HasSeveralStatements("SELECT 'a;b', \"c;d\", `e;f` FROM t"));
  EXPECT_FALSE(explorer::HasSeveralStatements("SELECT 'it''s; fine'"));
  EXPECT_FALSE(explorer::HasSeveralStatements("SELECT $tag$ ; $tag$, $$;$$"));
  EXPECT_FALSE(explorer::HasSeveralStatements("SELECT 1 /* ; */"));
  EXPECT_TRUE(explorer::HasSeveralStatements("SELECT 1; DELETE FROM t"));
  EXPECT_TRUE(explorer::HasSeveralStatements("SELECT 'x\\'; DROP TABLE t; --'"))
      << "PostgreSQL ends the string at the second quote";
  EXPECT_TRUE(explorer::HasSeveralStatements("SELECT 'x\\'' ; DROP TABLE t"))
      << "MySQL reads \\' as an escaped quote";
  EXPECT_TRUE(explorer::CheckSelectOnly("WITH a AS (SELECT 1) SELECT * FROM a").ok());
  EXPECT_FALSE(explorer::CheckSelectOnly("DELETE FROM t").ok());
  EXPECT_FALSE(explorer::CheckSelectOnly("SELECT 1; SELECT 2").ok());
  EXPECT_FALSE(explorer::CheckSelectOnly("").ok());
}

TEST(Redact, SecretsInTextAndFields) {
  EXPECT_EQ(mcp::RedactText("postgres://app:hunter2@db:5432/x"),
            "postgres://app:[redacted]@db:5432/x");
  EXPECT_EQ(mcp::RedactText("host=db password=hunter2 user=app"),
            "host=db password=[redacted] user=app");
  EXPECT_EQ(mcp::RedactText("Authorization: Bearer abc.def-ghi"),
            "Authorization: [redacted] [redacted]");
  EXPECT_EQ(mcp::RedactText("sent Bearer abc.def-ghi"), "sent Bearer [redacted]");
  EXPECT_EQ(mcp::RedactText("token: \"x y\" next"), "token: [redacted] next");
  EXPECT_EQ(mcp::RedactText("key dbs_0123456789abcdef0123 used"), "key [redacted] used");
  EXPECT_EQ(mcp::RedactText("AKIAABCDEFGHIJKLMNOP"), "[redacted]");
  EXPECT_EQ(mcp::RedactText("nothing secret here"), "nothing secret here");
  const json in = {{"password", "p"},
                   {"Secret_Key", "s"},
                   {"hasPassword", true},
                   {"nested", {{"dsn", "mysql://a:b@h/"}, {"note", "mysql://a:b@h/"}}},
                   {"list", {"x password=y"}},
                   {"primaryKey", {"id"}}};
  const json out = mcp::Redact(in);
  EXPECT_EQ(out["password"], "[redacted]");
  EXPECT_EQ(out["Secret_Key"], "[redacted]");
  EXPECT_EQ(out["hasPassword"], true);
  EXPECT_EQ(out["nested"]["dsn"], "[redacted]");
  EXPECT_EQ(out["nested"]["note"], "mysql://a:[redacted]@h/");
  EXPECT_EQ(out["list"][0], "x password=[redacted]");
  EXPECT_EQ(out["primaryKey"], json::array({"id"}));
}

std::vector<mcp::McpTool> Tools() {
  mcp::McpTool echo;
  echo.name = "echo";
  echo.title = "Echo";
  echo.description = "returns its text";
  echo.input_schema = {
      {"type", "object"}, {"properties", {{"text", {{"type", "string"}}}}}, {"required", {"text"}}};
  echo.run = [](const json& a) -> Result<json> {
    if (a["text"] == "fail") return Status::InvalidArgument("refused");
    return json{{"text", a["text"]}};
  };
  return {echo};
}

json Request(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

TEST(McpProtocol, InitializeToolsAndErrors) {
  mcp::McpServer s("dbstreams", "9.9", "hello", Tools());
  auto init = s.Handle(Request(1, "initialize", {{"protocolVersion", "2025-03-26"}}));
  ASSERT_TRUE(init);
  EXPECT_EQ((*init)["result"]["protocolVersion"], "2025-03-26");
  EXPECT_EQ((*init)["result"]["serverInfo"]["name"], "dbstreams");
  EXPECT_TRUE((*init)["result"]["capabilities"].contains("tools"));
  auto newest = s.Handle(Request(2, "initialize", {{"protocolVersion", "1999-01-01"}}));
  EXPECT_EQ((*newest)["result"]["protocolVersion"], "2025-06-18");
  EXPECT_FALSE(s.Handle({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}));
  EXPECT_EQ((*s.Handle(Request(3, "ping")))["result"], json::object());
  auto list = s.Handle(Request(4, "tools/list"));
  ASSERT_EQ((*list)["result"]["tools"].size(), 1u);
  EXPECT_EQ((*list)["result"]["tools"][0]["annotations"]["readOnlyHint"], true);
  auto ok = s.Handle(Request(5, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}}));
  EXPECT_EQ((*ok)["result"]["structuredContent"], json({{"text", "hi"}}));
  EXPECT_EQ((*ok)["result"]["isError"], false);
  auto refused =
      s.Handle(Request(6, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "fail"}}}}));
  EXPECT_EQ((*refused)["result"]["isError"], true);
  EXPECT_EQ((*refused)["result"]["content"][0]["text"], "refused");
  auto missing =
      s.Handle(Request(7, "tools/call", {{"name", "echo"}, {"arguments", json::object()}}));
  EXPECT_EQ((*missing)["result"]["isError"], true);
  auto extra = s.Handle(
      Request(8, "tools/call", {{"name", "echo"}, {"arguments", {{"text", "a"}, {"x", 1}}}}));
  EXPECT_EQ((*extra)["result"]["isError"], true);
  EXPECT_EQ((*s.Handle(Request(9, "tools/call", {{"name", "nope"}})))["error"]["code"], -32602);
  EXPECT_EQ((*s.Handle(Request(10, "resources/list")))["error"]["code"], -32601);
  EXPECT_EQ((*s.Handle({{"jsonrpc", "1.0"}, {"id", 11}, {"method", "ping"}}))["error"]["code"],
            -32600);
}

TEST(McpHttp, SessionsAndStatuses) {
  mcp::McpHttpEndpoint e([] { return std::make_unique<mcp::McpServer>("d", "1", "", Tools()); }, 2);
  EXPECT_EQ(e.Post(Request(1, "ping"), "", "").status, 400) << "no session";
  EXPECT_EQ(e.Post(Request(1, "ping"), "nope", "").status, 404);
  EXPECT_EQ(e.Post(Request(1, "initialize"), "", "1999-01-01").status, 400);
  auto init = e.Post(Request(1, "initialize", {{"protocolVersion", "2025-06-18"}}), "", "");
  ASSERT_EQ(init.status, 200);
  const std::string sid = init.headers["Mcp-Session-Id"];
  ASSERT_EQ(sid.size(), 32u);
  EXPECT_EQ(e.Post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, sid, "2025-06-18")
                .status,
            202);
  auto ping = e.Post(Request(2, "ping"), sid, "2025-06-18");
  EXPECT_EQ(ping.status, 200);
  EXPECT_EQ(json::parse(ping.body)["id"], 2);
  EXPECT_EQ(e.Get().status, 405);
  // The least recently used session goes when a third needs room.
  auto second = e.Post(Request(1, "initialize"), "", "");
  auto third = e.Post(Request(1, "initialize"), "", "");
  EXPECT_EQ(e.Post(Request(3, "ping"), sid, "").status, 404);
  EXPECT_EQ(e.Delete(second.headers["Mcp-Session-Id"]).status, 204);
  EXPECT_EQ(e.Delete(second.headers["Mcp-Session-Id"]).status, 404);
  EXPECT_EQ(e.Post(Request(4, "ping"), third.headers["Mcp-Session-Id"], "").status, 200);
}

}  // namespace
}  // namespace dbs

// The MCP server with the official TypeScript SDK client (tests/mcp/mcp_client.mjs) over both
// transports, against a real API server, PostgreSQL and MariaDB: tool listing, every tool,
// refusals of writes, and redaction of a secret planted in a run's log.
#include <sys/wait.h>

#include <cstdio>
#include <thread>

#include "explorer_fixture.h"

namespace dbs {
namespace {

using nlohmann::json;
using testing::ExplorerEnv;

constexpr const char kSecret[] = "TopSecret-9f3e1";

TEST(Mcp, OfficialSdkClientOverHttpAndStdio) {
  ExplorerEnv::SetUp();
  ExplorerEnv& env = *ExplorerEnv::Get();
  auto pg = testing::SharedServers::Postgres();
  auto my = testing::SharedServers::MariaDb();
  // A stream with a failed run whose log holds a secret.
  auto s = env.Post("/api/v1/streams", {{"name", "mcp-stream"},
                                        {"source", {{"connection", env.pg_id}}},
                                        {"target", {{"connection", env.my_id}}}});
  ASSERT_EQ(s.first, 201) << s.second.dump();
  store::RunRecord run;
  run.id = "r_mcptest0000001";
  run.stream_id = s.second["id"];
  run.stream_name = "mcp-stream";
  run.state = "failed";
  run.error = std::string("cannot connect to postgres://app:") + kSecret + "@db.example/x";
  run.started_at = store::NowMillis() - 5000;
  run.ended_at = store::NowMillis();
  ASSERT_TRUE(env.config->PutRun(run).ok());
  const std::string planted = "retrying the target after a refusal";
  json rec = {{"ts", "2026-01-01T00:00:00Z"},
              {"level", "warn"},
              {"component", "writer"},
              {"service", "writer-test"},
              {"message", planted + " with password=" + kSecret + " on mysql://root:" + kSecret +
                              "@db.example/ and Bearer " + kSecret},
              {"fields", {{"stream", "mcp-stream"}, {"password", kSecret}, {"dsn", kSecret}}}};
  ASSERT_TRUE(env.nats->PublishCore("dbs.logs.writer-test", rec.dump()).ok());
  ASSERT_TRUE(env.nats->Flush(std::chrono::seconds(5)).ok());
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    auto st = env.Get("/api/v1/runs/" + run.id);
    seen = st.first == 200 && st.second["recentLogs"].dump().find(planted) != std::string::npos;
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(seen) << "the planted log record did not reach the API";

  const std::string cmd =
      std::string("cd '") + DBS_SOURCE_DIR +
      "/tests/mcp' && MCP_URL='http://127.0.0.1:" + std::to_string(env.server->port()) +
      "' MCP_KEY='" + env.key + "' DBSTREAMS_BIN='" + DBS_DBSTREAMS_BIN + "' PG_CONN='" +
      env.pg_id + "' MY_CONN='" + env.my_id + "' RUN_ID='" + run.id + "' PLANTED='" + planted +
      "' FILE_ROOT='" + env.file_root + "' SECRETS='" + kSecret + "," + (*pg)->password() + "," +
      (*my)->password() + "," + env.key + "' '" + DBS_NODE_BIN + "' mcp_client.mjs 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int rc = pclose(p);
  std::printf("%s", out.c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << out;
  EXPECT_NE(out.find(" passed, 0 failed"), std::string::npos);
  ExplorerEnv::TearDown();
}

}  // namespace
}  // namespace dbs

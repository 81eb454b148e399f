// Static serving of the web UI (src/api/static_ui.h) over real HTTP on a free port: content
// types, cache headers, precompressed scripts, SPA fallback, and no way out of the folder.
#include "api/static_ui.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace fs = std::filesystem;

namespace {

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

class StaticUiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dbs-static-ui-" + std::to_string(getpid()));
    fs::remove_all(root_);
    dist_ = root_ / "dist";
    Write(dist_ / "index.html", "<!doctype html><title>app</title>");
    Write(dist_ / "favicon.svg", "<svg/>");
    Write(dist_ / "assets" / "index-abc123.js", "console.log('plain')");
    Write(dist_ / "assets" / "index-abc123.js.br", "BROTLI");
    Write(dist_ / "assets" / "index-abc123.js.gz", "GZIP");
    Write(dist_ / "assets" / "app-def456.css", "body{}");
    Write(root_ / "secret.txt", "SECRET");
    fs::create_symlink(root_ / "secret.txt", dist_ / "assets" / "link.txt");
    fs::create_symlink(root_, dist_ / "up");
    Start(dist_.string());
  }
  void TearDown() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
    fs::remove_all(root_);
  }
  void Start(const std::string& dir) {
    dbs::api::RegisterStaticUi(&server_, dir);
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  httplib::Result Get(const std::string& path, const std::string& accept_encoding = "") {
    httplib::Client c("127.0.0.1", port_);
    c.set_decompress(false);
    httplib::Headers h;
    if (!accept_encoding.empty()) h.emplace("Accept-Encoding", accept_encoding);
    return c.Get(path, h);
  }

  fs::path root_, dist_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(StaticUiTest, ServesIndexAndFilesWithTypesAndCacheHeaders) {
  auto r = Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "<!doctype html><title>app</title>");
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(r->get_header_value("Cache-Control"), "no-cache");

  r = Get("/favicon.svg");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Content-Type"), "image/svg+xml");
  EXPECT_EQ(r->get_header_value("Cache-Control"), "no-cache");

  r = Get("/assets/app-def456.css");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "body{}");
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/css; charset=utf-8");
  EXPECT_EQ(r->get_header_value("Cache-Control"), "public, max-age=31536000, immutable");
}

TEST_F(StaticUiTest, ScriptsArePrecompressedWhenAccepted) {
  auto r = Get("/assets/index-abc123.js", "gzip, deflate, br");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "BROTLI");
  EXPECT_EQ(r->get_header_value("Content-Encoding"), "br");
  EXPECT_EQ(r->get_header_value("Vary"), "Accept-Encoding");
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/javascript; charset=utf-8");
  r = Get("/assets/index-abc123.js", "gzip");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "GZIP");
  EXPECT_EQ(r->get_header_value("Content-Encoding"), "gzip");
  r = Get("/assets/index-abc123.js");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "console.log('plain')");
  EXPECT_FALSE(r->has_header("Content-Encoding"));
}

TEST_F(StaticUiTest, ClientRoutesGetIndexMissingFilesAre404) {
  for (const char* p : {"/streams", "/streams/s_1/edit", "/runs/r_1"}) {
    auto r = Get(p);
    ASSERT_TRUE(r) << p;
    EXPECT_EQ(r->status, 200) << p;
    EXPECT_EQ(r->body, "<!doctype html><title>app</title>") << p;
  }
  auto r = Get("/assets/missing-000.js");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

TEST_F(StaticUiTest, NothingOutsideTheFolder) {
  for (const char* p : {"/../secret.txt", "/..%2fsecret.txt", "/%2e%2e/secret.txt",
                        "/assets/..%2f..%2fsecret.txt", "/assets/%2E%2E/%2E%2E/secret.txt",
                        "/..\\secret.txt", "/assets/link.txt", "/up/secret.txt"}) {
    auto r = Get(p);
    ASSERT_TRUE(r) << p;
    EXPECT_EQ(r->body.find("SECRET"), std::string::npos) << p;
    EXPECT_NE(r->status, 200) << p << " gave " << r->body;
  }
}

TEST_F(StaticUiTest, ApiAndMetricsPathsAreNotTheUi) {
  for (const char* p : {"/api", "/api/v1/nope", "/api/v1/streams/x", "/metrics"}) {
    auto r = Get(p);
    ASSERT_TRUE(r) << p;
    EXPECT_EQ(r->status, 404) << p;
    EXPECT_EQ(r->body.find("<title>app</title>"), std::string::npos) << p;
  }
  httplib::Request req;
  req.method = "GET";
  req.path = "/streams";
  EXPECT_TRUE(dbs::api::IsStaticUiRequest(req));
  req.path = "/api/v1/streams";
  EXPECT_FALSE(dbs::api::IsStaticUiRequest(req));
  req.path = "/metrics";
  EXPECT_FALSE(dbs::api::IsStaticUiRequest(req));
  req.path = "/";
  req.method = "POST";
  EXPECT_FALSE(dbs::api::IsStaticUiRequest(req));
}

TEST(StaticUiDir, Flag) {
  EXPECT_EQ(dbs::api::ResolveUiDir("off"), "");
  EXPECT_EQ(dbs::api::ResolveUiDir("/some/where"), "/some/where");
  // "auto" from the test binary (build/<kind>/tests/...) finds the repository's ui/dist when it
  // is built, and nothing otherwise; it never invents a folder.
  std::string found = dbs::api::ResolveUiDir("auto");
  if (!found.empty()) {
    EXPECT_TRUE(fs::is_regular_file(fs::path(found) / "index.html"));
  }
}

TEST(StaticUiNotBuilt, RootExplainsHowToBuild) {
  httplib::Server s;
  dbs::api::RegisterStaticUi(&s, "");
  int port = s.bind_to_any_port("127.0.0.1");
  std::thread t([&] { s.listen_after_bind(); });
  while (!s.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get("/");
  s.stop();
  t.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("npm run build"), std::string::npos);
}

}  // namespace

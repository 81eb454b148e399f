#include "api/static_ui.h"

#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace dbs::api {

namespace fs = std::filesystem;

namespace {

const char kNotBuilt[] =
    "<!doctype html><meta charset=utf-8><title>dbstreams</title>"
    "<body style='font-family:sans-serif;max-width:40em;margin:3em auto'>"
    "<h1>dbstreams</h1><p>The API is running at <code>/api/v1</code>, but the web UI is not "
    "built or not found.</p><p>Build it with <code>npm ci &amp;&amp; npm run build</code> in "
    "<code>ui/</code> (<code>scripts/build.sh</code> does it), or point the server at a built "
    "UI with <code>--ui-dir</code>.</p></body>";

bool StartsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// cpp-httplib compresses text/* responses itself when the browser accepts it, with brotli at
// quality 11 (0.7 s for a 200 KB script on a busy 2-core machine). JavaScript, the bulk of the
// UI, is compressed once at build time (ui/scripts/compress.mjs) and sent under this type,
// which httplib leaves alone (it only compresses an exact "application/javascript").
constexpr const char* kJavaScript = "application/javascript; charset=utf-8";

// The accepted precompressed variant of `file` ({".br", "br"} or {".gz", "gzip"}), if any.
std::pair<std::string, std::string> Precompressed(const httplib::Request& req,
                                                  const fs::path& file) {
  const std::string accept = req.get_header_value("Accept-Encoding");
  std::error_code ec;
  for (const auto& [ext, name] :
       {std::pair<const char*, const char*>{".br", "br"}, {".gz", "gzip"}}) {
    if (accept.find(name) == std::string::npos) continue;
    fs::path p = file;
    p += ext;
    if (fs::is_regular_file(p, ec)) return {p.string(), name};
  }
  return {};
}

std::string ContentType(const std::string& ext) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", kJavaScript},
      {".mjs", kJavaScript},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".webmanifest", "application/manifest+json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".webp", "image/webp"},
      {".ico", "image/x-icon"},
      {".woff", "font/woff"},
      {".woff2", "font/woff2"},
      {".ttf", "font/ttf"},
      {".txt", "text/plain; charset=utf-8"},
      {".wasm", "application/wasm"},
  };
  for (const auto& [e, t] : kTypes) {
    if (ext == e) return t;
  }
  return "application/octet-stream";
}

bool ReadFile(const fs::path& p, std::string* out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return static_cast<bool>(in) || in.eof();
}

// The file below `root` (canonical) that `url_path` (already percent-decoded) names, or an
// empty path when it names none or tries to leave `root`.
fs::path Resolve(const fs::path& root, const std::string& url_path) {
  if (url_path.empty() || url_path[0] != '/') return {};
  if (url_path.find('\\') != std::string::npos || url_path.find('\0') != std::string::npos) {
    return {};
  }
  fs::path rel;
  std::stringstream ss(url_path.substr(1));
  for (std::string seg; std::getline(ss, seg, '/');) {
    if (seg.empty() || seg == ".") continue;
    if (seg == "..") return {};
    rel /= seg;
  }
  if (rel.empty()) return {};
  std::error_code ec;
  fs::path p = fs::canonical(root / rel, ec);
  if (ec || !fs::is_regular_file(p, ec)) return {};
  // Inside the root, after symlinks.
  auto [r, _] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
  if (r != root.end()) return {};
  return p;
}

}  // namespace

bool IsStaticUiRequest(const httplib::Request& req) {
  if (req.method != "GET" && req.method != "HEAD") return false;
  const std::string& p = req.path;
  if (p == "/api" || StartsWith(p, "/api/")) return false;
  if (p == "/metrics" || StartsWith(p, "/metrics/")) return false;
  if (p == "/mcp") return false;  // the MCP endpoint (explorer_routes.h): behind the key
  return true;
}

void RegisterStaticUi(httplib::Server* server, const std::string& dir) {
  std::error_code ec;
  fs::path root = dir.empty() ? fs::path() : fs::canonical(dir, ec);
  const bool built = !root.empty() && !ec && fs::is_regular_file(root / "index.html", ec);
  server->Get(".*", [root, built](const httplib::Request& req, httplib::Response& res) {
    if (!IsStaticUiRequest(req)) {
      res.status = 404;  // the server's error handler writes the API's JSON error
      return;
    }
    res.set_header("X-Content-Type-Options", "nosniff");
    if (!built) {
      res.set_header("Cache-Control", "no-cache");
      res.set_content(kNotBuilt, "text/html; charset=utf-8");
      return;
    }
    if (req.path.find("..") != std::string::npos || req.path.find('\\') != std::string::npos) {
      res.status = 400;  // never a file outside the folder, and not a client route either
      res.set_content("bad path\n", "text/plain; charset=utf-8");
      return;
    }
    fs::path file = Resolve(root, req.path);
    const std::string last = req.path.substr(req.path.rfind('/') + 1);
    if (file.empty()) {
      if (last.find('.') != std::string::npos) {
        res.status = 404;
        res.set_content("not found\n", "text/plain; charset=utf-8");
        return;
      }
      file = root / "index.html";  // a client route: the app's router handles it
    }
    const std::string type = ContentType(file.extension().string());
    std::string body;
    if (type == kJavaScript) {
      res.set_header("Vary", "Accept-Encoding");
      auto [path, encoding] = Precompressed(req, file);
      if (!path.empty() && ReadFile(path, &body)) res.set_header("Content-Encoding", encoding);
    }
    if (body.empty() && !ReadFile(file, &body)) {
      res.status = 500;
      res.set_content("cannot read " + file.filename().string() + "\n",
                      "text/plain; charset=utf-8");
      return;
    }
    // Vite names files under assets/ by content hash: they never change.
    const bool hashed = StartsWith(req.path, "/assets/");
    res.set_header("Cache-Control", hashed ? "public, max-age=31536000, immutable" : "no-cache");
    if (file.filename() == "index.html") {
      res.set_header("X-Frame-Options", "DENY");
      res.set_header("Referrer-Policy", "no-referrer");
    }
    res.set_content(std::move(body), type);
  });
}

std::string ResolveUiDir(const std::string& flag) {
  if (flag == "off") return "";
  if (flag != "auto") return flag;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  fs::path d = exe.parent_path();
  for (int up = 0; up < 5 && !d.empty(); ++up, d = d.parent_path()) {
    fs::path cand = d / "ui" / "dist";
    if (fs::is_regular_file(cand / "index.html", ec)) return cand.string();
    if (d == d.parent_path()) break;
  }
  fs::path share = exe.parent_path().parent_path() / "share" / "dbstreams" / "ui";
  if (fs::is_regular_file(share / "index.html", ec)) return share.string();
  return "";
}

}  // namespace dbs::api

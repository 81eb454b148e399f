// Static serving of the built web UI (ui/dist) by the API server, at "/".
//
// Contract:
//  - RegisterStaticUi adds one GET handler that matches every path; register it after the API
//    routes so that they win. It never answers under /api/ or /metrics: those paths get a 404
//    that the server's error handler turns into the API's JSON error.
//  - A path names a file below `dir` (hashed assets under /assets/ are cached for a year and
//    marked immutable; everything else is revalidated); a path that names no file and has no
//    extension is a client route and gets index.html (SPA fallback); a missing file with an
//    extension is a 404.
//  - No path traversal: a path with a ".." segment, a backslash or a NUL is refused, and the
//    resolved file must lie inside the canonical `dir` (symlinks included).
//  - The UI is public (it holds no data: every API call it makes needs the API key), so
//    IsStaticUiRequest tells the server's authentication which requests need no key.
//  - With an empty `dir`, or one without index.html, "/" explains how to build the UI.
#pragma once

#include <string>

namespace httplib {
class Server;
struct Request;
}  // namespace httplib

namespace dbs::api {

// Registers the static UI handler on `server`; `dir` is the built UI folder ("" = none).
void RegisterStaticUi(httplib::Server* server, const std::string& dir);

// True for a GET/HEAD request the UI handler answers (not /api/..., not /metrics); the server
// lets these through without a key. A new server route outside /api/ must be excluded here,
// or it would be reachable without a key.
bool IsStaticUiRequest(const httplib::Request& req);

// The UI folder to serve for the --ui-dir value `flag`: "off" gives "", a path is used as is,
// "auto" looks for a built ui/dist next to the binary's source tree (<exe>/../.., up to four
// levels up: build/release/apps/dbstreams -> ui/dist) and then for an installed
// <prefix>/share/dbstreams/ui (binary in <prefix>/bin). "" when nothing is found.
std::string ResolveUiDir(const std::string& flag);

}  // namespace dbs::api

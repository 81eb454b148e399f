#include "api/api_server.h"

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "api/connections.h"
#include "api/explorer_routes.h"
#include "api/federated_routes.h"
#include "api/static_ui.h"
#include "bus/protocol.h"
#include "config/stream_config.h"
#include "core/config.h"
#include "core/logging.h"
#include "run/plan.h"
#include "security/data_cipher.h"

namespace dbs::api {

using nlohmann::json;
extern const char kOpenApiJson[];

namespace {

// A thread pool that grows on demand up to `max` threads (SSE clients hold a thread each).
class GrowingPool : public httplib::TaskQueue {
 public:
  explicit GrowingPool(size_t max) : max_(max) {}
  void enqueue(std::function<void()> fn) override {
    std::lock_guard<std::mutex> l(mu_);
    q_.push_back(std::move(fn));
    if (q_.size() > idle_ && threads_.size() < max_) {
      threads_.emplace_back([this] { Work(); });
    } else {
      cv_.notify_one();
    }
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      shutdown_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      ++idle_;
      cv_.wait(l, [&] { return shutdown_ || !q_.empty(); });
      --idle_;
      if (q_.empty()) return;  // shutdown
      auto fn = std::move(q_.front());
      q_.pop_front();
      l.unlock();
      fn();
      l.lock();
    }
  }
  size_t max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> q_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool shutdown_ = false;
};

struct HttpError {
  int status;
  std::string code;
  std::string message;
  json fields;
};

int HttpStatusFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kCorruption:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kAborted:
      return 409;
    case StatusCode::kUnsupported:
      return 501;
    case StatusCode::kUnavailable:
    case StatusCode::kTimeout:
      return 503;
    case StatusCode::kResourceExhausted:
      return 413;
    default:
      return 500;
  }
}

std::string CodeName(const Status& s) {
  std::string n(StatusCodeName(s.code()));
  std::string out;
  for (char c : n) {
    if (std::isupper(static_cast<unsigned char>(c)) && !out.empty()) out += '_';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// The field a validation message starts with ("tables[2].columns must be ...").
std::string FieldOf(const std::string& msg) {
  size_t sp = msg.find(' ');
  std::string f = msg.substr(0, sp);
  if (f.empty() || f.find_first_of(":'\"") != std::string::npos) return "";
  return f;
}

struct Ctx {
  const httplib::Request& req;
  httplib::Response& res;
  std::map<std::string, std::string> params;
  json body;
};

using Handler = std::function<Result<json>(Ctx&)>;
struct Route {
  std::string method;
  std::string path;
  Handler handler;
  int ok_status = 200;
  bool sse = false;
  std::function<void(Ctx&)> sse_handler;
};

// Describes why `text` is not JSON (position and reason), without exceptions.
struct ErrorSax : nlohmann::json_sax<json> {
  std::string message;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    message = ex.what();
    return false;
  }
};
std::string JsonError(const std::string& text) {
  ErrorSax sax;
  json::sax_parse(text, &sax, nlohmann::detail::input_format_t::json, true, false);
  return sax.message.empty() ? "syntax error" : sax.message;
}

// Per-client failed-authentication backoff (AuthBackoffOptions). Thread-safe.
class AuthLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  using Ms = std::chrono::milliseconds;
  explicit AuthLimiter(const AuthBackoffOptions& o) : o_(o) {}

  // How long `client` must still wait before it may authenticate (zero: now).
  Ms Blocked(const std::string& client, Clock::time_point now) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = clients_.find(client);
    if (it == clients_.end() || it->second.blocked_until <= now) return Ms(0);
    return std::chrono::ceil<Ms>(it->second.blocked_until - now);
  }
  // Counts a failure; returns the failures counted and the block it starts (zero: none). The
  // first block comes with the max_failures-th failure, each further one doubles it.
  std::pair<int, Ms> Fail(const std::string& client, Clock::time_point now) {
    std::lock_guard<std::mutex> l(mu_);
    if (clients_.size() >= o_.max_clients && !clients_.count(client)) Prune(now);
    Entry& e = clients_[client];
    if (e.failures > 0 && now - e.last > o_.window && now - e.blocked_until > o_.window) {
      e.failures = 0;  // an old episode: start again
    }
    e.failures++;
    e.last = now;
    if (e.failures < o_.max_failures) return {e.failures, Ms(0)};
    int doublings = std::min(e.failures - o_.max_failures, 30);
    Ms block = o_.first_block;
    for (int i = 0; i < doublings && block < o_.max_block; ++i) block *= 2;
    block = std::min(block, o_.max_block);
    e.blocked_until = now + block;
    return {e.failures, block};
  }
  void Succeed(const std::string& client) {
    std::lock_guard<std::mutex> l(mu_);
    clients_.erase(client);
  }

 private:
  struct Entry {
    int failures = 0;
    Clock::time_point last;
    Clock::time_point blocked_until;
  };
  // Drops clients whose episode is over; when none is, the one with the oldest failure.
  void Prune(Clock::time_point now) {
    for (auto it = clients_.begin(); it != clients_.end();) {
      bool over = now - it->second.last > o_.window && now >= it->second.blocked_until;
      it = over ? clients_.erase(it) : std::next(it);
    }
    if (clients_.size() < o_.max_clients || clients_.empty()) return;
    auto oldest = clients_.begin();
    for (auto it = clients_.begin(); it != clients_.end(); ++it) {
      if (it->second.last < oldest->second.last) oldest = it;
    }
    clients_.erase(oldest);
  }
  const AuthBackoffOptions o_;
  std::mutex mu_;
  std::map<std::string, Entry> clients_;
};

// Paging parameters of a list route (?offset=&limit=, like /streams).
struct Page {
  int offset = 0;
  int limit = 50;
};
Result<Page> PageOf(const httplib::Request& req);
json PageJson(json items, int64_t total, const Page& p) {
  return json{
      {"items", std::move(items)}, {"total", total}, {"offset", p.offset}, {"limit", p.limit}};
}
// One page of a list held in memory.
json Slice(const json& all, const Page& p) {
  json items = json::array();
  for (size_t i = static_cast<size_t>(p.offset);
       i < all.size() && items.size() < static_cast<size_t>(p.limit); ++i) {
    items.push_back(all[i]);
  }
  return PageJson(std::move(items), static_cast<int64_t>(all.size()), p);
}

// Fails when a string in the stream config is over `max` bytes, naming its path.
Status CheckStringSizes(const json& j, const std::string& path, size_t max) {
  if (j.is_string()) {
    if (j.get_ref<const std::string&>().size() > max) {
      return Status::InvalidArgument(path + " must be at most " + std::to_string(max) + " bytes");
    }
  } else if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      std::string key = k.size() <= 64 ? k : k.substr(0, 64) + "...";
      if (k.size() > max) return Status::InvalidArgument(key + " is too long a field name");
      DBS_RETURN_IF_ERROR(CheckStringSizes(v, path.empty() ? key : path + "." + key, max));
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      DBS_RETURN_IF_ERROR(CheckStringSizes(j[i], path + "[" + std::to_string(i) + "]", max));
    }
  }
  return Status::Ok();
}

// Limits of stored objects (bytes).
constexpr size_t kMaxNameBytes = 128;
constexpr size_t kMaxStreamStringBytes = 16384;
constexpr size_t kMaxStreamConfigBytes = 256 * 1024;

Status CheckName(const json& body, const char* field, bool required) {
  if (!body.contains(field)) {
    if (required) return Status::InvalidArgument(std::string(field) + " is required");
    return Status::Ok();
  }
  const json& v = body[field];
  if (!v.is_string() || v.get_ref<const std::string&>().empty() ||
      v.get_ref<const std::string&>().size() > kMaxNameBytes) {
    return Status::InvalidArgument(std::string(field) + " must be a string of 1 to " +
                                   std::to_string(kMaxNameBytes) + " bytes");
  }
  return Status::Ok();
}

thread_local std::string t_route;
thread_local std::chrono::steady_clock::time_point t_start;

}  // namespace

struct ApiServer::Impl {
  ApiServerOptions options;
  bus::NatsConnection* nats;
  store::ConfigStore* config;
  store::SecretsStore* secrets;
  LogHub logs;
  std::unique_ptr<Orchestrator> orch;
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
  int port = 0;
  // The separate metrics listener (ApiServerOptions::metrics_listen).
  std::unique_ptr<httplib::Server> metrics_server;
  std::thread metrics_thread;
  int metrics_port = 0;
  std::atomic<bool> stopping{false};
  std::atomic<int> sse_clients{0};
  std::vector<Route> routes;

  // Metrics.
  std::mutex metrics_mu;
  std::map<std::tuple<std::string, std::string, int>, uint64_t> requests;
  static constexpr double kBuckets[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
  uint64_t bucket_counts[sizeof(kBuckets) / sizeof(double)] = {};
  uint64_t latency_count = 0;
  double latency_sum = 0;

  // API key hash cache (hash -> until when the lookup holds).
  std::mutex auth_mu;
  std::map<std::string, std::chrono::steady_clock::time_point> key_cache;
  std::unique_ptr<AuthLimiter> limiter;
  std::atomic<uint64_t> auth_failures{0};  // 401s
  std::atomic<uint64_t> auth_blocks{0};    // blocks started by the limiter
  std::string metrics_token_hash;          // hex SHA-256 of the metrics token; "" when none

  void Add(std::string method, std::string path, Handler h, int ok_status = 200) {
    routes.push_back({std::move(method), std::move(path), std::move(h), ok_status, false, {}});
  }
  void AddSse(std::string path, std::function<void(Ctx&)> h) {
    routes.push_back({"GET", std::move(path), {}, 200, true, std::move(h)});
  }

  static void SendError(httplib::Response& res, int status, const std::string& code,
                        const std::string& message, const json& fields = nullptr) {
    json e = {{"code", code}, {"message", message}};
    if (!fields.is_null()) e["fields"] = fields;
    res.status = status;
    res.set_content(json({{"error", e}}).dump(), "application/json");
  }
  static void SendStatus(httplib::Response& res, const Status& s) {
    json fields = nullptr;
    if (s.code() == StatusCode::kInvalidArgument) {
      std::string f = FieldOf(s.message());
      if (!f.empty()) fields = json::array({{{"field", f}, {"message", s.message()}}});
    }
    SendError(res, HttpStatusFor(s), CodeName(s), s.message(), fields);
  }

  // Authenticate()'s answer when the key could not be looked up (not the client's fault).
  static constexpr const char* kKeyStoreFailed = "the key store failed";
  // "" when the request is authenticated, else why not (for the log; never key bytes).
  std::string Authenticate(const httplib::Request& req) {
    if (req.path == "/metrics" && !metrics_token_hash.empty() && req.has_header("Authorization")) {
      const std::string auth = req.get_header_value("Authorization");
      if (auth.rfind("Bearer ", 0) == 0 && store::Sha256Hex(auth.substr(7)) == metrics_token_hash) {
        return "";
      }
      if (!req.has_header("X-API-Key")) return "wrong metrics token";
    }
    std::string key = req.get_header_value("X-API-Key");
    if (key.empty()) return "no X-API-Key header";
    if (key.size() > 256) return "an X-API-Key over 256 bytes";
    std::string hash = store::Sha256Hex(key);
    auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> l(auth_mu);
      auto it = key_cache.find(hash);
      if (it != key_cache.end() && it->second > now) return "";
    }
    auto rec = config->FindApiKey(hash);
    if (!rec.ok()) {
      return rec.status().code() == StatusCode::kNotFound ? "an unknown, revoked or expired key"
                                                          : kKeyStoreFailed;
    }
    // Revocations (by another process) apply within 5 s; an expiry applies on time.
    auto hold = std::chrono::seconds(5);
    if (rec->expires_at != 0) {
      hold = std::min<std::chrono::seconds>(
          hold, std::chrono::seconds(std::max<int64_t>(0, rec->expires_at - store::NowSeconds())));
    }
    std::lock_guard<std::mutex> l(auth_mu);
    if (key_cache.size() > 10000) key_cache.clear();
    key_cache[hash] = now + hold;
    return "";
  }
  void ForgetCachedKeys() {
    std::lock_guard<std::mutex> l(auth_mu);
    key_cache.clear();
  }

  // The pre-routing gate: preflights, the failed-authentication backoff, authentication.
  httplib::Server::HandlerResponse Gate(const httplib::Request& req, httplib::Response& res) {
    using HR = httplib::Server::HandlerResponse;
    if (req.method == "OPTIONS") {
      res.status = 204;
      return HR::Handled;
    }
    if (req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) {
      // Answered before the body was read: the connection cannot carry another request.
      res.set_header("Connection", "close");
    }
    const auto now = AuthLimiter::Clock::now();
    const std::string& client = req.remote_addr;
    if (auto wait = limiter->Blocked(client, now); wait.count() > 0) {
      const int64_t secs = (wait.count() + 999) / 1000;
      res.set_header("Retry-After", std::to_string(secs));
      SendError(res, 429, "too_many_requests",
                "too many failed authentications from this address: retry in " +
                    std::to_string(secs) + " s");
      return HR::Handled;
    }
    const std::string why = Authenticate(req);
    if (why.empty()) {
      res.headers.erase("Connection");
      limiter->Succeed(client);
      return HR::Unhandled;
    }
    if (why == kKeyStoreFailed) {
      SendError(res, 503, "unavailable", "the API key store failed: try again");
      return HR::Handled;
    }
    auth_failures++;
    auto [failures, block] = limiter->Fail(client, now);
    if (block.count() > 0) auth_blocks++;
    std::string path = req.path.size() <= 200 ? req.path : req.path.substr(0, 200) + "...";
    Log(LogLevel::kWarn, "api", "authentication failed",
        {F("client", client), F("method", req.method), F("path", path), F("reason", why),
         F("failures", failures)});
    if (block.count() > 0) {
      Log(LogLevel::kWarn, "api", "client blocked after repeated authentication failures",
          {F("client", client), F("failures", failures), F("blockMs", block.count())});
    }
    SendError(res, 401, "unauthenticated",
              "a valid X-API-Key header is required: create a key with 'dbstreams apikey "
              "create' or POST /api/v1/apikeys");
    return HR::Handled;
  }

  void Cors(const httplib::Request& req, httplib::Response& res) {
    if (options.cors_origins.empty()) return;
    std::string origin = req.get_header_value("Origin");
    if (origin.empty()) return;
    bool any = false, match = false;
    for (const auto& o : options.cors_origins) {
      any = any || o == "*";
      match = match || o == origin;
    }
    if (!any && !match) return;
    res.set_header("Access-Control-Allow-Origin", any ? "*" : origin);
    res.set_header("Vary", "Origin");
    res.set_header("Access-Control-Allow-Headers", "X-API-Key, Content-Type");
    res.set_header("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS");
    res.set_header("Access-Control-Max-Age", "600");
  }

  void Record(const httplib::Request& req, const httplib::Response& res) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    std::lock_guard<std::mutex> l(metrics_mu);
    requests[{req.method, t_route.empty() ? "unmatched" : t_route, res.status}]++;
    for (size_t i = 0; i < sizeof(kBuckets) / sizeof(double); ++i) {
      if (secs <= kBuckets[i]) bucket_counts[i]++;
    }
    latency_count++;
    latency_sum += secs;
  }

  // Reads the body of a POST/PUT through httplib's content reader, so that neither of
  // httplib's own rules applies: it reads a request without Content-Length (and not chunked)
  // until the peer closes the connection (RFC 9112 section 6.3 says it has no body: a body-less
  // POST waited for the read timeout, then failed with 400), and it caps form-urlencoded bodies
  // at 8 KiB (CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH, compiled into the library) with
  // 413. Here the body is JSON whatever its Content-Type, at most max_body_bytes. On failure
  // the response is set (and the connection closed: the rest of the body is not read).
  bool ReadBody(const httplib::Request& req, const httplib::ContentReader& reader,
                httplib::Response& res, std::string* body) {
    const std::string te = req.get_header_value("Transfer-Encoding");
    const bool chunked = te.find("chunked") != std::string::npos;
    if (!chunked && !req.has_header("Content-Length")) return true;  // no body: {}
    auto refuse = [&](int status, const char* code, const std::string& message) {
      res.set_header("Connection", "close");
      SendError(res, status, code, message);
      return false;
    };
    const std::string too_big = "the request body is over the limit of " +
                                std::to_string(options.max_body_bytes) + " bytes";
    if (req.is_multipart_form_data()) {
      return refuse(415, "unsupported_media_type",
                    "multipart bodies are not accepted: send a JSON object");
    }
    if (!chunked) {
      const std::string len = req.get_header_value("Content-Length");
      char* end = nullptr;
      unsigned long long n = std::strtoull(len.c_str(), &end, 10);
      if (len.empty() || *end != '\0') return refuse(400, "bad_request", "invalid Content-Length");
      if (n == 0) return true;
      if (n > options.max_body_bytes) {
        // httplib's reader reads and drops a body over its limit (the server's payload limit
        // is max_body_bytes) so that the client, still sending, gets the 413; a claim far over
        // the limit is not worth reading.
        if (n <= 64 * options.max_body_bytes)
          (void)reader([](const char*, size_t) { return true; });
        return refuse(413, "payload_too_large", too_big);
      }
      body->reserve(n);
    }
    bool over = false;
    bool ok = reader([&](const char* data, size_t n) {
      if (body->size() + n > options.max_body_bytes) {
        over = true;
        return false;
      }
      body->append(data, n);
      return true;
    });
    if (over) return refuse(413, "payload_too_large", too_big);
    if (!ok) return refuse(400, "bad_request", "the request body could not be read");
    return true;
  }

  // Runs a route: path parameters, the JSON body of POST/PUT, the handler, the response.
  void Serve(const Route& r, const std::vector<std::string>& names, const httplib::Request& req,
             httplib::Response& res, const std::string& body) {
    t_route = r.path;
    Ctx ctx{req, res, {}, json()};
    for (size_t i = 0; i < names.size() && i + 1 < req.matches.size(); ++i) {
      ctx.params[names[i]] = req.matches[i + 1].str();
    }
    if (r.sse) return r.sse_handler(ctx);
    if (req.method == "POST" || req.method == "PUT") {
      const bool blank = body.find_first_not_of(" \t\r\n") == std::string::npos;
      if (blank) {
        ctx.body = json::object();
      } else {
        ctx.body = json::parse(body, nullptr, false);
        if (ctx.body.is_discarded()) {
          return SendError(res, 400, "invalid_json",
                           "the request body is not valid JSON: " + JsonError(body));
        }
        if (!ctx.body.is_object()) {
          return SendError(res, 400, "invalid_json", "the request body must be a JSON object");
        }
      }
    }
    Result<json> out = r.handler(ctx);
    if (!out.ok()) return SendStatus(res, out.status());
    if (res.status < 0) res.status = r.ok_status;  // a handler may set its own
    if (!out->is_null()) {
      res.set_content(out->dump(-1, ' ', false, json::error_handler_t::replace),
                      "application/json");
    }
  }

  void Install() {
    for (const Route& r : routes) {
      std::string re;
      std::vector<std::string> names;
      for (size_t i = 0; i < r.path.size();) {
        if (r.path[i] == '{') {
          size_t e = r.path.find('}', i);
          names.push_back(r.path.substr(i + 1, e - i - 1));
          re += "([^/]+)";
          i = e + 1;
        } else {
          char c = r.path[i++];
          if (c == '.') re += "\\";
          re += c;
        }
      }
      const Route* rp = &r;
      auto plain = [this, rp, names](const httplib::Request& req, httplib::Response& res) {
        Serve(*rp, names, req, res, req.body);
      };
      auto with_body = [this, rp, names](const httplib::Request& req, httplib::Response& res,
                                         const httplib::ContentReader& reader) {
        t_route = rp->path;
        std::string body;
        if (ReadBody(req, reader, res, &body)) Serve(*rp, names, req, res, body);
      };
      if (r.method == "GET") server->Get(re, plain);
      if (r.method == "POST") server->Post(re, with_body);
      if (r.method == "PUT") server->Put(re, with_body);
      if (r.method == "DELETE") server->Delete(re, plain);
    }
    // Unknown POST/PUT routes answer 404 at once instead of letting httplib read the body.
    auto unknown = [](const httplib::Request& req, httplib::Response& res,
                      const httplib::ContentReader&) {
      if (req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) {
        res.set_header("Connection", "close");
      }
      SendError(res, 404, "not_found", "no route " + req.method + " " + req.path);
    };
    server->Post(".*", unknown);
    server->Put(".*", unknown);
    server->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      t_route.clear();
      t_start = std::chrono::steady_clock::now();
      Cors(req, res);
      if (options.serve_ui && IsStaticUiRequest(req)) {
        return httplib::Server::HandlerResponse::Unhandled;  // the web UI's files: no key
      }
      return Gate(req, res);
    });
    server->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 404) {
        SendError(res, 404, "not_found", "no route " + req.method + " " + req.path);
      } else if (res.status == 413) {
        SendError(res, 413, "payload_too_large", "the request body is over the limit");
      } else if (res.status == 400) {
        SendError(res, 400, "bad_request", "the request is malformed");
      } else if (res.status == 405) {
        SendError(res, 405, "method_not_allowed", "method not allowed");
      }
    });
    server->set_logger(
        [this](const httplib::Request& req, const httplib::Response& res) { Record(req, res); });
  }

  // --- helpers used by routes
  // The stream's key for row data on the bus (busEncryption): one per stream, made on its first
  // encrypted start and kept in the secrets store, so a change stream resumed by a later run
  // still opens what earlier runs published. Sent to the services sealed, like passwords.
  Result<std::string> BusKey(const std::string& stream_id) {
    const std::string ref = "stream/" + stream_id + "/bus-key";
    auto key = secrets->Get(ref);
    if (key.ok() || key.status().code() != StatusCode::kNotFound) return key;
    std::string fresh = security::DataCipher::NewKeyHex();
    DBS_RETURN_IF_ERROR(secrets->Put(ref, fresh));
    return fresh;
  }
  Result<std::string> Password(const store::ConnectionRecord& r) {
    if (r.secret_ref.empty()) return std::string();
    return secrets->Get(r.secret_ref);
  }
  // Whether the record's inline TLS key is in the secrets store (the spec says kStoredSslKey).
  static bool HasStoredSslKey(const json& spec) {
    return spec.contains("ssl") && spec["ssl"].is_object() &&
           spec["ssl"].value("key", "") == kStoredSslKey;
  }
  // Whether the record's S3 session token is in the secrets store (its spec has the marker).
  static bool HasStoredSessionToken(const json& spec) {
    return spec.is_object() && spec.value("sessionToken", "") == kStoredSessionToken;
  }
  // The record's spec for connecting: the stored inline TLS key and session token put back in
  // place of their markers when `with_secrets`, else the markers left out (the spec is then
  // only checked).
  Result<json> SpecForUse(const store::ConnectionRecord& r, bool with_secrets) {
    json spec = r.spec;
    if (HasStoredSslKey(spec)) {
      if (with_secrets) {
        DBS_ASSIGN_OR_RETURN(std::string key, secrets->Get(SslKeyRef(r.id)));
        spec["ssl"]["key"] = key;
      } else {
        spec["ssl"].erase("key");
      }
    }
    if (HasStoredSessionToken(spec)) {
      if (with_secrets) {
        DBS_ASSIGN_OR_RETURN(std::string token, secrets->Get(SessionTokenRef(r.id)));
        spec["sessionToken"] = token;
      } else {
        spec.erase("sessionToken");
      }
    }
    return spec;
  }
  Result<ConnectionConfig> Connection(const std::string& id) {
    DBS_ASSIGN_OR_RETURN(auto rec, config->GetConnection(id));
    DBS_ASSIGN_OR_RETURN(std::string pw, Password(rec));
    DBS_ASSIGN_OR_RETURN(json spec, SpecForUse(rec, true));
    return ConnectionFromSpec(spec, pw);
  }
  // Stores (kInline) or keeps (kKeep) the inline TLS key and the session token of a body for
  // record `r`, whose spec `old_spec` was saved before (null for a new record). Called before
  // the record is written; the caller deletes both references when writing a new record then
  // fails, and DropUnnamedSecrets deletes those the body no longer names once it is written.
  Status SaveStoredSecrets(const store::ConnectionRecord& r, const json& old_spec,
                           const ConnectionInput& in) {
    if (in.session_token_input == SecretInput::kKeep && !HasStoredSessionToken(old_spec)) {
      return Status::InvalidArgument(std::string("sessionToken '") + kStoredSessionToken +
                                     "' keeps a stored token, but this connection has none: "
                                     "give the token");
    }
    switch (in.ssl_key_input) {
      case SecretInput::kInline:
        DBS_RETURN_IF_ERROR(secrets->Put(SslKeyRef(r.id), in.ssl_key));
        break;
      case SecretInput::kKeep: {
        if (HasStoredSslKey(old_spec)) break;
        const json* legacy =
            old_spec.is_object() && old_spec.contains("ssl") ? &old_spec["ssl"] : nullptr;
        if (legacy != nullptr && legacy->is_object() && legacy->contains("key") &&
            (*legacy)["key"].is_string() && IsInlinePem((*legacy)["key"].get<std::string>())) {
          // Saved before keys went to the secrets store: moved there now.
          DBS_RETURN_IF_ERROR(secrets->Put(SslKeyRef(r.id), (*legacy)["key"].get<std::string>()));
          break;
        }
        return Status::InvalidArgument(std::string("ssl.key '") + kStoredSslKey +
                                       "' keeps a stored key, but this connection has none: "
                                       "give the key's PEM text or a file path");
      }
      case SecretInput::kNone:
        break;
    }
    switch (in.session_token_input) {
      case SecretInput::kInline:
        return secrets->Put(SessionTokenRef(r.id), in.session_token);
      case SecretInput::kKeep:  // checked above
      case SecretInput::kNone:
        break;
    }
    return Status::Ok();
  }
  // After record `r` was written with `in`: deletes the stored secrets of its old spec that the
  // body no longer names.
  void DropUnnamedSecrets(const std::string& id, const json& old_spec, const ConnectionInput& in) {
    if (HasStoredSslKey(old_spec) && in.ssl_key_input == SecretInput::kNone) {
      (void)secrets->Delete(SslKeyRef(id));
    }
    if (HasStoredSessionToken(old_spec) && in.session_token_input == SecretInput::kNone) {
      (void)secrets->Delete(SessionTokenRef(id));
    }
  }
  void DeleteStoredSecrets(const std::string& id) {
    (void)secrets->Delete(SslKeyRef(id));
    (void)secrets->Delete(SessionTokenRef(id));
  }
  // Validates an API stream body; returns the resolved config JSON (with credentials when
  // `with_secrets`).
  Result<json> ResolveStream(const json& body, bool with_secrets) {
    if (!body.is_object()) return Status::InvalidArgument("the request body must be a JSON object");
    DBS_RETURN_IF_ERROR(CheckName(body, "name", true));
    if (body.contains("busKey")) {
      // A secret: the config store must never hold it (busEncryption asks for a key).
      return Status::InvalidArgument(
          "busKey is not accepted by the API: set busEncryption to true instead");
    }
    DBS_RETURN_IF_ERROR(CheckStringSizes(body, "", kMaxStreamStringBytes));
    if (body.dump().size() > kMaxStreamConfigBytes) {
      return Status::InvalidArgument("the stream config must be at most " +
                                     std::to_string(kMaxStreamConfigBytes) + " bytes as JSON");
    }
    json resolved = body;
    // {"connection": id} as the stream-config form of the saved connection.
    auto resolve = [&](const json& s, const std::string& at) -> Result<json> {
      if (!s.is_object() || s.size() != 1 || !s.contains("connection") ||
          !s["connection"].is_string()) {
        return Status::InvalidArgument(at + " must be {\"connection\": \"<connection id>\"}");
      }
      auto rec = config->GetConnection(s["connection"].get<std::string>());
      if (!rec.ok()) return Status::InvalidArgument(at + ".connection: " + rec.status().message());
      std::string pw;
      if (with_secrets) {
        DBS_ASSIGN_OR_RETURN(pw, Password(*rec));
      }
      DBS_ASSIGN_OR_RETURN(json spec, SpecForUse(*rec, with_secrets));
      return ConnectionJson(spec, with_secrets ? &pw : nullptr);
    };
    for (const char* side : {"source", "target"}) {
      if (!body.contains(side)) return Status::InvalidArgument(std::string(side) + " is required");
      const json& s = body[side];
      if (std::string(side) == "source" && s.is_object() && s.contains("federated")) {
        // A federated SELECT's sources: {"federated": [{"alias", "connection"}, ...]}.
        const json& list = s["federated"];
        if (s.size() != 1 || !list.is_array() || list.empty()) {
          return Status::InvalidArgument(
              "source.federated must be a non-empty array of {\"alias\", \"connection\"}");
        }
        json members = json::array();
        for (size_t i = 0; i < list.size(); ++i) {
          const std::string at = "source.federated[" + std::to_string(i) + "]";
          const json& m = list[i];
          if (!m.is_object() || m.size() != 2 || !m.contains("alias") || !m["alias"].is_string()) {
            return Status::InvalidArgument(at + " must be {\"alias\", \"connection\"}");
          }
          DBS_ASSIGN_OR_RETURN(json conn, resolve(json{{"connection", m["connection"]}}, at));
          conn["alias"] = m["alias"];
          members.push_back(std::move(conn));
        }
        resolved[side] = json{{"federated", members}};
        continue;
      }
      DBS_ASSIGN_OR_RETURN(resolved[side], resolve(s, side));
    }
    auto parsed = ParseStreamConfig(resolved);
    if (!parsed.ok()) return parsed.status();
    if (bus::IsReservedStreamName(parsed->name)) {
      return Status::InvalidArgument("name '" + parsed->name +
                                     "' is reserved (control, heartbeat, logs, runs)");
    }
    return resolved;
  }
  json StreamOut(const store::StreamRecord& r) {
    json j = {{"id", r.id},
              {"name", r.name},
              {"config", r.config},
              {"createdAt", r.created_at},
              {"updatedAt", r.updated_at}};
    auto runs = config->ListRuns(r.id, 1);
    j["lastRun"] = runs.ok() && !runs->empty() ? RunRecordJson(runs->front()) : json(nullptr);
    return j;
  }
  Status ActiveRunCheck(const std::string& stream_id, const std::string& what) {
    DBS_ASSIGN_OR_RETURN(auto runs, config->ListRuns(stream_id, 1));
    if (!runs.empty() && runs.front().active()) {
      return Status::FailedPrecondition("stream " + stream_id + " has an active run " +
                                        runs.front().id + ": stop it before " + what);
    }
    return Status::Ok();
  }

  // Binds the metrics-only listener at "host:port" and serves it on metrics_thread.
  Status StartMetricsListener(const std::string& listen) {
    const size_t colon = listen.rfind(':');
    char* end = nullptr;
    const long p =
        colon == std::string::npos ? -1 : std::strtol(listen.c_str() + colon + 1, &end, 10);
    if (colon == std::string::npos || colon == 0 || end == nullptr || *end != '\0' || p < 0 ||
        p > 65535) {
      return Status::InvalidArgument("the metrics listen address '" + listen +
                                     "' must be host:port (DBS_METRICS_LISTEN)");
    }
    const std::string host = listen.substr(0, colon);
    metrics_server = std::make_unique<httplib::Server>();
    metrics_server->set_read_timeout(10, 0);
    metrics_server->set_write_timeout(10, 0);
    metrics_server->Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
      const auto now = AuthLimiter::Clock::now();
      if (!metrics_token_hash.empty()) {
        if (auto wait = limiter->Blocked(req.remote_addr, now); wait.count() > 0) {
          res.set_header("Retry-After", std::to_string((wait.count() + 999) / 1000));
          return SendError(res, 429, "too_many_requests",
                           "too many failed authentications from this address");
        }
        const std::string auth = req.get_header_value("Authorization");
        if (auth.rfind("Bearer ", 0) != 0 ||
            store::Sha256Hex(auth.substr(7)) != metrics_token_hash) {
          auth_failures++;
          auto [failures, block] = limiter->Fail(req.remote_addr, now);
          if (block.count() > 0) auth_blocks++;
          Log(LogLevel::kWarn, "api", "authentication failed",
              {F("client", req.remote_addr), F("method", req.method), F("path", req.path),
               F("reason", "wrong metrics token"), F("failures", failures)});
          return SendError(res, 401, "unauthenticated",
                           "Authorization: Bearer <metrics token> is required");
        }
        limiter->Succeed(req.remote_addr);
      }
      res.set_content(Metrics(), "text/plain; version=0.0.4");
    });
    metrics_server->set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (res.body.empty() && res.status == 404) {
        SendError(res, 404, "not_found", "this listener serves GET /metrics only");
      }
    });
    metrics_port =
        p == 0
            ? metrics_server->bind_to_any_port(host)
            : (metrics_server->bind_to_port(host, static_cast<int>(p)) ? static_cast<int>(p) : -1);
    if (metrics_port < 0) {
      metrics_port = 0;
      return Status::Unavailable("cannot listen for metrics on " + listen +
                                 ": the port is in use or not allowed");
    }
    httplib::Server* ms = metrics_server.get();
    metrics_thread = std::thread([ms] { ms->listen_after_bind(); });
    Log(LogLevel::kInfo, "api", "metrics listening",
        {F("host", host), F("port", metrics_port), F("token", !metrics_token_hash.empty())});
    return Status::Ok();
  }

  void RegisterRoutes();
  void RegisterConnectionRoutes(const std::string& v1);
  void RegisterStreamRoutes(const std::string& v1);
  void RegisterRunRoutes(const std::string& v1);
  void RegisterSystemRoutes(const std::string& v1);
  void RegisterApiKeyRoutes(const std::string& v1);
  void RegisterCompatibilityAliases(const std::string& v1);
  ExplorerRouteDeps ExplorerDeps() {
    ExplorerRouteDeps d;
    d.connection = [this](const std::string& id) { return Connection(id); };
    d.config = config;
    d.run_status = [this](const std::string& id) { return orch->RunStatus(id); };
    d.recent_logs = [this](const std::string& stream, size_t limit) {
      LogFilter f;
      f.stream = stream;
      return logs.Recent(f, limit);
    };
    d.version = options.version;
    return d;
  }
  // The handler registered for `method path` (the aliases reuse them).
  const Route& RouteFor(const std::string& method, const std::string& path) const;
  std::string Metrics();
};

constexpr double ApiServer::Impl::kBuckets[];

namespace {

Result<int> QueryInt(const httplib::Request& req, const char* name, int def, int min, int max) {
  if (!req.has_param(name)) return def;
  std::string v = req.get_param_value(name);
  char* end = nullptr;
  long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < min || x > max) {
    return Status::InvalidArgument(std::string(name) + " must be an integer from " +
                                   std::to_string(min) + " to " + std::to_string(max));
  }
  return static_cast<int>(x);
}

// A clone body: {} or {"name": "<1 to 128 bytes>"}.
Status OnlyName(const json& body) {
  for (const auto& [k, v] : body.items()) {
    if (k != "name") {
      return Status::InvalidArgument((k.size() <= 64 ? k : k.substr(0, 64) + "...") +
                                     " is not a known field (name, a string)");
    }
  }
  return CheckName(body, "name", false);
}

Result<Page> PageOf(const httplib::Request& req) {
  Page p;
  DBS_ASSIGN_OR_RETURN(p.offset, QueryInt(req, "offset", 0, 0, 1 << 30));
  DBS_ASSIGN_OR_RETURN(p.limit, QueryInt(req, "limit", 50, 1, 500));
  return p;
}

// An API key expiry from a body: expiresAt (unix seconds, or RFC 3339 UTC
// "2027-01-31T00:00:00Z") or expiresInDays (1 to 3650); 0 when neither is given.
Result<int64_t> ExpiryOf(const json& body) {
  if (body.contains("expiresAt") && body.contains("expiresInDays")) {
    return Status::InvalidArgument("expiresAt cannot be given with expiresInDays");
  }
  const int64_t now = store::NowSeconds();
  if (body.contains("expiresInDays")) {
    const json& d = body["expiresInDays"];
    if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > 3650) {
      return Status::InvalidArgument("expiresInDays must be an integer from 1 to 3650");
    }
    return now + d.get<int64_t>() * 86400;
  }
  if (!body.contains("expiresAt") || body["expiresAt"].is_null()) return int64_t{0};
  const json& a = body["expiresAt"];
  int64_t at = 0;
  if (a.is_number_integer()) {
    at = a.get<int64_t>();
  } else if (a.is_string()) {
    const std::string& t = a.get_ref<const std::string&>();
    std::tm tm{};
    const char* end = strptime(t.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (end == nullptr || (std::string(end) != "Z" && std::string(end) != "+00:00")) {
      return Status::InvalidArgument(
          "expiresAt must be unix seconds or a UTC time like 2027-01-31T00:00:00Z");
    }
    at = static_cast<int64_t>(timegm(&tm));
  } else {
    return Status::InvalidArgument(
        "expiresAt must be unix seconds or a UTC time like 2027-01-31T00:00:00Z");
  }
  if (at <= now) return Status::InvalidArgument("expiresAt must be in the future");
  return at;
}

json ApiKeyJson(const store::ApiKeyRecord& k) {
  const int64_t now = store::NowSeconds();
  return json{{"id", k.id},
              {"name", k.name},
              {"prefix", k.prefix},
              {"createdAt", k.created_at},
              {"expiresAt", k.expires_at == 0 ? json(nullptr) : json(k.expires_at)},
              {"revokedAt", k.revoked_at == 0 ? json(nullptr) : json(k.revoked_at)},
              {"state", k.revoked_at != 0 ? "revoked"
                        : k.expired(now)  ? "expired"
                                          : "active"}};
}

// A DB error while browsing a saved connection: the database is the problem, not the request.
Status Upstream(const Status& s) {
  if (s.ok() || s.code() == StatusCode::kNotFound) return s;
  return Status::Unavailable("the database answered: " + s.ToString());
}

// The same for a connection `c`: the files of a bucket or folder that cannot be read as tables
// (a folder mixing formats, a file that does not parse, a type DuckDB does not have) are the
// state of the connection, not a passing fault: 409, and asking again does not help.
Status Upstream(const ConnectionConfig& c, const Status& s) {
  if (c.engine == Engine::kFile &&
      (s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kCorruption ||
       s.code() == StatusCode::kUnsupported)) {
    return Status(StatusCode::kFailedPrecondition, Retry::kFail,
                  "the files cannot be read as tables: " + s.message());
  }
  return Upstream(s);
}

// The plan of a resolved stream config (ResolveStream with secrets) as JSON; Unavailable when
// the source or the target cannot be read. Writes nothing.
Result<json> PlanJson(const json& resolved) {
  DBS_ASSIGN_OR_RETURN(StreamConfig sc, ParseStreamConfig(resolved));
  auto plan = PlanStream(sc);
  if (!plan.ok()) return Upstream(plan.status());
  return ToJson(*plan);
}

}  // namespace

void ApiServer::Impl::RegisterRoutes() {
  const std::string v1 = "/api/v1";
  RegisterConnectionRoutes(v1);
  RegisterStreamRoutes(v1);
  RegisterRunRoutes(v1);
  RegisterSystemRoutes(v1);
  RegisterApiKeyRoutes(v1);
  RegisterCompatibilityAliases(v1);
  const FederatedRouteDeps federated_deps{[this](const std::string& id) { return Connection(id); },
                                          "", "1GB"};
  RegisterFederatedRoutes(
      v1,
      [this](const std::string& m, const std::string& p, FederatedHandler h) {
        Add(m, p, [h](Ctx& c) { return h(c.body); });
      },
      federated_deps);
  // "Save as stream": the federated SELECT becomes the source of a new stream.
  Add(
      "POST", v1 + "/explorer/federated/stream",
      [this, federated_deps](Ctx& c) -> Result<json> {
        json columns;
        DBS_ASSIGN_OR_RETURN(json body, SavedStreamBody(c.body, federated_deps, &columns));
        DBS_RETURN_IF_ERROR(ResolveStream(body, false).status());
        store::StreamRecord r;
        r.id = store::NewId("s_");
        r.name = body["name"].get<std::string>();
        r.config = body;
        r.created_at = r.updated_at = store::NowSeconds();
        DBS_RETURN_IF_ERROR(config->PutStream(r, true));
        Log(LogLevel::kInfo, "api", "stream created from a federated query",
            {F("id", r.id), F("stream", r.name)});
        json out = StreamOut(r);
        out["columns"] = columns;
        return out;
      },
      201);
  RegisterExplorerRoutes(
      v1,
      [this](const std::string& m, const std::string& p, ExplorerHandler h, int ok) {
        Add(
            m, p,
            [h](Ctx& c) {
              ExplorerCall x{c.req, c.res, c.params, c.body};
              return h(x);
            },
            ok);
      },
      ExplorerDeps());
}

const Route& ApiServer::Impl::RouteFor(const std::string& method, const std::string& path) const {
  for (const Route& r : routes) {
    if (r.method == method && r.path == path) return r;
  }
  std::fprintf(stderr, "no route %s %s to alias\n", method.c_str(), path.c_str());
  std::abort();  // a bug in RegisterCompatibilityAliases
}

void ApiServer::Impl::RegisterConnectionRoutes(const std::string& v1) {
  // --- connections
  Add("GET", v1 + "/connections", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(Page p, PageOf(c.req));
    int64_t total = 0;
    DBS_ASSIGN_OR_RETURN(auto list, config->ListConnections(c.req.get_param_value("search"),
                                                            p.offset, p.limit, &total));
    json items = json::array();
    for (auto& r : list) items.push_back(ConnectionOut(r));
    return PageJson(std::move(items), total, p);
  });
  Add("POST", v1 + "/connections/test", [](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(ConnectionInput in, ParseConnectionBody(c.body, false));
    if (in.ssl_key_input == SecretInput::kKeep) {
      return Status::InvalidArgument(std::string("ssl.key '") + kStoredSslKey +
                                     "' names a saved connection's key: test that connection "
                                     "with POST /connections/{id}/ping, or give the key");
    }
    if (in.session_token_input == SecretInput::kKeep) {
      return Status::InvalidArgument(std::string("sessionToken '") + kStoredSessionToken +
                                     "' names a saved connection's token: test that connection "
                                     "with POST /connections/{id}/ping, or give the token");
    }
    if (in.ssl_key_input == SecretInput::kInline) in.spec["ssl"]["key"] = in.ssl_key;
    if (in.session_token_input == SecretInput::kInline) in.spec["sessionToken"] = in.session_token;
    DBS_ASSIGN_OR_RETURN(auto cfg, ConnectionFromSpec(in.spec, in.password.value_or("")));
    return TestConnection(cfg);
  });
  Add(
      "POST", v1 + "/connections",
      [this](Ctx& c) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(ConnectionInput in, ParseConnectionBody(c.body, true));
        store::ConnectionRecord r;
        r.id = store::NewId("c_");
        r.name = in.name;
        r.spec = in.spec;
        r.created_at = r.updated_at = store::NowSeconds();
        if (Status s = SaveStoredSecrets(r, nullptr, in); !s.ok()) {
          DeleteStoredSecrets(r.id);
          return s;
        }
        if (in.password && !in.password->empty()) {
          r.secret_ref = "connection/" + r.id + "/password";
          Status s = secrets->Put(r.secret_ref, *in.password);
          if (!s.ok()) {
            DeleteStoredSecrets(r.id);
            return s;
          }
        }
        Status s = config->PutConnection(r, true);
        if (!s.ok()) {
          if (!r.secret_ref.empty()) (void)secrets->Delete(r.secret_ref);
          DeleteStoredSecrets(r.id);
          return s;
        }
        Log(LogLevel::kInfo, "api", "connection created", {F("id", r.id), F("name", r.name)});
        return ConnectionOut(r);
      },
      201);
  Add("GET", v1 + "/connections/{id}", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(auto r, config->GetConnection(c.params["id"]));
    return ConnectionOut(r);
  });
  Add("PUT", v1 + "/connections/{id}", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(auto r, config->GetConnection(c.params["id"]));
    DBS_ASSIGN_OR_RETURN(ConnectionInput in, ParseConnectionBody(c.body, true));
    DBS_RETURN_IF_ERROR(SaveStoredSecrets(r, r.spec, in));
    const json old_spec = r.spec;
    r.name = in.name;
    r.spec = in.spec;
    r.updated_at = store::NowSeconds();
    if (in.password) {
      if (r.secret_ref.empty()) r.secret_ref = "connection/" + r.id + "/password";
      DBS_RETURN_IF_ERROR(secrets->Put(r.secret_ref, *in.password));
    }
    DBS_RETURN_IF_ERROR(config->PutConnection(r, false));
    DropUnnamedSecrets(r.id, old_spec, in);
    return ConnectionOut(r);
  });
  Add(
      "DELETE", v1 + "/connections/{id}",
      [this](Ctx& c) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(auto r, config->GetConnection(c.params["id"]));
        DBS_ASSIGN_OR_RETURN(auto users, config->StreamsUsingConnection(r.id));
        if (!users.empty()) {
          std::string names;
          for (auto& u : users) names += (names.empty() ? "" : ", ") + u;
          return Status::FailedPrecondition("connection " + r.id + " is used by stream(s) " +
                                            names + ": delete or change them first");
        }
        DBS_RETURN_IF_ERROR(config->DeleteConnection(r.id));
        if (!r.secret_ref.empty()) (void)secrets->Delete(r.secret_ref);
        DeleteStoredSecrets(r.id);
        return json(nullptr);
      },
      204);
  Add(
      "POST", v1 + "/connections/{id}/clone",
      [this](Ctx& c) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(auto r, config->GetConnection(c.params["id"]));
        DBS_RETURN_IF_ERROR(OnlyName(c.body));
        store::ConnectionRecord n = r;
        n.id = store::NewId("c_");
        n.name = c.body.value("name", r.name + "-copy");
        n.created_at = n.updated_at = store::NowSeconds();
        n.secret_ref.clear();
        if (!r.secret_ref.empty()) {
          DBS_ASSIGN_OR_RETURN(std::string pw, secrets->Get(r.secret_ref));
          n.secret_ref = "connection/" + n.id + "/password";
          DBS_RETURN_IF_ERROR(secrets->Put(n.secret_ref, pw));
        }
        if (HasStoredSslKey(r.spec)) {
          DBS_ASSIGN_OR_RETURN(std::string key, secrets->Get(SslKeyRef(r.id)));
          DBS_RETURN_IF_ERROR(secrets->Put(SslKeyRef(n.id), key));
        }
        if (HasStoredSessionToken(r.spec)) {
          DBS_ASSIGN_OR_RETURN(std::string token, secrets->Get(SessionTokenRef(r.id)));
          DBS_RETURN_IF_ERROR(secrets->Put(SessionTokenRef(n.id), token));
        }
        DBS_RETURN_IF_ERROR(config->PutConnection(n, true));
        return ConnectionOut(n);
      },
      201);
  Add("POST", v1 + "/connections/{id}/ping", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(auto cfg, Connection(c.params["id"]));
    return TestConnection(cfg);
  });
  for (const char* kind : {"databases", "schemas", "tables", "views"}) {
    std::string k = kind;
    Add("GET", v1 + "/connections/{id}/" + k, [this, k](Ctx& c) -> Result<json> {
      DBS_ASSIGN_OR_RETURN(auto cfg, Connection(c.params["id"]));
      DBS_ASSIGN_OR_RETURN(Page p, PageOf(c.req));
      auto r = Browse(cfg, k, c.req.get_param_value("schema"));
      if (!r.ok()) return Upstream(cfg, r.status());
      return Slice(*r, p);
    });
  }
  Add("GET", v1 + "/connections/{id}/tables/{schema}/{table}", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(auto cfg, Connection(c.params["id"]));
    auto r = DescribeTable(cfg, c.params["schema"], c.params["table"]);
    if (!r.ok()) return Upstream(cfg, r.status());
    return *r;
  });
  Add("GET", v1 + "/connections/{id}/tables/{schema}/{table}/count",
      [this](Ctx& c) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(auto cfg, Connection(c.params["id"]));
        auto r = CountRows(cfg, c.params["schema"], c.params["table"]);
        if (!r.ok()) return Upstream(cfg, r.status());
        return json{{"schema", c.params["schema"]}, {"table", c.params["table"]}, {"rows", *r}};
      });
}

void ApiServer::Impl::RegisterStreamRoutes(const std::string& v1) {
  // --- stream configs
  Add("GET", v1 + "/streams", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(Page p, PageOf(c.req));
    int64_t total = 0;
    DBS_ASSIGN_OR_RETURN(
        auto list, config->ListStreams(c.req.get_param_value("search"), p.offset, p.limit, &total));
    json items = json::array();
    for (auto& r : list) items.push_back(StreamOut(r));
    return PageJson(std::move(items), total, p);
  });
  Add(
      "POST", v1 + "/streams",
      [this](Ctx& c) -> Result<json> {
        DBS_RETURN_IF_ERROR(ResolveStream(c.body, false).status());
        store::StreamRecord r;
        r.id = store::NewId("s_");
        r.name = c.body["name"].get<std::string>();
        r.config = c.body;
        r.created_at = r.updated_at = store::NowSeconds();
        DBS_RETURN_IF_ERROR(config->PutStream(r, true));
        Log(LogLevel::kInfo, "api", "stream created", {F("id", r.id), F("stream", r.name)});
        return StreamOut(r);
      },
      201);
  Add("GET", v1 + "/streams/{id}", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(auto r, config->GetStream(c.params["id"]));
    return StreamOut(r);
  });
  Add("PUT", v1 + "/streams/{id}", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(auto r, config->GetStream(c.params["id"]));
    DBS_RETURN_IF_ERROR(ResolveStream(c.body, false).status());
    DBS_RETURN_IF_ERROR(ActiveRunCheck(r.id, "changing it"));
    r.name = c.body["name"].get<std::string>();
    r.config = c.body;
    r.updated_at = store::NowSeconds();
    DBS_RETURN_IF_ERROR(config->PutStream(r, false));
    return StreamOut(r);
  });
  Add(
      "DELETE", v1 + "/streams/{id}",
      [this](Ctx& c) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(auto r, config->GetStream(c.params["id"]));
        DBS_RETURN_IF_ERROR(ActiveRunCheck(r.id, "deleting it"));
        DBS_RETURN_IF_ERROR(config->DeleteStream(r.id));
        (void)secrets->Delete("stream/" + r.id + "/bus-key");
        return json(nullptr);
      },
      204);
  Add(
      "POST", v1 + "/streams/{id}/clone",
      [this](Ctx& c) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(auto r, config->GetStream(c.params["id"]));
        DBS_RETURN_IF_ERROR(OnlyName(c.body));
        store::StreamRecord n = r;
        n.id = store::NewId("s_");
        n.name = c.body.value("name", r.name + "-copy");
        n.config["name"] = n.name;
        DBS_RETURN_IF_ERROR(ResolveStream(n.config, false).status());
        n.created_at = n.updated_at = store::NowSeconds();
        DBS_RETURN_IF_ERROR(config->PutStream(n, true));
        return StreamOut(n);
      },
      201);
  Add(
      "POST", v1 + "/streams/{id}/start",
      [this](Ctx& c) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(auto r, config->GetStream(c.params["id"]));
        DBS_ASSIGN_OR_RETURN(json resolved, ResolveStream(r.config, true));
        if (resolved.value("busEncryption", false)) {
          DBS_ASSIGN_OR_RETURN(resolved["busKey"], BusKey(r.id));
        }
        DBS_ASSIGN_OR_RETURN(auto run, orch->StartRun(r, resolved));
        return RunRecordJson(run);
      },
      202);
  // What a run would do, without writing anything: the API reads the source and the target
  // itself (as browsing does), so no service or bus is involved.
  Add("POST", v1 + "/streams/{id}/plan", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(auto r, config->GetStream(c.params["id"]));
    DBS_ASSIGN_OR_RETURN(json resolved, ResolveStream(r.config, true));
    return PlanJson(resolved);
  });
  // The same plan for a config that is not saved: the body is what POST /streams takes, checked
  // the same way (same per-field errors); nothing is stored and nothing is written to any
  // database. The stream editor shows it before the first save.
  Add("POST", v1 + "/streams/plan", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(json resolved, ResolveStream(c.body, true));
    return PlanJson(resolved);
  });
  Add("GET", v1 + "/streams/{id}/runs", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(auto r, config->GetStream(c.params["id"]));
    DBS_ASSIGN_OR_RETURN(Page p, PageOf(c.req));
    int64_t total = 0;
    DBS_ASSIGN_OR_RETURN(auto runs, config->ListRuns(r.id, p.offset, p.limit, &total));
    json items = json::array();
    for (auto& x : runs) items.push_back(RunRecordJson(x));
    return PageJson(std::move(items), total, p);
  });
}

void ApiServer::Impl::RegisterRunRoutes(const std::string& v1) {
  // --- runs
  Add("GET", v1 + "/runs/{id}",
      [this](Ctx& c) -> Result<json> { return orch->RunStatus(c.params["id"]); });
  Add("POST", v1 + "/runs/{id}/pause", [this](Ctx& c) -> Result<json> {
    DBS_RETURN_IF_ERROR(orch->PauseRun(c.params["id"]));
    return orch->RunStatus(c.params["id"]);
  });
  Add("POST", v1 + "/runs/{id}/resume", [this](Ctx& c) -> Result<json> {
    DBS_RETURN_IF_ERROR(orch->ResumeRun(c.params["id"]));
    return orch->RunStatus(c.params["id"]);
  });
  Add("POST", v1 + "/runs/{id}/stop", [this](Ctx& c) -> Result<json> {
    for (const auto& [k, v] : c.body.items()) {
      if (k != "force" || !v.is_boolean()) {
        return Status::InvalidArgument(k + " is not a known field (force, a boolean)");
      }
    }
    bool force = c.body.value("force", false) || c.req.get_param_value("force") == "true";
    DBS_RETURN_IF_ERROR(orch->StopRun(c.params["id"], force));
    return orch->RunStatus(c.params["id"]);
  });
  AddSse(v1 + "/runs/{id}/progress", [this](Ctx& c) {
    const std::string id = c.params["id"];
    auto first = orch->RunStatus(id);
    if (!first.ok()) return SendStatus(c.res, first.status());
    sse_clients++;
    c.res.set_header("Cache-Control", "no-cache");
    c.res.set_header("X-Accel-Buffering", "no");
    c.res.set_chunked_content_provider(
        "text/event-stream",
        [this, id](size_t, httplib::DataSink& sink) {
          auto st = orch->RunStatus(id);
          if (!st.ok() || stopping.load()) {
            sink.done();
            return true;
          }
          json j = *st;
          j.erase("recentLogs");
          const std::string state = j.value("state", "");
          bool end = state == "completed" || state == "failed" || state == "stopped";
          std::string ev = "event: progress\ndata: " + j.dump() + "\n\n";
          if (end) ev += "event: end\ndata: " + json({{"state", state}}).dump() + "\n\n";
          if (!sink.write(ev.data(), ev.size())) return false;
          if (end) {
            sink.done();
            return true;
          }
          for (int i = 0; i < 5 && !stopping.load(); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
          }
          return true;
        },
        [this](bool) { sse_clients--; });
  });

  // --- logs
  AddSse(v1 + "/logs/stream", [this](Ctx& c) {
    LogFilter f;
    std::string level = c.req.get_param_value("level");
    if (!level.empty()) {
      f.min_level = LogLevelNumber(level);
      if (f.min_level < 0) {
        return SendError(c.res, 400, "invalid_argument",
                         "level must be trace, debug, info, warn or error", nullptr);
      }
    }
    f.stream = c.req.get_param_value("stream");
    f.service = c.req.get_param_value("service");
    auto after = std::make_shared<uint64_t>(logs.last_seq());
    auto idle = std::make_shared<int>(0);
    sse_clients++;
    c.res.set_header("Cache-Control", "no-cache");
    c.res.set_header("X-Accel-Buffering", "no");
    c.res.set_chunked_content_provider(
        "text/event-stream",
        [this, f, after, idle](size_t offset, httplib::DataSink& sink) {
          if (stopping.load()) {
            sink.done();
            return true;
          }
          std::string out;
          if (offset == 0) out = ": connected\n\n";
          uint64_t last = *after;
          for (json& r : logs.Wait(*after, std::chrono::milliseconds(1000), &last)) {
            if (f.Matches(r)) out += "event: log\ndata: " + r.dump() + "\n\n";
          }
          *after = last;
          if (out.empty() && ++*idle >= 15) out = ": keepalive\n\n";
          if (out.empty()) return sink.is_writable();
          *idle = 0;
          return sink.write(out.data(), out.size());
        },
        [this](bool) { sse_clients--; });
  });
}

void ApiServer::Impl::RegisterSystemRoutes(const std::string& v1) {
  // --- system
  Add("GET", v1 + "/health", [this](Ctx&) -> Result<json> {
    bool nats_ok = nats->connected();
    auto c = orch->Snapshot();
    return json{{"status", nats_ok ? "ok" : "degraded"},
                {"nats", nats_ok},
                {"readers", c.readers_alive},
                {"writers", c.writers_alive}};
  });
  Add("GET", v1 + "/services", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(Page p, PageOf(c.req));
    return Slice(orch->Services(), p);
  });
  Add("GET", v1 + "/version", [this](Ctx&) -> Result<json> {
    return json{{"version", options.version}, {"api", "v1"}};
  });
  Add("GET", v1 + "/usage", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(Page p, PageOf(c.req));
    DBS_ASSIGN_OR_RETURN(auto days, config->ListUsage());
    json items = json::array();
    for (auto& d : days) {
      items.push_back({{"day", d.day}, {"bytes", d.bytes}, {"cdcSeconds", d.cdc_seconds}});
    }
    return Slice(items, p);
  });
  Add("GET", v1 + "/openapi.json",
      [](Ctx&) -> Result<json> { return json::parse(OpenApiDocument()); });
  Add("GET", "/metrics", [this](Ctx& c) -> Result<json> {
    c.res.set_content(Metrics(), "text/plain; version=0.0.4");
    return json(nullptr);
  });
}

void ApiServer::Impl::RegisterApiKeyRoutes(const std::string& v1) {
  Add(
      "POST", v1 + "/apikeys",
      [this](Ctx& c) -> Result<json> {
        for (const auto& [k, v] : c.body.items()) {
          if (k != "name" && k != "expiresAt" && k != "expiresInDays") {
            return Status::InvalidArgument(
                (k.size() <= 64 ? k : k.substr(0, 64) + "...") +
                " is not a known field (name, expiresAt, expiresInDays)");
          }
        }
        DBS_RETURN_IF_ERROR(CheckName(c.body, "name", true));
        DBS_ASSIGN_OR_RETURN(int64_t expires_at, ExpiryOf(c.body));
        store::ApiKeyRecord rec;
        DBS_ASSIGN_OR_RETURN(
            std::string key,
            CreateApiKey(config, c.body["name"].get<std::string>(), expires_at, &rec));
        Log(LogLevel::kInfo, "api", "API key created",
            {F("id", rec.id), F("name", rec.name), F("client", c.req.remote_addr)});
        json out = ApiKeyJson(rec);
        out["key"] = key;  // shown once: only its hash is kept
        return out;
      },
      201);
  Add("GET", v1 + "/apikeys", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(Page p, PageOf(c.req));
    int64_t total = 0;
    DBS_ASSIGN_OR_RETURN(auto keys, config->ListApiKeys(p.offset, p.limit, &total));
    json items = json::array();
    for (const auto& k : keys) items.push_back(ApiKeyJson(k));
    return PageJson(std::move(items), total, p);
  });
  Add(
      "DELETE", v1 + "/apikeys/{id}",
      [this](Ctx& c) -> Result<json> {
        DBS_RETURN_IF_ERROR(config->RevokeApiKey(c.params["id"]));
        ForgetCachedKeys();  // the revocation applies at once on this server
        Log(LogLevel::kInfo, "api", "API key revoked",
            {F("id", c.params["id"]), F("client", c.req.remote_addr)});
        return json(nullptr);
      },
      204);
}

// DBConvert Streams names for our routes (docs/api.md lists the mapping): its "stream
// configs" are our streams, its "streams" (started instances) are our runs. Same handlers,
// same semantics; a stream config body may also name connections as plain ids
// ("source": "<id>") and say mode "convert" (our "load"), as DBConvert's does.
void ApiServer::Impl::RegisterCompatibilityAliases(const std::string& v1) {
  const std::string sc = v1 + "/stream-configs";
  struct Alias {
    const char* method;
    std::string alias;
    std::string ours;
  };
  const std::vector<Alias> aliases = {
      {"GET", sc, v1 + "/streams"},
      {"POST", sc, v1 + "/streams"},
      {"GET", sc + "/{id}", v1 + "/streams/{id}"},
      {"PUT", sc + "/{id}", v1 + "/streams/{id}"},
      {"DELETE", sc + "/{id}", v1 + "/streams/{id}"},
      {"POST", sc + "/{id}/start", v1 + "/streams/{id}/start"},
      {"POST", v1 + "/streams/{id}/pause", v1 + "/runs/{id}/pause"},
      {"POST", v1 + "/streams/{id}/resume", v1 + "/runs/{id}/resume"},
      {"POST", v1 + "/streams/{id}/stop", v1 + "/runs/{id}/stop"},
      {"GET", v1 + "/streams/{id}/stats", v1 + "/runs/{id}"},
      {"POST", v1 + "/connections/{id}/test", v1 + "/connections/{id}/ping"},
  };
  for (const Alias& a : aliases) {
    // Copies: Add() below may move the routes.
    Handler h = RouteFor(a.method, a.ours).handler;
    const int ok_status = RouteFor(a.method, a.ours).ok_status;
    if (a.alias.rfind(sc, 0) == 0 &&
        (std::string(a.method) == "POST" || std::string(a.method) == "PUT") &&
        a.alias.find("/start") == std::string::npos) {
      h = [h](Ctx& c) -> Result<json> {
        for (const char* side : {"source", "target"}) {
          if (c.body.contains(side) && c.body[side].is_string()) {
            c.body[side] = json{{"connection", c.body[side]}};
          }
        }
        if (c.body.value("mode", json()) == "convert") c.body["mode"] = "load";
        return h(c);
      };
    }
    Add(a.method, a.alias, std::move(h), ok_status);
  }
}

std::string ApiServer::Impl::Metrics() {
  std::string out;
  {
    std::lock_guard<std::mutex> l(metrics_mu);
    out += "# HELP dbs_http_requests_total HTTP requests by method, route and status.\n";
    out += "# TYPE dbs_http_requests_total counter\n";
    for (const auto& [k, n] : requests) {
      out += "dbs_http_requests_total{method=\"" + std::get<0>(k) + "\",route=\"" + std::get<1>(k) +
             "\",status=\"" + std::to_string(std::get<2>(k)) + "\"} " + std::to_string(n) + "\n";
    }
    out += "# HELP dbs_http_request_duration_seconds HTTP request latency.\n";
    out += "# TYPE dbs_http_request_duration_seconds histogram\n";
    for (size_t i = 0; i < sizeof(kBuckets) / sizeof(double); ++i) {
      char le[32];
      std::snprintf(le, sizeof le, "%g", kBuckets[i]);
      out += std::string("dbs_http_request_duration_seconds_bucket{le=\"") + le + "\"} " +
             std::to_string(bucket_counts[i]) + "\n";
    }
    out += "dbs_http_request_duration_seconds_bucket{le=\"+Inf\"} " +
           std::to_string(latency_count) + "\n";
    out += "dbs_http_request_duration_seconds_sum " + std::to_string(latency_sum) + "\n";
    out += "dbs_http_request_duration_seconds_count " + std::to_string(latency_count) + "\n";
  }
  auto c = orch->Snapshot();
  out +=
      "# HELP dbs_services_alive Services with a recent heartbeat.\n# TYPE dbs_services_alive "
      "gauge\n";
  out += "dbs_services_alive{kind=\"reader\"} " + std::to_string(c.readers_alive) + "\n";
  out += "dbs_services_alive{kind=\"writer\"} " + std::to_string(c.writers_alive) + "\n";
  out += "# HELP dbs_runs_active Active runs by state.\n# TYPE dbs_runs_active gauge\n";
  for (const char* s : {"starting", "running", "paused", "stopping"}) {
    out += std::string("dbs_runs_active{state=\"") + s + "\"} " +
           std::to_string(c.runs_by_state.count(s) ? c.runs_by_state[s] : 0) + "\n";
  }
  out +=
      "# HELP dbs_active_rows_written Rows written by active runs.\n# TYPE dbs_active_rows_written "
      "gauge\n";
  out += "dbs_active_rows_written " + std::to_string(c.rows_written) + "\n";
  out += "# HELP dbs_active_bytes Bytes published by active runs.\n# TYPE dbs_active_bytes gauge\n";
  out += "dbs_active_bytes " + std::to_string(c.bytes) + "\n";
  if (c.bus_storage_bytes >= 0) {
    out +=
        "# HELP dbs_bus_storage_bytes JetStream file storage of the bus (every stream, this "
        "account).\n# TYPE dbs_bus_storage_bytes gauge\n";
    out += "dbs_bus_storage_bytes " + std::to_string(c.bus_storage_bytes) + "\n";
    out += "# HELP dbs_bus_streams JetStream streams on the bus.\n# TYPE dbs_bus_streams gauge\n";
    out += "dbs_bus_streams " + std::to_string(c.bus_streams) + "\n";
  }
  out += "# HELP dbs_sse_clients Connected SSE clients.\n# TYPE dbs_sse_clients gauge\n";
  out += "dbs_sse_clients " + std::to_string(sse_clients.load()) + "\n";
  out +=
      "# HELP dbs_auth_failures_total Requests refused for a missing or invalid key (401).\n"
      "# TYPE dbs_auth_failures_total counter\n";
  out += "dbs_auth_failures_total " + std::to_string(auth_failures.load()) + "\n";
  out +=
      "# HELP dbs_auth_blocks_total Client addresses blocked after repeated failures (429).\n"
      "# TYPE dbs_auth_blocks_total counter\n";
  out += "dbs_auth_blocks_total " + std::to_string(auth_blocks.load()) + "\n";
  return out;
}

ApiServer::ApiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ApiServer::~ApiServer() { Stop(); }
int ApiServer::port() const { return impl_->port; }
std::string ApiServer::url() const {
  return std::string(impl_->options.tls_cert_file.empty() ? "http" : "https") + "://" +
         impl_->options.host + ":" + std::to_string(impl_->port);
}

int ApiServer::metrics_port() const { return impl_->metrics_port; }

void ApiServer::Stop() {
  if (impl_->stopping.exchange(true)) return;
  impl_->logs.Close();
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  if (impl_->metrics_server) impl_->metrics_server->stop();
  if (impl_->metrics_thread.joinable()) impl_->metrics_thread.join();
  impl_->orch->Shutdown();
}

const std::string& ApiServer::OpenApiDocument() {
  static const std::string doc(kOpenApiJson);
  return doc;
}

std::vector<RouteInfo> ApiServer::Routes() {
  Impl impl;
  impl.RegisterRoutes();
  std::vector<RouteInfo> out;
  for (const Route& r : impl.routes) out.push_back({r.method, r.path});
  return out;
}

Result<std::unique_ptr<ApiServer>> ApiServer::Start(const ApiServerOptions& options,
                                                    bus::NatsConnection* nats,
                                                    store::ConfigStore* config,
                                                    store::SecretsStore* secrets) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->nats = nats;
  impl->config = config;
  impl->secrets = secrets;
  impl->limiter = std::make_unique<AuthLimiter>(options.auth_backoff);
  std::string metrics_token = options.metrics_token;
  if (metrics_token.empty()) metrics_token = SystemEnv("DBS_METRICS_TOKEN").value_or("");
  if (!metrics_token.empty()) {
    if (metrics_token.size() < 16) {
      return Status::InvalidArgument(
          "the metrics token (DBS_METRICS_TOKEN) must be at least 16 characters");
    }
    impl->metrics_token_hash = store::Sha256Hex(metrics_token);
  }
  impl->orch = std::make_unique<Orchestrator>(nats, config, &impl->logs, options.orchestrator);
  DBS_RETURN_IF_ERROR(impl->orch->Start());
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
      return Status::InvalidArgument("HTTPS needs both a certificate and a key file");
    }
    auto s = std::make_unique<httplib::SSLServer>(options.tls_cert_file.c_str(),
                                                  options.tls_key_file.c_str());
    if (!s->is_valid()) {
      return Status::InvalidArgument("cannot load the TLS certificate " + options.tls_cert_file +
                                     " or key " + options.tls_key_file);
    }
    impl->server = std::move(s);
  } else {
    impl->server = std::make_unique<httplib::Server>();
  }
  const size_t max_threads = static_cast<size_t>(std::max(8, options.max_threads));
  impl->server->new_task_queue = [max_threads] { return new GrowingPool(max_threads); };
  impl->server->set_payload_max_length(options.max_body_bytes);
  impl->server->set_read_timeout(10, 0);
  impl->server->set_write_timeout(10, 0);
  impl->server->set_keep_alive_max_count(1000);
  impl->server->set_tcp_nodelay(true);  // no 40 ms Nagle + delayed-ACK stalls
  impl->RegisterRoutes();
  impl->Install();
  if (options.serve_ui) RegisterStaticUi(impl->server.get(), options.ui_dir);  // after the API
  int port = options.port == 0
                 ? impl->server->bind_to_any_port(options.host)
                 : (impl->server->bind_to_port(options.host, options.port) ? options.port : -1);
  if (port < 0) {
    return Status::Unavailable("cannot listen on " + options.host + ":" +
                               std::to_string(options.port) +
                               ": the port is in use or not allowed; pick another with --port");
  }
  impl->port = port;
  std::string metrics_listen = options.metrics_listen;
  if (metrics_listen.empty()) metrics_listen = SystemEnv("DBS_METRICS_LISTEN").value_or("");
  if (!metrics_listen.empty()) DBS_RETURN_IF_ERROR(impl->StartMetricsListener(metrics_listen));
  Impl* ip = impl.get();
  impl->thread = std::thread([ip] { ip->server->listen_after_bind(); });
  Log(LogLevel::kInfo, "api", "API listening", {F("host", options.host), F("port", port)});
  return std::unique_ptr<ApiServer>(new ApiServer(std::move(impl)));
}

Result<std::string> CreateApiKey(store::ConfigStore* store, const std::string& name) {
  return CreateApiKey(store, name, 0, nullptr);
}

Result<std::string> CreateApiKey(store::ConfigStore* store, const std::string& name,
                                 int64_t expires_at, store::ApiKeyRecord* record) {
  std::string key = "dbs_" + store::RandomHex(24);
  store::ApiKeyRecord r;
  r.id = store::NewId("k_");
  r.name = name;
  r.hash = store::Sha256Hex(key);
  r.prefix = key.substr(0, 10);
  r.created_at = store::NowSeconds();
  r.expires_at = expires_at;
  DBS_RETURN_IF_ERROR(store->CreateApiKey(r));
  if (record != nullptr) *record = r;
  return key;
}

}  // namespace dbs::api

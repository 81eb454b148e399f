#include "api/api_server.h"

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "api/connections.h"
#include "bus/protocol.h"
#include "config/stream_config.h"
#include "core/logging.h"

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

  // API key hash cache (hash -> expiry).
  std::mutex auth_mu;
  std::map<std::string, std::chrono::steady_clock::time_point> key_cache;

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

  bool Authorized(const httplib::Request& req) {
    std::string key = req.get_header_value("X-API-Key");
    if (key.empty() || key.size() > 256) return false;
    std::string hash = store::Sha256Hex(key);
    auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> l(auth_mu);
      auto it = key_cache.find(hash);
      if (it != key_cache.end() && it->second > now) return true;
    }
    auto rec = config->FindApiKey(hash);
    if (!rec.ok()) return false;
    std::lock_guard<std::mutex> l(auth_mu);
    if (key_cache.size() > 10000) key_cache.clear();
    key_cache[hash] = now + std::chrono::seconds(5);  // revocations apply within 5 s
    return true;
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
      auto h = [rp, names](const httplib::Request& req, httplib::Response& res) {
        t_route = rp->path;
        Ctx ctx{req, res, {}, json()};
        for (size_t i = 0; i < names.size() && i + 1 < req.matches.size(); ++i) {
          ctx.params[names[i]] = req.matches[i + 1].str();
        }
        if (rp->sse) return rp->sse_handler(ctx);
        if (req.method == "POST" || req.method == "PUT") {
          if (req.body.empty()) {
            ctx.body = json::object();
          } else {
            ctx.body = json::parse(req.body, nullptr, false);
            if (ctx.body.is_discarded()) {
              return SendError(res, 400, "invalid_json",
                               "the request body is not valid JSON: " + JsonError(req.body));
            }
            if (!ctx.body.is_object()) {
              return SendError(res, 400, "invalid_json", "the request body must be a JSON object");
            }
          }
        }
        Result<json> out = rp->handler(ctx);
        if (!out.ok()) return SendStatus(res, out.status());
        res.status = rp->ok_status;
        if (!out->is_null()) {
          res.set_content(out->dump(-1, ' ', false, json::error_handler_t::replace),
                          "application/json");
        }
      };
      if (r.method == "GET") server->Get(re, h);
      if (r.method == "POST") server->Post(re, h);
      if (r.method == "PUT") server->Put(re, h);
      if (r.method == "DELETE") server->Delete(re, h);
    }
    server->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      t_route.clear();
      t_start = std::chrono::steady_clock::now();
      Cors(req, res);
      if (req.method == "OPTIONS") {
        res.status = 204;
        return httplib::Server::HandlerResponse::Handled;
      }
      if (!Authorized(req)) {
        SendError(res, 401, "unauthenticated",
                  "a valid X-API-Key header is required: create a key with 'dbstreams apikey "
                  "create'");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
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
  Result<std::string> Password(const store::ConnectionRecord& r) {
    if (r.secret_ref.empty()) return std::string();
    return secrets->Get(r.secret_ref);
  }
  Result<ConnectionConfig> Connection(const std::string& id) {
    DBS_ASSIGN_OR_RETURN(auto rec, config->GetConnection(id));
    DBS_ASSIGN_OR_RETURN(std::string pw, Password(rec));
    return ConnectionFromSpec(rec.spec, pw);
  }
  // Validates an API stream body; returns the resolved config JSON (with credentials when
  // `with_secrets`).
  Result<json> ResolveStream(const json& body, bool with_secrets) {
    if (!body.is_object()) return Status::InvalidArgument("the request body must be a JSON object");
    json resolved = body;
    for (const char* side : {"source", "target"}) {
      if (!body.contains(side)) return Status::InvalidArgument(std::string(side) + " is required");
      const json& s = body[side];
      if (!s.is_object() || s.size() != 1 || !s.contains("connection") ||
          !s["connection"].is_string()) {
        return Status::InvalidArgument(std::string(side) +
                                       " must be {\"connection\": \"<connection id>\"}");
      }
      auto rec = config->GetConnection(s["connection"].get<std::string>());
      if (!rec.ok()) {
        return Status::InvalidArgument(std::string(side) +
                                       ".connection: " + rec.status().message());
      }
      std::string pw;
      if (with_secrets) {
        DBS_ASSIGN_OR_RETURN(pw, Password(*rec));
      }
      resolved[side] = ConnectionJson(rec->spec, with_secrets ? &pw : nullptr);
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

  void RegisterRoutes();
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

// A DB error while browsing a saved connection: the database is the problem, not the request.
Status Upstream(const Status& s) {
  if (s.ok() || s.code() == StatusCode::kNotFound) return s;
  return Status::Unavailable("the database answered: " + s.ToString());
}

}  // namespace

void ApiServer::Impl::RegisterRoutes() {
  const std::string v1 = "/api/v1";
  // --- connections
  Add("GET", v1 + "/connections", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(auto list, config->ListConnections(c.req.get_param_value("search")));
    json items = json::array();
    for (auto& r : list) items.push_back(ConnectionOut(r));
    return json{{"items", items}, {"total", items.size()}};
  });
  Add("POST", v1 + "/connections/test", [](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(ConnectionInput in, ParseConnectionBody(c.body, false));
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
        if (in.password && !in.password->empty()) {
          r.secret_ref = "connection/" + r.id + "/password";
          DBS_RETURN_IF_ERROR(secrets->Put(r.secret_ref, *in.password));
        }
        Status s = config->PutConnection(r, true);
        if (!s.ok()) {
          if (!r.secret_ref.empty()) (void)secrets->Delete(r.secret_ref);
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
    r.name = in.name;
    r.spec = in.spec;
    r.updated_at = store::NowSeconds();
    if (in.password) {
      if (r.secret_ref.empty()) r.secret_ref = "connection/" + r.id + "/password";
      DBS_RETURN_IF_ERROR(secrets->Put(r.secret_ref, *in.password));
    }
    DBS_RETURN_IF_ERROR(config->PutConnection(r, false));
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
        return json(nullptr);
      },
      204);
  Add(
      "POST", v1 + "/connections/{id}/clone",
      [this](Ctx& c) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(auto r, config->GetConnection(c.params["id"]));
        for (const auto& [k, v] : c.body.items()) {
          if (k != "name" || !v.is_string()) {
            return Status::InvalidArgument(k + " is not a known field (name, a string)");
          }
        }
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
      auto r = Browse(cfg, k, c.req.get_param_value("schema"));
      if (!r.ok()) return Upstream(r.status());
      return json{{"items", *r}};
    });
  }
  Add("GET", v1 + "/connections/{id}/tables/{schema}/{table}", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(auto cfg, Connection(c.params["id"]));
    auto r = DescribeTable(cfg, c.params["schema"], c.params["table"]);
    if (!r.ok()) return Upstream(r.status());
    return *r;
  });
  Add("GET", v1 + "/connections/{id}/tables/{schema}/{table}/count",
      [this](Ctx& c) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(auto cfg, Connection(c.params["id"]));
        auto r = CountRows(cfg, c.params["schema"], c.params["table"]);
        if (!r.ok()) return Upstream(r.status());
        return json{{"schema", c.params["schema"]}, {"table", c.params["table"]}, {"rows", *r}};
      });

  // --- stream configs
  Add("GET", v1 + "/streams", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(int offset, QueryInt(c.req, "offset", 0, 0, 1 << 30));
    DBS_ASSIGN_OR_RETURN(int limit, QueryInt(c.req, "limit", 50, 1, 500));
    int64_t total = 0;
    DBS_ASSIGN_OR_RETURN(
        auto list, config->ListStreams(c.req.get_param_value("search"), offset, limit, &total));
    json items = json::array();
    for (auto& r : list) items.push_back(StreamOut(r));
    return json{{"items", items}, {"total", total}, {"offset", offset}, {"limit", limit}};
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
        return json(nullptr);
      },
      204);
  Add(
      "POST", v1 + "/streams/{id}/clone",
      [this](Ctx& c) -> Result<json> {
        DBS_ASSIGN_OR_RETURN(auto r, config->GetStream(c.params["id"]));
        for (const auto& [k, v] : c.body.items()) {
          if (k != "name" || !v.is_string()) {
            return Status::InvalidArgument(k + " is not a known field (name, a string)");
          }
        }
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
        DBS_ASSIGN_OR_RETURN(auto run, orch->StartRun(r, resolved));
        return RunRecordJson(run);
      },
      202);
  Add("GET", v1 + "/streams/{id}/runs", [this](Ctx& c) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(auto r, config->GetStream(c.params["id"]));
    DBS_ASSIGN_OR_RETURN(int limit, QueryInt(c.req, "limit", 50, 1, 500));
    DBS_ASSIGN_OR_RETURN(auto runs, config->ListRuns(r.id, limit));
    json items = json::array();
    for (auto& x : runs) items.push_back(RunRecordJson(x));
    return json{{"items", items}};
  });

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

  // --- system
  Add("GET", v1 + "/health", [this](Ctx&) -> Result<json> {
    bool nats_ok = nats->connected();
    auto c = orch->Snapshot();
    return json{{"status", nats_ok ? "ok" : "degraded"},
                {"nats", nats_ok},
                {"readers", c.readers_alive},
                {"writers", c.writers_alive}};
  });
  Add("GET", v1 + "/services", [this](Ctx&) -> Result<json> {
    return json{{"items", orch->Services()}};
  });
  Add("GET", v1 + "/version", [this](Ctx&) -> Result<json> {
    return json{{"version", options.version}, {"api", "v1"}};
  });
  Add("GET", v1 + "/usage", [this](Ctx&) -> Result<json> {
    DBS_ASSIGN_OR_RETURN(auto days, config->ListUsage());
    json items = json::array();
    for (auto& d : days) {
      items.push_back({{"day", d.day}, {"bytes", d.bytes}, {"cdcSeconds", d.cdc_seconds}});
    }
    return json{{"items", items}};
  });
  Add("GET", v1 + "/openapi.json",
      [](Ctx&) -> Result<json> { return json::parse(OpenApiDocument()); });
  Add("GET", "/metrics", [this](Ctx& c) -> Result<json> {
    c.res.set_content(Metrics(), "text/plain; version=0.0.4");
    return json(nullptr);
  });
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
  out += "# HELP dbs_sse_clients Connected SSE clients.\n# TYPE dbs_sse_clients gauge\n";
  out += "dbs_sse_clients " + std::to_string(sse_clients.load()) + "\n";
  return out;
}

ApiServer::ApiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ApiServer::~ApiServer() { Stop(); }
int ApiServer::port() const { return impl_->port; }
std::string ApiServer::url() const {
  return std::string(impl_->options.tls_cert_file.empty() ? "http" : "https") + "://" +
         impl_->options.host + ":" + std::to_string(impl_->port);
}

void ApiServer::Stop() {
  if (impl_->stopping.exchange(true)) return;
  impl_->logs.Close();
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
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
  int port = options.port == 0
                 ? impl->server->bind_to_any_port(options.host)
                 : (impl->server->bind_to_port(options.host, options.port) ? options.port : -1);
  if (port < 0) {
    return Status::Unavailable("cannot listen on " + options.host + ":" +
                               std::to_string(options.port) +
                               ": the port is in use or not allowed; pick another with --port");
  }
  impl->port = port;
  Impl* ip = impl.get();
  impl->thread = std::thread([ip] { ip->server->listen_after_bind(); });
  Log(LogLevel::kInfo, "api", "API listening", {F("host", options.host), F("port", port)});
  return std::unique_ptr<ApiServer>(new ApiServer(std::move(impl)));
}

Result<std::string> CreateApiKey(store::ConfigStore* store, const std::string& name) {
  std::string key = "dbs_" + store::RandomHex(24);
  store::ApiKeyRecord r;
  r.id = store::NewId("k_");
  r.name = name;
  r.hash = store::Sha256Hex(key);
  r.prefix = key.substr(0, 10);
  r.created_at = store::NowSeconds();
  DBS_RETURN_IF_ERROR(store->CreateApiKey(r));
  return key;
}

}  // namespace dbs::api

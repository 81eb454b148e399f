#include "api/explorer_body.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>

namespace dbs::api {

using nlohmann::json;

namespace {
std::string Clip(const std::string& s) { return s.size() <= 64 ? s : s.substr(0, 64) + "..."; }
}  // namespace

BodyReader::BodyReader(const json& body, const std::vector<std::string>& known) : body_(body) {
  if (!body.is_object()) {
    status_ = Status::InvalidArgument("the request body must be a JSON object");
    return;
  }
  for (const auto& [k, v] : body.items()) {
    bool ok = false;
    for (const auto& n : known) ok = ok || n == k;
    if (!ok) {
      std::string list;
      for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
      status_ = Status::InvalidArgument(Clip(k) + " is not a known field (" + list + ")");
      return;
    }
  }
}

Result<std::string> BodyReader::String(const std::string& name, bool required,
                                       size_t max_bytes) const {
  if (!body_.contains(name) || body_[name].is_null()) {
    if (required) return Status::InvalidArgument(name + " is required");
    return std::string();
  }
  const json& v = body_[name];
  if (!v.is_string()) return Status::InvalidArgument(name + " must be a string");
  const std::string& s = v.get_ref<const std::string&>();
  if (required && s.empty()) return Status::InvalidArgument(name + " must not be empty");
  if (s.size() > max_bytes) {
    return Status::InvalidArgument(name + " must be at most " + std::to_string(max_bytes) +
                                   " bytes");
  }
  return s;
}

Result<int64_t> BodyReader::Int(const std::string& name, int64_t def, int64_t min,
                                int64_t max) const {
  if (!body_.contains(name) || body_[name].is_null()) return def;
  const json& v = body_[name];
  if (!v.is_number_integer() || v.get<int64_t>() < min || v.get<int64_t>() > max) {
    return Status::InvalidArgument(name + " must be an integer from " + std::to_string(min) +
                                   " to " + std::to_string(max));
  }
  return v.get<int64_t>();
}

Result<bool> BodyReader::Bool(const std::string& name, bool def) const {
  if (!body_.contains(name) || body_[name].is_null()) return def;
  if (!body_[name].is_boolean()) return Status::InvalidArgument(name + " must be true or false");
  return body_[name].get<bool>();
}

Result<QueryPage> PageOfQuery(const httplib::Request& req) {
  QueryPage p;
  auto get = [&](const char* name, int def, int min, int max, int* out) -> Status {
    if (!req.has_param(name)) {
      *out = def;
      return Status::Ok();
    }
    const std::string v = req.get_param_value(name);
    char* end = nullptr;
    const long x = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || x < min || x > max) {
      return Status::InvalidArgument(std::string(name) + " must be an integer from " +
                                     std::to_string(min) + " to " + std::to_string(max));
    }
    *out = static_cast<int>(x);
    return Status::Ok();
  };
  DBS_RETURN_IF_ERROR(get("offset", 0, 0, 1 << 30, &p.offset));
  DBS_RETURN_IF_ERROR(get("limit", 50, 1, 500, &p.limit));
  return p;
}

Status Upstream(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kTimeout:
    case StatusCode::kPermissionDenied:
    case StatusCode::kResourceExhausted:
    case StatusCode::kCancelled:
      return s;
    default:
      return Status::Unavailable("the database answered: " + s.ToString());
  }
}

ScratchDir::ScratchDir(const std::string& root, const std::string& what) {
  static std::atomic<uint64_t> n{0};
  std::error_code ec;
  std::filesystem::path base =
      root.empty() ? std::filesystem::temp_directory_path(ec) : std::filesystem::path(root);
  path_ = (base / ("dbstreams-" + what + "-" + std::to_string(getpid()) + "-" +
                   std::to_string(n.fetch_add(1))))
              .string();
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Result<json> Respond(ExplorerCall& c, Result<json> out) {
  if (out.ok()) return out;
  const Status& s = out.status();
  int http = 500;
  std::string code = "internal";
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kCorruption:
    case StatusCode::kUnsupported:
      http = 400;
      code = "invalid_argument";
      break;
    case StatusCode::kNotFound:
      http = 404;
      code = "not_found";
      break;
    case StatusCode::kPermissionDenied:
      http = 403;
      code = "permission_denied";
      break;
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
      http = 409;
      code = "conflict";
      break;
    case StatusCode::kCancelled:
      http = 409;
      code = "cancelled";
      break;
    case StatusCode::kTimeout:
      http = 503;
      code = "timeout";
      break;
    case StatusCode::kResourceExhausted:
      http = 429;
      code = "resource_exhausted";
      break;
    case StatusCode::kUnavailable:
    case StatusCode::kUnauthenticated:
    case StatusCode::kAborted:
    case StatusCode::kIoError:
      http = 503;
      code = "unavailable";
      break;
    default:
      break;
  }
  json e = {{"code", code}, {"message", s.message()}};
  if (http == 400) {
    const std::string& m = s.message();
    const std::string f = m.substr(0, m.find(' '));
    if (!f.empty() && f.find_first_of(":'\"(") == std::string::npos) {
      e["fields"] = json::array({{{"field", f}, {"message", m}}});
    }
  }
  c.res.status = http;
  c.res.set_content(json({{"error", e}}).dump(-1, ' ', false, json::error_handler_t::replace),
                    "application/json");
  return json(nullptr);
}

}  // namespace dbs::api

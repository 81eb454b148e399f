// The S3 ObjectStore (object_store.h) over libcurl, signed with our SigV4 (sigv4.h).
//
// Requests: ListObjectsV2 (paged by continuation token), HEAD for Stat, ranged GET for reads,
// PUT for objects up to one part, CreateMultipartUpload / UploadPart / CompleteMultipartUpload
// above that, AbortMultipartUpload, DeleteObject, ListMultipartUploads. Payloads are signed with
// their SHA-256 and carry Content-MD5; a part's returned ETag is checked against its MD5 when it
// is one. Requests that may be repeated (all but CreateMultipartUpload) are retried with
// exponential backoff on connection errors, 5xx and throttling (SlowDown, 429).
#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "core/logging.h"
#include "objstore/object_store.h"
#include "objstore/s3_xml.h"
#include "objstore/sigv4.h"

namespace dbs {
namespace {

using s3::Credentials;
using s3::RequestToSign;

constexpr uint64_t kMinPartSize = 5ull << 20;
constexpr uint64_t kMaxPartSize = 5ull << 30;
constexpr int kMaxParts = 10000;
constexpr size_t kMaxXmlBody = 64u << 20;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

std::string Unquote(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

bool IsHex32(const std::string& s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string HexToBytes(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

// Total size from "bytes 0-99/1234"; false when absent.
bool TotalFromContentRange(const std::string& cr, uint64_t* total) {
  const size_t slash = cr.rfind('/');
  if (slash == std::string::npos || slash + 1 >= cr.size() || cr[slash + 1] == '*') return false;
  *total = std::strtoull(cr.c_str() + slash + 1, nullptr, 10);
  return true;
}

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  bool body_too_large = false;

  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct Request {
  std::string method = "GET";
  std::string key;  // full key inside the bucket (root prefix included); "" for the bucket
  std::vector<std::pair<std::string, std::string>> query;
  std::map<std::string, std::string> headers;  // lower-case names, signed
  std::string_view body;
  size_t max_body = kMaxXmlBody;
  size_t reserve_body = 0;  // the expected body size, reserved up front (no growth by doubling)
  // Whether repeating the request after an ambiguous failure (sent, no answer) is harmless.
  bool idempotent = true;
};

// Upload body reader for curl.
struct BodySource {
  std::string_view data;
  size_t offset = 0;
};

size_t ReadBody(char* buf, size_t size, size_t n, void* user) {
  auto* src = static_cast<BodySource*>(user);
  const size_t take = std::min(size * n, src->data.size() - src->offset);
  std::memcpy(buf, src->data.data() + src->offset, take);
  src->offset += take;
  return take;
}

int SeekBody(void* user, curl_off_t offset, int origin) {
  auto* src = static_cast<BodySource*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > src->data.size()) {
    return CURL_SEEKFUNC_FAIL;
  }
  src->offset = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

struct Sink {
  HttpResponse* resp;
  size_t max;
};

size_t WriteBody(char* ptr, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t len = size * n;
  if (sink->resp->body.size() + len > sink->max) {
    sink->resp->body_too_large = true;
    return 0;  // stops the transfer
  }
  sink->resp->body.append(ptr, len);
  return len;
}

size_t WriteHeader(char* ptr, size_t size, size_t n, void* user) {
  auto* resp = static_cast<HttpResponse*>(user);
  const size_t len = size * n;
  std::string_view line(ptr, len);
  if (line.rfind("HTTP/", 0) == 0) {
    resp->headers.clear();  // a new response (after 100 Continue)
  } else if (const size_t colon = line.find(':'); colon != std::string_view::npos) {
    resp->headers[Lower(std::string(line.substr(0, colon)))] = Trimmed(line.substr(colon + 1));
  }
  return len;
}

bool RetryableCurl(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

// Failed before anything was sent: safe to repeat any request.
bool NeverSent(CURLcode c) { return c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST; }

bool RetryableHttp(const HttpResponse& r) {
  if (r.status == 500 || r.status == 502 || r.status == 503 || r.status == 504 || r.status == 429) {
    return true;
  }
  if (r.status == 200 && !r.body.empty()) {  // CompleteMultipartUpload: an error in a 200
    const s3::XmlError e = s3::ParseError(r.body);
    return e.code == "InternalError" || e.code == "SlowDown" || e.code == "ServiceUnavailable";
  }
  return false;
}

struct Endpoint {
  std::string scheme;     // "http" or "https"
  std::string authority;  // "host[:port]" as given
  std::string path;       // "" or "/base" (no trailing '/')
};

Result<Endpoint> ParseEndpoint(const std::string& url) {
  Endpoint e;
  const size_t sep = url.find("://");
  if (sep == std::string::npos) {
    return Status::InvalidArgument("S3 endpoint \"" + url +
                                   "\" must start with https:// (or http:// for a local server)");
  }
  e.scheme = Lower(url.substr(0, sep));
  if (e.scheme != "http" && e.scheme != "https") {
    return Status::InvalidArgument("S3 endpoint \"" + url + "\": the scheme must be https or http");
  }
  std::string rest = url.substr(sep + 3);
  const size_t slash = rest.find('/');
  e.authority = Lower(rest.substr(0, slash));
  if (slash != std::string::npos) e.path = rest.substr(slash);
  while (!e.path.empty() && e.path.back() == '/') e.path.pop_back();
  if (e.authority.empty() || e.authority.find('@') != std::string::npos ||
      e.path.find_first_of("?#") != std::string::npos) {
    return Status::InvalidArgument("S3 endpoint \"" + url +
                                   "\" must be scheme://host[:port][/path], without credentials");
  }
  return e;
}

class S3Store;

class CurlHandle {
 public:
  explicit CurlHandle(S3Store* store);
  ~CurlHandle();
  CURL* get() const { return h_; }

 private:
  S3Store* store_;
  CURL* h_;
};

class S3Store final : public ObjectStore {
 public:
  S3Store(S3Settings settings, Endpoint endpoint, std::string root)
      : s_(std::move(settings)), ep_(std::move(endpoint)), root_(std::move(root)) {
    creds_ = {s_.access_key, s_.secret_key, s_.session_token};
    describe_ = "s3://" + s_.bucket +
                (root_.empty() ? "" : "/" + root_.substr(0, root_.size() - 1)) + " at " +
                ep_.scheme + "://" + ep_.authority + ep_.path;
  }
  ~S3Store() override {
    for (CURL* h : pool_) curl_easy_cleanup(h);
  }

  Result<std::vector<ObjectInfo>> List(const std::string& prefix, bool recursive) override;
  Result<ObjectInfo> Stat(const std::string& key) override;
  Status ReadRange(const std::string& key, uint64_t offset, uint64_t length,
                   std::string* out) override;
  Result<std::unique_ptr<ObjectReader>> Open(const std::string& key) override;
  Result<std::unique_ptr<ObjectWriter>> Create(const std::string& key) override;
  Status Delete(const std::string& key) override;
  Status Copy(const std::string& from, const std::string& to) override;
  Result<std::vector<ObjectInfo>> ListIncomplete(const std::string& prefix) override;
  Result<size_t> RemoveIncomplete(const std::string& prefix,
                                  std::chrono::milliseconds min_age) override;
  std::string Describe() const override { return describe_; }

  const S3Settings& settings() const { return s_; }
  std::string FullKey(const std::string& key) const { return root_ + key; }

  // Sends `req` (with retries, see the file comment). A transport failure after the last
  // attempt is an error; any HTTP answer is returned for the caller to judge (ErrorFor).
  Result<HttpResponse> Send(const Request& req, std::string_view what);
  // The Status for a non-success answer to a request about `key` ("" for the bucket).
  Status ErrorFor(const HttpResponse& r, std::string_view what, const std::string& key) const;
  // Ranged GET of [offset, offset + length) with optional If-Match. Fills `resp`.
  Result<HttpResponse> GetRange(const std::string& key, uint64_t offset, uint64_t length,
                                const std::string& if_match);
  Status AbortUpload(const std::string& full_key, const std::string& upload_id);

  CURL* Acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (pool_.empty()) return curl_easy_init();
    CURL* h = pool_.back();
    pool_.pop_back();
    return h;
  }
  void Release(CURL* h) {
    std::lock_guard<std::mutex> lock(mu_);
    pool_.push_back(h);
  }

 private:
  Result<HttpResponse> SendOnce(const Request& req, CURLcode* curl_code, std::string* curl_msg);
  // NotFound for a missing key, or for a missing bucket after asking the bucket.
  Status NotFoundFor(const std::string& key);

  const S3Settings s_;
  const Endpoint ep_;
  const std::string root_;  // "" or "prefix/"
  Credentials creds_;
  std::string describe_;
  std::mutex mu_;
  std::vector<CURL*> pool_;
};

CurlHandle::CurlHandle(S3Store* store) : store_(store), h_(store->Acquire()) {}
CurlHandle::~CurlHandle() {
  if (h_ != nullptr) store_->Release(h_);
}

Result<HttpResponse> S3Store::SendOnce(const Request& req, CURLcode* curl_code,
                                       std::string* curl_msg) {
  CurlHandle handle(this);
  CURL* h = handle.get();
  if (h == nullptr) return Status::ResourceExhausted("curl_easy_init failed");
  curl_easy_reset(h);

  // Addressing: path style http://host/bucket/key, virtual host http://bucket.host/key.
  std::string host = ep_.authority;
  std::string path = ep_.path;
  if (s_.path_style) {
    path += "/" + s3::UriEncode(s_.bucket, false);
    if (!req.key.empty()) path += "/" + s3::UriEncode(req.key, true);
  } else {
    host = s_.bucket + "." + host;
    path += "/" + s3::UriEncode(req.key, true);
  }
  RequestToSign sig;
  sig.method = req.method;
  sig.encoded_path = path;
  sig.query = req.query;
  sig.headers = req.headers;
  sig.headers["host"] = host;
  sig.payload_sha256 = s3::Sha256Hex(req.body);
  const std::string auth = s3::SignV4(&sig, creds_, s_.region, s3::AmzDateNow());
  std::string url = ep_.scheme + "://" + host + path;
  const std::string query = s3::CanonicalQuery(req.query);
  if (!query.empty()) url += "?" + query;

  struct curl_slist* headers = nullptr;
  for (const auto& [name, value] : sig.headers) {
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  }
  headers = curl_slist_append(headers, ("authorization: " + auth).c_str());
  headers = curl_slist_append(headers, "Expect:");
  if (sig.headers.count("content-type") == 0) {
    headers = curl_slist_append(headers, "Content-Type:");
  }
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_guard(headers, &curl_slist_free_all);

  HttpResponse resp;
  resp.body.reserve(req.reserve_body);
  Sink sink{&resp, req.max_body};
  BodySource source{req.body, 0};
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(s_.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(s_.request_timeout.count()));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &WriteBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &WriteHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &resp);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, s_.verify_tls ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, s_.verify_tls ? 2L : 0L);
  if (!s_.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, s_.ca_file.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "dbstreams-objstore");
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  if (req.method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (req.method == "PUT") {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, &ReadBody);
    curl_easy_setopt(h, CURLOPT_READDATA, &source);
    curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, &SeekBody);
    curl_easy_setopt(h, CURLOPT_SEEKDATA, &source);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  } else if (req.method == "POST") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  } else if (req.method != "GET") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }
  CURLcode rc = curl_easy_perform(h);
  uint64_t total = 0;
  if (rc == CURLE_PARTIAL_FILE && resp.body.empty() &&
      TotalFromContentRange(resp.Header("content-range"), &total) && total == 0) {
    // A range of an empty object answered as "bytes 0-0/0" with a length of 1 and no byte (some
    // servers): the object is empty, and so is the range.
    rc = CURLE_OK;
  }
  if (rc != CURLE_OK) {
    if (rc == CURLE_WRITE_ERROR && resp.body_too_large) {
      return Status::Corruption(Describe() + ": the answer to " + req.method + " " +
                                (req.key.empty() ? "(bucket)" : req.key) +
                                " is larger than expected (" + std::to_string(req.max_body) +
                                " bytes)");
    }
    *curl_code = rc;  // a transport failure: Send decides about retrying
    *curl_msg = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
    return Status::Unavailable(*curl_msg);
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp.status);
  return resp;
}

Result<HttpResponse> S3Store::Send(const Request& req, std::string_view what_in) {
  const int attempts = std::max(1, s_.max_attempts);
  const std::string what =
      std::string(what_in) +
      (req.key.size() > root_.size() ? " " + req.key.substr(root_.size()) : "");
  thread_local std::minstd_rand jitter(
      static_cast<unsigned>(getpid()) ^
      static_cast<unsigned>(std::hash<std::thread::id>()(std::this_thread::get_id())));
  std::string last;
  for (int attempt = 1;; ++attempt) {
    CURLcode code = CURLE_OK;
    std::string msg;
    Result<HttpResponse> r = SendOnce(req, &code, &msg);
    bool retry = false;
    if (r.ok()) {
      if (!RetryableHttp(*r)) return r;
      const s3::XmlError e = s3::ParseError(r->body);
      last = "HTTP " + std::to_string(r->status) + (e.code.empty() ? "" : " " + e.code);
      retry = true;
      if (attempt >= attempts) return r;  // the caller names the server's error
    } else {
      if (code == CURLE_OK) return r.status();  // not a transport failure
      last = msg;
      retry = RetryableCurl(code) && (req.idempotent || NeverSent(code));
      if (!retry || attempt >= attempts) {
        const bool tls = code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE;
        if (tls) {
          return Status(StatusCode::kFailedPrecondition, Retry::kFail,
                        Describe() + ": " + std::string(what) + ": TLS: " + msg +
                            " (check the endpoint's certificate, or set the connection's CA file)");
        }
        return Status(StatusCode::kUnavailable, retry ? Retry::kRetry : Retry::kFail,
                      Describe() + ": " + std::string(what) + ": cannot reach the endpoint (" +
                          msg + ")" +
                          (attempt > 1 ? " after " + std::to_string(attempt) + " attempts" : ""));
      }
    }
    if (!retry) return r;
    const int64_t base = std::min<int64_t>(5000, 100LL << std::min(attempt - 1, 10));
    const int64_t sleep_ms = base / 2 + static_cast<int64_t>(jitter() % (base / 2 + 1));
    Log(LogLevel::kWarn, "objstore",
        Describe() + ": " + std::string(what) + " failed (" + last + "), retrying",
        {F("attempt", attempt), F("sleep_ms", sleep_ms)});
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
  }
}

Status S3Store::ErrorFor(const HttpResponse& r, std::string_view what,
                         const std::string& key) const {
  const s3::XmlError e = s3::ParseError(r.body);
  const std::string code = e.code;
  const std::string server = code.empty() ? "HTTP " + std::to_string(r.status)
                                          : code + (e.message.empty() ? "" : ": " + e.message);
  const std::string where =
      Describe() + ": " + std::string(what) + (key.empty() ? "" : " " + key) + ": ";
  if (code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "InvalidToken" ||
      code == "ExpiredToken" || code == "TokenRefreshRequired" || code == "AccessDenied" ||
      code == "AllAccessDisabled" || code == "InvalidSecurity" ||
      (code.empty() && (r.status == 401 || r.status == 403))) {
    return Status::PermissionDenied(where + "access denied by bucket " + s_.bucket + " at " +
                                    ep_.scheme + "://" + ep_.authority + " (" + server +
                                    "): check the access key and secret key of the connection" +
                                    (s_.session_token.empty() ? "" : " and its session token") +
                                    ", and that they may use this bucket");
  }
  if (code == "AuthorizationHeaderMalformed" || code == "PermanentRedirect" ||
      code == "IllegalLocationConstraintException" || r.status == 301) {
    const std::string region = r.Header("x-amz-bucket-region");
    return Status::InvalidArgument(where + "the bucket answers from another region or endpoint (" +
                                   server + ")" +
                                   (region.empty() ? "" : ": its region is " + region) +
                                   "; set the connection's region (now " + s_.region + ")");
  }
  if (code == "RequestTimeTooSkewed") {
    return Status::FailedPrecondition(where +
                                      "this machine's clock differs too much from the "
                                      "server's (" +
                                      server + "): set the clock right");
  }
  if (code == "NoSuchBucket") {
    return Status::NotFound(Describe() + ": the bucket " + s_.bucket + " does not exist at " +
                            ep_.scheme + "://" + ep_.authority +
                            " (NoSuchBucket): check the "
                            "bucket name and the endpoint");
  }
  if (code == "NoSuchKey" || (code.empty() && r.status == 404)) {
    return Status::NotFound(Describe() + ": no object " + (key.empty() ? "(bucket)" : key));
  }
  if (code == "NoSuchUpload") {
    return Status::Aborted(where + "the multipart upload is gone (NoSuchUpload)");
  }
  if (code == "PreconditionFailed" || r.status == 412) {
    return Status::Aborted(where + "the object was replaced while it was being read (" + server +
                           ")");
  }
  if (code == "NotImplemented" || code == "MethodNotAllowed" || r.status == 501 ||
      r.status == 405) {
    return Status::Unsupported(where + "the server does not support this request (" + server + ")");
  }
  if (code == "EntityTooLarge" || code == "EntityTooSmall" || code == "TooManyParts") {
    return Status::ResourceExhausted(where + server);
  }
  if (code == "BadDigest" || code == "InvalidDigest" || code == "XAmzContentSHA256Mismatch") {
    return Status::Corruption(where + "the server received other bytes than were sent (" + server +
                              ")");
  }
  if (r.status >= 500 || code == "SlowDown" || code == "InternalError" || r.status == 429) {
    return Status::Unavailable(where + "the server keeps failing (" + server + ")");
  }
  return Status::InvalidArgument(where + "refused (" + server + ")");
}

Status S3Store::NotFoundFor(const std::string& key) {
  Request b;
  b.method = "HEAD";
  Result<HttpResponse> r = Send(b, "checking the bucket");
  if (r.ok() && r->status == 404) {
    HttpResponse fake = *r;
    fake.body = "<Error><Code>NoSuchBucket</Code></Error>";
    return ErrorFor(fake, "checking the bucket", "");
  }
  return Status::NotFound(Describe() + ": no object " + key);
}

// --- listing -------------------------------------------------------------------------------------

Result<std::vector<ObjectInfo>> S3Store::List(const std::string& prefix, bool recursive) {
  DBS_ASSIGN_OR_RETURN(std::string folder, NormalizePrefix(prefix));
  const std::string full = root_ + folder;
  std::vector<ObjectInfo> out;
  std::string token;
  for (int page = 0;; ++page) {
    Request req;
    req.query = {{"list-type", "2"}, {"max-keys", std::to_string(s_.list_page_size)}};
    if (!full.empty()) req.query.emplace_back("prefix", full);
    if (!recursive) req.query.emplace_back("delimiter", "/");
    if (!token.empty()) req.query.emplace_back("continuation-token", token);
    DBS_ASSIGN_OR_RETURN(HttpResponse r, Send(req, "listing"));
    if (r.status != 200) return ErrorFor(r, "listing", folder.empty() ? "(root)" : folder);
    Result<s3::ListPage> parsed = s3::ParseListObjectsV2(r.body);
    if (!parsed.ok()) return parsed.status().WithContext(Describe());
    for (s3::ListPage::Object& o : parsed->objects) {
      if (o.key.size() <= root_.size() || o.key.compare(0, root_.size(), root_) != 0) continue;
      std::string rel = o.key.substr(root_.size());
      if (!ValidateKey(rel).ok()) continue;  // folder markers ("a/") and unreachable names
      ObjectInfo info;
      info.key = std::move(rel);
      info.size = o.size;
      info.modified_ms = o.modified_ms;
      info.etag = std::move(o.etag);
      out.push_back(std::move(info));
    }
    for (const std::string& p : parsed->prefixes) {
      if (p.size() <= root_.size() || p.compare(0, root_.size(), root_) != 0) continue;
      std::string rel = p.substr(root_.size());
      if (rel.back() != '/' || !ValidateKey(rel.substr(0, rel.size() - 1)).ok()) continue;
      ObjectInfo info;
      info.key = std::move(rel);
      info.is_prefix = true;
      out.push_back(std::move(info));
    }
    if (!parsed->truncated) break;
    if (parsed->next_token.empty() || parsed->next_token == token) {
      return Status::Corruption(Describe() +
                                ": listing: a truncated page without a new "
                                "continuation token");
    }
    token = parsed->next_token;
  }
  std::sort(out.begin(), out.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

Result<std::vector<ObjectInfo>> S3Store::ListIncomplete(const std::string& prefix) {
  DBS_ASSIGN_OR_RETURN(std::string folder, NormalizePrefix(prefix));
  const std::string full = root_ + folder;
  std::vector<ObjectInfo> out;
  std::string key_marker, id_marker;
  for (;;) {
    Request req;
    req.query = {{"uploads", ""}};
    if (!full.empty()) req.query.emplace_back("prefix", full);
    if (!key_marker.empty()) req.query.emplace_back("key-marker", key_marker);
    if (!id_marker.empty()) req.query.emplace_back("upload-id-marker", id_marker);
    DBS_ASSIGN_OR_RETURN(HttpResponse r, Send(req, "listing multipart uploads"));
    if (r.status != 200) return ErrorFor(r, "listing multipart uploads", folder);
    Result<s3::UploadsPage> page = s3::ParseListMultipartUploads(r.body);
    if (!page.ok()) return page.status().WithContext(Describe());
    for (const s3::UploadsPage::Upload& u : page->uploads) {
      if (u.key.size() <= root_.size() || u.key.compare(0, root_.size(), root_) != 0) continue;
      ObjectInfo info;
      info.key = u.key.substr(root_.size());
      info.modified_ms = u.initiated_ms;
      info.etag = u.upload_id;  // the upload's id, for RemoveIncomplete
      out.push_back(std::move(info));
    }
    if (!page->truncated) break;
    if (page->next_key_marker == key_marker && page->next_upload_id_marker == id_marker) {
      return Status::Corruption(Describe() + ": listing multipart uploads: no progress");
    }
    key_marker = page->next_key_marker;
    id_marker = page->next_upload_id_marker;
  }
  std::sort(out.begin(), out.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

Result<size_t> S3Store::RemoveIncomplete(const std::string& prefix,
                                         std::chrono::milliseconds min_age) {
  DBS_ASSIGN_OR_RETURN(std::vector<ObjectInfo> uploads, ListIncomplete(prefix));
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  size_t removed = 0;
  for (const ObjectInfo& u : uploads) {
    if (now_ms - u.modified_ms < min_age.count()) continue;
    DBS_RETURN_IF_ERROR(AbortUpload(FullKey(u.key), u.etag));
    ++removed;
  }
  return removed;
}

// --- reading -------------------------------------------------------------------------------------

Result<ObjectInfo> S3Store::Stat(const std::string& key) {
  DBS_RETURN_IF_ERROR(ValidateKey(key));
  Request req;
  req.method = "HEAD";
  req.key = FullKey(key);
  DBS_ASSIGN_OR_RETURN(HttpResponse r, Send(req, "reading the metadata of"));
  if (r.status == 404) return NotFoundFor(key);
  if (r.status != 200) return ErrorFor(r, "reading the metadata of", key);
  ObjectInfo info;
  info.key = key;
  info.size = std::strtoull(r.Header("content-length").c_str(), nullptr, 10);
  info.modified_ms = s3::ParseTimeMs(r.Header("last-modified"));
  info.etag = Unquote(r.Header("etag"));
  return info;
}

Result<HttpResponse> S3Store::GetRange(const std::string& key, uint64_t offset, uint64_t length,
                                       const std::string& if_match) {
  Request req;
  req.key = FullKey(key);
  req.headers["range"] =
      "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1);
  if (!if_match.empty()) req.headers["if-match"] = "\"" + if_match + "\"";
  req.max_body = static_cast<size_t>(std::max<uint64_t>(length, 1 << 20));
  req.reserve_body = static_cast<size_t>(std::min<uint64_t>(length, 64u << 20));
  DBS_ASSIGN_OR_RETURN(HttpResponse r, Send(req, "reading"));
  if (r.status == 404) {
    const s3::XmlError e = s3::ParseError(r.body);
    if (e.code == "NoSuchBucket") return ErrorFor(r, "reading", key);
    return Status::NotFound(Describe() + ": no object " + key);
  }
  if (r.status != 200 && r.status != 206 && r.status != 416) return ErrorFor(r, "reading", key);
  return r;
}

Status S3Store::ReadRange(const std::string& key, uint64_t offset, uint64_t length,
                          std::string* out) {
  out->clear();
  DBS_RETURN_IF_ERROR(ValidateKey(key));
  if (length == 0) return Stat(key).status();
  length = std::min<uint64_t>(length, UINT64_MAX - offset);
  DBS_ASSIGN_OR_RETURN(HttpResponse r, GetRange(key, offset, length, ""));
  if (r.status == 416) return Status::Ok();  // at or past the end
  if (r.status == 200) {
    // The whole object (a server that ignored the range, or an empty object): cut it.
    if (offset < r.body.size()) *out = r.body.substr(offset, length);
    return Status::Ok();
  }
  *out = std::move(r.body);
  if (out->size() > length) out->resize(length);
  return Status::Ok();
}

class S3Reader final : public ObjectReader {
 public:
  S3Reader(S3Store* store, std::string key) : store_(store), key_(std::move(key)) {}

  // The first range: the size, the ETag that later ranges must match, and the first bytes.
  Status Start() {
    DBS_ASSIGN_OR_RETURN(HttpResponse r, store_->GetRange(key_, 0, chunk(), ""));
    if (r.status == 416) {  // an empty object
      size_ = 0;
      return Status::Ok();
    }
    etag_ = Unquote(r.Header("etag"));
    if (r.status == 206) {
      if (!TotalFromContentRange(r.Header("content-range"), &size_)) {
        return Status::Corruption(store_->Describe() + ": reading " + key_ +
                                  ": a ranged answer without its total size");
      }
    } else {
      size_ = r.body.size();
    }
    buf_ = std::move(r.body);
    buf_end_ = buf_.size();
    return Status::Ok();
  }

  Status Read(std::string* out, size_t max) override {
    out->clear();
    while (out->size() < max) {
      if (pos_ >= buf_end_) {
        if (buf_end_ >= size_) break;
        const uint64_t want = std::min<uint64_t>(chunk(), size_ - buf_end_);
        buf_ = std::string();  // free the old range before the next one arrives
        Result<HttpResponse> r = store_->GetRange(key_, buf_end_, want, etag_);
        if (!r.ok()) return Fail(r.status());
        if (r->status != 206 && !(r->status == 200 && buf_end_ == 0)) {
          return Fail(Status::Corruption(store_->Describe() + ": reading " + key_ +
                                         ": expected a partial answer, got HTTP " +
                                         std::to_string(r->status)));
        }
        if (r->body.size() != want) {
          return Fail(Status::Unavailable(
              store_->Describe() + ": reading " + key_ + ": got " + std::to_string(r->body.size()) +
              " of " + std::to_string(want) + " bytes at offset " + std::to_string(buf_end_)));
        }
        const std::string etag = Unquote(r->Header("etag"));
        if (!etag_.empty() && !etag.empty() && etag != etag_) {  // a server that ignores If-Match
          return Fail(Status::Aborted(store_->Describe() + ": reading " + key_ +
                                      ": the object was replaced while it was being read (ETag " +
                                      etag_ + ", now " + etag + ")"));
        }
        buf_start_ = buf_end_;
        buf_end_ += want;
        pos_ = buf_start_;
        buf_ = std::move(r->body);
      }
      const size_t take =
          static_cast<size_t>(std::min<uint64_t>(max - out->size(), buf_end_ - pos_));
      out->append(buf_, static_cast<size_t>(pos_ - buf_start_), take);
      pos_ += take;
    }
    return Status::Ok();
  }
  uint64_t size() const override { return size_; }

 private:
  uint64_t chunk() const { return std::max<uint64_t>(1, store_->settings().read_chunk); }
  Status Fail(Status st) {
    buf_.clear();
    buf_.shrink_to_fit();
    return st;
  }

  S3Store* store_;
  std::string key_;
  std::string etag_;
  uint64_t size_ = 0;
  std::string buf_;  // bytes [buf_start_, buf_end_) of the object
  uint64_t buf_start_ = 0;
  uint64_t buf_end_ = 0;
  uint64_t pos_ = 0;  // next byte to hand out
};

Result<std::unique_ptr<ObjectReader>> S3Store::Open(const std::string& key) {
  DBS_RETURN_IF_ERROR(ValidateKey(key));
  auto reader = std::make_unique<S3Reader>(this, key);
  DBS_RETURN_IF_ERROR(reader->Start());
  return std::unique_ptr<ObjectReader>(std::move(reader));
}

// --- writing -------------------------------------------------------------------------------------

class S3Writer final : public ObjectWriter {
 public:
  S3Writer(S3Store* store, std::string key)
      : store_(store), key_(std::move(key)), full_key_(store->FullKey(key_)) {}
  ~S3Writer() override { Abort().ok(); }

  Status Write(std::string_view bytes) override {
    if (done_) return Closed();
    const size_t part = static_cast<size_t>(store_->settings().part_size);
    while (!bytes.empty()) {
      if (buffer_.size() == part) {  // full, and more is coming: send it as a part
        Status st = UploadPart();
        if (!st.ok()) return Fail(st);
      }
      if (buffer_.capacity() < part) buffer_.reserve(part);
      const size_t take = std::min(bytes.size(), part - buffer_.size());
      buffer_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      written_ += take;
    }
    return Status::Ok();
  }

  Status Commit() override {
    if (done_) return Closed();
    Status st = upload_id_.empty() ? PutWhole() : CompleteUpload();
    if (!st.ok()) return Fail(st);
    done_ = true;
    Release();
    return Status::Ok();
  }

  Status Abort() override {
    if (done_) return Status::Ok();
    done_ = true;
    Release();
    if (upload_id_.empty()) return Status::Ok();
    return store_->AbortUpload(full_key_, upload_id_);
  }

  uint64_t bytes_written() const override { return written_; }

 private:
  Status Closed() const {
    return Status::FailedPrecondition(store_->Describe() + ": writing " + key_ +
                                      ": the writer was already committed, aborted or failed");
  }
  Status Fail(const Status& st) {
    Status ab = Abort();
    if (!ab.ok()) {
      Log(LogLevel::kWarn, "objstore",
          store_->Describe() + ": aborting the upload of " + key_ + " failed: " + ab.message());
    }
    return st;
  }
  void Release() {
    buffer_.clear();
    buffer_.shrink_to_fit();
  }

  // Content-MD5 and the signed SHA-256 of the body; the MD5 hex for the part ETag check.
  static void Digest(std::string_view body, Request* req, std::string* md5_hex) {
    std::string b64;
    s3::Md5(body, &b64, md5_hex);
    req->headers["content-md5"] = b64;
  }

  Status PutWhole() {
    Request req;
    req.method = "PUT";
    req.key = full_key_;
    req.body = buffer_;
    std::string md5;
    Digest(buffer_, &req, &md5);
    DBS_ASSIGN_OR_RETURN(HttpResponse r, store_->Send(req, "writing"));
    if (r.status != 200) return store_->ErrorFor(r, "writing", key_);
    return Status::Ok();
  }

  Status StartUpload() {
    Request req;
    req.method = "POST";
    req.key = full_key_;
    req.query = {{"uploads", ""}};
    req.headers["content-type"] = "application/octet-stream";
    req.idempotent = false;  // a repeat would start a second upload
    DBS_ASSIGN_OR_RETURN(HttpResponse r, store_->Send(req, "starting a multipart upload of"));
    if (r.status != 200) return store_->ErrorFor(r, "starting a multipart upload of", key_);
    Result<std::string> id = s3::ParseUploadId(r.body);
    if (!id.ok()) return id.status().WithContext(store_->Describe());
    upload_id_ = std::move(id).value();
    return Status::Ok();
  }

  Status UploadPart() {
    if (upload_id_.empty()) DBS_RETURN_IF_ERROR(StartUpload());
    const int number = static_cast<int>(etags_.size()) + 1;
    if (number > kMaxParts) {
      return Status::ResourceExhausted(
          store_->Describe() + ": writing " + key_ + ": more than 10000 parts of " +
          std::to_string(store_->settings().part_size) + " bytes; raise the part size");
    }
    Request req;
    req.method = "PUT";
    req.key = full_key_;
    req.query = {{"partNumber", std::to_string(number)}, {"uploadId", upload_id_}};
    req.body = buffer_;
    std::string md5;
    Digest(buffer_, &req, &md5);
    const std::string what = "uploading part " + std::to_string(number) + " of";
    DBS_ASSIGN_OR_RETURN(HttpResponse r, store_->Send(req, what));
    if (r.status != 200) return store_->ErrorFor(r, what, key_);
    std::string etag = Unquote(r.Header("etag"));
    if (etag.empty()) {
      return Status::Corruption(store_->Describe() + ": " + what + " " + key_ +
                                ": the answer has no ETag");
    }
    if (IsHex32(etag) && Lower(etag) != md5) {
      return Status::Corruption(store_->Describe() + ": " + what + " " + key_ +
                                ": the server stored other bytes (ETag " + etag + ", MD5 " + md5 +
                                ")");
    }
    etags_.push_back(etag);
    md5s_.push_back(md5);
    buffer_.clear();
    return Status::Ok();
  }

  Status CompleteUpload() {
    if (!buffer_.empty() || etags_.empty()) DBS_RETURN_IF_ERROR(UploadPart());
    std::string xml = "<CompleteMultipartUpload>";
    for (size_t i = 0; i < etags_.size(); ++i) {
      xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>\"" +
             s3::XmlEscape(etags_[i]) + "\"</ETag></Part>";
    }
    xml += "</CompleteMultipartUpload>";
    Request req;
    req.method = "POST";
    req.key = full_key_;
    req.query = {{"uploadId", upload_id_}};
    req.headers["content-type"] = "application/xml";
    req.body = xml;
    DBS_ASSIGN_OR_RETURN(HttpResponse r, store_->Send(req, "completing the upload of"));
    s3::XmlError e = s3::ParseError(r.body);
    if (r.status == 200 && e.code.empty()) return Status::Ok();
    if (e.code == "NoSuchUpload" && AlreadyComplete()) return Status::Ok();
    return store_->ErrorFor(r, "completing the upload of", key_);
  }

  // After a repeated CompleteMultipartUpload answered NoSuchUpload: whether the first one did
  // complete it, i.e. the object's ETag is the multipart ETag of our parts.
  bool AlreadyComplete() {
    std::string concat;
    for (const std::string& m : md5s_) concat += HexToBytes(m);
    std::string hex;
    s3::Md5(concat, nullptr, &hex);
    Result<ObjectInfo> st = store_->Stat(key_);
    return st.ok() && Lower(st->etag) == hex + "-" + std::to_string(md5s_.size());
  }

  S3Store* store_;
  std::string key_;
  std::string full_key_;
  std::string buffer_;  // at most one part
  std::string upload_id_;
  std::vector<std::string> etags_;
  std::vector<std::string> md5s_;
  uint64_t written_ = 0;
  bool done_ = false;
};

Status S3Store::AbortUpload(const std::string& full_key, const std::string& upload_id) {
  Request req;
  req.method = "DELETE";
  req.key = full_key;
  req.query = {{"uploadId", upload_id}};
  const std::string key = full_key.substr(root_.size());
  Result<HttpResponse> r = Send(req, "aborting the multipart upload of");
  if (!r.ok()) return r.status();
  if (r->status == 204 || r->status == 200) return Status::Ok();
  const s3::XmlError e = s3::ParseError(r->body);
  if (e.code == "NoSuchUpload") return Status::Ok();  // already gone
  Status st = ErrorFor(*r, "aborting the multipart upload of", key);
  if (st.code() == StatusCode::kUnsupported) {
    return Status::Unsupported(st.message() +
                               "; the parts already sent stay on the server (never "
                               "visible as an object) until its own cleanup");
  }
  return st;
}

Result<std::unique_ptr<ObjectWriter>> S3Store::Create(const std::string& key) {
  DBS_RETURN_IF_ERROR(ValidateKey(key));
  return std::unique_ptr<ObjectWriter>(new S3Writer(this, key));
}

Status S3Store::Delete(const std::string& key) {
  DBS_RETURN_IF_ERROR(ValidateKey(key));
  Request req;
  req.method = "DELETE";
  req.key = FullKey(key);
  DBS_ASSIGN_OR_RETURN(HttpResponse r, Send(req, "deleting"));
  if (r.status == 204 || r.status == 200) return Status::Ok();
  const s3::XmlError e = s3::ParseError(r.body);
  if (e.code == "NoSuchKey") return Status::Ok();
  return ErrorFor(r, "deleting", key);
}

// CopyObject copies up to 5 GiB on the server; larger objects go through the default (a read
// and a multipart upload). A copy can fail after a 200 answer: the error is then in the body.
Status S3Store::Copy(const std::string& from, const std::string& to) {
  DBS_RETURN_IF_ERROR(ValidateKey(to));
  DBS_ASSIGN_OR_RETURN(ObjectInfo src, Stat(from));
  if (src.size > (5ull << 30)) return ObjectStore::Copy(from, to);
  Request req;
  req.method = "PUT";
  req.key = FullKey(to);
  req.headers["x-amz-copy-source"] =
      "/" + s3::UriEncode(s_.bucket, false) + "/" + s3::UriEncode(FullKey(from), true);
  // Only the object that was measured: a replaced source fails instead of copying other bytes.
  if (!src.etag.empty()) req.headers["x-amz-copy-source-if-match"] = "\"" + src.etag + "\"";
  const std::string what = "copying " + from + " to";
  DBS_ASSIGN_OR_RETURN(HttpResponse r, Send(req, what));
  const s3::XmlError e = s3::ParseError(r.body);
  if (r.status == 200 && e.code.empty()) return Status::Ok();
  if (r.status == 404 || e.code == "NoSuchKey") return NotFoundFor(from);
  return ErrorFor(r, what, to);
}

}  // namespace

Result<std::unique_ptr<ObjectStore>> OpenS3Store(const S3Settings& settings) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  DBS_ASSIGN_OR_RETURN(Endpoint ep, ParseEndpoint(settings.endpoint));
  const std::string& b = settings.bucket;
  bool bucket_ok = b.size() >= 3 && b.size() <= 63;
  for (char c : b) {
    bucket_ok = bucket_ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                              c == '.' || c == '_');
  }
  if (!bucket_ok) {
    return Status::InvalidArgument("S3 bucket \"" + b +
                                   "\": 3 to 63 characters of a-z, 0-9, '.', '-' (and '_' for "
                                   "older buckets)");
  }
  if (!settings.path_style && b.find('_') != std::string::npos) {
    return Status::InvalidArgument("S3 bucket \"" + b +
                                   "\": a name with '_' cannot be a host name: use path-style "
                                   "addressing");
  }
  if (settings.region.empty()) return Status::InvalidArgument("S3: the region is empty");
  if (settings.access_key.empty() || settings.secret_key.empty()) {
    return Status::InvalidArgument("S3 bucket " + b +
                                   ": the access key and the secret key are both required");
  }
  if (settings.part_size < kMinPartSize || settings.part_size > kMaxPartSize) {
    return Status::InvalidArgument("S3: the part size must be 5 MiB to 5 GiB");
  }
  if (settings.read_chunk == 0 || settings.read_chunk > (1ull << 30)) {
    return Status::InvalidArgument("S3: the read chunk must be 1 byte to 1 GiB");
  }
  if (settings.list_page_size < 1 || settings.list_page_size > 1000) {
    return Status::InvalidArgument("S3: the list page size must be 1 to 1000");
  }
  std::string root = settings.prefix;
  while (!root.empty() && root.front() == '/') root.erase(0, 1);
  while (!root.empty() && root.back() == '/') root.pop_back();
  if (!root.empty()) {
    Status st = ValidateKey(root);
    if (!st.ok()) return Status::InvalidArgument("S3 prefix: " + st.message());
    root += "/";
  }
  return std::unique_ptr<ObjectStore>(new S3Store(settings, std::move(ep), std::move(root)));
}

}  // namespace dbs

#include "objstore/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <ctime>

namespace dbs::s3 {
namespace {

std::string Hex(const unsigned char* p, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += kHex[p[i] >> 4];
    out += kHex[p[i] & 15];
  }
  return out;
}

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), md, &len);
  return std::string(reinterpret_cast<char*>(md), len);
}

std::string Trim(std::string_view v) {
  // SigV4: trim, and collapse runs of spaces into one.
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string Sha256Hex(std::string_view bytes) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), md);
  return Hex(md, sizeof(md));
}

void Md5(std::string_view bytes, std::string* base64, std::string* hex) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_md5(), nullptr);
  if (hex != nullptr) *hex = Hex(md, len);
  if (base64 != nullptr) {
    unsigned char b64[64];
    const int n = EVP_EncodeBlock(b64, md, static_cast<int>(len));
    base64->assign(reinterpret_cast<char*>(b64), static_cast<size_t>(n));
  }
}

std::string UriEncode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~' || (c == '/' && keep_slash)) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string CanonicalQuery(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> enc;
  enc.reserve(query.size());
  for (const auto& [k, v] : query) enc.emplace_back(UriEncode(k, false), UriEncode(v, false));
  std::sort(enc.begin(), enc.end());
  std::string out;
  for (const auto& [k, v] : enc) {
    if (!out.empty()) out += '&';
    out += k + "=" + v;
  }
  return out;
}

std::string AmzDateNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string SignV4(RequestToSign* req, const Credentials& creds, const std::string& region,
                   const std::string& amz_date) {
  req->headers["x-amz-date"] = amz_date;
  req->headers["x-amz-content-sha256"] = req->payload_sha256;
  if (!creds.session_token.empty()) req->headers["x-amz-security-token"] = creds.session_token;

  std::string canonical_headers, signed_headers;
  for (const auto& [name, value] : req->headers) {  // std::map: sorted by name
    canonical_headers += name + ":" + Trim(value) + "\n";
    if (!signed_headers.empty()) signed_headers += ';';
    signed_headers += name;
  }
  const std::string canonical_request = req->method + "\n" + req->encoded_path + "\n" +
                                        CanonicalQuery(req->query) + "\n" + canonical_headers +
                                        "\n" + signed_headers + "\n" + req->payload_sha256;
  const std::string date = amz_date.substr(0, 8);
  const std::string scope = date + "/" + region + "/s3/aws4_request";
  const std::string string_to_sign =
      "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + Sha256Hex(canonical_request);
  std::string key = Hmac("AWS4" + creds.secret_key, date);
  key = Hmac(key, region);
  key = Hmac(key, "s3");
  key = Hmac(key, "aws4_request");
  const std::string sig = Hmac(key, string_to_sign);
  return "AWS4-HMAC-SHA256 Credential=" + creds.access_key + "/" + scope +
         ", SignedHeaders=" + signed_headers +
         ", Signature=" + Hex(reinterpret_cast<const unsigned char*>(sig.data()), sig.size());
}

}  // namespace dbs::s3

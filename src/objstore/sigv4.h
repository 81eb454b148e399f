// AWS Signature Version 4 for S3 requests, on OpenSSL (internal to src/objstore).
//
// Why our own signing rather than libcurl's CURLOPT_AWS_SIGV4: the signer must see exactly what
// is sent (the encoded path, the sorted query with continuation tokens and upload ids, the
// Range, Content-MD5 and x-amz-* headers) and sign a payload hash we computed per part; curl
// 7.88 needs x-amz-content-sha256 by hand anyway and its query canonicalization differs between
// versions. Owning the ~100 lines makes the canonical request testable against the documented
// AWS examples (objstore_sigv4 unit test) and identical on every curl.
//
// Contract: pure functions, thread-safe. The secret key is used only inside SignV4 and never
// appears in its output other than through the HMAC.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dbs::s3 {

// Lower-case hex SHA-256 of `bytes`.
std::string Sha256Hex(std::string_view bytes);
// Base64 of the MD5 of `bytes` (Content-MD5), and its lower-case hex (an S3 part's ETag).
void Md5(std::string_view bytes, std::string* base64, std::string* hex);
// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters (A-Z a-z 0-9 - . _ ~) stay,
// everything else is %XX (upper case); '/' stays when `keep_slash`.
std::string UriEncode(std::string_view s, bool keep_slash);

struct Credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // empty: none
};

struct RequestToSign {
  std::string method;        // "GET"
  std::string encoded_path;  // already encoded, as sent: "/bucket/a%20b.csv"
  std::vector<std::pair<std::string, std::string>> query;  // raw (unencoded) names and values
  // Headers to sign, names lower case, values as sent (must include "host"). SignV4 adds
  // x-amz-date, x-amz-content-sha256 and, with a session token, x-amz-security-token here.
  std::map<std::string, std::string> headers;
  std::string payload_sha256;  // hex, or "UNSIGNED-PAYLOAD"
};

// Signs `req` for service "s3" in `region` at `amz_date` ("20130524T000000Z"), adding the
// x-amz-* headers to req->headers, and returns the Authorization header value.
std::string SignV4(RequestToSign* req, const Credentials& creds, const std::string& region,
                   const std::string& amz_date);
// The canonical query string of `query` (sorted, encoded): also what goes after '?' in the URL.
std::string CanonicalQuery(const std::vector<std::pair<std::string, std::string>>& query);
// "20130524T000000Z" for now (UTC).
std::string AmzDateNow();

}  // namespace dbs::s3

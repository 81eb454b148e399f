// The XML bodies of S3 responses, parsed with expat (internal to src/objstore).
//
// Contract: the input is untrusted; malformed XML gives Corruption, never a crash (fuzzed by
// s3_xml_fuzzer). Only the elements we use are read; namespaces are ignored (element names are
// taken without their prefix).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace dbs::s3 {

struct XmlError {
  std::string code;     // "NoSuchKey"; empty when the body is not an <Error>
  std::string message;  // the server's text
};

struct ListPage {
  struct Object {
    std::string key;
    uint64_t size = 0;
    int64_t modified_ms = 0;
    std::string etag;  // without quotes
  };
  std::vector<Object> objects;
  std::vector<std::string> prefixes;  // CommonPrefixes
  bool truncated = false;
  std::string next_token;  // NextContinuationToken
};

struct UploadsPage {
  struct Upload {
    std::string key;
    std::string upload_id;
    int64_t initiated_ms = 0;
  };
  std::vector<Upload> uploads;
  bool truncated = false;
  std::string next_key_marker;
  std::string next_upload_id_marker;
};

// The <Error> of an error response (or of a 200 response to CompleteMultipartUpload, which S3
// may send after it started answering). Empty code when the body is something else.
XmlError ParseError(std::string_view body);
Result<ListPage> ParseListObjectsV2(std::string_view body);
Result<UploadsPage> ParseListMultipartUploads(std::string_view body);
// The UploadId of an InitiateMultipartUploadResult.
Result<std::string> ParseUploadId(std::string_view body);
// ISO 8601 ("2026-11-02T10:11:12.000Z") or RFC 1123 ("Mon, 02 Nov 2026 10:11:12 GMT") to Unix
// milliseconds; 0 when unparseable.
int64_t ParseTimeMs(std::string_view text);
// `s` with &, <, >, ", ' escaped for an XML text node.
std::string XmlEscape(std::string_view s);

}  // namespace dbs::s3

// libFuzzer target: the parsers of S3's XML answers (src/objstore/s3_xml.h) on arbitrary bytes
// must return a value or a Status, never crash, leak or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "objstore/s3_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)dbs::s3::ParseError(in);
  (void)dbs::s3::ParseListObjectsV2(in).ok();
  (void)dbs::s3::ParseListMultipartUploads(in).ok();
  (void)dbs::s3::ParseUploadId(in).ok();
  (void)dbs::s3::ParseTimeMs(in.substr(0, 64));
  return 0;
}

#include "objstore/object_store.h"

#include <cstddef>

namespace dbs {
namespace {

constexpr size_t kMaxKeyBytes = 1024;  // S3's limit, applied to both stores
constexpr std::string_view kTempMarker = ".dbs-tmp-";
constexpr size_t kTempHexDigits = 16;

// Length of the UTF-8 sequence starting at s[i], or 0 when it is not valid UTF-8 (overlong
// forms, surrogates and code points past U+10FFFF are invalid).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

Status BadKey(std::string_view key, std::string_view why) {
  return Status::InvalidArgument("invalid object key \"" + std::string(key) +
                                 "\": " + std::string(why));
}

}  // namespace

bool IsTemporaryName(std::string_view name) {
  if (name.size() < 1 + kTempMarker.size() + kTempHexDigits || name[0] != '.') return false;
  const std::string_view tail = name.substr(name.size() - kTempHexDigits);
  for (char c : tail) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return name.substr(name.size() - kTempHexDigits - kTempMarker.size(), kTempMarker.size()) ==
         kTempMarker;
}

Status ValidateKey(std::string_view key) {
  if (key.empty()) return BadKey(key, "a key must not be empty");
  if (key.size() > kMaxKeyBytes) return BadKey(key.substr(0, 64), "longer than 1024 bytes");
  if (key.front() == '/') return BadKey(key, "a key is relative to the root (no leading '/')");
  if (key.back() == '/') return BadKey(key, "a key names an object, not a folder (trailing '/')");
  for (size_t i = 0; i < key.size();) {
    const unsigned char c = static_cast<unsigned char>(key[i]);
    if (c < 0x20 || c == 0x7F) return BadKey(key, "control characters are not allowed");
    const size_t n = Utf8SequenceLength(key, i);
    if (n == 0) return BadKey(key, "not valid UTF-8");
    i += n;
  }
  size_t start = 0;
  std::string_view last;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string_view::npos) end = key.size();
    const std::string_view seg = key.substr(start, end - start);
    if (seg.empty()) return BadKey(key, "empty path segment ('//')");
    if (seg == "." || seg == "..") return BadKey(key, "'.' and '..' segments are not allowed");
    last = seg;
    start = end + 1;
  }
  if (IsTemporaryName(last)) {
    return BadKey(key,
                  "names ending in .dbs-tmp-<16 hex digits> are reserved for writes in "
                  "progress");
  }
  return Status::Ok();
}

Result<std::string> NormalizePrefix(std::string_view prefix) {
  if (prefix.empty()) return std::string();
  std::string_view folder = prefix;
  if (folder.back() == '/') folder.remove_suffix(1);
  Status st = ValidateKey(folder);
  if (!st.ok()) {
    return Status::InvalidArgument("invalid folder \"" + std::string(prefix) +
                                   "\": " + st.message());
  }
  return std::string(folder) + "/";
}

Status ObjectStore::Copy(const std::string& from, const std::string& to) {
  DBS_ASSIGN_OR_RETURN(auto reader, Open(from));
  DBS_ASSIGN_OR_RETURN(auto writer, Create(to));
  std::string chunk;
  while (true) {
    DBS_RETURN_IF_ERROR(reader->Read(&chunk, 8u << 20));
    if (chunk.empty()) break;
    DBS_RETURN_IF_ERROR(writer->Write(chunk));
  }
  return writer->Commit();
}

}  // namespace dbs

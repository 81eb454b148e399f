#include "sources/mysql/charset.h"

#include <iconv.h>

#include <cerrno>
#include <map>
#include <memory>

namespace dbs::mysql {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// MySQL's latin1 (Windows-1252; its five undefined bytes map to the C1 controls).
constexpr uint16_t kLatin1High[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};

// iconv's name for a MySQL character set; empty when there is none.
std::string IconvName(const std::string& cs) {
  static const std::map<std::string, std::string> kNames = {
      {"ascii", "ASCII"},        {"cp1250", "CP1250"},
      {"cp1251", "CP1251"},      {"cp1256", "CP1256"},
      {"cp1257", "CP1257"},      {"latin2", "ISO-8859-2"},
      {"latin5", "ISO-8859-9"},  {"latin7", "ISO-8859-13"},
      {"greek", "ISO-8859-7"},   {"hebrew", "ISO-8859-8"},
      {"koi8r", "KOI8-R"},       {"koi8u", "KOI8-U"},
      {"cp850", "CP850"},        {"cp852", "CP852"},
      {"cp866", "CP866"},        {"gbk", "GBK"},
      {"gb2312", "GB2312"},      {"gb18030", "GB18030"},
      {"big5", "BIG5"},          {"sjis", "SHIFT_JIS"},
      {"cp932", "CP932"},        {"ujis", "EUC-JP"},
      {"eucjpms", "EUC-JP-MS"},  {"euckr", "EUC-KR"},
      {"tis620", "TIS-620"},     {"armscii8", "ARMSCII-8"},
      {"macroman", "MACINTOSH"}, {"macce", "MAC-CENTRALEUROPE"},
      {"ucs2", "UCS-2BE"},       {"utf16", "UTF-16BE"},
      {"utf16le", "UTF-16LE"},   {"utf32", "UTF-32BE"},
  };
  auto it = kNames.find(cs);
  return it == kNames.end() ? std::string() : it->second;
}

struct IconvCloser {
  void operator()(void* cd) const { iconv_close(static_cast<iconv_t>(cd)); }
};

// One converter per character set and thread.
Result<iconv_t> Converter(const std::string& cs) {
  thread_local std::map<std::string, std::unique_ptr<void, IconvCloser>> cache;
  auto it = cache.find(cs);
  if (it != cache.end()) return static_cast<iconv_t>(it->second.get());
  const std::string name = IconvName(cs);
  if (name.empty()) {
    return Status::Unsupported("character set " + cs + " has no converter to UTF-8 here");
  }
  iconv_t cd = iconv_open("UTF-8", name.c_str());
  if (cd == reinterpret_cast<iconv_t>(-1)) {
    return Status::Unsupported("character set " + cs + " (" + name +
                               "): iconv has no converter to UTF-8");
  }
  cache.emplace(cs, std::unique_ptr<void, IconvCloser>(cd));
  return cd;
}

}  // namespace

bool IsUtf8OrBinaryCharset(std::string_view charset) {
  const std::string cs = Lower(charset);
  return cs.empty() || cs == "utf8mb4" || cs == "utf8mb3" || cs == "utf8" || cs == "binary";
}

Result<std::string> CharsetToUtf8(std::string_view charset, std::string_view bytes) {
  const std::string cs = Lower(charset);
  if (IsUtf8OrBinaryCharset(cs)) return std::string(bytes);
  std::string out;
  out.reserve(bytes.size() * 2);
  if (cs == "latin1") {
    for (unsigned char b : bytes) {
      AppendUtf8(b >= 0x80 && b < 0xA0 ? kLatin1High[b - 0x80] : b, &out);
    }
    return out;
  }
  DBS_ASSIGN_OR_RETURN(iconv_t cd, Converter(cs));
  iconv(cd, nullptr, nullptr, nullptr, nullptr);  // initial state
  char* in = const_cast<char*>(bytes.data());
  size_t in_left = bytes.size();
  while (true) {
    const size_t at = out.size();
    out.resize(at + in_left * 4 + 16);
    char* dst = out.data() + at;
    size_t dst_left = out.size() - at;
    const size_t r = iconv(cd, &in, &in_left, &dst, &dst_left);
    out.resize(out.size() - dst_left);
    if (r != static_cast<size_t>(-1)) {
      if (r != 0) {
        // Irreversible conversions (iconv substituted something): not exact.
        return Status::InvalidArgument("a value in character set " + cs +
                                       " has characters without an exact Unicode mapping");
      }
      return out;
    }
    if (errno == E2BIG) continue;
    const size_t offset = bytes.size() - in_left;
    return Status::InvalidArgument("a value in character set " + cs +
                                   " holds bytes with no Unicode mapping at offset " +
                                   std::to_string(offset) + " (the server would read them as '?')");
  }
}

}  // namespace dbs::mysql

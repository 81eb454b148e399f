#include "objstore/s3_xml.h"

#include <expat.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>

namespace dbs::s3 {
namespace {

// A small element tree: enough for S3's flat responses.
struct Node {
  std::string name;
  std::string text;
  std::vector<std::unique_ptr<Node>> children;
  Node* parent = nullptr;

  const Node* Child(std::string_view n) const {
    for (const auto& c : children) {
      if (c->name == n) return c.get();
    }
    return nullptr;
  }
  std::string ChildText(std::string_view n) const {
    const Node* c = Child(n);
    return c ? c->text : std::string();
  }
};

constexpr int kMaxDepth = 32;
constexpr size_t kMaxNodes = 1000000;

struct ParseState {
  Node root;
  Node* current = &root;
  int depth = 0;
  size_t nodes = 0;
  bool too_big = false;
};

std::string_view LocalName(const char* name) {
  std::string_view n(name);
  const size_t colon = n.rfind(':');
  return colon == std::string_view::npos ? n : n.substr(colon + 1);
}

void OnStart(void* data, const char* name, const char** /*attrs*/) {
  auto* st = static_cast<ParseState*>(data);
  if (st->too_big) return;
  if (++st->depth > kMaxDepth || ++st->nodes > kMaxNodes) {
    st->too_big = true;
    return;
  }
  auto node = std::make_unique<Node>();
  node->name = std::string(LocalName(name));
  node->parent = st->current;
  Node* raw = node.get();
  st->current->children.push_back(std::move(node));
  st->current = raw;
}

void OnEnd(void* data, const char* /*name*/) {
  auto* st = static_cast<ParseState*>(data);
  if (st->too_big) return;
  --st->depth;
  if (st->current->parent != nullptr) st->current = st->current->parent;
}

void OnText(void* data, const char* s, int len) {
  auto* st = static_cast<ParseState*>(data);
  if (st->too_big) return;
  st->current->text.append(s, static_cast<size_t>(len));
}

// The document's root element, or Corruption.
Result<std::unique_ptr<ParseState>> Parse(std::string_view body, std::string_view what) {
  auto st = std::make_unique<ParseState>();
  std::unique_ptr<XML_ParserStruct, void (*)(XML_Parser)> p(XML_ParserCreate("UTF-8"),
                                                            &XML_ParserFree);
  if (!p) return Status::ResourceExhausted("XML parser: out of memory");
  XML_SetUserData(p.get(), st.get());
  XML_SetElementHandler(p.get(), &OnStart, &OnEnd);
  XML_SetCharacterDataHandler(p.get(), &OnText);
  if (body.size() > static_cast<size_t>(INT32_MAX)) {
    return Status::Corruption(std::string(what) + ": the response is too large");
  }
  if (XML_Parse(p.get(), body.data(), static_cast<int>(body.size()), 1) != XML_STATUS_OK) {
    return Status::Corruption(std::string(what) + ": the response is not valid XML (" +
                              XML_ErrorString(XML_GetErrorCode(p.get())) + " at line " +
                              std::to_string(XML_GetCurrentLineNumber(p.get())) + ")");
  }
  if (st->too_big) {
    return Status::Corruption(std::string(what) + ": the response nests too deep or is too big");
  }
  if (st->root.children.empty()) {
    return Status::Corruption(std::string(what) + ": the response has no XML element");
  }
  return st;
}

bool ParseU64(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

std::string Unquote(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

}  // namespace

XmlError ParseError(std::string_view body) {
  XmlError e;
  Result<std::unique_ptr<ParseState>> st = Parse(body, "S3 error");
  if (!st.ok()) return e;
  const Node* root = (*st)->root.children.front().get();
  if (root->name != "Error") return e;
  e.code = root->ChildText("Code");
  e.message = root->ChildText("Message");
  return e;
}

Result<ListPage> ParseListObjectsV2(std::string_view body) {
  DBS_ASSIGN_OR_RETURN(std::unique_ptr<ParseState> st, Parse(body, "ListObjectsV2"));
  const Node* root = st->root.children.front().get();
  if (root->name != "ListBucketResult") {
    return Status::Corruption("ListObjectsV2: expected <ListBucketResult>, got <" + root->name +
                              ">");
  }
  ListPage page;
  for (const auto& c : root->children) {
    if (c->name == "Contents") {
      ListPage::Object o;
      o.key = c->ChildText("Key");
      if (!ParseU64(c->ChildText("Size"), &o.size)) {
        return Status::Corruption("ListObjectsV2: bad <Size> for key " + o.key);
      }
      o.modified_ms = ParseTimeMs(c->ChildText("LastModified"));
      o.etag = Unquote(c->ChildText("ETag"));
      page.objects.push_back(std::move(o));
    } else if (c->name == "CommonPrefixes") {
      page.prefixes.push_back(c->ChildText("Prefix"));
    } else if (c->name == "IsTruncated") {
      page.truncated = c->text == "true";
    } else if (c->name == "NextContinuationToken") {
      page.next_token = c->text;
    }
  }
  return page;
}

Result<UploadsPage> ParseListMultipartUploads(std::string_view body) {
  DBS_ASSIGN_OR_RETURN(std::unique_ptr<ParseState> st, Parse(body, "ListMultipartUploads"));
  const Node* root = st->root.children.front().get();
  if (root->name != "ListMultipartUploadsResult") {
    return Status::Corruption("ListMultipartUploads: expected <ListMultipartUploadsResult>, got <" +
                              root->name + ">");
  }
  UploadsPage page;
  for (const auto& c : root->children) {
    if (c->name == "Upload") {
      UploadsPage::Upload u;
      u.key = c->ChildText("Key");
      u.upload_id = c->ChildText("UploadId");
      u.initiated_ms = ParseTimeMs(c->ChildText("Initiated"));
      page.uploads.push_back(std::move(u));
    } else if (c->name == "IsTruncated") {
      page.truncated = c->text == "true";
    } else if (c->name == "NextKeyMarker") {
      page.next_key_marker = c->text;
    } else if (c->name == "NextUploadIdMarker") {
      page.next_upload_id_marker = c->text;
    }
  }
  return page;
}

Result<std::string> ParseUploadId(std::string_view body) {
  DBS_ASSIGN_OR_RETURN(std::unique_ptr<ParseState> st, Parse(body, "CreateMultipartUpload"));
  const Node* root = st->root.children.front().get();
  std::string id = root->ChildText("UploadId");
  if (root->name != "InitiateMultipartUploadResult" || id.empty()) {
    return Status::Corruption("CreateMultipartUpload: the response has no <UploadId>");
  }
  return id;
}

int64_t ParseTimeMs(std::string_view text) {
  const std::string s(text);
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  int ms = 0;
  if (end != nullptr) {
    if (*end == '.') {
      int digits = 0;
      for (++end; *end >= '0' && *end <= '9'; ++end) {
        if (digits < 3) ms = ms * 10 + (*end - '0');
        ++digits;
      }
      for (; digits < 3; ++digits) ms *= 10;
    }
  } else {
    tm = std::tm{};
    end = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S", &tm);
    if (end == nullptr) return 0;
  }
  const time_t t = timegm(&tm);
  if (t == static_cast<time_t>(-1)) return 0;
  return static_cast<int64_t>(t) * 1000 + ms;
}

std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace dbs::s3

#include "federated/s3_urls.h"

#include <fnmatch.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>

#include "sources/files/remote.h"

namespace dbs::federated {

using nlohmann::json;

namespace {

constexpr char kScheme[] = "s3://";

bool IsS3(const std::string& s) { return s.rfind(kScheme, 0) == 0; }

// node[key] when it is a string, else "" (syntax tree fields such as "type" are not always).
std::string Str(const json& node, const char* key) {
  auto it = node.find(key);
  return it != node.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool HasGlob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

std::string Trimmed(std::string p) {
  while (!p.empty() && p.front() == '/') p.erase(p.begin());
  while (!p.empty() && p.back() == '/') p.pop_back();
  return p;
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

// The end (one past the closing quote) of the '...' literal starting at `begin`, and its value.
Result<size_t> LiteralEnd(const std::string& sql, size_t begin, std::string* value) {
  if (begin >= sql.size() || sql[begin] != '\'') {
    return Status::InvalidArgument(
        "sql: write an s3:// URL as a plain string literal ('s3://bucket/key'), as the "
        "argument of read_parquet, read_csv or read_json");
  }
  value->clear();
  for (size_t i = begin + 1; i < sql.size(); ++i) {
    if (sql[i] != '\'') {
      *value += sql[i];
    } else if (i + 1 < sql.size() && sql[i + 1] == '\'') {
      *value += '\'';
      ++i;
    } else {
      return i + 1;
    }
  }
  return Status::InvalidArgument("sql: an s3:// string literal is not closed");
}

// Every s3:// string constant under `node` (a table function's arguments).
void CollectConstants(const json& node, std::vector<const json*>* out) {
  if (node.is_array()) {
    for (const json& x : node) CollectConstants(x, out);
    return;
  }
  if (!node.is_object()) return;
  if (Str(node, "class") == "CONSTANT" && node.contains("value") && node["value"].is_object() &&
      IsS3(Str(node["value"], "value"))) {
    out->push_back(&node);
    return;
  }
  for (const auto& [k, v] : node.items()) CollectConstants(v, out);
}

// The source connection whose bucket is `bucket` and whose prefix holds `key` (the longest such
// prefix), and the key relative to that prefix.
const FederatedSource* SourceFor(const std::vector<FederatedSource>& sources,
                                 const std::string& bucket, const std::string& key,
                                 std::string* relative) {
  const FederatedSource* best = nullptr;
  size_t best_len = 0;
  for (const FederatedSource& s : sources) {
    const ConnectionConfig& c = s.connection;
    if (c.engine != Engine::kFile || !c.s3 || c.host != bucket) continue;
    const std::string prefix = Trimmed(c.database);
    if (!prefix.empty() && key.rfind(prefix + "/", 0) != 0) continue;
    if (best == nullptr || prefix.size() > best_len) {
      best = &s;
      best_len = prefix.size();
      *relative = prefix.empty() ? key : key.substr(prefix.size() + 1);
    }
  }
  return best;
}

// The objects of `store` matching the key pattern `rel`.
Result<std::vector<ObjectInfo>> Matching(ObjectStore* store, const std::string& rel) {
  if (!HasGlob(rel)) {
    DBS_ASSIGN_OR_RETURN(ObjectInfo info, store->Stat(rel));
    if (info.key.empty()) info.key = rel;
    return std::vector<ObjectInfo>{info};
  }
  // The folders before the first glob are listed (recursively), then matched.
  const size_t glob = rel.find_first_of("*?[");
  const size_t slash = rel.rfind('/', glob);
  const std::string folder = slash == std::string::npos ? "" : rel.substr(0, slash + 1);
  DBS_ASSIGN_OR_RETURN(std::vector<ObjectInfo> listed, store->List(folder, /*recursive=*/true));
  std::vector<ObjectInfo> out;
  for (ObjectInfo& o : listed) {
    if (!o.is_prefix && MatchKeyGlob(rel, o.key)) out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

Status ParseS3Url(const std::string& url, std::string* bucket, std::string* key) {
  if (!IsS3(url)) return Status::InvalidArgument(url + " is not an s3:// URL");
  const std::string rest = url.substr(sizeof(kScheme) - 1);
  const size_t slash = rest.find('/');
  *bucket = rest.substr(0, slash);
  *key = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (bucket->empty() || key->empty() || key->back() == '/') {
    return Status::InvalidArgument(url +
                                   ": name objects as s3://bucket/key, a glob allowed in the key "
                                   "(s3://bucket/events/*.parquet)");
  }
  for (const std::string& part : {std::string("/./"), std::string("/../")}) {
    if (("/" + *key + "/").find(part) != std::string::npos) {
      return Status::InvalidArgument(url + ": '.' and '..' are not allowed in the key");
    }
  }
  return Status::Ok();
}

bool MatchKeyGlob(const std::string& pattern, const std::string& key) {
  const size_t dstar = pattern.find("**");
  if (dstar == std::string::npos) return fnmatch(pattern.c_str(), key.c_str(), FNM_PATHNAME) == 0;
  // '**' crosses folders: the pattern's '*'s may then match '/' too.
  std::string p = pattern;
  for (size_t i; (i = p.find("**")) != std::string::npos;) p.erase(i, 1);
  return fnmatch(p.c_str(), key.c_str(), 0) == 0;
}

Result<std::vector<S3UrlLiteral>> FindS3Urls(const json& ast, const std::string& sql) {
  std::vector<S3UrlLiteral> out;
  Status error;
  std::function<void(const json&)> walk = [&](const json& node) {
    if (!error.ok()) return;
    if (node.is_array()) {
      for (const json& x : node) walk(x);
      return;
    }
    if (!node.is_object()) return;
    const std::string type = Str(node, "type");
    if (type == "BASE_TABLE" && IsS3(Str(node, "table_name"))) {
      error = Status::InvalidArgument(
          "sql: read an s3:// object with a file function, e.g. read_parquet('" +
          Str(node, "table_name") + "')");
      return;
    }
    if (type == "TABLE_FUNCTION" && node.contains("function")) {
      std::vector<const json*> constants;
      CollectConstants(node["function"], &constants);
      for (const json* c : constants) {
        S3UrlLiteral lit;
        const json& loc = (*c)["query_location"];
        if (!loc.is_number_unsigned() || loc.get<uint64_t>() >= sql.size()) {
          error = Status::InvalidArgument("sql: cannot locate the s3:// URL " +
                                          (*c)["value"]["value"].get<std::string>());
          return;
        }
        lit.begin = static_cast<size_t>(loc.get<uint64_t>());
        std::string value;
        auto end = LiteralEnd(sql, lit.begin, &value);
        if (!end.ok()) {
          error = end.status();
          return;
        }
        lit.end = *end;
        lit.url = (*c)["value"]["value"].get<std::string>();
        if (value != lit.url) {
          error = Status::InvalidArgument(
              "sql: write an s3:// URL as a plain string literal ('s3://bucket/key')");
          return;
        }
        out.push_back(std::move(lit));
      }
    }
    for (const auto& [k, v] : node.items()) {
      if (type == "TABLE_FUNCTION" && k == "function") continue;
      walk(v);
    }
  };
  walk(ast);
  if (!error.ok()) return error;
  std::sort(out.begin(), out.end(),
            [](const S3UrlLiteral& a, const S3UrlLiteral& b) { return a.begin < b.begin; });
  return out;
}

std::string SpliceLiterals(const std::string& sql, const std::vector<S3UrlLiteral>& literals,
                           const std::vector<std::string>& replacements) {
  std::string out;
  size_t at = 0;
  for (size_t i = 0; i < literals.size(); ++i) {
    out += sql.substr(at, literals[i].begin - at);
    out += Quote(replacements[i]);
    at = literals[i].end;
  }
  return out + sql.substr(at);
}

Result<MirroredS3> MirrorS3Urls(const std::vector<FederatedSource>& sources, const std::string& sql,
                                const std::vector<S3UrlLiteral>& literals, const std::string& dir,
                                uint64_t max_bytes) {
  namespace fs = std::filesystem;
  struct Planned {
    const FederatedSource* source;
    std::string relative;  // the key pattern under the source's prefix
    std::vector<ObjectInfo> objects;
  };
  std::map<const FederatedSource*, std::unique_ptr<ObjectStore>> stores;
  std::vector<Planned> plan;
  uint64_t total = 0;
  for (const S3UrlLiteral& lit : literals) {
    std::string bucket, key;
    DBS_RETURN_IF_ERROR(ParseS3Url(lit.url, &bucket, &key));
    Planned p;
    p.source = SourceFor(sources, bucket, key, &p.relative);
    if (p.source == nullptr) {
      return Status::InvalidArgument(
          "sql: " + lit.url + " is read with the credentials of an s3 connection: add one of " +
          "bucket " + bucket + " whose prefix holds the key to the sources");
    }
    auto& store = stores[p.source];
    if (!store) {
      auto opened = files::OpenS3Of(p.source->connection);
      if (!opened.ok()) return opened.status().WithContext(p.source->alias);
      store = std::move(*opened);
    }
    auto objects = Matching(store.get(), p.relative);
    if (!objects.ok()) return objects.status().WithContext(p.source->alias + ": " + lit.url);
    if (objects->empty()) return Status::NotFound(lit.url + " matches no object");
    for (const ObjectInfo& o : *objects) total += o.size;
    p.objects = std::move(*objects);
    plan.push_back(std::move(p));
  }
  if (total > max_bytes) {
    return Status::InvalidArgument("sql: the s3:// URLs name " + std::to_string(total) +
                                   " bytes of objects, more than the " + std::to_string(max_bytes) +
                                   " a statement may copy; narrow the glob, or load the "
                                   "objects with a stream");
  }
  MirroredS3 out;
  std::vector<std::string> replacements;
  for (const Planned& p : plan) {
    // One mirror folder per source: objects named by two URLs are copied once.
    const std::string root = dir + "/" + p.source->alias;
    ObjectStore* store = stores[p.source].get();
    uint64_t bytes = 0;
    std::string names;
    for (size_t i = 0; i < p.objects.size(); ++i) {
      const ObjectInfo& o = p.objects[i];
      const std::string local = root + "/" + o.key;
      bytes += o.size;
      if (i < 10) names += (i ? ", " : "") + o.key;
      std::error_code ec;
      if (fs::exists(local, ec)) continue;
      fs::create_directories(fs::path(local).parent_path(), ec);
      if (ec) return Status::IoError("cannot make a folder for " + local + ": " + ec.message());
      DBS_RETURN_IF_ERROR(files::CopyObject(store, o.key, local));
    }
    if (p.objects.size() > 10) names += ", ...";
    replacements.push_back(root + "/" + p.relative);
    out.statements.push_back({p.source->alias, "GET " + std::to_string(p.objects.size()) +
                                                   " object(s), " + std::to_string(bytes) +
                                                   " bytes: " + names});
  }
  out.sql = SpliceLiterals(sql, literals, replacements);
  return out;
}

}  // namespace dbs::federated

#include "explorer/files.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "sources/files/remote.h"

namespace dbs::explorer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool Under(const fs::path& p, const fs::path& root) {
  auto r = root.begin(), q = p.begin();
  for (; r != root.end(); ++r, ++q) {
    if (q == p.end() || *q != *r) return false;
  }
  return true;
}

std::string EndsLower(const std::string& s) {
  std::string l = s;
  for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l;
}

bool EndsWith(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

std::string Literal(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::vector<std::string> FileRoots(const std::string& spec) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= spec.size()) {
    size_t e = spec.find(':', b);
    if (e == std::string::npos) e = spec.size();
    const std::string p = spec.substr(b, e - b);
    std::error_code ec;
    if (!p.empty() && p[0] == '/') {
      fs::path c = fs::canonical(p, ec);
      if (!ec && fs::is_directory(c, ec)) out.push_back(c.string());
    }
    b = e + 1;
  }
  return out;
}

Result<std::string> ResolveFile(const std::vector<std::string>& roots, const std::string& root,
                                const std::string& relative) {
  if (std::find(roots.begin(), roots.end(), root) == roots.end()) {
    return Status::InvalidArgument("root '" + root.substr(0, 256) +
                                   "' is not a configured file root (DBS_FILE_ROOTS)");
  }
  if (!relative.empty() && relative[0] == '/') {
    return Status::InvalidArgument("path must be relative to its root");
  }
  fs::path rel(relative);
  for (const auto& part : rel) {
    if (part == "..") return Status::InvalidArgument("path must not contain '..'");
  }
  return (fs::path(root) / rel).lexically_normal().string();
}

Result<json> ListFolder(const std::vector<std::string>& roots, const std::string& root,
                        const std::string& relative, size_t max_entries) {
  DBS_ASSIGN_OR_RETURN(std::string dir, ResolveFile(roots, root, relative));
  std::error_code ec;
  fs::path real = fs::canonical(dir, ec);
  if (ec) return Status::NotFound("no folder " + relative + " under " + root);
  if (!Under(real, fs::path(root))) {
    return Status::InvalidArgument("path " + relative + " leads outside its root");
  }
  if (!fs::is_directory(real, ec)) return Status::InvalidArgument(relative + " is not a folder");
  std::vector<json> entries;
  bool truncated = false;
  for (fs::directory_iterator it(real, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (entries.size() >= max_entries) {
      truncated = true;
      break;
    }
    const fs::path p = it->path();
    std::error_code e2;
    fs::path target = fs::canonical(p, e2);
    if (e2 || !Under(target, fs::path(root))) continue;  // a link leading out: not shown
    const bool folder = fs::is_directory(target, e2);
    json x = {{"name", p.filename().string()},
              {"path", (fs::path(relative) / p.filename()).lexically_normal().string()},
              {"kind", folder ? "folder" : "file"}};
    x["size"] = folder ? json(nullptr) : json(static_cast<int64_t>(fs::file_size(target, e2)));
    auto t = fs::last_write_time(target, e2);
    x["modifiedMs"] = e2 ? json(nullptr)
                         : json(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::file_clock::to_sys(t).time_since_epoch())
                                    .count());
    entries.push_back(std::move(x));
  }
  std::sort(entries.begin(), entries.end(), [](const json& a, const json& b) {
    if (a["kind"] != b["kind"]) return a["kind"] == "folder";
    return a["name"].get<std::string>() < b["name"].get<std::string>();
  });
  return json{{"root", root}, {"path", relative}, {"entries", entries}, {"truncated", truncated}};
}

Result<std::string> FileReader(const std::string& path) {
  std::string l = EndsLower(path);
  if (EndsWith(l, ".gz")) l = l.substr(0, l.size() - 3);
  if (EndsWith(l, ".parquet")) return "read_parquet(" + Literal(path) + ")";
  if (EndsWith(l, ".json") || EndsWith(l, ".jsonl") || EndsWith(l, ".ndjson")) {
    return "read_json(" + Literal(path) + ")";
  }
  if (EndsWith(l, ".csv") || EndsWith(l, ".tsv") || EndsWith(l, ".txt")) {
    return "read_csv(" + Literal(path) + ")";
  }
  return Status::InvalidArgument("cannot tell how to read " + path +
                                 ": name it .csv, .tsv, .json, .jsonl, .ndjson or .parquet");
}

Result<federated::FederatedResult> FileSample(const std::vector<std::string>& roots,
                                              const std::string& path, int64_t rows,
                                              const federated::FederatedOptions& options) {
  DBS_ASSIGN_OR_RETURN(std::string reader, FileReader(path));
  federated::FederatedOptions o = options;
  o.allowed_directories = roots;
  o.max_rows = rows;
  return federated::Run({}, "SELECT * FROM " + reader + " LIMIT " + std::to_string(rows), o);
}

Result<json> ListObjects(ObjectStore* store, const std::string& connection_id,
                         const std::string& relative, size_t max_entries) {
  DBS_ASSIGN_OR_RETURN(std::string prefix, NormalizePrefix(relative));
  DBS_ASSIGN_OR_RETURN(auto objects, store->List(prefix, false));
  std::vector<json> entries;
  bool truncated = false;
  for (const ObjectInfo& o : objects) {
    if (entries.size() >= max_entries) {
      truncated = true;
      break;
    }
    std::string key = o.key;
    if (o.is_prefix) key.pop_back();
    const std::string name = key.substr(key.rfind('/') + 1);
    if (name.empty() || name[0] == '.') continue;  // bookkeeping (.dbs/)
    json x = {{"name", name}, {"path", key}, {"kind", o.is_prefix ? "folder" : "file"}};
    x["size"] = o.is_prefix ? json(nullptr) : json(static_cast<int64_t>(o.size));
    x["modifiedMs"] = o.modified_ms == 0 ? json(nullptr) : json(o.modified_ms);
    entries.push_back(std::move(x));
  }
  std::stable_sort(entries.begin(), entries.end(), [](const json& a, const json& b) {
    return a["kind"] != b["kind"] && a["kind"] == "folder";
  });
  return json{{"connectionId", connection_id},
              {"path", relative},
              {"entries", entries},
              {"truncated", truncated}};
}

Result<federated::FederatedResult> ObjectSample(ObjectStore* store, const std::string& key,
                                                int64_t rows,
                                                const federated::FederatedOptions& options) {
  DBS_RETURN_IF_ERROR(ValidateKey(key));
  DBS_RETURN_IF_ERROR(FileReader(key).status());  // a readable kind, before any download
  if (options.temp_dir.empty()) return Status::Internal("no scratch folder for the copy");
  std::error_code ec;
  fs::create_directories(options.temp_dir, ec);
  if (ec) return Status::IoError("cannot make " + options.temp_dir + ": " + ec.message());
  DBS_ASSIGN_OR_RETURN(auto copy, files::LocalCopy::Fetch(store, key, options.temp_dir));
  return FileSample({options.temp_dir}, copy->path(), rows, options);
}

}  // namespace dbs::explorer

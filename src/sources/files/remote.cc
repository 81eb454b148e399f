#include "sources/files/remote.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace dbs::files {

namespace {

// Keeps the private files of inline PEM values as long as the store that reads them.
class OwningStore : public ObjectStore {
 public:
  OwningStore(std::unique_ptr<ObjectStore> inner, PemFiles pem)
      : inner_(std::move(inner)), pem_(std::move(pem)) {}
  Result<std::vector<ObjectInfo>> List(const std::string& prefix, bool recursive) override {
    return inner_->List(prefix, recursive);
  }
  Result<ObjectInfo> Stat(const std::string& key) override { return inner_->Stat(key); }
  Status ReadRange(const std::string& key, uint64_t offset, uint64_t length,
                   std::string* out) override {
    return inner_->ReadRange(key, offset, length, out);
  }
  Result<std::unique_ptr<ObjectReader>> Open(const std::string& key) override {
    return inner_->Open(key);
  }
  Result<std::unique_ptr<ObjectWriter>> Create(const std::string& key) override {
    return inner_->Create(key);
  }
  Status Delete(const std::string& key) override { return inner_->Delete(key); }
  Result<std::vector<ObjectInfo>> ListIncomplete(const std::string& prefix) override {
    return inner_->ListIncomplete(prefix);
  }
  Result<size_t> RemoveIncomplete(const std::string& prefix,
                                  std::chrono::milliseconds min_age) override {
    return inner_->RemoveIncomplete(prefix, min_age);
  }
  std::string Describe() const override { return inner_->Describe(); }

 private:
  std::unique_ptr<ObjectStore> inner_;
  PemFiles pem_;
};

std::string Param(const ConnectionConfig& c, const std::string& k, const std::string& dflt) {
  auto it = c.params.find(k);
  return it == c.params.end() || it->second.empty() ? dflt : it->second;
}

}  // namespace

std::string DefaultS3Endpoint(const std::string& region) {
  return "https://s3." + region + ".amazonaws.com";
}

Result<std::unique_ptr<ObjectStore>> OpenS3Of(const ConnectionConfig& c) {
  if (c.engine != Engine::kFile || !c.s3) return Status::InvalidArgument("not an s3:// connection");
  S3Settings s;
  s.region = Param(c, "region", kDefaultS3Region);
  s.endpoint = Param(c, "endpoint", DefaultS3Endpoint(s.region));
  s.bucket = c.host;
  s.prefix = c.database;
  s.path_style = Param(c, "addressing", "path") == "path";
  s.access_key = c.user;
  s.secret_key = c.password;
  s.session_token = c.session_token;
  if (c.ssl.mode == "require") s.verify_tls = false;
  if (!c.ssl.cert.empty() || !c.ssl.key.empty()) {
    return Status::InvalidArgument("s3:// connections take a CA (ssl.ca), not client certificates");
  }
  DBS_ASSIGN_OR_RETURN(PemFiles pem, PemFiles::Write(c.ssl));
  s.ca_file = pem.settings().ca;
  DBS_ASSIGN_OR_RETURN(auto store, OpenS3Store(s));
  return std::unique_ptr<ObjectStore>(new OwningStore(std::move(store), std::move(pem)));
}

Result<std::unique_ptr<SpillDir>> SpillDir::Create(const std::string& purpose) {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/dbstreams-" +
                     purpose + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return Status::IoError("cannot make a spill folder " + tmpl + ": " + std::strerror(errno));
  }
  return std::unique_ptr<SpillDir>(new SpillDir(tmpl));
}

SpillDir::~SpillDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Status CopyObject(ObjectStore* store, const std::string& key, const std::string& path) {
  DBS_ASSIGN_OR_RETURN(auto reader, store->Open(key));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError("cannot write " + path + ": " + std::strerror(errno));
  std::string buf;
  Status s;
  while (s.ok()) {
    s = reader->Read(&buf, 4u << 20);
    if (!s.ok() || buf.empty()) break;
    size_t off = 0;
    while (off < buf.size()) {
      const ssize_t n = ::write(fd, buf.data() + off, buf.size() - off);
      if (n < 0) {
        if (errno == EINTR) continue;
        s = Status::IoError("writing " + path + ": " + std::strerror(errno));
        break;
      }
      off += static_cast<size_t>(n);
    }
  }
  ::close(fd);
  if (!s.ok()) return s.WithContext("copying " + key + " of " + store->Describe());
  return Status::Ok();
}

Result<std::unique_ptr<LocalCopy>> LocalCopy::Fetch(ObjectStore* store, const std::string& key,
                                                    const std::string& dir) {
  static std::atomic<uint64_t> counter{0};
  const size_t slash = key.rfind('/');
  const std::string base = slash == std::string::npos ? key : key.substr(slash + 1);
  const std::string sub = dir + "/" + std::to_string(counter.fetch_add(1));
  if (::mkdir(sub.c_str(), 0700) != 0) {
    return Status::IoError("cannot make " + sub + ": " + std::strerror(errno));
  }
  std::unique_ptr<LocalCopy> copy(new LocalCopy(sub + "/" + base));
  DBS_RETURN_IF_ERROR(CopyObject(store, key, copy->path_));
  return copy;
}

LocalCopy::~LocalCopy() {
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(path_).parent_path(), ec);
}

Result<Manifest> ReadManifestFrom(ObjectStore* store, const std::string& dir) {
  std::string text;
  const std::string key = dir + "/" + kManifestName;
  DBS_RETURN_IF_ERROR(store->ReadRange(key, 0, 64ull << 20, &text));
  const std::string where = store->Describe() + " " + key;
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Corruption(where + " is not valid JSON");
  auto m = ManifestFromJson(j);
  if (!m.ok()) return m.status().WithContext(where);
  return m;
}

Status Upload(ObjectStore* store, const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("cannot read " + path + ": " + std::strerror(errno));
  DBS_ASSIGN_OR_RETURN(auto w, store->Create(key));
  std::string buf(4u << 20, '\0');
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const std::streamsize n = in.gcount();
    if (n <= 0) break;
    Status s = w->Write(std::string_view(buf.data(), static_cast<size_t>(n)));
    if (!s.ok()) return s.WithContext("uploading " + key + " to " + store->Describe());
  }
  if (in.bad()) {
    (void)w->Abort();
    return Status::IoError("reading " + path + ": " + std::strerror(errno));
  }
  Status s = w->Commit();
  if (!s.ok()) return s.WithContext("uploading " + key + " to " + store->Describe());
  return Status::Ok();
}

}  // namespace dbs::files

// The local-folder ObjectStore (object_store.h).
//
// Paths: a key is joined to the canonical root and the result resolved with realpath(3); it
// must stay inside the root, so a symbolic link may point elsewhere in the root but never out
// of it. Writes go to "." + name + ".dbs-tmp-" + 16 random hex digits in the object's folder
// (the same file system, so rename(2) is atomic), are fsynced, and renamed over the key at
// Commit; the folder is fsynced after the rename and after creating sub-folders.
#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

#include "objstore/object_store.h"

namespace dbs {
namespace {

constexpr size_t kWriteBuffer = 1 << 20;
constexpr size_t kTempBaseMax = 200;  // keeps temporary names under NAME_MAX (255)

int64_t MtimeMs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // close(2) and its result (errors of delayed writes show up here).
  int Close() { return fd_ < 0 ? 0 : ::close(std::exchange(fd_, -1)); }
  void Reset() {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }

 private:
  int fd_ = -1;
};

std::string RandomHex16() {
  unsigned char b[8];
  size_t got = 0;
  while (got < sizeof(b)) {
    ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

Status FsyncDir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || ::fsync(fd.get()) != 0) {
    return Status::IoError("fsync of folder " + dir + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

class LocalStore final : public ObjectStore {
 public:
  explicit LocalStore(std::string root) : root_(std::move(root)) {}

  Result<std::vector<ObjectInfo>> List(const std::string& prefix, bool recursive) override;
  Result<ObjectInfo> Stat(const std::string& key) override;
  Status ReadRange(const std::string& key, uint64_t offset, uint64_t length,
                   std::string* out) override;
  Result<std::unique_ptr<ObjectReader>> Open(const std::string& key) override;
  Result<std::unique_ptr<ObjectWriter>> Create(const std::string& key) override;
  Status Delete(const std::string& key) override;
  Result<std::vector<ObjectInfo>> ListIncomplete(const std::string& prefix) override;
  Result<size_t> RemoveIncomplete(const std::string& prefix,
                                  std::chrono::milliseconds min_age) override;
  std::string Describe() const override { return "file://" + root_; }

  // An errno of an operation on `key` as a Status.
  Status Errno(int err, std::string_view what, const std::string& key) const {
    std::string msg = Describe() + ": " + std::string(what) + " " + key + ": " + std::strerror(err);
    if (err == ENOENT || err == ENOTDIR) {
      return Status::NotFound(Describe() + ": no object " + key);
    }
    if (err == EACCES || err == EPERM) return Status::PermissionDenied(std::move(msg));
    if (err == ENOSPC || err == EDQUOT) return Status::ResourceExhausted(std::move(msg));
    return Status::IoError(std::move(msg));
  }

 private:
  friend class LocalWriter;

  // The resolved path of an existing `rel` ("" = root) after checking it is inside the root.
  Result<std::string> Resolve(const std::string& rel) const;
  bool Inside(const std::string& real) const {
    return real == root_ ||
           (real.size() > root_.size() && real.compare(0, root_.size(), root_) == 0 &&
            (root_ == "/" || real[root_.size()] == '/'));
  }
  // Creates the folders of `rel_dir` ("a/b") below the root as needed; returns its real path.
  Result<std::string> MakeDirs(const std::string& rel_dir) const;
  // Walks `rel_dir` (real path `dir`), adding objects (and folders when !recursive) to *out; with
  // `temps`, adds temporary files instead (key = the object they were for).
  Status Walk(const std::string& rel_dir, const std::string& dir, bool recursive, bool temps,
              std::set<std::string>* visited, std::vector<ObjectInfo>* out) const;
  // Walk from the folder `prefix`, sorted; a missing folder is empty.
  Result<std::vector<ObjectInfo>> WalkFolder(const std::string& prefix, bool recursive,
                                             bool temps) const;

  const std::string root_;  // canonical, no trailing '/' (unless "/")
};

Result<std::string> LocalStore::Resolve(const std::string& rel) const {
  const std::string path = rel.empty() ? root_ : (root_ == "/" ? "/" : root_ + "/") + rel;
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return Errno(errno, "resolving", rel);
  std::string real(buf);
  if (!Inside(real)) {
    return Status::PermissionDenied(Describe() + ": " + rel +
                                    " is a symbolic link to a place outside the store's root");
  }
  return real;
}

Result<std::string> LocalStore::MakeDirs(const std::string& rel_dir) const {
  std::string done;  // relative folder made so far
  std::string real = root_;
  size_t start = 0;
  while (start < rel_dir.size()) {
    size_t end = rel_dir.find('/', start);
    if (end == std::string::npos) end = rel_dir.size();
    const std::string seg = rel_dir.substr(start, end - start);
    done = done.empty() ? seg : done + "/" + seg;
    const std::string next = real + "/" + seg;
    if (::mkdir(next.c_str(), 0777) == 0) {
      DBS_RETURN_IF_ERROR(FsyncDir(real));
    } else if (errno != EEXIST) {
      return Errno(errno, "creating folder", done);
    }
    DBS_ASSIGN_OR_RETURN(real, Resolve(done));
    struct stat st;
    if (::stat(real.c_str(), &st) != 0) return Errno(errno, "checking folder", done);
    if (!S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument(Describe() + ": " + done +
                                     " is a file, so it cannot be a folder of other objects");
    }
    start = end + 1;
  }
  return real;
}

Status LocalStore::Walk(const std::string& rel_dir, const std::string& dir, bool recursive,
                        bool temps, std::set<std::string>* visited,
                        std::vector<ObjectInfo>* out) const {
  // `visited` holds the folders being walked above this one: a link back to one is a cycle.
  if (!visited->insert(dir).second) return Status::Ok();
  struct Leave {
    std::set<std::string>* s;
    const std::string& d;
    ~Leave() { s->erase(d); }
  } leave{visited, dir};
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT || errno == ENOTDIR) return Status::Ok();  // no such folder: empty
    return Errno(errno, "listing folder", rel_dir.empty() ? "(root)" : rel_dir);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> closer(d, &::closedir);
  std::vector<std::pair<std::string, std::string>> subdirs;  // rel key, real path
  for (errno = 0; struct dirent* e = ::readdir(d); errno = 0) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string rel = rel_dir + name;
    std::string path = dir + "/" + name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) continue;  // vanished meanwhile
    if (S_ISLNK(st.st_mode)) {
      Result<std::string> real = Resolve(rel);
      if (!real.ok()) continue;  // dangling, or pointing out of the root: not an object here
      path = *real;
      if (::stat(path.c_str(), &st) != 0) continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (!ValidateKey(rel).ok()) continue;
      if (recursive || temps) {
        subdirs.emplace_back(rel + "/", path);
      } else {
        ObjectInfo info;
        info.key = rel + "/";
        info.is_prefix = true;
        out->push_back(std::move(info));
      }
      continue;
    }
    if (!S_ISREG(st.st_mode)) continue;  // sockets, fifos, devices
    const bool temp = IsTemporaryName(name);
    if (temp != temps) continue;
    ObjectInfo info;
    info.size = static_cast<uint64_t>(st.st_size);
    info.modified_ms = MtimeMs(st);
    if (temp) {
      // "." + name + ".dbs-tmp-" + 16 hex digits
      info.key = rel_dir + name.substr(1, name.size() - 1 - 9 - 16);
    } else {
      if (!ValidateKey(rel).ok()) continue;  // a name no key can reach (control characters)
      info.key = rel;
    }
    out->push_back(std::move(info));
  }
  if (errno != 0) return Errno(errno, "listing folder", rel_dir.empty() ? "(root)" : rel_dir);
  closer.reset();
  for (const auto& [rel, path] : subdirs) {
    DBS_RETURN_IF_ERROR(Walk(rel, path, recursive, temps, visited, out));
  }
  return Status::Ok();
}

Result<std::vector<ObjectInfo>> LocalStore::WalkFolder(const std::string& prefix, bool recursive,
                                                       bool temps) const {
  DBS_ASSIGN_OR_RETURN(std::string folder, NormalizePrefix(prefix));
  std::vector<ObjectInfo> out;
  Result<std::string> dir = Resolve(folder.empty() ? "" : folder.substr(0, folder.size() - 1));
  if (!dir.ok()) {
    if (dir.status().code() == StatusCode::kNotFound) return out;
    return dir.status();
  }
  std::set<std::string> visited;
  DBS_RETURN_IF_ERROR(Walk(folder, *dir, recursive, temps, &visited, &out));
  std::sort(out.begin(), out.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return out;
}

Result<std::vector<ObjectInfo>> LocalStore::List(const std::string& prefix, bool recursive) {
  return WalkFolder(prefix, recursive, false);
}

Result<ObjectInfo> LocalStore::Stat(const std::string& key) {
  DBS_RETURN_IF_ERROR(ValidateKey(key));
  DBS_ASSIGN_OR_RETURN(std::string path, Resolve(key));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Errno(errno, "reading", key);
  if (!S_ISREG(st.st_mode)) {
    return Status::NotFound(Describe() + ": " + key +
                            " is a folder or a special file, not an "
                            "object");
  }
  ObjectInfo info;
  info.key = key;
  info.size = static_cast<uint64_t>(st.st_size);
  info.modified_ms = MtimeMs(st);
  return info;
}

// --- reading -------------------------------------------------------------------------------------

class LocalReader final : public ObjectReader {
 public:
  LocalReader(const LocalStore* store, std::string key, Fd fd, uint64_t size)
      : store_(store), key_(std::move(key)), fd_(std::move(fd)), size_(size) {}

  Status Read(std::string* out, size_t max) override {
    out->resize(max);
    size_t got = 0;
    while (got < max) {
      ssize_t n = ::read(fd_.get(), out->data() + got, max - got);
      if (n < 0) {
        if (errno == EINTR) continue;
        out->clear();
        return store_->Errno(errno, "reading", key_);
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    out->resize(got);
    return Status::Ok();
  }
  uint64_t size() const override { return size_; }

 private:
  const LocalStore* store_;
  std::string key_;
  Fd fd_;
  uint64_t size_;
};

Result<std::unique_ptr<ObjectReader>> LocalStore::Open(const std::string& key) {
  DBS_RETURN_IF_ERROR(ValidateKey(key));
  DBS_ASSIGN_OR_RETURN(std::string path, Resolve(key));
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Errno(errno, "opening", key);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Errno(errno, "reading", key);
  if (!S_ISREG(st.st_mode)) return Status::NotFound(Describe() + ": " + key + " is not a file");
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<ObjectReader>(
      new LocalReader(this, key, std::move(fd), static_cast<uint64_t>(st.st_size)));
}

Status LocalStore::ReadRange(const std::string& key, uint64_t offset, uint64_t length,
                             std::string* out) {
  out->clear();
  DBS_RETURN_IF_ERROR(ValidateKey(key));
  DBS_ASSIGN_OR_RETURN(std::string path, Resolve(key));
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Errno(errno, "opening", key);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Errno(errno, "reading", key);
  if (!S_ISREG(st.st_mode)) return Status::NotFound(Describe() + ": " + key + " is not a file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (offset >= size) return Status::Ok();
  const size_t want = static_cast<size_t>(std::min(length, size - offset));
  out->resize(want);
  size_t got = 0;
  while (got < want) {
    ssize_t n = ::pread(fd.get(), out->data() + got, want - got, static_cast<off_t>(offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      out->clear();
      return Errno(errno, "reading", key);
    }
    if (n == 0) break;  // the file shrank meanwhile
    got += static_cast<size_t>(n);
  }
  out->resize(got);
  return Status::Ok();
}

// --- writing -------------------------------------------------------------------------------------

class LocalWriter final : public ObjectWriter {
 public:
  LocalWriter(const LocalStore* store, std::string key, std::string dir, std::string final_path,
              std::string temp_path, Fd fd)
      : store_(store),
        key_(std::move(key)),
        dir_(std::move(dir)),
        final_path_(std::move(final_path)),
        temp_path_(std::move(temp_path)),
        fd_(std::move(fd)) {
    buffer_.reserve(kWriteBuffer);
  }
  ~LocalWriter() override { Abort().ok(); }

  Status Write(std::string_view bytes) override {
    if (done_) return Closed();
    if (buffer_.size() + bytes.size() > kWriteBuffer) {
      Status st = Flush();
      if (!st.ok()) return Fail(st);
    }
    if (bytes.size() >= kWriteBuffer) {
      Status st = WriteAll(bytes);
      if (!st.ok()) return Fail(st);
    } else {
      buffer_.append(bytes);
    }
    written_ += bytes.size();
    return Status::Ok();
  }

  Status Commit() override {
    if (done_) return Closed();
    Status st = Flush();
    if (st.ok() && ::fsync(fd_.get()) != 0) st = store_->Errno(errno, "syncing", key_);
    if (st.ok() && fd_.Close() != 0) st = store_->Errno(errno, "closing", key_);
    if (st.ok() && ::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
      st = errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST
               ? Status::InvalidArgument(store_->Describe() + ": " + key_ +
                                         " is a folder; an object cannot replace it")
               : store_->Errno(errno, "renaming the temporary file to", key_);
    }
    if (!st.ok()) return Fail(st);
    done_ = true;
    return FsyncDir(dir_);  // the rename is done: a failure here leaves the object complete
  }

  Status Abort() override {
    if (done_) return Status::Ok();
    done_ = true;
    fd_.Reset();
    if (::unlink(temp_path_.c_str()) != 0 && errno != ENOENT) {
      return store_->Errno(errno, "removing the temporary file of", key_);
    }
    return Status::Ok();
  }

  uint64_t bytes_written() const override { return written_; }

 private:
  Status Closed() const {
    return Status::FailedPrecondition("writing " + key_ + " to " + store_->Describe() +
                                      ": the writer was already committed, aborted or failed");
  }
  Status Fail(const Status& st) {
    Abort().ok();
    return st;
  }
  Status Flush() {
    Status st = WriteAll(buffer_);
    buffer_.clear();
    return st;
  }
  Status WriteAll(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::write(fd_.get(), bytes.data(), bytes.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return store_->Errno(errno, "writing", key_);
      }
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  }

  const LocalStore* store_;
  std::string key_;
  std::string dir_;
  std::string final_path_;
  std::string temp_path_;
  Fd fd_;
  std::string buffer_;
  uint64_t written_ = 0;
  bool done_ = false;
};

Result<std::unique_ptr<ObjectWriter>> LocalStore::Create(const std::string& key) {
  DBS_RETURN_IF_ERROR(ValidateKey(key));
  const size_t slash = key.rfind('/');
  const std::string rel_dir = slash == std::string::npos ? "" : key.substr(0, slash);
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  DBS_ASSIGN_OR_RETURN(std::string dir, MakeDirs(rel_dir));
  const std::string final_path = dir + "/" + name;
  struct stat st;
  if (::lstat(final_path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument(Describe() + ": " + key +
                                     " is a folder; an object cannot replace it");
    }
    if (S_ISLNK(st.st_mode)) {
      return Status::InvalidArgument(Describe() + ": " + key +
                                     " is a symbolic link; writing would replace the link");
    }
  }
  for (int attempt = 0;; ++attempt) {
    const std::string temp_path =
        dir + "/." + name.substr(0, kTempBaseMax) + ".dbs-tmp-" + RandomHex16();
    Fd fd(::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (fd.valid()) {
      return std::unique_ptr<ObjectWriter>(
          new LocalWriter(this, key, dir, final_path, temp_path, std::move(fd)));
    }
    if (errno != EEXIST || attempt >= 3) return Errno(errno, "creating a temporary file for", key);
  }
}

Status LocalStore::Delete(const std::string& key) {
  DBS_RETURN_IF_ERROR(ValidateKey(key));
  const size_t slash = key.rfind('/');
  std::string dir = root_;
  if (slash != std::string::npos) {
    Result<std::string> d = Resolve(key.substr(0, slash));
    if (!d.ok()) return d.status().code() == StatusCode::kNotFound ? Status::Ok() : d.status();
    dir = *d;
  }
  const std::string path = dir + "/" + key.substr(slash == std::string::npos ? 0 : slash + 1);
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? Status::Ok() : Errno(errno, "deleting", key);
  }
  if (S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(Describe() + ": " + key + " is a folder, not an object");
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Errno(errno, "deleting", key);
  return Status::Ok();
}

Result<std::vector<ObjectInfo>> LocalStore::ListIncomplete(const std::string& prefix) {
  return WalkFolder(prefix, true, true);
}

Result<size_t> LocalStore::RemoveIncomplete(const std::string& prefix,
                                            std::chrono::milliseconds min_age) {
  DBS_ASSIGN_OR_RETURN(std::string folder, NormalizePrefix(prefix));
  Result<std::string> dir = Resolve(folder.empty() ? "" : folder.substr(0, folder.size() - 1));
  if (!dir.ok()) {
    if (dir.status().code() == StatusCode::kNotFound) return size_t{0};
    return dir.status();
  }
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  // Walk again by hand: ListIncomplete reports the object keys, here the files themselves go.
  size_t removed = 0;
  std::vector<std::string> dirs = {*dir};
  std::set<std::string> visited;
  while (!dirs.empty()) {
    const std::string d = dirs.back();
    dirs.pop_back();
    if (!visited.insert(d).second) continue;
    DIR* h = ::opendir(d.c_str());
    if (h == nullptr) continue;
    std::unique_ptr<DIR, int (*)(DIR*)> closer(h, &::closedir);
    while (struct dirent* e = ::readdir(h)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const std::string path = d + "/" + name;
      struct stat st;
      if (::lstat(path.c_str(), &st) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        dirs.push_back(path);  // real folders only: links are not followed for deletion
      } else if (S_ISREG(st.st_mode) && IsTemporaryName(name) &&
                 now_ms - MtimeMs(st) >= min_age.count()) {
        if (::unlink(path.c_str()) == 0) ++removed;
      }
    }
  }
  return removed;
}

}  // namespace

Result<std::unique_ptr<ObjectStore>> OpenLocalStore(const std::string& root) {
  if (root.empty()) return Status::InvalidArgument("local store: the root folder is empty");
  char buf[PATH_MAX];
  if (::realpath(root.c_str(), buf) == nullptr) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return Status::NotFound("local store: the folder " + root + " does not exist");
    }
    return Status::IoError("local store: opening the folder " + root + ": " + std::strerror(err));
  }
  struct stat st;
  if (::stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("local store: " + root + " is not a folder");
  }
  return std::unique_ptr<ObjectStore>(new LocalStore(buf));
}

}  // namespace dbs

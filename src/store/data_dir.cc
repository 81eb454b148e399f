#include "store/data_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace dbs::store {

namespace fs = std::filesystem;

Status PrepareDataDir(const std::string& dir) {
  ::umask(077);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create the data folder " + dir + ": " + ec.message());
  if (::chmod(dir.c_str(), 0700) != 0) {
    return Status::IoError("cannot make the data folder " + dir + " private (chmod 700)");
  }
  const uid_t me = ::getuid();
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    const std::string p = it->path().string();
    if (::lstat(p.c_str(), &st) != 0 || st.st_uid != me) continue;
    if (S_ISDIR(st.st_mode) && (st.st_mode & 077) != 0) {
      ::chmod(p.c_str(), 0700);
    } else if (S_ISREG(st.st_mode) && (st.st_mode & 077) != 0) {
      ::chmod(p.c_str(), st.st_mode & 0700);
    }
  }
  return Status::Ok();
}

}  // namespace dbs::store

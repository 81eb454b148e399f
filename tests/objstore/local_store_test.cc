// The local-folder store: the shared contract (contract.cc) in a temporary folder, plus what only
// a local folder has (symbolic links, temporary files of writers that died).
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "objstore/contract.h"

namespace dbs::testing {
namespace {

namespace fs = std::filesystem;

std::atomic<int> g_counter{0};

std::vector<fs::path>* g_dirs = nullptr;

// A fresh folder under the temporary folder, removed at exit of the process.
std::string MakeTempDir() {
  const fs::path dir = fs::temp_directory_path() / ("dbs-objstore-" + std::to_string(getpid()) +
                                                    "-" + std::to_string(g_counter++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (g_dirs == nullptr) {
    g_dirs = new std::vector<fs::path>();
    std::atexit([] {
      if (g_dirs == nullptr) return;
      for (const fs::path& p : *g_dirs) {
        std::error_code ec;
        fs::remove_all(p, ec);
      }
    });
  }
  g_dirs->push_back(dir);
  return dir.string();
}

INSTANTIATE_TEST_SUITE_P(Local, ObjectStoreContract,
                         ::testing::Values(StoreUnderTest{
                             "Local", [] { return OpenLocalStore(MakeTempDir()); }}),
                         ContractTestName);

class LocalStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    root_ = dir_ + "/root";
    fs::create_directories(root_);
    Result<std::unique_ptr<ObjectStore>> s = OpenLocalStore(root_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  static void WriteFile(const std::string& path, const std::string& bytes) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
  }

  std::string dir_;   // holds the root and things outside it
  std::string root_;  // the store's root
  std::unique_ptr<ObjectStore> store_;
};

TEST_F(LocalStoreTest, MissingRootIsNotFound) {
  Result<std::unique_ptr<ObjectStore>> s = OpenLocalStore(dir_ + "/nope");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find(dir_ + "/nope"), std::string::npos);
  WriteFile(dir_ + "/file", "x");
  EXPECT_EQ(OpenLocalStore(dir_ + "/file").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Describe(), "file://" + fs::canonical(root_).string());
}

TEST_F(LocalStoreTest, SymlinksOutOfTheRootAreRefused) {
  WriteFile(dir_ + "/outside/secret.txt", "secret");
  WriteFile(root_ + "/inside/real.txt", "real");
  fs::create_symlink(dir_ + "/outside/secret.txt", root_ + "/leak.txt");
  fs::create_directory_symlink(dir_ + "/outside", root_ + "/leakdir");
  fs::create_symlink(root_ + "/inside/real.txt", root_ + "/alias.txt");
  fs::create_directory_symlink("inside", root_ + "/aliasdir");
  fs::create_directory_symlink("..", root_ + "/inside/loop");  // a cycle inside the root

  for (const char* key : {"leak.txt", "leakdir/secret.txt"}) {
    Result<ObjectInfo> st = store_->Stat(key);
    EXPECT_EQ(st.status().code(), StatusCode::kPermissionDenied) << key;
    EXPECT_EQ(store_->Open(key).status().code(), StatusCode::kPermissionDenied) << key;
    std::string out;
    EXPECT_EQ(store_->ReadRange(key, 0, 10, &out).code(), StatusCode::kPermissionDenied) << key;
    EXPECT_TRUE(out.empty());
  }
  // Writing through a folder link that leaves the root is refused too, and nothing lands there.
  EXPECT_EQ(store_->Create("leakdir/new.txt").status().code(), StatusCode::kPermissionDenied);
  EXPECT_FALSE(fs::exists(dir_ + "/outside/new.txt"));
  EXPECT_EQ(store_->List("leakdir", true).status().code(), StatusCode::kPermissionDenied);

  // Links that stay inside are objects and folders like others; the escaping ones are skipped.
  std::string out;
  ASSERT_TRUE(store_->ReadRange("alias.txt", 0, 100, &out).ok());
  EXPECT_EQ(out, "real");
  Result<std::vector<ObjectInfo>> all = store_->List("", true);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::vector<std::string> keys;
  for (const ObjectInfo& o : *all) keys.push_back(o.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"alias.txt", "aliasdir/real.txt", "inside/real.txt"}));
  Result<std::vector<ObjectInfo>> top = store_->List("", false);
  ASSERT_TRUE(top.ok());
  keys.clear();
  for (const ObjectInfo& o : *top) keys.push_back(o.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"alias.txt", "aliasdir/", "inside/"}));
}

TEST_F(LocalStoreTest, TemporaryFilesAreHiddenAndLeaveNoTrace) {
  Result<std::unique_ptr<ObjectWriter>> w = store_->Create("t/part-0001.parquet");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->Write("data").ok());
  // On disk: one file in t/, a dot name with the marker; List does not show it.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(root_ + "/t")) {
    names.push_back(e.path().filename().string());
  }
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].rfind(".part-0001.parquet.dbs-tmp-", 0), 0u) << names[0];
  EXPECT_TRUE(IsTemporaryName(names[0]));
  Result<std::vector<ObjectInfo>> listed = store_->List("t", false);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
  Result<std::vector<ObjectInfo>> inc = store_->ListIncomplete("");
  ASSERT_TRUE(inc.ok()) << inc.status().ToString();
  ASSERT_EQ(inc->size(), 1u);
  EXPECT_EQ((*inc)[0].key, "t/part-0001.parquet");
  ASSERT_TRUE((*w)->Commit().ok());
  names.clear();
  for (const auto& e : fs::directory_iterator(root_ + "/t")) {
    names.push_back(e.path().filename().string());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"part-0001.parquet"}));
  EXPECT_EQ(fs::status(root_ + "/t/part-0001.parquet").permissions() & fs::perms::owner_read,
            fs::perms::owner_read);
}

TEST_F(LocalStoreTest, KilledWriterLeavesOnlyATemporaryFileThatIsSwept) {
  // A child writes half an object and dies without Abort (as with SIGKILL: no destructor).
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Result<std::unique_ptr<ObjectWriter>> w = store_->Create("out/file.csv");
    if (!w.ok()) _exit(2);
    if (!(*w)->Write(std::string(3 << 20, 'x')).ok()) _exit(3);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  EXPECT_EQ(store_->Stat("out/file.csv").status().code(), StatusCode::kNotFound);
  Result<std::vector<ObjectInfo>> listed = store_->List("", true);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
  Result<std::vector<ObjectInfo>> inc = store_->ListIncomplete("out");
  ASSERT_TRUE(inc.ok());
  ASSERT_EQ(inc->size(), 1u);
  EXPECT_EQ((*inc)[0].key, "out/file.csv");
  EXPECT_GE((*inc)[0].size, 2u << 20);  // the flushed part of what it wrote

  // Too young for a one-hour minimum age; gone with zero.
  Result<size_t> kept = store_->RemoveIncomplete("", std::chrono::hours(1));
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, 0u);
  Result<size_t> removed = store_->RemoveIncomplete("", std::chrono::milliseconds(0));
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, 1u);
  EXPECT_TRUE(fs::is_empty(root_ + "/out"));
  Result<std::vector<ObjectInfo>> after = store_->ListIncomplete("");
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->empty());
}

TEST_F(LocalStoreTest, FilesAndFoldersDoNotCollide) {
  WriteFile(root_ + "/a.csv", "x");
  // a.csv is a file, so it cannot be a folder of another object.
  Result<std::unique_ptr<ObjectWriter>> w = store_->Create("a.csv/b.csv");
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument) << w.status().ToString();
  EXPECT_EQ(store_->Stat("a.csv/b.csv").status().code(), StatusCode::kNotFound);
  fs::create_directories(root_ + "/folder/sub");
  EXPECT_EQ(store_->Create("folder").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Delete("folder").code(), StatusCode::kInvalidArgument);
  // An empty folder lists as a folder one level down, and has no objects.
  Result<std::vector<ObjectInfo>> top = store_->List("", false);
  ASSERT_TRUE(top.ok());
  ASSERT_EQ(top->size(), 2u);
  EXPECT_EQ((*top)[1].key, "folder/");
  EXPECT_TRUE((*top)[1].is_prefix);
}

}  // namespace
}  // namespace dbs::testing

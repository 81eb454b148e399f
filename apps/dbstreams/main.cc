// dbstreams: the command-line entry point.
#include <cstdio>
#include <cstring>

namespace {
constexpr const char* kVersion = "0.1.0";

int Usage() {
  std::fprintf(stderr,
               "usage: dbstreams <command>\n"
               "commands:\n"
               "  version   print the version\n");
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  if (std::strcmp(argv[1], "version") == 0) {
    std::printf("dbstreams %s\n", kVersion);
    return 0;
  }
  return Usage();
}

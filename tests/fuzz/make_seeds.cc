// Writes encoded sample bundles into a folder: the fuzzer's seed corpus.
#include <cstdio>
#include <fstream>
#include <string>

#include "support/sample_bundles.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  int n = 0;
  for (dbs::Compression c :
       {dbs::Compression::kNone, dbs::Compression::kLz4, dbs::Compression::kZstd}) {
    for (size_t rows : {0, 1, 3, 17}) {
      for (int kind = 0; kind < 2; ++kind) {
        dbs::Bundle b = kind == 0 ? dbs::testing::MakeZooBundle(rows, static_cast<uint32_t>(rows))
                                  : dbs::testing::MakeTypicalBundle(rows, 1);
        if (kind == 0 && rows == 3)
          b.ops = {dbs::RowOp::kInsert, dbs::RowOp::kUpdate, dbs::RowOp::kDelete};
        std::string bytes;
        if (!dbs::EncodeBundle(b, {c, 1, 0}, &bytes).ok()) return 1;
        std::ofstream(dir + "/seed-" + std::to_string(n++), std::ios::binary) << bytes;
      }
    }
  }
  return 0;
}

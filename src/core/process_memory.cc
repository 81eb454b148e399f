#include "core/process_memory.h"

#include <malloc.h>

#include <cstddef>

// See process_memory.h: DuckDB's malloc_trim(0) at every database close would drop the free
// pages of every heap of the process. Exported from the executable, this definition takes
// precedence over glibc's for every shared library too.
extern "C" int malloc_trim(size_t pad) noexcept {
  (void)pad;
  return 0;
}

namespace dbs {

void TuneProcessMemory() {
  // Setting either threshold also turns off glibc's moving ("dynamic") mmap threshold.
  mallopt(M_MMAP_THRESHOLD, 16 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

}  // namespace dbs

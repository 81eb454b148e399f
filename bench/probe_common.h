// What the single-purpose probes of bench/ share (mysql_protocol_probe, mysql_write_probe).
#pragma once

#include <sys/resource.h>

#include <cstdio>
#include <string>

namespace dbs::bench {

// This process's CPU seconds so far (user + system).
inline double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Prints "<probe>: <what>" on stderr; returns the exit status 1.
inline int Fail(const char* probe, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", probe, what.c_str());
  return 1;
}

}  // namespace dbs::bench

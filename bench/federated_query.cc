// federated_query: runs one federated SELECT (src/federated) from the command line, for
// bench/federated_bench.sh. Prints the result as JSON and the elapsed time on stderr.
//
//   federated_query --source ALIAS=URL [--source ...] --sql SQL [--memory-limit 1GB]
//                   [--temp-dir DIR] [--threads N] [--max-rows N] [--explain]
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "federated/federated.h"

int main(int argc, char** argv) {
  using namespace dbs;
  std::vector<federated::FederatedSource> sources;
  federated::FederatedOptions o;
  o.timeout_ms = 3600 * 1000;
  std::string sql;
  bool explain = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "federated_query: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--source") {
      const std::string v = next();
      const size_t eq = v.find('=');
      auto conn =
          eq == std::string::npos
              ? Result<ConnectionConfig>(Status::InvalidArgument("--source wants ALIAS=URL"))
              : ParseConnectionUrl(v.substr(eq + 1));
      if (!conn.ok()) {
        std::fprintf(stderr, "federated_query: %s\n", conn.status().ToString().c_str());
        return 2;
      }
      sources.push_back({v.substr(0, eq), *conn});
    } else if (a == "--sql") {
      sql = next();
    } else if (a == "--memory-limit") {
      o.memory_limit = next();
    } else if (a == "--temp-dir") {
      o.temp_dir = next();
    } else if (a == "--threads") {
      o.threads = std::atoi(next().c_str());
    } else if (a == "--max-rows") {
      o.max_rows = std::atoll(next().c_str());
    } else if (a == "--explain") {
      explain = true;
    } else {
      std::fprintf(stderr, "federated_query: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (explain) {
    auto plan = federated::Explain(sources, sql, o);
    if (!plan.ok()) {
      std::fprintf(stderr, "federated_query: %s\n", plan.status().ToString().c_str());
      return 1;
    }
    std::printf("%s\n", plan->text.c_str());
    for (const auto& s : plan->sources)
      std::printf("%s: %s\n", s.alias.c_str(), s.statement.c_str());
    return 0;
  }
  auto out = federated::Run(sources, sql, o);
  if (!out.ok()) {
    std::fprintf(stderr, "federated_query: %s\n", out.status().ToString().c_str());
    return 1;
  }
  std::printf("%s\n", out->rows.dump().c_str());
  std::fprintf(stderr, "elapsed_ms=%lld\n", static_cast<long long>(out->elapsed_ms));
  return 0;
}

#include "run_command.h"
#include <atomic>
#include <csignal>
#include <memory>

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "common/nats_flags.h"
#include "config/stream_config.h"
#include "core/config.h"
#include "core/logging.h"
#include "run/local_run.h"
#include "run/plan.h"
#include "verify/checksum.h"

namespace dbs::cli {
namespace {

std::string Human(double v) {
  char buf[32];
  if (v >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.1fG", v / 1e9);
  } else if (v >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1fM", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  }
  return buf;
}

std::string Bar(double frac, int width) {
  if (frac < 0) frac = 0;
  if (frac > 1) frac = 1;
  int full = static_cast<int>(frac * width);
  return "[" + std::string(static_cast<size_t>(full), '#') +
         std::string(static_cast<size_t>(width - full), '.') + "]";
}

// Renders per-table progress: rows written of the estimate, rate and ETA.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool quiet) : tty_(isatty(2) != 0), quiet_(quiet) {}
  void Update(const std::vector<TableProgress>& tables, double elapsed) {
    if (quiet_ || elapsed - last_ < (tty_ ? 0.5 : 5.0)) return;
    last_ = elapsed;
    if (tty_ && lines_ > 0) std::fprintf(stderr, "\033[%dA", lines_);
    lines_ = 0;
    for (const TableProgress& t : tables) {
      double rate = elapsed > 0 ? static_cast<double>(t.written) / elapsed : 0;
      uint64_t total = std::max(t.estimate, t.read);
      double frac = total ? static_cast<double>(t.written) / static_cast<double>(total) : 0;
      std::string eta = "-";
      if (rate > 0 && total > t.written) {
        eta = std::to_string(static_cast<int>(static_cast<double>(total - t.written) / rate)) + "s";
      }
      std::fprintf(stderr, "%s%-32.32s %s %9s/%-9s rows %8s rows/s  eta %s\n",
                   tty_ ? "\033[2K" : "", t.name.c_str(), Bar(frac, 20).c_str(),
                   Human(static_cast<double>(t.written)).c_str(),
                   Human(static_cast<double>(total)).c_str(), Human(rate).c_str(), eta.c_str());
      ++lines_;
    }
  }

 private:
  bool tty_;
  bool quiet_;
  double last_ = 0;
  int lines_ = 0;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "dbstreams: %s\n", s.ToString().c_str());
  return 1;
}

void PrintVerdicts(const std::vector<TableVerdict>& verdicts) {
  for (const TableVerdict& v : verdicts) {
    std::fprintf(stdout, "  %-40s -> %-40s rows %llu/%llu  checksum %s\n", v.source_table.c_str(),
                 v.target_table.c_str(), static_cast<unsigned long long>(v.source.rows),
                 static_cast<unsigned long long>(v.target.rows), v.match() ? "equal" : "DIFFERENT");
    if (!v.match()) std::fprintf(stdout, "    %s\n", v.Describe().c_str());
  }
}

}  // namespace

int RunCommand(int argc, const char* const* argv, const std::string& default_data_dir) {
  std::vector<FlagSpec> specs = {
      {"writers", "DBS_WRITERS", "2", "writer threads consuming the stream"},
      {"nats-url", "NATS_URL", "", "use this NATS server instead of an embedded one"},
      {"data-dir", "DBS_DATA_DIR", default_data_dir, "folder for the embedded NATS store"},
      {"quiet", "", "false", "no progress output", true},
      {"log-level", "DBS_LOG_LEVEL", "warn", "trace, debug, info, warn or error"},
      {"help", "", "false", "show this help", true},
  };
  for (auto& f : apps::NatsClientFlags()) specs.insert(specs.end() - 1, f);
  auto cfg = Config::Load(specs, argc, argv);
  if (!cfg.ok()) return Fail(cfg.status());
  if (*cfg->GetBool("help") || cfg->positional().size() != 1) {
    std::fprintf(stderr, "usage: dbstreams run [flags] <stream.json>\n%s",
                 Config::Usage(specs).c_str());
    return *cfg->GetBool("help") ? 0 : 2;
  }
  auto level = LogLevelFromName(cfg->GetString("log-level"));
  if (!level.ok()) return Fail(level.status());
  Logger::Global().SetLevel(*level);
  auto stream = LoadStreamConfigFile(cfg->positional()[0]);
  if (!stream.ok()) return Fail(stream.status());
  auto writers = cfg->GetInt("writers", 1, 64);
  if (!writers.ok()) return Fail(writers.status());

  LocalRunOptions o;
  o.writers = static_cast<int>(*writers);
  o.nats_url = cfg->GetString("nats-url");
  if (!o.nats_url.empty()) o.nats_client = apps::NatsClientOptions(*cfg, o.nats_url, "dbstreams");
  o.data_dir = cfg->GetString("data-dir");
  ProgressPrinter printer(*cfg->GetBool("quiet"));
  // CDC modes run until a limit or Ctrl-C / SIGTERM, which drains: everything committed at the
  // source until then is applied before the run ends (a second signal stops at once).
  static std::atomic<int> signals{0};
  if (stream->mode != StreamMode::kLoad) {
    std::signal(SIGINT, [](int) {
      if (signals.fetch_add(1) >= 1) std::_Exit(130);
    });
    std::signal(SIGTERM, [](int) {
      if (signals.fetch_add(1) >= 1) std::_Exit(143);
    });
    o.drain_when = [] { return signals.load() > 0; };
    const bool quiet = *cfg->GetBool("quiet");
    auto last = std::make_shared<std::chrono::steady_clock::time_point>();
    o.on_cdc_progress = [quiet, last](const CdcProgress& p) {
      auto now = std::chrono::steady_clock::now();
      if (quiet || now - *last < std::chrono::seconds(2)) return;
      *last = now;
      std::fprintf(stderr, "cdc: %llu changes read, %llu applied, lag %lld ms, position %s\n",
                   static_cast<unsigned long long>(p.read),
                   static_cast<unsigned long long>(p.applied), static_cast<long long>(p.lag_ms),
                   p.position.c_str());
    };
  }
  auto summary = RunLocal(
      *stream, o, [&](const std::vector<TableProgress>& t, double e) { printer.Update(t, e); });
  if (!summary.ok()) return Fail(summary.status().WithContext("stream " + stream->name));
  uint64_t rows = 0;
  for (const TableProgress& t : summary->tables) rows += t.read;
  std::fprintf(
      stdout, "stream %s: %zu table(s), %llu rows, %s bytes on the bus, %.1f s (%s rows/s)\n",
      stream->name.c_str(), summary->tables.size(), static_cast<unsigned long long>(rows),
      Human(static_cast<double>(summary->bytes)).c_str(), summary->seconds,
      Human(summary->seconds > 0 ? static_cast<double>(rows) / summary->seconds : 0).c_str());
  if (stream->mode != StreamMode::kLoad) {
    std::fprintf(stdout, "changes: %llu read, %llu applied; last position %s\n",
                 static_cast<unsigned long long>(summary->cdc.read),
                 static_cast<unsigned long long>(summary->cdc.applied),
                 summary->cdc.position.c_str());
  }
  // This process only (reader and writers); the embedded nats-server is a separate process.
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  std::fprintf(stdout, "peak RSS of the reader and writers: %ld MB\n", ru.ru_maxrss / 1024);
  // The same report a plan prints: what became of each table and schema object.
  const std::string report = FormatPlan(summary->report, /*ddl=*/false);
  if (!report.empty()) std::fprintf(stdout, "%s", report.c_str());
  // malformedRows skip: what the file source left out (each row is in the log too).
  for (size_t i = 0; i < summary->skipped.size() && i < summary->tables.size(); ++i) {
    const SkipReport& r = summary->skipped[i];
    if (r.count == 0) continue;
    std::fprintf(stdout, "%s: %llu malformed row(s) skipped\n", summary->tables[i].name.c_str(),
                 static_cast<unsigned long long>(r.count));
    for (size_t k = 0; k < r.first.size() && k < 10; ++k) {
      std::fprintf(stdout, "  %s, line %llu: %s\n", r.first[k].file.c_str(),
                   static_cast<unsigned long long>(r.first[k].line), r.first[k].reason.c_str());
    }
  }
  PrintVerdicts(summary->verdicts);
  std::string bad = summary->Mismatches();
  if (!bad.empty()) {
    std::fprintf(stderr, "dbstreams: verification failed: source and target differ for %s\n",
                 bad.c_str());
    return 1;
  }
  return 0;
}

int PlanCommand(int argc, const char* const* argv) {
  const std::vector<FlagSpec> specs = {
      {"json", "", "false", "print the plan as JSON", true},
      {"ddl", "", "false", "print the DDL of the tables the run creates", true},
      {"log-level", "DBS_LOG_LEVEL", "warn", "trace, debug, info, warn or error"},
      {"help", "", "false", "show this help", true},
  };
  auto cfg = Config::Load(specs, argc, argv);
  if (!cfg.ok()) return Fail(cfg.status());
  if (*cfg->GetBool("help") || cfg->positional().size() != 1) {
    std::fprintf(stderr,
                 "usage: dbstreams plan [flags] <stream.json>\n"
                 "prints what a run would do (target DDL, lossy type decisions, schema objects "
                 "not migrated, row estimates) without writing anything\n%s",
                 Config::Usage(specs).c_str());
    return *cfg->GetBool("help") ? 0 : 2;
  }
  auto level = LogLevelFromName(cfg->GetString("log-level"));
  if (!level.ok()) return Fail(level.status());
  Logger::Global().SetLevel(*level);
  auto stream = LoadStreamConfigFile(cfg->positional()[0]);
  if (!stream.ok()) return Fail(stream.status());
  auto plan = PlanStream(*stream);
  if (!plan.ok()) return Fail(plan.status().WithContext("planning stream " + stream->name));
  if (*cfg->GetBool("json")) {
    std::fprintf(stdout, "%s\n", ToJson(*plan).dump(2).c_str());
  } else {
    std::fprintf(stdout, "%s", FormatPlan(*plan, *cfg->GetBool("ddl")).c_str());
  }
  return 0;
}

int VerifyCommand(int argc, const char* const* argv) {
  const std::vector<FlagSpec> specs = {{"help", "", "false", "show this help", true}};
  auto cfg = Config::Load(specs, argc, argv);
  if (!cfg.ok()) return Fail(cfg.status());
  if (*cfg->GetBool("help") || cfg->positional().size() != 1) {
    std::fprintf(stderr, "usage: dbstreams verify <stream.json>\n");
    return *cfg->GetBool("help") ? 0 : 2;
  }
  auto stream = LoadStreamConfigFile(cfg->positional()[0]);
  if (!stream.ok()) return Fail(stream.status());
  auto verdicts = VerifyStream(*stream);
  if (!verdicts.ok()) return Fail(verdicts.status());
  PrintVerdicts(*verdicts);
  for (const TableVerdict& v : *verdicts) {
    if (!v.match()) {
      std::fprintf(stderr, "dbstreams: %s and %s differ\n", v.source_table.c_str(),
                   v.target_table.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace dbs::cli

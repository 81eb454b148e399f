// dbstreams: the command-line entry point.
//   dbstreams serve     the all-in-one platform on this machine (embedded nats-server, ...)
//   dbstreams run       run one stream to completion (embedded NATS, reader and writers)
//   dbstreams verify    compare a stream's source and target by counts and checksums
//   dbstreams version
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "bus/embedded_nats.h"
#include "core/config.h"
#include "core/logging.h"
#include "run_command.h"

namespace {

constexpr const char* kVersion = "0.1.0";

int Usage() {
  std::fprintf(stderr,
               "usage: dbstreams <command> [flags]\n"
               "commands:\n"
               "  serve     run the platform on this machine (embedded NATS JetStream)\n"
               "  run       run a stream (JSON file) to completion, with progress and checks\n"
               "  verify    compare a stream's source and target (counts and checksums)\n"
               "  version   print the version\n"
               "run 'dbstreams <command> --help' for a command's flags\n");
  return 2;
}

std::string DefaultDataDir() {
  if (const char* x = std::getenv("XDG_DATA_HOME"); x != nullptr && *x != '\0') {
    return std::string(x) + "/dbstreams";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.local/share/dbstreams";
}

int Fail(const dbs::Status& s) {
  std::fprintf(stderr, "dbstreams: %s\n", s.ToString().c_str());
  return 1;
}

int Serve(int argc, const char* const* argv) {
  const std::vector<dbs::FlagSpec> specs = {
      {"data-dir", "DBS_DATA_DIR", DefaultDataDir(), "where NATS, config and secrets live"},
      {"nats-port", "DBS_NATS_PORT", "4222", "port of the embedded nats-server (127.0.0.1)"},
      {"log-level", "DBS_LOG_LEVEL", "info", "trace, debug, info, warn or error"},
      {"help", "", "false", "show this help", true},
  };
  auto cfg = dbs::Config::Load(specs, argc, argv);
  if (!cfg.ok()) return Fail(cfg.status());
  if (*cfg->GetBool("help")) {
    std::fprintf(stdout, "usage: dbstreams serve [flags]\n%s", dbs::Config::Usage(specs).c_str());
    return 0;
  }
  auto level = dbs::LogLevelFromName(cfg->GetString("log-level"));
  if (!level.ok()) return Fail(level.status());
  dbs::Logger::Global().SetLevel(*level);
  auto port = cfg->GetInt("nats-port", 0, 65535);
  if (!port.ok()) return Fail(port.status());

  // Block the stop signals before any thread starts; wait for them below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  dbs::bus::EmbeddedNatsOptions no;
  no.data_dir = cfg->GetString("data-dir") + "/nats";
  no.port = static_cast<int>(*port);
  auto nats = dbs::bus::EmbeddedNats::Start(no);
  if (!nats.ok()) return Fail(nats.status());
  std::printf(
      "dbstreams %s is running\n  NATS JetStream: %s\n  data folder:    %s\n"
      "press Ctrl-C to stop\n",
      kVersion, (*nats)->url().c_str(), cfg->GetString("data-dir").c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  dbs::Log(dbs::LogLevel::kInfo, "serve", "stopping", {dbs::F("signal", sig)});
  (*nats)->Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  std::string_view cmd = argv[1];
  if (cmd == "version" || cmd == "--version") {
    std::printf("dbstreams %s\n", kVersion);
    return 0;
  }
  if (cmd == "serve") return Serve(argc - 1, argv + 1);
  if (cmd == "run") return dbs::cli::RunCommand(argc - 1, argv + 1, DefaultDataDir());
  if (cmd == "verify") return dbs::cli::VerifyCommand(argc - 1, argv + 1);
  return Usage();
}

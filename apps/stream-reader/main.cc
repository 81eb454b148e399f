// stream-reader: reads a stream's source and publishes it to NATS JetStream.
//   stream-reader [--nats-url URL] <stream.json>
//   stream-reader --service [--nats-url URL]   (a service agent: waits for control messages)
// Mode load: reads the snapshot once and exits (0 when everything was published). Modes cdc and
// load+cdc: then follows the source until SIGINT/SIGTERM, which drains (everything committed at
// the source until then is published, then the writers finish); a second signal stops at once.
#include <signal.h>

#include <cstdio>
#include <thread>

#include "bus/jetstream.h"
#include "common/nats_flags.h"
#include "common/service_main.h"
#include "config/stream_config.h"
#include "core/config.h"
#include "core/logging.h"
#include "core/process_memory.h"
#include "core/process_sched.h"
#include "reader/stream_reader.h"
#include "service/nats_log_sink.h"
#include "service/service_agent.h"

int main(int argc, char** argv) {
  dbs::TuneProcessMemory();
  if (dbs::Status s = dbs::TuneProcessScheduling(); !s.ok()) {
    std::fprintf(stderr, "stream-reader: %s\n", s.message().c_str());
    return 2;
  }
  std::vector<dbs::FlagSpec> specs = {
      {"nats-url", "NATS_URL", "nats://127.0.0.1:4222", "NATS server(s), comma-separated"},
      {"log-level", "DBS_LOG_LEVEL", "info", "trace, debug, info, warn or error"},
      {"service", "DBS_SERVICE", "false", "run as a service: wait for control messages on NATS",
       true},
      {"service-id", "DBS_SERVICE_ID", "",
       "service id in heartbeats (default: reader-<host>-<pid>)"},
      {"help", "", "false", "show this help", true},
  };
  for (auto& f : dbs::apps::NatsClientFlags()) specs.insert(specs.end() - 1, f);
  auto cfg = dbs::Config::Load(specs, argc, argv);
  const bool service_mode = cfg.ok() && cfg->GetBool("service").ok() && *cfg->GetBool("service");
  if (cfg.ok() && service_mode && cfg->positional().empty()) {
    dbs::Logger::Global().SetService("stream-reader");
    if (auto l = dbs::LogLevelFromName(cfg->GetString("log-level")); l.ok()) {
      dbs::Logger::Global().SetLevel(*l);
    }
    return dbs::apps::RunServiceMode(
        "reader", dbs::apps::NatsClientOptions(*cfg, cfg->GetString("nats-url"), "stream-reader"),
        cfg->GetString("service-id"));
  }
  if (!cfg.ok() || *cfg->GetBool("help") || cfg->positional().size() != 1) {
    if (!cfg.ok()) std::fprintf(stderr, "stream-reader: %s\n", cfg.status().ToString().c_str());
    std::fprintf(
        stderr,
        "usage: stream-reader [flags] <stream.json>\n       stream-reader --service [flags]\n%s",
        dbs::Config::Usage(specs).c_str());
    return 2;
  }
  dbs::Logger::Global().SetService("stream-reader");
  if (auto l = dbs::LogLevelFromName(cfg->GetString("log-level")); l.ok()) {
    dbs::Logger::Global().SetLevel(*l);
  }
  auto stream = dbs::LoadStreamConfigFile(cfg->positional()[0]);
  if (!stream.ok()) {
    std::fprintf(stderr, "stream-reader: %s\n", stream.status().ToString().c_str());
    return 2;
  }
  // Block the stop signals before libnats starts its threads: a thread that does not block
  // them would take SIGTERM with the default action and kill the process mid-write.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  dbs::bus::NatsOptions no =
      dbs::apps::NatsClientOptions(*cfg, cfg->GetString("nats-url"), "stream-reader");
  no.request_timeout = std::chrono::seconds(30);
  auto nats = dbs::bus::NatsConnection::Connect(no);
  if (!nats.ok()) {
    std::fprintf(stderr, "stream-reader: %s\n", nats.status().ToString().c_str());
    return 1;
  }
  dbs::StreamReader reader(*stream, nats->get());
  const bool cdc = stream->mode != dbs::StreamMode::kLoad;
  std::thread stopper([&] {
    int sig;
    sigwait(&stop, &sig);
    if (cdc) {
      reader.RequestDrain();
      sigwait(&stop, &sig);
    }
    reader.Stop();
  });
  stopper.detach();
  auto stats = reader.Run();
  if (!stats.ok()) {
    std::fprintf(stderr, "stream-reader: %s\n", stats.status().ToString().c_str());
    return 1;
  }
  uint64_t rows = 0;
  for (uint64_t r : stats->load.rows) rows += r;
  std::printf("stream-reader: published %llu rows of %zu table(s), %llu row changes\n",
              static_cast<unsigned long long>(rows), stats->load.rows.size(),
              static_cast<unsigned long long>(stats->cdc.changes));
  return 0;
}

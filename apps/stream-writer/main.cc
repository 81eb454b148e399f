// stream-writer: consumes a stream from NATS JetStream and writes it to the target, exactly
// once. Any number of writers may consume the same stream.
//   stream-writer [--nats-url URL] [--id NAME] <stream.json>
//   stream-writer --service [--nats-url URL]   (a service agent: waits for control messages)
// Exits 0 once the stream is complete (data, indexes and foreign keys written).
#include <signal.h>
#include <unistd.h>

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
#include "service/nats_log_sink.h"
#include "service/service_agent.h"
#include "writer/load_writer.h"

int main(int argc, char** argv) {
  dbs::TuneProcessMemory();
  if (dbs::Status s = dbs::TuneProcessScheduling(); !s.ok()) {
    std::fprintf(stderr, "stream-writer: %s\n", s.message().c_str());
    return 2;
  }
  std::vector<dbs::FlagSpec> specs = {
      {"nats-url", "NATS_URL", "nats://127.0.0.1:4222", "NATS server(s), comma-separated"},
      {"id", "DBS_WRITER_ID", "writer-" + std::to_string(getpid()), "this writer's name"},
      {"batch", "DBS_WRITER_BATCH", "128", "bundles fetched and committed together"},
      {"ack-wait-ms", "DBS_WRITER_ACK_WAIT_MS", "30000",
       "how long a fetched message may stay unacknowledged before another writer gets it"},
      {"log-level", "DBS_LOG_LEVEL", "info", "trace, debug, info, warn or error"},
      {"service", "DBS_SERVICE", "false", "run as a service: wait for control messages on NATS",
       true},
      {"service-id", "DBS_SERVICE_ID", "",
       "service id in heartbeats (default: writer-<host>-<pid>)"},
      {"help", "", "false", "show this help", true},
  };
  for (auto& f : dbs::apps::NatsClientFlags()) specs.insert(specs.end() - 1, f);
  auto cfg = dbs::Config::Load(specs, argc, argv);
  const bool service_mode = cfg.ok() && cfg->GetBool("service").ok() && *cfg->GetBool("service");
  if (cfg.ok() && service_mode && cfg->positional().empty()) {
    dbs::Logger::Global().SetService("stream-writer");
    if (auto l = dbs::LogLevelFromName(cfg->GetString("log-level")); l.ok()) {
      dbs::Logger::Global().SetLevel(*l);
    }
    return dbs::apps::RunServiceMode(
        "writer", dbs::apps::NatsClientOptions(*cfg, cfg->GetString("nats-url"), "stream-writer"),
        cfg->GetString("service-id"));
  }
  if (!cfg.ok() || *cfg->GetBool("help") || cfg->positional().size() != 1) {
    if (!cfg.ok()) std::fprintf(stderr, "stream-writer: %s\n", cfg.status().ToString().c_str());
    std::fprintf(
        stderr,
        "usage: stream-writer [flags] <stream.json>\n       stream-writer --service [flags]\n%s",
        dbs::Config::Usage(specs).c_str());
    return 2;
  }
  dbs::Logger::Global().SetService("stream-writer");
  if (auto l = dbs::LogLevelFromName(cfg->GetString("log-level")); l.ok()) {
    dbs::Logger::Global().SetLevel(*l);
  }
  auto stream = dbs::LoadStreamConfigFile(cfg->positional()[0]);
  if (!stream.ok()) {
    std::fprintf(stderr, "stream-writer: %s\n", stream.status().ToString().c_str());
    return 2;
  }
  auto batch = cfg->GetInt("batch", 1, 10000);
  if (!batch.ok()) {
    std::fprintf(stderr, "stream-writer: %s\n", batch.status().ToString().c_str());
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
      dbs::apps::NatsClientOptions(*cfg, cfg->GetString("nats-url"), "stream-writer");
  no.request_timeout = std::chrono::seconds(30);
  auto nats = dbs::bus::NatsConnection::Connect(no);
  if (!nats.ok()) {
    std::fprintf(stderr, "stream-writer: %s\n", nats.status().ToString().c_str());
    return 1;
  }
  dbs::WriterOptions wo;
  wo.writer_id = cfg->GetString("id");
  wo.fetch_batch = static_cast<int>(*batch);
  auto ack_wait = cfg->GetInt("ack-wait-ms", 1000, 3'600'000);
  if (!ack_wait.ok()) {
    std::fprintf(stderr, "stream-writer: %s\n", ack_wait.status().ToString().c_str());
    return 2;
  }
  wo.ack_wait = std::chrono::milliseconds(*ack_wait);
  wo.skip_finished_run = true;  // a stream file's run starts with a new reader, never an old one
  dbs::LoadWriter writer(*stream, nats->get(), wo);
  std::thread stopper([&] {
    int sig;
    sigwait(&stop, &sig);
    writer.Stop();
  });
  stopper.detach();
  dbs::Status s = writer.Run();
  if (!s.ok()) {
    std::fprintf(stderr, "stream-writer: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("stream-writer %s: stream %s complete\n", wo.writer_id.c_str(), stream->name.c_str());
  return 0;
}

// stream-api: the REST API alone, against the NATS server(s) at NATS_URL.
//   stream-api [--nats-url URL] [--port 8080] [--data-dir DIR] ...
// Reader and writer services (stream-reader/stream-writer --service) run elsewhere.
#include <signal.h>

#include <cstdio>
#include <cstdlib>

#include "bus/jetstream.h"
#include "common/api_host.h"
#include "common/nats_flags.h"
#include "core/logging.h"
#include "core/process_memory.h"
#include "service/nats_log_sink.h"

int main(int argc, char** argv) {
  dbs::TuneProcessMemory();
  const char* home = std::getenv("HOME");
  auto specs = dbs::apps::ApiFlags(std::string(home ? home : ".") + "/.local/share/dbstreams");
  specs.insert(specs.begin(), {"nats-url", "NATS_URL", "nats://127.0.0.1:4222",
                               "NATS server(s), comma-separated"});
  for (auto& f : dbs::apps::NatsClientFlags()) specs.insert(specs.end() - 1, f);
  auto cfg = dbs::Config::Load(specs, argc, argv);
  if (!cfg.ok() || *cfg->GetBool("help")) {
    if (!cfg.ok()) std::fprintf(stderr, "stream-api: %s\n", cfg.status().ToString().c_str());
    std::fprintf(stderr, "usage: stream-api [flags]\n%s", dbs::Config::Usage(specs).c_str());
    return 2;
  }
  dbs::Logger::Global().SetService("stream-api");
  if (auto l = dbs::LogLevelFromName(cfg->GetString("log-level")); l.ok()) {
    dbs::Logger::Global().SetLevel(*l);
  }
  auto fail = [](const dbs::Status& s) {
    std::fprintf(stderr, "stream-api: %s\n", s.ToString().c_str());
    return 1;
  };
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  auto stores = dbs::apps::OpenStores(*cfg);
  if (!stores.ok()) return fail(stores.status());
  auto options = dbs::apps::ApiOptions(*cfg);
  if (!options.ok()) return fail(options.status());
  dbs::bus::NatsOptions no =
      dbs::apps::NatsClientOptions(*cfg, cfg->GetString("nats-url"), "stream-api");
  auto nats = dbs::bus::NatsConnection::Connect(no);
  if (!nats.ok()) return fail(nats.status());
  auto* sink = dbs::Logger::Global().AddSink(
      std::make_unique<dbs::service::NatsLogSink>(nats->get(), "stream-api", "api"));
  auto first = dbs::apps::FirstApiKey(stores->config.get());
  if (!first.ok()) return fail(first.status());
  auto server = dbs::api::ApiServer::Start(*options, nats->get(), stores->config.get(),
                                           stores->secrets.get());
  if (!server.ok()) return fail(server.status());
  std::printf("stream-api listening on %s\n", (*server)->url().c_str());
  if (!first->empty()) {
    std::printf("first API key (shown once, keep it): %s\n", first->c_str());
  }
  if (options->serve_ui) std::printf("web UI: %s/\n", (*server)->url().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  (*server)->Stop();
  dbs::Logger::Global().RemoveSink(sink);
  return 0;
}

// The --service mode of stream-reader and stream-writer: connect to NATS, publish logs on
// dbs.logs.<id>, run a ServiceAgent until SIGINT/SIGTERM.
#pragma once

#include <signal.h>

#include <cstdio>
#include <string>

#include "bus/jetstream.h"
#include "core/logging.h"
#include "service/nats_log_sink.h"
#include "service/service_agent.h"

namespace dbs::apps {

inline int RunServiceMode(const std::string& kind, bus::NatsOptions no,
                          const std::string& service_id) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  const std::string nats_url = no.url;
  no.request_timeout = std::chrono::seconds(30);
  auto nats = bus::NatsConnection::Connect(no);
  if (!nats.ok()) {
    std::fprintf(stderr, "stream-%s: %s\n", kind.c_str(), nats.status().ToString().c_str());
    return 1;
  }
  service::AgentOptions ao;
  ao.kind = kind;
  ao.id = service_id;
  auto agent = service::ServiceAgent::Start(nats->get(), ao);
  if (!agent.ok()) {
    std::fprintf(stderr, "stream-%s: %s\n", kind.c_str(), agent.status().ToString().c_str());
    return 1;
  }
  LogSink* sink = Logger::Global().AddSink(
      std::make_unique<service::NatsLogSink>(nats->get(), (*agent)->id(), kind));
  std::printf("stream-%s: service %s waiting for control messages on %s\n", kind.c_str(),
              (*agent)->id().c_str(), nats_url.c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  (*agent)->Shutdown();
  Logger::Global().RemoveSink(sink);
  return 0;
}

}  // namespace dbs::apps

// dbstreams: the command-line entry point.
//   dbstreams serve     the all-in-one platform on this machine (embedded nats-server, ...)
//   dbstreams run       run one stream to completion (embedded NATS, reader and writers)
//   dbstreams apikey    create|list|revoke API keys
//   dbstreams verify    compare a stream's source and target by counts and checksums
//   dbstreams mcp       the read-only MCP server for AI assistants (stdio transport)
//   dbstreams version
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>

#include <unistd.h>
#include "bus/embedded_nats.h"
#include "common/api_host.h"
#include "core/config.h"
#include "core/logging.h"
#include "core/process_memory.h"
#include "core/process_sched.h"
#include "mcp/mcp_stdio.h"
#include "run_command.h"
#include "service/nats_log_sink.h"
#include "service/service_agent.h"

namespace {

constexpr const char* kVersion = "0.1.0";

int Usage() {
  std::fprintf(stderr,
               "usage: dbstreams <command> [flags]\n"
               "commands:\n"
               "  serve     run the platform on this machine (embedded NATS JetStream)\n"
               "  run       run a stream (JSON file) to completion, with progress and checks\n"
               "  plan      print what a run would do (DDL, lossy decisions, objects) without "
               "writing\n"
               "  verify    compare a stream's source and target (counts and checksums)\n"
               "  apikey    create, list or revoke API keys\n"
               "  mcp       the read-only MCP server for AI assistants, over stdio\n"
               "  nats-credentials reader|writer|api\n"
               "            the embedded NATS server's credentials of a role (for extra services)\n"
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

// The embedded server's users live in the secrets store ("nats/<role>/password"), so a restart
// keeps them and `dbstreams nats-credentials` can hand them to extra services.
dbs::Result<dbs::bus::NatsUsers> LoadOrCreateNatsUsers(dbs::store::SecretsStore* secrets) {
  dbs::bus::NatsUsers fresh = dbs::bus::NatsUsers::Generate();
  dbs::bus::NatsUsers users;
  for (auto role :
       {dbs::bus::NatsRole::kApi, dbs::bus::NatsRole::kReader, dbs::bus::NatsRole::kWriter}) {
    const std::string ref = "nats/" + std::string(dbs::bus::RoleName(role)) + "/password";
    dbs::bus::NatsUser u = fresh.For(role);
    auto stored = secrets->Get(ref);
    if (stored.ok()) {
      u.password = *stored;
    } else if (stored.status().code() == dbs::StatusCode::kNotFound) {
      DBS_RETURN_IF_ERROR(secrets->Put(ref, u.password));
    } else {
      return stored.status();
    }
    (role == dbs::bus::NatsRole::kApi      ? users.api
     : role == dbs::bus::NatsRole::kReader ? users.reader
                                           : users.writer) = u;
  }
  users.random = true;  // every stored password was made by Generate() above, in some start
  return users;
}

// The all-in-one platform: embedded nats-server, API, a reader and a writer service.
int Serve(int argc, const char* const* argv) {
  auto specs = dbs::apps::ApiFlags(DefaultDataDir());
  specs.insert(specs.begin(), {"nats-port", "DBS_NATS_PORT", "4222",
                               "port of the embedded nats-server (0: a free port)"});
  specs.insert(specs.begin(), {"nats-host", "DBS_NATS_HOST", "127.0.0.1",
                               "listen address of the embedded nats-server"});
  specs.insert(specs.begin(),
               {"nats-tls", "DBS_NATS_TLS", "auto",
                "TLS of the embedded nats-server: auto (on beyond loopback), on or off"});
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
  auto stores = dbs::apps::OpenStores(*cfg);
  if (!stores.ok()) return Fail(stores.status());
  auto options = dbs::apps::ApiOptions(*cfg);
  if (!options.ok()) return Fail(options.status());

  // Block the stop signals before any thread starts; wait for them below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  auto users = LoadOrCreateNatsUsers(stores->secrets.get());
  if (!users.ok()) return Fail(users.status());
  dbs::bus::EmbeddedNatsOptions no;
  no.data_dir = cfg->GetString("data-dir") + "/nats";
  no.host = cfg->GetString("nats-host");
  no.port = static_cast<int>(*port);
  no.tls = cfg->GetString("nats-tls");
  no.users = *users;
  auto nats = dbs::bus::EmbeddedNats::Start(no);
  if (!nats.ok()) return Fail(nats.status());
  // One connection per role: each can do only what its role needs (bus/nats_auth.h).
  auto connect = [&](dbs::bus::NatsRole role, const char* name) {
    dbs::bus::NatsOptions o = (*nats)->ClientOptions(role, name);
    o.request_timeout = std::chrono::seconds(30);
    return dbs::bus::NatsConnection::Connect(o);
  };
  auto api_conn = connect(dbs::bus::NatsRole::kApi, "dbstreams-api");
  if (!api_conn.ok()) return Fail(api_conn.status());
  auto reader_conn = connect(dbs::bus::NatsRole::kReader, "dbstreams-reader");
  if (!reader_conn.ok()) return Fail(reader_conn.status());
  auto writer_conn = connect(dbs::bus::NatsRole::kWriter, "dbstreams-writer");
  if (!writer_conn.ok()) return Fail(writer_conn.status());
  dbs::LogSink* sink = dbs::Logger::Global().AddSink(std::make_unique<dbs::service::NatsLogSink>(
      api_conn->get(), "dbstreams-" + std::to_string(getpid()), "serve"));
  dbs::service::AgentOptions ro, wo;
  ro.kind = "reader";
  wo.kind = "writer";
  ro.version = wo.version = kVersion;
  auto reader = dbs::service::ServiceAgent::Start(reader_conn->get(), ro);
  if (!reader.ok()) return Fail(reader.status());
  auto writer = dbs::service::ServiceAgent::Start(writer_conn->get(), wo);
  if (!writer.ok()) return Fail(writer.status());
  auto first = dbs::apps::FirstApiKey(stores->config.get());
  if (!first.ok()) return Fail(first.status());
  options->version = kVersion;
  auto server = dbs::api::ApiServer::Start(*options, api_conn->get(), stores->config.get(),
                                           stores->secrets.get());
  if (!server.ok()) return Fail(server.status());
  std::printf(
      "dbstreams %s is running\n  API:            %s/api/v1\n  NATS JetStream: %s\n"
      "  data folder:    %s\n",
      kVersion, (*server)->url().c_str(), (*nats)->url().c_str(),
      cfg->GetString("data-dir").c_str());
  if (!first->empty()) {
    std::printf("  first API key (shown once, keep it): %s\n", first->c_str());
  }
  std::printf("press Ctrl-C to stop\n");
  if (options->serve_ui) std::printf("web UI: %s/\n", (*server)->url().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  dbs::Log(dbs::LogLevel::kInfo, "serve", "stopping", {dbs::F("signal", sig)});
  (*server)->Stop();
  (*reader)->Shutdown();
  (*writer)->Shutdown();
  dbs::Logger::Global().RemoveSink(sink);
  (*nats)->Stop();
  return 0;
}

// dbstreams nats-credentials reader|writer|api: the embedded server's credentials of a role,
// as environment lines for stream-reader/stream-writer/stream-api started against it.
int NatsCredentials(int argc, const char* const* argv) {
  auto specs = dbs::apps::ApiFlags(DefaultDataDir());
  auto cfg = dbs::Config::Load(specs, argc, argv);
  if (!cfg.ok()) return Fail(cfg.status());
  const auto& pos = cfg->positional();
  if (*cfg->GetBool("help") || pos.size() != 1 ||
      (pos[0] != "reader" && pos[0] != "writer" && pos[0] != "api")) {
    std::fprintf(stderr, "usage: dbstreams nats-credentials reader|writer|api [flags]\n%s",
                 dbs::Config::Usage(specs).c_str());
    return 2;
  }
  auto stores = dbs::apps::OpenStores(*cfg);
  if (!stores.ok()) return Fail(stores.status());
  auto users = LoadOrCreateNatsUsers(stores->secrets.get());
  if (!users.ok()) return Fail(users.status());
  const auto role = pos[0] == "reader"   ? dbs::bus::NatsRole::kReader
                    : pos[0] == "writer" ? dbs::bus::NatsRole::kWriter
                                         : dbs::bus::NatsRole::kApi;
  std::printf("NATS_USER=%s\nNATS_PASSWORD=%s\n", users->For(role).user.c_str(),
              users->For(role).password.c_str());
  const std::string ca = cfg->GetString("data-dir") + "/nats/nats-server-cert.pem";
  if (std::filesystem::exists(ca)) std::printf("NATS_CA=%s\n", ca.c_str());
  return 0;
}

// dbstreams apikey create|list|revoke: API keys in the config store (only hashes are kept).
int ApiKey(int argc, const char* const* argv) {
  std::vector<dbs::FlagSpec> specs = {
      {"data-dir", "DBS_DATA_DIR", DefaultDataDir(), "where the config store lives"},
      {"config-backend", "CONFIG_BACKEND", "sqlite", "config store backend (sqlite)"},
      {"name", "", "cli", "what the key is for (create)"},
      {"help", "", "false", "show this help", true},
  };
  auto cfg = dbs::Config::Load(specs, argc, argv);
  if (!cfg.ok()) return Fail(cfg.status());
  const auto& pos = cfg->positional();
  if (*cfg->GetBool("help") || pos.empty() ||
      (pos[0] != "create" && pos[0] != "list" && pos[0] != "revoke") ||
      (pos[0] == "revoke" && pos.size() != 2)) {
    std::fprintf(stderr, "usage: dbstreams apikey create [--name NAME] | list | revoke <id>\n%s",
                 dbs::Config::Usage(specs).c_str());
    return 2;
  }
  auto store =
      dbs::store::ConfigStore::Open(cfg->GetString("config-backend"), cfg->GetString("data-dir"));
  if (!store.ok()) return Fail(store.status());
  if (pos[0] == "create") {
    auto key = dbs::api::CreateApiKey(store->get(), cfg->GetString("name"));
    if (!key.ok()) return Fail(key.status());
    std::printf("%s\n", key->c_str());
    return 0;
  }
  if (pos[0] == "revoke") {
    dbs::Status s = (*store)->RevokeApiKey(pos[1]);
    if (!s.ok()) return Fail(s);
    std::printf("revoked %s\n", pos[1].c_str());
    return 0;
  }
  auto keys = (*store)->ListApiKeys();
  if (!keys.ok()) return Fail(keys.status());
  for (const auto& k : *keys) {
    std::printf("%s  %s...  %-8s  %s\n", k.id.c_str(), k.prefix.c_str(),
                k.revoked_at ? "revoked" : "valid", k.name.c_str());
  }
  return 0;
}

// dbstreams mcp: the MCP stdio transport for a desktop AI client (src/mcp/mcp_stdio.h). The
// tools run on the dbstreams server at --url, with an API key.
int Mcp(int argc, const char* const* argv) {
  std::vector<dbs::FlagSpec> specs = {
      {"url", "DBS_API_URL", "http://127.0.0.1:8080", "the dbstreams server (dbstreams serve)"},
      {"api-key", "DBS_API_KEY", "", "an API key (dbstreams apikey create)"},
      {"help", "", "false", "show this help", true},
  };
  auto cfg = dbs::Config::Load(specs, argc, argv);
  if (!cfg.ok()) return Fail(cfg.status());
  if (*cfg->GetBool("help") || cfg->GetString("api-key").empty()) {
    std::fprintf(stderr,
                 "usage: dbstreams mcp [--url URL] --api-key KEY   (or DBS_API_URL, DBS_API_KEY)\n"
                 "reads MCP messages on stdin, writes answers on stdout\n%s",
                 dbs::Config::Usage(specs).c_str());
    return 2;
  }
  return dbs::mcp::RunStdioBridge(cfg->GetString("url"), cfg->GetString("api-key"), std::cin,
                                  std::cout, std::cerr);
}

}  // namespace

int main(int argc, char** argv) {
  dbs::TuneProcessMemory();
  if (dbs::Status s = dbs::TuneProcessScheduling(); !s.ok()) {
    std::fprintf(stderr, "dbstreams: %s\n", s.message().c_str());
    return 2;
  }
  if (argc < 2) return Usage();
  std::string_view cmd = argv[1];
  if (cmd == "version" || cmd == "--version") {
    std::printf("dbstreams %s\n", kVersion);
    return 0;
  }
  if (cmd == "serve") return Serve(argc - 1, argv + 1);
  if (cmd == "apikey") return ApiKey(argc - 1, argv + 1);
  if (cmd == "nats-credentials") return NatsCredentials(argc - 1, argv + 1);
  if (cmd == "run") return dbs::cli::RunCommand(argc - 1, argv + 1, DefaultDataDir());
  if (cmd == "verify") return dbs::cli::VerifyCommand(argc - 1, argv + 1);
  if (cmd == "plan") return dbs::cli::PlanCommand(argc - 1, argv + 1);
  if (cmd == "mcp") return Mcp(argc - 1, argv + 1);
  return Usage();
}

// Shared set-up of the API for stream-api and `dbstreams serve`: flags, stores, API options.
#pragma once

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "api/api_server.h"
#include "api/static_ui.h"
#include "core/config.h"
#include "core/logging.h"
#include "store/config_store.h"
#include "store/data_dir.h"
#include "store/keyring.h"
#include "store/secrets_store.h"

namespace dbs::apps {

inline std::vector<FlagSpec> ApiFlags(const std::string& default_data_dir) {
  return {
      {"data-dir", "DBS_DATA_DIR", default_data_dir, "where config, secrets (and NATS) live"},
      {"host", "DBS_API_HOST", "127.0.0.1", "API listen address"},
      {"port", "DBS_API_PORT", "8080", "API port (0: a free port)"},
      {"tls-cert", "DBS_TLS_CERT", "", "HTTPS certificate file (with --tls-key)"},
      {"tls-key", "DBS_TLS_KEY", "", "HTTPS private key file"},
      {"cors-origins", "DBS_CORS_ORIGINS", "", "comma-separated allowed Origins, or *"},
      {"config-backend", "CONFIG_BACKEND", "sqlite", "config store backend (sqlite)"},
      {"secrets-backend", "SECRETS_BACKEND", "file", "secrets backend (file)"},
      {"master-key-file", "DBS_MASTER_KEY_FILE", "",
       "the secrets' master key file, best outside the data folder (default: "
       "<data-dir>/master.key; DBS_MASTER_KEY=<64 hex digits> instead of a file)"},
      {"master-key-keyring", "DBS_MASTER_KEY_KEYRING", "false",
       "keep the secrets' master key in the desktop keyring (Secret Service) instead of a file",
       true},
      {"metrics-token", "DBS_METRICS_TOKEN", "",
       "a Prometheus scrape token for GET /metrics (Authorization: Bearer; 16+ characters)"},
      {"metrics-listen", "DBS_METRICS_LISTEN", "",
       "host:port of a second listener that serves only /metrics"},
      {"ui-dir", "DBS_UI_DIR", "auto",
       "built web UI served at / (auto: ui/dist of the source tree, else share/dbstreams/ui; "
       "off: none)"},
      {"log-level", "DBS_LOG_LEVEL", "info", "trace, debug, info, warn or error"},
      {"help", "", "false", "show this help", true},
  };
}

struct Stores {
  std::unique_ptr<store::ConfigStore> config;
  std::unique_ptr<store::SecretsStore> secrets;
};

// Makes the data folder private (store/data_dir.h), then opens the config store and the
// secrets. Warns when the master key sits in the data folder beside the secrets it protects.
inline Result<Stores> OpenStores(const Config& cfg) {
  Stores s;
  const std::string dir = cfg.GetString("data-dir");
  DBS_RETURN_IF_ERROR(store::PrepareDataDir(dir));
  DBS_ASSIGN_OR_RETURN(s.config, store::ConfigStore::Open(cfg.GetString("config-backend"), dir));
  std::string key = SystemEnv("DBS_MASTER_KEY").value_or("");
  const std::string key_file = cfg.GetString("master-key-file");
  auto keyring = cfg.GetBool("master-key-keyring");
  const bool use_keyring = key.empty() && keyring.ok() && *keyring;
  if (use_keyring) {
    DBS_ASSIGN_OR_RETURN(key, store::KeyringMasterKey(dir));
  }
  DBS_ASSIGN_OR_RETURN(
      s.secrets, store::SecretsStore::Open(cfg.GetString("secrets-backend"), dir, key, key_file));
  if (!use_keyring && SystemEnv("DBS_MASTER_KEY").value_or("").empty() &&
      cfg.GetString("secrets-backend") == "file") {
    std::error_code ec;
    const std::string in_dir = dir + "/master.key";
    if (key_file.empty() || std::filesystem::equivalent(key_file, in_dir, ec)) {
      Log(LogLevel::kWarn, "secrets",
          "the master key is in the data folder, beside the secrets it encrypts: a copy of the "
          "folder reveals every stored password. Keep it elsewhere with --master-key-file "
          "(DBS_MASTER_KEY_FILE) or DBS_MASTER_KEY (docs/security.md)",
          {F("key", in_dir)});
    }
  }
  return s;
}

inline Result<api::ApiServerOptions> ApiOptions(const Config& cfg) {
  api::ApiServerOptions o;
  o.host = cfg.GetString("host");
  DBS_ASSIGN_OR_RETURN(int64_t port, cfg.GetInt("port", 0, 65535));
  o.port = static_cast<int>(port);
  o.tls_cert_file = cfg.GetString("tls-cert");
  o.tls_key_file = cfg.GetString("tls-key");
  o.metrics_token = cfg.GetString("metrics-token");
  o.metrics_listen = cfg.GetString("metrics-listen");
  o.serve_ui = cfg.GetString("ui-dir") != "off";
  o.ui_dir = api::ResolveUiDir(cfg.GetString("ui-dir"));
  std::stringstream ss(cfg.GetString("cors-origins"));
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) o.cors_origins.push_back(item);
  }
  return o;
}

// Creates the first API key when there is none; returns it ("" when keys exist).
inline Result<std::string> FirstApiKey(store::ConfigStore* config) {
  DBS_ASSIGN_OR_RETURN(auto keys, config->ListApiKeys());
  if (!keys.empty()) return std::string();
  return api::CreateApiKey(config, "first key");
}

}  // namespace dbs::apps

#include "config/connection.h"

#include <fcntl.h>
#include <strings.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

namespace dbs {

std::string_view EngineName(Engine e) {
  switch (e) {
    case Engine::kMysql:
      return "mysql";
    case Engine::kPostgres:
      return "postgres";
    case Engine::kFile:
      return "file";
    case Engine::kFederated:
      return "federated";
  }
  return "postgres";
}

namespace {

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size() || Hex(s[i + 1]) < 0 || Hex(s[i + 2]) < 0) {
      return Status::InvalidArgument("bad percent-escape in connection URL");
    }
    out += static_cast<char>(Hex(s[i + 1]) * 16 + Hex(s[i + 2]));
    i += 2;
  }
  return out;
}

std::string NormalizeSslMode(std::string m) {
  std::string lower;
  for (char c : m) lower += static_cast<char>(c == '_' ? '-' : std::tolower(c));
  if (lower == "disabled") return "disable";
  if (lower == "preferred") return "prefer";
  if (lower == "required") return "require";
  if (lower == "verify-identity") return "verify-full";
  return lower;
}

bool ValidSslMode(const std::string& m) {
  return m.empty() || m == "disable" || m == "allow" || m == "prefer" || m == "require" ||
         m == "verify-ca" || m == "verify-full";
}

std::string QuoteConninfo(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

// file:///abs/path?k=v&...: the path (absolute) in `database`, the query in `params`.
Result<ConnectionConfig> ParseFileUrl(const std::string& rest) {
  ConnectionConfig c;
  c.engine = Engine::kFile;
  c.host.clear();
  std::string path = rest, query;
  if (size_t q = path.find('?'); q != std::string::npos) {
    query = path.substr(q + 1);
    path = path.substr(0, q);
  }
  if (path.rfind("localhost/", 0) == 0) path = path.substr(9);
  if (path.empty() || path[0] != '/') {
    return Status::InvalidArgument("file:// URLs need an absolute path (file:///data/out)");
  }
  DBS_ASSIGN_OR_RETURN(c.database, PercentDecode(path));
  while (c.database.size() > 1 && c.database.back() == '/') c.database.pop_back();
  size_t pos = 0;
  while (pos < query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    std::string kv = query.substr(pos, amp - pos);
    pos = amp + 1;
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    DBS_ASSIGN_OR_RETURN(std::string v,
                         PercentDecode(eq == std::string::npos ? "" : kv.substr(eq + 1)));
    c.params[kv.substr(0, eq)] = v;
  }
  return c;
}

// An s3:// URL parsed like the others: the host is the bucket, the path the prefix.
Status CheckS3(ConnectionConfig* c) {
  if (c->port != 0 || c->host.empty() || c->host == "127.0.0.1" ||
      c->host.find_first_of("[]") != std::string::npos) {
    return Status::InvalidArgument(
        "s3:// URLs name a bucket: s3://bucket/prefix?endpoint=https://host:port (the server "
        "goes in endpoint)");
  }
  while (!c->database.empty() && c->database.back() == '/') c->database.pop_back();
  while (!c->database.empty() && c->database.front() == '/') c->database.erase(0, 1);
  if (auto a = c->params.find("addressing");
      a != c->params.end() && a->second != "path" && a->second != "virtual") {
    return Status::InvalidArgument("s3:// addressing must be path or virtual, not '" + a->second +
                                   "'");
  }
  return Status::Ok();
}

}  // namespace

Result<ConnectionConfig> ParseConnectionUrl(const std::string& url) {
  ConnectionConfig c;
  size_t sep = url.find("://");
  if (sep == std::string::npos) {
    return Status::InvalidArgument(
        "connection URL must start with mysql://, mariadb://, postgres://, postgresql:// or "
        "file://");
  }
  std::string scheme = url.substr(0, sep);
  if (scheme == "file") return ParseFileUrl(url.substr(sep + 3));
  if (scheme == "mysql" || scheme == "mariadb") {
    c.engine = Engine::kMysql;
  } else if (scheme == "postgres" || scheme == "postgresql") {
    c.engine = Engine::kPostgres;
  } else if (scheme == "s3") {
    c.engine = Engine::kFile;
    c.s3 = true;
  } else {
    return Status::InvalidArgument("unsupported connection scheme '" + scheme +
                                   "://' (use mysql://, mariadb://, postgres://, file://, s3://)");
  }
  std::string rest = url.substr(sep + 3);
  std::string query;
  if (size_t q = rest.find('?'); q != std::string::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string path;
  if (size_t slash = rest.find('/'); slash != std::string::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  if (size_t at = rest.rfind('@'); at != std::string::npos) {
    std::string userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    size_t colon = userinfo.find(':');
    DBS_ASSIGN_OR_RETURN(c.user, PercentDecode(userinfo.substr(0, colon)));
    if (colon != std::string::npos) {
      DBS_ASSIGN_OR_RETURN(c.password, PercentDecode(userinfo.substr(colon + 1)));
    }
  }
  std::string hostport = rest;
  if (!hostport.empty() && hostport[0] == '[') {  // [ipv6]:port
    size_t close = hostport.find(']');
    if (close == std::string::npos) return Status::InvalidArgument("bad IPv6 host in URL");
    c.host = hostport.substr(1, close - 1);
    hostport = hostport.substr(close + 1);
    if (!hostport.empty() && hostport[0] == ':')
      hostport = hostport.substr(1);
    else
      hostport.clear();
  } else if (size_t colon = hostport.rfind(':'); colon != std::string::npos) {
    c.host = hostport.substr(0, colon);
    hostport = hostport.substr(colon + 1);
  } else {
    c.host = hostport;
    hostport.clear();
  }
  if (c.host.empty()) c.host = "127.0.0.1";
  if (!hostport.empty()) {
    int port = 0;
    for (char ch : hostport) {
      if (ch < '0' || ch > '9' || port > 65535) {
        return Status::InvalidArgument("bad port '" + hostport + "' in connection URL");
      }
      port = port * 10 + (ch - '0');
    }
    if (port < 1 || port > 65535) {
      return Status::InvalidArgument("bad port '" + hostport + "' in connection URL");
    }
    c.port = port;
  }
  DBS_ASSIGN_OR_RETURN(c.database, PercentDecode(path));
  size_t pos = 0;
  while (pos < query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    std::string kv = query.substr(pos, amp - pos);
    pos = amp + 1;
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    std::string k = kv.substr(0, eq);
    DBS_ASSIGN_OR_RETURN(std::string v,
                         PercentDecode(eq == std::string::npos ? "" : kv.substr(eq + 1)));
    if (k == "sslmode" || k == "ssl-mode" || k == "ssl_mode") {
      c.ssl.mode = NormalizeSslMode(v);
    } else if (k == "sslrootcert" || k == "ssl-ca" || k == "sslca") {
      c.ssl.ca = v;
    } else if (k == "sslcert" || k == "ssl-cert") {
      c.ssl.cert = v;
    } else if (k == "sslkey" || k == "ssl-key") {
      c.ssl.key = v;
    } else if (k == "password") {
      c.password = v;
    } else {
      c.params[k] = v;
    }
  }
  if (!ValidSslMode(c.ssl.mode)) {
    return Status::InvalidArgument("unknown SSL mode '" + c.ssl.mode +
                                   "' (disable, prefer, require, verify-ca, verify-full)");
  }
  if (c.s3) DBS_RETURN_IF_ERROR(CheckS3(&c));
  return c;
}

namespace {

// {"federated": [{"alias": "pg1", <connection fields>}, ...]}
Result<ConnectionConfig> ParseFederated(const nlohmann::json& j, const std::string& path) {
  if (j.size() != 1) {
    return Status::InvalidArgument(path + ": a federated source has only \"federated\"");
  }
  const nlohmann::json& list = j["federated"];
  if (!list.is_array() || list.empty() || list.size() > 16) {
    return Status::InvalidArgument(path +
                                   ".federated must be an array of 1 to 16 {\"alias\", "
                                   "\"url\", ...} connections");
  }
  ConnectionConfig c;
  c.engine = Engine::kFederated;
  c.host.clear();
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = path + ".federated[" + std::to_string(i) + "]";
    const nlohmann::json& m = list[i];
    if (!m.is_object() || !m.contains("alias") || !m["alias"].is_string()) {
      return Status::InvalidArgument(at + " must be an object with \"alias\" and \"url\"");
    }
    FederatedMember member;
    member.alias = m["alias"].get<std::string>();
    bool ok = !member.alias.empty() && member.alias.size() <= 63 &&
              std::isalpha(static_cast<unsigned char>(member.alias[0]));
    for (char ch : member.alias) {
      ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
    }
    if (!ok) {
      return Status::InvalidArgument(at +
                                     ".alias must be a letter followed by letters, digits or _ "
                                     "(at most 63 characters)");
    }
    for (const FederatedMember& other : c.federated) {
      if (strcasecmp(other.alias.c_str(), member.alias.c_str()) == 0) {
        return Status::InvalidArgument(at + ".alias " + member.alias + " is used twice");
      }
    }
    nlohmann::json rest = m;
    rest.erase("alias");
    DBS_ASSIGN_OR_RETURN(member.connection, ParseConnection(rest, at));
    if (member.connection.engine == Engine::kFederated) {
      return Status::InvalidArgument(at + " cannot itself be federated");
    }
    c.federated.push_back(std::move(member));
  }
  return c;
}

}  // namespace

Result<ConnectionConfig> ParseConnection(const nlohmann::json& j, const std::string& path) {
  if (j.is_string()) {
    auto c = ParseConnectionUrl(j.get<std::string>());
    if (!c.ok()) return c.status().WithContext(path);
    return c;
  }
  if (!j.is_object()) {
    return Status::InvalidArgument(path + " must be a connection URL or an object with \"url\"");
  }
  if (j.contains("federated")) return ParseFederated(j, path);
  auto it = j.find("url");
  if (it == j.end() || !it->is_string()) {
    return Status::InvalidArgument(path + ".url is required (e.g. postgres://user@host/db)");
  }
  auto c = ParseConnectionUrl(it->get<std::string>());
  if (!c.ok()) return c.status().WithContext(path + ".url");
  for (const auto& [k, v] : j.items()) {
    if (k == "url") continue;
    if (c->s3 && k == "sessionToken") {
      if (!v.is_string()) return Status::InvalidArgument(path + "." + k + " must be a string");
      c->session_token = v.get<std::string>();
      continue;
    }
    if (c->s3 && (k == "endpoint" || k == "region" || k == "addressing")) {
      if (!v.is_string()) return Status::InvalidArgument(path + "." + k + " must be a string");
      c->params[k] = v.get<std::string>();
      if (k == "addressing") DBS_RETURN_IF_ERROR(CheckS3(&*c).WithContext(path));
      continue;
    }
    if (k == "password" || k == "user" || k == "database") {
      if (!v.is_string()) return Status::InvalidArgument(path + "." + k + " must be a string");
      (k == "password" ? c->password : k == "user" ? c->user : c->database) = v.get<std::string>();
    } else if (c->engine == Engine::kFile &&
               (k == "format" || k == "compression" || k == "rowsPerFile")) {
      // File options (src/sources/files/file_common.h), also accepted as URL parameters.
      if (v.is_string()) {
        c->params[k] = v.get<std::string>();
      } else if (v.is_number_unsigned()) {
        c->params[k] = std::to_string(v.get<uint64_t>());
      } else {
        return Status::InvalidArgument(path + "." + k + " must be a string or a number");
      }
    } else if (k == "ssl") {
      if (!v.is_object()) return Status::InvalidArgument(path + ".ssl must be an object");
      for (const auto& [sk, sv] : v.items()) {
        if (!sv.is_string()) {
          return Status::InvalidArgument(path + ".ssl." + sk + " must be a string");
        }
        std::string s = sv.get<std::string>();
        if (sk == "mode") {
          c->ssl.mode = NormalizeSslMode(s);
          if (!ValidSslMode(c->ssl.mode)) {
            return Status::InvalidArgument(path + ".ssl.mode '" + s + "' is not a known mode");
          }
        } else if (sk == "ca") {
          c->ssl.ca = s;
        } else if (sk == "cert") {
          c->ssl.cert = s;
        } else if (sk == "key") {
          c->ssl.key = s;
        } else {
          return Status::InvalidArgument(path + ".ssl." + sk +
                                         " is not a known field (mode, ca, cert, key)");
        }
      }
    } else {
      return Status::InvalidArgument(path + "." + k +
                                     " is not a known field (url, user, password, database, ssl)");
    }
  }
  return c;
}

std::string ConnectionConfig::Redacted() const {
  if (engine == Engine::kFederated) {
    std::string out = "federated(";
    for (size_t i = 0; i < federated.size(); ++i) {
      out += (i ? ", " : "") + federated[i].alias + "=" + federated[i].connection.Redacted();
    }
    return out + ")";
  }
  if (engine == Engine::kFile && s3) {
    auto e = params.find("endpoint");
    return "s3://" + host + (database.empty() ? "" : "/" + database) +
           (e == params.end() ? "" : " at " + e->second);
  }
  if (engine == Engine::kFile) return "file://" + database;
  std::string out(EngineName(engine));
  out += "://";
  if (!user.empty()) out += user + "@";
  out += host + ":" + std::to_string(EffectivePort()) + "/" + database;
  return out;
}

std::string ConnectionConfig::LibpqConninfo(bool replication) const {
  std::string s = "host=" + QuoteConninfo(host) + " port=" + std::to_string(EffectivePort());
  if (!user.empty()) s += " user=" + QuoteConninfo(user);
  if (!password.empty()) s += " password=" + QuoteConninfo(password);
  s += " dbname=" + QuoteConninfo(database.empty() ? "postgres" : database);
  if (!ssl.mode.empty()) s += " sslmode=" + QuoteConninfo(ssl.mode);
  if (!ssl.ca.empty()) s += " sslrootcert=" + QuoteConninfo(ssl.ca);
  if (!ssl.cert.empty()) s += " sslcert=" + QuoteConninfo(ssl.cert);
  if (!ssl.key.empty()) s += " sslkey=" + QuoteConninfo(ssl.key);
  if (replication) s += " replication=database";
  s += " application_name='dbstreams' connect_timeout=10";
  for (const auto& [k, v] : params) {
    if (k == "connect_timeout" || k == "application_name" || k == "options") {
      s += " " + k + "=" + QuoteConninfo(v);
    }
  }
  return s;
}

bool IsInlinePem(const std::string& value) { return value.find("-----BEGIN") != std::string::npos; }

PemFiles::PemFiles(PemFiles&& o) noexcept
    : settings_(std::move(o.settings_)), dir_(std::move(o.dir_)), files_(std::move(o.files_)) {
  o.dir_.clear();
  o.files_.clear();
}

PemFiles::~PemFiles() {
  for (const std::string& f : files_) ::unlink(f.c_str());
  if (!dir_.empty()) ::rmdir(dir_.c_str());
}

Result<PemFiles> PemFiles::Write(const SslSettings& ssl) {
  PemFiles out;
  out.settings_ = ssl;
  struct Field {
    std::string* value;
    const char* name;
  };
  for (Field f : {Field{&out.settings_.ca, "ca.pem"}, Field{&out.settings_.cert, "cert.pem"},
                  Field{&out.settings_.key, "key.pem"}}) {
    if (!IsInlinePem(*f.value)) continue;
    if (out.dir_.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      std::string templ =
          std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/dbstreams-tls-XXXXXX";
      if (::mkdtemp(templ.data()) == nullptr) {
        return Status::Internal("cannot make a private folder for the TLS files under " +
                                templ.substr(0, templ.rfind('/')) + ": " + std::strerror(errno));
      }
      out.dir_ = templ;
    }
    const std::string path = out.dir_ + "/" + f.name;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      return Status::Internal("cannot write the TLS file " + path + ": " + std::strerror(errno));
    }
    out.files_.push_back(path);
    const std::string& text = *f.value;
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        ::close(fd);
        return Status::Internal("cannot write the TLS file " + path + ": " + std::strerror(err));
      }
      done += static_cast<size_t>(n);
    }
    if (::close(fd) != 0) {
      return Status::Internal("cannot write the TLS file " + path + ": " + std::strerror(errno));
    }
    *f.value = path;
  }
  return out;
}

}  // namespace dbs

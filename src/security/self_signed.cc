#include "security/self_signed.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

namespace dbs::security {

namespace {

template <typename T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION, X509_EXTENSION_free>>;

bool IsIp(const std::string& h) {
  unsigned char buf[16];
  return inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

Status AddExtension(X509* x, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(x, ext.get(), -1) != 1) {
    return Status::Internal("cannot add certificate extension " + value);
  }
  return Status::Ok();
}

// Writes PEM output of `write` to `path` with `mode`, through a temporary file.
template <typename Fn>
Status WritePem(const std::string& path, mode_t mode, Fn write) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Status::IoError("cannot write " + tmp);
  ::fchmod(fd, mode);
  FILE* f = ::fdopen(fd, "w");
  if (f == nullptr) {
    ::close(fd);
    return Status::IoError("cannot write " + tmp);
  }
  const bool ok = write(f) == 1;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Status::IoError("cannot write " + path);
  }
  return Status::Ok();
}

}  // namespace

Status EnsureSelfSigned(const std::string& cert_file, const std::string& key_file,
                        const std::vector<std::string>& hosts) {
  std::error_code ec;
  if (std::filesystem::exists(cert_file, ec) && std::filesystem::exists(key_file, ec)) {
    return Status::Ok();
  }
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return Status::Internal("cannot generate a P-256 key");
  X509Ptr x(X509_new());
  if (!x) return Status::Internal("cannot allocate a certificate");
  X509_set_version(x.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return Status::Internal("no randomness");
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), 3650L * 24 * 3600);
  X509_set_pubkey(x.get(), key.get());
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("dbstreams embedded NATS"), -1,
                             -1, 0);
  X509_set_issuer_name(x.get(), name);
  std::set<std::string> names(hosts.begin(), hosts.end());
  names.insert("127.0.0.1");
  names.insert("localhost");
  std::string san;
  for (const std::string& h : names) {
    if (h.empty() || h == "0.0.0.0" || h == "::") continue;
    san += (san.empty() ? "" : ",") + std::string(IsIp(h) ? "IP:" : "DNS:") + h;
  }
  DBS_RETURN_IF_ERROR(AddExtension(x.get(), NID_basic_constraints, "critical,CA:TRUE"));
  DBS_RETURN_IF_ERROR(
      AddExtension(x.get(), NID_key_usage, "critical,digitalSignature,keyCertSign"));
  DBS_RETURN_IF_ERROR(AddExtension(x.get(), NID_ext_key_usage, "serverAuth"));
  DBS_RETURN_IF_ERROR(AddExtension(x.get(), NID_subject_alt_name, san));
  if (X509_sign(x.get(), key.get(), EVP_sha256()) == 0) {
    return Status::Internal("cannot sign the certificate");
  }
  DBS_RETURN_IF_ERROR(WritePem(key_file, 0600, [&](FILE* f) {
    return PEM_write_PrivateKey(f, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  }));
  return WritePem(cert_file, 0600, [&](FILE* f) { return PEM_write_X509(f, x.get()); });
}

}  // namespace dbs::security

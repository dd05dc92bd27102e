// gRPC over TLS: the files checked once with OpenSSL, so that a wrong one stops the server at start
// naming it (gRPC's file watcher would only log, and fail every handshake); then gRPC's experimental TLS
// API, which reads them again every kCertificateRefresh, and a verifier of the client's name.

#include <ratelimit/serve/client_san.hpp>
#include <ratelimit/serve/tls.hpp>

#include <swl/error.hpp>

#include <grpc/support/log.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace swl::ratelimit {

namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* certificate) const { X509_free(certificate); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using Certificate = std::unique_ptr<X509, X509Free>;
using PrivateKey = std::unique_ptr<EVP_PKEY, KeyFree>;

[[noreturn]] void refuse(const std::string& what, const std::string& path, const std::string& why) {
  throw Error("swl-ratelimit: " + what + " " + path + ": " + why);
}

std::string readWhole(const std::string& what, const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  if (file) text << file.rdbuf();
  if (!file || file.bad()) refuse(what, path, std::string("cannot be read: ") + std::strerror(errno));
  return text.str();
}

// OpenSSL asks for a passphrase on the terminal unless told there is none: an encrypted key is refused,
// as gRPC cannot read one either.
int noPassphrase(char* /*buffer*/, int /*size*/, int /*writing*/, void* /*data*/) { return -1; }

std::unique_ptr<BIO, BioFree> memoryOf(const std::string& pem) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// The certificates of a PEM file, in order (a certificate's chain, or a bundle of CAs); at least one.
std::vector<Certificate> certificatesIn(const std::string& what, const std::string& path) {
  const std::string pem = readWhole(what, path);
  const auto bio = memoryOf(pem);
  std::vector<Certificate> certificates;
  while (X509* certificate = PEM_read_bio_X509(bio.get(), nullptr, noPassphrase, nullptr)) {
    certificates.emplace_back(certificate);
  }
  ERR_clear_error();  // the end of the file reads as an error
  if (certificates.empty()) refuse(what, path, "holds no certificate in PEM (-----BEGIN CERTIFICATE-----)");
  return certificates;
}

PrivateKey keyIn(const std::string& path) {
  const std::string pem = readWhole("key", path);
  const auto bio = memoryOf(pem);
  PrivateKey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, noPassphrase, nullptr));
  ERR_clear_error();
  if (!key) refuse("key", path, "holds no private key in PEM, or one encrypted with a passphrase");
  return key;
}

// What gRPC will read, read first: each file holds what it should, and the key is the certificate's.
void checkFiles(const GrpcTls& tls) {
  const std::vector<Certificate> chain = certificatesIn("certificate", tls.cert_file);
  const PrivateKey key = keyIn(tls.key_file);
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    ERR_clear_error();
    refuse("key", tls.key_file, "is not the key of the certificate " + tls.cert_file);
  }
  if (!tls.client_ca_file.empty()) certificatesIn("client CA", tls.client_ca_file);
}

// GRPC_CLIENT_TLS_SAN: after gRPC has verified the client's chain, whether its certificate holds the
// name. Decided at once, on gRPC's thread.
class ClientSanVerifier final : public grpc::experimental::ExternalCertificateVerifier {
 public:
  explicit ClientSanVerifier(std::string san) : san_(std::move(san)) {}

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)> /*callback*/, grpc::Status* sync_status) override {
    SubjectAltNames names;
    for (const grpc::string_ref& name : request->dns_names()) names.dns.emplace_back(name.data(), name.size());
    for (const grpc::string_ref& address : request->ip_names()) names.ip.emplace_back(address.data(), address.size());
    if (holdsName(names, san_)) {
      *sync_status = grpc::Status::OK;
    } else {
      // gRPC logs the handshakes it refuses itself, but not those a verifier refuses: said as it says them.
      gpr_log(GPR_ERROR, "swl-ratelimit: refused a client whose certificate does not hold %s", san_.c_str());
      *sync_status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "the client's certificate does not hold " + san_);
    }
    return true;  // synchronous: sync_status is the answer
  }

  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest* /*request*/) override {}

 private:
  std::string san_;
};

}  // namespace

std::shared_ptr<grpc::ServerCredentials> serverCredentials(const GrpcTls& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  checkFiles(tls);
  namespace tls_api = grpc::experimental;
  const auto files = std::make_shared<tls_api::FileWatcherCertificateProvider>(
      tls.key_file, tls.cert_file, tls.client_ca_file, static_cast<unsigned int>(kCertificateRefresh.count()));
  tls_api::TlsServerCredentialsOptions options(files);
  options.watch_identity_key_cert_pairs();
  if (tls.client_ca_file.empty()) {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  } else {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  if (!tls.client_san.empty()) {
    options.set_certificate_verifier(tls_api::ExternalCertificateVerifier::Create<ClientSanVerifier>(tls.client_san));
  }
  return tls_api::TlsServerCredentials(options);
}

}  // namespace swl::ratelimit

#pragma once
// What the TLS tests need: certificates made once per test program by openssl (support/
// make_test_certificates.sh, in a temporary directory removed at exit), and redis-servers that serve
// TLS on a second port while their plain port stays for the test's own inspection (CLIENT KILL, INFO).

#include "support/redis_server.hpp"

#include <swl/connection_options.hpp>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace swl::test {

class TestCertificates {
 public:
  static const TestCertificates& get() {
    static const TestCertificates certificates;
    return certificates;
  }

  std::string path(const std::string& name) const { return (directory_ / name).string(); }

  // Client options that trust the test CA and verify 127.0.0.1, with patient() timeouts.
  swl::ConnectionOptions clientOptions(swl::ConnectionOptions options = patient()) const {
    options.tls.enabled = true;
    options.tls.ca_file = path("ca.crt");
    return options;
  }

  ~TestCertificates() {
    std::error_code ignored;
    std::filesystem::remove_all(directory_, ignored);
  }

 private:
  TestCertificates() {
    std::string pattern = (std::filesystem::temp_directory_path() / "swl-tls-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a directory for certificates");
    directory_ = pattern;
    // The script sits beside this header (CMake compiles with absolute paths, so __FILE__ is one).
    const std::filesystem::path script = std::filesystem::path(__FILE__).parent_path() / "make_test_certificates.sh";
    const std::string command = "cd '" + directory_.string() + "' && bash '" + script.string() + "' > make.log 2>&1";
    if (std::system(command.c_str()) != 0)
      throw std::runtime_error("openssl could not make the test certificates; see " + path("make.log"));
  }

  std::filesystem::path directory_;
};

// A redis-server serving TLS on tlsPort() with `certificate` (server, expired, elsewhere) signed by
// the test CA, and plain TCP on port() for the test itself.
class TlsRedisServer {
 public:
  explicit TlsRedisServer(const std::string& certificate = "server", std::vector<std::string> extra = {})
      : tls_port_(RedisServer::freeLoopbackPort()), server_(arguments(tls_port_, certificate, std::move(extra))) {}

  int port() const { return server_.port(); }
  int tlsPort() const { return tls_port_; }
  swl::Address address() const { return {"127.0.0.1", tls_port_}; }
  RedisServer& server() { return server_; }
  swl::Connection plain() const { return server_.connect(); }

  static std::vector<std::string> arguments(int tls_port, const std::string& certificate,
                                            std::vector<std::string> extra) {
    const TestCertificates& certificates = TestCertificates::get();
    std::vector<std::string> result{"--tls-port",         std::to_string(tls_port),
                                    "--tls-cert-file",    certificates.path(certificate + ".crt"),
                                    "--tls-key-file",     certificates.path(certificate + ".key"),
                                    "--tls-ca-cert-file", certificates.path("ca.crt"),
                                    "--tls-auth-clients", "no"};
    result.insert(result.end(), extra.begin(), extra.end());
    return result;
  }

 private:
  int tls_port_;
  RedisServer server_;
};

}  // namespace swl::test

// swl-ratelimit's gRPC over TLS and mutual TLS, as envoyproxy/ratelimit serves it and Envoy Gateway deploys
// it: the client's name as Go matches it (no I/O), the settings that ask for it, and then the server
// program against a private redis-server, called by gRPC clients with the certificates
// support/make_test_certificates.sh makes, its certificate rotated on disk as Kubernetes rotates a Secret.

#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/ratelimit_requests.hpp"
#include "support/ratelimit_server.hpp"
#include "support/redis_server.hpp"
#include "support/tls_redis.hpp"

#include <ratelimit/serve/client_san.hpp>
#include <ratelimit/settings/settings.hpp>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

// A namespace of its own: the test files of one program share a translation unit (tests/CMakeLists.txt).
namespace ratelimit_tls_tests {

namespace rls = envoy::service::ratelimit::v3;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using swl::ratelimit::holdsName;
using swl::ratelimit::Settings;
using swl::ratelimit::SettingsError;
using swl::ratelimit::SubjectAltNames;
using swl::test::RateLimitProcess;
using swl::test::readFile;
using swl::test::RedisServer;
using swl::test::TemporaryDirectory;
using swl::test::TestCertificates;

using Variables = std::map<std::string, std::string>;

// Settings from `arguments` and a made-up environment, the configuration given.
Settings settingsOf(std::vector<std::string> arguments, const Variables& environment = {}) {
  arguments.insert(arguments.begin(), {"--config", "/etc/ratelimit"});
  return swl::ratelimit::readSettings(arguments, [&](const char* name) -> const char* {
    const auto found = environment.find(name);
    return found == environment.end() ? nullptr : found->second.c_str();
  });
}

bool saysIgnored(const Settings& settings, const std::string& start) {
  return std::any_of(settings.ignored.begin(), settings.ignored.end(),
                     [&](const std::string& line) { return line.rfind(start, 0) == 0; });
}

std::string path(const std::string& name) { return TestCertificates::get().path(name); }
std::string pem(const std::string& name) { return readFile(path(name)); }

// Two PEM texts of one certificate, whatever their line ends.
bool sameCertificate(std::string a, std::string b) {
  const auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  a.erase(std::remove_if(a.begin(), a.end(), blank), a.end());
  b.erase(std::remove_if(b.begin(), b.end(), blank), b.end());
  return !a.empty() && a == b;
}

// A channel of its own to 127.0.0.1:`port` (never a connection another channel made), over TLS trusting
// the test CA, with the client certificate `identity` (none when empty); plaintext when `tls` is false.
std::shared_ptr<grpc::Channel> channelTo(int port, const std::string& identity, bool tls = true) {
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  const std::string target = "127.0.0.1:" + std::to_string(port);
  if (!tls) return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), arguments);
  grpc::SslCredentialsOptions files;
  files.pem_root_certs = pem("ca.crt");
  if (!identity.empty()) {
    files.pem_cert_chain = pem(identity + ".crt");
    files.pem_private_key = pem(identity + ".key");
  }
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(files), arguments);
}

// One ShouldRateLimit on `channel`, as Envoy makes it: its status, and the certificate the server showed.
std::pair<grpc::Status, std::string> ask(const std::shared_ptr<grpc::Channel>& channel) {
  const auto stub = rls::RateLimitService::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  rls::RateLimitResponse response;
  const grpc::Status status = stub->ShouldRateLimit(&context, swl::test::request({{{"user", "alice"}}}), &response);
  std::string certificate;
  if (const auto auth = context.auth_context()) {
    for (const grpc::string_ref& value : auth->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME)) {
      certificate.assign(value.data(), value.size());
    }
  }
  return {status, certificate};
}

bool served(int port, const std::string& identity) {
  const auto [status, certificate] = ask(channelTo(port, identity));
  INFO(identity << ": " << status.error_message());
  return status.ok();
}

// swl-ratelimit (CMake gives its path) with a private redis-server, the shop's rules, and `environment`
// (TLS's variables) and `flags` added.
class TlsServer {
 public:
  TlsServer(const TemporaryDirectory& directory, const RateLimitProcess::Environment& environment,
            const std::vector<std::string>& flags = {})
      : process_(directory.path() / "server.out", arguments(directory, redis_.port(), flags), environment,
                 RateLimitProcess::Inherit::the_tests_environment) {}

  int port() const { return process_.grpcPort(); }
  RateLimitProcess& process() { return process_; }

  static std::vector<std::string> arguments(const TemporaryDirectory& directory, int redis_port,
                                            const std::vector<std::string>& flags) {
    std::vector<std::string> all{"--config", directory.write("config/shop.yaml", swl::test::kShopRules).string(),
                                 "--listen", "127.0.0.1:0",
                                 "--redis",  "127.0.0.1:" + std::to_string(redis_port)};
    all.insert(all.end(), flags.begin(), flags.end());
    return all;
  }

 private:
  RedisServer redis_;
  RateLimitProcess process_;
};

// Envoy Gateway's variables (internal/infrastructure/kubernetes/ratelimit: GRPC_SERVER_TLS_CA_CERT, which
// envoyproxy/ratelimit does not read) for files in `directory`, named as its Secret names them.
RateLimitProcess::Environment envoyGateway(const fs::path& directory) {
  return {{"GRPC_SERVER_USE_TLS", "true"},
          {"GRPC_SERVER_TLS_CERT", (directory / "tls.crt").string()},
          {"GRPC_SERVER_TLS_KEY", (directory / "tls.key").string()},
          {"GRPC_SERVER_TLS_CA_CERT", (directory / "ca.crt").string()}};
}

// A Kubernetes Secret's volume, as the kubelet writes it: the files in a directory of their own, `..data`
// a link to it, and each name a link through `..data`. An update writes a new directory and renames a new
// link over `..data`: a reader sees all the old files or all the new, never a mix.
class SecretVolume {
 public:
  explicit SecretVolume(fs::path root) : root_(std::move(root)) { fs::create_directories(root_); }

  // The Secret now holds `certificate` (its .crt and .key) and the test CA.
  void update(const std::string& certificate) {
    const fs::path version = root_ / ("..2026_01_0" + std::to_string(++versions_));
    fs::create_directories(version);
    fs::copy_file(path(certificate + ".crt"), version / "tls.crt");
    fs::copy_file(path(certificate + ".key"), version / "tls.key");
    fs::copy_file(path("ca.crt"), version / "ca.crt");
    fs::create_directory_symlink(version.filename(), root_ / "..data_tmp");
    fs::rename(root_ / "..data_tmp", root_ / "..data");
    for (const char* name : {"tls.crt", "tls.key", "ca.crt"}) {
      if (!fs::is_symlink(root_ / name)) fs::create_symlink(fs::path("..data") / name, root_ / name);
    }
    if (!previous_.empty()) fs::remove_all(previous_);
    previous_ = version;
  }

  const fs::path& root() const { return root_; }

 private:
  fs::path root_;
  fs::path previous_;
  int versions_ = 0;
};

// swl-ratelimit-probe's exit status and output, run with `flags` against 127.0.0.1:`port`.
std::pair<int, std::string> probe(const TemporaryDirectory& directory, int port,
                                  const std::vector<std::string>& flags) {
  std::vector<std::string> command{SWL_RATELIMIT_PROBE, "--server", "127.0.0.1:" + std::to_string(port), "--domain",
                                   "shop"};
  command.insert(command.end(), flags.begin(), flags.end());
  command.emplace_back("user=alice");
  const fs::path output = directory.path() / "probe.out";
  swl::test::ChildProcess process;
  process.start(command, output.string(), swl::test::ChildProcess::Errors::with_output);
  const int status = process.waitForExit(std::chrono::seconds(30));
  return {status, readFile(output)};
}

TEST_CASE("a client certificate holds GRPC_CLIENT_TLS_SAN as Go's VerifyHostname says: DNS names or addresses") {
  const SubjectAltNames names{{"envoy.gateway.test", "*.mesh.test", "Upper.Case.Test", "odd name!"},
                              {"10.0.0.7", "2001:db8::1"}};
  for (const char* held :
       {"envoy.gateway.test", "ENVOY.Gateway.test", "envoy.gateway.test.", "upper.case.test", "a.mesh.test",
        "*.mesh.test", "odd name!", "ODD NAME!", "10.0.0.7", "::ffff:10.0.0.7", "[2001:db8::1]", "2001:0db8:0:0::1"}) {
    INFO(held);
    CHECK(holdsName(names, held));
  }
  // A wildcard stands for one whole left-most label; a name not a hostname only for itself.
  for (const char* not_held : {"gateway.test", "mesh.test", "a.b.mesh.test", "envoy.gateway.test..", "odd name",
                               "10.0.0.8", "[10.0.0.7", "2001:db8::2", "spiffe://cluster.local/ns/gateway/sa/envoy"}) {
    INFO(not_held);
    CHECK_FALSE(holdsName(names, not_held));
  }
  CHECK_FALSE(holdsName({{"a.mesh.test"}, {}}, "*.mesh.test"));  // the wanted name's '*' is no wildcard
  // An address is compared with addresses alone, a name with names alone; an IPv4 address with a leading
  // zero is no address to Go (so a name, which no DNS name holds here).
  CHECK_FALSE(holdsName({{"10.0.0.9"}, {}}, "10.0.0.9"));
  CHECK_FALSE(holdsName({{}, {"10.0.0.9"}}, "010.0.0.9"));
  CHECK(holdsName({{"010.0.0.9"}, {}}, "010.0.0.9"));
}

TEST_CASE("swl-ratelimit serves gRPC over TLS as envoyproxy/ratelimit's and Envoy Gateway's variables say") {
  const Settings gateway = settingsOf({}, {{"GRPC_SERVER_USE_TLS", "true"},
                                           {"GRPC_SERVER_TLS_CERT", "/certs/tls.crt"},
                                           {"GRPC_SERVER_TLS_KEY", "/certs/tls.key"},
                                           {"GRPC_SERVER_TLS_CA_CERT", "/certs/ca.crt"}});
  CHECK(gateway.grpc.tls.cert_file == "/certs/tls.crt");
  CHECK(gateway.grpc.tls.key_file == "/certs/tls.key");
  CHECK(gateway.grpc.tls.client_ca_file == "/certs/ca.crt");  // mutual TLS, as Envoy Gateway means it
  CHECK(gateway.ignored.empty());

  const Settings both = settingsOf({}, {{"GRPC_SERVER_USE_TLS", "1"},
                                        {"GRPC_SERVER_TLS_CERT", "/certs/tls.crt"},
                                        {"GRPC_SERVER_TLS_KEY", "/certs/tls.key"},
                                        {"GRPC_SERVER_TLS_CA_CERT", "/certs/ca.crt"},
                                        {"GRPC_CLIENT_TLS_CACERT", "/certs/clients.crt"},
                                        {"GRPC_CLIENT_TLS_SAN", "envoy.gateway.test"}});
  CHECK(both.grpc.tls.client_ca_file == "/certs/clients.crt");  // envoyproxy/ratelimit's own name wins
  CHECK(both.grpc.tls.client_san == "envoy.gateway.test");
  CHECK(saysIgnored(both, "GRPC_SERVER_TLS_CA_CERT: GRPC_CLIENT_TLS_CACERT"));

  // Without GRPC_SERVER_USE_TLS=true, envoyproxy/ratelimit reads none of them: named, and plaintext.
  const Settings off = settingsOf({}, {{"GRPC_SERVER_TLS_CERT", "/certs/tls.crt"}, {"GRPC_CLIENT_TLS_SAN", "envoy"}});
  CHECK_FALSE(off.grpc.tls.enabled());
  CHECK(saysIgnored(off, "GRPC_SERVER_TLS_CERT: only with GRPC_SERVER_USE_TLS=true"));
  CHECK(saysIgnored(off, "GRPC_CLIENT_TLS_SAN: only with GRPC_SERVER_USE_TLS=true"));

  // Our flags and variables, which win over envoyproxy's.
  const Settings ours = settingsOf(
      {"--grpc-tls-cert", "/tls/cert.pem", "--grpc-client-ca", "/tls/ca.pem", "--grpc-client-san", "10.0.0.7"},
      {{"SWL_RATELIMIT_GRPC_TLS_KEY", "/tls/key.pem"},
       {"GRPC_SERVER_USE_TLS", "true"},
       {"GRPC_SERVER_TLS_CERT", "/certs/tls.crt"},
       {"GRPC_SERVER_TLS_KEY", "/certs/tls.key"}});
  CHECK(ours.grpc.tls.cert_file == "/tls/cert.pem");
  CHECK(ours.grpc.tls.key_file == "/tls/key.pem");
  CHECK(ours.grpc.tls.client_ca_file == "/tls/ca.pem");
  CHECK(ours.grpc.tls.client_san == "10.0.0.7");
  CHECK_THAT(swl::ratelimit::usageText(), Contains("--grpc-tls-cert FILE") && Contains("--grpc-client-san NAME"));
}

TEST_CASE("swl-ratelimit refuses TLS settings that cannot work, naming what is missing") {
  const auto refused = [](const std::vector<std::string>& flags, const Variables& environment,
                          const std::string& message) {
    INFO(message);
    CHECK_THROWS_MATCHES(settingsOf(flags, environment), SettingsError, Catch::Message(message));
  };
  refused({"--grpc-tls-cert", "/tls/cert.pem"}, {},
          "swl-ratelimit: --grpc-tls-cert (GRPC_SERVER_TLS_CERT) is given without --grpc-tls-key "
          "(GRPC_SERVER_TLS_KEY): TLS needs both, the certificate and its key");
  refused({}, {{"GRPC_SERVER_USE_TLS", "true"}, {"GRPC_SERVER_TLS_KEY", "/certs/tls.key"}},
          "swl-ratelimit: --grpc-tls-key (GRPC_SERVER_TLS_KEY) is given without --grpc-tls-cert "
          "(GRPC_SERVER_TLS_CERT): TLS needs both, the certificate and its key");
  refused({"--grpc-client-ca", "/tls/ca.pem"}, {},
          "swl-ratelimit: --grpc-client-ca (GRPC_CLIENT_TLS_CACERT) needs TLS: give --grpc-tls-cert "
          "(GRPC_SERVER_TLS_CERT) and --grpc-tls-key (GRPC_SERVER_TLS_KEY)");
  // envoyproxy/ratelimit would not check the name without a CA; here it is not dropped silently.
  refused({},
          {{"GRPC_SERVER_USE_TLS", "true"},
           {"GRPC_SERVER_TLS_CERT", "/certs/tls.crt"},
           {"GRPC_SERVER_TLS_KEY", "/certs/tls.key"},
           {"GRPC_CLIENT_TLS_SAN", "envoy"}},
          "swl-ratelimit: --grpc-client-san (GRPC_CLIENT_TLS_SAN) needs --grpc-client-ca (GRPC_CLIENT_TLS_CACERT): "
          "a client certificate's name means something only once a CA vouched for it");
  refused({}, {{"GRPC_SERVER_USE_TLS", "true"}},
          "swl-ratelimit: GRPC_SERVER_USE_TLS true: TLS needs a certificate and its key: give GRPC_SERVER_TLS_CERT "
          "and GRPC_SERVER_TLS_KEY");
  CHECK_NOTHROW(settingsOf({}, {{"GRPC_SERVER_USE_TLS", "false"}, {"GRPC_SERVER_TLS_CERT", ""}}));
}

TEST_CASE("swl-ratelimit over TLS answers a client that trusts its CA, with its certificate, and refuses plaintext") {
  const TemporaryDirectory directory;
  TlsServer server(directory, {{"GRPC_SERVER_USE_TLS", "true"},
                               {"GRPC_SERVER_TLS_CERT", path("server.crt")},
                               {"GRPC_SERVER_TLS_KEY", path("server.key")}});
  const auto [status, certificate] = ask(channelTo(server.port(), ""));
  INFO(status.error_message());
  REQUIRE(status.ok());
  CHECK(sameCertificate(certificate, pem("server.crt")));
  CHECK(served(server.port(), "client"));  // a certificate nobody asked for changes nothing
  const auto plaintext = ask(channelTo(server.port(), "", false)).first;
  CHECK(plaintext.error_code() == grpc::StatusCode::UNAVAILABLE);
}

TEST_CASE("swl-ratelimit over mutual TLS, as Envoy Gateway deploys it, serves only clients its CA vouches for") {
  const TemporaryDirectory directory;
  for (const char* name : {"server.crt", "server.key", "ca.crt"}) fs::copy_file(path(name), directory.path() / name);
  fs::rename(directory.path() / "server.crt", directory.path() / "tls.crt");
  fs::rename(directory.path() / "server.key", directory.path() / "tls.key");
  TlsServer server(directory, envoyGateway(directory.path()));
  CHECK(served(server.port(), "client"));
  CHECK_FALSE(served(server.port(), ""));          // no certificate
  CHECK_FALSE(served(server.port(), "stranger"));  // another CA's
  CHECK(ask(channelTo(server.port(), "", false)).first.error_code() == grpc::StatusCode::UNAVAILABLE);
  CHECK(served(server.port(), "client"));  // and the refusals did not hurt the server
}

TEST_CASE("swl-ratelimit with a client SAN serves only client certificates that hold it as a DNS name") {
  const TemporaryDirectory directory;
  TlsServer server(directory, {},
                   {"--grpc-tls-cert", path("server.crt"), "--grpc-tls-key", path("server.key"), "--grpc-client-ca",
                    path("ca.crt"), "--grpc-client-san", "envoy.gateway.test"});
  CHECK(served(server.port(), "client-san"));
  CHECK_FALSE(served(server.port(), "client"));      // the CA's, another name
  CHECK_FALSE(served(server.port(), "client-uri"));  // the name as its URI and subject only
  CHECK_FALSE(served(server.port(), "stranger"));    // the name, another CA's
  CHECK_FALSE(served(server.port(), ""));
  CHECK(swl::test::eventually([&] {
    return server.process().count("refused a client whose certificate does not hold envoy.gateway.test") == 2;
  }));  // the CA's two certificates without the name; gRPC logs the others' refusals itself
}

TEST_CASE(
    "swl-ratelimit serves a certificate rotated on disk to new connections without a restart, and old ones go on") {
  const TemporaryDirectory directory;
  SecretVolume secret(directory.path() / "certs");
  secret.update("server");
  TlsServer server(directory, envoyGateway(secret.root()));
  const auto before = channelTo(server.port(), "client");
  const auto first = ask(before);
  REQUIRE(first.first.ok());
  CHECK(sameCertificate(first.second, pem("server.crt")));
  // A new connection's certificate, within the machine's patience: gRPC reads the files every second.
  const auto newConnectionsSee = [&](const std::string& certificate) {
    return swl::test::eventually([&] {
      const auto [status, seen] = ask(channelTo(server.port(), "client"));
      return status.ok() && sameCertificate(seen, pem(certificate + ".crt"));
    });
  };
  secret.update("server-next");  // the kubelet's swap
  CHECK(newConnectionsSee("server-next"));
  // And a plain rewrite of both files, in place (through the links).
  std::ofstream(secret.root() / "tls.crt") << pem("server-last.crt");
  std::ofstream(secret.root() / "tls.key") << pem("server-last.key");
  CHECK(newConnectionsSee("server-last"));
  // A file gone (an update botched) is logged by gRPC, and the certificate read last is served meanwhile.
  const fs::path key = secret.root() / "tls.key";
  fs::remove(key);
  CHECK(swl::test::eventually(
      [&] { return server.process().output().find("identity_cert_error") != std::string::npos; }));
  CHECK(newConnectionsSee("server-last"));
  fs::create_symlink(fs::path("..data") / "tls.key", key);
  const auto kept = ask(before);
  INFO(kept.first.error_message());
  CHECK(kept.first.ok());
  CHECK(sameCertificate(kept.second, pem("server.crt")));  // the connection made first, as it was made
  CHECK(server.process().count("listening on ") == 1);
}

TEST_CASE("swl-ratelimit stops at start, naming the file, when a TLS file cannot be read or holds the wrong thing") {
  const TemporaryDirectory directory;
  const std::string missing = (directory.path() / "missing.crt").string();
  const std::string garbage = directory.write("garbage.pem", "not a certificate\n").string();
  const auto stops = [&](const std::vector<std::string>& files, const std::string& message) {
    INFO(message);
    CHECK_THROWS_WITH(TlsServer(directory, {}, files), Contains("exited at start") && Contains(message));
  };
  stops({"--grpc-tls-cert", missing, "--grpc-tls-key", path("server.key")},
        "swl-ratelimit: certificate " + missing + ": cannot be read: No such file or directory");
  stops({"--grpc-tls-cert", path("server.key"), "--grpc-tls-key", path("server.key")},
        "swl-ratelimit: certificate " + path("server.key") + ": holds no certificate in PEM");
  stops({"--grpc-tls-cert", path("server.crt"), "--grpc-tls-key", path("server.crt")},
        "swl-ratelimit: key " + path("server.crt") + ": holds no private key in PEM");
  stops({"--grpc-tls-cert", path("server.crt"), "--grpc-tls-key", path("client.key")},
        "swl-ratelimit: key " + path("client.key") + ": is not the key of the certificate " + path("server.crt"));
  stops({"--grpc-tls-cert", path("server.crt"), "--grpc-tls-key", path("server.key"), "--grpc-client-ca", garbage},
        "swl-ratelimit: client CA " + garbage + ": holds no certificate in PEM");
}

TEST_CASE("swl-ratelimit-probe speaks TLS, with a client certificate when the server asks for one") {
  const TemporaryDirectory directory;
  TlsServer server(directory, {},
                   {"--grpc-tls-cert", path("server.crt"), "--grpc-tls-key", path("server.key"), "--grpc-client-ca",
                    path("ca.crt")});
  const std::vector<std::string> client{"--tls-ca",         path("ca.crt"), "--tls-cert",
                                        path("client.crt"), "--tls-key",    path("client.key")};
  const auto [status, output] = probe(directory, server.port(), client);
  INFO(output);
  CHECK(status == 0);
  CHECK_THAT(output, Catch::Matchers::StartsWith("OK"));
  std::vector<std::string> named = client;
  named.insert(named.end(), {"--tls-server-name", "localhost"});
  CHECK(probe(directory, server.port(), named).first == 0);
  const auto [refused, says] = probe(directory, server.port(), {"--tls-ca", path("ca.crt")});
  INFO(says);
  CHECK(refused == 1);
  CHECK_THAT(says, Catch::Matchers::StartsWith("error 14"));  // UNAVAILABLE: no certificate, no connection
}

}  // namespace ratelimit_tls_tests

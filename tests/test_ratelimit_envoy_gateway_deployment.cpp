// swl-ratelimit started as Envoy Gateway starts envoyproxy/ratelimit: with exactly the variables of its
// default deployment (envoyproxy/gateway internal/infrastructure/kubernetes/ratelimit/testdata/deployments/
// default.yaml) and nothing else, the addresses pointed at this test's servers: an xDS server over mutual
// TLS with one certificate for both ends, as Envoy Gateway's Secret holds it; gRPC served over mutual TLS;
// statsd to a UDP socket of the test's (the deployment the issue quotes) or Prometheus (today's). It must
// serve, report ready on /healthcheck, and decide exactly.

#include "support/ratelimit_requests.hpp"
#include "support/ratelimit_server.hpp"
#include "support/redis_server.hpp"
#include "support/statsd_receiver.hpp"
#include "support/tls_redis.hpp"
#include "support/xds_server.hpp"

#include <google/protobuf/text_format.h>
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <utility>

// A namespace of its own: the test files of one program share a translation unit (tests/CMakeLists.txt).
namespace ratelimit_deployment_tests {

namespace rls = envoy::service::ratelimit::v3;
namespace fs = std::filesystem;
using swl::test::RateLimitProcess;
using swl::test::RedisServer;
using swl::test::StatsdReceiver;
using swl::test::TemporaryDirectory;
using swl::test::TestCertificates;
using swl::test::XdsServer;

std::string certificate(const std::string& name) { return TestCertificates::get().path(name); }

// The deployment's /certs: one certificate, its key and the CA, as Envoy Gateway's Secret mounts them.
fs::path certsIn(const TemporaryDirectory& directory) {
  const fs::path certs = directory.path() / "certs";
  fs::create_directories(certs);
  fs::copy_file(certificate("server.crt"), certs / "tls.crt");
  fs::copy_file(certificate("server.key"), certs / "tls.key");
  fs::copy_file(certificate("ca.crt"), certs / "ca.crt");
  return certs;
}

// The variables of Envoy Gateway's default deployment, in its order, `certs` for /certs, the xDS server's,
// Redis's and the listeners' addresses the test's; then `metrics`, the deployment's choice of them.
RateLimitProcess::Environment defaultDeployment(const fs::path& certs, const XdsServer& xds, const RedisServer& redis,
                                                const RateLimitProcess::Environment& metrics) {
  RateLimitProcess::Environment environment{
      {"RUNTIME_ROOT", "/data"},
      {"RUNTIME_SUBDIRECTORY", "ratelimit"},
      {"RUNTIME_IGNOREDOTFILES", "true"},
      {"RUNTIME_WATCH_ROOT", "false"},
      {"LOG_LEVEL", "info"},
      {"CONFIG_TYPE", "GRPC_XDS_SOTW"},
      {"CONFIG_GRPC_XDS_SERVER_URL", xds.address()},  // envoy-gateway:18001
      {"CONFIG_GRPC_XDS_NODE_ID", "envoy-ratelimit"},
      {"GRPC_SERVER_USE_TLS", "true"},
      {"GRPC_SERVER_TLS_CERT", (certs / "tls.crt").string()},
      {"GRPC_SERVER_TLS_KEY", (certs / "tls.key").string()},
      {"GRPC_SERVER_TLS_CA_CERT", (certs / "ca.crt").string()},
      {"CONFIG_GRPC_XDS_SERVER_USE_TLS", "true"},
      {"CONFIG_GRPC_XDS_CLIENT_TLS_CERT", (certs / "tls.crt").string()},
      {"CONFIG_GRPC_XDS_CLIENT_TLS_KEY", (certs / "tls.key").string()},
      {"CONFIG_GRPC_XDS_SERVER_TLS_CACERT", (certs / "ca.crt").string()},
      {"FORCE_START_WITHOUT_INITIAL_CONFIG", "true"},
      {"REDIS_SOCKET_TYPE", "tcp"},
      {"REDIS_URL", "127.0.0.1:" + std::to_string(redis.port())},  // redis.redis.svc:6379
      // The deployment leaves these at envoyproxy's defaults, 0.0.0.0:8081 and :8080: here, free ports.
      {"GRPC_HOST", "127.0.0.1"},
      {"GRPC_PORT", "0"},
      {"HOST", "127.0.0.1"},
      {"PORT", "0"}};
  environment.insert(environment.end(), metrics.begin(), metrics.end());
  return environment;
}

// Domain "shop": a user may make 5 requests a minute, as Envoy Gateway's translator writes a rule.
XdsServer::Resource shopRules() {
  XdsServer::Resource rules;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(
      "name: 'default/eg/http' domain: 'shop' descriptors { key: 'user' rate_limit { unit: MINUTE "
      "requests_per_unit: 5 } }",
      &rules));
  return rules;
}

// A client of the server's gRPC port as Envoy is one under Envoy Gateway: over TLS, with the Secret's
// certificate; without a certificate when `identity` is false.
std::unique_ptr<rls::RateLimitService::Stub> envoyClient(int port, bool identity = true) {
  grpc::SslCredentialsOptions files;
  files.pem_root_certs = swl::test::readFile(certificate("ca.crt"));
  if (identity) {
    files.pem_cert_chain = swl::test::readFile(certificate("client.crt"));
    files.pem_private_key = swl::test::readFile(certificate("client.key"));
  }
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return rls::RateLimitService::NewStub(
      grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), grpc::SslCredentials(files), arguments));
}

// How many of `count` one-hit calls for `user` were admitted; -1 when a call failed.
int admitted(rls::RateLimitService::Stub& client, const std::string& user, int count) {
  int ok = 0;
  for (int i = 0; i < count; ++i) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    rls::RateLimitResponse response;
    const grpc::Status status = client.ShouldRateLimit(&context, swl::test::request({{{"user", user}}}), &response);
    INFO(status.error_message());
    if (!status.ok()) return -1;
    ok += response.overall_code() == rls::RateLimitResponse::OK ? 1 : 0;
  }
  return ok;
}

// The xDS server as Envoy Gateway's is: over TLS with its certificate, only for clients its CA vouches for.
XdsServer::Tls gatewayTls() { return {certificate("server.crt"), certificate("server.key"), certificate("ca.crt")}; }

TEST_CASE("swl-ratelimit serves with Envoy Gateway's default deployment's variables and nothing else (statsd)") {
  TemporaryDirectory directory;
  RedisServer redis;
  XdsServer xds(gatewayTls());
  StatsdReceiver statsd;
  RateLimitProcess server(directory.path() / "server.out", {},
                          defaultDeployment(certsIn(directory), xds, redis,
                                            {{"USE_STATSD", "true"}, {"STATSD_PORT", std::to_string(statsd.port())}}));
  INFO(server.output());
  CHECK(server.http().Get("/healthcheck")->status == 200);  // ready before any configuration came
  const auto client = envoyClient(server.grpcPort());
  CHECK(admitted(*client, "ann", 7) == 7);  // every domain unknown until then

  xds.serve("1", {shopRules()});
  const auto ack = xds.awaitAnswer("1");
  REQUIRE(ack);
  CHECK(ack->node().id() == "envoy-ratelimit");
  CHECK_FALSE(ack->has_error_detail());
  CHECK(admitted(*client, "bob", 7) == 5);
  CHECK(admitted(*envoyClient(server.grpcPort(), false), "bob", 1) == -1);  // mutual TLS: no certificate, no call

  ::kill(server.pid(), SIGTERM);  // statsd's last flush goes as it stops
  CHECK(server.waitForExit(std::chrono::seconds(30)) == 0);
  CHECK(statsd.counted("ratelimit.service.rate_limit.shop.user.total_hits") == 7);
  CHECK(statsd.counted("ratelimit.service.rate_limit.shop.user.over_limit") == 2);
  CHECK(statsd.counted("ratelimit.service.config_load_success") == 1);
}

TEST_CASE("swl-ratelimit serves with Envoy Gateway's default deployment's variables and nothing else (Prometheus)") {
  TemporaryDirectory directory;
  RedisServer redis;
  XdsServer xds(gatewayTls());
  xds.serve("1", {shopRules()});
  RateLimitProcess server(directory.path() / "server.out", {},
                          defaultDeployment(certsIn(directory), xds, redis,
                                            {{"USE_STATSD", "false"},
                                             {"USE_PROMETHEUS", "true"},
                                             {"PROMETHEUS_ADDR", "127.0.0.1:0"},  // :19001
                                             {"PROMETHEUS_MAPPER_YAML", "/etc/statsd-exporter/conf.yaml"}}));
  INFO(server.output());
  REQUIRE(xds.awaitAnswer("1"));
  CHECK(server.http().Get("/healthcheck")->status == 200);
  CHECK(admitted(*envoyClient(server.grpcPort()), "cy", 7) == 5);
  CHECK(server.count("PROMETHEUS_MAPPER_YAML") == 1);  // said at start: our series have names of their own
}

}  // namespace ratelimit_deployment_tests

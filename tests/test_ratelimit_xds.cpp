// swl-ratelimit configured by xDS, as Envoy Gateway configures envoyproxy/ratelimit: CONFIG_TYPE=
// GRPC_XDS_SOTW, the aggregated discovery service's stream, one RateLimitConfig per domain. The resources
// are read by the same rules as a file (their messages naming the resource and the field); against a test
// xDS server (support/xds_server.hpp) and a redis-server, both started here: ACK and NACK with versions
// and nonces, the node and its metadata, a changed configuration, a refused one that changes nothing, a
// stream dropped and a server restarted under load with no call failing, FORCE_START_WITHOUT_INITIAL_CONFIG
// and the wait without it.

#include "support/ratelimit_requests.hpp"
#include "support/ratelimit_server.hpp"
#include "support/redis_server.hpp"
#include "support/xds_server.hpp"

#include <ratelimit/config/error.hpp>
#include <ratelimit/reload/xds/resource.hpp>

#include <google/protobuf/text_format.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace rls = envoy::service::ratelimit::v3;
using swl::test::RateLimitProcess;
using swl::test::RedisServer;
using swl::test::TemporaryDirectory;
using swl::test::XdsServer;
using Resource = XdsServer::Resource;

// A RateLimitConfig from its text format.
Resource resource(const std::string& text) {
  Resource parsed;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(text, &parsed));
  return parsed;
}

// A domain "shop" whose users may make `per_minute` requests a minute.
Resource shop(int per_minute, const std::string& name = "default/eg/shop") {
  return resource("name: '" + name + "' domain: 'shop' descriptors { key: 'user' rate_limit { unit: MINUTE " +
                  "requests_per_unit: " + std::to_string(per_minute) + " } }");
}

// The error `resource` is refused with, read as one domain.
std::string refusal(const Resource& wrong) {
  try {
    swl::ratelimit::xds::domainOf(wrong);
  } catch (const swl::ratelimit::ConfigError& error) {
    return error.what();
  }
  return "";
}

// swl-ratelimit as Envoy Gateway runs it, configured by `xds` and counting in `redis`, with `more`
// variables beside.
RateLimitProcess::Environment xdsEnvironment(const XdsServer& xds, const RedisServer& redis,
                                             RateLimitProcess::Environment more = {}) {
  RateLimitProcess::Environment environment{{"CONFIG_TYPE", "GRPC_XDS_SOTW"},
                                            {"CONFIG_GRPC_XDS_SERVER_URL", xds.address()},
                                            {"CONFIG_GRPC_XDS_NODE_ID", "envoy-ratelimit"},
                                            {"CONFIG_GRPC_XDS_NODE_METADATA", "cluster=eg,zone=a"},
                                            {"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", "x-tenant:eg"},
                                            {"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", "100ms"},
                                            {"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", "100ms"},
                                            {"XDS_CLIENT_BACKOFF_MAX_INTERVAL", "1s"},
                                            {"REDIS_SOCKET_TYPE", "tcp"},
                                            {"REDIS_URL", "127.0.0.1:" + std::to_string(redis.port())},
                                            {"GRPC_HOST", "127.0.0.1"},
                                            {"GRPC_PORT", "0"},
                                            {"HOST", "127.0.0.1"},
                                            {"PORT", "0"}};
  environment.insert(environment.end(), more.begin(), more.end());
  return environment;
}

// How many of `count` calls for user `user` were admitted.
int admitted(RateLimitProcess& server, const std::string& user, int count) {
  int ok = 0;
  for (int i = 0; i < count; ++i) {
    rls::RateLimitResponse response;
    const grpc::Status status = server.callStatus(swl::test::request({{{"user", user}}}), response);
    INFO(status.error_code() << " " << status.error_message());
    REQUIRE(status.ok());
    ok += response.overall_code() == rls::RateLimitResponse::OK ? 1 : 0;
  }
  return ok;
}

}  // namespace

TEST_CASE("an xDS resource is read by a file's rules, and a wrong one is refused naming the resource and the field") {
  const swl::ratelimit::Domain domain = swl::ratelimit::xds::domainOf(
      resource("name: 'r' domain: 'shop' descriptors { key: 'user' value: 'a \"b\"' rate_limit { unit: SECOND "
               "requests_per_unit: 5 name: 'five' replaces { name: 'other' } } shadow_mode: true "
               "metadata { fields { key: 'team' value { string_value: 'x' } } } "
               "descriptors { key: 'path' rate_limit { unlimited: true } } }"));
  CHECK(domain.name == "shop");
  const std::string unknown_unit = refusal(resource(
      "name: 'default/eg/http' domain: 'shop' descriptors { key: 'a' descriptors { key: 'b' rate_limit { unit: "
      "UNKNOWN requests_per_unit: 5 } } }"));
  CHECK_THAT(unknown_unit, Catch::StartsWith("xDS resource \"default/eg/http\", descriptors[0].descriptors[0]."
                                             "rate_limit.unit: "));
  const std::string no_domain = refusal(resource("name: 'x' descriptors { key: 'a' }"));
  CHECK_THAT(no_domain, Catch::StartsWith("xDS resource \"x\", domain: "));
  const std::string twice = refusal(
      resource("name: 'x' domain: 'd' descriptors { key: 'a' value: 'b' } descriptors { key: 'a' value: 'b' }"));
  CHECK_THAT(twice, Catch::Contains("xDS resource \"x\""));

  google::protobuf::RepeatedPtrField<google::protobuf::Any> resources;
  resources.Add()->PackFrom(shop(1, "a"));
  resources.Add()->PackFrom(
      resource("name: 'b' domain: 'shop' descriptors { key: 'team' rate_limit { unit: MINUTE "
               "requests_per_unit: 2 } }"));
  // one domain in two resources: refused, as a domain in two files is, unless merged (MERGE_DOMAIN_CONFIG)
  CHECK_THROWS_WITH(swl::ratelimit::xds::configurationOf(resources, false), Catch::Contains("shop"));
  CHECK(swl::ratelimit::xds::configurationOf(resources, true).domains().size() == 1);
  // merged, a descriptor both give is still given twice
  resources.Add()->PackFrom(shop(2, "c"));
  CHECK_THROWS_WITH(swl::ratelimit::xds::configurationOf(resources, true), Catch::Contains("xDS resource \"c\""));
  resources.RemoveLast();
  resources.Add()->set_type_url("type.googleapis.com/envoy.config.listener.v3.Listener");
  CHECK_THROWS_WITH(swl::ratelimit::xds::configurationOf(resources, true),
                    Catch::Contains("xDS resource #3 is a type.googleapis.com/envoy.config.listener.v3.Listener"));
}

TEST_CASE("swl-ratelimit asks an xDS server for its configuration as its node, ACKs each version and decides by it") {
  TemporaryDirectory directory;
  RedisServer redis;
  XdsServer xds;
  xds.serve("1", {shop(2)});
  RateLimitProcess server(directory.path() / "server.out", {}, xdsEnvironment(xds, redis));
  const auto ack = xds.awaitAnswer("1");
  REQUIRE(ack);
  CHECK(ack->version_info() == "1");
  CHECK_FALSE(ack->has_error_detail());
  const XdsServer::Request first = xds.requests().front();
  CHECK(first.node().id() == "envoy-ratelimit");
  CHECK(first.node().metadata().fields().at("cluster").string_value() == "eg");
  CHECK(first.node().metadata().fields().at("zone").string_value() == "a");
  CHECK(first.node().user_agent_name() == "swl-ratelimit");
  CHECK(first.type_url() == XdsServer::kType);
  CHECK(xds.lastMetadata().find("x-tenant")->second == "eg");
  CHECK(admitted(server, "ann", 3) == 2);

  // A new version, in force once ACKed.
  xds.serve("2", {shop(4)});
  REQUIRE(xds.awaitAnswer("2"));
  CHECK(admitted(server, "bob", 5) == 4);

  // A version that is wrong is refused (NACK, naming why) and changes nothing.
  Resource wrong = shop(100);
  wrong.mutable_descriptors(0)->mutable_rate_limit()->set_unit(::ratelimit::config::ratelimit::v3::UNKNOWN);
  xds.serve("3", {wrong});
  const auto nack = xds.awaitAnswer("3");
  REQUIRE(nack);
  CHECK(nack->version_info() == "2");
  REQUIRE(nack->has_error_detail());
  CHECK_THAT(nack->error_detail().message(),
             Catch::Contains("xDS resource \"default/eg/shop\", descriptors[0].rate_limit.unit"));
  CHECK(admitted(server, "cat", 5) == 4);
  xds.serve("4", {shop(1)}, "type.googleapis.com/envoy.config.cluster.v3.Cluster");
  const auto wrong_type = xds.awaitAnswer("4");
  REQUIRE(wrong_type);
  CHECK(wrong_type->has_error_detail());
  CHECK(admitted(server, "dan", 5) == 4);
}

TEST_CASE(
    "a stream the xDS server ends, and the server's restart under load, fail no call, and the client comes back") {
  TemporaryDirectory directory;
  RedisServer redis;
  XdsServer xds;
  xds.serve("1", {shop(1000000)});
  RateLimitProcess server(directory.path() / "server.out", {}, xdsEnvironment(xds, redis));
  REQUIRE(xds.awaitAnswer("1"));
  std::atomic<bool> calling{true};
  std::atomic<int> calls{0}, failed{0};
  std::thread load([&] {
    while (calling) {
      rls::RateLimitResponse response;
      const grpc::Status status = server.callStatus(swl::test::request({{{"user", "u"}}}), response);
      ++calls;
      if (!status.ok() || response.overall_code() != rls::RateLimitResponse::OK) ++failed;
    }
  });
  xds.endStreams();
  REQUIRE(swl::test::eventually([&] { return xds.streamsOpened() >= 2; }));
  xds.stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // calls go on meanwhile
  xds.start();
  xds.serve("2", {shop(1000000), resource("name: 'default/eg/other' domain: 'other' descriptors { key: 'user' "
                                          "rate_limit { unit: MINUTE requests_per_unit: 7 } }")});
  const auto ack = xds.awaitAnswer("2");
  calling = false;
  load.join();
  REQUIRE(ack);
  INFO(ack->error_detail().message());
  CHECK_FALSE(ack->has_error_detail());
  CHECK(xds.streamsOpened() >= 1);
  INFO(calls << " calls");
  CHECK(calls > 0);
  CHECK(failed == 0);
}

TEST_CASE("FORCE_START_WITHOUT_INITIAL_CONFIG serves at once, every domain unknown, until the xDS server answers") {
  TemporaryDirectory directory;
  RedisServer redis;
  XdsServer xds;  // serves nothing yet
  RateLimitProcess server(directory.path() / "server.out", {},
                          xdsEnvironment(xds, redis, {{"FORCE_START_WITHOUT_INITIAL_CONFIG", "true"}}));
  CHECK(admitted(server, "ann", 3) == 3);  // an unknown domain limits nothing
  CHECK(server.http().Get("/healthcheck")->status == 200);
  xds.serve("1", {shop(1)});
  REQUIRE(xds.awaitAnswer("1"));
  CHECK(admitted(server, "bob", 3) == 1);
}

TEST_CASE(
    "without FORCE_START_WITHOUT_INITIAL_CONFIG the server listens only once the xDS server's configuration came") {
  TemporaryDirectory directory;
  RedisServer redis;
  XdsServer xds;
  const auto log = directory.path() / "server.out";
  // The configuration is served from a thread of the test's once the server waits for it; the server is
  // started from this one (a child dies with the thread that started it).
  std::atomic<bool> waited{false}, listened_before{true};
  std::thread serving([&] {
    waited = swl::test::eventually([&] {
      return swl::test::readFile(log).find("waiting for the configuration") != std::string::npos &&
             xds.streamsOpened() >= 1;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // time to listen, were it to
    listened_before = swl::test::readFile(log).find("listening on") != std::string::npos;
    xds.serve("1", {shop(2)});
  });
  RateLimitProcess server(log, {}, xdsEnvironment(xds, redis));
  serving.join();
  CHECK(waited);
  CHECK_FALSE(listened_before);
  CHECK(admitted(server, "ann", 3) == 2);
}

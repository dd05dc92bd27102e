#pragma once
/// \file
/// swl-ratelimit's HTTP port, as envoyproxy/ratelimit's (HOST:PORT, 8080 by default):
///
///   GET  /healthcheck   200 "OK" while the server serves; 500 once SIGTERM came, or, with
///                       HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED, while the configuration has no domain
///   POST /json          a RateLimitRequest in proto3's JSON; the RateLimitResponse in JSON, with 200 for
///                       OK and 429 for OVER_LIMIT; 400 for a body that is no request, or a request the
///                       service refuses (no domain, say); 503 when deciding fails otherwise (gRPC's
///                       UNAVAILABLE)
///
/// /json decides with the decider and the configuration the gRPC service uses: the same request gets the
/// same answer on either port. The answers are made by functions without I/O (answerHealthCheck,
/// answerJson); HttpEndpoints only serves them, with cpp-httplib.

#include <ratelimit/serve/health.hpp>

#include <swl/connection_options.hpp>
#include <swl/error.hpp>

#include "envoy/service/ratelimit/v3/rls.pb.h"

#include <google/protobuf/util/json_util.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace swl::ratelimit {

/// What the HTTP port answers one request.
struct HttpAnswer {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
};

/// The service as /json asks it: a request's answer, or an exception (InvalidArgument for a request it
/// refuses, another swl::Error when Redis could not decide and no failure mode answered for it).
using DecideRequest = std::function<envoy::service::ratelimit::v3::RateLimitResponse(
    const envoy::service::ratelimit::v3::RateLimitRequest&)>;

/// /healthcheck's answer, as envoyproxy/ratelimit's: "OK", or an empty 500.
inline HttpAnswer answerHealthCheck(const Health& health) {
  if (health.healthy()) return {200, "text/plain", "OK"};
  return {500, "text/plain", ""};
}

/// /json's answer to `body`. protobuf's JSON parser refuses a field the request does not have, as Go's
/// protojson does; the response leaves out the fields that have their default values, as protojson's
/// does (limitRemaining 0, say), and names fields in lowerCamelCase.
inline HttpAnswer answerJson(std::string_view body, const DecideRequest& decide) {
  namespace rls = envoy::service::ratelimit::v3;
  rls::RateLimitRequest request;
  const auto parsed = google::protobuf::util::JsonStringToMessage(std::string(body), &request,
                                                                  google::protobuf::util::JsonParseOptions());
  if (!parsed.ok()) {
    return {400, "text/plain",
            "swl-ratelimit: the body is not a RateLimitRequest in JSON: " + std::string(parsed.message()) + "\n"};
  }
  rls::RateLimitResponse response;
  try {
    response = decide(request);
  } catch (const InvalidArgument& error) {
    return {400, "text/plain", std::string(error.what()) + "\n"};
  } catch (const Error& error) {  // Redis failed, and no failure mode answered for it: gRPC's UNAVAILABLE
    return {503, "text/plain", std::string(error.what()) + "\n"};
  }
  HttpAnswer answer{200, "application/json", ""};
  const auto printed =
      google::protobuf::util::MessageToJsonString(response, &answer.body, google::protobuf::util::JsonPrintOptions());
  if (!printed.ok()) return {500, "text/plain", "swl-ratelimit: " + std::string(printed.message()) + "\n"};
  if (response.overall_code() == rls::RateLimitResponse::OVER_LIMIT) answer.status = 429;
  if (response.overall_code() == rls::RateLimitResponse::UNKNOWN) answer.status = 500;
  return answer;
}

/// The HTTP port, served by cpp-httplib's threads from the moment it is made until it is destroyed.
class HttpEndpoints {
 public:
  /// Listens on `listen`'s host and port (port 0 for any free one; settings/address.hpp reads HOST:PORT);
  /// `health` and `decide` must outlive it. Throws swl::Error when it cannot listen.
  HttpEndpoints(const Address& listen, const Health& health, DecideRequest decide)
      : health_(&health), decide_(std::move(decide)) {
    server_.Get("/healthcheck", [this](const httplib::Request&, httplib::Response& response) {
      reply(answerHealthCheck(*health_), response);
    });
    server_.Post("/json", [this](const httplib::Request& request, httplib::Response& response) {
      reply(answerJson(request.body, decide_), response);
    });
    // envoyproxy/ratelimit's /json takes any method; a GET has no body, and is answered as one without.
    server_.Get("/json", [this](const httplib::Request&, httplib::Response& response) {
      reply(answerJson("", decide_), response);
    });
    port_ = listen.port == 0 ? server_.bind_to_any_port(listen.host)
                             : (server_.bind_to_port(listen.host, listen.port) ? listen.port : -1);
    if (port_ <= 0) throw Error("swl-ratelimit: cannot listen on " + listen.endpoint() + " for HTTP");
    thread_ = std::thread([this] {
      server_.listen_after_bind();
      returned_ = true;
    });
    // stop() stops a server that runs, and nothing else: the destructor's must not come before it runs.
    while (!server_.is_running() && !returned_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (returned_) {
      thread_.join();
      throw Error("swl-ratelimit: cannot serve HTTP on " + listen.endpoint());
    }
  }

  /// Stops listening; the requests in progress are answered first.
  ~HttpEndpoints() {
    server_.stop();
    thread_.join();
  }

  HttpEndpoints(const HttpEndpoints&) = delete;
  HttpEndpoints& operator=(const HttpEndpoints&) = delete;

  /// The port it listens on (the one chosen, for port 0).
  int port() const noexcept { return port_; }

 private:
  static void reply(const HttpAnswer& answer, httplib::Response& response) {
    response.status = answer.status;
    response.set_content(answer.body, answer.content_type.c_str());
  }

  const Health* health_;
  DecideRequest decide_;
  httplib::Server server_;
  int port_ = 0;
  std::atomic<bool> returned_{false};  // listen_after_bind returned
  std::thread thread_;
};

}  // namespace swl::ratelimit

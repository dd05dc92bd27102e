// End to end: examples/http_service (its path in SWL_HTTP_SERVICE) in front of a private redis-server,
// asked by a real HTTP client. Asserts the exact status sequence and header values, and the header
// formats on their own.

#include <swl/calendar.hpp>
#include <swl/integrations/http_headers.hpp>
#include <swl/swl.hpp>

#include "support/example_service.hpp"
#include "support/redis_server.hpp"

#include <httplib.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::RedisServer;

namespace {

// The service in front of `redis`, started with `flags`.
class HttpService {
 public:
  HttpService(const RedisServer& redis, std::vector<std::string> flags)
      : service_("SWL_HTTP_SERVICE", redis, std::move(flags), [](int port) {
          return static_cast<bool>(httplib::Client("127.0.0.1", port).Get("/listening"));  // even 404: it serves
        }) {}

  httplib::Result get(const std::string& path, const httplib::Headers& headers = {}) {
    httplib::Client client("127.0.0.1", service_.port());
    return client.Get(path.c_str(), headers);
  }

 private:
  swl::test::ExampleService service_;
};

}  // namespace

TEST_CASE("the HTTP service answers a burst with exact statuses, Retry-After and RateLimit headers") {
  RedisServer redis;
  HttpService service(redis, {"--client-limit", "6", "--route-limit", "4", "--window-s", "10", "--x-headers"});
  // The probe's 404 took one unit from the client and from its own route.

  struct Expected {
    std::string path;
    int status;
    std::string rate_limit;
    std::string body;
  };
  const std::vector<Expected> expected{
      {"/hello", 200, R"("client";r=4;t=10, "route";r=3;t=10)", "hello\n"},
      {"/hello", 200, R"("client";r=3;t=10, "route";r=2;t=10)", "hello\n"},
      {"/hello", 200, R"("client";r=2;t=10, "route";r=1;t=10)", "hello\n"},
      {"/hello", 200, R"("client";r=1;t=10, "route";r=0;t=10)", "hello\n"},
      // The route refuses; the client pays nothing.
      {"/hello", 429, R"("client";r=1;t=10, "route";r=0;t=10)", "too many requests (route limit)\n"},
      {"/search?q=swl", 200, R"("client";r=0;t=10, "route";r=3;t=10)", "results for swl\n"},
      // Now the client refuses.
      {"/search?q=swl", 429, R"("client";r=0;t=10, "route";r=3;t=10)", "too many requests (client limit)\n"},
  };
  for (const Expected& request : expected) {
    INFO("GET " << request.path);
    const httplib::Result response = service.get(request.path);
    REQUIRE(response);
    CHECK(response->status == request.status);
    CHECK(response->body == request.body);
    CHECK(response->get_header_value("RateLimit-Policy") == R"("client";q=6;w=10, "route";q=4;w=10)");
    CHECK(response->get_header_value("RateLimit") == request.rate_limit);
    if (request.status == 429) {
      CHECK(response->get_header_value("Retry-After") == "10");
    } else {
      CHECK_FALSE(response->has_header("Retry-After"));
    }
    CHECK(response->get_header_value("X-RateLimit-Limit") == (request.path == "/hello" ? "4" : "6"));
    CHECK(response->get_header_value("X-RateLimit-Reset") == "10");
  }
}

TEST_CASE("the HTTP service keeps serving while Redis is down, without rate-limit headers it cannot vouch for") {
  RedisServer redis;
  HttpService service(redis, {"--client-limit", "1"});
  redis.stop();
  for (int i = 0; i < 3; ++i) {
    const httplib::Result response = service.get("/hello");
    REQUIRE(response);
    CHECK(response->status == 200);
    CHECK(response->body == "hello\n");
    CHECK_FALSE(response->has_header("RateLimit"));
  }
}

TEST_CASE("the HTTP service limits each client by the plan its X-Plan header names, and refuses an unknown plan") {
  RedisServer redis;
  HttpService service(redis, {"--client-limit", "2", "--route-limit", "100", "--plan", "pro=5", "--plan", "free=2"});
  // The probe's request took one unit from 127.0.0.1 under the default plan (its own route).
  const httplib::Headers pro{{"X-Plan", "pro"}};
  std::vector<int> statuses;
  for (int i = 0; i < 5; ++i) statuses.push_back(service.get("/hello", pro)->status);
  CHECK(statuses == std::vector<int>{200, 200, 200, 200, 429});
  const httplib::Result refused = service.get("/hello", pro);
  CHECK(refused->get_header_value("RateLimit-Policy") == R"("client";q=5;w=10, "route";q=100;w=10)");
  // The same client under the free plan: its window already holds five.
  CHECK(service.get("/hello", {{"X-Plan", "free"}})->status == 429);
  CHECK(service.get("/hello", {{"X-Plan", "platinum"}})->status == 400);
}

TEST_CASE("the HTTP service lets an allowed route through unlimited, and refuses a denied client without Redis") {
  RedisServer redis;
  HttpService allowing(redis, {"--client-limit", "2", "--route-limit", "100", "--allow", "GET /hello"});
  for (int i = 0; i < 6; ++i) {
    const httplib::Result response = allowing.get("/hello");
    REQUIRE(response);
    CHECK(response->status == 200);
    CHECK_FALSE(response->has_header("RateLimit"));  // nothing was counted: no numbers to vouch for
  }
  // The probe took one of 127.0.0.1's two; /hello took none.
  CHECK(allowing.get("/search")->status == 200);
  CHECK(allowing.get("/search")->status == 429);

  HttpService denying(redis, {"--window-s", "10", "--deny", "127.0.0.1"});
  redis.stop();  // unlisted requests would now be served unlimited (the service fails open)
  const httplib::Result refused = denying.get("/hello");
  REQUIRE(refused);
  CHECK(refused->status == 429);
  CHECK(refused->get_header_value("Retry-After") == "10");
  CHECK(refused->body == "too many requests (client limit)\n");
}

TEST_CASE("the HTTP service's daily plan refuses a client until local midnight in its zone") {
  RedisServer redis;
  HttpService service(redis,
                      {"--client-limit", "100", "--route-limit", "100", "--daily", "3", "--zone", "Pacific/Auckland"});
  // The probe took one of the day's three.
  const httplib::Result first = service.get("/hello");
  REQUIRE(first);
  CHECK(first->status == 200);
  CHECK(first->get_header_value("RateLimit-Policy") == R"("client";q=100;w=10, "route";q=100;w=10, "day";q=3;w=86400)");
  CHECK(service.get("/hello")->status == 200);
  const auto now = std::chrono::system_clock::now();
  const httplib::Result refused = service.get("/search");
  REQUIRE(refused);
  CHECK(refused->status == 429);
  CHECK(refused->body == "too many requests (day limit)\n");
  // Retry-After: the seconds left until midnight in Auckland, whatever this machine's zone.
  const swl::Period today = swl::CalendarPeriods::days(1, "Pacific/Auckland")
                                .at(std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()));
  const long long until_midnight =
      std::chrono::ceil<std::chrono::seconds>(
          today.end - std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()))
          .count();
  const long long retry_after = std::stoll(refused->get_header_value("Retry-After"));
  CHECK(retry_after <= until_midnight);
  CHECK(retry_after >= until_midnight - 5);
  // The client's sliding windows paid nothing for the refusal.
  CHECK(refused->get_header_value("RateLimit").find(R"("client";r=97;)") != std::string::npos);
}

TEST_CASE("in shadow mode the HTTP service refuses nothing and marks what it would have refused") {
  RedisServer redis;
  HttpService service(redis, {"--client-limit", "3", "--route-limit", "100", "--shadow"});
  std::vector<std::string> marks;
  for (int i = 0; i < 4; ++i) {
    const httplib::Result response = service.get("/hello");
    CHECK(response->status == 200);
    marks.push_back(response->get_header_value("X-RateLimit-Shadow"));
  }
  // The probe took one unit: two more fit, then the limit would refuse.
  CHECK(marks == std::vector<std::string>{"", "", "refused", "refused"});
}

TEST_CASE("the header values: delays in whole seconds rounded up, names as quoted structured strings") {
  swl::Decision refused;
  refused.retry_after = 1'000'001us;
  refused.reset_after = 2500ms;
  refused.remaining = 0;
  CHECK(swl::retryAfterValue(refused) == "2");
  refused.retry_after = 10us;
  CHECK(swl::retryAfterValue(refused) == "1");

  const std::vector<swl::PolicyReport> policies{{"per \"user\"", swl::Limit{100, 1500ms}, refused},
                                                {"day", swl::Limit{1000, std::chrono::hours(24)}, swl::Decision{}}};
  CHECK(swl::rateLimitPolicyValue(policies) == R"("per \"user\"";q=100;w=2, "day";q=1000;w=86400)");
  CHECK(swl::rateLimitValue(policies) == R"("per \"user\"";r=0;t=3, "day";r=0;t=0)");
  CHECK_THROWS_AS(swl::rateLimitValue({{"caf\xc3\xa9", swl::Limit{1, 1s}, refused}}), swl::InvalidArgument);

  // One policy needs no vector.
  const swl::PolicyReport api{"api", swl::Limit{100, 60s}, refused};
  CHECK(swl::rateLimitPolicyValue(api) == R"("api";q=100;w=60)");
  CHECK(swl::rateLimitValue(api) == R"("api";r=0;t=3)");
}

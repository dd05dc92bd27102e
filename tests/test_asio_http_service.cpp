// End to end: examples/asio_http_service (its path in SWL_ASIO_HTTP_SERVICE; Boost.Beast, coroutines,
// swl's Asio limiter) in front of a private redis-server, asked by a real HTTP client.

#include "support/example_service.hpp"

#include <httplib.h>
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using swl::test::RedisServer;

namespace {

// The service in front of `redis`, started with `flags`; it serves once it accepts a connection (nothing is
// asked, so nothing is counted).
class AsioHttpService {
 public:
  AsioHttpService(const RedisServer& redis, std::vector<std::string> flags)
      : service_("SWL_ASIO_HTTP_SERVICE", redis, std::move(flags), accepts) {}

  httplib::Result get(const std::string& path) {
    httplib::Client client("127.0.0.1", service_.port());
    client.set_read_timeout(10, 0);
    return client.Get(path.c_str());
  }

 private:
  static bool accepts(int port) {
    const int socket_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool connected = ::connect(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    ::close(socket_fd);
    return connected;
  }

  swl::test::ExampleService service_;
};

}  // namespace

TEST_CASE("the Asio HTTP service answers a burst with exact statuses, Retry-After and RateLimit headers") {
  RedisServer redis;
  AsioHttpService service(redis, {"--limit", "3", "--window-s", "10", "--threads", "2"});
  for (int request = 1; request <= 5; ++request) {
    INFO("request " << request);
    const httplib::Result response = service.get("/hello");
    REQUIRE(response);
    CHECK(response->get_header_value("RateLimit-Policy") == R"("client";q=3;w=10)");
    CHECK(response->get_header_value("X-RateLimit-Tier") == "redis");
    if (request <= 3) {
      CHECK(response->status == 200);
      CHECK(response->body == "hello\n");
      CHECK(response->get_header_value("RateLimit") == "\"client\";r=" + std::to_string(3 - request) + ";t=10");
      CHECK_FALSE(response->has_header("Retry-After"));
    } else {
      CHECK(response->status == 429);
      CHECK(response->get_header_value("Retry-After") == "10");
      CHECK(response->get_header_value("RateLimit") == R"("client";r=0;t=10)");
    }
  }
}

TEST_CASE("the Asio HTTP service serves by its failure policy while Redis is stopped, within the call's deadline") {
  RedisServer redis;
  AsioHttpService service(redis, {"--limit", "3", "--window-s", "10"});
  REQUIRE(service.get("/hello"));  // connected, the script loaded
  redis.pause();
  const auto started = std::chrono::steady_clock::now();
  const httplib::Result response = service.get("/hello");
  const auto took = std::chrono::steady_clock::now() - started;
  redis.resume();
  REQUIRE(response);
  CHECK(response->status == 200);
  CHECK(response->get_header_value("X-RateLimit-Tier") == "fail_open");
  CHECK(took < 3s);  // swl's default deadline is 50 ms; a loaded machine is slower, never seconds
}

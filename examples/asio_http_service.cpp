// An HTTP service on Boost.Beast with C++20 coroutines, behind swl's Asio limiter: every request is
// limited per client address, awaited on the server's own event loop (no thread waits on Redis). A
// refused request gets 429 with Retry-After; every limited response carries the IETF RateLimit-Policy
// and RateLimit fields.
//
//   asio_http_service --redis-port 6379 --port 8080 [--limit 5] [--window-s 10] [--threads 1]
//
// When Redis cannot answer within the call's deadline (swl's default command_timeout), the request is
// served (FailurePolicy::allow) and says so in "X-RateLimit-Tier: fail_open". It prints
// "listening on 127.0.0.1:PORT" once it serves, and runs until SIGINT or SIGTERM.

#include <swl/asio/limiter.hpp>
#include <swl/integrations/http_headers.hpp>
#include <swl/swl.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

struct Settings {
  int redis_port = 6379;
  int port = 8080;
  long limit = 5;
  long window_seconds = 10;
  int threads = 1;
};

Settings parse(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const long value = std::atol(argv[i + 1]);
    if (flag == "--redis-port") {
      settings.redis_port = static_cast<int>(value);
    } else if (flag == "--port") {
      settings.port = static_cast<int>(value);
    } else if (flag == "--limit") {
      settings.limit = value;
    } else if (flag == "--window-s") {
      settings.window_seconds = value;
    } else if (flag == "--threads") {
      settings.threads = static_cast<int>(value);
    } else {
      throw std::invalid_argument("unknown flag " + std::string(flag));
    }
  }
  return settings;
}

using Limiter = swl::AsioSlidingWindowLimiter<>;

// One request's answer: 200, or 429 with Retry-After, with the RateLimit fields either way.
http::response<http::string_body> answer(const http::request<http::string_body>& request, const Limiter& limiter,
                                         const swl::Decision& decision) {
  http::response<http::string_body> response(decision ? http::status::ok : http::status::too_many_requests,
                                             request.version());
  response.set(http::field::content_type, "text/plain");
  const swl::PolicyReport policy{"client", limiter.limit(), decision};
  response.set("RateLimit-Policy", swl::rateLimitPolicyValue(policy));
  response.set("RateLimit", swl::rateLimitValue(policy));
  response.set("X-RateLimit-Tier", std::string(swl::toString(decision.tier)));
  if (decision) {
    response.body() = "hello\n";
  } else {
    response.set(http::field::retry_after, swl::retryAfterValue(decision));
    response.body() = "too many requests\n";
  }
  response.keep_alive(request.keep_alive());
  response.prepare_payload();
  return response;
}

// One client's connection: each request awaits its decision, then its answer.
asio::awaitable<void> serve(tcp::socket socket, Limiter& limiter) {
  const std::string client = socket.remote_endpoint().address().to_string();
  boost::beast::flat_buffer buffer;
  try {
    for (;;) {
      http::request<http::string_body> request;
      co_await http::async_read(socket, buffer, request, asio::use_awaitable);
      const swl::Decision decision = co_await limiter.async_try_acquire(client);
      const auto response = answer(request, limiter, decision);
      co_await http::async_write(socket, response, asio::use_awaitable);
      if (!response.keep_alive()) break;
    }
  } catch (const boost::system::system_error&) {
    // the client went away
  }
  boost::system::error_code ignored;
  socket.shutdown(tcp::socket::shutdown_send, ignored);
}

asio::awaitable<void> listen(tcp::acceptor& acceptor, Limiter& limiter) {
  for (;;) {
    tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
    asio::co_spawn(acceptor.get_executor(), serve(std::move(socket), limiter), asio::detached);
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Settings settings = parse(argc, argv);
    asio::io_context io(settings.threads);
    auto redis = swl::AsioConnection::tcp(io.get_executor(), "127.0.0.1", settings.redis_port);
    swl::LimiterOptions options;
    options.on_failure = swl::FailurePolicy::allow;
    Limiter limiter(redis, swl::Limit{settings.limit, std::chrono::seconds(settings.window_seconds)}, options);

    tcp::acceptor acceptor(
        io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(settings.port)));
    asio::co_spawn(io, listen(acceptor, limiter), asio::detached);
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code&, int) {
      acceptor.close();
      redis.close();
      io.stop();
    });
    std::cout << "listening on 127.0.0.1:" << acceptor.local_endpoint().port() << std::endl;

    std::vector<std::thread> more;
    for (int i = 1; i < settings.threads; ++i) more.emplace_back([&] { io.run(); });
    io.run();
    for (std::thread& thread : more) thread.join();
  } catch (const std::exception& error) {
    std::cerr << "asio_http_service: " << error.what() << "\n";
    return 1;
  }
}

// A user's Asio program: it compiles against swl::asio (found through find_package(swl COMPONENTS asio)).
#include <swl/asio/limiter.hpp>

#include <iostream>

int main() {
  swl::asio::io_context io;
  int status = 1;
  auto redis = swl::AsioConnection::tcp(io.get_executor(), "127.0.0.1", 1);  // nothing listens on port 1
  swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{5, std::chrono::seconds(1)});
  limiter.async_try_acquire("k", 1, [&](swl::asio_error_code error, swl::Decision) {
    std::cout << "asio consumer ok: " << (error == swl::AsioErrc::connection ? "failed as expected" : "decided")
              << "\n";
    status = error == swl::AsioErrc::connection ? 0 : 1;
    redis.close();
  });
  io.run();
  return status;
}

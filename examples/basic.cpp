// The everyday use of swl: one limiter in front of a handler, answering "serve" or "429, come back in t".
//
//   basic [host] [port]        (default 127.0.0.1 6379)
//
// Sends 8 requests for one user against a limit of 5 per 2 seconds, then waits out the retry_after of
// the first rejection and shows that the next request is admitted.

#include <swl/swl.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

namespace {

void report(int request, const swl::Decision& decision) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  std::cout << "request " << request << ": ";
  if (decision.allowed) {
    std::cout << "200 served    remaining=" << decision.remaining;
  } else {
    std::cout << "429 rejected  remaining=" << decision.remaining
              << "  retry_after=" << duration_cast<milliseconds>(decision.retry_after).count() << "ms"
              << "  (Retry-After: " << std::chrono::ceil<std::chrono::seconds>(decision.retry_after).count() << ")";
  }
  std::cout << "  reset_after=" << duration_cast<milliseconds>(decision.reset_after).count() << "ms\n";
}

}  // namespace

int main(int argc, char* argv[]) {
  const std::string host = argc > 1 ? argv[1] : "127.0.0.1";
  const int port = argc > 2 ? std::atoi(argv[2]) : 6379;

  try {
    auto connection = swl::Connection::tcp(host, port);
    swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{5, std::chrono::seconds(2)});
    std::cout << "limit: 5 requests per 2 s for key user:42 (redis at " << connection.endpoint() << ")\n";

    swl::Decision last;
    for (int request = 1; request <= 8; ++request) {
      last = limiter.tryAcquire("user:42");
      report(request, last);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }

    std::cout << "waiting retry_after, until the oldest request leaves the window...\n";
    std::this_thread::sleep_for(last.retry_after);
    report(9, limiter.tryAcquire("user:42"));
  } catch (const swl::Error& error) {
    std::cerr << "swl error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}

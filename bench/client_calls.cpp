// The client's side of warm decisions: `calls` SlidingWindowLimiter<>::tryAcquire calls on one
// Connection, inside decideAll(), which bench/client_instructions.sh has callgrind count alone (the
// connect and the first, script-loading call stay outside it). Keys cycle over 1,000, so every call is
// admitted or refused by the log's fast path, as a busy service's are.
#include <swl/swl.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {

__attribute__((noinline)) long decideAll(swl::SlidingWindowLimiter<>& limiter, const std::vector<std::string>& keys,
                                         long calls) {
  long admitted = 0;
  for (long i = 0; i < calls; ++i) admitted += limiter.tryAcquire(keys[i % keys.size()]).allowed ? 1 : 0;
  return admitted;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: client_calls PORT CALLS\n");
    return 2;
  }
  swl::ConnectionOptions patient;  // callgrind runs the client some 50 times slower
  patient.command_timeout = std::chrono::seconds(10);
  swl::Connection connection = swl::Connection::tcp("127.0.0.1", std::stoi(argv[1]), patient);
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{100, std::chrono::seconds(60)});
  std::vector<std::string> keys;
  for (int i = 0; i < 1000; ++i) keys.push_back("client:" + std::to_string(i));
  limiter.tryAcquire(keys[0]);  // loads the script
  std::printf("%ld admitted\n", decideAll(limiter, keys, std::stol(argv[2])));
  return 0;
}

#pragma once
// An example service program for an end-to-end test: its path in an environment variable CMake sets
// (SWL_HTTP_SERVICE, ...), started on a free loopback port in front of a private redis-server, and
// stopped by its pid (see ChildProcess).

#include "child_process.hpp"
#include "redis_server.hpp"

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace swl::test {

class ExampleService {
 public:
  // Runs $`path_variable` --redis-port R --port P `flags`..., and returns once `serves(P)` says it serves;
  // throws when the variable is not set, or the program exits or does not serve within 10 s.
  template <class Serves>
  ExampleService(const char* path_variable, const RedisServer& redis, std::vector<std::string> flags, Serves serves)
      : port_(RedisServer::freeLoopbackPort()) {
    const char* path = std::getenv(path_variable);
    if (path == nullptr) throw std::runtime_error(std::string(path_variable) + " is not set (CMake sets it)");
    std::vector<std::string> arguments{path, "--redis-port", std::to_string(redis.port()), "--port",
                                       std::to_string(port_)};
    arguments.insert(arguments.end(), flags.begin(), flags.end());
    process_.start(std::move(arguments));
    const auto give_up_at = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!serves(port_)) {
      if (!process_.alive()) throw std::runtime_error(std::string(path) + " exited at start");
      if (std::chrono::steady_clock::now() > give_up_at) throw std::runtime_error(std::string(path) + " did not serve");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  int port() const noexcept { return port_; }
  ChildProcess& process() noexcept { return process_; }

 private:
  int port_;
  ChildProcess process_;
};

}  // namespace swl::test

#pragma once
// swl-ratelimit, the program CMake built (SWL_RATELIMIT_SERVER), started by a test with the arguments
// and the environment it chooses, and called as Envoy calls it (gRPC) and as envoyproxy/ratelimit's HTTP
// clients do (/healthcheck, /json); and a directory of its own for the test's files.

#include "child_process.hpp"
#include "files.hpp"

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace swl::test {

// A directory of its own for one test's files, removed after it.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    static std::atomic<int> made{0};
    path_ = std::filesystem::temp_directory_path() /
            ("swl-ratelimit-test-" + std::to_string(::getpid()) + "-" + std::to_string(++made));
    std::filesystem::create_directories(path_);
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Writes `text` to `name` (a path under the directory; its directories are made).
  std::filesystem::path write(const std::filesystem::path& name, const std::string& text) const {
    std::filesystem::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name) << text;
    return path_ / name;
  }

 private:
  std::filesystem::path path_;
};

// Asks `done` every few milliseconds until it holds or `patience` has passed: whether it held. Tests wait
// with this, never with a fixed sleep, so that a loaded machine only makes them slower.
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds patience = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The swl-ratelimit program, started with `arguments` after its name and with `environment` as its
// whole environment (nothing of the test's, unless `inherit`, then added to it), its log written to
// `log_file`. It is ready once its log says "listening on HOST:PORT,": the last line of its start.
class RateLimitProcess {
 public:
  using Environment = std::vector<std::pair<std::string, std::string>>;
  enum class Inherit { nothing, the_tests_environment };

  RateLimitProcess(const std::filesystem::path& log_file, const std::vector<std::string>& arguments,
                   const Environment& environment, Inherit inherit = Inherit::nothing)
      : output_(log_file) {
    const char* program = std::getenv("SWL_RATELIMIT_SERVER");
    if (program == nullptr) throw std::runtime_error("SWL_RATELIMIT_SERVER is not set (CMake sets it)");
    std::vector<std::string> command{"env"};
    if (inherit == Inherit::nothing) command.push_back("-i");
    for (const auto& [name, value] : environment) command.push_back(name + "=" + value);
    command.push_back(program);
    command.insert(command.end(), arguments.begin(), arguments.end());
    process_.start(command, output_.string(), ChildProcess::Errors::with_output);
    const std::string ready = "listening on ";
    const bool started = eventually([&] {
      const std::string text = this->output();
      const auto at = text.find(ready);
      if (at != std::string::npos && text.find(',', at) != std::string::npos) {
        grpc_port_ = portIn(text.substr(at + ready.size(), text.find(',', at) - at - ready.size()));
        return true;
      }
      if (!process_.alive()) throw std::runtime_error("swl-ratelimit exited at start: " + text);
      return false;
    });
    if (!started) throw std::runtime_error("swl-ratelimit did not start: " + output());
    const std::string text = output();
    const std::string http = "(/healthcheck, /json) on ";
    if (const auto at = text.find(http); at != std::string::npos) {
      http_port_ = portIn(text.substr(at + http.size(), text.find('\n', at) - at - http.size()));
    }
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port_), grpc::InsecureChannelCredentials());
    stub_ = envoy::service::ratelimit::v3::RateLimitService::NewStub(channel_);
  }

  // One ShouldRateLimit call, as Envoy makes it.
  grpc::Status callStatus(const envoy::service::ratelimit::v3::RateLimitRequest& request,
                          envoy::service::ratelimit::v3::RateLimitResponse& response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return stub_->ShouldRateLimit(&context, request, &response);
  }

  // A client of its HTTP port, on 127.0.0.1.
  httplib::Client http() const {
    if (http_port_ == 0) throw std::runtime_error("swl-ratelimit serves no HTTP: " + output());
    httplib::Client client("127.0.0.1", http_port_);
    client.set_read_timeout(std::chrono::seconds(20));
    return client;
  }

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  int grpcPort() const { return grpc_port_; }
  int httpPort() const { return http_port_; }
  std::string output() const { return readFile(output_); }

  // How many times its log says `mark`.
  int count(const std::string& mark) const {
    const std::string text = output();
    int found = 0;
    for (auto at = text.find(mark); at != std::string::npos; at = text.find(mark, at + 1)) ++found;
    return found;
  }

  pid_t pid() const { return process_.pid(); }

  // Its exit status once it has exited by itself within `patience` (-1 if it had to be stopped).
  int waitForExit(std::chrono::milliseconds patience) { return process_.waitForExit(patience); }

 private:
  // The port of "HOST:PORT", "[V6]:PORT".
  static int portIn(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

  std::filesystem::path output_;
  ChildProcess process_;
  int grpc_port_ = 0;
  int http_port_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<envoy::service::ratelimit::v3::RateLimitService::Stub> stub_;
};

}  // namespace swl::test

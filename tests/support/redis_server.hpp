#pragma once
// A private redis-server for one test: started on a free loopback port (never 6379), with no
// persistence, and stopped by its pid. Nothing else on the machine is touched. The server gets
// SIGKILL if the thread that started it dies, so a crashed test leaves no server behind.

#include <swl/connection.hpp>
#include <swl/error.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace swl::test {

class RedisServer {
 public:
  explicit RedisServer(std::vector<std::string> extra_arguments = {})
      : port_(freeLoopbackPort()), extra_arguments_(std::move(extra_arguments)) {
    // Another process may take the free port before the server binds it: then try another.
    for (int attempt = 1;; ++attempt) {
      try {
        start();
        return;
      } catch (const std::runtime_error&) {
        if (attempt == 3) throw;
        port_ = freeLoopbackPort();
      }
    }
  }
  // On a port the caller chose (a cluster node needs its bus port beside it): no second attempt.
  RedisServer(int port, std::vector<std::string> extra_arguments)
      : port_(port), extra_arguments_(std::move(extra_arguments)) {
    start();
  }
  ~RedisServer() { stop(); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

  // Starts (again) on the same port, with an empty dataset and script cache.
  void start() {
    if (running()) return;
    std::vector<std::string> arguments{
        "redis-server", "--port", std::to_string(port_), "--bind",  "127.0.0.1", "--save", "", "--appendonly", "no",
        "--daemonize",  "no",     "--loglevel",          "warning", "--logfile", ""};
    arguments.insert(arguments.end(), extra_arguments_.begin(), extra_arguments_.end());
    std::vector<char*> argv;
    for (std::string& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);

    pid_ = ::fork();
    if (pid_ < 0) {
      pid_ = 0;
      throw std::runtime_error("cannot fork to start redis-server");
    }
    if (pid_ == 0) {
      // Only async-signal-safe calls until exec. The server dies with the test even if the test crashes.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int null_fd = ::open("/dev/null", O_WRONLY);
      if (null_fd >= 0) ::dup2(null_fd, STDOUT_FILENO);
      ::execvp("redis-server", argv.data());
      ::_exit(127);
    }
    waitUntilReady();
  }

  // SIGTERM, then SIGKILL if it lingers; always reaped.
  void stop() {
    if (!running()) return;
    ::kill(pid_, SIGCONT);  // a paused server cannot act on SIGTERM
    ::kill(pid_, SIGTERM);
    for (int waited_ms = 0; waited_ms < 5000; waited_ms += 10) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = 0;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }

  // A crash: no chance to answer what it has read, connections reset.
  void kill() {
    if (!running()) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }

  void pause() { ::kill(pid_, SIGSTOP); }
  void resume() { ::kill(pid_, SIGCONT); }

  swl::Connection connect(swl::ConnectionOptions options = {}) const {
    return swl::Connection::tcp("127.0.0.1", port_, std::move(options));
  }

  static int freeLoopbackPort() {
    const int socket_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof address;
    if (::bind(socket_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(socket_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ::close(socket_fd);
      throw std::runtime_error("cannot find a free loopback port");
    }
    ::close(socket_fd);
    return ntohs(address.sin_port);
  }

 private:
  void waitUntilReady() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = 0;
        throw std::runtime_error("redis-server exited at start on port " + std::to_string(port_) +
                                 " (is it installed? is the port taken?)");
      }
      try {
        swl::ConnectionOptions options;
        options.reconnect_interval = std::chrono::milliseconds(0);
        connect(options).ping();
        return;
      } catch (const swl::ReplyError&) {
        return;  // it answers (NOAUTH, say): ready
      } catch (const swl::ConnectionError&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    stop();
    throw std::runtime_error("redis-server did not answer on port " + std::to_string(port_));
  }

  int port_;
  std::vector<std::string> extra_arguments_;
  pid_t pid_ = 0;
};

}  // namespace swl::test

#pragma once
// A private redis-server for one test: started on a free loopback port (never 6379), with no
// persistence, and stopped by its pid (see ChildProcess). Nothing else on the machine is touched.

#include <swl/error.hpp>
#include <swl/redis/connection.hpp>

#include "child_process.hpp"

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

// "127.0.0.1:port", as Cluster and Sentinel name a loopback server.
inline std::string endpoint(int port) { return "127.0.0.1:" + std::to_string(port); }

// Generous timeouts and no circuit breaker: what test connections use unless a test is about those.
inline swl::ConnectionOptions patient() {
  swl::ConnectionOptions options;
  options.connect_timeout = std::chrono::seconds(5);
  options.command_timeout = std::chrono::seconds(5);
  options.breaker_cooldown = std::chrono::milliseconds(0);
  return options;
}

// Waits until a blocking connection that answered just now has been idle past `options`'
// idle_check_after: its next command then first asks whether the server closed it (a connection answered
// more recently sends at once, and fails the call that finds it closed).
inline void idlePastCheck(const swl::ConnectionOptions& options = {}) {
  std::this_thread::sleep_for(options.idle_check_after + std::chrono::milliseconds(20));
}

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
  pid_t pid() const { return process_.pid(); }
  bool running() const { return process_.running(); }

  // Starts (again) on the same port, with an empty dataset and script cache.
  void start() {
    if (running()) return;
    std::vector<std::string> arguments{
        "redis-server", "--port", std::to_string(port_), "--bind",  "127.0.0.1", "--save", "", "--appendonly", "no",
        "--daemonize",  "no",     "--loglevel",          "warning", "--logfile", ""};
    arguments.insert(arguments.end(), extra_arguments_.begin(), extra_arguments_.end());
    process_.start(std::move(arguments));
    waitUntilReady();
  }

  // SIGTERM, then SIGKILL if it lingers; always reaped.
  void stop() { process_.stop(); }
  // A crash: no chance to answer what it has read, connections reset.
  void kill() { process_.kill(); }
  void pause() { process_.pause(); }
  void resume() { process_.resume(); }

  // With patient() options unless the test asks for others: a test checks behaviour, not how fast a
  // loaded machine answers, and the library's own defaults are tested where they are the point.
  swl::Connection connect(swl::ConnectionOptions options = patient()) const {
    return swl::Connection::tcp("127.0.0.1", port_, std::move(options));
  }

  // A port below 55536, so that a cluster node's bus port (port + 10000) is a port too: the kernel's
  // ephemeral range reaches 60999, and a cluster-enabled server on a port above 55535 exits at start.
  static int freeLoopbackPort() {
    for (int attempt = 0; attempt < 1000; ++attempt) {
      const int port = anyFreeLoopbackPort();
      if (port <= 55535) return port;
    }
    throw std::runtime_error("no free loopback port below 55536");
  }

 private:
  static int anyFreeLoopbackPort() {
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

  // Whether the server `connection` reaches is the process `pid`: another test's server may have taken
  // the port between its choice and this one's bind, and then answers in its place. A server that keeps
  // INFO from us is taken at its word.
  static bool answersAs(swl::Connection& connection, pid_t pid) {
    const swl::Reply info = connection.command({"INFO", "server"});
    if (!info->isString()) return true;
    return info->text().find("process_id:" + std::to_string(pid) + "\r\n") != std::string_view::npos;
  }

  void waitUntilReady() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!process_.alive()) {
        throw std::runtime_error("redis-server exited at start on port " + std::to_string(port_) +
                                 " (is it installed? is the port taken?)");
      }
      try {
        swl::Connection connection = connect(patient());
        connection.ping();
        if (!answersAs(connection, process_.pid())) {
          stop();
          throw std::runtime_error("another redis-server answers on port " + std::to_string(port_) +
                                   ", which it took before this one could bind it");
        }
        return;
      } catch (const swl::AuthError&) {
        return;  // it answers, and wants a password: ready
      } catch (const swl::ReplyError&) {
        return;  // it answers: ready
      } catch (const swl::ConnectionError&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    stop();
    throw std::runtime_error("redis-server did not answer on port " + std::to_string(port_));
  }

  int port_;
  std::vector<std::string> extra_arguments_;
  ChildProcess process_;
};

// Options for tests that break the server on purpose: every wait is `timeout`, and with the circuit
// breaker off a failed connect is retried by the very next call, so a test needs no sleep to see the
// server again.
inline swl::ConnectionOptions failFast(std::chrono::milliseconds timeout = std::chrono::milliseconds(1000)) {
  swl::ConnectionOptions options;
  options.connect_timeout = timeout;
  options.command_timeout = timeout;
  options.breaker_cooldown = std::chrono::milliseconds(0);
  return options;
}

}  // namespace swl::test

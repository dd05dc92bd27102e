#pragma once
// A program a test starts (redis-server, an example service) and stops by its pid. The child gets
// SIGKILL if the thread that started it dies, so a crashed test leaves nothing behind.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace swl::test {

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess() { stop(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Where a child's standard error goes: to the test's own, where ctest shows it, or into `output`.
  enum class Errors { shown, with_output };

  // Runs arguments[0] (looked up in PATH) with its standard output sent to /dev/null, or to `output`.
  void start(std::vector<std::string> arguments, const std::string& output = "/dev/null",
             Errors errors = Errors::shown) {
    std::vector<char*> argv;
    for (std::string& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) {
      pid_ = 0;
      throw std::runtime_error("cannot fork to start " + arguments[0]);
    }
    if (pid_ == 0) {
      // Only async-signal-safe calls until exec.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int output_fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (output_fd >= 0) ::dup2(output_fd, STDOUT_FILENO);
      if (output_fd >= 0 && errors == Errors::with_output) ::dup2(output_fd, STDERR_FILENO);
      ::execvp(argv[0], argv.data());
      ::_exit(127);
    }
  }

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  // False once it has exited (it is reaped then).
  bool alive() {
    if (running() && ::waitpid(pid_, nullptr, WNOHANG) == pid_) pid_ = 0;
    return running();
  }

  // SIGTERM, then SIGKILL if it lingers; always reaped.
  void stop() {
    if (!running()) return;
    ::kill(pid_, SIGCONT);  // a paused process cannot act on SIGTERM
    ::kill(pid_, SIGTERM);
    for (int waited_ms = 0; waited_ms < 5000; waited_ms += 10) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = 0;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill();
  }

  // A crash: no chance to finish anything.
  void kill() {
    if (!running()) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }

  // Its exit status once it has exited by itself within `timeout` (it is reaped then); -1 if it was killed
  // by a signal, or if it was still running after the timeout (then it is stopped).
  int waitForExit(std::chrono::milliseconds timeout) {
    for (auto waited = std::chrono::milliseconds(0); running() && waited < timeout;
         waited += std::chrono::milliseconds(5)) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stop();
    return -1;
  }

  void pause() { ::kill(pid_, SIGSTOP); }
  void resume() { ::kill(pid_, SIGCONT); }

 private:
  pid_t pid_ = 0;
};

}  // namespace swl::test

#pragma once
// Worker processes of the multi-process tests (lease_worker, slot_worker): where the program is, a run
// of several that each write the spans of their admissions to a file, and a holder that takes what it
// holds, says "held" and waits to be killed.

#include "admission_spans.hpp"
#include "child_process.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace swl::test {

// The program the environment variable `variable` names (tests/CMakeLists.txt sets it).
inline std::string workerProgram(const char* variable) {
  const char* path = std::getenv(variable);
  if (path == nullptr) {
    throw std::runtime_error(std::string(variable) +
                             " does not name the worker program (tests/CMakeLists.txt sets it)");
  }
  return path;
}

inline std::string scratchFile(const std::string& name) {
  return "/tmp/swl-" + name + "-" + std::to_string(::getpid());
}

// Runs one worker per argument list, each with a file of its own appended as its last argument, waits
// for all to exit with 0 (30 s at most) and returns every span they wrote. `empty` counts the workers
// that wrote none.
inline std::vector<Span> spansOfWorkers(const std::vector<std::vector<std::string>>& arguments, int* empty = nullptr) {
  std::vector<std::string> outputs;
  std::vector<std::unique_ptr<ChildProcess>> workers;
  for (std::vector<std::string> worker : arguments) {
    outputs.push_back(scratchFile("spans-" + std::to_string(outputs.size())));
    worker.push_back(outputs.back());
    workers.push_back(std::make_unique<ChildProcess>());
    workers.back()->start(worker);
  }
  std::vector<Span> spans;
  if (empty != nullptr) *empty = 0;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    const int status = workers[i]->waitForExit(std::chrono::seconds(30));
    if (status != 0) throw std::runtime_error("a worker ended with status " + std::to_string(status));
    const std::vector<Span> some = readSpans(outputs[i]);
    if (empty != nullptr && some.empty()) ++*empty;
    spans.insert(spans.end(), some.begin(), some.end());
    std::remove(outputs[i].c_str());
  }
  return spans;
}

// Starts `holder` with `arguments` and returns once it has printed "held" (10 s at most).
inline void startHolding(ChildProcess& holder, std::vector<std::string> arguments) {
  const std::string output = scratchFile("holder");
  holder.start(std::move(arguments), output);
  std::string said;
  for (int waited_ms = 0; said.empty() && waited_ms < 10'000; waited_ms += 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::ifstream(output) >> said;
  }
  std::remove(output.c_str());
  if (said != "held") throw std::runtime_error("the holder did not say it held anything within 10 s");
}

}  // namespace swl::test

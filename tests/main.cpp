#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <csignal>

int main(int argc, char* argv[]) {
  // A write to a socket the server already closed must surface as an error, not kill the test run.
  std::signal(SIGPIPE, SIG_IGN);
  Catch::Session session;
  // Each test file's cases carry its name as a tag ("[#test_faults]"): a program built from several files
  // lists one file's cases, which CMake gives that file's properties (tests/CMakeLists.txt).
  session.configData().filenamesAsTags = true;
  const int parsed = session.applyCommandLine(argc, argv);
  if (parsed != 0) return parsed;
  return session.run();
}

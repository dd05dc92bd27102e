// Every script swl sends is readable whole (swl/scripts.hpp, examples/swl_scripts), and is what Redis
// runs: each loads into a real Redis under the SHA-1 swl calls it by, and docs/scripts.md shows the log's.

#include <swl/scripts.hpp>

#include "support/files.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <set>
#include <string>

using swl::test::readFile;
using swl::test::RedisServer;

namespace {

// What `command` prints on its standard output.
std::string outputOf(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  REQUIRE(pipe);
  std::string output;
  char buffer[4096];
  for (std::size_t read; (read = std::fread(buffer, 1, sizeof buffer, pipe.get())) > 0;) output.append(buffer, read);
  return output;
}

}  // namespace

TEST_CASE("every script loads into a real Redis under the SHA-1 swl calls it by, each name once") {
  RedisServer server;
  auto connection = server.connect();
  const std::vector<const swl::Script*> scripts = swl::everyScript();
  std::set<std::string> names;
  for (const swl::Script* script : scripts) {
    INFO(script->name());
    CHECK(names.insert(script->name()).second);
    CHECK(swl::test::textReply(connection, {"SCRIPT", "LOAD", script->text()}) == script->sha());
  }
  CHECK(names.count("sliding_window") == 1);
  CHECK(names.count("multi_window") == 1);
  CHECK(names.count("forget") == 1);
}

TEST_CASE("the scripts guide (docs/scripts.md) shows the log's whole script as swl sends it") {
  const std::string readme = readFile(SWL_SOURCE_DIR "/docs/scripts.md");
  const std::string opening = "<!-- the whole script: swl_scripts sliding_window -->\n```lua\n";
  const std::size_t begins = readme.find(opening);
  REQUIRE(begins != std::string::npos);
  const std::size_t text_begins = begins + opening.size();
  const std::size_t ends = readme.find("```\n", text_begins);
  REQUIRE(ends != std::string::npos);
  // When this fails, the script changed: paste `swl_scripts sliding_window` into docs/scripts.md's block.
  CHECK(readme.substr(text_begins, ends - text_begins) == swl::detail::scriptOf<swl::SlidingWindowLog>().text());
}

TEST_CASE("swl_scripts lists every script and prints each one whole") {
  const std::string program = SWL_SCRIPTS_PROGRAM;
  const std::string listing = outputOf(program);
  for (const swl::Script* script : swl::everyScript()) {
    CHECK(listing.find(script->name() + " ") != std::string::npos);
    CHECK(listing.find(std::string(script->sha())) != std::string::npos);
  }
  CHECK(outputOf(program + " gcra") == swl::detail::scriptOf<swl::Gcra>().text());
  const std::string all = outputOf(program + " --all");
  CHECK(all.find(std::string(swl::detail::forgetScript().text())) != std::string::npos);
  CHECK(outputOf(program + " no_such_script 2>/dev/null").empty());
}

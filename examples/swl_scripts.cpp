// Prints the Lua scripts swl sends to Redis, each whole, exactly as Redis receives it: to read one top
// to bottom, to review what runs inside your Redis, or to load them yourself.
//
//   swl_scripts                every script's name, SHA-1 and size
//   swl_scripts NAME...        those scripts' texts (sliding_window is the log's decision)
//   swl_scripts --all          every script's text, each after a line "-- swl script NAME SHA"

#include <swl/scripts.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace {

void printText(const swl::Script& script, bool with_heading) {
  if (with_heading) std::printf("-- swl script %s %s\n", script.name().c_str(), std::string(script.sha()).c_str());
  std::fwrite(script.text().data(), 1, script.text().size(), stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<const swl::Script*> scripts = swl::everyScript();
  if (argc == 1) {
    for (const swl::Script* script : scripts) {
      std::printf("%-22s %s %6zu bytes\n", script->name().c_str(), std::string(script->sha()).c_str(),
                  script->text().size());
    }
    return 0;
  }
  if (std::string_view(argv[1]) == "--all") {
    for (const swl::Script* script : scripts) printText(*script, true);
    return 0;
  }
  std::vector<const swl::Script*> chosen;
  for (int i = 1; i < argc; ++i) {
    const auto named = std::find_if(scripts.begin(), scripts.end(),
                                    [&](const swl::Script* script) { return script->name() == argv[i]; });
    if (named == scripts.end()) {
      std::fprintf(stderr, "swl_scripts: no script is named \"%s\"; run swl_scripts for their names\n", argv[i]);
      return 2;
    }
    chosen.push_back(*named);
  }
  for (const swl::Script* script : chosen) printText(*script, chosen.size() > 1);
  return 0;
}

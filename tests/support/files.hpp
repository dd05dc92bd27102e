#pragma once
// Reading a file whole, as the tests of documents, scripts and the server's output do.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace swl::test {

inline std::string readFile(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace swl::test

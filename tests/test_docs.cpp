// The documentation a newcomer navigates: the README is a landing page that links every guide in docs/,
// and every link between them (and to the repository's files) leads somewhere: a file that exists, and a
// heading that exists in it. Links to other sites are not followed (tests run offline).

#include "support/files.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

using swl::test::readFile;

namespace {

namespace fs = std::filesystem;

const fs::path kSource = SWL_SOURCE_DIR;

// A document's lines outside fenced code blocks, with inline code spans blanked out: links and headings
// are only what a reader sees as such.
std::vector<std::string> proseLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  bool fenced = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) lines.push_back(std::regex_replace(line, std::regex("`[^`]*`"), "``"));
  }
  return lines;
}

// The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens; a repeated
// heading gets -1, -2, ...
std::set<std::string> anchorsOf(const fs::path& document) {
  std::set<std::string> anchors;
  std::map<std::string, int> seen;
  std::istringstream in(readFile(document));
  bool fenced = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    if (fenced || line.empty() || line[0] != '#') continue;
    const std::size_t text = line.find_first_not_of('#');
    if (text == std::string::npos || line[text] != ' ') continue;
    std::string anchor;
    for (const char c : line.substr(text + 1)) {
      const auto byte = static_cast<unsigned char>(c);
      if (std::isalnum(byte) || c == '-' || c == '_' || byte >= 0x80) {
        anchor += static_cast<char>(std::tolower(byte));
      } else if (c == ' ') {
        anchor += '-';
      }
    }
    const int repeats = seen[anchor]++;
    anchors.insert(repeats == 0 ? anchor : anchor + "-" + std::to_string(repeats));
  }
  return anchors;
}

struct Link {
  fs::path document;
  std::string target;
};

std::vector<Link> linksIn(const fs::path& document) {
  std::vector<Link> links;
  const std::regex link(R"(\]\(([^)\s]+)\))");
  for (const std::string& line : proseLines(readFile(document))) {
    for (auto match = std::sregex_iterator(line.begin(), line.end(), link); match != std::sregex_iterator(); ++match) {
      links.push_back({document, (*match)[1].str()});
    }
  }
  return links;
}

std::vector<fs::path> guides() {
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(kSource / "docs")) {
    if (entry.path().extension() == ".md") found.push_back(entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<fs::path> documents() {
  std::vector<fs::path> all{kSource / "README.md", kSource / "bench" / "README.md"};
  for (const fs::path& guide : guides()) all.push_back(guide);
  return all;
}

}  // namespace

TEST_CASE("every link in the README, the guides and bench/README.md leads to a file and a heading that exist") {
  int checked = 0;
  for (const fs::path& document : documents()) {
    for (const Link& link : linksIn(document)) {
      if (link.target.find("://") != std::string::npos || link.target.rfind("mailto:", 0) == 0) continue;
      INFO(link.document.lexically_relative(kSource).string() << " links to " << link.target);
      const std::size_t hash = link.target.find('#');
      const std::string file = link.target.substr(0, hash);
      const fs::path target = file.empty() ? link.document : (link.document.parent_path() / file).lexically_normal();
      CHECK(fs::exists(target));
      if (hash != std::string::npos && fs::exists(target)) {
        CHECK(target.extension() == ".md");
        CHECK(anchorsOf(target).count(link.target.substr(hash + 1)) == 1);
      }
      ++checked;
    }
  }
  CHECK(checked > 30);
}

TEST_CASE("the README is a landing page that links every guide in docs/") {
  const std::string readme = readFile(kSource / "README.md");
  CHECK(std::count(readme.begin(), readme.end(), '\n') <= 250);
  const std::vector<fs::path> all = guides();
  CHECK(all.size() >= 10);
  for (const fs::path& guide : all) {
    INFO(guide.filename().string());
    CHECK(readme.find("](docs/" + guide.filename().string()) != std::string::npos);
  }
}

TEST_CASE("a broken link or a missing heading is noticed") {
  // The checks above could pass by finding nothing: these cases must be caught by the same functions.
  const fs::path scratch = fs::temp_directory_path() / ("swl_docs_" + std::to_string(::getpid()));
  fs::create_directories(scratch);
  std::ofstream(scratch / "a.md") << "# A title: with `code`\n\n## Twice\n\n## Twice\n\n```\n# not a heading\n```\n"
                                  << "See [b](b.md#nowhere), [self](#a-title-with-code) and `[code](x.md)`.\n";
  const std::set<std::string> anchors = anchorsOf(scratch / "a.md");
  CHECK(anchors == std::set<std::string>{"a-title-with-code", "twice", "twice-1"});
  const std::vector<Link> links = linksIn(scratch / "a.md");
  REQUIRE(links.size() == 2);
  CHECK(links[0].target == "b.md#nowhere");
  CHECK(links[1].target == "#a-title-with-code");
  fs::remove_all(scratch);
}

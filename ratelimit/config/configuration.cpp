// Loading envoyproxy/ratelimit's YAML files and directories as its Go loader (gopkg.in/yaml.v2, then its
// own checks) and lyft/goruntime load them. One file's text goes through four parts, each a header of
// its own and none doing I/O:
//  1. yaml/text.hpp, checkedText: the bytes are UTF-8 (or UTF-16, converted) of the characters YAML
//     allows, as yaml.v2 refuses a file for any other byte, even in a comment.
//  2. yaml/events.hpp, readFirstDocument: libyaml's events (yaml.v2 is a port of libyaml) with YAML 1.1's
//     aliases replayed and merge keys (`<<`) expanded in yaml.v2's order, so that what follows sees plain
//     maps, lists and scalars; yaml/scalar.hpp reads a scalar as yaml.v2 does (`yes` is true, `0x10` is
//     16, `1.5` is a float).
//  3. yaml/domain_reader.hpp, DomainReader: what each map and list is for, by where it is (the file, a
//     descriptor, a rate_limit...; yaml/keys.hpp), into small records of what each descriptor says.
//  4. DomainReader::finish: the records laid out as the domain's RuleTree.
// The text is read once, event by event; no tree of YAML nodes is ever built: that was most of a large
// file's time and memory. What is left here is the files: which are read, in what order, and how their
// domains come together.

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/config/yaml/domain_reader.hpp>
#include <ratelimit/config/yaml/events.hpp>
#include <ratelimit/config/yaml/text.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace swl::ratelimit {

namespace {

std::string describe(const SourceLocation& source) { return source.file + ":" + std::to_string(source.line); }

std::string contentsOf(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file.string() + ": cannot be opened: " + std::strerror(errno));
  std::string contents;
  std::array<char, 1 << 16> chunk;
  while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0) {
    contents.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw ConfigError(file.string() + ": cannot be read: " + std::strerror(errno));
  return contents;
}

std::vector<std::filesystem::path> configFiles(const std::filesystem::path& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error) throw ConfigError(path.string() + ": " + error.message());
  if (!std::filesystem::is_directory(status)) return {path};
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator entry(path, error), end; !error && entry != end; entry.increment(error)) {
    const std::filesystem::path& file = entry->path();
    const std::string name = file.filename().string();
    if (name.empty() || name.front() == '.') continue;
    if (file.extension() != ".yaml" && file.extension() != ".yml") continue;
    // Through a link: a link that leads nowhere, or to itself, is named, never passed over.
    std::error_code kind_error;
    const std::filesystem::file_status kind = std::filesystem::status(file, kind_error);
    if (kind_error) throw ConfigError(file.string() + ": cannot be read: " + kind_error.message());
    if (std::filesystem::is_regular_file(kind)) files.push_back(file);
  }
  if (error) throw ConfigError(path.string() + ": " + error.message());
  if (files.empty()) throw ConfigError(path.string() + ": no *.yaml or *.yml file in this directory");
  std::sort(files.begin(), files.end());
  return files;
}

// goruntime's walk (filepath.Walk, which takes each entry as Lstat sees it): every file that is not a
// directory is read, through a link if it is one; a link to a directory is not walked into, and what
// cannot be read is passed over with a word. Dot-files and dot-directories are passed over on request,
// as Kubernetes' ConfigMap mounts need (their `..2024_...` directory holds every file a second time).
using PassedOver = std::vector<std::pair<std::filesystem::path, std::string>>;

void walkRuntime(const std::filesystem::path& directory, bool ignore_dot_files, PassedOver& passed_over,
                 std::vector<std::filesystem::path>& files, bool top = false) {
  std::error_code error;
  std::filesystem::directory_iterator entry(directory, error), end;
  for (; !error && entry != end; entry.increment(error)) {
    const std::filesystem::path& path = entry->path();
    if (ignore_dot_files && path.filename().string().rfind('.', 0) == 0) continue;
    std::error_code kind_error;
    const std::filesystem::file_status own = entry->symlink_status(kind_error);
    if (!kind_error && std::filesystem::is_directory(own)) {
      walkRuntime(path, ignore_dot_files, passed_over, files);
      continue;
    }
    const std::filesystem::file_status through = std::filesystem::status(path, kind_error);
    if (kind_error) {
      passed_over.emplace_back(path, kind_error.message() + " (envoyproxy/ratelimit's runtime passes over it too)");
    } else if (std::filesystem::is_directory(through)) {
      passed_over.emplace_back(path, "a link to a directory, which the runtime does not walk into");
    } else if (!std::filesystem::is_regular_file(through)) {
      passed_over.emplace_back(path, "not a regular file");
    } else {
      files.push_back(path);
    }
  }
  if (error && top) throw ConfigError(directory.string() + ": " + error.message());
  if (error) passed_over.emplace_back(directory, "not read whole: " + error.message());
}

}  // namespace

void Configuration::add(Domain domain, bool merge_domains) {
  warnings_.insert(warnings_.end(), std::make_move_iterator(domain.warnings.begin()),
                   std::make_move_iterator(domain.warnings.end()));
  domain.warnings.clear();
  const auto taken = domains_.find(domain.name);
  if (taken == domains_.end()) {
    std::string name = domain.name;
    domains_.emplace(std::move(name), std::move(domain));
    return;
  }
  if (!merge_domains) {
    throw ConfigError(describe(domain.source) + ": domain \"" + domain.name + "\" is defined already, at " +
                      describe(taken->second.source) + " (merging the files of one domain is an option)");
  }
  Domain& kept = taken->second;
  if (const auto repeat = kept.rules.merge(std::move(domain.rules))) {
    throw ConfigError(repeatMessage(kept.name, kept.rules, *repeat));
  }
}

void Configuration::warn(std::string warning) { warnings_.push_back(std::move(warning)); }

Domain parseDomain(std::string_view contents, const std::string& file) {
  std::string converted;
  const std::string_view text = yaml::checkedText(contents, converted, file);
  reader::DomainReader reader(file);
  const yaml::FirstDocument read = yaml::readFirstDocument(text, file, reader);
  if (!read.found) throw ConfigError(lineAt(file, 1) + "the file is empty: it must name its domain");
  Domain domain = reader.finish();
  if (read.next_document_line != 0) {
    domain.warnings.push_back(lineAt(file, read.next_document_line) +
                              "a second YAML document: ignored, as envoyproxy/ratelimit reads the first only");
  }
  return domain;
}

Configuration loadConfiguration(const std::filesystem::path& path, bool merge_domains) {
  Configuration configuration;
  for (const std::filesystem::path& file : configFiles(path)) {
    configuration.add(parseDomain(contentsOf(file), file.string()), merge_domains);
  }
  return configuration;
}

Configuration loadRuntimeConfiguration(const std::filesystem::path& directory, bool ignore_dot_files,
                                       bool merge_domains) {
  std::error_code error;
  if (!std::filesystem::is_directory(directory, error)) {
    throw ConfigError(directory.string() + ": " + (error ? error.message() : std::string("not a directory")));
  }
  Configuration configuration;
  std::vector<std::filesystem::path> files;
  PassedOver passed_over;
  walkRuntime(directory, ignore_dot_files, passed_over, files, true);
  std::sort(passed_over.begin(), passed_over.end());
  for (const auto& [path, why] : passed_over) configuration.warn(path.string() + ": not read: " + why);
  std::sort(files.begin(), files.end());
  for (const std::filesystem::path& file : files) {
    std::string contents;
    try {
      contents = contentsOf(file);
    } catch (const ConfigError& unreadable) {
      configuration.warn(std::string(unreadable.what()) +
                         " (not read: envoyproxy/ratelimit's runtime passes over it too)");
      continue;
    }
    configuration.add(parseDomain(contents, file.string()), merge_domains);
  }
  return configuration;
}

void returnFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace swl::ratelimit

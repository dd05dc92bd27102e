// Where a configuration is read from, and its files: --config's file or directory, or
// envoyproxy/ratelimit's runtime directory as lyft/goruntime walks it; which files are read, and in
// what order. Each file's text is made a Domain by the YAML reader (yaml/read.cpp).

#include <ratelimit/config/domain.hpp>
#include <ratelimit/config/error.hpp>
#include <ratelimit/config/source.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace swl::ratelimit {

namespace {

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

Configuration readConfiguration(const ConfigSource& source) {
  if (source.xds) return Configuration();  // pushed by the xDS server: nothing to read
  if (source.runtime) {
    return loadRuntimeConfiguration(source.runtime->files(), source.runtime->ignore_dot_files, source.merge_domains);
  }
  return loadConfiguration(source.path, source.merge_domains);
}

std::string describe(const ConfigSource& source) {
  if (source.xds) return "the xDS server " + source.xds->server;
  return source.runtime ? source.runtime->files().string() : source.path.string();
}

}  // namespace swl::ratelimit

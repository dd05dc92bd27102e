#pragma once
/// \file
/// How a configuration is put in force: read from its source (--config's file or directory, or
/// envoyproxy/ratelimit's runtime directory), at start, on SIGHUP and when the watcher sees the files
/// change, all alike. A configuration that is wrong is refused whole, with its file and line, and the
/// one in force stays.

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/config/source.hpp>
#include <ratelimit/reload/in_force.hpp>
#include <ratelimit/telemetry/log.hpp>

#include <swl/error.hpp>

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace swl::ratelimit {

/// Reads the configuration and puts it in force, for whatever asks (the start, SIGHUP, the watcher),
/// one at a time.
class Reloader {
 public:
  /// Told of each configuration put in force, once it is (the health check counts its domains).
  using Loaded = std::function<void(const Configuration&)>;

  /// Told of each configuration offered, read from the files or pushed: true once it is in force, false
  /// when it was refused (envoyproxy/ratelimit's config_load_success and config_load_error).
  using Counted = std::function<void(bool put_in_force)>;

  /// `source`, `log` and `in_force` must outlive it.
  Reloader(const ConfigSource& source, Log& log, ConfigurationInForce& in_force, Loaded loaded = {},
           Counted counted = {})
      : source_(&source), log_(&log), in_force_(&in_force), loaded_(std::move(loaded)), counted_(std::move(counted)) {}

  /// Reads the configuration and puts it in force, and gives how many domains it has. A configuration
  /// that is wrong is a ConfigError (at start, the server does not start), and the one in force stays.
  std::size_t load() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return loadLocked();
  }

  /// Puts `read` in force: a configuration pushed rather than read (an xDS server's), `cause` saying where
  /// from ("from the xDS server, version 7"), in the log. Gives how many domains it has.
  std::size_t putInForce(Configuration read, std::string_view cause) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t domains = putLocked(std::move(read));
    log_->info("swl-ratelimit: configuration in force " + std::string(cause) + ", " + std::to_string(domains) +
               " domain(s)");
    return domains;
  }

  /// Counts a configuration refused before it reached the reloader (an xDS server's that did not convert),
  /// as a file that is wrong is counted.
  void countRefused() {
    if (counted_) counted_(false);
  }

  /// Loads again; `cause` ("on SIGHUP") says why, in the log. A configuration that is wrong is logged,
  /// with its file and line, and the one in force stays.
  void reload(std::string_view cause) {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::size_t domains = 0;
    try {
      domains = loadLocked();
    } catch (const Error& error) {
      log_->error("swl-ratelimit: configuration kept " + std::string(cause) + ": " + error.what());
      return;
    }
    log_->info("swl-ratelimit: configuration reloaded " + std::string(cause) + ", " + std::to_string(domains) +
               " domain(s)");
  }

 private:
  std::size_t loadLocked() {
    if (source_->xds) return putLocked(Configuration(), false);  // nothing read: the xDS server pushes it
    return putLocked(
        [this] {
          try {
            return readConfiguration(*source_);
          } catch (const Error&) {
            countRefused();
            throw;
          }
        }(),
        true);
  }

  // `counted`: whether it counts as a configuration loaded (the xDS mode's empty one at start does not).
  std::size_t putLocked(Configuration read, bool counted = true) {
    // What the files say that is not wrong, but likely not meant: one line each.
    for (const std::string& warning : read.warnings()) log_->warn("swl-ratelimit: " + warning);
    const std::size_t domains = read.domains().size();
    in_force_->set(std::move(read));
    if (loaded_) loaded_(*in_force_->get());
    if (counted && counted_) counted_(true);
    return domains;
  }

  const ConfigSource* source_;
  Log* log_;
  ConfigurationInForce* in_force_;
  Loaded loaded_;
  Counted counted_;
  std::mutex mutex_;
};

}  // namespace swl::ratelimit

#pragma once
/// \file
/// The configuration in force, and how a new one takes its place: read from where the settings say
/// (--config's file or directory, or envoyproxy/ratelimit's runtime directory), at start, on SIGHUP and
/// when the watcher sees the files change, all alike. A configuration that is wrong is refused whole,
/// with its file and line, and the one in force stays.

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/settings/settings.hpp>
#include <ratelimit/telemetry/log.hpp>

#include <swl/error.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace swl::ratelimit {

/// The configuration where `settings` say it is, read now: every file under envoyproxy's runtime
/// directory, as its goruntime reads them, or --config's file or directory. Anything wrong is a
/// ConfigError.
inline Configuration readConfiguration(const Settings& settings) {
  if (settings.runtime) {
    return loadRuntimeConfiguration(settings.runtime->files(), settings.runtime->ignore_dot_files,
                                    settings.merge_domains);
  }
  return loadConfiguration(settings.config, settings.merge_domains);
}

/// Where the configuration is read from, for the log.
inline std::string sourceOf(const Settings& settings) {
  return settings.runtime ? settings.runtime->files().string() : settings.config.string();
}

/// Gives back to the system the memory a configuration held, once the last holder lets it go: a call
/// that started under it, or the reload that replaced it. A configuration of many rules is large, and
/// the allocator would otherwise keep its pages for good.
struct ReturnsMemory {
  void operator()(const Configuration* configuration) const {
    std::default_delete<const Configuration>()(configuration);
    returnFreedMemory();
  }
};

inline std::shared_ptr<const Configuration> shared(Configuration configuration) {
  return std::unique_ptr<const Configuration, ReturnsMemory>(
      std::make_unique<const Configuration>(std::move(configuration)).release());
}

/// What the configuration's files say that is not wrong, but likely not meant: one line each.
inline void logWarnings(const Configuration& configuration, Log& log) {
  for (const std::string& warning : configuration.warnings()) log.warn("swl-ratelimit: " + warning);
}

/// The configuration in force, for whoever answers from it besides the gRPC service (/json,
/// /healthcheck): a new one replaces it whole, at once, and a call goes on with the one it took.
class ConfigurationInForce {
 public:
  explicit ConfigurationInForce(std::shared_ptr<const Configuration> configuration)
      : configuration_(std::move(configuration)) {}

  std::shared_ptr<const Configuration> get() const { return std::atomic_load(&configuration_); }
  void set(std::shared_ptr<const Configuration> configuration) {
    std::atomic_store(&configuration_, std::move(configuration));
  }

 private:
  std::shared_ptr<const Configuration> configuration_;
};

/// Reads the configuration again and puts it in force, for whatever asks (SIGHUP, the watcher), one
/// reload at a time.
class Reloader {
 public:
  /// `put_in_force` gives the new configuration to everything that answers from it.
  using PutInForce = std::function<void(const std::shared_ptr<const Configuration>&)>;

  /// `settings` and `log` must outlive it.
  Reloader(const Settings& settings, Log& log, PutInForce put_in_force)
      : settings_(&settings), log_(&log), put_in_force_(std::move(put_in_force)) {}

  /// Reloads; `cause` ("on SIGHUP") says why, in the log. A configuration that is wrong is logged, with
  /// its file and line, and the one in force stays.
  void reload(std::string_view cause) {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<const Configuration> reloaded;
    try {
      reloaded = shared(readConfiguration(*settings_));
    } catch (const Error& error) {
      log_->error("swl-ratelimit: configuration kept " + std::string(cause) + ": " + error.what());
      return;
    }
    logWarnings(*reloaded, *log_);
    const auto domains = reloaded->domains().size();
    put_in_force_(reloaded);
    log_->info("swl-ratelimit: configuration reloaded " + std::string(cause) + ", " + std::to_string(domains) +
               " domain(s)");
  }

 private:
  const Settings* settings_;
  Log* log_;
  PutInForce put_in_force_;
  std::mutex mutex_;
};

}  // namespace swl::ratelimit

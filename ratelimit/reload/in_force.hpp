#pragma once
/// \file
/// The configuration in force: its one holder, which the Reloader (reloader.hpp) writes and whatever
/// answers reads (the gRPC service, /json). A new configuration replaces it whole, at once; a call
/// goes on with the one it took, which is freed when the last such call ends.

#include <ratelimit/config/configuration.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <atomic>
#include <memory>
#include <utility>

namespace swl::ratelimit {

class ConfigurationInForce {
 public:
  /// The configuration in force; null until one is put in force.
  std::shared_ptr<const Configuration> get() const { return std::atomic_load(&configuration_); }

  /// Puts `configuration` in force, in place of the one before.
  void set(Configuration configuration) {
    std::shared_ptr<const Configuration> held(new const Configuration(std::move(configuration)), ReturnsMemory());
    std::atomic_store(&configuration_, std::move(held));
  }

 private:
  // Gives back to the system the memory a configuration held, once the last holder lets it go: a call
  // that started under it, or the reload that replaced it. A configuration of many rules is large, and
  // glibc's allocator would otherwise keep its pages for good, so a reload to a smaller file would not
  // shrink the process. Elsewhere than on glibc, the memory is only freed.
  struct ReturnsMemory {
    void operator()(const Configuration* configuration) const {
      delete configuration;
#if defined(__GLIBC__)
      malloc_trim(0);
#endif
    }
  };

  std::shared_ptr<const Configuration> configuration_;
};

}  // namespace swl::ratelimit

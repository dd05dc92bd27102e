#pragma once
/// \file
/// Whether swl-ratelimit is healthy: what /healthcheck (http.hpp) and gRPC's health check (grpc_server.hpp)
/// both answer.

#include <atomic>
#include <cstddef>

namespace swl::ratelimit {

/// Whether the server is healthy, as envoyproxy/ratelimit's health checker decides: it serves until
/// SIGTERM; and when it `needs_a_domain` (HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED), only while the
/// configuration last put in force has a domain. A configuration refused changes nothing.
class Health {
 public:
  explicit Health(bool needs_a_domain) : needs_a_domain_(needs_a_domain) {}

  /// A configuration of `domains` domains is in force.
  void loaded(std::size_t domains) noexcept { has_a_domain_ = domains > 0; }

  /// SIGTERM came: the server finishes its calls, and a load balancer should send it no more.
  void stopping() noexcept { stopping_ = true; }

  bool healthy() const noexcept { return !stopping_ && (!needs_a_domain_ || has_a_domain_); }

 private:
  const bool needs_a_domain_;
  std::atomic<bool> has_a_domain_{false};
  std::atomic<bool> stopping_{false};
};

}  // namespace swl::ratelimit

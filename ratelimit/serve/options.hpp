#pragma once
/// \file
/// How the gRPC service is served: its address, and how long a client's connection may live. Plain
/// values, which the settings hold whole (settings/settings.hpp); no gRPC here.

#include <chrono>
#include <optional>
#include <string>

namespace swl::ratelimit {

/// How the gRPC service listens, and how long its clients' connections live.
struct GrpcOptions {
  /// HOST:PORT, [IPV6]:PORT or unix:PATH; port 0 picks a free one.
  std::string listen = "0.0.0.0:8081";
  /// envoyproxy/ratelimit's GRPC_MAX_CONNECTION_AGE(_GRACE): a client's connection older than the age
  /// is asked to go (GOAWAY), and closed after the grace, so that clients spread anew over servers that
  /// came later. None: connections stay.
  std::optional<std::chrono::milliseconds> max_connection_age, max_connection_age_grace;
};

}  // namespace swl::ratelimit

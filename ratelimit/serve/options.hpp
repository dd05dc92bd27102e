#pragma once
/// \file
/// How the gRPC service is served: its address, how long a client's connection may live, and TLS. Plain
/// values, which the settings hold whole (settings/settings.hpp); no gRPC here.

#include <chrono>
#include <optional>
#include <string>

namespace swl::ratelimit {

/// gRPC over TLS, as envoyproxy/ratelimit's GRPC_SERVER_TLS_* and GRPC_CLIENT_TLS_* variables give it:
/// the paths of PEM files, which serve/tls.hpp reads at start and again whenever they change. Reading
/// settings opens none of them.
struct GrpcTls {
  /// The server's certificate (its chain after it) and its key: TLS when given, and both are.
  std::string cert_file, key_file;
  /// Mutual TLS: only a client whose certificate these CAs signed is served. None: no client certificate
  /// is asked for.
  std::string client_ca_file;
  /// With a client CA: the client's certificate must also hold this name, a DNS name or an IP address
  /// (GRPC_CLIENT_TLS_SAN, compared as envoyproxy/ratelimit compares it: serve/client_san.hpp).
  std::string client_san;

  bool enabled() const { return !cert_file.empty(); }
};

/// How the gRPC service listens, and how long its clients' connections live.
struct GrpcOptions {
  /// HOST:PORT, [IPV6]:PORT or unix:PATH; port 0 picks a free one.
  std::string listen = "0.0.0.0:8081";
  /// envoyproxy/ratelimit's GRPC_MAX_CONNECTION_AGE(_GRACE): a client's connection older than the age
  /// is asked to go (GOAWAY), and closed after the grace, so that clients spread anew over servers that
  /// came later. None: connections stay.
  std::optional<std::chrono::milliseconds> max_connection_age, max_connection_age_grace;
  /// Plaintext unless it names a certificate.
  GrpcTls tls;
};

}  // namespace swl::ratelimit

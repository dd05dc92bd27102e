#pragma once
/// \file
/// gRPC over TLS for the rate limit service, as envoyproxy/ratelimit serves it (GRPC_SERVER_USE_TLS):
/// the server's certificate and key, and with a client CA, mutual TLS, from files.
///
/// The files are read again every kCertificateRefresh by gRPC's FileWatcherCertificateProvider, so a
/// certificate rotated on disk is served to the connections that come after, without a restart; the
/// connections made before keep theirs. envoyproxy/ratelimit reloads its certificate when its
/// directory changes (provider/cert_provider.go); here the client CA is read again too.

#include <ratelimit/serve/options.hpp>

#include <grpcpp/security/server_credentials.h>

#include <chrono>
#include <memory>

namespace swl::ratelimit {

/// How often the files are read again. A Kubernetes Secret reaches its pods' files a minute or more
/// after it changed, so a second adds nothing noticeable to a rotation; reading three small files a
/// second costs nothing measurable. And gRPC 1.51 does not check that the key it reads belongs to the
/// certificate beside it: a pair rewritten in place, file by file, can be read half new, and then
/// new connections fail until the next read, at most a second later. (A Secret's files are swapped
/// whole, through a symlink, and are never read half new.)
inline constexpr std::chrono::seconds kCertificateRefresh{1};

/// The credentials the gRPC service listens with: plaintext when `tls` names no certificate; else TLS
/// with `tls.cert_file` and `tls.key_file`, and with `tls.client_ca_file`, only clients whose certificate
/// it vouches for (and that hold `tls.client_san`, when it is given). Every file is read and checked
/// first: one that cannot be read, or that holds no certificate (no key), or a key that is not the
/// certificate's, throws swl::Error naming the file, and the server does not start.
std::shared_ptr<grpc::ServerCredentials> serverCredentials(const GrpcTls& tls);

}  // namespace swl::ratelimit

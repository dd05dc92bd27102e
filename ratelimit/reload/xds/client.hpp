#pragma once
/// \file
/// envoyproxy/ratelimit's xDS client (CONFIG_TYPE=GRPC_XDS_SOTW), as Envoy Gateway serves it: one stream
/// of the aggregated discovery service (envoy.service.discovery.v3.AggregatedDiscoveryService/
/// StreamAggregatedResources) asking, as node CONFIG_GRPC_XDS_NODE_ID with its metadata, for every
/// RateLimitConfig, one per domain. Each response holds them all (State of the World): read by the same
/// rules as the files (resource.hpp) and put in force whole, then acknowledged (ACK: its version and
/// nonce); one that is wrong is refused whole (NACK: the version in force, its nonce, and why) and the
/// configuration in force stays, as a refused file's does. A stream that ends is started again: after
/// CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL when the server could not be reached, else after the
/// backoff XDS_CLIENT_BACKOFF_* say; every call is answered meanwhile from the configuration in force.
///
/// Its own thread, with gRPC's synchronous API: the stream is one call that lives as long as the
/// connection, and the thread blocks on it; the destructor cancels it.

#include <ratelimit/config/source.hpp>
#include <ratelimit/reload/reloader.hpp>
#include <ratelimit/telemetry/log.hpp>

#include "envoy/service/discovery/v3/ads.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

namespace swl::ratelimit::xds {

class XdsClient {
 public:
  /// Asks `source`'s server for the configuration and puts each one it sends in force through
  /// `reloader`; `merge_domains`: MERGE_DOMAIN_CONFIG. `reloader` and `log` must outlive it. TLS files
  /// that cannot be read throw swl::Error, naming the file.
  XdsClient(XdsSource source, bool merge_domains, Reloader& reloader, Log& log);
  /// Cancels the stream and stops.
  ~XdsClient();
  XdsClient(const XdsClient&) = delete;
  XdsClient& operator=(const XdsClient&) = delete;

  /// Waits up to `patience` for a configuration the server sent to be in force (how the server starts
  /// without FORCE_START_WITHOUT_INITIAL_CONFIG): whether one is.
  bool waitUntilConfigured(std::chrono::milliseconds patience);

 private:
  using Request = envoy::service::discovery::v3::DiscoveryRequest;
  using Response = envoy::service::discovery::v3::DiscoveryResponse;

  void run();
  // One stream, until it ends; whether the server answered on it.
  bool stream();
  // The ACK or NACK of `response`, once its configuration is in force or refused.
  Request answer(const Response& response);
  Request request() const;
  std::shared_ptr<grpc::ChannelCredentials> credentials() const;
  std::chrono::milliseconds nextWait(bool answered, const grpc::Status& ended);
  // Sleeps `wait`, or until the client stops; false once it stops.
  bool sleep(std::chrono::milliseconds wait);

  const XdsSource source_;
  const bool merge_domains_;
  Reloader& reloader_;
  Log& log_;
  envoy::config::core::v3::Node node_;
  std::string accepted_version_;  // the version in force: what a NACK says
  std::chrono::milliseconds backoff_;
  std::mt19937 random_{std::random_device{}()};
  grpc::Status ended_;

  std::mutex mutex_;
  std::condition_variable changed_;
  grpc::ClientContext* context_ = nullptr;  // the stream's, while one runs
  bool stopping_ = false;
  bool configured_ = false;
  std::thread thread_;
};

}  // namespace swl::ratelimit::xds

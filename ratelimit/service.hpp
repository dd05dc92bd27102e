#pragma once
/// \file
/// The gRPC face of swl-ratelimit: Envoy's RateLimitService, answering from the configuration in force.
/// A new configuration replaces it whole, at once: a call started before goes on with the one it took.

#include <ratelimit/config.hpp>
#include <ratelimit/decider.hpp>

#include <swl/error.hpp>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <utility>

namespace swl::ratelimit {

class RateLimitService final : public rls::RateLimitService::Service {
 public:
  RateLimitService(Decider& decider, std::shared_ptr<const Configuration> configuration)
      : decider_(&decider), configuration_(std::move(configuration)) {}

  /// The configuration later calls answer from.
  void replace(std::shared_ptr<const Configuration> configuration) {
    std::atomic_store(&configuration_, std::move(configuration));
  }

  grpc::Status ShouldRateLimit(grpc::ServerContext* /*context*/, const rls::RateLimitRequest* request,
                               rls::RateLimitResponse* response) override {
    const std::shared_ptr<const Configuration> configuration = std::atomic_load(&configuration_);
    try {
      *response = decider_->decide(*configuration, *request);
      return grpc::Status::OK;
    } catch (const InvalidArgument& error) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, error.what());
    } catch (const Error& error) {  // Redis failed, and the failure policy says to say so
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, error.what());
    }
  }

 private:
  Decider* decider_;
  std::shared_ptr<const Configuration> configuration_;
};

}  // namespace swl::ratelimit

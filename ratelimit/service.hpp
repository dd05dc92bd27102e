#pragma once
/// \file
/// The gRPC face of swl-ratelimit: Envoy's RateLimitService, answering from the configuration in force.
/// A new configuration replaces it whole, at once: a call started before goes on with the one it took.
///
/// gRPC's callback API: gRPC's own work per call costs the server half the CPU it costs through the
/// synchronous API (bench/README.md measures both). Its threads must never wait, so each decision that
/// asks Redis runs on DecidingThreads, which finish the call; one that needs no Redis is answered at
/// once, and health checks never queue behind Redis.

#include <ratelimit/config.hpp>
#include <ratelimit/decider.hpp>
#include <ratelimit/deciding_threads.hpp>

#include <swl/error.hpp>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <exception>
#include <memory>
#include <optional>
#include <utility>

namespace swl::ratelimit {

class RateLimitService final : public rls::RateLimitService::CallbackService {
 public:
  /// Decides with `decider` on `threads`; both must outlive the server's calls (Server::Shutdown waits
  /// for them).
  RateLimitService(Decider& decider, DecidingThreads& threads, std::shared_ptr<const Configuration> configuration)
      : decider_(&decider), threads_(&threads), configuration_(std::move(configuration)) {}

  /// The configuration later calls answer from.
  void replace(std::shared_ptr<const Configuration> configuration) {
    std::atomic_store(&configuration_, std::move(configuration));
  }

  /// Envoy's call: its descriptors found here, and, when any is limited, decided on a deciding thread,
  /// which finishes it. The request and the response stay valid until then.
  grpc::ServerUnaryReactor* ShouldRateLimit(grpc::CallbackServerContext* context, const rls::RateLimitRequest* request,
                                            rls::RateLimitResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    std::shared_ptr<const Configuration> configuration = std::atomic_load(&configuration_);
    std::optional<Plan> plan;
    bool asks_redis = false;
    const grpc::Status planned = answer([&] {
      plan.emplace(decider_->plan(*configuration, *request));
      asks_redis = plan->asksRedis();
      if (!asks_redis) *response = decider_->decide(std::move(*plan));  // all OK, and nothing to count
    });
    if (!asks_redis) {
      reactor->Finish(planned);
      return reactor;
    }
    // The plan points into the configuration, which the work keeps.
    threads_->post([this, reactor, response, configuration = std::move(configuration),
                    plan = std::make_shared<Plan>(std::move(*plan))] {
      reactor->Finish(answer([&] { *response = decider_->decide(std::move(*plan)); }));
    });
    return reactor;
  }

 private:
  // The status of a call whose work is `work`, whatever it throws.
  template <class Work>
  static grpc::Status answer(Work&& work) noexcept {
    try {
      work();
      return grpc::Status::OK;
    } catch (const InvalidArgument& error) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, error.what());
    } catch (const Error& error) {  // Redis failed, and the failure policy says to say so
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, error.what());
    } catch (const std::exception& error) {  // memory, say: the call must end, and the thread go on
      return grpc::Status(grpc::StatusCode::INTERNAL, error.what());
    }
  }

  Decider* decider_;
  DecidingThreads* threads_;
  std::shared_ptr<const Configuration> configuration_;
};

}  // namespace swl::ratelimit

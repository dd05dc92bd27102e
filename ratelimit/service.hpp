#pragma once
/// \file
/// The gRPC face of swl-ratelimit: Envoy's RateLimitService, answering from the configuration in force.
/// A new configuration replaces it whole, at once: a call started before goes on with the one it took.
///
/// gRPC's callback API: gRPC's own work per call costs the server half the CPU it costs through the
/// synchronous API (bench/README.md measures both). Its threads must never wait, so each decision that
/// asks Redis runs on DecidingThreads, which decide the calls that wait together in one round trip to
/// Redis and finish them; one that needs no Redis is answered at once, and health checks never queue
/// behind Redis.

#include <ratelimit/config.hpp>
#include <ratelimit/decider.hpp>
#include <ratelimit/deciding_threads.hpp>

#include <swl/error.hpp>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace swl::ratelimit {

class RateLimitService final : public rls::RateLimitService::CallbackService {
 public:
  /// How many calls one deciding thread decides together, at most: one runMany's worth.
  static constexpr std::size_t kMostCallsAtOnce = 64;

  /// Decides with `decider`, which must outlive it, on `deciding_threads` threads (one per Redis
  /// connection, so that no batch waits for a connection). Its destruction decides the calls handed over.
  RateLimitService(Decider& decider, std::size_t deciding_threads, std::shared_ptr<const Configuration> configuration)
      : decider_(&decider),
        configuration_(std::move(configuration)),
        threads_(deciding_threads, kMostCallsAtOnce, [this](std::vector<Call>& calls) { decide(calls); }) {}

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
    threads_.post(Call{reactor, response, std::move(configuration), std::move(*plan)});
    return reactor;
  }

 private:
  // A call handed to a deciding thread, which finishes it.
  struct Call {
    grpc::ServerUnaryReactor* reactor;
    rls::RateLimitResponse* response;
    std::shared_ptr<const Configuration> configuration;  // what the plan points into
    Plan plan;
  };

  // Decides `calls` together and finishes each.
  void decide(std::vector<Call>& calls) noexcept {
    std::vector<Decider::Answer> answers;
    const grpc::Status decided = answer([&] {
      std::vector<Plan> plans;
      plans.reserve(calls.size());
      for (Call& call : calls) plans.push_back(std::move(call.plan));
      answers = decider_->decideMany(std::move(plans));
    });
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (!decided.ok()) {
        calls[i].reactor->Finish(decided);
        continue;
      }
      calls[i].reactor->Finish(answer([&] {
        if (answers[i].error) std::rethrow_exception(answers[i].error);
        *calls[i].response = std::move(answers[i].response);
      }));
    }
  }

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
  std::shared_ptr<const Configuration> configuration_;
  DecidingThreads<Call> threads_;  // last: joined first, while what its calls use lives
};

}  // namespace swl::ratelimit

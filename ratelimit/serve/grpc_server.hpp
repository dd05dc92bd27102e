#pragma once
/// \file
/// The gRPC face of swl-ratelimit: Envoy's RateLimitService and gRPC's health check, answering from the
/// configuration in force. A new configuration replaces it whole, at once: a call started before goes
/// on with the one it took.
///
/// gRPC's asynchronous API, on threads of our own: a thread takes gRPC's calls from its completion
/// queue and decides them itself, so that a call never crosses from one thread to another. It takes
/// every call that waits (up to a batch's most) and decides them together in one pipelined round trip
/// to Redis (Decider::decideMany); while it waits on Redis, new calls queue, and its next round takes
/// them all. A call that needs no Redis is answered at once. Every thread that waits in gRPC's poller
/// costs the others wake-ups (bench/README.md measures it), so the service has no thread of gRPC's:
/// it answers health checks itself, and each thread's standby sleeps until the thread has waited on
/// Redis for kPatience; then the standby answers the queue's calls that need no Redis, and keeps the
/// others for the thread's next round.

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/decide/decider.hpp>
#include <ratelimit/reload/in_force.hpp>
#include <ratelimit/serve/health.hpp>
#include <ratelimit/serve/kuadrant_service.hpp>
#include <ratelimit/serve/options.hpp>
#include <ratelimit/serve/tls.hpp>

#include <swl/error.hpp>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace swl::ratelimit {

class RateLimitServer {
 public:
  /// How many calls one thread decides together, at most: one runMany's worth.
  static constexpr std::size_t kMostCallsAtOnce = 64;
  /// How long a thread may wait on Redis before its standby answers the calls that need no Redis
  /// (health checks, unlimited descriptors); also how often an idle standby looks.
  static constexpr std::chrono::milliseconds kPatience{10};

  /// Serves Envoy's RateLimitService as `options` say with `threads` threads (at least one), each
  /// deciding with `decider` under the configuration `in_force` holds (both must outlive it) on a Redis
  /// connection of its own. gRPC's health check answers NOT_SERVING while `health` says unhealthy (after
  /// SIGTERM; without a domain when it must have one); without one, SERVING while the server runs.
  /// `answered` is told how long each ShouldRateLimit call took, once answered (for statsd's
  /// ratelimit_server.ShouldRateLimit.*). Throws swl::Error when it cannot listen, or when a file of
  /// `options.tls` is wrong.
  RateLimitServer(Decider& decider, std::size_t threads, const ConfigurationInForce& in_force,
                  const GrpcOptions& options, const Health* health = nullptr,
                  std::function<void(std::chrono::nanoseconds took)> answered = {})
      : decider_(&decider),
        in_force_(&in_force),
        healthy_(health),
        answered_(std::move(answered)),
        kuadrant_(decider, in_force) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(options.listen, serverCredentials(options.tls), &port_);  // TLS: serve/tls.hpp
    const auto milliseconds = [](std::chrono::milliseconds duration) {
      return static_cast<int>(std::min<std::chrono::milliseconds::rep>(duration.count(), INT32_MAX));
    };
    if (options.max_connection_age) {
      builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, milliseconds(*options.max_connection_age));
    }
    if (options.max_connection_age_grace) {
      builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, milliseconds(*options.max_connection_age_grace));
    }
    builder.RegisterService(&limits_);
    builder.RegisterService(&health_);
    builder.RegisterService(&kuadrant_);  // Kuadrant's protocol beside Envoy's: serve/kuadrant_service.hpp
    for (std::size_t i = 0; i < std::max<std::size_t>(threads, 1); ++i) {
      workers_.push_back(std::make_unique<Worker>(builder.AddCompletionQueue()));
    }
    server_ = builder.BuildAndStart();
    if (!server_ || port_ == 0) throw Error("swl-ratelimit: cannot listen on " + options.listen);
    for (const auto& worker : workers_) {
      {
        const std::lock_guard<std::mutex> lock(worker->mutex);
        for (std::size_t i = 0; i < kMostCallsAtOnce; ++i) awaitLimitCall(*worker);
        awaitHealthCheck(*worker);
      }
      worker->thread = std::thread([this, &worker = *worker] { serve(worker); });
      worker->standby = std::thread([this, &worker = *worker] { standBy(worker); });
    }
  }

  /// Finishes the calls in progress, then stops.
  ~RateLimitServer() {
    server_->Shutdown();
    for (const auto& worker : workers_) {
      {
        const std::lock_guard<std::mutex> lock(worker->mutex);
        worker->stopping = true;
      }
      worker->standby_wake.notify_one();
      worker->queue->Shutdown();
    }
    for (const auto& worker : workers_) {
      worker->thread.join();
      worker->standby.join();
    }
  }

  RateLimitServer(const RateLimitServer&) = delete;
  RateLimitServer& operator=(const RateLimitServer&) = delete;

  /// The port it listens on (the one chosen, for port 0).
  int port() const { return port_; }

 private:
  struct Worker;
  struct LimitCall;

  // One call, from the moment a thread asks gRPC for one until gRPC has sent its answer: its tag.
  struct Call {
    virtual ~Call() = default;

    // The call came: it is answered, or joins `batch` when it asks Redis.
    virtual void arrived(RateLimitServer& server, std::vector<LimitCall*>& batch) = 0;

    explicit Call(Worker& owner) : worker(&owner) {}

    Worker* worker;
    std::list<std::unique_ptr<Call>>::iterator self;  // its place in the worker's calls
    grpc::ServerContext context;
    bool answered = false;  // Finish was called: its next event ends it
  };

  struct LimitCall final : Call {
    explicit LimitCall(Worker& owner) : Call(owner), writer(&context) {}

    void arrived(RateLimitServer& server, std::vector<LimitCall*>& batch) override {
      server.awaitLimitCall(*worker);  // the next call, while this one is decided
      started = std::chrono::steady_clock::now();
      answered_to = &server.answered_;
      configuration = server.in_force_->get();
      bool asks_redis = false;
      const grpc::Status planned = answer([&] {
        plan.emplace(server.decider_->plan(*configuration, request));
        asks_redis = plan->asksRedis();
        if (!asks_redis) response = server.decider_->decide(std::move(*plan));  // all OK, and nothing to count
      });
      if (asks_redis) return batch.push_back(this);
      finish(planned);
    }

    void finish(const grpc::Status& status) {
      answered = true;
      if (*answered_to) (*answered_to)(std::chrono::steady_clock::now() - started);
      if (status.ok()) return writer.Finish(response, status, this);
      writer.FinishWithError(status, this);
    }

    rls::RateLimitRequest request;
    rls::RateLimitResponse response;
    grpc::ServerAsyncResponseWriter<rls::RateLimitResponse> writer;
    std::shared_ptr<const Configuration> configuration;  // what the plan points into
    std::optional<Plan> plan;
    std::chrono::steady_clock::time_point started;
    const std::function<void(std::chrono::nanoseconds)>* answered_to = nullptr;  // the server's
  };

  // gRPC's health check: the whole server, or the rate limit service by name, is serving while it runs
  // and its Health says so.
  struct HealthCheck final : Call {
    explicit HealthCheck(Worker& owner) : Call(owner), writer(&context) {}

    void arrived(RateLimitServer& server, std::vector<LimitCall*>& /*batch*/) override {
      server.awaitHealthCheck(*worker);
      answered = true;
      if (!request.service().empty() && request.service() != rls::RateLimitService::service_full_name()) {
        return writer.FinishWithError(grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service " + request.service()),
                                      this);
      }
      const bool healthy = server.healthy_ == nullptr || server.healthy_->healthy();
      response.set_status(healthy ? grpc::health::v1::HealthCheckResponse::SERVING
                                  : grpc::health::v1::HealthCheckResponse::NOT_SERVING);
      writer.Finish(response, grpc::Status::OK, this);
    }

    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    grpc::ServerAsyncResponseWriter<grpc::health::v1::HealthCheckResponse> writer;
  };

  // A thread, its completion queue and its standby. The mutex guards all but the queue and the threads:
  // the thread and its standby both take the queue's events, one at a time.
  struct Worker {
    explicit Worker(std::unique_ptr<grpc::ServerCompletionQueue> completion_queue)
        : queue(std::move(completion_queue)) {}

    std::unique_ptr<grpc::ServerCompletionQueue> queue;
    std::mutex mutex;
    std::list<std::unique_ptr<Call>> calls;  // awaited or in progress
    std::vector<LimitCall*> taken;           // by the standby, for the thread's next round
    bool deciding = false;                   // the thread waits on Redis
    std::size_t rounds = 0;                  // of deciding, so far
    bool stopping = false;
    grpc::Alarm wake_up;  // the standby's event on the queue, for calls it took as the thread stopped waiting
    bool waking = false;  // wake_up is set, and its event not yet taken
    std::condition_variable standby_wake;  // at the end only
    std::thread thread;
    std::thread standby;
  };

  // Asks gRPC for the next call of its kind on `worker`'s queue, unless the server stops. The caller
  // holds the worker's mutex.
  template <class Kind, class Request>
  void await(Worker& worker, Request request) {
    if (worker.stopping) return;
    auto call = std::make_unique<Kind>(worker);
    Kind& awaited = *call;
    awaited.self = worker.calls.insert(worker.calls.end(), std::move(call));
    request(awaited, worker.queue.get());
  }

  void awaitLimitCall(Worker& worker) {
    await<LimitCall>(worker, [this](LimitCall& call, grpc::ServerCompletionQueue* queue) {
      limits_.RequestShouldRateLimit(&call.context, &call.request, &call.writer, queue, queue, &call);
    });
  }

  void awaitHealthCheck(Worker& worker) {
    await<HealthCheck>(worker, [this](HealthCheck& call, grpc::ServerCompletionQueue* queue) {
      health_.RequestCheck(&call.context, &call.request, &call.writer, queue, queue, &call);
    });
  }

  // The thread: every call that waits, decided in rounds.
  void serve(Worker& worker) {
    std::vector<LimitCall*> batch;
    void* tag = nullptr;
    bool ok = false;
    for (;;) {
      {
        const std::lock_guard<std::mutex> lock(worker.mutex);  // what the standby took, a batch at a time
        const auto count = static_cast<std::ptrdiff_t>(std::min(worker.taken.size(), kMostCallsAtOnce));
        batch.assign(worker.taken.begin(), worker.taken.begin() + count);
        worker.taken.erase(worker.taken.begin(), worker.taken.begin() + count);
      }
      if (batch.empty()) {
        if (!worker.queue->Next(&tag, &ok)) return;
        take(worker, tag, ok, batch);
      }
      while (batch.size() < kMostCallsAtOnce &&
             worker.queue->AsyncNext(&tag, &ok, gpr_time_0(GPR_CLOCK_MONOTONIC)) == grpc::CompletionQueue::GOT_EVENT) {
        take(worker, tag, ok, batch);
      }
      if (batch.empty()) continue;
      setDeciding(worker, true);
      decide(batch);
      setDeciding(worker, false);
      batch.clear();
    }
  }

  // The standby: while the thread has waited on Redis for kPatience, the queue's events.
  void standBy(Worker& worker) {
    std::unique_lock<std::mutex> lock(worker.mutex);
    while (!worker.stopping) {
      const std::size_t round = worker.rounds;
      worker.standby_wake.wait_for(lock, kPatience);
      if (worker.stopping || !worker.deciding || worker.rounds != round) continue;
      while (worker.deciding && worker.rounds == round && !worker.stopping) {
        lock.unlock();
        void* tag = nullptr;
        bool ok = false;
        const auto status = worker.queue->AsyncNext(&tag, &ok, std::chrono::system_clock::now() + kPatience);
        lock.lock();
        if (status == grpc::CompletionQueue::SHUTDOWN) return;
        if (status == grpc::CompletionQueue::GOT_EVENT) takeLocked(worker, tag, ok, worker.taken);
      }
      // The thread may be waiting for the queue's next event already: the calls taken need one.
      if (!worker.taken.empty() && !worker.stopping && !worker.waking) {
        worker.waking = true;
        worker.wake_up.Set(worker.queue.get(), gpr_time_0(GPR_CLOCK_MONOTONIC), &worker.wake_up);
      }
    }
  }

  void setDeciding(Worker& worker, bool deciding) {
    const std::lock_guard<std::mutex> lock(worker.mutex);
    worker.deciding = deciding;
    if (deciding) ++worker.rounds;
  }

  void take(Worker& worker, void* tag, bool ok, std::vector<LimitCall*>& batch) {
    const std::lock_guard<std::mutex> lock(worker.mutex);
    takeLocked(worker, tag, ok, batch);
  }

  // What an event means (the caller holds the worker's mutex): a call came (answered, or added to `batch` when it asks
  // Redis), a call ended, or the standby woke the thread.
  void takeLocked(Worker& worker, void* tag, bool ok, std::vector<LimitCall*>& batch) {
    if (tag == &worker.wake_up) {
      worker.waking = false;
      return;
    }
    Call& call = *static_cast<Call*>(tag);
    if (call.answered || !ok) {
      worker.calls.erase(call.self);
      return;
    }
    call.arrived(*this, batch);
  }

  // Decides `batch` together and finishes each call.
  void decide(const std::vector<LimitCall*>& batch) {
    std::vector<Decider::Answer> answers;
    const grpc::Status decided = answer([&] {
      std::vector<Plan> plans;
      plans.reserve(batch.size());
      for (LimitCall* call : batch) plans.push_back(std::move(*call->plan));
      answers = decider_->decideMany(std::move(plans));
    });
    for (std::size_t i = 0; i < batch.size(); ++i) {
      LimitCall& call = *batch[i];
      if (!decided.ok()) {
        call.finish(decided);
        continue;
      }
      call.finish(answer([&] {
        if (answers[i].error) std::rethrow_exception(answers[i].error);
        call.response = std::move(answers[i].response);
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
  const ConfigurationInForce* in_force_;
  const Health* healthy_;
  std::function<void(std::chrono::nanoseconds)> answered_;
  rls::RateLimitService::AsyncService limits_;
  grpc::health::v1::Health::AsyncService health_;
  KuadrantService kuadrant_;
  int port_ = 0;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<grpc::Server> server_;  // after the workers: destroyed before their queues
};

}  // namespace swl::ratelimit

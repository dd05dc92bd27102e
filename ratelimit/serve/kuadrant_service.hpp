#pragma once
/// \file
/// Kuadrant's rate limit service (kuadrant.service.ratelimit.v1.RateLimitService, limitador's), served on
/// the gRPC port beside Envoy's, deciding by the same configuration and counters:
///
/// - CheckRateLimit: OK while one more hit fits every counter the descriptors reach, else OVER_LIMIT;
///   nothing is counted (limitador's is_rate_limited with a delta of 1);
/// - Report: the hits (a descriptor's own hits_addend, else the request's, 1 when 0) charged to every
///   counter, whether or not they fit: the units were spent. Answered OK, as limitador answers; each
///   descriptor's status says whether its counter still held them;
/// - Reserve (with --reservations): `amount` units held on every counter the descriptors reach, all or
///   nothing, for `ttl` (1 ms up to the shortest window): OK with a reservation id, or OVER_LIMIT. Checks
///   and decisions count what is held (decide/reservations.hpp);
/// - Commit: the reservation's hold settled to `actual_amount` (0 releases it) and released:
///   reservation_released true. One committed before changes nothing; one unknown or whose hold ran out
///   is charged as Report charges (limitador's rule: the units were spent), released false. No id
///   charges as Report does;
/// - an empty domain is answered UNKNOWN, as limitador answers it (a Commit: nothing released).
///
/// Synchronous: gRPC's own threads call the decider, one call at a time each; Envoy's calls keep the
/// server's threads and their round trips (grpc_server.hpp).

#include <ratelimit/decide/decider.hpp>
#include <ratelimit/decide/plan.hpp>
#include <ratelimit/decide/reservations.hpp>
#include <ratelimit/reload/in_force.hpp>

#include "kuadrant/service/ratelimit/v1/kuadrantrls.grpc.pb.h"

#include <swl/error.hpp>

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace swl::ratelimit {

class KuadrantService final : public kuadrant::service::ratelimit::v1::RateLimitService::Service {
 public:
  /// Decides with `decider` under the configuration `in_force` holds; both must outlive it.
  KuadrantService(Decider& decider, const ConfigurationInForce& in_force) : decider_(&decider), in_force_(&in_force) {}

  grpc::Status CheckRateLimit(grpc::ServerContext* /*context*/, const rls::RateLimitRequest* request,
                              rls::RateLimitResponse* response) override {
    return answer(*request, Asking::check_rate_limit, *response);
  }

  grpc::Status Report(grpc::ServerContext* /*context*/, const rls::RateLimitRequest* request,
                      rls::RateLimitResponse* response) override {
    const grpc::Status status = answer(*request, Asking::report, *response);
    if (status.ok() && response->overall_code() != rls::RateLimitResponse::UNKNOWN) {
      response->set_overall_code(rls::RateLimitResponse::OK);
    }
    return status;
  }

  grpc::Status Reserve(grpc::ServerContext* /*context*/,
                       const kuadrant::service::ratelimit::v1::ReserveRequest* request,
                       kuadrant::service::ratelimit::v1::ReserveResponse* response) override {
    if (request->domain().empty()) {
      response->set_code(rls::RateLimitResponse::UNKNOWN);
      return grpc::Status::OK;
    }
    return answering([&] {
      const std::chrono::microseconds hold_for = holdOf(*request);
      const auto configuration = in_force_->get();
      Plan plan = planOf(*configuration, *request, Asking::should_rate_limit, amountOf(request->amount(), "amount"));
      const ReservationAnswer reserved = reserve(decider_->limiters(), everyLimited(plan), hold_for);
      response->set_code(reserved.reserved ? rls::RateLimitResponse::OK : rls::RateLimitResponse::OVER_LIMIT);
      response->set_reservation_id(reserved.id);
    });
  }

  grpc::Status Commit(grpc::ServerContext* /*context*/, const kuadrant::service::ratelimit::v1::CommitRequest* request,
                      kuadrant::service::ratelimit::v1::CommitResponse* response) override {
    if (request->domain().empty()) return grpc::Status::OK;
    return answering([&] {
      const std::int64_t actual = amountOf(request->actual_amount(), "actual_amount");
      const auto configuration = in_force_->get();
      if (request->reservation_id().empty()) {  // nothing reserved: the units were spent, as a Report says
        if (actual > 0) decider_->decide(planOf(*configuration, *request, Asking::report, actual));
        return;
      }
      Plan plan = planOf(*configuration, *request, Asking::should_rate_limit, std::max<std::int64_t>(actual, 1));
      response->set_reservation_released(
          commit(decider_->limiters(), everyLimited(plan), request->reservation_id(), actual));
    });
  }

 private:
  grpc::Status answer(const rls::RateLimitRequest& request, Asking asking, rls::RateLimitResponse& response) {
    if (request.domain().empty()) {
      response.set_overall_code(rls::RateLimitResponse::UNKNOWN);
      return grpc::Status::OK;
    }
    try {
      const auto configuration = in_force_->get();  // what the plan points into, while it is decided
      response = decider_->decide(decider_->plan(*configuration, request, asking));
      return grpc::Status::OK;
    } catch (const InvalidArgument& error) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, error.what());
    } catch (const Error& error) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, error.what());
    }
  }

  // Runs `call`, answering bad input INVALID_ARGUMENT and Redis's failures UNAVAILABLE (as limitador
  // answers them: Envoy's failure_mode_deny then says what the request gets).
  template <class Call>
  static grpc::Status answering(Call&& call) {
    try {
      call();
      return grpc::Status::OK;
    } catch (const InvalidArgument& error) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, error.what());
    } catch (const Error& error) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, error.what());
    }
  }

  // An amount of units as the counters take it: up to 2^53, and a reservation of at least 1.
  static std::int64_t amountOf(std::uint64_t amount, const char* field) {
    if (amount >= (std::uint64_t{1} << 53)) {
      throw InvalidArgument("swl-ratelimit: " + std::string(field) + " " + std::to_string(amount) +
                            " is past 2^53, more than a counter holds exactly");
    }
    if (amount == 0 && std::string_view(field) == "amount") {
      throw InvalidArgument("swl-ratelimit: a Reserve of amount 0 holds nothing; reserve 1 or more");
    }
    return static_cast<std::int64_t>(amount);
  }

  // A Reserve's ttl: given, and in whole microseconds up to a day (MultiLimiter::reserve holds it to the
  // counters' shortest window).
  static std::chrono::microseconds holdOf(const kuadrant::service::ratelimit::v1::ReserveRequest& request) {
    const auto& ttl = request.ttl();
    const std::int64_t seconds = ttl.seconds();
    if (!request.has_ttl() || seconds < 0 || ttl.nanos() < 0 || (seconds == 0 && ttl.nanos() == 0) ||
        seconds > 86'400) {
      throw InvalidArgument("swl-ratelimit: a Reserve's ttl of " + std::to_string(seconds) + " s and " +
                            std::to_string(ttl.nanos()) +
                            " ns is not a hold: give 1 ms up to the shortest window of its counters");
    }
    return std::chrono::seconds(seconds) + std::chrono::microseconds(ttl.nanos() / 1000);
  }

  // The plan of Kuadrant's domain and descriptors, each asked `hits` (past what Envoy's 32-bit
  // hits_addend carries).
  template <class KuadrantRequest>
  Plan planOf(const Configuration& configuration, const KuadrantRequest& request, Asking asking,
              std::int64_t hits) const {
    rls::RateLimitRequest asked;
    asked.set_domain(request.domain());
    *asked.mutable_descriptors() = request.descriptors();
    asked.set_hits_addend(1);
    Plan plan = decider_->plan(configuration, asked, asking);
    for (LimitedDescriptor& each : plan.limited()) each.hits = hits;
    return plan;
  }

  Decider* decider_;
  const ConfigurationInForce* in_force_;
};

}  // namespace swl::ratelimit

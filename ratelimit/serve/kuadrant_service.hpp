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
/// - an empty domain is answered UNKNOWN, as limitador answers it;
/// - Reserve and Commit: UNIMPLEMENTED, not yet (docs/ratelimit.md, "Token budgets").
///
/// Synchronous: gRPC's own threads call the decider, one call at a time each; Envoy's calls keep the
/// server's threads and their round trips (grpc_server.hpp).

#include <ratelimit/decide/decider.hpp>
#include <ratelimit/decide/plan.hpp>
#include <ratelimit/reload/in_force.hpp>

#include "kuadrant/service/ratelimit/v1/kuadrantrls.grpc.pb.h"

#include <swl/error.hpp>

#include <grpcpp/grpcpp.h>

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

  grpc::Status Reserve(grpc::ServerContext* /*context*/, const kuadrant::service::ratelimit::v1::ReserveRequest*,
                       kuadrant::service::ratelimit::v1::ReserveResponse*) override {
    return notYet("Reserve");
  }

  grpc::Status Commit(grpc::ServerContext* /*context*/, const kuadrant::service::ratelimit::v1::CommitRequest*,
                      kuadrant::service::ratelimit::v1::CommitResponse*) override {
    return notYet("Commit");
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

  static grpc::Status notYet(const char* method) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, std::string("swl-ratelimit: kuadrant.service.ratelimit.v1 ") +
                                                             method +
                                                             " is not served yet; CheckRateLimit and Report are");
  }

  Decider* decider_;
  const ConfigurationInForce* in_force_;
};

}  // namespace swl::ratelimit

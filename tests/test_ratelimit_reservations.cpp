// Kuadrant's Reserve and Commit on swl-ratelimit (--reservations yes): units held on the exact sliding
// window until committed or their ttl passes, seen by every check; a commit settles the hold (0 releases
// it), a repeated commit changes nothing, an unknown or late one charges as Report does. Several clients on
// two server processes over one Redis keep the totals exact; Redis frozen between reserve and commit counts
// nothing twice. The server program, real gRPC clients of the Kuadrant service, a private redis-server.
// (The window's arithmetic against a model, holds running out on a manual clock: tests/test_multi_holds.cpp.)

#include "support/ratelimit_requests.hpp"
#include "support/ratelimit_server.hpp"
#include "support/redis_server.hpp"

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "kuadrant/service/ratelimit/v1/kuadrantrls.grpc.pb.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

// A namespace of its own: the test files of one program share a translation unit (tests/CMakeLists.txt).
namespace ratelimit_reservations_tests {

namespace rls = envoy::service::ratelimit::v3;
namespace kuadrant_v1 = ::kuadrant::service::ratelimit::v1;
using swl::test::Entries;
using swl::test::RateLimitProcess;
using swl::test::RedisServer;
using swl::test::TemporaryDirectory;

// A token budget of 1,000 an hour per user; a large one for the totals; a fixed window, which holds nothing.
constexpr const char* kRules = R"yaml(domain: llm
descriptors:
  - key: user
    rate_limit:
      unit: hour
      requests_per_unit: 1000
  - key: team
    rate_limit:
      unit: hour
      requests_per_unit: 1000000000
  - key: fixed
    rate_limit:
      unit: hour
      requests_per_unit: 1000
      algorithm: fixed_window
  - key: short
    rate_limit:
      unit: second
      requests_per_unit: 1000
  - key: cap
    rate_limit:
      unit: hour
      requests_per_unit: 50
)yaml";

const Entries kAnn{{"user", "ann"}};

// One server process's Kuadrant service, as a client sees it.
class KuadrantClient {
 public:
  explicit KuadrantClient(const std::shared_ptr<grpc::Channel>& channel)
      : stub_(kuadrant_v1::RateLimitService::NewStub(channel)) {}

  grpc::Status reserve(const Entries& descriptor, std::uint64_t amount, std::chrono::milliseconds ttl,
                       kuadrant_v1::ReserveResponse& response) {
    kuadrant_v1::ReserveRequest request;
    request.set_domain("llm");
    *request.add_descriptors() = swl::test::request({descriptor}, 0, "llm").descriptors(0);
    request.set_amount(amount);
    if (ttl.count() > 0) {
      request.mutable_ttl()->set_seconds(ttl.count() / 1000);
      request.mutable_ttl()->set_nanos(static_cast<std::int32_t>(ttl.count() % 1000 * 1'000'000));
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return stub_->Reserve(&context, request, &response);
  }
  // A reservation's id, or "" when it was refused (OVER_LIMIT).
  std::string reserved(const Entries& descriptor, std::uint64_t amount,
                       std::chrono::milliseconds ttl = std::chrono::minutes(10)) {
    kuadrant_v1::ReserveResponse response;
    const grpc::Status status = reserve(descriptor, amount, ttl, response);
    INFO(status.error_message());
    REQUIRE(status.ok());
    REQUIRE((response.code() == rls::RateLimitResponse::OK) == !response.reservation_id().empty());
    return response.reservation_id();
  }

  grpc::Status commit(const Entries& descriptor, const std::string& id, std::uint64_t actual,
                      kuadrant_v1::CommitResponse& response) {
    kuadrant_v1::CommitRequest request;
    request.set_domain("llm");
    *request.add_descriptors() = swl::test::request({descriptor}, 0, "llm").descriptors(0);
    request.set_reservation_id(id);
    request.set_actual_amount(actual);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return stub_->Commit(&context, request, &response);
  }
  // Whether the commit released a hold.
  bool committed(const Entries& descriptor, const std::string& id, std::uint64_t actual) {
    kuadrant_v1::CommitResponse response;
    const grpc::Status status = commit(descriptor, id, actual, response);
    INFO(status.error_message());
    REQUIRE(status.ok());
    return response.reservation_released();
  }

  // CheckRateLimit's answer for one descriptor: whether one more unit fits, and what it says is left.
  rls::RateLimitResponse check(const Entries& descriptor) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    rls::RateLimitResponse response;
    const grpc::Status status = stub_->CheckRateLimit(&context, swl::test::request({descriptor}, 0, "llm"), &response);
    INFO(status.error_message());
    REQUIRE(status.ok());
    return response;
  }
  bool admits(const Entries& descriptor) { return check(descriptor).overall_code() == rls::RateLimitResponse::OK; }
  // The units the descriptor's window holds, spent and held, under a limit of `limit`.
  std::int64_t held(const Entries& descriptor, std::int64_t limit) {
    return limit - check(descriptor).statuses(0).limit_remaining();
  }

 private:
  std::unique_ptr<kuadrant_v1::RateLimitService::Stub> stub_;
};

// swl-ratelimit with reservations on (or `flags`), over a private Redis.
struct Reservations {
  explicit Reservations(const std::vector<std::string>& flags = {"--reservations", "yes"})
      : process(directory.path() / "server.out", arguments(flags), {},
                RateLimitProcess::Inherit::the_tests_environment),
        kuadrant(process.channel()) {}

  std::vector<std::string> arguments(const std::vector<std::string>& flags) {
    std::vector<std::string> all{"--config", directory.write("config/llm.yaml", kRules).string(),
                                 "--listen", "127.0.0.1:0",
                                 "--redis",  "127.0.0.1:" + std::to_string(redis.port())};
    all.insert(all.end(), flags.begin(), flags.end());
    return all;
  }

  TemporaryDirectory directory;
  RedisServer redis;
  RateLimitProcess process;
  KuadrantClient kuadrant;
};

TEST_CASE_METHOD(Reservations, "Kuadrant's reservation holds units that checks see, and its commit settles them once") {
  const std::string first = kuadrant.reserved(kAnn, 600);
  REQUIRE_FALSE(first.empty());
  CHECK(kuadrant.held(kAnn, 1000) == 600);
  CHECK(kuadrant.reserved(kAnn, 500).empty());  // 600 held + 500 > 1,000: OVER_LIMIT, nothing held
  CHECK(kuadrant.held(kAnn, 1000) == 600);

  CHECK(kuadrant.committed(kAnn, first, 200));  // the stream used 200: 400 go back
  CHECK(kuadrant.held(kAnn, 1000) == 200);
  CHECK_FALSE(kuadrant.committed(kAnn, first, 200));  // a second commit releases nothing, charges nothing
  CHECK(kuadrant.held(kAnn, 1000) == 200);

  const std::string second = kuadrant.reserved(kAnn, 800);
  REQUIRE_FALSE(second.empty());
  CHECK_FALSE(kuadrant.admits(kAnn));          // 200 spent + 800 held reach the limit: no check admits
  CHECK(kuadrant.committed(kAnn, second, 0));  // 0 releases it all
  CHECK(kuadrant.held(kAnn, 1000) == 200);
  CHECK(kuadrant.admits(kAnn));
}

TEST_CASE_METHOD(Reservations, "a commit above the hold is recorded whole, so the budget binds") {
  const std::string id = kuadrant.reserved(kAnn, 300);
  CHECK(kuadrant.committed(kAnn, id, 1200));  // released, and 900 more charged past the limit
  CHECK(kuadrant.held(kAnn, 1000) == 1000);   // nothing left
  CHECK_FALSE(kuadrant.admits(kAnn));
  CHECK(kuadrant.reserved(kAnn, 1).empty());
  // The whole of it, counted where the limit is far:
  const Entries team{{"team", "red"}};
  CHECK(kuadrant.committed(team, kuadrant.reserved(team, 300), 1200));
  CHECK(kuadrant.held(team, 1'000'000'000) == 1200);
}

TEST_CASE_METHOD(Reservations, "Envoy's answers and their RateLimit headers count reserved units too") {
  REQUIRE_FALSE(kuadrant.reserved(kAnn, 600).empty());
  const auto envoy = rls::RateLimitService::NewStub(process.channel());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  rls::RateLimitResponse response;
  REQUIRE(envoy->ShouldRateLimit(&context, swl::test::request({kAnn}, 1, "llm"), &response).ok());
  CHECK(response.overall_code() == rls::RateLimitResponse::OK);
  CHECK(response.statuses(0).limit_remaining() == 399);  // 1,000 less 600 held less this one
  CHECK_THAT(swl::test::header(response, "ratelimit"), Catch::Contains(";r=399;"));
}

// Envoy's own calls reserve and commit: at the request a descriptor with `swl.reserve` (the hold's length)
// reserves its hits, and the answer's dynamic_metadata carries the id; when the stream is done the same
// descriptor with `swl.reservation` (the id, read back by a metadata action) commits the tokens used.
struct EnvoyReservations : Reservations {
  rls::RateLimitResponse call(const std::vector<Entries>& descriptors, std::uint32_t hits) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    rls::RateLimitResponse response;
    const grpc::Status status =
        envoy->ShouldRateLimit(&context, swl::test::request(descriptors, hits, "llm"), &response);
    INFO(status.error_message());
    REQUIRE(status.ok());
    return response;
  }
  static std::string reservationOf(const rls::RateLimitResponse& response) {
    const auto& fields = response.dynamic_metadata().fields();
    const auto found = fields.find("swl.reservation");
    return found == fields.end() ? "" : found->second.string_value();
  }

  std::unique_ptr<rls::RateLimitService::Stub> envoy = rls::RateLimitService::NewStub(process.channel());
};

TEST_CASE_METHOD(EnvoyReservations, "Envoy's calls reserve at the request and commit when the stream is done") {
  const rls::RateLimitResponse reserved = call({{{"user", "ann"}, {"swl.reserve", "30s"}}}, 600);
  CHECK(reserved.overall_code() == rls::RateLimitResponse::OK);
  CHECK(reserved.statuses(0).limit_remaining() == 400);
  const std::string id = reservationOf(reserved);
  REQUIRE_FALSE(id.empty());
  CHECK(kuadrant.held(kAnn, 1000) == 600);  // the same counter as the rule's, entries left out

  // Another request cannot reserve what is held; refused, it carries no id.
  const rls::RateLimitResponse refused = call({{{"user", "ann"}, {"swl.reserve", "30s"}}}, 500);
  CHECK(refused.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(reservationOf(refused).empty());

  const rls::RateLimitResponse done = call({{{"user", "ann"}, {"swl.reservation", id}}}, 150);
  CHECK(done.overall_code() == rls::RateLimitResponse::OK);
  CHECK(kuadrant.held(kAnn, 1000) == 150);
  call({{{"user", "ann"}, {"swl.reservation", id}}}, 150);  // Envoy retried: counted once
  CHECK(kuadrant.held(kAnn, 1000) == 150);
}

TEST_CASE_METHOD(EnvoyReservations, "a reservation whose request another descriptor refuses is released at once") {
  // 100 units never fit the cap of 50: the request is refused after Ann's counter reserved them.
  const rls::RateLimitResponse refused = call({{{"user", "ann"}, {"swl.reserve", "30s"}}, {{"cap", "c"}}}, 100);
  CHECK(refused.overall_code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(reservationOf(refused).empty());
  CHECK(kuadrant.held(kAnn, 1000) == 0);
}

TEST_CASE_METHOD(EnvoyReservations, "a reservation entry that says no length is refused, naming it") {
  grpc::ClientContext context;
  rls::RateLimitResponse response;
  const grpc::Status status = envoy->ShouldRateLimit(
      &context, swl::test::request({{{"user", "ann"}, {"swl.reserve", "soon"}}}, 10, "llm"), &response);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(status.error_message(), Catch::Contains("swl.reserve is \"soon\""));
  CHECK(kuadrant.held(kAnn, 1000) == 0);
}

TEST_CASE_METHOD(Reservations, "a hold whose client vanished is gone after its ttl, with nothing charged") {
  const std::string id = kuadrant.reserved(kAnn, 1000, std::chrono::milliseconds(800));
  REQUIRE_FALSE(id.empty());
  CHECK_FALSE(kuadrant.admits(kAnn));
  const auto reserved_at = std::chrono::steady_clock::now();
  REQUIRE(swl::test::eventually([&] { return kuadrant.admits(kAnn); }));
  CHECK(std::chrono::steady_clock::now() - reserved_at >= std::chrono::milliseconds(700));
  CHECK(kuadrant.held(kAnn, 1000) == 0);

  // Its commit, late: the units were spent, so they are charged (limitador's rule), and released is false.
  CHECK_FALSE(kuadrant.committed(kAnn, id, 250));
  CHECK(kuadrant.held(kAnn, 1000) == 250);
  CHECK_FALSE(kuadrant.committed(kAnn, id, 250));  // once
  CHECK(kuadrant.held(kAnn, 1000) == 250);
}

TEST_CASE_METHOD(Reservations, "a commit of an unknown reservation, or of none, charges its units as Report does") {
  CHECK_FALSE(kuadrant.committed(kAnn, "40:from-another-gateway", 40));
  CHECK(kuadrant.held(kAnn, 1000) == 40);
  CHECK_FALSE(kuadrant.committed(kAnn, "", 60));
  CHECK(kuadrant.held(kAnn, 1000) == 100);
}

TEST_CASE_METHOD(Reservations, "bad reservations get a clear answer and change nothing") {
  using Catch::Matchers::Contains;
  kuadrant_v1::ReserveResponse reserved;
  const auto refused = [&](std::uint64_t amount, std::chrono::milliseconds ttl, const Entries& descriptor = kAnn) {
    const grpc::Status status = kuadrant.reserve(descriptor, amount, ttl, reserved);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    return status.error_message();
  };
  CHECK_THAT(refused(0, std::chrono::seconds(10)), Contains("amount 0 holds nothing"));
  CHECK_THAT(refused(10, std::chrono::milliseconds(0)), Contains("is not a hold"));
  CHECK_THAT(refused(10, std::chrono::hours(25)), Contains("is not a hold"));
  CHECK_THAT(refused(10, std::chrono::hours(2)), Contains("the shortest window"));  // past the hour's window
  CHECK_THAT(refused(std::uint64_t{1} << 60, std::chrono::seconds(10)), Contains("past 2^53"));
  CHECK_THAT(refused(10, std::chrono::seconds(10), {{"fixed", "f"}}), Contains("only a sliding window log holds"));
  CHECK_THAT(refused(10, std::chrono::seconds(2), {{"short", "s"}}), Contains("the shortest window"));

  // More than the whole limit never fits: OVER_LIMIT, as a descriptor that never fits is answered.
  const grpc::Status too_much = kuadrant.reserve(kAnn, 1001, std::chrono::seconds(10), reserved);
  REQUIRE(too_much.ok());
  CHECK(reserved.code() == rls::RateLimitResponse::OVER_LIMIT);
  CHECK(reserved.reservation_id().empty());

  kuadrant_v1::CommitResponse committed;
  const grpc::Status bad_id = kuadrant.commit(kAnn, "not-an-id", 10, committed);
  CHECK(bad_id.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(bad_id.error_message(), Contains("is not a reservation id"));
  CHECK(kuadrant.held(kAnn, 1000) == 0);
}

TEST_CASE("without --reservations, Reserve and Commit are refused, naming the setting") {
  Reservations off(std::vector<std::string>{});
  kuadrant_v1::ReserveResponse reserved;
  const grpc::Status status = off.kuadrant.reserve(kAnn, 10, std::chrono::seconds(10), reserved);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(status.error_message(), Catch::Contains("--reservations yes"));
  CHECK(off.kuadrant.held(kAnn, 1000) == 0);
}

TEST_CASE_METHOD(Reservations, "Redis frozen between reserve and commit: the commit fails, and its retry counts once") {
  const std::string id = kuadrant.reserved(kAnn, 500);
  redis.pause();
  kuadrant_v1::CommitResponse response;
  const grpc::Status frozen = kuadrant.commit(kAnn, id, 100, response);
  CHECK(frozen.error_code() == grpc::StatusCode::UNAVAILABLE);
  redis.resume();
  // The frozen commit may still run when Redis wakes; either way the units count once. (The server's
  // circuit breaker refuses calls for a moment after the timeout.)
  REQUIRE(swl::test::eventually([&] { return kuadrant.commit(kAnn, id, 100, response).ok(); }));
  CHECK_FALSE(kuadrant.committed(kAnn, id, 100));
  CHECK(kuadrant.held(kAnn, 1000) == 100);
}

TEST_CASE(
    "several clients on two server processes over one Redis: every unit reserved, committed and charged counts "
    "exactly") {
  TemporaryDirectory directory;
  RedisServer redis;
  const std::vector<std::string> arguments{
      "--config", directory.write("config/llm.yaml", kRules).string(), "--listen",       "127.0.0.1:0",
      "--redis",  "127.0.0.1:" + std::to_string(redis.port()),         "--reservations", "yes"};
  RateLimitProcess one(directory.path() / "one.out", arguments, {}, RateLimitProcess::Inherit::the_tests_environment);
  RateLimitProcess two(directory.path() / "two.out", arguments, {}, RateLimitProcess::Inherit::the_tests_environment);

  // The team's budget is never reached: its total is the model's sum, whatever order the calls ran in.
  // Ann's is: each reservation there fits or is refused, and what it holds never passes 1,000.
  const Entries team{{"team", "blue"}};
  std::atomic<std::int64_t> team_units{0}, released{0}, repeats{0}, unknown{0}, over_hold{0}, refused{0}, failed{0};
  std::vector<std::thread> clients;
  for (int client = 0; client < 4; ++client) {
    clients.emplace_back([&, client] {  // no Catch assertion here: Catch is not thread-safe
      KuadrantClient near(one.channel()), far(two.channel());
      std::mt19937_64 random(static_cast<std::uint64_t>(client) + 1);
      const auto reserve = [&](KuadrantClient& to, const Entries& descriptor, std::uint64_t amount) {
        kuadrant_v1::ReserveResponse response;
        failed += !to.reserve(descriptor, amount, std::chrono::minutes(10), response).ok();
        return response.reservation_id();
      };
      const auto commit = [&](KuadrantClient& to, const Entries& descriptor, const std::string& id,
                              std::uint64_t actual) {
        kuadrant_v1::CommitResponse response;
        failed += !to.commit(descriptor, id, actual, response).ok();
        return response.reservation_released();
      };
      for (int i = 0; i < 60; ++i) {
        KuadrantClient& first = random() % 2 ? near : far;
        KuadrantClient& second = random() % 2 ? near : far;
        const std::uint64_t amount = 1 + random() % 500;
        const std::uint64_t actual = random() % (2 * amount);
        const std::string id = reserve(first, team, amount);
        if (commit(second, team, id, actual)) ++released;
        over_hold += actual > amount;
        if (random() % 3 == 0) repeats += !commit(first, team, id, actual);  // a retry: changes nothing
        team_units += static_cast<std::int64_t>(actual);
        if (random() % 5 == 0) {  // spent without a reservation this server knows
          const std::uint64_t spent = 1 + random() % 50;
          if (!commit(second, team, "7:elsewhere-" + std::to_string(client) + "-" + std::to_string(i), spent)) {
            ++unknown;
            team_units += static_cast<std::int64_t>(spent);
          }
        }
        const std::uint64_t asked = 1 + random() % 300;
        const std::string ann = reserve(first, kAnn, asked);
        if (ann.empty()) {
          ++refused;
        } else {
          commit(second, kAnn, ann, random() % (asked + 1));  // never above the hold: Ann's total stays <= 1,000
        }
      }
    });
  }
  for (std::thread& each : clients) each.join();
  std::cout << "two servers, 4 clients: " << released << " released, " << repeats << " repeated commits, " << unknown
            << " unknown ids charged, " << over_hold << " commits above the hold, " << refused
            << " of Ann's reservations refused\n";
  KuadrantClient check(one.channel());
  CHECK(failed == 0);
  CHECK(released == 240);
  CHECK(repeats > 40);
  CHECK(check.held(team, 1'000'000'000) == team_units);
  CHECK(check.held(kAnn, 1000) <= 1000);
  CHECK(refused > 0);
}

}  // namespace ratelimit_reservations_tests

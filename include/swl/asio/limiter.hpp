#pragma once
/// \file
/// AsioLimiter: any algorithm's limiter for services on Asio, its decisions awaited on the caller's event
/// loop with any completion token: `asio::deferred` by default (so a C++20 coroutine writes
/// `co_await limiter.async_try_acquire(key)`), a callback, `asio::use_future`, `asio::use_awaitable`
/// (swl itself stays C++17).
///
///   asio::io_context io;
///   auto redis = swl::AsioConnection::tcp(io.get_executor(), "127.0.0.1", 6379);
///   swl::AsioSlidingWindowLimiter<> limiter(redis, swl::Limit{100, std::chrono::seconds(10)});
///
///   // in a coroutine
///   swl::Decision decision = co_await limiter.async_try_acquire("user:42");
///   if (!decision) co_return reply429(decision.retry_after);
///
/// The same scripts, policies, options and decisions as RedisLimiter: the failure policy, the observer,
/// shadow mode, the access list, block_for and limits per call. Each operation
///
/// - completes once, on its handler's associated executor (the connection's strand for a handler without
///   one), never inside the function that started it; any thread may start one;
/// - has a deadline, by default now + ConnectionOptions::command_timeout (AcquireOptions::timeout for one
///   call): a call Redis has not answered by then is answered as a failed one, and its late reply is
///   dropped. It may still have been counted: Redis runs a call it received, whoever waits for the answer;
/// - honours its handler's cancellation slot (any cancellation type): it ends at once with
///   `asio::error::operation_aborted` and a refusal (Tier::fail_closed). The caller cannot know whether
///   it had been sent: Redis may still count it, as at a deadline.
///
/// One error convention for all four: **the error code is set where the blocking call would throw**,
/// and carries the swl::Error's kind (AsioErrc), whose message goes to the observer; and it is
/// `operation_aborted` for a cancelled operation. So bad input (an empty key, a cost outside 1..limit, a
/// bad limit or timeout) ends the operation with AsioErrc::invalid_argument, never a throw from the call
/// that starts it; a failed decision has an error code only under FailurePolicy::throw_error (allow and
/// deny answer it with a Decision, Tier::fail_open or fail_closed); a failed peek or reset always has
/// one. A token that turns the error code into an exception (use_future, use_awaitable, deferred in a
/// coroutine) throws a system_error with that code.
///
/// Signatures: async_try_acquire `void(error_code, Decision)`; async_try_acquire_many
/// `void(error_code, std::vector<Outcome>)` (each Outcome holds its own error, as tryAcquireMany's do);
/// async_peek `void(error_code, Usage)`; async_reset `void(error_code, bool)`. docs/asio.md has more.

#include <swl/algorithms/sliding_window_log.hpp>
#include <swl/asio/backend.hpp>
#include <swl/asio/connection.hpp>
#include <swl/asio/detail/operation.hpp>
#include <swl/asio/error_code.hpp>
#include <swl/decision.hpp>
#include <swl/detail/limiter/reporting.hpp>
#include <swl/detail/script/assembly.hpp>
#include <swl/detail/script/calls.hpp>
#include <swl/detail/script/reply.hpp>
#include <swl/options.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace swl {

/// What one async_try_acquire asks besides its key; each field left out is the limiter's own.
///
///   limiter.async_try_acquire("user:42", {.cost = 4, .timeout = std::chrono::milliseconds(20)});  // C++20
///
///   swl::AcquireOptions call;                                                                    // C++17
///   call.limit = swl::Limit{1000, std::chrono::minutes(1)};
///   limiter.async_try_acquire("tenant:7", call, handler);
struct AcquireOptions {
  /// Units asked for.
  std::int64_t cost = 1;
  /// A limit chosen for this call (a tenant's plan), as RedisLimiter::tryAcquire(key, cost, limit); none:
  /// the limiter's own.
  std::optional<Limit> limit = std::nullopt;
  /// The call's deadline, from now; none: the connection's ConnectionOptions::command_timeout.
  std::optional<std::chrono::steady_clock::duration> timeout = std::nullopt;
};

/// Any algorithm's limiter over an AsioConnection, answering through Asio completion tokens
/// (asio/limiter.hpp says what each operation promises).
template <class Algorithm, class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
class AsioLimiter {
  // A completion token, rather than a cost or the options of a call.
  template <class Token>
  static constexpr bool isToken =
      !std::is_convertible_v<Token, std::int64_t> && !std::is_convertible_v<Token, const AcquireOptions&>;

 public:
  /// The clock of deadlines.
  using Clock = std::chrono::steady_clock;

  /// A limiter of `limit` over `redis`. It shares the connection's state: calls in flight finish even
  /// when the limiter or the connection handle is gone first.
  AsioLimiter(const AsioConnection& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = KeyPolicy(),
              MemberPolicy members = MemberPolicy(), TtlPolicy ttl = TtlPolicy())
      : AsioLimiter(std::vector<std::shared_ptr<Session>>{redis.session()}, limit, std::move(options), std::move(keys),
                    std::move(members), std::move(ttl)) {}

  /// The same over a pool: each call goes to the pool's next connection in turn.
  AsioLimiter(const AsioConnectionPool& redis, Limit limit, LimiterOptions options = {}, KeyPolicy keys = KeyPolicy(),
              MemberPolicy members = MemberPolicy(), TtlPolicy ttl = TtlPolicy())
      : AsioLimiter(sessionsOf(redis), limit, std::move(options), std::move(keys), std::move(members), std::move(ttl)) {
  }

  /// One unit for `key` under the limiter's own limit.
  template <class CompletionToken = asio_default_token, class = std::enable_if_t<isToken<CompletionToken>>>
  auto async_try_acquire(std::string_view key, CompletionToken&& token = {}) {
    return async_try_acquire(key, AcquireOptions{}, std::forward<CompletionToken>(token));
  }
  /// `cost` units for `key` under the limiter's own limit.
  template <class CompletionToken = asio_default_token>
  auto async_try_acquire(std::string_view key, std::int64_t cost, CompletionToken&& token = {}) {
    AcquireOptions call;
    call.cost = cost;
    return async_try_acquire(key, call, std::forward<CompletionToken>(token));
  }
  /// For `key`, as `call` asks: its cost, a limit of its own, a deadline of its own.
  template <class CompletionToken = asio_default_token>
  auto async_try_acquire(std::string_view key, const AcquireOptions& call, CompletionToken&& token = {}) {
    const Clock::duration timeout = call.timeout ? *call.timeout : this->timeout();
    return asio::async_initiate<CompletionToken, void(asio_error_code, Decision)>(
        TryAcquireStart{calls_, nextSession()}, token,
        prepare(*calls_, key, call.cost, call.limit ? *call.limit : limit(), timeout), Clock::now() + timeout);
  }

  /// Each request decided as async_try_acquire would, all sent at once; a failure spoils only its own
  /// Outcome, whose error the failure policy may answer, as tryAcquireMany does. The keys are copied.
  template <class CompletionToken = asio_default_token>
  auto async_try_acquire_many(std::vector<AcquireRequest> requests, CompletionToken&& token = {}) {
    return asio::async_initiate<CompletionToken, void(asio_error_code, std::vector<Outcome>)>(
        [calls = calls_, session = nextSession()](auto handler, std::shared_ptr<Batch> batch,
                                                  Clock::time_point deadline) {
          startBatch(std::move(handler), calls, session, std::move(batch), deadline);
        },
        token, batchOf(calls_, std::move(requests)), Clock::now() + timeout());
  }

  /// What `key` has used of the limiter's own limit, recording nothing.
  template <class CompletionToken = asio_default_token>
  auto async_peek(std::string_view key, CompletionToken&& token = {}) {
    std::shared_ptr<Request> request;
    std::exception_ptr invalid;
    try {
      request = std::make_shared<Request>(*calls_, key, 0, calls_->limit(), Calls::Use::peek);
    } catch (const InvalidArgument&) {
      invalid = std::current_exception();
    }
    return asio::async_initiate<CompletionToken, void(asio_error_code, Usage)>(
        [session = nextSession()](auto handler, std::shared_ptr<Request> request, std::exception_ptr invalid,
                                  Clock::time_point deadline) {
          const auto operation = detail::AsioOperation<Usage>::start(std::move(handler), session);
          if (invalid) return operation->complete(codeOf(invalid), Usage(), true);
          send(
              operation, [request] { return request->call(); }, deadline,
              [operation, request](ReplyView reply) { operation->complete({}, Calls::usage(reply, *request)); });
        },
        token, std::move(request), std::move(invalid), Clock::now() + timeout());
  }

  /// Forgets `key`: whether there was anything.
  template <class CompletionToken = asio_default_token>
  auto async_reset(std::string_view key, CompletionToken&& token = {}) {
    std::exception_ptr invalid;
    if (key.empty()) {
      invalid = std::make_exception_ptr(InvalidArgument(std::string(Algorithm::kName) + "::reset: the key is empty"));
    }
    return asio::async_initiate<CompletionToken, void(asio_error_code, bool)>(
        [session = nextSession()](auto handler, std::string redis_key, std::exception_ptr invalid,
                                  Clock::time_point deadline) {
          const auto operation = detail::AsioOperation<bool>::start(std::move(handler), session);
          if (invalid) return operation->complete(codeOf(invalid), false, true);
          send(
              operation, [redis_key] { return ScriptCall(detail::forgetScript(), {redis_key}, {}); }, deadline,
              [operation](ReplyView reply) { operation->complete({}, reply.integer() > 0); });
        },
        token, invalid ? std::string() : calls_->redisKey(key), std::move(invalid), Clock::now() + timeout());
  }

  /// The limiter's own limit.
  const Limit& limit() const noexcept { return calls_->limit(); }
  /// Throws what the blocking limiter's tryAcquire would for bad input (async_try_acquire reports it
  /// through its token as AsioErrc::invalid_argument).
  void validate(std::string_view key, std::int64_t cost, const Limit& limit) const {
    calls_->validate(key, cost, limit);
  }
  /// The Redis key that holds `key`'s state, for operators and tests.
  std::string redisKey(std::string_view key) const { return calls_->redisKey(key); }

 private:
  using Calls = detail::LimiterCalls<Algorithm, KeyPolicy, MemberPolicy, TtlPolicy>;
  using Request = typename Calls::Request;
  using Session = detail::AsioSession;

  AsioLimiter(std::vector<std::shared_ptr<Session>> sessions, Limit limit, LimiterOptions options, KeyPolicy keys,
              MemberPolicy members, TtlPolicy ttl)
      : sessions_(std::make_shared<Sessions>(std::move(sessions))),
        calls_(std::make_shared<Calls>(limit, std::move(options), std::move(keys), std::move(members), std::move(ttl),
                                       Algorithm())) {}

  static std::vector<std::shared_ptr<Session>> sessionsOf(const AsioConnectionPool& pool) {
    std::vector<std::shared_ptr<Session>> sessions;
    for (const AsioConnection& connection : pool.connections()) sessions.push_back(connection.session());
    return sessions;
  }

  // The connections, taken in turn by calls that may start on any thread.
  struct Sessions {
    explicit Sessions(std::vector<std::shared_ptr<Session>> all) : all(std::move(all)) {}
    std::vector<std::shared_ptr<Session>> all;
    std::atomic<std::size_t> next{0};
  };

  const std::shared_ptr<Session>& nextSession() const noexcept {
    if (sessions_->all.size() == 1) return sessions_->all.front();
    return sessions_->all[sessions_->next.fetch_add(1, std::memory_order_relaxed) % sessions_->all.size()];
  }

  Clock::duration timeout() const noexcept { return sessions_->all.front()->options().command_timeout; }

  static asio_error_code codeOf(const std::exception_ptr& error) { return asio_error_code(errorCodeOf(error)); }

  // A request checked, with why it is invalid, or what the access list answers for it, or else its
  // call's arguments; its observation started.
  struct Prepared {
    std::string key;
    std::int64_t cost;
    Limit limit;
    detail::Observation observation;
    std::exception_ptr invalid;  // reported already
    std::optional<Decision> listed;
    std::optional<detail::FormattedCall> call;  // none when invalid, or when the list answered
  };

  // Done when the call starts, not when the operation does (a deferred one's starts when it is awaited):
  // the key is copied and the arguments are laid out once, whenever the operation runs.
  static Prepared prepare(Calls& calls, std::string_view key, std::int64_t cost, const Limit& limit,
                          Clock::duration timeout) {
    const LimiterOptions& options = calls.options();
    Prepared prepared{std::string(key), cost, limit, detail::Observation(options.observer, Tier::redis), {}, {}, {}};
    try {
      if (timeout <= Clock::duration::zero()) {
        throw InvalidArgument(std::string(Algorithm::kName) + "::async_try_acquire: the timeout must be positive");
      }
      prepared.listed = detail::accessListAnswer(options.access.get(), key, limit);
      if (prepared.listed) {
        calls.validate(key, cost, limit);
      } else {
        prepared.call = detail::formatted(Request(calls, key, cost, limit).call());
      }
    } catch (const InvalidArgument&) {
      prepared.invalid = std::current_exception();
      prepared.listed.reset();
      prepared.observation.report(key, cost, nullptr, prepared.invalid);
    }
    return prepared;
  }

  // async_try_acquire's initiation. Asio starts it once, as an rvalue, and then it hands what it holds
  // on instead of copying it: each copy of a shared_ptr costs two atomic operations, on every decision.
  struct TryAcquireStart {
    std::shared_ptr<Calls> calls;
    std::shared_ptr<Session> session;

    template <class Handler>
    void operator()(Handler&& handler, Prepared&& prepared, Clock::time_point deadline) && {
      startTryAcquire(std::forward<Handler>(handler), std::move(calls), std::move(session), std::move(prepared),
                      deadline);
    }
    template <class Handler>
    void operator()(Handler&& handler, Prepared&& prepared, Clock::time_point deadline) const& {
      TryAcquireStart (*this)(std::forward<Handler>(handler), std::move(prepared), deadline);
    }
  };

  template <class Handler>
  static void startTryAcquire(Handler handler, std::shared_ptr<Calls> calls, std::shared_ptr<Session> session,
                              Prepared&& prepared, Clock::time_point deadline) {
    auto operation = detail::AsioOperation<Decision>::start(std::move(handler), std::move(session));
    if (prepared.invalid)
      return operation->complete(codeOf(prepared.invalid), detail::blindRefusal(prepared.limit), true);
    if (prepared.listed) {
      detail::enforce(calls->options().enforcement, *prepared.listed);
      prepared.observation.report(prepared.key, prepared.cost, &*prepared.listed, nullptr);
      return operation->complete({}, *prepared.listed, true);
    }
    // What the call's end means, whichever way it ends.
    auto decide = [operation, calls = std::move(calls), observation = prepared.observation,
                   key = std::move(prepared.key), cost = prepared.cost,
                   limit = prepared.limit](ReplyView reply, std::exception_ptr error) {
      Outcome outcome = detail::outcomeOf(reply, std::move(error), limit.max_requests);
      if (!outcome.ok() && operation->cancelled()) {
        observation.report(key, cost, nullptr, outcome.error);
        return operation->complete(asio::error::operation_aborted, detail::blindRefusal(limit));
      }
      const LimiterOptions& options = calls->options();
      outcome =
          detail::reported(std::move(outcome), options.on_failure, options.enforcement, observation, key, cost, limit);
      operation->complete(outcome.ok() ? asio_error_code() : codeOf(outcome.error), outcome.decision);
    };
    const Session::Strand& strand = operation->session().strand();
    detail::onStrand(strand, [operation = std::move(operation), call = std::move(*prepared.call), deadline,
                              decide = std::move(decide)]() mutable {
      if (operation->cancelled()) {
        // Never sent. (Posted: this may run inside the call that started it.)
        const auto why = std::make_exception_ptr(detail::cancelledError(operation->session().endpoint()));
        return asio::post(operation->session().strand(), [decide, why] { decide(ReplyView(), why); });
      }
      operation->sent(operation->session().run(std::move(call), deadline, std::move(decide)));
    });
  }

  // A batch, from its start to its last reply: it owns copies of the caller's keys, which its requests
  // (and the observer's reports, made at the end) view.
  struct Batch {
    std::vector<std::string> keys;
    std::vector<AcquireRequest> requests;
    std::optional<detail::ReportedBatch> reported;  // timed from the start
    std::optional<detail::ListedBatch> listed;
    std::vector<Outcome> outcomes;                 // of the requests the list did not answer
    std::vector<std::optional<Request>> prepared;  // none for a request refused before sending
    std::size_t waiting = 0;
  };

  // Each request checked and laid out, when the call starts (as for async_try_acquire).
  static std::shared_ptr<Batch> batchOf(const std::shared_ptr<Calls>& calls, std::vector<AcquireRequest> requests) {
    auto batch = std::make_shared<Batch>();
    batch->keys.reserve(requests.size());
    for (AcquireRequest& request : requests) request.key = batch->keys.emplace_back(request.key);
    batch->requests = std::move(requests);
    const Limit& own = calls->limit();
    batch->reported.emplace(detail::reportingOf(calls->options()), batch->requests, own);
    batch->listed.emplace(
        calls->options().access.get(), batch->requests, own,
        [&calls](std::string_view key, std::int64_t cost, const Limit& limit) { calls->validate(key, cost, limit); });
    const std::vector<AcquireRequest>& rest = batch->listed->any() ? batch->listed->rest() : batch->requests;
    batch->outcomes.resize(rest.size());
    batch->prepared = std::vector<std::optional<Request>>(rest.size());  // a request is never moved
    for (std::size_t i = 0; i < rest.size(); ++i) {
      const Limit& asked = rest[i].limitOr(own);
      try {
        batch->prepared[i].emplace(*calls, rest[i].key, rest[i].cost, asked);
        ++batch->waiting;
      } catch (const InvalidArgument&) {
        batch->outcomes[i] = {detail::blindRefusal(asked), std::current_exception()};
      }
    }
    return batch;
  }

  template <class Handler>
  static void startBatch(Handler handler, const std::shared_ptr<Calls>& calls, const std::shared_ptr<Session>& session,
                         std::shared_ptr<Batch> batch, Clock::time_point deadline) {
    const auto operation = detail::AsioOperation<std::vector<Outcome>>::start(std::move(handler), session);
    // Reports the whole batch once its last call has ended.
    auto finish = [operation, calls, batch] {
      std::vector<Outcome> all =
          batch->listed->any() ? batch->listed->merge(std::move(batch->outcomes)) : std::move(batch->outcomes);
      std::vector<Outcome> outcomes = batch->reported->report(std::move(all));
      if (operation->cancelled()) return operation->complete(asio::error::operation_aborted, std::move(outcomes));
      operation->complete({}, std::move(outcomes));
    };
    detail::onStrand(session->strand(), [operation, batch, deadline, finish] {
      if (batch->waiting == 0) return asio::post(operation->session().strand(), finish);  // as above
      for (std::size_t i = 0; i < batch->prepared.size(); ++i) {
        const std::optional<Request>& request = batch->prepared[i];
        if (!request) continue;
        auto end = [batch, i, finish](ReplyView reply, std::exception_ptr error) {
          const Limit& limit = batch->prepared[i]->limit();
          Outcome& outcome = batch->outcomes[i] = detail::outcomeOf(reply, std::move(error), limit.max_requests);
          if (!outcome.ok()) outcome.decision = detail::blindRefusal(limit);
          if (--batch->waiting == 0) finish();
        };
        if (operation->cancelled()) {
          end(ReplyView(), std::make_exception_ptr(detail::cancelledError(operation->session().endpoint())));
        } else {
          operation->sent(operation->session().run(detail::formatted(request->call()), deadline, std::move(end)));
        }
      }
    });
  }

  // Sends the call `call_of()` makes, on the strand (it views texts `call_of` holds), for an operation whose
  // errors are its error code (peek, reset): `answer` reads the reply.
  template <class Result, class CallOf, class Answer>
  static void send(const std::shared_ptr<detail::AsioOperation<Result>>& operation, CallOf call_of,
                   Clock::time_point deadline, Answer answer) {
    auto end = [operation, answer = std::move(answer)](ReplyView reply, const std::exception_ptr& error) {
      if (error) {
        return operation->complete(
            operation->cancelled() ? asio_error_code(asio::error::operation_aborted) : codeOf(error), Result());
      }
      try {
        answer(reply);
      } catch (const Error&) {
        operation->complete(codeOf(std::current_exception()), Result());
      }
    };
    detail::onStrand(operation->session().strand(), [operation, call_of, deadline, end = std::move(end)]() mutable {
      if (operation->cancelled()) {
        return end(ReplyView(), std::make_exception_ptr(detail::cancelledError(operation->session().endpoint())));
      }
      operation->sent(operation->session().run(detail::formatted(call_of()), deadline, std::move(end)));
    });
  }

  std::shared_ptr<Sessions> sessions_;
  std::shared_ptr<Calls> calls_;
};

/// The exact sliding window log, on Asio.
template <class KeyPolicy = PrefixKey, class MemberPolicy = CompactMember, class TtlPolicy = WindowTtl>
using AsioSlidingWindowLimiter = AsioLimiter<SlidingWindowLog, KeyPolicy, MemberPolicy, TtlPolicy>;

}  // namespace swl

#pragma once
/// \file
/// Rate limits for a gRPC C++ server's calls (CMake component swl::grpc, where gRPC++ is found): each call is
/// decided before its handler runs, keyed by its method and its caller, under a limit per method.
///
/// \code{.cpp}
///   swl::grpc::CallGate gate(limiter, {{"/shop.Cart/Checkout", swl::Limit{5, 10s}}}, "x-api-key");
///   builder.experimental().SetInterceptorCreators(gate.interceptorFactories());
///   ...
///   ::grpc::Status Checkout(::grpc::ServerContext* context, const Order* order, Receipt* receipt) override {
///     if (auto refused = gate.refusal(*context)) return *refused;   // the handler's first line
/// \endcode
///
/// The caller is the value of the metadata entry named at construction ("x-api-key"), or, when the call
/// carries none (or no name was given), the peer's address without its port; the key is
/// "<method>:<caller>", e.g. "/shop.Cart/Checkout:ipv4:10.0.0.7". A method without a limit of its own is
/// decided under the limiter's limit.
///
/// A refused call ends with
///   status   RESOURCE_EXHAUSTED, its message naming the method's limit, and as its details
///            (grpc-status-details-bin) a google.rpc.Status holding one google.rpc.RetryInfo whose
///            retry_delay is Decision::retry_after, exactly
///   trailers retry-after, ratelimit-policy and ratelimit (swl/integrations/http_headers.hpp's fields, with
///            the method as the policy's name), the last two when Redis decided
/// and an admitted call's trailers carry ratelimit-policy and ratelimit (when Redis decided).
/// When Redis cannot answer, the limiter's FailurePolicy answers, as everywhere: allow admits (without
/// RateLimit fields: nothing counted the call), deny refuses with UNAVAILABLE, and throw_error, or any error
/// of the limiter, refuses with UNAVAILABLE too; the message never says more than that the limiter could not
/// decide. Tier and error reach the limiter's observer.
///
/// Which gRPC API it relies on: the server interceptors of gRPC C++ (grpcpp/support/server_interceptor.h,
/// grpc::experimental::ServerInterceptorFactoryInterface, ServerBuilder::experimental().SetInterceptorCreators),
/// experimental in gRPC 1.51 (Debian 12) and still so upstream: it may change in a later gRPC. The interceptor
/// decides at POST_RECV_INITIAL_METADATA, before gRPC calls the handler, and at PRE_SEND_STATUS writes the
/// refusal's status (ModifySendStatus) and the trailers (GetSendTrailingMetadata); at PRE_SEND_MESSAGE it
/// empties what a refused call's handler sends (GetSerializedSendMessage). A server interceptor
/// cannot end a call itself in 1.51 (Hijack() is for client interceptors only; it asserts on a server), so
/// gRPC still calls the handler of a refused call: its first line asks refusal(context) and returns it,
/// doing no work. A handler that does not ask still has its call refused on the wire (the interceptor
/// overwrites whatever status it returns, and empties every message it sends), but it does its work.
/// (grpc::AuthMetadataProcessor could end a call before the handler, but only on a secure server, and
/// without trailers or status details.)
///
/// The decision is one Redis round trip on the thread that runs the interceptor: a sync server's worker, or,
/// with the callback API, a gRPC thread, which it blocks that long.

#include <swl/decision.hpp>
#include <swl/error.hpp>
#include <swl/integrations/detail/grpc.hpp>
#include <swl/integrations/http_headers.hpp>
#include <swl/limiter.hpp>

#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/interceptor.h>
#include <grpcpp/support/server_interceptor.h>
#include <grpcpp/support/slice.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

/// The gRPC integration: CallGate limits a gRPC server's calls.
namespace swl::grpc {

/// How one call was decided: its refusal (nullopt when admitted) and the trailers it ends with.
struct CallVerdict {
  std::optional<::grpc::Status> refusal;                      ///< the status a refused call ends with
  std::vector<std::pair<std::string, std::string>> trailers;  ///< the RateLimit fields, and retry-after
  Decision decision;  ///< what the limiter answered (a default, refusing Decision when it threw)

  /// Whether the call may run.
  bool admitted() const noexcept { return !refusal; }
};

/// Decides a server's calls through `Limiter` (any type that keeps swl/limiter.hpp's contract), which it
/// borrows: the limiter and the gate outlive the server. Thread-safe as the limiter is.
template <class Limiter>
class CallGate {
  static_assert(keepsLimiterContract<Limiter>());

 public:
  /// `method_limits`: "/package.Service/Method" -> its limit; the rest get limiter.limit(). `key_metadata`:
  /// the metadata entry that names the caller ("x-api-key"), or empty to key every call by its peer.
  /// Throws InvalidArgument for a method name that is not "/service/method", a metadata name gRPC would not
  /// carry, or a limit the limiter cannot hold.
  explicit CallGate(Limiter& limiter, std::map<std::string, Limit, std::less<>> method_limits = {},
                    std::string key_metadata = {})
      : limiter_(limiter), method_limits_(std::move(method_limits)), key_metadata_(std::move(key_metadata)) {
    for (const auto& [method, limit] : method_limits_) {
      if (method.size() < 4 || method[0] != '/' || method.find('/', 1) == std::string::npos || method.back() == '/') {
        throw InvalidArgument("swl: the gRPC method " + swl::detail::quoted(method) +
                              " is not a full method name such as \"/package.Service/Method\"");
      }
      limiter_.validate(method, 1, limit);
    }
    if (!key_metadata_.empty() && !detail::isMetadataKey(key_metadata_)) {
      throw InvalidArgument("swl: " + swl::detail::quoted(key_metadata_) +
                            " is not a gRPC metadata key (lower-case letters, digits, '-', '_', '.')");
    }
  }

  ///@{
  /// Not copyable: the interceptors it made point to it.
  CallGate(const CallGate&) = delete;
  CallGate& operator=(const CallGate&) = delete;
  ///@}

  /// For ServerBuilder::experimental().SetInterceptorCreators: the factory of the interceptor that decides
  /// each call, alone in its vector; append the server's other factories to it. Those interceptors still see
  /// a refused call (a server interceptor cannot stop the others either).
  std::vector<std::unique_ptr<::grpc::experimental::ServerInterceptorFactoryInterface>> interceptorFactories() {
    std::vector<std::unique_ptr<::grpc::experimental::ServerInterceptorFactoryInterface>> factories;
    factories.push_back(std::make_unique<Factory>(*this));
    return factories;
  }

  /// The status a refused call must end with, for its handler to return at once; nullopt when the call was
  /// admitted (or the gate's interceptor is not installed on this server).
  std::optional<::grpc::Status> refusal(const ::grpc::ServerContextBase& context) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto refused = refused_.find(&context);
    if (refused == refused_.end()) return std::nullopt;
    return refused->second;
  }

  /// The limit calls of `method` are decided under: its own, else the limiter's.
  const Limit& limitOf(std::string_view method) const {
    const auto own = method_limits_.find(method);
    return own == method_limits_.end() ? limiter_.limit() : own->second;
  }

  /// One call of `method` by `caller` decided, as the interceptor does it; never throws.
  CallVerdict decide(std::string_view method, std::string_view caller) {
    const Limit& limit = limitOf(method);
    CallVerdict verdict;
    try {
      std::string key;
      key.reserve(method.size() + 1 + caller.size());
      key.append(method).append(1, ':').append(caller);
      verdict.decision = limiter_.tryAcquire(key, 1, limit);
    } catch (const std::exception&) {
      // FailurePolicy::throw_error, or a bug: the observer has the error, the client only the status.
      verdict.refusal = ::grpc::Status(::grpc::StatusCode::UNAVAILABLE, "swl: the rate limiter could not decide");
      return verdict;
    }
    const Decision& decision = verdict.decision;
    if (decision.tier == Tier::fail_closed) {
      verdict.refusal = ::grpc::Status(::grpc::StatusCode::UNAVAILABLE,
                                       "swl: the rate limiter could not decide; refused (fail closed)");
      return verdict;
    }
    if (decision.tier == Tier::redis) {
      const PolicyReport report{method, limit, decision};
      verdict.trailers.emplace_back("ratelimit-policy", rateLimitPolicyValue(report));
      verdict.trailers.emplace_back("ratelimit", rateLimitValue(report));
    }
    if (decision.allowed) return verdict;
    verdict.trailers.emplace_back("retry-after", retryAfterValue(decision));
    const std::string message = "swl: " + std::string(method) + " allows " + std::to_string(limit.max_requests) +
                                " calls per " + detail::spokenDuration(limit.window) + " per caller; retry in " +
                                retryAfterValue(decision) + "s";
    constexpr auto kCode = ::grpc::StatusCode::RESOURCE_EXHAUSTED;
    verdict.refusal = ::grpc::Status(kCode, message, detail::retryStatusDetails(kCode, message, decision.retry_after));
    return verdict;
  }

 private:
  // One per call, made by gRPC through Factory and deleted by gRPC when the call's context goes.
  class Interceptor : public ::grpc::experimental::Interceptor {
   public:
    Interceptor(CallGate& gate, ::grpc::experimental::ServerRpcInfo& call) : gate_(gate), call_(call) {}
    ~Interceptor() override {
      if (!verdict_.admitted()) gate_.forget(*call_.server_context());
    }

    void Intercept(::grpc::experimental::InterceptorBatchMethods* methods) override {
      using ::grpc::experimental::InterceptionHookPoints;
      if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
        const char* method = call_.method();
        const ::grpc::ServerContextBase& context = *call_.server_context();
        verdict_ = gate_.decide(method ? method : "", gate_.callerOf(*methods->GetRecvInitialMetadata(), context));
        if (!verdict_.admitted()) gate_.remember(context, *verdict_.refusal);
      }
      if (!verdict_.admitted() && methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
        // A handler that did not ask: its reply is replaced by an empty message (the interceptor cannot
        // withhold it), so a refused caller never gets the work's result.
        ::grpc::Slice nothing;
        *methods->GetSerializedSendMessage() = ::grpc::ByteBuffer(&nothing, 1);
      }
      if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
        if (!verdict_.admitted()) methods->ModifySendStatus(*verdict_.refusal);
        std::multimap<std::string, std::string>* trailers = methods->GetSendTrailingMetadata();
        if (trailers != nullptr) trailers->insert(verdict_.trailers.begin(), verdict_.trailers.end());
      }
      methods->Proceed();
    }

   private:
    CallGate& gate_;
    ::grpc::experimental::ServerRpcInfo& call_;
    CallVerdict verdict_;
  };

  class Factory : public ::grpc::experimental::ServerInterceptorFactoryInterface {
   public:
    explicit Factory(CallGate& gate) : gate_(gate) {}
    // gRPC's interface hands ownership back as a raw pointer; gRPC deletes it.
    ::grpc::experimental::Interceptor* CreateServerInterceptor(::grpc::experimental::ServerRpcInfo* call) override {
      return new Interceptor(gate_, *call);
    }

   private:
    CallGate& gate_;
  };

  // Who a call is from: its key_metadata entry, else its peer's address.
  std::string callerOf(const std::multimap<::grpc::string_ref, ::grpc::string_ref>& metadata,
                       const ::grpc::ServerContextBase& context) const {
    if (!key_metadata_.empty()) {
      const auto entry = metadata.find(::grpc::string_ref(key_metadata_));
      if (entry != metadata.end() && !entry->second.empty()) return {entry->second.data(), entry->second.size()};
    }
    return std::string(detail::peerAddress(context.peer()));
  }

  void remember(const ::grpc::ServerContextBase& context, const ::grpc::Status& refusal) {
    const std::lock_guard<std::mutex> lock(mutex_);
    refused_.insert_or_assign(&context, refusal);
  }
  void forget(const ::grpc::ServerContextBase& context) {
    const std::lock_guard<std::mutex> lock(mutex_);
    refused_.erase(&context);
  }

  Limiter& limiter_;
  std::map<std::string, Limit, std::less<>> method_limits_;
  std::string key_metadata_;
  // The refused calls whose handlers may still ask: an entry lives as long as its call's interceptor.
  mutable std::mutex mutex_;
  std::unordered_map<const ::grpc::ServerContextBase*, ::grpc::Status> refused_;
};

}  // namespace swl::grpc

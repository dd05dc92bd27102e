#pragma once
// The members of the limiter contract (swl/limiter.hpp), one alias each as the type a call of it gives,
// for isLimiter and keepsLimiterContract to check; and the mark of a core whose tiers answer for failures.

#include <swl/decision.hpp>

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace swl {

class Deadline;  // swl/limiter.hpp

namespace detail::contract {

// Each member the contract names, as the type a call of it gives.
template <class L>
using TryAcquire = decltype(std::declval<L&>().tryAcquire(std::string_view(), std::int64_t()));
template <class L>
using TryAcquireUnder = decltype(std::declval<L&>().tryAcquire(std::string_view(), std::int64_t(), Limit()));
template <class L>
using TryAcquireMany = decltype(std::declval<L&>().tryAcquireMany(std::declval<const std::vector<AcquireRequest>&>()));
template <class L>
using Acquire = decltype(std::declval<L&>().acquire(std::string_view(), std::int64_t(), std::declval<Deadline>()));
template <class L>
using AcquireUnder =
    decltype(std::declval<L&>().acquire(std::string_view(), std::int64_t(), Limit(), std::declval<Deadline>()));
template <class L>
using Peek = decltype(std::declval<L&>().peek(std::string_view()));
template <class L>
using PeekUnder = decltype(std::declval<L&>().peek(std::string_view(), Limit()));
template <class L>
using Reset = decltype(std::declval<L&>().reset(std::string_view()));
template <class L>
using LimitOf = decltype(std::declval<const L&>().limit());
template <class L>
using Validate = decltype(std::declval<const L&>().validate(std::string_view(), std::int64_t()));
template <class L>
using ValidateUnder = decltype(std::declval<const L&>().validate(std::string_view(), std::int64_t(), Limit()));
template <class L>
using Decide = decltype(std::declval<L&>().decide(std::string_view(), std::int64_t()));
template <class L>
using DecideUnder = decltype(std::declval<L&>().decide(std::string_view(), std::int64_t(), Limit()));
template <class L>
using DecideMany = decltype(std::declval<L&>().decideMany(std::declval<const std::vector<AcquireRequest>&>()));

// Whether L has the member and a call of it gives R.
template <template <class> class Member, class L, class R, class = void>
struct Gives : std::false_type {};
template <template <class> class Member, class L, class R>
struct Gives<Member, L, R, std::void_t<Member<L>>> : std::is_same<Member<L>, R> {};
template <template <class> class Member, class L, class R>
inline constexpr bool gives = Gives<Member, L, R>::value;

}  // namespace detail::contract

namespace detail {

// Whether a limiter's tiers may answer in place of one that failed (see LimiterFace).
template <class L, class = void>
struct AnswersForFailures : std::false_type {};
template <class L>
struct AnswersForFailures<L, std::enable_if_t<L::kAnswersForFailures>> : std::true_type {};

}  // namespace detail
}  // namespace swl

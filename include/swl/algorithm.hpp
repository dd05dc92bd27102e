#pragma once
/// \file
/// The algorithm contract: what an algorithm brings to RedisLimiter (its Lua, in parts), and the one way
/// its scripts are put together and called. An algorithm (swl/algorithms/) is a type with
///     static constexpr std::string_view kName;        // "swl::FixedWindowLimiter", for messages
///     static constexpr std::string_view kScriptName;  // "fixed_window", for messages
///     static constexpr std::string_view kScript;      // its Lua, run after the prelude (below)
///     static constexpr bool kRecordsMembers;          // whether it records a member per request (the log)
///     static void check(const Limit&);                // throws InvalidArgument for limits it cannot keep exactly
///                                                     // (or a const member, for an algorithm with state)
/// and, optionally,
///     static constexpr std::string_view kLayout;      // Lua run first: the numbers all its scripts share
///     static constexpr std::string_view kFastPath;    // Lua run before kFunctions by kScript alone: its
///                                                     // busiest path, answered before anything is defined
///     static constexpr std::string_view kParts;       // Lua without I/O run before kFunctions, tested alone
///                                                     // (the log's sums)
///     static constexpr std::string_view kFunctions;   // Lua run before kScript, shared with other scripts
///                                                     // (or an array of texts, run in order)
///     auto argument(std::optional<std::chrono::microseconds> client_now) const;
///                                                     // its own parameter for a call at client_now (none on
///                                                     // Redis's clock), sent as ARGV[8]: the bucketed
///                                                     // window's buckets, the periods' bounds around now;
///                                                     // something a std::string_view can be made of
///     static constexpr std::string_view kNativeCommand;  // a module's command that decides as kScript does,
///                                                     // same key, same arguments (the log's SWL.DECIDE)
///     static constexpr std::string_view kSettleScriptName, kSettleScript;  // it can settle reservations
///     static constexpr std::string_view kLeaseScriptName, kLeaseScript;    // it can lease units
/// (kSettleScript and kLeaseScript run after the prelude and kFunctions too).
/// Every script takes the arguments the prelude reads, treats cost 0 as a peek that records nothing, and
/// answers {allowed, remaining, retry_after_us, reset_after_us}. A limiter holds one algorithm, made by
/// default unless the limiter is given one (PeriodicLimiter gives its periods).
///
/// Every script an algorithm's limiters run is assembled in one place, detail/script/assembly.hpp: the
/// prelude (which reads the arguments every script takes), then the algorithm's parts. `swl_scripts`
/// (examples/) prints each one whole.

#include <swl/decision.hpp>
#include <swl/detail/script/assembly.hpp>

#include <string_view>
#include <type_traits>
#include <utility>

namespace swl {

/// Whether T keeps the algorithm contract above (its required members, of the right types).
template <class T, class = void>
struct IsAlgorithm : std::false_type {};
/// The case where T has every required member; their types decide.
template <class T>
struct IsAlgorithm<
    T, std::void_t<decltype(T::kName), decltype(T::kScriptName), decltype(T::kScript), decltype(T::kRecordsMembers),
                   decltype(std::declval<const T&>().check(std::declval<const Limit&>()))>>
    : std::bool_constant<std::is_convertible_v<decltype(T::kName), std::string_view> &&
                         std::is_convertible_v<decltype(T::kScriptName), std::string_view> &&
                         std::is_convertible_v<decltype(T::kScript), std::string_view> &&
                         std::is_same_v<std::remove_cv_t<decltype(T::kRecordsMembers)>, bool>> {};

/// IsAlgorithm<T>::value: what RedisLimiter's static_assert asks.
template <class T>
inline constexpr bool isAlgorithm = IsAlgorithm<T>::value;

}  // namespace swl

#pragma once
/// \file
/// Member policies: the sorted-set member that records one admitted request. A member must differ from
/// every other member of the same key, or ZADD overwrites the earlier entry and the window under-counts.
///
/// A MemberPolicy is any type with
///     std::string next();
/// called once per request from any thread. The log marks its own members with bytes below ',' and '=', so a
/// member must hold none of them (a limiter refuses one that does).
/// An empty string stands for the request's millisecond timestamp,
/// which only the script knows when Redis's clock is in use.

#include <swl/detail/thread_random.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include <pthread.h>

namespace swl {

/// Whether T is a member policy: `std::string next()`.
template <class T, class = void>
struct IsMemberPolicy : std::false_type {};
/// The case where T has next(); its type decides.
template <class T>
struct IsMemberPolicy<T, std::void_t<decltype(std::declval<T&>().next())>>
    : std::is_same<decltype(std::declval<T&>().next()), std::string> {};

/// IsMemberPolicy<T>::value: what the limiters' static_asserts ask.
template <class T>
inline constexpr bool isMemberPolicy = IsMemberPolicy<T>::value;

/// The default: a random 64-bit process identity plus a per-process counter, in base64url text: 12 bytes
/// for the first 64 requests, 15 up to 16 million, against a UUID's 36. Two processes collide only if
/// their 64-bit identities do (odds around n^2 / 2^65 for n processes); a forked child draws a new one.
class CompactMember {
 public:
  /// The next member: never one this process or another has made before.
  std::string next() {
    Identity& self = identity();
    std::uint64_t sequence = self.counter.fetch_add(1, std::memory_order_relaxed);
    std::string member(self.id.data(), self.id.size());
    do {
      member.push_back(kDigits[sequence & 63]);
      sequence >>= 6;
    } while (sequence != 0);
    return member;
  }

 private:
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

  struct Identity {
    std::array<char, 11> id{};
    std::atomic<std::uint64_t> counter{0};

    void draw() {
      std::uint64_t bits = detail::entropy();
      for (char& digit : id) digit = kDigits[bits & 63], bits >>= 6;
      counter.store(0, std::memory_order_relaxed);
    }
  };

  static Identity& identity() {
    static Identity self;
    static std::once_flag drawn;
    std::call_once(drawn, [] {
      self.draw();
      // A forked child would otherwise repeat its parent's members.
      pthread_atfork(nullptr, nullptr, [] { identity().draw(); });
    });
    return self;
  }
};

/// A random (version 4) UUID per request, as in the seed articles' fix: unique, but 36 bytes each.
class UuidMember {
 public:
  /// The next member: a new UUID.
  std::string next() {
    detail::ThreadRandom& random = detail::threadRandom();
    std::uint64_t high = random(), low = random();
    high = (high & 0xFFFFFFFFFFFF0FFFull) | 0x0000000000004000ull;  // version 4
    low = (low & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;    // RFC 4122 variant
    static constexpr char hex[] = "0123456789abcdef";
    std::string uuid;
    uuid.reserve(36);
    for (int nibble = 15; nibble >= 0; --nibble) {
      uuid.push_back(hex[(high >> (nibble * 4)) & 0xF]);
      if (nibble == 8 || nibble == 4) uuid.push_back('-');
    }
    uuid.push_back('-');
    for (int nibble = 15; nibble >= 0; --nibble) {
      uuid.push_back(hex[(low >> (nibble * 4)) & 0xF]);
      if (nibble == 12) uuid.push_back('-');
    }
    return uuid;
  }
};

/// The request's millisecond timestamp, as the seed articles' first versions used. Kept to show why it
/// is wrong: two requests in the same millisecond share one member, the second overwrites the first,
/// and the window lets more than the limit through. Do not use it for real limits.
struct TimestampMember {
  /// No member: the script then records the request's millisecond timestamp in its place.
  std::string next() { return {}; }
};

}  // namespace swl

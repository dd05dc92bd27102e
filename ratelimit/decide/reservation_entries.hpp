#pragma once
/// \file
/// Reservations through Envoy's own calls (DeciderOptions::reservations): the descriptor entries an
/// Envoy route adds to reserve at the request and to commit when the stream is done, read out of the
/// descriptor before its rule is matched, so that the same rule counts it. No I/O.
///
///   `swl.reserve`: the hold's length ("30s", "500ms", "2m", "1h"; plain digits are seconds): the
///   descriptor's hits are reserved, and the answer's dynamic_metadata carries the reservation's id
///   under `swl.reservation` (Envoy keeps it in the filter's namespace, envoy.filters.http.ratelimit);
///   `swl.reservation`: that id, which a `metadata` action reads back: the descriptor's hits, the units
///   spent, commit the reservation (hits_addend 0 releases it).

#include <ratelimit/config/rule_tree.hpp>

#include <swl/error.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace swl::ratelimit {

inline constexpr std::string_view kReserveEntry = "swl.reserve";
inline constexpr std::string_view kReservationEntry = "swl.reservation";
/// The field of the answer's dynamic_metadata that carries a reservation's id.
inline constexpr std::string_view kReservationMetadata = "swl.reservation";

/// What a descriptor's reservation entries ask: a hold of `hold_for` (0: none), or a commit of `id`.
struct ReservationAsked {
  std::chrono::microseconds hold_for{0};
  std::string id;
};

/// A hold's length as `swl.reserve` gives it: digits, then ms, s, m or h (s when none), 1 ms up to a day.
inline std::chrono::microseconds holdLength(std::string_view text, int descriptor) {
  const auto refuse = [&] {
    return InvalidArgument("swl-ratelimit: descriptor " + std::to_string(descriptor) + "'s " +
                           std::string(kReserveEntry) + " is \"" + std::string(text) +
                           "\"; give how long the hold lasts, as 30s, 500ms, 2m or 1h (1 ms up to a day)");
  };
  std::size_t digits = 0;
  std::int64_t number = 0;
  while (digits < text.size() && digits < 9 && text[digits] >= '0' && text[digits] <= '9') {
    number = number * 10 + (text[digits++] - '0');
  }
  const std::string_view unit = text.substr(digits);
  std::int64_t microseconds_per = 0;
  if (unit.empty() || unit == "s") microseconds_per = 1'000'000;
  if (unit == "ms") microseconds_per = 1'000;
  if (unit == "m") microseconds_per = 60'000'000;
  if (unit == "h") microseconds_per = 3'600'000'000;
  const std::int64_t length = number * microseconds_per;
  if (digits == 0 || microseconds_per == 0 || length < 1'000 || length > 86'400'000'000) throw refuse();
  return std::chrono::microseconds(length);
}

/// Takes descriptor `descriptor`'s reservation entries out of `entries`, and says what they ask; both in
/// one descriptor is an InvalidArgument.
inline ReservationAsked takeReservationEntries(std::vector<DescriptorEntry>& entries, int descriptor) {
  ReservationAsked asked;
  for (auto entry = entries.begin(); entry != entries.end();) {
    if (entry->key == kReserveEntry) {
      asked.hold_for = holdLength(entry->value, descriptor);
    } else if (entry->key == kReservationEntry) {
      asked.id = std::string(entry->value);
    } else {
      ++entry;
      continue;
    }
    entry = entries.erase(entry);
  }
  if (asked.hold_for.count() > 0 && !asked.id.empty()) {
    throw InvalidArgument("swl-ratelimit: descriptor " + std::to_string(descriptor) + " has both " +
                          std::string(kReserveEntry) + " and " + std::string(kReservationEntry) +
                          "; a descriptor reserves at the request or commits when the stream is done");
  }
  return asked;
}

}  // namespace swl::ratelimit

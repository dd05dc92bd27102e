#pragma once
/// \file
/// hashSlot: which of Redis Cluster's 16384 slots holds a key, computed as the cluster specification
/// says (CRC16-CCITT/XMODEM of the key, modulo 16384), so a client can send each command straight to
/// the master that serves it.
///
/// A key holding a non-empty "{hash tag}" is hashed by the tag alone: the bytes between its first '{'
/// and the first '}' after that. "swl:{user:42}" and "quota:{user:42}" share a slot; "swl:{}x" and
/// "swl:x{" have no tag and are hashed whole.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace swl {

/// How many hash slots Redis Cluster divides its keys into.
inline constexpr std::size_t kClusterSlots = 16384;

namespace detail {

constexpr std::array<std::uint16_t, 256> crc16Table() {
  std::array<std::uint16_t, 256> table{};
  for (std::uint32_t byte = 0; byte < 256; ++byte) {
    std::uint32_t crc = byte << 8;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[byte] = static_cast<std::uint16_t>(crc);
  }
  return table;
}

inline constexpr std::array<std::uint16_t, 256> kCrc16Table = crc16Table();

constexpr std::uint16_t crc16(std::string_view bytes) noexcept {
  std::uint16_t crc = 0;
  for (char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    crc = static_cast<std::uint16_t>((crc << 8) ^ kCrc16Table[((crc >> 8) ^ byte) & 0xff]);
  }
  return crc;
}

// The part of `key` the cluster hashes.
constexpr std::string_view hashedPart(std::string_view key) noexcept {
  const std::size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const std::size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

}  // namespace detail

/// The slot of `key` (0..16383), its hash tag alone hashed when it has one.
constexpr std::uint16_t hashSlot(std::string_view key) noexcept {
  return static_cast<std::uint16_t>(detail::crc16(detail::hashedPart(key)) % kClusterSlots);
}

}  // namespace swl

#pragma once
// SHA-1, only to name a Lua script the way Redis does (EVALSHA takes the hex digest of the script text).
// Knowing the digest up front lets every call go straight to EVALSHA: SCRIPT LOAD is sent only when a
// server answers NOSCRIPT, so a connection needs no "is it loaded yet" state.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace swl::detail {

inline std::string sha1Hex(std::string_view text) {
  auto rotl = [](std::uint32_t value, int bits) { return (value << bits) | (value >> (32 - bits)); };
  std::array<std::uint32_t, 5> state{0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};

  std::string message(text);
  message.push_back(static_cast<char>(0x80));
  while (message.size() % 64 != 56) message.push_back('\0');
  const std::uint64_t bit_length = static_cast<std::uint64_t>(text.size()) * 8;
  for (int shift = 56; shift >= 0; shift -= 8) message.push_back(static_cast<char>(bit_length >> shift));

  for (std::size_t block = 0; block < message.size(); block += 64) {
    std::array<std::uint32_t, 80> words{};
    for (std::size_t i = 0; i < 16; ++i) {
      for (std::size_t byte = 0; byte < 4; ++byte) {
        words[i] = (words[i] << 8) | static_cast<unsigned char>(message[block + 4 * i + byte]);
      }
    }
    for (std::size_t i = 16; i < 80; ++i) {
      words[i] = rotl(words[i - 3] ^ words[i - 8] ^ words[i - 14] ^ words[i - 16], 1);
    }
    auto [a, b, c, d, e] = state;
    for (std::size_t i = 0; i < 80; ++i) {
      std::uint32_t mix, constant;
      if (i < 20) {
        mix = (b & c) | (~b & d), constant = 0x5A827999u;
      } else if (i < 40) {
        mix = b ^ c ^ d, constant = 0x6ED9EBA1u;
      } else if (i < 60) {
        mix = (b & c) | (b & d) | (c & d), constant = 0x8F1BBCDCu;
      } else {
        mix = b ^ c ^ d, constant = 0xCA62C1D6u;
      }
      const std::uint32_t next = rotl(a, 5) + mix + e + constant + words[i];
      e = d, d = c, c = rotl(b, 30), b = a, a = next;
    }
    state[0] += a, state[1] += b, state[2] += c, state[3] += d, state[4] += e;
  }

  static constexpr char hex[] = "0123456789abcdef";
  std::string digest;
  for (std::uint32_t word : state) {
    for (int shift = 28; shift >= 0; shift -= 4) digest.push_back(hex[(word >> shift) & 0xF]);
  }
  return digest;
}

}  // namespace swl::detail

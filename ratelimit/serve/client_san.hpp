#pragma once
/// \file
/// Whether a client's certificate holds the name GRPC_CLIENT_TLS_SAN requires, decided as
/// envoyproxy/ratelimit decides it, without I/O: its server_impl.go verifies the client's chain with
/// Go's x509.VerifyOptions{DNSName: san}, that is x509.Certificate.VerifyHostname(san). So:
///
/// - a name that reads as an IP address (IPv4, IPv6, or IPv6 in [ ]) is compared with the certificate's
///   IP addresses alone, as addresses (::ffff:10.0.0.1 is 10.0.0.1);
/// - any other name with its DNS names alone, case-insensitively (ASCII), a trailing dot aside; a DNS
///   name of the certificate whose left-most label is `*` stands for any one label (`*.gateway.svc`
///   holds `envoy.gateway.svc`, not `gateway.svc` nor `a.b.gateway.svc`). Where either side is no
///   hostname as Go's validHostname has it, only the exact text (case aside) matches;
/// - never the URIs (a SPIFFE ID), e-mail addresses or the subject's common name.

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace swl::ratelimit {

/// The names a certificate's subjectAltName extension holds, as gRPC hands them to a verifier: DNS names
/// as written, IP addresses as text.
struct SubjectAltNames {
  std::vector<std::string> dns;
  std::vector<std::string> ip;
};

namespace san_detail {

inline std::string lowerAscii(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return lower;
}

inline std::vector<std::string_view> labels(std::string_view name) {
  std::vector<std::string_view> parts;
  for (;;) {
    const auto dot = name.find('.');
    parts.push_back(name.substr(0, dot));
    if (dot == std::string_view::npos) return parts;
    name.remove_prefix(dot + 1);
  }
}

inline std::string_view withoutTrailingDot(std::string_view name) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  return name;
}

// Go's validHostname: non-empty labels of letters, digits, '_' and '-' (not first); a pattern's left-most
// label may be `*`, and a name (not a pattern) may end with a dot.
inline bool validHostname(std::string_view host, bool pattern) {
  if (!pattern) host = withoutTrailingDot(host);
  if (host.empty()) return false;
  const std::vector<std::string_view> parts = labels(host);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].empty()) return false;
    if (pattern && i == 0 && parts[i] == "*") continue;
    for (std::size_t j = 0; j < parts[i].size(); ++j) {
      const char c = parts[i][j];
      const bool letter_or_digit = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (!letter_or_digit && c != '_' && (c != '-' || j == 0)) return false;
    }
  }
  return true;
}

// Go's matchHostnames: label by label, the pattern's left-most `*` standing for any one.
inline bool matchHostnames(std::string_view pattern, std::string_view host) {
  const std::string lower_pattern = lowerAscii(pattern);
  const std::string lower_host = lowerAscii(withoutTrailingDot(host));
  if (lower_pattern.empty() || lower_host.empty()) return false;
  const std::vector<std::string_view> pattern_parts = labels(lower_pattern);
  const std::vector<std::string_view> host_parts = labels(lower_host);
  if (pattern_parts.size() != host_parts.size()) return false;
  for (std::size_t i = 0; i < pattern_parts.size(); ++i) {
    if (i == 0 && pattern_parts[i] == "*") continue;
    if (pattern_parts[i] != host_parts[i]) return false;
  }
  return true;
}

// Go's matchExactly.
inline bool matchExactly(std::string_view a, std::string_view b) {
  if (a.empty() || a == "." || b.empty() || b == ".") return false;
  return lowerAscii(a) == lowerAscii(b);
}

using Address = std::array<unsigned char, 16>;

// `text` as an IP address in IPv6's 16 bytes, IPv4 mapped (::ffff:a.b.c.d), as Go's net.IP.Equal compares
// them; none when it is not one. inet_pton refuses what Go's net.ParseIP refuses: IPv4 with a leading
// zero, a zone.
inline std::optional<Address> ipAddress(std::string_view text) {
  const std::string copy(text);  // inet_pton reads a C string
  Address address{};
  if (inet_pton(AF_INET6, copy.c_str(), address.data()) == 1) return address;
  std::array<unsigned char, 4> v4{};
  if (inet_pton(AF_INET, copy.c_str(), v4.data()) != 1) return std::nullopt;
  address[10] = address[11] = 0xff;
  std::copy(v4.begin(), v4.end(), address.begin() + 12);
  return address;
}

}  // namespace san_detail

/// Whether `wanted` is one of `names`, as Go's x509.Certificate.VerifyHostname decides it (above).
inline bool holdsName(const SubjectAltNames& names, std::string_view wanted) {
  using namespace san_detail;
  std::string_view candidate_ip = wanted;
  if (wanted.size() >= 3 && wanted.front() == '[' && wanted.back() == ']')
    candidate_ip = wanted.substr(1, wanted.size() - 2);
  if (const std::optional<Address> ip = ipAddress(candidate_ip)) {
    return std::any_of(names.ip.begin(), names.ip.end(),
                       [&](const std::string& held) { return ipAddress(held) == ip; });
  }
  const std::string candidate = lowerAscii(wanted);
  const bool valid_candidate = validHostname(candidate, false);
  return std::any_of(names.dns.begin(), names.dns.end(), [&](const std::string& held) {
    return valid_candidate && validHostname(held, true) ? matchHostnames(held, candidate)
                                                        : matchExactly(held, candidate);
  });
}

}  // namespace swl::ratelimit

#pragma once
// swl::grpc's internals: how a call's key, status and trailers are made.

#include <swl/decision.hpp>
#include <swl/error.hpp>
#include <swl/integrations/http_headers.hpp>

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

namespace swl::detail {

// The protobuf wire format, as much of it as google.rpc.Status needs: varints and length-delimited fields.
// Hand-written because google/rpc/*.proto ships with neither gRPC nor protobuf on Debian 12.
class ProtobufWriter {
 public:
  void varintField(int field, std::uint64_t value) {
    if (value == 0) return;  // proto3 leaves a field at its default out
    tag(field, 0);
    varint(value);
  }
  void bytesField(int field, std::string_view bytes) {
    tag(field, 2);
    varint(bytes.size());
    wire_.append(bytes);
  }
  const std::string& wire() const noexcept { return wire_; }

 private:
  void tag(int field, int wire_type) { varint((static_cast<std::uint64_t>(field) << 3) | wire_type); }
  void varint(std::uint64_t value) {
    for (; value >= 0x80; value >>= 7) wire_ += static_cast<char>((value & 0x7f) | 0x80);
    wire_ += static_cast<char>(value);
  }

  std::string wire_;
};

inline constexpr std::string_view kRetryInfoType = "type.googleapis.com/google.rpc.RetryInfo";

// google.rpc.Status{code, message, details: [Any{RetryInfo{retry_delay: Duration}}]}, serialized: what
// grpc-status-details-bin carries.
inline std::string retryStatusDetails(::grpc::StatusCode code, std::string_view message,
                                      std::chrono::microseconds retry_delay) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(retry_delay);
  ProtobufWriter duration;  // google.protobuf.Duration{int64 seconds = 1; int32 nanos = 2}
  duration.varintField(1, static_cast<std::uint64_t>(seconds.count()));
  duration.varintField(2, static_cast<std::uint64_t>((retry_delay - seconds).count() * 1000));
  ProtobufWriter retry_info;  // google.rpc.RetryInfo{Duration retry_delay = 1}
  retry_info.bytesField(1, duration.wire());
  ProtobufWriter any;  // google.protobuf.Any{string type_url = 1; bytes value = 2}
  any.bytesField(1, kRetryInfoType);
  any.bytesField(2, retry_info.wire());
  ProtobufWriter status;  // google.rpc.Status{int32 code = 1; string message = 2; repeated Any details = 3}
  status.varintField(1, static_cast<std::uint64_t>(code));
  status.bytesField(2, message);
  status.bytesField(3, any.wire());
  return status.wire();
}

// A peer as gRPC names it ("ipv4:10.0.0.7:53122", "ipv6:[::1]:53122") without its port, which changes with
// every connection a client opens; other peers ("unix:/run/app.sock") whole.
inline std::string_view peerAddress(std::string_view peer) {
  if (peer.substr(0, 5) != "ipv4:" && peer.substr(0, 5) != "ipv6:") return peer;
  const std::size_t port = peer.rfind(':');
  return port > 4 ? peer.substr(0, port) : peer;
}

// gRPC accepts only these characters in a metadata key.
inline bool isMetadataKey(std::string_view name) {
  if (name.empty()) return false;
  for (const char c : name) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!allowed) return false;
  }
  return true;
}

// "2.5s", "40ms", "10s": a window as a person writes it.
inline std::string spokenDuration(std::chrono::microseconds duration) {
  if (duration.count() % 1'000'000 == 0) return std::to_string(duration.count() / 1'000'000) + "s";
  if (duration.count() % 1'000 == 0) return std::to_string(duration.count() / 1'000) + "ms";
  return std::to_string(duration.count()) + "us";
}

}  // namespace swl::detail

#pragma once
// Ownership of hiredis objects. Every redisContext and redisReply swl touches lives in one of these
// pointers, so no path (exceptions included) leaks or double-frees one.

#include <hiredis/hiredis.h>

#include <array>
#include <chrono>
#include <memory>
#include <string_view>
#include <vector>

namespace swl::detail {

struct ContextDeleter {
  void operator()(redisContext* context) const noexcept { redisFree(context); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* reply) const noexcept { freeReplyObject(reply); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// hiredis and libevent take durations as timeval.
inline timeval toTimeval(std::chrono::microseconds duration) {
  timeval result{};
  result.tv_sec = static_cast<decltype(result.tv_sec)>(duration.count() / 1000000);
  result.tv_usec = static_cast<decltype(result.tv_usec)>(duration.count() % 1000000);
  return result;
}

inline std::string_view replyText(const redisReply& reply) noexcept {
  return reply.str == nullptr ? std::string_view{} : std::string_view(reply.str, reply.len);
}

inline bool isErrorReply(const redisReply& reply, std::string_view code) noexcept {
  if (reply.type != REDIS_REPLY_ERROR) return false;
  std::string_view text = replyText(reply);
  return text.substr(0, code.size()) == code && (text.size() == code.size() || text[code.size()] == ' ');
}

// hiredis wants arguments as parallel arrays of pointers and lengths; commands of up to 16 arguments
// (every script call swl makes) convert without touching the heap.
class HiredisArgv {
 public:
  HiredisArgv() = default;
  HiredisArgv(const HiredisArgv&) = delete;  // points into itself
  HiredisArgv& operator=(const HiredisArgv&) = delete;

  void assign(const std::string_view* argv, std::size_t argc) {
    if (argc > kOnStack) {
      pointers_on_heap_.resize(argc), lengths_on_heap_.resize(argc);
      pointers_ = pointers_on_heap_.data(), lengths_ = lengths_on_heap_.data();
    } else {
      pointers_ = pointers_on_stack_.data(), lengths_ = lengths_on_stack_.data();
    }
    for (std::size_t i = 0; i < argc; ++i) pointers_[i] = argv[i].data(), lengths_[i] = argv[i].size();
  }
  const char** pointers() noexcept { return pointers_; }
  const std::size_t* lengths() const noexcept { return lengths_; }

 private:
  static constexpr std::size_t kOnStack = 16;
  std::array<const char*, kOnStack> pointers_on_stack_;
  std::array<std::size_t, kOnStack> lengths_on_stack_;
  std::vector<const char*> pointers_on_heap_;
  std::vector<std::size_t> lengths_on_heap_;
  const char** pointers_ = pointers_on_stack_.data();
  std::size_t* lengths_ = lengths_on_stack_.data();
};

}  // namespace swl::detail

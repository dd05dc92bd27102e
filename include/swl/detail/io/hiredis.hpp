#pragma once
// Ownership of hiredis objects and the translation of hiredis's errors into ours. Every redisContext and
// redisReply swl touches lives in one of these pointers, so no path (exceptions included) leaks or
// double-frees one.

#include <swl/error.hpp>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <memory>
#include <string>
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

// The most elements swl accepts in one reply aggregate. No reply swl reads has more than CLUSTER SLOTS'
// 16384 ranges, and hiredis 1.x would otherwise allocate an array as large as a server announces
// (4 billion elements: tens of GB) before reading one of them. hiredis 0.14 has no such setting.
inline constexpr long long kMaxReplyElements = 1 << 16;

inline void limitAggregates([[maybe_unused]] redisReader& reader) noexcept {
#if HIREDIS_MAJOR >= 1
  reader.maxelements = kMaxReplyElements;
#endif
}

// Whether hiredis_ssl put a TLS layer on `context`, whoever made it: only hiredis_ssl sets privctx, which
// exists from hiredis 1.0 (0.14 has no TLS).
inline bool isEncrypted([[maybe_unused]] const redisContext& context) noexcept {
#if HIREDIS_MAJOR >= 1
  return context.privctx != nullptr;
#else
  return false;
#endif
}

// hiredis and libevent take durations as timeval.
inline timeval toTimeval(std::chrono::microseconds duration) {
  timeval result{};
  result.tv_sec = static_cast<decltype(result.tv_sec)>(duration.count() / 1000000);
  result.tv_usec = static_cast<decltype(result.tv_usec)>(duration.count() % 1000000);
  return result;
}

inline bool isTimeout(const redisContext& context) noexcept {
#if defined(REDIS_ERR_TIMEOUT)
  if (context.err == REDIS_ERR_TIMEOUT) return true;
#endif
  // hiredis 0.14 reports a timeout as an I/O error carrying the socket's errno.
  return context.err == REDIS_ERR_IO &&
         (errno == EAGAIN || errno == EWOULDBLOCK || errno == ETIMEDOUT || errno == EINPROGRESS);
}

// The error hiredis recorded on `context` while `doing` something with `endpoint`, as a TimeoutError
// when it was one.
[[noreturn]] inline void throwContextError(const redisContext& context, std::string_view endpoint,
                                           std::string_view doing) {
  const bool timed_out = isTimeout(context);
  std::string message =
      aboutRedis(endpoint, (timed_out ? " timed out " : " failed "), doing, " (", context.errstr, ")");
  if (timed_out) throw TimeoutError(message);
  throw ConnectionError(message);
}

// One command as hiredis takes it, a pointer and a length per word (a ScriptCall's own, or HiredisArgv's),
// which word is a script call's room for its deadline (0: none), which a connection writes as the
// command goes out, and, for a script call sent as a module's command instead, that command's name.
struct Words {
  const char* const* pointers;
  const std::size_t* lengths;
  std::size_t count;
  std::size_t deadline_word = 0;
  std::string_view native_command = {};  // sent in place of the first `native_head` words, when not empty
  std::size_t native_head = 0;
};

// hiredis declares its word arrays `const char**`; it only reads them.
inline const char** hiredisPointers(const char* const* pointers) noexcept { return const_cast<const char**>(pointers); }

// Words given as views, converted for hiredis: commands of up to 16 words (the handshake's, an operator's)
// convert without touching the heap.
class HiredisArgv {
 public:
  HiredisArgv(const std::string_view* argv, std::size_t argc) : count_(argc) {
    if (argc > kOnStack) {
      pointers_on_heap_.resize(argc), lengths_on_heap_.resize(argc);
      pointers_ = pointers_on_heap_.data(), lengths_ = lengths_on_heap_.data();
    }
    for (std::size_t i = 0; i < argc; ++i) pointers_[i] = argv[i].data(), lengths_[i] = argv[i].size();
  }
  HiredisArgv(const HiredisArgv&) = delete;  // points into itself
  HiredisArgv& operator=(const HiredisArgv&) = delete;

  Words words() const noexcept { return {pointers_, lengths_, count_}; }

 private:
  static constexpr std::size_t kOnStack = 16;
  std::size_t count_;
  std::array<const char*, kOnStack> pointers_on_stack_;
  std::array<std::size_t, kOnStack> lengths_on_stack_;
  std::vector<const char*> pointers_on_heap_;
  std::vector<std::size_t> lengths_on_heap_;
  const char** pointers_ = pointers_on_stack_.data();
  std::size_t* lengths_ = lengths_on_stack_.data();
};

// Where word `word` of a command starts in its RESP text (formattedCommand's): what an event loop's
// connection writes over in place (a call's deadline).
inline std::size_t formattedOffset(const Words& command, std::size_t word) {
  const auto digits = [](std::size_t count) {
    std::size_t length = 1;
    for (; count >= 10; count /= 10) ++length;
    return length;
  };
  std::size_t offset = 1 + digits(command.count) + 2;  // "*<argc>\r\n"
  for (std::size_t i = 0; i < word; ++i) offset += 1 + digits(command.lengths[i]) + 2 + command.lengths[i] + 2;
  return offset + 1 + digits(command.lengths[word]) + 2;
}

// A whole command in RESP (an array of bulk strings), byte for byte what redisFormatCommandArgv writes:
// what the async connections queue and may resend. Written here because hiredis prints each length with
// sprintf, a tenth of an event-loop client's time at 16 calls in flight.
inline std::string formattedCommand(const Words& command) {
  constexpr std::size_t kHeaderBound = 24;  // a kind, up to 20 digits, "\r\n"
  std::size_t bound = kHeaderBound;
  for (std::size_t i = 0; i < command.count; ++i) bound += kHeaderBound + command.lengths[i] + 2;
  std::string text(bound, '\0');
  char* out = text.data();
  const auto line = [&out](char kind, std::size_t count) {
    *out++ = kind;
    out = std::to_chars(out, out + kHeaderBound, count).ptr;
    *out++ = '\r', *out++ = '\n';
  };
  line('*', command.count);
  for (std::size_t i = 0; i < command.count; ++i) {
    line('$', command.lengths[i]);
    out = std::copy(command.pointers[i], command.pointers[i] + command.lengths[i], out);
    *out++ = '\r', *out++ = '\n';
  }
  text.resize(static_cast<std::size_t>(out - text.data()));
  return text;
}

// The same from views (the handshake's commands, SCRIPT LOAD).
inline std::string formattedCommand(const std::string_view* argv, std::size_t argc) {
  return formattedCommand(HiredisArgv(argv, argc).words());
}

}  // namespace swl::detail

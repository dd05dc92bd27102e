#pragma once
/// \file
/// The seam between the limiters and Redis: a Script and the arguments of one call of it (ScriptCall),
/// the Reply that comes back, and RedisClient, what runs the calls. A limiter holds a RedisClient&, so the
/// same limiter type runs over one Connection, a ConnectionPool shared by threads, a ClusterConnection or
/// a SentinelConnection: the user swaps the client, not the code.
///
/// Every RedisClient keeps the same promises:
/// - a call goes out as EVALSHA (the SHA-1 is known from the script's text); only a NOSCRIPT answer loads
///   the script (SCRIPT LOAD) and repeats that call, once. A call that timed out or lost its connection
///   may have run already, so it is never repeated: it fails with ConnectionError (TimeoutError) and the
///   next call reconnects;
/// - an error reply (WRONGTYPE, OOM, a script error) is a ReplyError naming the script and the server.

#include <swl/detail/io/hiredis.hpp>
#include <swl/detail/script/sha1.hpp>
#include <swl/detail/script/wire.hpp>
#include <swl/error.hpp>

#include <array>
#include <cstddef>
#include <exception>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl {

/// A Lua script swl runs with EVALSHA. Scripts are string literals (or live as long as the program), so
/// the text is viewed, not copied.
class Script {
 public:
  /// How a module's command that does what the script does takes the script's keys: `one`, the script's
  /// one key and then its arguments, in the same order (the log's SWL.DECIDE); `counted`, as EVALSHA takes
  /// them, their count first (MultiLimiter's SWL.DECIDEALL).
  enum class NativeKeys {
    one,      ///< the script's one key, then its arguments (its count dropped): the log's SWL.DECIDE
    counted,  ///< the keys counted first, as EVALSHA takes them: MultiLimiter's SWL.DECIDEALL
  };

  /// A script of `text`, which must outlive it, named `name` in messages; its SHA-1 is computed once, here.
  /// `native_command`, when not empty, is a module's command that does what the script does, taking its
  /// keys as `native_keys` says: a connection to a server that has the module sends the script's calls as
  /// that instead (ConnectionOptions::native_module).
  Script(std::string_view name, std::string_view text, std::string_view native_command = {},
         NativeKeys native_keys = NativeKeys::one)
      : name_(name),
        text_(text),
        sha_(detail::sha1Hex(text)),
        native_command_(native_command),
        native_keys_(native_keys) {}

  /// The name messages give it.
  const std::string& name() const noexcept { return name_; }
  /// The Lua, as Redis receives it.
  std::string_view text() const noexcept { return text_; }
  /// The SHA-1 of the text, in hex: what EVALSHA names it by.
  std::string_view sha() const noexcept { return sha_; }
  /// The module's command that can run in its place, or empty.
  std::string_view nativeCommand() const noexcept { return native_command_; }
  /// How that command takes the script's keys.
  NativeKeys nativeKeys() const noexcept { return native_keys_; }

 private:
  std::string name_;
  std::string_view text_;
  std::string sha_;
  std::string_view native_command_;
  NativeKeys native_keys_;
};

/// "EVALSHA sha numkeys key... arg...", laid out as hiredis sends it: a pointer and a length per word,
/// written once, where the call is made, and sent from there. The keys and arguments are viewed, not
/// copied, so they must outlive the call. Fixed-size, so building one costs no allocation on the hot path.
class ScriptCall {
 public:
  /// The most keys a call takes: a MultiLimiter's most rules, each with its holds beside it.
  static constexpr std::size_t kMaxKeys = 18;
  /// The most words a call takes, "EVALSHA", the SHA-1 and the key count included.
  static constexpr std::size_t kMaxArguments = 80;

  /// A call of `script` on `keys` with `args`; more than a call holds is an InvalidArgument.
  ScriptCall(const Script& script, std::initializer_list<std::string_view> keys,
             std::initializer_list<std::string_view> args)
      : ScriptCall(script, keys.begin(), keys.size(), args.begin(), args.size()) {}

  /// The same from arrays, for callers that build their keys and arguments on the stack.
  ScriptCall(const Script& script, const std::string_view* keys, std::size_t key_count, const std::string_view* args,
             std::size_t arg_count)
      : script_(&script), key_count_(key_count) {
    static constexpr std::string_view kKeyCounts[kMaxKeys + 1] = {
        "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18"};
    if (key_count > kMaxKeys) {
      throw InvalidArgument("swl::ScriptCall of " + script.name() + ": " + std::to_string(key_count) +
                            " keys are more than a call holds (" + std::to_string(kMaxKeys) + ")");
    }
    for (const std::string_view word : {std::string_view("EVALSHA"), script.sha(), kKeyCounts[key_count]}) {
      push(word);
    }
    for (std::size_t i = 0; i < key_count; ++i) push(keys[i]);
    append(args, arg_count);
  }

  /// Adds `count` arguments after those the call has, for a caller that lays its arguments out in parts;
  /// more than a call holds is an InvalidArgument.
  void append(const std::string_view* args, std::size_t count) {
    if (count > kMaxArguments - argc_) {
      throw InvalidArgument("swl::ScriptCall of " + script_->name() + ": " + std::to_string(key_count_) + " keys and " +
                            std::to_string(argc_ - 3 - key_count_ + count) + " arguments are more than a call holds");
    }
    for (std::size_t i = 0; i < count; ++i) push(args[i]);
  }
  /// The same from a list.
  void append(std::initializer_list<std::string_view> args) { append(args.begin(), args.size()); }

  /// The script it calls.
  const Script& script() const noexcept { return *script_; }
  /// How many words the command has.
  std::size_t argc() const noexcept { return argc_; }
  /// Word `index` of the command (0 is "EVALSHA").
  std::string_view word(std::size_t index) const noexcept { return {pointers_[index], lengths_[index]}; }
  /// The words as hiredis takes them: where each starts, and its length.
  ///@{
  const char* const* pointers() const noexcept { return pointers_.data(); }
  const std::size_t* lengths() const noexcept { return lengths_.data(); }
  ///@}
  /// How many keys the call names.
  std::size_t keyCount() const noexcept { return key_count_; }
  /// A cluster routes the call by its first key.
  std::string_view key(std::size_t index) const noexcept { return word(3 + index); }

  /// The word that holds the room for the call's deadline on Redis's clock ('-' and 16 zeros,
  /// docs/failures.md), or 0 when the call carries none. swl's connections write the deadline there as
  /// they send the call, so that a call they stopped waiting for records nothing when it runs later; a
  /// RedisClient of your own may leave the room as it is (no deadline).
  std::size_t deadlineWord() const noexcept { return deadline_word_; }
  /// Makes ARGV[`argument`] (counted from 1, as the script counts) the room for the deadline.
  void carryDeadlineIn(std::size_t argument) noexcept { deadline_word_ = 3 + key_count_ + argument - 1; }

 private:
  void push(std::string_view word) noexcept { pointers_[argc_] = word.data(), lengths_[argc_++] = word.size(); }

  const Script* script_;
  std::array<const char*, kMaxArguments> pointers_;
  std::array<std::size_t, kMaxArguments> lengths_;
  std::size_t argc_ = 0;
  std::size_t key_count_;
  std::size_t deadline_word_ = 0;
};

/// One reply, or one element of one, as Redis sent it. Nothing about its shape is assumed: a view of the
/// wrong kind answers false, empty or 0, and an element that is not there is a null view, so readers
/// check what they need and say so in their own words. Valid while the Reply it came from lives.
class ReplyView {
 public:
  /// A null view.
  ReplyView() = default;
  /// A view of `reply`, which must outlive it; null gives a null view.
  explicit ReplyView(const redisReply* reply) noexcept : reply_(reply) {}

  /// Whether the view is of that kind: null (no reply at all), nil, an error, an integer, a string, a status
  /// or an array. A null view is only null.
  ///@{
  bool isNull() const noexcept { return reply_ == nullptr; }
  bool isNil() const noexcept { return is(REDIS_REPLY_NIL); }
  bool isError() const noexcept { return is(REDIS_REPLY_ERROR); }
  bool isInteger() const noexcept { return is(REDIS_REPLY_INTEGER); }
  bool isString() const noexcept { return is(REDIS_REPLY_STRING); }
  bool isStatus() const noexcept { return is(REDIS_REPLY_STATUS); }
  bool isArray() const noexcept { return is(REDIS_REPLY_ARRAY); }
  ///@}

  /// An error reply whose code is `code`: "NOSCRIPT", "MOVED", ... (the text up to its first space).
  bool isError(std::string_view code) const noexcept {
    const std::string_view error = isError() ? text() : std::string_view();
    return error.substr(0, code.size()) == code && (error.size() == code.size() || error[code.size()] == ' ');
  }

  /// The bytes of a string, status or error reply; empty for any other.
  std::string_view text() const noexcept {
    if (reply_ == nullptr || reply_->str == nullptr) return {};
    return {reply_->str, reply_->len};
  }
  /// The value of an integer reply; 0 for any other.
  long long integer() const noexcept { return isInteger() ? reply_->integer : 0; }

  /// The elements of an array reply; 0 for any other.
  std::size_t size() const noexcept { return isArray() && reply_->element != nullptr ? reply_->elements : 0; }
  /// Element `index` of an array reply; a null view when there is none.
  ReplyView operator[](std::size_t index) const noexcept {
    return index < size() ? ReplyView(reply_->element[index]) : ReplyView();
  }

 private:
  bool is(int type) const noexcept { return reply_ != nullptr && reply_->type == type; }

  const redisReply* reply_ = nullptr;
};

/// A reply owned: what a RedisClient hands back. Read it through ReplyView (`reply->integer()`).
class Reply {
 public:
  /// An empty reply.
  Reply() = default;
  /// Takes ownership of `owned`, as hiredis handed it over.
  explicit Reply(redisReply* owned) noexcept : owned_(owned), view_(owned) {}
  /// Takes over `other`'s reply; `other` is then empty.
  Reply(Reply&& other) noexcept : owned_(std::move(other.owned_)), view_(std::exchange(other.view_, ReplyView())) {}
  /// Frees this reply and takes over `other`'s.
  Reply& operator=(Reply&& other) noexcept {
    owned_ = std::move(other.owned_);
    view_ = std::exchange(other.view_, ReplyView());
    return *this;
  }

  /// Whether it holds a reply.
  explicit operator bool() const noexcept { return !view_.isNull(); }
  /// The reply, read through its view.
  const ReplyView& operator*() const noexcept { return view_; }
  /// The reply's view, for `reply->integer()`.
  const ReplyView* operator->() const noexcept { return &view_; }

 private:
  detail::ReplyPtr owned_;
  ReplyView view_;
};

/// One call's answer in a batch: its reply, or why there is none (the other calls are unaffected).
struct ScriptReply {
  /// The reply; empty when there is an error.
  Reply reply;
  /// Why there is no reply (ConnectionError, ReplyError); null when there is one.
  std::exception_ptr error;
};

/// What runs the limiters' script calls: one Connection, a pool, a cluster or a Sentinel master, all
/// keeping the promises above.
class RedisClient {
 public:
  /// Virtual, so that a client owned through a RedisClient pointer is destroyed whole.
  virtual ~RedisClient() = default;

  /// Runs one call and returns its (non-error) reply. Throws ConnectionError or ReplyError.
  virtual Reply run(const ScriptCall& call) = 0;

  /// Runs many calls pipelined, in as few round trips as the client can, and answers each in input
  /// order. Calls that were answered keep their replies even when later ones fail.
  virtual std::vector<ScriptReply> runMany(const std::vector<ScriptCall>& calls) = 0;

  /// Runs `script` on `keys` with `args`, as run(ScriptCall(script, keys, args)).
  Reply run(const Script& script, std::initializer_list<std::string_view> keys,
            std::initializer_list<std::string_view> args) {
    return run(ScriptCall(script, keys, args));
  }

 protected:
  /// Only a derived client makes, copies or moves one, so a RedisClient is never sliced.
  ///@{
  RedisClient() = default;
  RedisClient(const RedisClient&) = default;
  RedisClient& operator=(const RedisClient&) = default;
  RedisClient(RedisClient&&) = default;
  RedisClient& operator=(RedisClient&&) = default;
  ///@}
};

namespace detail {

// How every client reports an error reply to a script call. EXPIRED is a call that Redis ran past the
// deadline it carried (ScriptCall::deadlineWord), recording nothing: a TimeoutError, as its client had
// stopped waiting.
inline std::exception_ptr scriptError(std::string_view endpoint, const Script& script, ReplyView reply) {
  if (reply.isError(wire::kExpiredError)) {
    return std::make_exception_ptr(detail::redisError<TimeoutError>(
        endpoint, ": script ", script.name(),
        " ran after the call's deadline: ", reply.text().substr(wire::kExpiredError.size() + 1)));
  }
  return std::make_exception_ptr(
      detail::redisError<ReplyError>(endpoint, ": script ", script.name(), " failed: ", reply.text()));
}

}  // namespace detail
}  // namespace swl

// A call as it goes out (detail/io/outgoing.hpp) alone, with no server: its deadline written into its
// room on Redis's clock once that clock is known, as the module's command where the server has it, and the
// call itself untouched.

#include <swl/detail/io/async_protocol.hpp>
#include <swl/detail/io/outgoing.hpp>
#include <swl/swl.hpp>

#include "support/resp.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

using namespace std::chrono_literals;
using swl::detail::Outgoing;
using swl::detail::RedisClock;

namespace {

const swl::Script kClockScript("sliding_window", "return 1");

// A decision's call whose ARGV[4] is the room for its deadline.
swl::ScriptCall callWithRoom() {
  swl::ScriptCall call(kClockScript, {"rl:user"}, {"1000000", "10", "1", swl::detail::kNoDeadline, "m1", "2000", "0"});
  call.carryDeadlineIn(4);
  return call;
}

std::string_view wordOf(const Outgoing& outgoing, std::size_t index) {
  return {outgoing.pointers()[index], outgoing.lengths()[index]};
}

// Redis's clock at 1,700,000,000 s, read (the reply came) at `received`.
RedisClock clockReadAt(RedisClock::Local::time_point received) {
  RedisClock clock;
  clock.observe(*swl::test::replyFrom("*2\r\n$10\r\n1700000000\r\n$6\r\n000000\r\n"), received);
  return clock;
}

}  // namespace

TEST_CASE("a call goes out as it is, uncopied, until Redis's clock is known, or when it waits without a timeout") {
  const swl::ScriptCall call = callWithRoom();
  const RedisClock unknown;
  const Outgoing before(swl::detail::wordsOf(call), unknown, 100ms);
  CHECK(before.pointers() == call.pointers());
  CHECK(before.count() == static_cast<int>(call.argc()));

  const RedisClock known = clockReadAt(RedisClock::Local::now());
  const Outgoing untimed(swl::detail::wordsOf(call), known, 0ms);
  CHECK(untimed.pointers() == call.pointers());
  CHECK(wordOf(untimed, call.deadlineWord()) == swl::detail::kNoDeadline);
}

TEST_CASE("a call goes out with its deadline written into its room on Redis's clock, the call itself untouched") {
  const swl::ScriptCall call = callWithRoom();
  const RedisClock::Local::time_point received = RedisClock::Local::now();
  const RedisClock clock = clockReadAt(received);
  const Outgoing outgoing(swl::detail::wordsOf(call), clock, 100ms);
  const RedisClock::Local::time_point sent = RedisClock::Local::now();

  REQUIRE(outgoing.count() == static_cast<int>(call.argc()));
  const std::string_view deadline = wordOf(outgoing, call.deadlineWord());
  REQUIRE(deadline.size() == swl::detail::kNoDeadline.size());
  CHECK(deadline[0] == '-');
  // Redis's now when the reply came, plus the timeout, plus what passed locally since then (rounded up:
  // the clock reads both ends in whole microseconds).
  const std::int64_t written = std::stoll(std::string(deadline.substr(1)));
  const std::int64_t redis_at_reply = 1'700'000'000'000'000;
  const auto passed = std::chrono::ceil<std::chrono::microseconds>(sent - received).count();
  CHECK(written >= redis_at_reply + 100'000);
  CHECK(written <= redis_at_reply + 100'000 + passed);
  for (std::size_t i = 0; i < call.argc(); ++i) {
    if (i != call.deadlineWord()) CHECK(wordOf(outgoing, i) == call.word(i));
  }
  CHECK(call.word(call.deadlineWord()) == swl::detail::kNoDeadline);  // written over a copy, not the call
}

TEST_CASE("a command without a room for a deadline goes out as it is, whatever the clock") {
  const swl::ScriptCall call(kClockScript, {"rl:user"}, {"1000000", "10", "1", "", "m1", "2000", "0"});
  REQUIRE(call.deadlineWord() == 0);
  const Outgoing outgoing(swl::detail::wordsOf(call), clockReadAt(RedisClock::Local::now()), 100ms);
  CHECK(outgoing.pointers() == call.pointers());
  CHECK(wordOf(outgoing, 7) == "");
}

TEST_CASE("a call sent as the module's command is its name, then the call from its key on, deadline and all") {
  const swl::Script native_script("sliding_window", "return 1", "SWL.DECIDE");
  swl::ScriptCall call(native_script, {"rl:user"}, {"1000000", "10", "1", swl::detail::kNoDeadline, "m1", "2000", "0"});
  call.carryDeadlineIn(4);
  const std::string_view expected[] = {"SWL.DECIDE", "rl:user", "1000000", "10", "1", "", "m1", "2000", "0"};

  // Before the clock is known: no deadline, but the words are still the module's.
  const Outgoing early(swl::detail::wordsOf(call, true), RedisClock(), 100ms);
  REQUIRE(early.count() == 9);
  for (std::size_t i = 0; i < 9; ++i) {
    CHECK(wordOf(early, i) == (i == 5 ? swl::detail::kNoDeadline : expected[i]));
  }
  const Outgoing timed(swl::detail::wordsOf(call, true), clockReadAt(RedisClock::Local::now()), 100ms);
  REQUIRE(timed.count() == 9);
  CHECK(wordOf(timed, 5).substr(0, 2) == "-1");  // the deadline, on Redis's clock (1.7e15 us)
  CHECK(wordOf(timed, 5).size() == swl::detail::kNoDeadline.size());
  CHECK(call.word(0) == "EVALSHA");  // the call itself untouched

  // A script without a module's command, or a connection whose server has none, sends EVALSHA.
  CHECK(Outgoing(swl::detail::wordsOf(call, false), RedisClock(), 100ms).count() == 11);
  const swl::ScriptCall plain(kClockScript, {"rl:user"}, {"1000000", "10"});
  CHECK(Outgoing(swl::detail::wordsOf(plain, true), RedisClock(), 100ms).pointers() == plain.pointers());
}

TEST_CASE("an event loop's formatted call becomes the module's command byte for byte as hiredis would write it") {
  const swl::Script native_script("sliding_window", "return 1", "SWL.DECIDE");
  const swl::ScriptCall call(native_script, {"rl:user"}, {"1000000", "10", "1", "", "m1", "2000", "0"});
  const swl::detail::FormattedCall formatted = swl::detail::formatted(call);
  std::string native;
  swl::detail::formatNative(native, formatted.command, formatted.native_head, formatted.native_rest_at,
                            native_script.nativeCommand());
  const std::string_view words[] = {"SWL.DECIDE", "rl:user", "1000000", "10", "1", "", "m1", "2000", "0"};
  CHECK(native == swl::detail::formattedCommand(words, std::size(words)));
}

TEST_CASE("a module's command that counts its keys keeps the count: SWL.DECIDEALL in place of EVALSHA sha") {
  const swl::Script native_script("multi_window", "return 1", "SWL.DECIDEALL", swl::Script::NativeKeys::counted);
  swl::ScriptCall call(native_script, {"rl:a", "rl:b"},
                       {swl::detail::kNoDeadline, "m1", "0", "1", "1000000", "10", "2000", ""});
  call.carryDeadlineIn(1);
  const std::string_view expected[] = {"SWL.DECIDEALL", "2",  "rl:a", "rl:b", "", "m1", "0", "1",
                                       "1000000",       "10", "2000", ""};
  const Outgoing timed(swl::detail::wordsOf(call, true), clockReadAt(RedisClock::Local::now()), 100ms);
  REQUIRE(timed.count() == 12);
  for (std::size_t i = 0; i < 12; ++i) {
    if (i != 4) CHECK(wordOf(timed, i) == expected[i]);
  }
  CHECK(wordOf(timed, 4).substr(0, 2) == "-1");  // the deadline moved with its word
  // An event loop's formatted call, byte for byte (the deadline's room as the call made it).
  const swl::detail::FormattedCall formatted = swl::detail::formatted(call);
  std::string native;
  swl::detail::formatNative(native, formatted.command, formatted.native_head, formatted.native_rest_at,
                            native_script.nativeCommand());
  std::string_view words[std::size(expected)];
  std::copy(std::begin(expected), std::end(expected), words);
  words[4] = swl::detail::kNoDeadline;
  CHECK(native == swl::detail::formattedCommand(words, std::size(words)));
}

TEST_CASE("a call of several keys keeps EVALSHA even where its script names a module's command") {
  const swl::Script native_script("blocking", "return 1", "SWL.DECIDE");
  const swl::ScriptCall call(native_script, {"rl:user", "rl:user:blocked"}, {"1000000", "10"});
  CHECK(Outgoing(swl::detail::wordsOf(call, true), RedisClock(), 100ms).pointers() == call.pointers());
  CHECK(swl::detail::formatted(call).native_head == 0);
}

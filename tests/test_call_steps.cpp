// The reply machine (detail/io/call_steps.hpp) alone, over scripted replies: what a call does next after
// each answer a server may give, with no server and no socket.

#include <swl/detail/holds_error.hpp>
#include <swl/detail/io/call_steps.hpp>
#include <swl/detail/io/native_module.hpp>
#include <swl/swl.hpp>

#include "support/resp.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>

using namespace std::chrono_literals;
using swl::detail::CallSteps;
using swl::test::replyFrom;
using Step = CallSteps::Step;

namespace {

const swl::Script kScript("sliding_window", "return 1");
const swl::Address kNode{"10.0.0.1", 7000};

CallSteps clusterSteps(CallSteps::Clock::time_point give_up_at = CallSteps::Clock::now() + 1s) {
  CallSteps::Terms terms;
  terms.follows_redirections = true;
  terms.max_redirects = 3;
  terms.give_up_at = give_up_at;
  return CallSteps(kScript, "swl::ClusterConnection to 10.0.0.1:7000", terms);
}

CallSteps::Next after(CallSteps& steps, const std::string& resp, CallSteps::Clock::time_point now = {}) {
  const swl::Reply reply = replyFrom(resp);
  return steps.replied(*reply, "10.0.0.1:7000", now == CallSteps::Clock::time_point() ? CallSteps::Clock::now() : now,
                       &kNode);
}

template <class Kind>
bool gaveUpWith(const CallSteps::Next& next) {
  return next.step == Step::give_up && swl::detail::holdsError<Kind>(next.error);
}

}  // namespace

TEST_CASE("a reply is the call's answer, and an error reply gives up with the error it stands for") {
  CallSteps steps(kScript, "swl::Connection", {});
  CHECK(after(steps, "*4\r\n:1\r\n:9\r\n:0\r\n:0\r\n").step == Step::done);
  const CallSteps::Next refused = after(steps, "-OOM command not allowed when used memory > 'maxmemory'\r\n");
  CHECK(gaveUpWith<swl::ReplyError>(refused));
  CHECK_THROWS_WITH(std::rethrow_exception(refused.error), Catch::Contains("script sliding_window failed: OOM"));
  // EXPIRED: Redis ran the call past its deadline and recorded nothing.
  CHECK(gaveUpWith<swl::TimeoutError>(after(steps, "-EXPIRED swl: the call ran 5 us past its deadline\r\n")));
  // Without the Cluster's terms, a redirection is an error like any other.
  CHECK(gaveUpWith<swl::ReplyError>(after(steps, "-MOVED 3999 10.0.0.2:7001\r\n")));
}

TEST_CASE("NOSCRIPT loads the script and sends the call once more, and a second NOSCRIPT gives up") {
  CallSteps steps(kScript, "swl::Connection", {});
  CHECK(after(steps, "-NOSCRIPT No matching script\r\n").step == Step::load_then_resend);
  CHECK(gaveUpWith<swl::ReplyError>(after(steps, "-NOSCRIPT No matching script\r\n")));
}

TEST_CASE("a call with no reply is never sent again: it ends with the failure") {
  CallSteps steps(kScript, "swl::Connection", {});
  const CallSteps::Next next = steps.failed(std::make_exception_ptr(swl::TimeoutError("no answer")));
  CHECK(gaveUpWith<swl::TimeoutError>(next));
}

TEST_CASE("a Cluster's call follows MOVED and ASK, pausing once they repeat, and gives up past its redirections") {
  CallSteps steps = clusterSteps();
  const CallSteps::Next moved = after(steps, "-MOVED 3999 10.0.0.2:7001\r\n");
  CHECK(moved.step == Step::resend_to);
  REQUIRE(moved.redirection);
  CHECK(moved.redirection->slot == 3999);
  CHECK(moved.redirection->target.port == 7001);
  CHECK(moved.pause == 0ms);  // the first is followed at once
  const CallSteps::Next ask = after(steps, "-ASK 3999 10.0.0.3:7002\r\n");
  CHECK(ask.step == Step::resend_asking);
  CHECK(ask.pause > 0ms);  // a second means the slot moves under the call
  CHECK(after(steps, "-MOVED 3999 10.0.0.2:7001\r\n").step == Step::resend_to);
  const CallSteps::Next bounced = after(steps, "-MOVED 3999 10.0.0.2:7001\r\n");
  CHECK(gaveUpWith<swl::ReplyError>(bounced));
  CHECK_THROWS_WITH(std::rethrow_exception(bounced.error), Catch::Contains("still redirected after 3 redirections"));
  CHECK(steps.redirects() == 4);
}

TEST_CASE("TRYAGAIN, CLUSTERDOWN and LOADING pause and send again while the call's time allows") {
  const auto start = CallSteps::Clock::now();
  CallSteps steps = clusterSteps(start + 20ms);
  for (const char* later : {"-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
                            "-CLUSTERDOWN The cluster is down\r\n", "-LOADING Redis is loading\r\n"}) {
    const CallSteps::Next next = after(steps, later, start);
    CHECK(next.step == Step::pause_then_resend);
    CHECK(next.pause > 0ms);
  }
  // The pauses double (2, 4, 8 ms, ...): one that would end past the call's time gives up.
  const CallSteps::Next late = after(steps, "-TRYAGAIN again\r\n", start + 15ms);
  CHECK(gaveUpWith<swl::ReplyError>(late));
  CHECK_THROWS_WITH(std::rethrow_exception(late.error), Catch::Contains("still answers 'TRYAGAIN again'"));
}

TEST_CASE("a WAIT that fewer replicas acknowledged than asked gives up with a TimeoutError") {
  CallSteps steps(kScript, "swl::Connection", {});
  CHECK(steps.acknowledged(*replyFrom(":2\r\n"), 2, "10.0.0.1:7000", "25").step == Step::done);
  const CallSteps::Next short_wait = steps.acknowledged(*replyFrom(":1\r\n"), 2, "10.0.0.1:7000", "25");
  CHECK(gaveUpWith<swl::TimeoutError>(short_wait));
  CHECK_THROWS_WITH(std::rethrow_exception(short_wait.error), Catch::Contains("1 of 2 replicas acknowledged"));
}

TEST_CASE("a call the module could not take goes again as the script, and one it required gives up saying so") {
  const swl::Script native_script("sliding_window", "return 1", "SWL.DECIDE");
  CallSteps steps(native_script, "swl::Connection", {});
  const auto next = [&](CallSteps& on, const std::string& resp) {
    return on.replied(*replyFrom(resp), "10.0.0.1:7000", CallSteps::Clock::now());
  };
  // A set of swl 0.3's layout: the script renumbers it; the module stays.
  const CallSteps::Next layout = next(steps, "-LAYOUT swl: the log k is in swl 0.3's layout\r\n");
  CHECK(layout.step == Step::resend_as_script);
  CHECK(!layout.module_gone);
  // The server does not know the command: the module is gone.
  const CallSteps::Next unknown =
      next(steps, "-ERR unknown command 'SWL.DECIDE', with args beginning with: 'k' '60000000' \r\n");
  CHECK(unknown.step == Step::resend_as_script);
  CHECK(unknown.module_gone);
  // An ACL user that may run EVALSHA but not the module's command: the same.
  const CallSteps::Next denied =
      next(steps, "-NOPERM User limited has no permissions to run the 'swl.decide' command\r\n");
  CHECK(denied.step == Step::resend_as_script);
  CHECK(denied.module_gone);
  // Another unknown command, or a script without a module's command, is an error like any other.
  CHECK(gaveUpWith<swl::ReplyError>(next(steps, "-ERR unknown command 'FOO', with args beginning with: \r\n")));
  CallSteps plain(kScript, "swl::Connection", {});
  CHECK(gaveUpWith<swl::ReplyError>(next(plain, "-LAYOUT swl: the log k is in swl 0.3's layout\r\n")));
  // ConnectionOptions::native_module required: a server without the module is an error that says so.
  CallSteps::Terms required;
  required.module_required = true;
  CallSteps requiring(native_script, "swl::Connection", required);
  const CallSteps::Next refused = next(requiring, "-ERR unknown command 'SWL.DECIDE', with args beginning with: \r\n");
  CHECK(gaveUpWith<swl::ReplyError>(refused));
  CHECK_THROWS_WITH(std::rethrow_exception(refused.error), Catch::Contains("does not have the swl-native module"));
  CHECK(next(requiring, "-LAYOUT swl: the log k is in swl 0.3's layout\r\n").step == Step::resend_as_script);
}

TEST_CASE("the handshake takes a server's module for its own only when COMMAND INFO's tips name the layout") {
  using swl::detail::moduleIn;
  // name, arity, flags, first, last, step, ACL categories, tips, key specs, subcommands
  const auto info = [](const std::string& tips) {
    return replyFrom("*1\r\n*10\r\n$10\r\nswl.decide\r\n:-1\r\n*1\r\n+write\r\n:1\r\n:1\r\n:1\r\n*0\r\n" + tips +
                     "*0\r\n*0\r\n");
  };
  namespace wire = swl::detail::wire;
  const std::string tip(wire::kLayoutTip);
  const std::string another = std::string(wire::kLayoutTipName) + ":" + std::to_string(wire::kLayoutVersion + 1);
  CHECK(moduleIn(*info("*1\r\n+" + tip + "\r\n")));
  CHECK(moduleIn(*info("*2\r\n+nondeterministic_output\r\n$" + std::to_string(tip.size()) + "\r\n" + tip +
                       "\r\n")));  // RESP3 sends it as a string
  CHECK_FALSE(moduleIn(*info("*1\r\n+" + another + "\r\n")));
  CHECK_FALSE(moduleIn(*info("*0\r\n")));              // a module too old to say
  CHECK_FALSE(moduleIn(*replyFrom("*1\r\n$-1\r\n")));  // no such command
  CHECK_FALSE(moduleIn(*replyFrom("-NOPERM this user has no permissions to run the 'command|info' command\r\n")));
}

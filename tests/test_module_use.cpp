// The library with the module: a connection asks at connect whether the server has swl-native and sends
// the log's decisions as SWL.DECIDE where it does, EVALSHA where it does not, or as
// ConnectionOptions::native_module forces; a call the module cannot take (a set of swl 0.3's layout, a
// server that lost the module) goes again as the script, once. A MultiLimiter whose rules are all logs
// goes as SWL.DECIDEALL. Counted on the server (INFO commandstats and errorstats), on one Connection, a
// pool's batch, a Cluster and a Sentinel deployment through a failover.

#include <swl/swl.hpp>

#include "support/log_traces.hpp"
#include "support/redis_cluster.hpp"
#include "support/redis_sentinel.hpp"
#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using swl::test::commandCalls;
using swl::test::errorReplies;
using swl::test::RedisServer;

namespace {

// A server with the module, which a test may unload (MODULE is refused by default since Redis 7).
RedisServer serverWithModule() {
  return RedisServer({"--loadmodule", swl::test::modulePath(), "--enable-module-command", "local"});
}

swl::ConnectionOptions nativeModule(swl::NativeModule use) {
  swl::ConnectionOptions options = swl::test::patient();
  options.native_module = use;
  return options;
}

// A server with the module, a connection that uses it, and one that only watches (INFO), never deciding.
struct WithModule {
  RedisServer server = serverWithModule();
  swl::Connection connection = server.connect();
  swl::Connection observer = server.connect(nativeModule(swl::NativeModule::never));
};

// How many decisions of `limiter` on `key` were admitted, of `requests`.
template <class Limiter>
int admittedOf(Limiter& limiter, const std::string& key, int requests) {
  int admitted = 0;
  for (int i = 0; i < requests; ++i) admitted += limiter.tryAcquire(key).allowed ? 1 : 0;
  return admitted;
}

}  // namespace

TEST_CASE("a connection to a server with the module decides through SWL.DECIDE, exactly, and never sends EVALSHA") {
  WithModule with_module;
  swl::Connection& connection = with_module.connection;
  swl::Connection& observer = with_module.observer;
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{5, 60s});

  CHECK(admittedOf(limiter, "user", 8) == 5);
  const swl::Decision refused = limiter.tryAcquire("user", 2);
  CHECK(!refused.allowed);
  CHECK(refused.retry_after > 59s);
  CHECK(limiter.peek("user").used == 5);  // a peek is a decision of cost 0: the module's too
  CHECK(commandCalls(observer, "swl.decide") == 10);
  CHECK(commandCalls(observer, "evalsha") == 0);
  // The settle script runs on the module's set, as the Lua would on its own.
  swl::SlidingWindowLimiter<> weighted(connection, swl::Limit{10, 60s});
  const swl::Reservation reservation = weighted.reserve("tokens", 6);
  REQUIRE(reservation.decision.allowed);
  weighted.settle(reservation.receipt, 2);
  CHECK(weighted.peek("tokens").used == 2);
  CHECK(weighted.tryAcquire("tokens", 8).allowed);
  CHECK(!weighted.tryAcquire("tokens", 1).allowed);
  CHECK(commandCalls(observer, "evalsha") >= 1);  // the settle, and only it
}

TEST_CASE("native_module never sends the script to a server with the module, and required is refused by one without") {
  const RedisServer with_module = serverWithModule();
  swl::Connection lua_only = with_module.connect(nativeModule(swl::NativeModule::never));
  swl::SlidingWindowLimiter<> by_script(lua_only, swl::Limit{3, 60s});
  CHECK(admittedOf(by_script, "user", 5) == 3);
  CHECK(commandCalls(lua_only, "swl.decide") == 0);
  CHECK(commandCalls(lua_only, "evalsha") == 6);  // the first met NOSCRIPT, and went again

  // A server without it: found out at connect (the script decides), or, when required, an error that
  // says what to load, the request counted nowhere.
  const RedisServer without = RedisServer();
  swl::Connection detecting = without.connect();
  swl::SlidingWindowLimiter<> detected(detecting, swl::Limit{3, 60s});
  CHECK(admittedOf(detected, "user", 5) == 3);
  CHECK(commandCalls(detecting, "evalsha") == 6);
  CHECK(errorReplies(detecting, "ERR") == 0);  // no call went out as an unknown command

  swl::Connection requiring = without.connect(nativeModule(swl::NativeModule::required));
  swl::SlidingWindowLimiter<> required(requiring, swl::Limit{3, 60s});
  try {
    required.tryAcquire("other");
    FAIL("a server without the module answered a decision that requires it");
  } catch (const swl::ReplyError& error) {
    CHECK_THAT(error.what(), Catch::Contains("does not have the swl-native module"));
    CHECK_THAT(error.what(), Catch::Contains("unknown command"));
  }
  CHECK(detected.peek("other").used == 0);
}

TEST_CASE("a set of swl 0.3's layout is decided by the script once, then by the module") {
  WithModule with_module;
  swl::Connection& connection = with_module.connection;
  swl::Connection& observer = with_module.observer;
  swl::test::textReply(observer, {"ZADD", "swl:old", "-1", "#", "1", "a*3"});  // 0.3: units in the names
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{10, 60s});

  const swl::Decision first = limiter.tryAcquire("old");
  CHECK(first.allowed);
  CHECK(errorReplies(observer, "LAYOUT") == 1);
  CHECK(commandCalls(observer, "evalsha") == 2);  // NOSCRIPT, then renumbered and decided by the script
  CHECK(limiter.tryAcquire("old").allowed);
  CHECK(errorReplies(observer, "LAYOUT") == 1);  // the module decides it from then on
  CHECK(commandCalls(observer, "swl.decide") == 2);
  CHECK(commandCalls(observer, "evalsha") == 2);
}

TEST_CASE("a server that unloads the module answers the next decision as unknown, which goes again as the script") {
  WithModule with_module;
  swl::Connection& connection = with_module.connection;
  swl::Connection& observer = with_module.observer;
  swl::SlidingWindowLimiter<> limiter(connection, swl::Limit{4, 60s});
  CHECK(admittedOf(limiter, "user", 2) == 2);
  CHECK(swl::test::textReply(observer, {"MODULE", "UNLOAD", "swl"}) == "OK");

  CHECK(admittedOf(limiter, "user", 4) == 2);     // the module's entries count for the script
  CHECK(errorReplies(observer, "ERR") == 1);      // one unknown command, then the script alone
  CHECK(commandCalls(observer, "evalsha") == 5);  // with one NOSCRIPT
}

TEST_CASE("a pool's connections and a batch send SWL.DECIDE, and a batch's LAYOUT goes again as the script") {
  const RedisServer server = serverWithModule();
  swl::ConnectionPool pool = swl::ConnectionPool::tcp("127.0.0.1", server.port(), {4}, swl::test::patient());
  swl::Connection observer = server.connect(nativeModule(swl::NativeModule::never));
  swl::test::textReply(observer, {"ZADD", "swl:old", "-1", "#", "1", "a*3"});
  swl::SlidingWindowLimiter<> limiter(pool, swl::Limit{3, 60s});

  const std::vector<swl::Outcome> outcomes =
      limiter.tryAcquireMany({{"a"}, {"a"}, {"a"}, {"a"}, {"old"}, {"b", 2}, {"b", 2}});
  std::vector<bool> allowed;
  for (const swl::Outcome& outcome : outcomes) {
    REQUIRE(outcome.ok());
    allowed.push_back(outcome.decision.allowed);
  }
  CHECK(allowed == std::vector<bool>{true, true, true, false, true, true, false});
  CHECK(commandCalls(observer, "swl.decide") == 7);
  CHECK(errorReplies(observer, "LAYOUT") == 1);
  CHECK(commandCalls(observer, "evalsha") == 1);  // after a SCRIPT LOAD: a batch loads before it resends
  CHECK(limiter.tryAcquire("old").allowed);
  CHECK(commandCalls(observer, "swl.decide") == 8);
}

TEST_CASE("a MultiLimiter of logs decides through SWL.DECIDEALL, and one with a token bucket through its script") {
  WithModule with_module;
  swl::Connection& connection = with_module.connection;
  swl::Connection& observer = with_module.observer;
  swl::MultiLimiter<> layered(connection, {{"second", swl::Limit{3, 60s}}, {"hour", swl::Limit{5, 3600s}}});
  int admitted = 0;
  for (int i = 0; i < 4; ++i) admitted += layered.tryAcquire({"user:1", "user:1"}) ? 1 : 0;
  CHECK(admitted == 3);
  // The hour has room for two more, the second none: refused, and the hour pays nothing for it.
  const swl::MultiDecision refused = layered.tryAcquire({"user:1", "user:1"});
  CHECK(!refused);
  CHECK(refused.binding_name == "second");
  CHECK(layered.tryAcquire({"user:2", "user:1"}, {1, 2}));  // the hour takes two more of user:1's, now full
  CHECK(!layered.tryAcquire({"user:3", "user:1"}));
  // A dry run (Recording::never) answers without recording, through the module too.
  swl::MultiLimiter<>::Prepared dry = layered.prepare({"user:4", "user:4"}, {1, 1}, {}, swl::Recording::never);
  REQUIRE(dry.call());
  CHECK(layered.settle(dry, swl::ScriptReply{connection.run(*dry.call()), nullptr}));
  CHECK(commandCalls(observer, "swl.decideall") == 8);
  CHECK(commandCalls(observer, "evalsha") == 0);
  CHECK(swl::test::integerReply(observer, {"EXISTS", "swl:second:user:4", "swl:hour:user:4"}) == 0);

  // A token bucket among the rules: the script decides, on the same server.
  swl::MultiLimiter<> mixed(connection, {{"second", swl::Limit{3, 60s}}, swl::Rule::gcra("burst", swl::Limit{2, 1s})});
  CHECK(mixed.tryAcquire({"user:5", "user:5"}));
  CHECK(commandCalls(observer, "swl.decideall") == 8);
  CHECK(commandCalls(observer, "evalsha") == 2);  // NOSCRIPT, then the script
}

TEST_CASE("a cluster whose nodes have the module decides through SWL.DECIDE on every master") {
  swl::test::RedisCluster cluster([] { return std::vector<std::string>{"--loadmodule", swl::test::modulePath()}; });
  swl::ClusterOptions options;
  options.connection = swl::test::patient();
  options.connection.command_timeout = 1000ms;
  swl::ClusterConnection client = swl::ClusterConnection::tcp(cluster.seeds(), options);
  swl::SlidingWindowLimiter<> limiter(client, swl::Limit{2, 60s});
  int admitted = 0;
  for (int user = 0; user < 30; ++user) admitted += admittedOf(limiter, "user:" + std::to_string(user), 3);
  CHECK(admitted == 60);
  long long native = 0, scripted = 0;
  for (const int port : cluster.masterPorts()) {
    swl::Connection node = swl::Connection::tcp("127.0.0.1", port, nativeModule(swl::NativeModule::never));
    native += commandCalls(node, "swl.decide");
    scripted += commandCalls(node, "evalsha");
  }
  CHECK(native == 90);
  CHECK(scripted == 0);

  // A MultiLimiter's keys of one slot, declared by SWL.DECIDEALL as EVALSHA declares them, so Cluster
  // takes the call on that slot's master.
  swl::MultiLimiter<swl::HashTagKey> layered(client, {{"second", swl::Limit{3, 60s}}, {"hour", swl::Limit{5, 3600s}}});
  int admitted_layered = 0;
  for (int i = 0; i < 5; ++i) admitted_layered += layered.tryAcquire({"user:7", "user:7"}) ? 1 : 0;
  CHECK(admitted_layered == 3);
  long long native_multi = 0;
  for (const int port : cluster.masterPorts()) {
    swl::Connection node = swl::Connection::tcp("127.0.0.1", port, nativeModule(swl::NativeModule::never));
    native_multi += commandCalls(node, "swl.decideall");
    CHECK(commandCalls(node, "evalsha") == 0);
  }
  CHECK(native_multi == 5);
}

TEST_CASE("a Sentinel deployment whose nodes have the module decides through it, before a failover and after") {
  swl::test::RedisSentinel deployment({}, {}, {"--loadmodule", swl::test::modulePath()});
  const int old_master = deployment.firstMasterPort(), replica = deployment.firstReplicaPort();
  swl::SentinelConnection redis(deployment.sentinels(), std::string(swl::test::RedisSentinel::kMasterName),
                                deployment.options());
  swl::SlidingWindowLimiter<> limiter(redis, swl::Limit{5, 3600s});
  swl::MultiLimiter<> layered(redis, {{"second", swl::Limit{3, 60s}}, {"hour", swl::Limit{5, 3600s}}});
  CHECK(admittedOf(limiter, "user", 3) == 3);
  CHECK(layered.tryAcquire({"user", "user"}));
  swl::Connection master = deployment.connectToNode(old_master);
  CHECK(commandCalls(master, "swl.decide") == 3);
  CHECK(commandCalls(master, "swl.decideall") == 1);
  CHECK(commandCalls(master, "evalsha") == 0);
  deployment.waitUntilReplicated(old_master);

  swl::Connection sentinel = deployment.connectToSentinel(0);
  REQUIRE(swl::test::textReply(sentinel, {"SENTINEL", "FAILOVER", swl::test::RedisSentinel::kMasterName}) == "OK");
  deployment.waitUntilMasterIs(replica, 15s);
  // The connection to the promoted replica asks it in turn, and finds the module there too. (A call may
  // still reach the old master while Sentinel demotes it: exactness across a failover is test_sentinel's.)
  swl::Connection promoted = deployment.connectToNode(replica);
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (commandCalls(promoted, "swl.decide") == 0) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    limiter.tryAcquire("after");
  }
  CHECK(admittedOf(limiter, "fresh", 7) == 5);
  CHECK(layered.tryAcquire({"fresh", "fresh"}));
  CHECK(commandCalls(promoted, "swl.decideall") == 1);
  CHECK(commandCalls(promoted, "evalsha") == 0);
}

TEST_CASE("an ACL user that may run EVALSHA but not SWL.DECIDE is decided by the script, after one NOPERM") {
  WithModule with_module;
  swl::Connection& observer = with_module.observer;
  CHECK(swl::test::textReply(observer, {"ACL", "SETUSER", "limited", "on", ">secret", "~*", "+@all", "-swl.decide"}) ==
        "OK");
  swl::ConnectionOptions options = swl::test::patient();
  options.user = "limited";
  options.password = "secret";
  swl::Connection limited = with_module.server.connect(options);
  swl::SlidingWindowLimiter<> limiter(limited, swl::Limit{3, 60s});

  CHECK(admittedOf(limiter, "user", 5) == 3);
  CHECK(errorReplies(observer, "NOPERM") == 1);  // then the script alone
  CHECK(commandCalls(observer, "swl.decide") == 0);
}

// The module's command where the differential tests do not go: bad arguments answered with a clear
// error and nothing written, a key of another type, Redis over maxmemory (refused before the first write
// as the script is, a refusal still answered), a set of swl 0.3's layout (left to the script, then
// decided), and replication (a replica holds exactly the master's set, its expiry too).

#include <catch2/catch.hpp>

#include "support/log_traces.hpp"
#include "support/raw_redis.hpp"
#include "support/redis_server.hpp"

#include <chrono>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

namespace {

using swl::test::OwnedReply;
using swl::test::Pipeline;
using swl::test::RedisServer;
using swl::test::shown;

std::string errorOf(const OwnedReply& reply) {
  REQUIRE(reply->type == REDIS_REPLY_ERROR);
  return std::string(reply->str, reply->len);
}

// The whole set, members and scores, as ZRANGE shows it.
std::string setOf(Pipeline& redis, const std::string& key) {
  return shown(redis.command({"ZRANGE", key, "0", "-1", "WITHSCORES"}).get());
}

// A master that loaded the module and its replica, in sync before the test writes. The replica loads the
// sync from the socket (repl-diskless-load): one that saved it would leave a dump.rdb in the tests'
// directory, which every server started there later would load.
struct MasterAndReplica {
  MasterAndReplica() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (shown(on_master.command({"WAIT", "1", "100"}).get()) != "1") {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
    }
  }

  // Once the replica has every write so far: it holds each of `keys` exactly as the master does, set and
  // expiry time.
  void checkReplicaHolds(std::initializer_list<const char*> keys) {
    REQUIRE(shown(on_master.command({"WAIT", "1", "10000"}).get()) == "1");
    for (const char* key : keys) {
      INFO(key);
      CHECK(setOf(on_replica, key) == setOf(on_master, key));
      const std::int64_t master_expiry = on_master.command({"PEXPIRETIME", key})->integer;
      CHECK(master_expiry > 0);
      CHECK(on_replica.command({"PEXPIRETIME", key})->integer == master_expiry);
    }
  }

  RedisServer master{{"--loadmodule", swl::test::modulePath()}};
  RedisServer replica{
      {"--replicaof", "127.0.0.1", std::to_string(master.port()), "--repl-diskless-load", "on-empty-db"}};
  Pipeline on_master{master.port()};
  Pipeline on_replica{replica.port()};
};

}  // namespace

TEST_CASE("the module answers bad arguments with an error that names them, and writes nothing") {
  RedisServer server({"--loadmodule", swl::test::modulePath()});
  Pipeline redis(server.port());
  CHECK(errorOf(redis.command({"SWL.DECIDE", "k", "60000000"})).find("wrong number of arguments") != std::string::npos);
  CHECK(errorOf(redis.command({"SWL.DECIDE", "k", "sixty", "10"})) ==
        "ERR swl: the window 'sixty' is not an integer below 2^53");
  CHECK(errorOf(redis.command({"SWL.DECIDE", "k", "0", "10"})) == "ERR swl: the window '0' must be at least 1 us");
  CHECK(errorOf(redis.command({"SWL.DECIDE", "k", "60000000", "1e3"})) ==
        "ERR swl: the limit '1e3' is not an integer below 2^53");
  CHECK(errorOf(redis.command({"SWL.DECIDE", "k", "60000000", "10", "-1"})) ==
        "ERR swl: the cost '-1' must be at least 0");
  CHECK(errorOf(redis.command({"SWL.DECIDE", "k", "60000000", "10", "1", "soon"})) ==
        "ERR swl: the time 'soon' is not an integer below 2^53");
  CHECK(errorOf(redis.command({"SWL.DECIDE", "k", "60000000", "10", "1", "", "m", "0"})) ==
        "ERR swl: the ttl '0' must be at least 1 ms");
  CHECK(errorOf(redis.command({"SWL.DECIDE", "k", "60000000", "10", "1", "", "m", "60000", "0", "extra"}))
            .find("wrong number of arguments") != std::string::npos);
  CHECK(redis.command({"EXISTS", "k"})->integer == 0);
  // A key of another type: Redis's own error, the key untouched.
  redis.command({"SET", "text", "hello"});
  CHECK(errorOf(redis.command({"SWL.DECIDE", "text", "60000000", "10"})).rfind("WRONGTYPE", 0) == 0);
  CHECK(shown(redis.command({"GET", "text"}).get()) == "hello");
}

// Every argument of SWL.DECIDE through the values no caller of the library sends: each refused with an
// error that names the argument, nothing written, the set as it was.
TEST_CASE("every argument of SWL.DECIDE is refused when bad: 0, negative, not an integer, past 2^53, empty, text") {
  RedisServer server({"--loadmodule", swl::test::modulePath()});
  Pipeline redis(server.port());
  const std::vector<std::string> good{"SWL.DECIDE", "k", "60000000", "10", "1", "1700000000000000", "m", "60000", "0"};
  REQUIRE(redis.command(good)->type == REDIS_REPLY_ARRAY);  // one entry recorded
  const std::string before = setOf(redis, "k");
  struct Bad {
    std::size_t word;  // in `good`
    const char* value;
    const char* names;  // what the error must name
  };
  const Bad bads[] = {
      {2, "0", "the window '0' must be at least 1 us"},
      {2, "-5", "the window '-5' must be at least 1 us"},
      {2, "1.5", "the window '1.5' is not an integer"},
      {2, "9007199254740992", "the window '9007199254740992' is not an integer below 2^53"},
      {2, "", "the window '' is not an integer"},
      {2, "minute", "the window 'minute' is not an integer"},
      {3, "0", "the limit '0' must be at least 1"},
      {3, "-5", "the limit '-5' must be at least 1"},
      {3, "1e3", "the limit '1e3' is not an integer"},
      {3, "99999999999999999999999", "the limit '99999999999999999999999' is not an integer"},
      {3, "", "the limit '' is not an integer"},
      {3, "ten", "the limit 'ten' is not an integer"},
      {4, "11", "the cost '11' is above the limit '10'"},
      {4, "-1", "the cost '-1' must be at least 0"},
      {4, "2.5", "the cost '2.5' is not an integer"},
      {4, "9007199254740993", "the cost '9007199254740993' is not an integer below 2^53"},
      {4, "", "the cost '' is not an integer"},
      {4, "one", "the cost 'one' is not an integer"},
      {5, "0", "the time '0' must be at least 1 us"},
      {5, "-x", "the deadline 'x' is not an integer"},
      {5, "1.7e15", "the time '1.7e15' is not an integer"},
      {5, "17000000000000000000000", "the time '17000000000000000000000' is not an integer"},
      {5, "now", "the time 'now' is not an integer"},
      {6, "a b", "the member 'a b' holds a byte below ','"},
      {6, "#1", "the member '#1' holds a byte below ','"},
      {6, "x=1", "the member 'x=1' holds a byte below ','"},
      {7, "0", "the ttl '0' must be at least 1 ms"},
      {7, "-1", "the ttl '-1' must be at least 1 ms"},
      {7, "1.5", "the ttl '1.5' is not an integer"},
      {7, "9007199254740992", "the ttl '9007199254740992' is not an integer below 2^53"},
      {7, "day", "the ttl 'day' is not an integer"},
      {8, "2", "the count_rejected '2' is not one of '', '0', '1'"},
      {8, "-1", "the count_rejected '-1' is not one of"},
      {8, "yes", "the count_rejected 'yes' is not one of"},
  };
  for (const Bad& bad : bads) {
    std::vector<std::string> call = good;
    call[bad.word] = bad.value;
    INFO("argument " << bad.word << " = '" << bad.value << "'");
    CHECK_THAT(errorOf(redis.command(call)), Catch::Contains(bad.names));
  }
  CHECK(setOf(redis, "k") == before);  // nothing written by any of them
  // A refusal's text shows at most 64 bytes of what it was sent.
  std::vector<std::string> huge = good;
  huge[3] = std::string(1 << 20, '9');
  CHECK(errorOf(redis.command(huge)).size() < 200);
}

TEST_CASE("over maxmemory the module refuses a decision that writes before writing, and answers one that does not") {
  RedisServer server({"--loadmodule", swl::test::modulePath(), "--maxmemory-policy", "noeviction"});
  Pipeline redis(server.port());
  const std::string sha = swl::test::LogScripts(redis).decide;
  // Two full windows of limit 2 while there is room, one for each to be refused on.
  for (const char* key : {"by_module", "by_script"}) {
    for (const char* member : {"a", "b"}) {
      REQUIRE(redis.command({"SWL.DECIDE", key, "3600000000", "2", "1", "", member})->type == REDIS_REPLY_ARRAY);
    }
  }
  const std::string full = setOf(redis, "by_module");
  const std::string ballast(64 * 1024, 'x');
  for (int i = 0; i < 32; ++i) redis.command({"SET", "ballast:" + std::to_string(i), ballast});
  redis.command({"CONFIG", "SET", "maxmemory", "1mb"});

  // An admission would write: refused as the script's is, nothing written.
  const std::string module_error = errorOf(redis.command({"SWL.DECIDE", "fresh_module", "3600000000", "2"}));
  const std::string script_error = errorOf(redis.command({"EVALSHA", sha, "1", "fresh_script", "3600000000", "2"}));
  CHECK(module_error.rfind("OOM", 0) == 0);
  CHECK(script_error.rfind("OOM", 0) == 0);
  CHECK(redis.command({"EXISTS", "fresh_module"})->integer == 0);
  // A refusal and a peek write nothing: answered, as the script answers them.
  const OwnedReply refused = redis.command({"SWL.DECIDE", "by_module", "3600000000", "2"});
  const OwnedReply script_refused = redis.command({"EVALSHA", sha, "1", "by_script", "3600000000", "2"});
  REQUIRE(refused->type == REDIS_REPLY_ARRAY);
  CHECK(refused->element[0]->integer == 0);
  CHECK(shown(refused->element[1]) == shown(script_refused->element[1]));
  CHECK(redis.command({"SWL.DECIDE", "by_module", "3600000000", "2", "0"})->type == REDIS_REPLY_ARRAY);
  CHECK(setOf(redis, "by_module") == full);

  redis.command({"CONFIG", "SET", "maxmemory", "0"});
  CHECK(redis.command({"SWL.DECIDE", "fresh_module", "3600000000", "2"})->element[0]->integer == 1);
}

TEST_CASE("a set of swl 0.3's layout is left to the script, which renumbers it once, and then the module decides it") {
  RedisServer server({"--loadmodule", swl::test::modulePath()});
  Pipeline redis(server.port());
  const std::string sha = swl::test::LogScripts(redis).decide;
  // 0.3 kept '#' alone as the bookkeeping, and units in the member's name ('member*units').
  const std::string now = "1700000000000000";
  redis.command({"ZADD", "old", "-1", "#", "1699999999000000", "a*3", "1699999999500000", "b*2"});
  const std::string before = setOf(redis, "old");
  const std::string error = errorOf(redis.command({"SWL.DECIDE", "old", "60000000", "10", "1", now}));
  CHECK(error.rfind("LAYOUT", 0) == 0);
  CHECK(error.find("old") != std::string::npos);
  CHECK(setOf(redis, "old") == before);  // nothing written
  // The script renumbers it (and decides); the module then decides it as the script would.
  REQUIRE(redis.command({"EVALSHA", sha, "1", "old", "60000000", "10", "1", now, "c"})->element[0]->integer == 1);
  redis.command({"COPY", "old", "old_copy"});
  const OwnedReply by_module = redis.command({"SWL.DECIDE", "old", "60000000", "10", "4", now, "d"});
  const OwnedReply by_script = redis.command({"EVALSHA", sha, "1", "old_copy", "60000000", "10", "4", now, "d"});
  CHECK(shown(by_module.get()) == shown(by_script.get()));
  CHECK(setOf(redis, "old") == setOf(redis, "old_copy"));
}

TEST_CASE("a replica holds exactly the master's set, expiry and all: the module replicates what it wrote") {
  MasterAndReplica servers;
  Pipeline& on_master = servers.on_master;
  // One-unit entries with their trims, weighted ones with their sums, refusals that count, a window left
  // quiet (dropped with UNLINK), on Redis's clock and on the caller's.
  std::int64_t now = 1700000000000000;
  for (int i = 0; i < 400; ++i) {
    now += i % 50 == 49 ? 2000000 : 1000 + i % 7;
    const std::string cost = i % 3 == 0 ? std::to_string(1 + i % 5) : "1";
    on_master.command(
        {"SWL.DECIDE", "entries", "1000000", "20", "1", "", "e" + std::to_string(i), "60000", i % 4 ? "0" : "1"});
    on_master.command({"SWL.DECIDE", "units", "1000000", "30", cost, std::to_string(now), "u" + std::to_string(i),
                       "60000", i % 4 ? "0" : "1"});
  }
  servers.checkReplicaHolds({"entries", "units"});
  CHECK(setOf(on_master, "units").find('#') != std::string::npos);  // counted by units: its sums replicated too
}

TEST_CASE("the command declares its one key for Cluster and, where the server lets a module, its ACL categories") {
  RedisServer server({"--loadmodule", swl::test::modulePath()});
  Pipeline redis(server.port());
  const OwnedReply info = redis.command({"COMMAND", "INFO", "swl.decide"});
  REQUIRE(info->elements == 1);
  const redisReply* command = info->element[0];
  REQUIRE(command->elements >= 7);
  CHECK(command->element[1]->integer == -1);  // any arity: the command counts its own (the first case here)
  CHECK(shown(command->element[2]).find("write") != std::string::npos);
  CHECK(command->element[3]->integer == 1);  // first key
  CHECK(command->element[4]->integer == 1);  // last key
  CHECK(command->element[5]->integer == 1);  // step
  // Categories from Redis 7.2 on (Valkey 8 says 7.2.4 here too); 7.0 gives a module no way to name them.
  const std::string server_info = shown(redis.command({"INFO", "server"}).get());
  const std::size_t at = server_info.find("redis_version:") + std::string("redis_version:").size();
  const int major = std::stoi(server_info.substr(at));
  const int minor = std::stoi(server_info.substr(server_info.find('.', at) + 1));
  const std::string categories = shown(command->element[6]);
  INFO("redis_version " << major << "." << minor << ", categories " << categories);
  if (major > 7 || (major == 7 && minor >= 2)) {
    CHECK(categories.find("@write") != std::string::npos);
    CHECK(categories.find("@sortedset") != std::string::npos);
  } else {
    CHECK(categories.find("@sortedset") == std::string::npos);
  }
}

namespace {

// SWL.DECIDEALL over `keys`, each rule a log of `window` us and `limit`, at cost 1, on the caller's clock.
std::vector<std::string> decideAll(const std::vector<std::string>& keys, const std::string& now,
                                   const std::string& member, const std::string& limit = "2",
                                   const std::string& window = "3600000000") {
  std::vector<std::string> call{"SWL.DECIDEALL", std::to_string(keys.size())};
  call.insert(call.end(), keys.begin(), keys.end());
  for (const std::string& word : {now, member, std::string("0")}) call.push_back(word);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    for (const std::string& word : {std::string("1"), window, limit, std::string("60000"), std::string()}) {
      call.push_back(word);
    }
  }
  return call;
}

}  // namespace

TEST_CASE(
    "SWL.DECIDEALL answers bad arguments, a rule it cannot count and a key named twice with an error, writing "
    "nothing") {
  RedisServer server({"--loadmodule", swl::test::modulePath()});
  Pipeline redis(server.port());
  const std::string now = "1700000000000000";
  CHECK(errorOf(redis.command({"SWL.DECIDEALL", "1", "k"})).find("wrong number of arguments") != std::string::npos);
  std::vector<std::string> call = decideAll({"a", "b"}, now, "m");
  call[1] = "3";
  CHECK(errorOf(redis.command(call)).find("do not fit the count 3") != std::string::npos);
  call[1] = "two";
  CHECK(errorOf(redis.command(call)) == "ERR swl: the key count 'two' is not an integer below 2^53");
  call = decideAll({"a", "b"}, now, "m");
  call.back() = "gcra";
  CHECK(errorOf(redis.command(call)) ==
        "ERR swl: rule 2 counts by periods or as a GCRA bucket, which only MultiLimiter's script decides");
  CHECK(errorOf(redis.command(decideAll({"a", "b", "a"}, now, "m"))) ==
        "ERR swl: the key 'a' is named twice; each rule takes a key of its own");
  call = decideAll({"a", "b"}, now, "m");
  call[call.size() - 3] = "0";  // rule 2's limit... and its window
  call[call.size() - 4] = "0";
  CHECK(errorOf(redis.command(call)) == "ERR swl: the window '0' must be at least 1 us");
  CHECK(redis.command({"EXISTS", "a", "b"})->integer == 0);
  // A key of another type among them: Redis's error, and the other rule's key untouched.
  redis.command({"SET", "text", "hello"});
  CHECK(errorOf(redis.command(decideAll({"a", "text"}, now, "m"))).rfind("WRONGTYPE", 0) == 0);
  CHECK(redis.command({"EXISTS", "a"})->integer == 0);
  // Well formed: answered for every rule, and recorded in both.
  const OwnedReply admitted = redis.command(decideAll({"a", "b"}, now, "m"));
  CHECK(shown(admitted.get()) ==
        shown(redis.command({"EVAL", "return {1, 1, 0, 3600000000, 1, 0, 3600000000}", "0"}).get()));
  CHECK(redis.command({"ZCARD", "b"})->integer == 2);  // the entry and its window's mark
}

TEST_CASE("over maxmemory SWL.DECIDEALL refuses before its first write, so no rule records without the others") {
  RedisServer server({"--loadmodule", swl::test::modulePath(), "--maxmemory-policy", "noeviction"});
  Pipeline redis(server.port());
  const std::string now = "1700000000000000";
  REQUIRE(redis.command(decideAll({"full", "other"}, now, "a"))->type == REDIS_REPLY_ARRAY);
  REQUIRE(redis.command(decideAll({"full", "other"}, now, "b"))->type == REDIS_REPLY_ARRAY);
  const std::string full = setOf(redis, "full"), other = setOf(redis, "other");
  const std::string ballast(64 * 1024, 'x');
  for (int i = 0; i < 32; ++i) redis.command({"SET", "ballast:" + std::to_string(i), ballast});
  redis.command({"CONFIG", "SET", "maxmemory", "1mb"});
  CHECK(errorOf(redis.command(decideAll({"fresh", "other"}, now, "c", "5"))).rfind("OOM", 0) == 0);
  CHECK(redis.command({"EXISTS", "fresh"})->integer == 0);
  CHECK(setOf(redis, "other") == other);
  // A refusal writes nothing: answered.
  const OwnedReply refused = redis.command(decideAll({"full", "other"}, now, "d"));
  REQUIRE(refused->type == REDIS_REPLY_ARRAY);
  CHECK(refused->element[0]->integer == 0);
  CHECK(setOf(redis, "full") == full);
  redis.command({"CONFIG", "SET", "maxmemory", "0"});
}

TEST_CASE("SWL.DECIDEALL's writes reach a replica as what they did, and its counted keys are declared for Cluster") {
  MasterAndReplica servers;
  Pipeline& on_master = servers.on_master;
  std::int64_t now = 1700000000000000;
  for (int i = 0; i < 200; ++i) {
    now += i % 40 == 39 ? 2000000 : 1000 + i % 7;
    std::vector<std::string> call =
        decideAll({"x", "y"}, i % 2 ? std::to_string(now) : "", "e" + std::to_string(i), "25", "1000000");
    call[12] = std::to_string(1 + i % 3);  // rule 2's cost: y is counted by units
    call[6] = i % 5 ? "0" : "1";           // recording: refusals counted too, now and then
    on_master.command(call);
  }
  servers.checkReplicaHolds({"x", "y"});
  CHECK(setOf(on_master, "y").find('#') != std::string::npos);
  // COMMAND GETKEYS reads the keys as Cluster does: counted by the first argument.
  const OwnedReply keys = on_master.command({"COMMAND", "GETKEYS", "SWL.DECIDEALL", "2", "{u}a", "{u}b", "", "m", "0",
                                             "1", "1000", "2", "60", "", "1", "1000", "2", "60", ""});
  CHECK(shown(keys.get()) == shown(on_master.command({"EVAL", "return {'{u}a', '{u}b'}", "0"}).get()));
  const OwnedReply info = on_master.command({"COMMAND", "INFO", "swl.decideall"});
  REQUIRE(info->elements == 1);
  CHECK(shown(info->element[0]->element[2]).find("movablekeys") != std::string::npos);
}

TEST_CASE("SWL.DECIDEALL refuses a bad recording, member or key count, naming it, and writes nothing") {
  RedisServer server({"--loadmodule", swl::test::modulePath()});
  Pipeline redis(server.port());
  std::vector<std::string> call = decideAll({"a", "b"}, "1700000000000000", "m");
  call[call.size() - 5 * 2 - 1] = "2";  // recording: '0', '1' or '-'
  CHECK_THAT(errorOf(redis.command(call)), Catch::Contains("the recording '2' is not one of '0', '1', '-'"));
  call = decideAll({"a", "b"}, "1700000000000000", "m)1");
  CHECK_THAT(errorOf(redis.command(call)), Catch::Contains("the member 'm)1' holds a byte below ','"));
  call = decideAll({"a", "b"}, "1700000000000000", "m");
  call[1] = "0";
  CHECK_THAT(errorOf(redis.command(call)), Catch::Contains("the key count '0' must be at least 1"));
  CHECK(redis.command({"EXISTS", "a", "b"})->integer == 0);
}

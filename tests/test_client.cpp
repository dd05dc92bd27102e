#include <swl/algorithms/sliding_window.hpp>
#include <swl/redis/client.hpp>
#include <swl/redis/connection.hpp>

#include "support/redis_server.hpp"
#include "support/replies.hpp"
#include "support/resp.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using swl::test::commandCalls;
using swl::test::RedisServer;
using swl::test::textReply;

TEST_CASE("SHA-1 matches the standard test vectors") {
  CHECK(swl::detail::sha1Hex("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  CHECK(swl::detail::sha1Hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
  CHECK(swl::detail::sha1Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  CHECK(swl::detail::sha1Hex(std::string(1000000, 'a')) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST_CASE("a script's SHA is the one Redis computes on SCRIPT LOAD") {
  RedisServer server;
  auto connection = server.connect();
  const swl::Script& sliding_window = swl::SlidingWindowLimiter<>::script();
  CHECK(textReply(connection, {"SCRIPT", "LOAD", sliding_window.text()}) == sliding_window.sha());
}

TEST_CASE("a script runs with EVALSHA and is loaded only when the server answers NOSCRIPT") {
  RedisServer server;
  auto connection = server.connect();
  const swl::Script echo("echo", "return {KEYS[1], ARGV[1], ARGV[2]}");

  swl::Reply reply = connection.run(echo, {"key"}, {std::string("a\0b", 3), ""});
  REQUIRE(reply->size() == 3);
  CHECK((*reply)[0].text() == "key");
  CHECK((*reply)[1].text() == std::string("a\0b", 3));
  CHECK(commandCalls(connection, "script|load") == 1);

  connection.run(echo, {"key"}, {"x", "y"});
  CHECK(commandCalls(connection, "script|load") == 1);
  textReply(connection, {"SCRIPT", "FLUSH"});
  connection.run(echo, {"key"}, {"x", "y"});
  CHECK(commandCalls(connection, "script|load") == 2);
  CHECK(commandCalls(connection, "evalsha") == 5);
  CHECK(commandCalls(connection, "eval") == 0);
}

TEST_CASE("a script that fails on the server throws a ReplyError naming the script") {
  RedisServer server;
  auto connection = server.connect();
  const swl::Script broken("broken", "return redis.call('INCR', KEYS[1])");
  textReply(connection, {"SET", "text", "not a number"});
  CHECK_THROWS_WITH(connection.run(broken, {"text"}, {}),
                    Catch::Contains("script broken failed") && Catch::Contains("not an integer"));
  const swl::Script syntax_error("syntax", "return {");
  CHECK_THROWS_WITH(connection.run(syntax_error, {}, {}), Catch::Contains("SCRIPT LOAD of syntax failed"));
}

TEST_CASE("a script call holds EVALSHA, the SHA, the key count, the keys and the arguments in order") {
  const swl::Script echo("echo", "return 1");
  const swl::ScriptCall call(echo, {"k1", "k2"}, {"a1"});
  REQUIRE(call.argc() == 6);
  CHECK(call.word(0) == "EVALSHA");
  CHECK(call.word(1) == echo.sha());
  CHECK(call.word(2) == "2");
  CHECK(call.keyCount() == 2);
  CHECK(call.key(1) == "k2");
  CHECK(call.word(5) == "a1");
  // hiredis's form is the same words
  CHECK(std::string_view(call.pointers()[3], call.lengths()[3]) == "k1");
}

TEST_CASE("a script call with more arguments than it holds is refused before anything is sent") {
  const swl::Script echo("echo", "return 1");
  const std::vector<std::string_view> many(swl::ScriptCall::kMaxArguments, "x");
  CHECK_THROWS_AS(swl::ScriptCall(echo, many.data(), 1, many.data(), many.size()), swl::InvalidArgument);
  CHECK_THROWS_WITH(swl::ScriptCall(echo, many.data(), swl::ScriptCall::kMaxKeys + 1, many.data(), 0),
                    Catch::Contains(std::to_string(swl::ScriptCall::kMaxKeys + 1) + " keys"));
  // A call laid out in parts refuses the part that does not fit, and keeps what it had.
  swl::ScriptCall in_parts(echo, {"k"}, {"a"});
  CHECK_THROWS_WITH(in_parts.append(many.data(), many.size()),
                    Catch::Contains("1 keys and " + std::to_string(swl::ScriptCall::kMaxArguments + 1) + " arguments"));
  CHECK(in_parts.argc() == 5);
  in_parts.append({"b", "c"});
  CHECK(in_parts.argc() == 7);
  CHECK(in_parts.word(6) == "c");
}

TEST_CASE("a pipelined batch answers every call in order and reloads a flushed script once") {
  RedisServer server;
  auto connection = server.connect();
  const swl::Script echo("echo", "return ARGV[1]");
  const swl::Script fail("fail", "return redis.error_reply('nope')");
  const std::vector<std::string> args = {"zero", "one", "two", "three"};
  std::vector<swl::ScriptCall> calls;
  for (const std::string& arg : args) calls.push_back(swl::ScriptCall(echo, {}, {arg}));
  calls.push_back(swl::ScriptCall(fail, {}, {}));

  for (int round = 0; round < 2; ++round) {
    textReply(connection, {"SCRIPT", "FLUSH"});
    std::vector<swl::ScriptReply> replies = connection.runMany(calls);
    REQUIRE(replies.size() == 5);
    for (std::size_t i = 0; i < args.size(); ++i) {
      REQUIRE(replies[i].reply);
      CHECK_FALSE(replies[i].error);
      CHECK(replies[i].reply->text() == args[i]);
    }
    CHECK_FALSE(replies[4].reply);
    CHECK_THROWS_WITH(std::rethrow_exception(replies[4].error),
                      Catch::Contains("script fail failed") && Catch::Contains("nope"));
  }
  CHECK(commandCalls(connection, "script|load") == 4);  // each script once per flush
  CHECK(commandCalls(connection, "evalsha") == 20);     // each call twice per flush: NOSCRIPT, then answered
}

TEST_CASE("a batch on a dead server gives every call the connection error") {
  RedisServer server;
  auto connection = server.connect();
  connection.ping();
  server.stop();
  const swl::Script echo("echo", "return 1");
  std::vector<swl::ScriptCall> calls(3, swl::ScriptCall(echo, {}, {}));
  std::vector<swl::ScriptReply> replies = connection.runMany(calls);
  REQUIRE(replies.size() == 3);
  for (const swl::ScriptReply& reply : replies) {
    CHECK_FALSE(reply.reply);
    CHECK_THROWS_AS(std::rethrow_exception(reply.error), swl::ConnectionError);
  }
}

TEST_CASE("a pipeline whose reply handler throws drops the connection, so no later command reads a stale reply") {
  RedisServer server;
  auto connection = server.connect();
  const std::string_view first[] = {"ECHO", "first"};
  const std::string_view second[] = {"ECHO", "second"};
  const swl::detail::HiredisArgv commands[] = {{first, 2}, {second, 2}};
  CHECK_THROWS_AS(swl::detail::linkOf(connection)
                      .pipeline(
                          2, [&](std::size_t i) { return commands[i].words(); },
                          [](std::size_t, swl::Reply) { throw swl::ProtocolError("handler gave up"); }),
                  swl::ProtocolError);
  CHECK_FALSE(connection.isConnected());
  CHECK(textReply(connection, {"ECHO", "third"}) == "third");
}

TEST_CASE("a reply is read without trusting its shape: the wrong kind answers empty, a missing element is null") {
  const swl::Reply array = swl::test::replyFrom("*2\r\n:7\r\n$3\r\nabc\r\n");
  CHECK(array->isArray());
  CHECK(array->size() == 2);
  CHECK((*array)[0].integer() == 7);
  CHECK((*array)[1].text() == "abc");
  CHECK((*array)[1].integer() == 0);  // a string is no integer
  CHECK((*array)[2].isNull());        // past the end
  CHECK((*array)[2][0].isNull());
  CHECK(array->text().empty());

  const swl::Reply error = swl::test::replyFrom("-NOSCRIPT No matching script\r\n");
  CHECK(error->isError("NOSCRIPT"));
  CHECK_FALSE(error->isError("NOSCRIPTX"));
  CHECK_FALSE(error->isError("NO"));
  CHECK(error->size() == 0);

  swl::Reply moved = swl::test::replyFrom("+OK\r\n");
  swl::Reply taken = std::move(moved);
  CHECK(taken->isStatus());
  CHECK(taken->text() == "OK");
  CHECK_FALSE(moved);  // a moved-from reply is empty, not dangling
}

#include <swl/script.hpp>
#include <swl/sliding_window.hpp>

#include "support/redis_server.hpp"
#include "support/replies.hpp"

#include <catch2/catch.hpp>

#include <string>

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

  swl::detail::ReplyPtr reply = echo.run(connection, {"key"}, {std::string("a\0b", 3), ""});
  REQUIRE(reply->elements == 3);
  CHECK(swl::detail::replyText(*reply->element[0]) == "key");
  CHECK(swl::detail::replyText(*reply->element[1]) == std::string("a\0b", 3));
  CHECK(commandCalls(connection, "script|load") == 1);

  echo.run(connection, {"key"}, {"x", "y"});
  CHECK(commandCalls(connection, "script|load") == 1);
  textReply(connection, {"SCRIPT", "FLUSH"});
  echo.run(connection, {"key"}, {"x", "y"});
  CHECK(commandCalls(connection, "script|load") == 2);
  CHECK(commandCalls(connection, "evalsha") == 5);
  CHECK(commandCalls(connection, "eval") == 0);
}

TEST_CASE("a script that fails on the server throws a ReplyError naming the script") {
  RedisServer server;
  auto connection = server.connect();
  const swl::Script broken("broken", "return redis.call('INCR', KEYS[1])");
  textReply(connection, {"SET", "text", "not a number"});
  CHECK_THROWS_WITH(broken.run(connection, {"text"}, {}),
                    Catch::Contains("script broken failed") && Catch::Contains("not an integer"));
  const swl::Script syntax_error("syntax", "return {");
  CHECK_THROWS_WITH(syntax_error.run(connection, {}, {}), Catch::Contains("SCRIPT LOAD of syntax failed"));
}

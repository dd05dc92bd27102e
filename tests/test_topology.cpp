// What Redis nodes say about where data lives, read without a server: redirections, retry answers, slot
// maps, a sentinel's master address, and the pacing of a call that is asked to come back.

#include <swl/detail/io/topology.hpp>

#include "support/resp.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace std::chrono_literals;
using swl::test::replyFrom;

namespace {

const swl::Address kAnswering{"10.0.0.1", 7000};

std::optional<swl::detail::Redirection> redirectionIn(std::string_view resp) {
  return swl::detail::parseRedirection(*replyFrom(resp), kAnswering);
}

std::optional<swl::Address> masterIn(std::string_view resp) {
  return swl::detail::parseMasterAddress(*replyFrom(resp), "127.0.0.1:26379", "mymaster");
}

}  // namespace

TEST_CASE("MOVED and ASK name the slot and the node to ask: a node without its own host means the one that answered") {
  const auto moved = redirectionIn("-MOVED 3999 10.0.0.2:6381\r\n");
  REQUIRE(moved);
  CHECK(moved->kind == swl::detail::Redirection::Kind::moved);
  CHECK(moved->slot == 3999);
  CHECK(moved->target.endpoint() == "10.0.0.2:6381");

  const auto ask = redirectionIn("-ASK 16383 10.0.0.3:7001\r\n");
  REQUIRE(ask);
  CHECK(ask->kind == swl::detail::Redirection::Kind::ask);
  CHECK(ask->slot == 16383);

  CHECK(redirectionIn("-MOVED 12 :7002\r\n")->target.endpoint() == "10.0.0.1:7002");
  CHECK(redirectionIn("-MOVED 12 ?:7002\r\n")->target.endpoint() == "10.0.0.1:7002");
  CHECK(redirectionIn("-MOVED 12 ::1:7002\r\n")->target.endpoint() == "::1:7002");  // IPv6: the last ':' splits
}

TEST_CASE("any other reply is no redirection, and a redirection swl cannot read is a ProtocolError naming the node") {
  CHECK_FALSE(redirectionIn("-ERR wrong\r\n"));
  CHECK_FALSE(redirectionIn("-MOVEDX 1 h:1\r\n"));
  CHECK_FALSE(redirectionIn("+MOVED 1 h:1\r\n"));  // a status, not an error
  CHECK_FALSE(redirectionIn(":1\r\n"));
  for (std::string_view unreadable : {"-MOVED\r\n", "-MOVED 16384 h:1\r\n", "-MOVED -1 h:1\r\n", "-MOVED 12abc h:1\r\n",
                                      "-ASK 1 h:0\r\n", "-ASK 1 h:65536\r\n", "-ASK 1 h\r\n", "-MOVED x h:1\r\n"}) {
    CAPTURE(unreadable);
    CHECK_THROWS_AS(redirectionIn(unreadable), swl::ProtocolError);
    CHECK_THROWS_WITH(redirectionIn(unreadable), Catch::Contains("redis at 10.0.0.1:7000 sent a redirection"));
  }
}

TEST_CASE("TRYAGAIN and CLUSTERDOWN say: the same call may succeed soon") {
  CHECK(swl::detail::isRetryLater(*replyFrom("-TRYAGAIN Multiple keys request during rehashing of slot\r\n")));
  CHECK(swl::detail::isRetryLater(*replyFrom("-CLUSTERDOWN The cluster is down\r\n")));
  CHECK_FALSE(swl::detail::isRetryLater(*replyFrom("-ERR TRYAGAIN\r\n")));
  CHECK_FALSE(swl::detail::isRetryLater(*replyFrom("+TRYAGAIN\r\n")));
}

TEST_CASE("CLUSTER SLOTS becomes slot ranges and their masters: a shape of another kind is a ProtocolError") {
  const std::string slots =
      "*2\r\n"
      "*3\r\n:0\r\n:5460\r\n*3\r\n$8\r\n10.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
      "*4\r\n:5461\r\n:16383\r\n*2\r\n$0\r\n\r\n:7001\r\n*2\r\n$8\r\n10.0.0.9\r\n:7009\r\n";
  const std::vector<swl::detail::SlotRange> ranges = swl::detail::parseClusterSlots(*replyFrom(slots), kAnswering);
  REQUIRE(ranges.size() == 2);
  CHECK(ranges[0].first == 0);
  CHECK(ranges[0].last == 5460);
  CHECK(ranges[0].master.endpoint() == "10.0.0.1:7000");
  CHECK(ranges[1].first == 5461);
  CHECK(ranges[1].last == 16383);
  CHECK(ranges[1].master.endpoint() == "10.0.0.1:7001");  // an empty host: the node that answered

  CHECK_THROWS_AS(
      swl::detail::parseClusterSlots(*replyFrom("-ERR This instance has cluster support disabled\r\n"), kAnswering),
      swl::ReplyError);
  for (std::string_view malformed :
       {"+OK\r\n", "*1\r\n:1\r\n", "*1\r\n*3\r\n:1\r\n:0\r\n*2\r\n$1\r\nh\r\n:1\r\n",
        "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n", "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:70000\r\n",
        "*1\r\n*3\r\n:0\r\n:1\r\n*1\r\n$1\r\nh\r\n"}) {
    CAPTURE(malformed);
    CHECK_THROWS_AS(swl::detail::parseClusterSlots(*replyFrom(malformed), kAnswering), swl::ProtocolError);
  }
}

TEST_CASE("a sentinel answer that is not [host, port] is a ProtocolError naming the sentinel") {
  const std::optional<swl::Address> master = masterIn("*2\r\n$8\r\n10.0.0.7\r\n$4\r\n6380\r\n");
  REQUIRE(master);
  CHECK(master->endpoint() == "10.0.0.7:6380");
  CHECK_FALSE(masterIn("*-1\r\n"));  // this sentinel does not know the master
  CHECK_THROWS_AS(masterIn("-NOAUTH Authentication required.\r\n"), swl::AuthError);
  CHECK_THROWS_WITH(masterIn("-ERR unknown command 'SENTINEL'\r\n"),
                    Catch::Contains("sentinel 127.0.0.1:26379 refused") && Catch::Contains("unknown command"));
  for (std::string_view malformed :
       {"+OK\r\n", ":6380\r\n", "*1\r\n$8\r\n10.0.0.7\r\n", "*3\r\n$8\r\n10.0.0.7\r\n$4\r\n6380\r\n$1\r\nx\r\n",
        "*2\r\n$8\r\n10.0.0.7\r\n:6380\r\n", "*2\r\n$0\r\n\r\n$4\r\n6380\r\n",
        "*2\r\n$8\r\n10.0.0.7\r\n$5\r\n70000\r\n", "*2\r\n$8\r\n10.0.0.7\r\n$2\r\n-1\r\n",
        "*2\r\n$8\r\n10.0.0.7\r\n$5\r\n6380x\r\n"}) {
    CAPTURE(malformed);
    CHECK_THROWS_AS(masterIn(malformed), swl::ProtocolError);
    CHECK_THROWS_WITH(masterIn(malformed),
                      Catch::Contains("sentinel 127.0.0.1:26379 answered SENTINEL get-master-addr-by-name mymaster"));
  }
}

TEST_CASE("a call asked to come back pauses 2 ms, doubling up to 100 ms, and never past its time") {
  const auto start = std::chrono::steady_clock::time_point() + 1h;
  swl::detail::RetryPacing pacing(start + 300ms);
  std::vector<std::chrono::milliseconds> pauses;
  auto now = start;
  while (const auto pause = pacing.next(now)) {
    pauses.push_back(*pause);
    now += *pause;
  }
  const std::vector<std::chrono::milliseconds> expected{2ms, 4ms, 8ms, 16ms, 32ms, 64ms, 100ms};
  CHECK(pauses == expected);  // 226 ms in all; another 100 ms would end at 326 ms, after the call's 300 ms
  CHECK_FALSE(swl::detail::RetryPacing(start).next(start));
}

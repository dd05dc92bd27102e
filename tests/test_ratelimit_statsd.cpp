// swl-ratelimit's statsd, part by part: the lines as lyft/gostats writes them and the split of hits into
// within, near and over the limit as envoyproxy/ratelimit's base limiter splits them (both without I/O);
// the sink, flushing to a UDP socket of the test's; envoyproxy's names on it; the settings that turn it on;
// and the test's own reader of statsd_exporter's mapping rules. test_ratelimit_statsd_service.cpp runs
// the server itself.

#include "support/statsd_mapping.hpp"
#include "support/statsd_receiver.hpp"

#include <ratelimit/settings/settings.hpp>
#include <ratelimit/telemetry/hit_split.hpp>
#include <ratelimit/telemetry/statsd.hpp>
#include <ratelimit/telemetry/statsd_lines.hpp>
#include <ratelimit/telemetry/statsd_stats.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

namespace rl = swl::ratelimit;
using swl::test::StatsdReceiver;

// A descriptor's report, as the decider makes one: `hits` on a window that held `before` of `limit`.
rl::DescriptorReport statsdReport(rl::DescriptorOutcome outcome, std::int64_t hits, std::int64_t limit,
                                  std::int64_t before) {
  rl::DescriptorReport report;
  report.stats_key = "shop.user";
  report.outcome = outcome;
  report.hits = hits;
  report.limit = limit;
  report.used_before = before;
  return report;
}

// The split as {total, over, near, within, shadow}, for a CHECK that shows all five.
std::vector<std::uint64_t> statsdSplit(rl::DescriptorOutcome outcome, std::int64_t hits, std::int64_t limit,
                                       std::int64_t before, float ratio = 0.8F) {
  const rl::HitSplit split = rl::splitHits(statsdReport(outcome, hits, limit, before), ratio);
  return {split.total_hits, split.over_limit, split.near_limit, split.within_limit, split.shadow_mode};
}

// Waits, reading the socket, until `done` holds (at most 10 s): whether it did.
bool statsdEventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

rl::StatsdOptions statsdTo(const StatsdReceiver& receiver, std::chrono::milliseconds interval) {
  rl::StatsdOptions options;
  options.host = "127.0.0.1";
  options.port = receiver.port();
  options.flush_interval = interval;
  return options;
}

rl::Settings statsdSettings(const std::map<std::string, std::string>& environment,
                            std::vector<std::string> arguments = {}) {
  arguments.insert(arguments.begin(), {"--config", "/etc/ratelimit"});
  return rl::readSettings(arguments, [&](const char* name) -> const char* {
    const auto found = environment.find(name);
    return found == environment.end() ? nullptr : found->second.c_str();
  });
}

bool statsdIgnores(const rl::Settings& settings, const std::string& start) {
  for (const std::string& line : settings.ignored) {
    if (line.rfind(start, 0) == 0) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("statsd lines are written as gostats writes them: name:value|c for a counter, name:value|ms for a timer") {
  CHECK(rl::counterLine("ratelimit.service.config_load_success", 3) == "ratelimit.service.config_load_success:3|c\n");
  CHECK(rl::timerLine("ratelimit_server.ShouldRateLimit.response_time", 12) ==
        "ratelimit_server.ShouldRateLimit.response_time:12|ms\n");
}

TEST_CASE("statsd tags follow the name as gostats serializes them: sorted by key, a value's . : and | as _") {
  CHECK(rl::tagSuffix({}).empty());
  CHECK(rl::tagSuffix({{"zone", "eu.west:1|a"}, {"app", "rl"}}) == ".__app=rl.__zone=eu_west_1_a");
  // A tag with an empty key or value is left out; a key is kept as given.
  CHECK(rl::tagSuffix({{"", "x"}, {"empty", ""}, {"k.1", "v"}}) == ".__k.1=v");
  // Bytewise, as Go compares strings: upper case before lower.
  CHECK(rl::tagSuffix({{"b", "1"}, {"B", "2"}, {"a", "3"}}) == ".__B=2.__a=3.__b=1");
}

TEST_CASE("a stat name is sanitized as envoyproxy sanitizes it: ':' '|' and the dots of IPv4 addresses as '_'") {
  CHECK(rl::sanitizeStatName("shop.user") == "shop.user");
  CHECK(rl::sanitizeStatName("shop.route_/api:v1|x") == "shop.route_/api_v1_x");
  CHECK(rl::sanitizeStatName("shop.remote_address_10.0.0.1") == "shop.remote_address_10_0_0_1");
  CHECK(rl::sanitizeStatName("shop.ip_192.168.1.20.port") == "shop.ip_192_168_1_20.port");
  // As Go's regexp finds them: leftmost first, at most three digits a part.
  CHECK(rl::sanitizeStatName("a.1234.5.6.7") == "a.1234_5_6_7");
  CHECK(rl::sanitizeStatName("a.1.2.3.4567.8.9.10") == "a.1_2_3_4567_8_9_10");
  CHECK(rl::sanitizeStatName("v1.2.3") == "v1.2.3");
  CHECK(rl::sanitizeStatName("1.2.3.") == "1.2.3.");
  // A control character would start a line of a client's choosing.
  CHECK(rl::sanitizeStatName("evil\nratelimit.x:1|c") == "evil_ratelimit.x_1_c");
}

TEST_CASE("statsd lines are packed whole into datagrams of at most 1432 bytes") {
  std::vector<std::string> datagrams;
  rl::DatagramPacker packer([&](std::string_view datagram) { datagrams.emplace_back(datagram); });
  const std::string line = rl::counterLine(std::string(90, 'n'), 1);  // 94 bytes
  for (int i = 0; i < 40; ++i) packer.add(line);
  packer.finish();
  REQUIRE(datagrams.size() == 3);  // 15 lines fit in 1432 bytes
  CHECK(datagrams[0].size() == 15 * line.size());
  CHECK(datagrams[1].size() == 15 * line.size());
  CHECK(datagrams[2].size() == 10 * line.size());
  // A line longer than a datagram goes alone, whole.
  datagrams.clear();
  packer.add(line);
  packer.add(rl::counterLine(std::string(2000, 'x'), 1));
  packer.add(line);
  packer.finish();
  REQUIRE(datagrams.size() == 3);
  CHECK(datagrams[1].size() == 2005);
  packer.finish();  // nothing left: nothing sent
  CHECK(datagrams.size() == 3);
}

TEST_CASE("admitted hits are within the limit, and near it past NEAR_LIMIT_RATIO, as envoyproxy counts them") {
  using O = rl::DescriptorOutcome;
  // A limit of 10 at 0.8: near from the 9th unit on.
  CHECK(statsdSplit(O::ok, 1, 10, 0) == std::vector<std::uint64_t>{1, 0, 0, 1, 0});
  CHECK(statsdSplit(O::ok, 1, 10, 7) == std::vector<std::uint64_t>{1, 0, 0, 1, 0});
  CHECK(statsdSplit(O::ok, 1, 10, 8) == std::vector<std::uint64_t>{1, 0, 1, 1, 0});
  CHECK(statsdSplit(O::ok, 3, 10, 6) == std::vector<std::uint64_t>{3, 0, 1, 3, 0});  // 7 and 8 within, 9 near
  CHECK(statsdSplit(O::ok, 2, 10, 8) == std::vector<std::uint64_t>{2, 0, 2, 2, 0});
  // A check (hits_addend 0) adds nothing anywhere.
  CHECK(statsdSplit(O::ok, 0, 10, 9) == std::vector<std::uint64_t>{0, 0, 0, 0, 0});
  // The threshold is floor(limit * ratio) in float32: a limit of 1 is near from its first hit.
  CHECK(statsdSplit(O::ok, 1, 1, 0) == std::vector<std::uint64_t>{1, 0, 1, 1, 0});
  CHECK(rl::nearLimitThreshold(10, 0.8F) == 8);
  CHECK(rl::nearLimitThreshold(5, 0.8F) == 4);
  CHECK(rl::nearLimitThreshold(3, 0.9F) == 2);
  CHECK(rl::nearLimitThreshold(100, 0.0F) == 0);
  CHECK(rl::nearLimitThreshold(4294967295, 0.8F) == 3435973888);  // float32's rounding, as Go's
}

TEST_CASE("refused hits are over the limit, those below it near it, and a shadow rule's count shadow_mode too") {
  using O = rl::DescriptorOutcome;
  // A full window: every hit over.
  CHECK(statsdSplit(O::over_limit, 2, 10, 10) == std::vector<std::uint64_t>{2, 2, 0, 0, 0});
  // 9 held, 3 asked: 11 and 12 over the limit, 10 near it.
  CHECK(statsdSplit(O::over_limit, 3, 10, 9) == std::vector<std::uint64_t>{3, 2, 1, 0, 0});
  // 5 held, 10 asked: 5 over; of the rest, those past the threshold (9 and 10) near.
  CHECK(statsdSplit(O::over_limit, 10, 10, 5) == std::vector<std::uint64_t>{10, 5, 2, 0, 0});
  CHECK(statsdSplit(O::shadow_over_limit, 3, 10, 9) == std::vector<std::uint64_t>{3, 2, 1, 0, 2});
  CHECK(statsdSplit(O::shadow_over_limit, 1, 1, 1) == std::vector<std::uint64_t>{1, 1, 0, 0, 1});
  // A refusal the counts alone do not explain (a GCRA's spacing): every hit over.
  CHECK(statsdSplit(O::over_limit, 1, 10, 3) == std::vector<std::uint64_t>{1, 1, 0, 0, 0});
  // A limit of 0 refuses every hit over it.
  CHECK(statsdSplit(O::over_limit, 4, 0, 0) == std::vector<std::uint64_t>{4, 4, 0, 0, 0});
  // Redis did not decide: the hits count in total_hits alone, as envoyproxy counts them before asking.
  CHECK(statsdSplit(O::failure_policy, 2, 10, 0) == std::vector<std::uint64_t>{2, 0, 0, 0, 0});
  // A ratio above 1 puts the threshold at the limit, where envoyproxy's unsigned sums would wrap.
  CHECK(statsdSplit(O::over_limit, 3, 10, 9, 1.5F) == std::vector<std::uint64_t>{3, 2, 0, 0, 0});
}

TEST_CASE(
    "a statsd sink sends what a counter gained since the last flush, each observation, and flushes when destroyed") {
  StatsdReceiver receiver;
  {
    rl::StatsdOptions options = statsdTo(receiver, std::chrono::hours(1));  // flushed by hand, then at the end
    options.extra_tags = {{"env", "test"}};
    rl::StatsdSink sink(options);
    rl::StatsdCounter& hits = sink.counter("a.hits");
    rl::StatsdCounter& idle = sink.counter("a.idle");
    hits.add(2);
    hits.add(3);
    idle.add(0);
    sink.timer("a.time").observe(std::chrono::microseconds(2500));
    sink.timer("a.time").observe(std::chrono::seconds(2));
    sink.flush();
    REQUIRE(statsdEventually([&] { return receiver.lines().size() == 3; }));
    CHECK(receiver.lines()[0] == "a.hits.__env=test:5|c");
    CHECK(receiver.lines()[1] == "a.time.__env=test:2|ms");
    CHECK(receiver.lines()[2] == "a.time.__env=test:2000|ms");
    // Nothing gained, nothing sent; then what was gained since.
    sink.flush();
    hits.add(1);
    CHECK(&sink.counter("a.hits") == &hits);  // found, not made again
  }
  REQUIRE(statsdEventually([&] { return receiver.lines().size() == 4; }));
  CHECK(receiver.lines()[3] == "a.hits.__env=test:1|c");
}

TEST_CASE("a statsd sink flushes by itself every flush interval") {
  StatsdReceiver receiver;
  rl::StatsdSink sink(statsdTo(receiver, std::chrono::milliseconds(50)));
  sink.counter("a.hits").add(1);
  REQUIRE(statsdEventually([&] { return receiver.counted("a.hits") == 1; }));
  sink.counter("a.hits").add(2);
  REQUIRE(statsdEventually([&] { return receiver.counted("a.hits") == 3; }));
  CHECK(receiver.lines() == std::vector<std::string>{"a.hits:1|c", "a.hits:2|c"});
}

TEST_CASE("a statsd sink packs a flush into datagrams of whole lines, none over 1432 bytes") {
  StatsdReceiver receiver;
  {
    rl::StatsdSink sink(statsdTo(receiver, std::chrono::hours(1)));
    for (int i = 0; i < 500; ++i) sink.counter("ratelimit.service.rate_limit.shop.rule_" + std::to_string(i)).add(1);
    for (int i = 0; i < 300; ++i) sink.timer("ratelimit_server.ShouldRateLimit.response_time").observe({});
  }
  REQUIRE(statsdEventually([&] { return receiver.lines().size() == 800; }));
  CHECK(receiver.observed("ratelimit_server.ShouldRateLimit.response_time") == 300);
  CHECK(receiver.longestDatagram() <= rl::kMostDatagramBytes);
  CHECK(receiver.datagrams() < 60);
}

TEST_CASE("statsd stats take envoyproxy/ratelimit's names: per rule, per unknown domain, per call, per load") {
  StatsdReceiver receiver;
  {
    rl::StatsdStats stats(statsdTo(receiver, std::chrono::hours(1)));
    const rl::DecisionObservers observers = stats.observers();
    rl::DescriptorReport report = statsdReport(rl::DescriptorOutcome::ok, 1, 10, 8);
    report.stats_key = "shop.remote_address_10.1.2.3";
    observers.on_descriptor(report);
    observers.on_unknown_domain("elsewhere", 2);
    observers.on_unknown_domain("elsewhere", 1);
    observers.on_call_error(rl::CallError::service);
    observers.on_call_error(rl::CallError::redis);
    observers.on_call_error(rl::CallError::redis);
    stats.callAnswered(std::chrono::milliseconds(3));
    stats.configurationLoaded(true);
    stats.configurationLoaded(false);
  }
  REQUIRE(statsdEventually([&] { return receiver.counted("ratelimit.service.config_load_error") == 1; }));
  const std::string rule = "ratelimit.service.rate_limit.shop.remote_address_10_1_2_3.";
  CHECK(receiver.counted(rule + "total_hits") == 1);
  CHECK(receiver.counted(rule + "within_limit") == 1);
  CHECK(receiver.counted(rule + "near_limit") == 1);
  CHECK(receiver.counted("ratelimit.service.rate_limit.elsewhere.domain_not_found") == 3);
  CHECK(receiver.counted("ratelimit.service.call.should_rate_limit.service_error") == 1);
  CHECK(receiver.counted("ratelimit.service.call.should_rate_limit.redis_error") == 2);
  CHECK(receiver.counted("ratelimit_server.ShouldRateLimit.total_requests") == 1);
  CHECK(receiver.counted("ratelimit.service.config_load_success") == 1);
  CHECK(receiver.lines().size() == 10);  // counters that gained nothing (over_limit, shadow_mode) send nothing
  CHECK(receiver.observed("ratelimit_server.ShouldRateLimit.response_time") == 1);
}

TEST_CASE("statsd names at most a thousand unknown domains: a client chooses them, and each is kept for good") {
  StatsdReceiver receiver;
  {
    rl::StatsdStats stats(statsdTo(receiver, std::chrono::hours(1)));
    const rl::DecisionObservers observers = stats.observers();
    for (std::size_t i = 0; i < rl::StatsdStats::kMostUnknownDomains + 50; ++i) {
      observers.on_unknown_domain("d" + std::to_string(i), 1);
    }
    observers.on_unknown_domain("d0", 1);
  }
  REQUIRE(statsdEventually([&] { return receiver.lines().size() >= rl::StatsdStats::kMostUnknownDomains; }));
  CHECK(receiver.lines().size() == rl::StatsdStats::kMostUnknownDomains);
  CHECK(receiver.counted("ratelimit.service.rate_limit.d0.domain_not_found") == 2);
}

TEST_CASE("observers joined tell both, and one alone when the other has none") {
  int first = 0, second = 0;
  rl::DecisionObservers one, other;
  one.on_call_error = [&](rl::CallError) { ++first; };
  other.on_call_error = [&](rl::CallError) { ++second; };
  other.on_unknown_domain = [&](std::string_view, std::size_t count) { second += static_cast<int>(count); };
  const rl::DecisionObservers both = rl::bothOf(one, other);
  both.on_call_error(rl::CallError::redis);
  both.on_unknown_domain("x", 10);
  CHECK(first == 1);
  CHECK(second == 11);
  CHECK_FALSE(both.on_descriptor);
  CHECK_FALSE(both.observer);
}

TEST_CASE(
    "USE_STATSD=true turns statsd on, with envoyproxy's defaults and its companions, and it is off unless given") {
  const rl::Settings off = statsdSettings({{"STATSD_PORT", "9125"}, {"NEAR_LIMIT_RATIO", "0.9"}});
  CHECK_FALSE(off.statsd.enabled());
  CHECK(statsdIgnores(off, "STATSD_PORT: only with USE_STATSD=true"));
  CHECK(statsdIgnores(off, "NEAR_LIMIT_RATIO: only with USE_STATSD=true"));

  const rl::Settings defaults = statsdSettings({{"USE_STATSD", "true"}});
  CHECK(defaults.statsd.host == "localhost");
  CHECK(defaults.statsd.port == 8125);
  CHECK(defaults.statsd.flush_interval == std::chrono::seconds(10));
  CHECK(defaults.statsd.near_limit_ratio == 0.8F);
  CHECK(defaults.statsd.extra_tags.empty());

  // Envoy Gateway's deployment, and every companion.
  const rl::Settings gateway = statsdSettings({{"USE_STATSD", "true"},
                                               {"STATSD_HOST", "statsd.monitoring"},
                                               {"STATSD_PORT", "9125"},
                                               {"EXTRA_TAGS", "zone:eu,app:rl,zone:us"},
                                               {"STATS_FLUSH_INTERVAL", "1.5s"},
                                               {"NEAR_LIMIT_RATIO", "0.9"}});
  CHECK(gateway.statsd.host == "statsd.monitoring");
  CHECK(gateway.statsd.port == 9125);
  CHECK(gateway.statsd.extra_tags == rl::StatsdTags{{"zone", "us"}, {"app", "rl"}});  // the last of a key wins
  CHECK(gateway.statsd.flush_interval == std::chrono::milliseconds(1500));
  CHECK(gateway.statsd.near_limit_ratio == 0.9F);
  CHECK(gateway.ignored.empty());

  CHECK_FALSE(statsdSettings({{"USE_STATSD", "true"}, {"DISABLE_STATS", "true"}}).statsd.enabled());
  CHECK_FALSE(statsdSettings({{"USE_STATSD", "false"}}).statsd.enabled());
  CHECK(statsdSettings({{"USE_STATSD", "1"}, {"STATSD_HOST", ""}}).statsd.host == "localhost");
  CHECK(statsdSettings({{"USE_STATSD", "true"}, {"EXTRA_TAGS", " "}}).statsd.extra_tags.empty());
}

TEST_CASE("statsd's flags win over envoyproxy's variables") {
  const rl::Settings settings =
      statsdSettings({{"USE_STATSD", "true"}, {"STATSD_PORT", "9125"}, {"SWL_RATELIMIT_STATSD_TAGS", "a:1"}},
                     {"--statsd", "[::1]:8126", "--stats-flush-interval", "250", "--near-limit-ratio", "0.5"});
  CHECK(settings.statsd.host == "::1");
  CHECK(settings.statsd.port == 8126);
  CHECK(settings.statsd.flush_interval == std::chrono::milliseconds(250));
  CHECK(settings.statsd.near_limit_ratio == 0.5F);
  CHECK(settings.statsd.extra_tags == rl::StatsdTags{{"a", "1"}});
  CHECK(statsdSettings({}, {"--statsd", "127.0.0.1:8125"}).statsd.enabled());
  CHECK_FALSE(statsdSettings({}).statsd.enabled());
  const std::string usage = rl::usageText();
  for (const char* line : {"--statsd HOST:PORT", "--stats-flush-interval MS", "--statsd-tags KEY:VALUE[,...]",
                           "sent to statsd; default 10000\n", "near_limit, in statsd; default 0.8\n"}) {
    CHECK_THAT(usage, Catch::Matchers::Contains(line));
  }
}

TEST_CASE("a statsd setting that is wrong stops the server, naming it") {
  using Catch::Matchers::Contains;
  const auto refuses = [](const std::map<std::string, std::string>& environment, std::vector<std::string> arguments,
                          const std::string& message) {
    INFO(message);
    CHECK_THROWS_WITH(statsdSettings(environment, std::move(arguments)), Contains(message));
  };
  refuses({{"USE_STATSD", "yes"}}, {}, "USE_STATSD yes: expected a boolean");
  refuses({{"USE_STATSD", "true"}, {"STATSD_PORT", "0"}}, {}, "STATSD_PORT 0: expected a whole number from 1 to 65535");
  refuses({{"USE_STATSD", "true"}, {"EXTRA_TAGS", "a:1,b"}}, {}, "EXTRA_TAGS a:1,b: \"b\" is no tag");
  refuses({{"USE_STATSD", "true"}, {"EXTRA_TAGS", "a:1:2"}}, {}, "EXTRA_TAGS a:1:2: \"a:1:2\" is no tag");
  refuses({{"USE_STATSD", "true"}, {"STATS_FLUSH_INTERVAL", "0s"}}, {},
          "STATS_FLUSH_INTERVAL 0s: expected a duration above 0");
  refuses({{"USE_STATSD", "true"}, {"STATS_FLUSH_INTERVAL", "10"}}, {}, "STATS_FLUSH_INTERVAL 10: expected a duration");
  refuses({{"USE_STATSD", "true"}, {"NEAR_LIMIT_RATIO", "-0.1"}}, {}, "NEAR_LIMIT_RATIO -0.1: expected a ratio");
  refuses({{"USE_STATSD", "true"}, {"NEAR_LIMIT_RATIO", "NaN"}}, {}, "NEAR_LIMIT_RATIO NaN: expected a ratio");
  refuses({}, {"--statsd", "unix:/run/statsd.sock"}, "--statsd unix:/run/statsd.sock: expected HOST:PORT");
  refuses({}, {"--statsd", "localhost:0"}, "--statsd localhost:0: expected a port from 1 to 65535");
  refuses({}, {"--stats-flush-interval", "0"}, "--stats-flush-interval 0: expected a whole number");
  refuses({}, {"--statsd-tags", "novalue"}, "--statsd-tags novalue: \"novalue\" is no tag");
}

TEST_CASE("the test's statsd_exporter mapping takes globs first, a '*' per field, then regexes found anywhere") {
  using swl::test::mapStatsd;
  using swl::test::StatsdMapping;
  const std::vector<StatsdMapping> rules{
      {R"(a\.([^.]*)\.z)", StatsdMapping::Match::regex, "", "regex_$1", {{"first", "$1"}}},
      {"a.*.c", StatsdMapping::Match::glob, "counter", "glob_counter_$1", {{"middle", "$1"}}},
      {"a.*.c", StatsdMapping::Match::glob, "", "glob_any_${1}", {}},
      {"a.b.*", StatsdMapping::Match::glob, "", "glob_later", {}},
  };
  const auto counter = mapStatsd(rules, "a.b.c", "counter");
  REQUIRE(counter);
  CHECK(counter->name == "glob_counter_b");  // the first glob written, of those that match
  CHECK(counter->labels == std::map<std::string, std::string>{{"middle", "b"}});
  CHECK(mapStatsd(rules, "a.b.c", "observer")->name == "glob_any_b");  // a type it does not take
  CHECK(mapStatsd(rules, "a..c", "observer")->name == "glob_any_");    // a '*' takes an empty field
  CHECK(mapStatsd(rules, "a.b.x", "gauge")->name == "glob_later");
  CHECK_FALSE(mapStatsd(rules, "a.b.c.d", "counter"));  // a glob matches as many fields, no more
  // A regex is not anchored: found inside the name, its groups fill $n.
  const auto found = mapStatsd(rules, "x.a.y.z.w", "counter");
  REQUIRE(found);
  CHECK(found->name == "regex_y");
  CHECK(found->labels.at("first") == "y");
  CHECK_FALSE(mapStatsd(rules, "q.r", "counter"));
}

TEST_CASE("the test's statsd reader parses a line as statsd_exporter does: the name up to the first ':'") {
  const auto line = swl::test::parseStatsdLine("ratelimit.service.config_load_success:12|c");
  REQUIRE(line);
  CHECK(line->name == "ratelimit.service.config_load_success");
  CHECK(line->value == 12);
  CHECK(line->type == "c");
  CHECK_FALSE(swl::test::parseStatsdLine("no value"));
  CHECK_FALSE(swl::test::parseStatsdLine("a:|c"));
  CHECK_FALSE(swl::test::parseStatsdLine("a:1|"));
  CHECK_FALSE(swl::test::parseStatsdLine("a:x|c"));
}

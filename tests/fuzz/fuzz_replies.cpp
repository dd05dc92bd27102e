// libFuzzer target: arbitrary bytes through hiredis's own RESP parser, and every reply it produces
// through everything in swl that reads a Redis reply: detail::decodeDecision (single-window
// limiters), detail::decodeRuleDecisions (MultiLimiter), and the cluster and Sentinel parsers
// (detail/io/topology.hpp).
// A malformed reply may only become a swl::Error; any other exception, crash or Decision breaking its
// invariants aborts.

#include <swl/composites/multi_limiter.hpp>
#include <swl/decision.hpp>
#include <swl/detail/io/hiredis.hpp>
#include <swl/detail/io/topology.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>
#include <swl/redis/hash_slot.hpp>
#include <swl/redis_limiter.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string_view>
#include <vector>

namespace {

struct ReaderDeleter {
  void operator()(redisReader* reader) const noexcept { redisReaderFree(reader); }
};
using ReaderPtr = std::unique_ptr<redisReader, ReaderDeleter>;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_replies: %s\n", what);
  std::abort();
}

void check(bool holds, const char* invariant) {
  if (!holds) fail(invariant);
}

// Runs `decode`; a swl::Error is a refused reply, anything else a bug.
template <class Decode>
void refusedOnlyAsSwlError(Decode&& decode) {
  try {
    decode();
  } catch (const swl::Error&) {
  } catch (const std::exception& error) {
    std::fprintf(stderr, "fuzz_replies: threw a non-swl exception: %s\n", error.what());
    std::abort();
  } catch (...) {
    fail("threw something that is not an exception");
  }
}

void checkDecision(const swl::Decision& decision, std::int64_t limit) {
  check(decision.limit == limit, "decision.limit is the limit asked for");
  check(decision.remaining >= 0 && decision.remaining <= limit, "0 <= remaining <= limit");
  check(decision.retry_after.count() >= 0, "retry_after >= 0");
  check(decision.allowed == (decision.retry_after.count() == 0), "allowed iff retry_after == 0");
  check(decision.reset_after.count() >= 0, "reset_after >= 0");
  check(decision.tier == swl::Tier::redis || (decision.tier == swl::Tier::blocked && !decision.allowed),
        "a decoded decision comes from redis, or is a blocked key's refusal");
}

// hiredis allocates an aggregate's element array as soon as it reads the count ("*2000000000\r\n" asks
// for 16 GB), which libFuzzer reports as out of memory. swl limits that for its own connections on
// hiredis 1.x (detail::limitAggregates, set here too); hiredis 0.14 has no such limit, so inputs that
// announce a larger aggregate of any kind (RESP2's array, RESP3's map, set, push and attribute) are
// skipped. No reply swl reads has more elements than CLUSTER SLOTS' 16384 ranges.
bool announcesHugeAggregate(std::string_view input) {
  for (std::size_t at = input.find_first_of("*%~>|"); at != std::string_view::npos;
       at = input.find_first_of("*%~>|", at + 1)) {
    std::uint64_t count = 0;
    for (std::size_t digit = at + 1; digit < input.size() && input[digit] >= '0' && input[digit] <= '9'; ++digit) {
      count = count * 10 + static_cast<std::uint64_t>(input[digit] - '0');
      if (count > static_cast<std::uint64_t>(swl::detail::kMaxReplyElements) / 2) return true;  // a map: 2 each
    }
  }
  return false;
}

// The limits to decode under: typical ones, the largest a Limit holds, one taken from the input's last 8
// bytes, and each integer of the reply (so remaining == limit and remaining == limit + 1 are tried).
// Only limits a limiter could have: every limiter checks its Limit (1..2^53-1) before it decodes anything.
std::vector<std::int64_t> limitsFor(swl::ReplyView reply, std::string_view input) {
  std::vector<std::int64_t> limits{1, 3, 1000, swl::detail::kLargestExact - 1};
  const auto consider = [&](std::int64_t limit) {
    if (limit >= 1 && limit < swl::detail::kLargestExact) limits.push_back(limit);
  };
  if (input.size() >= sizeof(std::int64_t)) {
    std::int64_t from_input;
    std::memcpy(&from_input, input.data() + input.size() - sizeof from_input, sizeof from_input);
    consider(from_input);
  }
  for (std::size_t i = 0; i < reply.size() && i < 8; ++i) {
    const swl::ReplyView element = reply[i];
    if (!element.isInteger()) continue;
    consider(element.integer());
    if (element.integer() > 1) consider(element.integer() - 1);
  }
  return limits;
}

void decodeAsDecision(swl::ReplyView reply, const std::vector<std::int64_t>& limits) {
  for (const std::int64_t limit : limits) {
    refusedOnlyAsSwlError([&] { checkDecision(swl::detail::decodeDecision(reply, limit), limit); });
  }
}

void decodeAsRuleDecisions(swl::ReplyView reply, const std::vector<std::int64_t>& limits) {
  constexpr std::size_t kMaxRules = swl::detail::kMaxMultiRules;
  std::size_t rule_counts[] = {1, 2, kMaxRules, 0};
  if (reply.size() >= 4 && reply.size() % 3 == 1 && (reply.size() - 1) / 3 <= kMaxRules) {
    rule_counts[3] = (reply.size() - 1) / 3;  // the count that fits the reply's shape
  }
  for (const std::size_t rules : rule_counts) {
    if (rules == 0) continue;
    for (const std::int64_t limit : limits) {
      // Every rule under `limit`, and then rule i under limits[i + k]: different limits per rule.
      for (std::size_t shift = 0; shift < 2; ++shift) {
        std::int64_t rule_limits[kMaxRules];
        for (std::size_t i = 0; i < rules; ++i)
          rule_limits[i] = shift == 0 ? limit : limits[(i + shift) % limits.size()];
        refusedOnlyAsSwlError([&] {
          const std::vector<swl::Decision> decisions =
              swl::detail::decodeRuleDecisions<kMaxRules>(reply, rule_limits, rules);
          check(decisions.size() == rules, "one decision per rule");
          bool every_rule_admitted = true;
          for (std::size_t i = 0; i < rules; ++i) {
            checkDecision(decisions[i], rule_limits[i]);
            every_rule_admitted = every_rule_admitted && decisions[i].allowed;
          }
          check(reply[0].integer() == (every_rule_admitted ? 1 : 0), "allowed agrees with the rules");
        });
      }
    }
  }
}

void parseAsTopologyReply(swl::ReplyView reply) {
  const swl::Address answering{"10.0.0.1", 6379};
  refusedOnlyAsSwlError([&] {
    const auto redirection = swl::detail::parseRedirection(reply, answering);
    if (!redirection) return;
    check(reply.isError(), "only an error reply redirects");
    check(redirection->slot < swl::kClusterSlots, "a redirection's slot < 16384");
    check(redirection->target.port > 0 && redirection->target.port <= 65535, "a redirection's port is 1..65535");
    check(!redirection->target.host.empty(), "a redirection names a host");
  });
  if (swl::detail::isRetryLater(reply)) check(reply.isError(), "only an error reply says retry");
  refusedOnlyAsSwlError([&] {
    for (const swl::detail::SlotRange& range : swl::detail::parseClusterSlots(reply, answering)) {
      check(range.first <= range.last && range.last < swl::kClusterSlots, "first <= last < 16384");
      check(range.master.port > 0 && range.master.port <= 65535, "a master's port is 1..65535");
      check(!range.master.host.empty(), "a master names a host");
    }
  });
  refusedOnlyAsSwlError([&] {
    const auto master = swl::detail::parseMasterAddress(reply, "10.0.0.9:26379", "mymaster");
    if (!master) return check(reply.isNil(), "only nil says the sentinel does not know the master");
    check(master->port > 0 && master->port <= 65535, "a sentinel's master port is 1..65535");
    check(!master->host.empty(), "a sentinel names the master's host");
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (announcesHugeAggregate(input)) return 0;
  const ReaderPtr reader(redisReaderCreate());
  if (!reader) fail("redisReaderCreate failed");
  swl::detail::limitAggregates(*reader);
  if (redisReaderFeed(reader.get(), input.data(), input.size()) != REDIS_OK) return 0;
  for (int replies = 0; replies < 64; ++replies) {
    void* parsed = nullptr;
    if (redisReaderGetReply(reader.get(), &parsed) != REDIS_OK || parsed == nullptr) break;  // malformed or incomplete
    const swl::Reply reply(static_cast<redisReply*>(parsed));
    const std::vector<std::int64_t> limits = limitsFor(*reply, input);
    decodeAsDecision(*reply, limits);
    decodeAsRuleDecisions(*reply, limits);
    parseAsTopologyReply(*reply);
  }
  return 0;
}

#pragma once
/// \file
/// A request's plan: its descriptors found in the configuration, before Redis is asked, and the answer
/// Envoy gets once the decider (decider.hpp) has decided them. No I/O here.
///
/// Per descriptor, as envoyproxy/ratelimit reads it: the limit its rule gives, or the request's own
/// override (on a configured domain only); its cost (the descriptor's hits_addend, else the request's,
/// else 1) times the rule's weight, where a descriptor's hits_addend of 0 checks without counting; and
/// its Redis key. A descriptor no rule matches is OK and counts nothing; an unlimited one is OK with
/// 4294967295 remaining. Of the rules that match one request, one named in another's `replaces` (an
/// unlimited rule's included) is left out.
///
/// A request is checked before anything else: a domain and at least one descriptor, each within the
/// bounds below (INVALID_ARGUMENT past them), so that no client makes the server write keys or headers
/// of any size it likes.

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/config/rule.hpp>
#include <ratelimit/decide/options.hpp>
#include <ratelimit/decide/reservation_entries.hpp>

#include <swl/decision.hpp>
#include <swl/error.hpp>
#include <swl/integrations/http_headers.hpp>
#include <swl/limiter.hpp>

#include "envoy/service/ratelimit/v3/rls.pb.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::ratelimit {

namespace rls = envoy::service::ratelimit::v3;

/// What one request may carry, at most (envoyproxy/ratelimit sets no bound; Envoy's own descriptors are
/// a few short entries). Each is a bound on what a client can make the server store in Redis.
inline constexpr std::size_t kMostDomainBytes = 256;
inline constexpr std::size_t kMostKeyBytes = 256;
inline constexpr std::size_t kMostValueBytes = 4096;
inline constexpr std::size_t kMostEntriesPerDescriptor = 32;
inline constexpr std::size_t kMostDescriptorsPerRequest = 64;

/// What an unlimited descriptor has remaining: the most Envoy's uint32 says, as envoyproxy/ratelimit answers.
inline constexpr std::uint32_t kUnlimitedRemaining = std::numeric_limits<std::uint32_t>::max();

/// One limited descriptor of a request: where it is in the request, its rule's limit in units of its
/// weight, its cost and its counter; and, once decided, its decision.
struct LimitedDescriptor {
  int index = 0;
  const Rule* rule = nullptr;  // null for a limit the request set itself (an override)
  std::int64_t requests_per_unit = 0;
  Unit unit = Unit::second;
  Limit limit;  // in units of `weight`: exact, since every hit on the counter costs a multiple of it
  std::int64_t weight = 1;
  std::int64_t hits = 1;
  /// hits_addend 0: its counter is checked, and nothing is recorded. Refused only while the window holds
  /// more than the limit (charges past it), as envoyproxy/ratelimit refuses a check of 0 hits.
  bool checks_only = false;
  /// A charge for units already spent (DeciderOptions::charge_descriptor_hits, Kuadrant's Report):
  /// recorded whether or not they fit.
  bool charge = false;
  /// With checks_only, Kuadrant's CheckRateLimit: refused unless one more hit fits, as limitador checks.
  bool peek = false;
  /// Reservations through Envoy's calls (reservation_entries.hpp): a hold of its hits, or a commit.
  std::chrono::microseconds hold_for{0};
  std::string reservation;
  bool shadow = false;   // the rule's shadow_mode: its refusal is answered OK, and records nothing
  bool quota = false;    // the rule's quota_mode (or QUOTA_MODE): Rule::quota_mode
  std::string counting;  // how it is counted: "log", "gcra", or the periods of a fixed window
  std::string redis_key;
  std::string policy;  // what the RateLimit headers call it: the rule's name, else its stats key
  std::optional<Decision> decision;
};

/// What a request asks: Envoy's ShouldRateLimit (each descriptor's hits, or a check, or with
/// DeciderOptions::charge_descriptor_hits a charge); Kuadrant's CheckRateLimit (whether one more hit fits
/// every counter, nothing counted) or Report (the hits charged to every counter, fitting or not).
enum class Asking { should_rate_limit, check_rate_limit, report };

/// A request's limited descriptors, found in the configuration, and the response they make: valid while
/// the configuration it was planned under lives.
class Plan {
 public:
  /// Finds `request`'s descriptors in `config`. A request out of bounds is an InvalidArgument that
  /// says which bound; so is an override of a unit Envoy does not have.
  Plan(const Configuration& config, const rls::RateLimitRequest& request, const DeciderOptions& options,
       Asking asking = Asking::should_rate_limit)
      : options_(&options), asking_(asking) {
    checkBounds(request);
    for (int i = 0; i < request.descriptors_size(); ++i) response_.add_statuses()->set_code(rls::RateLimitResponse::OK);
    find(config, request);
    for (const LimitedDescriptor& each : limited_) describeLimit(each, *response_.mutable_statuses(each.index));
  }

  /// Whether deciding it asks Redis: false when no descriptor is limited (none matched a rule, or
  /// every match is unlimited), and the answer is all OK at once.
  bool asksRedis() const noexcept { return !limited_.empty(); }

  /// The limited descriptors, in the request's order: what the decider decides.
  std::vector<LimitedDescriptor>& limited() noexcept { return limited_; }

  /// Whether the decisions made so far refuse the request: a refusal outside shadow and quota mode, or
  /// a refusal by every quota descriptor (envoyproxy/ratelimit's overall code), unless SHADOW_MODE
  /// admits every request. The decider decides again without the refusals that do not refuse it.
  bool refused() const { return !options_->shadow_mode && refusedByRules(); }

  /// The reservation its descriptors made (reservation_entries.hpp): its id goes back to Envoy.
  void reserved(const std::string& id) { reservation_id_ = id; }

  /// Envoy's answer, from the decisions made: each status, the overall code and the headers.
  rls::RateLimitResponse answer() && {
    answerEach();
    if (!reservation_id_.empty() && !refused()) {
      (*response_.mutable_dynamic_metadata()->mutable_fields())[std::string(kReservationMetadata)].set_string_value(
          reservation_id_);
    }
    response_.set_overall_code(refused() ? rls::RateLimitResponse::OVER_LIMIT : rls::RateLimitResponse::OK);
    if (response_.overall_code() == rls::RateLimitResponse::OVER_LIMIT) addRetryAfter();
    addRateLimitHeaders();
    if (options_->limit_headers.enabled) addLimitHeaders();
    return std::move(response_);
  }

 private:
  static void checkBounds(const rls::RateLimitRequest& request) {
    const auto refuse = [](const std::string& why) { throw InvalidArgument("swl-ratelimit: " + why); };
    if (request.domain().empty()) refuse("the request names no domain");
    if (request.domain().size() > kMostDomainBytes) {
      refuse("the domain is " + std::to_string(request.domain().size()) + " bytes; at most " +
             std::to_string(kMostDomainBytes));
    }
    if (request.descriptors_size() == 0) refuse("the request has no descriptor");
    if (static_cast<std::size_t>(request.descriptors_size()) > kMostDescriptorsPerRequest) {
      refuse(std::to_string(request.descriptors_size()) + " descriptors in one request; at most " +
             std::to_string(kMostDescriptorsPerRequest));
    }
    for (int i = 0; i < request.descriptors_size(); ++i) {
      const auto& descriptor = request.descriptors(i);
      const std::string which = "descriptor " + std::to_string(i);
      if (descriptor.entries_size() == 0) refuse(which + " has no entry");
      if (static_cast<std::size_t>(descriptor.entries_size()) > kMostEntriesPerDescriptor) {
        refuse(which + " has " + std::to_string(descriptor.entries_size()) + " entries; at most " +
               std::to_string(kMostEntriesPerDescriptor));
      }
      for (const auto& entry : descriptor.entries()) {
        if (entry.key().empty()) refuse(which + " has an entry with an empty key");
        if (entry.key().size() > kMostKeyBytes) {
          refuse(which + " has a key of " + std::to_string(entry.key().size()) + " bytes; at most " +
                 std::to_string(kMostKeyBytes));
        }
        if (entry.value().size() > kMostValueBytes) {
          refuse(which + " has a value of " + std::to_string(entry.value().size()) + " bytes; at most " +
                 std::to_string(kMostValueBytes));
        }
      }
    }
  }

  // Kuadrant's calls ask every descriptor alike: a check of one hit, or a charge of its hits.
  static void askedAs(Asking asking, LimitedDescriptor& each) {
    if (asking == Asking::check_rate_limit) {
      each.hits = 1;
      each.checks_only = each.peek = true;
      each.charge = false;
    } else if (asking == Asking::report) {
      each.charge = !each.checks_only;
    }
  }

  void find(const Configuration& config, const rls::RateLimitRequest& request) {
    const std::int64_t request_hits = request.hits_addend() == 0 ? 1 : request.hits_addend();
    const auto domain = config.domains().find(request.domain());
    if (domain == config.domains().end()) return;  // no limit on a domain not configured, overrides included
    std::vector<DescriptorEntry> entries;
    std::vector<std::string_view> replaced;
    for (int i = 0; i < request.descriptors_size(); ++i) {
      const auto& descriptor = request.descriptors(i);
      entries.clear();
      for (const auto& entry : descriptor.entries()) entries.push_back({entry.key(), entry.value()});
      LimitedDescriptor each;
      each.index = i;
      if (options_->reservations) {
        ReservationAsked asked = takeReservationEntries(entries, i);
        each.hold_for = asked.hold_for, each.reservation = std::move(asked.id);
      }
      each.hits = request_hits;
      if (descriptor.has_hits_addend()) {
        each.hits = static_cast<std::int64_t>(
            std::min<std::uint64_t>(descriptor.hits_addend().value(), std::numeric_limits<std::int64_t>::max()));
        each.checks_only = each.hits == 0;
        each.charge = options_->charge_descriptor_hits && !each.checks_only;
      }
      askedAs(asking_, each);
      if (descriptor.has_limit()) {
        overridden(request.domain(), descriptor, entries, each);
      } else {
        each.rule = domain->second.rules.find(entries);
        if (each.rule == nullptr) continue;
        replaced.insert(replaced.end(), each.rule->replaces.begin(), each.rule->replaces.end());
        if (each.rule->unlimited) {
          response_.mutable_statuses(i)->set_limit_remaining(kUnlimitedRemaining);
          continue;
        }
        ruled(*each.rule, request.domain(), entries, each);
      }
      limited_.push_back(std::move(each));
    }
    leaveOut(replaced);
  }

  // A limit the request gives: counted in a log of its own unit, apart from any rule's counter.
  void overridden(std::string_view domain,
                  const envoy::extensions::common::ratelimit::v3::RateLimitDescriptor& descriptor,
                  const std::vector<DescriptorEntry>& entries, LimitedDescriptor& each) const {
    const auto unit = unitOf(descriptor.limit().unit());
    if (!unit) {
      throw InvalidArgument("swl-ratelimit: descriptor " + std::to_string(each.index) + "'s limit has unit " +
                            std::to_string(descriptor.limit().unit()) + ", which Envoy does not have (SECOND to YEAR)");
    }
    each.requests_per_unit = descriptor.limit().requests_per_unit();
    each.unit = *unit;
    each.limit = Limit{each.requests_per_unit, infoOf(*unit).length};
    each.quota = options_->quota_mode;
    each.counting = "log";
    each.policy = std::string(domain);
    for (const DescriptorEntry& entry : entries) each.policy.append(".").append(entry.key);
    each.policy.append(".override.").append(infoOf(*unit).name);
    std::string kind = "override:";
    kind.append(infoOf(*unit).name);
    each.redis_key = counterKey(domain, kind, nullptr, entries);
  }

  void ruled(const Rule& rule, std::string_view domain, const std::vector<DescriptorEntry>& entries,
             LimitedDescriptor& each) const {
    each.requests_per_unit = rule.limit.max_requests;
    each.unit = rule.unit;
    each.weight = rule.weight;
    each.shadow = rule.shadow_mode;
    each.quota = rule.quota_mode || options_->quota_mode;
    each.limit = Limit{rule.limit.max_requests / rule.weight, rule.limit.window};
    std::string_view kind = "log";  // the same whatever a log's unit: a rule's changed unit keeps its entries
    if (rule.calendar) {
      each.counting = "calendar " + std::string(infoOf(rule.unit).name) + " " + rule.time_zone;
      kind = "periods";
    } else if (rule.algorithm == Algorithm::fixed_window) {
      each.counting = "fixed " + std::to_string(rule.limit.window.count());
      kind = "periods";
    } else if (rule.algorithm == Algorithm::gcra) {
      each.counting = "gcra";
      kind = "gcra";
    } else {
      each.counting = "log";
    }
    each.redis_key = counterKey(domain, kind, &rule, entries);
    each.policy = rule.name.empty() ? rule.stats_key : rule.name;
  }

  // The counter of `entries` in `domain`, counted as `kind` by `rule` (none for an override): every part
  // length-prefixed, so that no two descriptors, rules or domains ever make one key, whatever their
  // text holds ('.', ':', braces). The domain, in braces, is the hash tag: every key of one request
  // starts alike up to the tag's end (the prefix holds no brace), so on a Cluster they share a slot, as
  // one script needs. A rule's level is its key, the value it was written with, and the value counted:
  // the request's, or the pattern's when the level shares one counter (share_threshold).
  std::string counterKey(std::string_view domain, std::string_view kind, const Rule* rule,
                         const std::vector<DescriptorEntry>& entries) const {
    std::string key = options_->key_prefix;
    key.append(":{").append(sized(domain)).append("}:").append(kind);
    for (std::size_t level = 0; level < entries.size(); ++level) {
      key.append(":").append(sized(entries[level].key));
      if (rule != nullptr) {
        const PathStep& step = rule->path[level];
        const bool shared = step.share_threshold && step.isPattern();
        key.append(":").append(sized(step.value));
        key.append(":").append(sized(shared ? std::string_view(step.value) : entries[level].value));
      } else {
        key.append(":").append(sized(entries[level].value));
      }
    }
    return key;
  }

  // "5=alice": no part of a key can end early, or be taken for the next.
  static std::string sized(std::string_view part) {
    std::string text = std::to_string(part.size());
    return text.append("=").append(part);
  }

  // Of the rules matched, those another matched rule names in its replaces count nothing and say nothing.
  void leaveOut(const std::vector<std::string_view>& replaced) {
    if (replaced.empty()) return;
    limited_.erase(std::remove_if(limited_.begin(), limited_.end(),
                                  [&](const LimitedDescriptor& each) {
                                    return each.rule != nullptr && !each.rule->name.empty() &&
                                           std::find(replaced.begin(), replaced.end(), each.rule->name) !=
                                               replaced.end();
                                  }),
                   limited_.end());
  }

  static void describeLimit(const LimitedDescriptor& each, rls::RateLimitResponse::DescriptorStatus& status) {
    auto& limit = *status.mutable_current_limit();
    limit.set_requests_per_unit(static_cast<std::uint32_t>(
        std::min<std::int64_t>(each.requests_per_unit, std::numeric_limits<std::uint32_t>::max())));
    limit.set_unit(static_cast<rls::RateLimitResponse::RateLimit::Unit>(infoOf(each.unit).envoy_number));
    if (each.rule != nullptr) limit.set_name(each.rule->name);
  }

  // Each decided descriptor's status. A shadow rule's refusal is OK (and 0 remaining); a quota rule's
  // says OVER_LIMIT, whatever the request's overall code.
  void answerEach() {
    for (const LimitedDescriptor& each : limited_) {
      if (!each.decision) continue;  // never decided: another's refusal came first
      auto& status = *response_.mutable_statuses(each.index);
      const Decision& decision = *each.decision;
      const bool over = !decision.allowed && !each.shadow;
      status.set_code(over ? rls::RateLimitResponse::OVER_LIMIT : rls::RateLimitResponse::OK);
      const std::int64_t remaining = std::max<std::int64_t>(0, decision.remaining) * each.weight;
      status.set_limit_remaining(
          static_cast<std::uint32_t>(std::min<std::int64_t>(remaining, std::numeric_limits<std::uint32_t>::max())));
      const auto until_reset = over ? decision.retry_after : decision.reset_after;
      status.mutable_duration_until_reset()->set_seconds(until_reset.count() / 1'000'000);
      status.mutable_duration_until_reset()->set_nanos(
          static_cast<std::int32_t>(until_reset.count() % 1'000'000 * 1000));
    }
  }

  // envoyproxy/ratelimit's overall code: OVER_LIMIT when a descriptor outside quota mode is, or when
  // the request has quota descriptors and every one of them is (one not decided yet is not).
  bool refusedByRules() const {
    bool any_quota = false, every_quota_over = true;
    for (const LimitedDescriptor& each : limited_) {
      const bool over = each.decision && !each.decision->allowed && !each.shadow;
      if (!each.quota) {
        if (over) return true;
        continue;
      }
      any_quota = true;
      every_quota_over = every_quota_over && over;
    }
    return any_quota && every_quota_over;
  }

  // Retry-After: the longest wait of the refusals that refused the request.
  void addRetryAfter() {
    const LimitedDescriptor* binding = nullptr;
    for (const LimitedDescriptor& each : limited_) {
      if (!each.decision || each.decision->allowed || each.shadow) continue;
      if (binding == nullptr || each.decision->retry_after > binding->decision->retry_after) binding = &each;
    }
    if (binding != nullptr) addHeader(response_, "retry-after", retryAfterValue(*binding->decision));
  }

  // The IETF RateLimit-Policy and RateLimit fields, one policy per enforced descriptor, counted once
  // however often the request repeats it: in hits per unit, as current_limit and limit_remaining say.
  // Envoy adds them to the response, admitted or refused. A shadow rule refuses no one, so clients are
  // not told of it.
  void addRateLimitHeaders() {
    std::vector<std::string> names;
    std::vector<PolicyReport> policies;
    std::vector<std::string_view> counters;
    names.reserve(limited_.size());
    for (const LimitedDescriptor& each : limited_) {
      if (!each.decision || each.shadow ||
          std::find(counters.begin(), counters.end(), each.redis_key) != counters.end()) {
        continue;
      }
      counters.push_back(each.redis_key);
      Decision in_hits = *each.decision;
      in_hits.remaining = std::max<std::int64_t>(0, in_hits.remaining) * each.weight;
      names.push_back(printable(each.policy));
      policies.push_back({names.back(), Limit{each.requests_per_unit, infoOf(each.unit).length}, in_hits});
    }
    if (policies.empty()) return;
    addHeader(response_, "ratelimit-policy", rateLimitPolicyValue(policies));
    addHeader(response_, "ratelimit", rateLimitValue(policies));
  }

  // envoyproxy/ratelimit's three headers, of the descriptor with a limit and the fewest hits left; a
  // descriptor that refuses the request outright (not in quota mode) is the one, the last such.
  void addLimitHeaders() {
    const rls::RateLimitResponse::DescriptorStatus* chosen = nullptr;
    for (const auto& status : response_.statuses()) {
      if (!status.has_current_limit()) continue;
      if (chosen == nullptr || status.limit_remaining() < chosen->limit_remaining()) chosen = &status;
    }
    for (const LimitedDescriptor& each : limited_) {
      const auto& status = response_.statuses(each.index);
      if (!each.quota && status.code() == rls::RateLimitResponse::OVER_LIMIT) chosen = &status;
    }
    if (chosen == nullptr) return;
    const LimitHeaders& names = options_->limit_headers;
    const std::int64_t reset_seconds =
        chosen->duration_until_reset().seconds() + (chosen->duration_until_reset().nanos() > 0 ? 1 : 0);
    const std::string limit = std::to_string(chosen->current_limit().requests_per_unit());
    const std::string remaining = std::to_string(chosen->limit_remaining());
    addHeader(response_, names.limit, limit);
    addHeader(response_, names.remaining, remaining);
    addHeader(response_, names.reset, std::to_string(reset_seconds));
  }

  static void addHeader(rls::RateLimitResponse& response, std::string_view key, std::string value) {
    auto* header = response.add_response_headers_to_add();
    header->set_key(std::string(key));
    header->set_value(std::move(value));
  }

  // A structured field carries printable ASCII only; a configuration may name its rules in any text.
  static std::string printable(std::string text) {
    for (char& c : text) {
      if (c < 0x20 || c > 0x7e) c = '?';
    }
    return text;
  }

  static std::optional<Unit> unitOf(int envoy_number) {
    for (const UnitInfo& unit : kUnits) {
      if (unit.envoy_number == envoy_number) return unit.unit;
    }
    return std::nullopt;
  }

  const DeciderOptions* options_;
  Asking asking_;
  std::vector<LimitedDescriptor> limited_;
  rls::RateLimitResponse response_;
  std::string reservation_id_;
};

}  // namespace swl::ratelimit

// envoyproxy/ratelimit's statsd variables, read as its settings.go reads them (kelseyhightower/envconfig
// over Go's standard library), and the values our --statsd-tags and --near-limit-ratio share with them.
//
// USE_STATSD defaults to true there; here statsd is on only where USE_STATSD=true is given (or --statsd),
// as USE_PROMETHEUS is: a server swapped in for envoyproxy/ratelimit sends no datagram nobody asked for.

#include <ratelimit/settings/envoy.hpp>
#include <ratelimit/settings/values.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <string>
#include <string_view>
#include <system_error>

namespace swl::ratelimit::settings {

void applyStatsdTags(Settings& settings, const std::string& value, const std::string& given_as) {
  StatsdTags tags;
  // envconfig's map: nothing when blank; else items split at ',', each exactly one ':' between its key and
  // its value, the last of a key winning.
  if (value.find_first_not_of(" \t\n\v\f\r") != std::string::npos) {
    for (const std::string_view item : commaSeparated(value)) {
      const auto colon = item.find(':');
      if (colon == std::string_view::npos || item.find(':', colon + 1) != std::string_view::npos) {
        throw wrong(
            given_as, value,
            "\"" + std::string(item) + "\" is no tag: expected KEY:VALUE pairs, comma-separated (env:prod,az:a)");
      }
      const std::string_view key = item.substr(0, colon);
      const auto same = std::find_if(tags.begin(), tags.end(), [&](const auto& tag) { return tag.first == key; });
      if (same != tags.end()) {
        same->second = std::string(item.substr(colon + 1));
      } else {
        tags.emplace_back(std::string(key), std::string(item.substr(colon + 1)));
      }
    }
  }
  settings.statsd.extra_tags = std::move(tags);
}

void applyNearLimitRatio(Settings& settings, const std::string& value, const std::string& given_as) {
  // strconv.ParseFloat(value, 32), which takes a leading '+'; a ratio that is no share of a limit would
  // make envoyproxy's unsigned sums wrap.
  const std::string_view text =
      !value.empty() && value.front() == '+' ? std::string_view(value).substr(1) : std::string_view(value);
  float ratio = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), ratio);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || !std::isfinite(ratio) || ratio < 0) {
    throw wrong(given_as, value, "expected a ratio of 0 or more, as 0.8");
  }
  settings.statsd.near_limit_ratio = ratio;
}

namespace {

// What comes with USE_STATSD, read only with it.
constexpr const char* kWithStatsd[] = {"STATSD_HOST", "STATSD_PORT", "EXTRA_TAGS", "STATS_FLUSH_INTERVAL",
                                       "NEAR_LIMIT_RATIO"};

}  // namespace

void applyEnvoyStatsd(Settings& settings, const EnvoyVariables& envoy) {
  if (!envoy.isTrue("USE_STATSD") || envoy.isTrue("DISABLE_STATS")) {
    for (const char* name : kWithStatsd) {
      if (envoy.given(name)) {
        settings.ignored.push_back(std::string(name) + ": only with USE_STATSD=true (and DISABLE_STATS not true)");
      }
    }
    return;
  }
  StatsdOptions& statsd = settings.statsd;
  // Go dials ":8125" on this host; an empty host is that here too.
  statsd.host = envoy.text("STATSD_HOST").value_or("localhost");
  if (statsd.host.empty()) statsd.host = "localhost";
  statsd.port = static_cast<int>(envoy.whole("STATSD_PORT", 1, 65535).value_or(statsd.port));
  if (const auto tags = envoy.text("EXTRA_TAGS")) applyStatsdTags(settings, *tags, "EXTRA_TAGS");
  if (const auto interval = envoy.text("STATS_FLUSH_INTERVAL")) {
    const auto rounded_up = std::chrono::ceil<std::chrono::milliseconds>(goDuration("STATS_FLUSH_INTERVAL", *interval));
    if (rounded_up.count() <= 0) {
      throw wrong("STATS_FLUSH_INTERVAL", *interval, "expected a duration above 0, as 10s (Go's ticker refuses less)");
    }
    statsd.flush_interval = rounded_up;
  }
  if (const auto ratio = envoy.text("NEAR_LIMIT_RATIO")) applyNearLimitRatio(settings, *ratio, "NEAR_LIMIT_RATIO");
}

}  // namespace swl::ratelimit::settings

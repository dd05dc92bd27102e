#pragma once
/// \file
/// What the tables of settings share (flags.cpp, envoy.cpp, envoy_redis.cpp), private to settings/: the
/// field a row names, the readers of values that refuse with the flag's or variable's name, and the
/// settings that a flag and one of envoyproxy's variables both give, each checked once.

#include <ratelimit/settings/settings.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace swl::ratelimit::settings {

template <class Member>
struct OwnerOf;
template <class Owner, class Type>
struct OwnerOf<Type Owner::*> {
  using type = Owner;
};

/// The field a chain of members names in its owner: fieldAt<&Settings::redis, &RedisSettings::pool_size>
/// is settings.redis.pool_size. A table's row names its field so, and one function template reads every
/// row's value into it.
template <auto first, auto... rest>
auto& fieldAt(typename OwnerOf<decltype(first)>::type& owner) {
  return ((owner.*first).*....*rest);
}

/// "swl-ratelimit: NAME VALUE: why", an empty value shown as "".
SettingsError wrong(const std::string& given_as, std::string_view value, const std::string& why);

/// `text` as a whole number from `least` to `most`; none when it is not one.
std::optional<std::int64_t> numberBetween(std::string_view text, std::int64_t least, std::int64_t most);
std::int64_t positiveNumber(const std::string& value, const std::string& given_as, std::int64_t most);
bool yesOrNo(const std::string& value, const std::string& given_as);
std::chrono::milliseconds milliseconds(const std::string& value, const std::string& given_as);
std::vector<std::string_view> commaSeparated(std::string_view text);
std::string lowerCase(std::string text);

// The settings a flag and one of envoyproxy/ratelimit's variables both give: one check each.

/// The master's name, then at least one Sentinel's HOST:PORT. A value that is not is refused as
/// `shown`, the message opening with `context` and closing with `example`.
void applyRedisSentinel(Settings& settings, const std::string& value, const std::string& given_as,
                        const std::string& shown, const std::string& context = "", const std::string& example = "");
void applyRedisSentinel(Settings& settings, const std::string& value, const std::string& given_as);
void applyRedisCluster(Settings& settings, const std::string& value, const std::string& given_as);
/// A prefix without braces: a brace would move the hash tag that keeps one request's keys in one slot.
void applyKeyPrefix(Settings& settings, const std::string& value, const std::string& given_as);
void applyLogLevel(Settings& settings, const std::string& value, const std::string& given_as);
void applyMetricsPath(Settings& settings, const std::string& value, const std::string& given_as);
/// EXTRA_TAGS' format, envconfig's map: KEY:VALUE pairs, comma-separated. (envoy_statsd.cpp)
void applyStatsdTags(Settings& settings, const std::string& value, const std::string& given_as);
/// NEAR_LIMIT_RATIO's: a float32 of 0 or more. (envoy_statsd.cpp)
void applyNearLimitRatio(Settings& settings, const std::string& value, const std::string& given_as);

}  // namespace swl::ratelimit::settings

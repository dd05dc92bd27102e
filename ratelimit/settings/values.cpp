// The readers of values both tables of settings use, and the settings a flag and one of envoyproxy's
// variables both give.

#include <ratelimit/settings/address.hpp>
#include <ratelimit/settings/values.hpp>

#include <cctype>
#include <charconv>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace swl::ratelimit::settings {

SettingsError wrong(const std::string& given_as, std::string_view value, const std::string& why) {
  return SettingsError("swl-ratelimit: " + given_as + " " + (value.empty() ? "\"\"" : std::string(value)) + ": " + why);
}

std::optional<std::int64_t> numberBetween(std::string_view text, std::int64_t least, std::int64_t most) {
  std::int64_t number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || end != text.data() + text.size() || number < least || number > most) return std::nullopt;
  return number;
}

std::int64_t positiveNumber(const std::string& value, const std::string& given_as, std::int64_t most) {
  if (const auto number = numberBetween(value, 1, most)) return *number;
  throw wrong(given_as, value, "expected a whole number from 1 to " + std::to_string(most));
}

bool yesOrNo(const std::string& value, const std::string& given_as) {
  for (const std::string_view yes : {"yes", "true", "on", "1"}) {
    if (value == yes) return true;
  }
  for (const std::string_view no : {"no", "false", "off", "0"}) {
    if (value == no) return false;
  }
  throw wrong(given_as, value, "expected yes or no");
}

std::chrono::milliseconds milliseconds(const std::string& value, const std::string& given_as) {
  return std::chrono::milliseconds(positiveNumber(value, given_as, 3'600'000));
}

std::vector<std::string_view> commaSeparated(std::string_view text) {
  std::vector<std::string_view> parts;
  for (;;) {
    const auto comma = text.find(',');
    parts.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) return parts;
    text.remove_prefix(comma + 1);
  }
}

std::string lowerCase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

namespace {

std::vector<Address> addressesOf(const std::vector<std::string_view>& parts, const std::string& given_as) {
  std::vector<Address> addresses;
  for (const std::string_view part : parts) addresses.push_back(addressOf(part, given_as, AddressOf::redis_node));
  return addresses;
}

}  // namespace

void applyRedisSentinel(Settings& settings, const std::string& value, const std::string& given_as,
                        const std::string& shown, const std::string& context, const std::string& example) {
  std::vector<std::string_view> parts = commaSeparated(value);
  if (parts.size() < 2 || parts.front().empty()) {
    throw wrong(given_as, shown,
                context + "expected the master's name, then at least one Sentinel's HOST:PORT" + example);
  }
  settings.redis.topology = RedisTopology::sentinel;
  settings.redis.master_name = std::string(parts.front());
  settings.redis.addresses = addressesOf({parts.begin() + 1, parts.end()}, given_as);
}

void applyRedisSentinel(Settings& settings, const std::string& value, const std::string& given_as) {
  applyRedisSentinel(settings, value, given_as, value);
}

void applyRedisCluster(Settings& settings, const std::string& value, const std::string& given_as) {
  settings.redis.topology = RedisTopology::cluster;
  settings.redis.addresses = addressesOf(commaSeparated(value), given_as);
}

void applyKeyPrefix(Settings& settings, const std::string& value, const std::string& given_as) {
  if (value.empty() || value.find_first_of("{}") != std::string::npos) {
    throw SettingsError("swl-ratelimit: " + given_as + " \"" + value + "\": expected a prefix, without braces");
  }
  settings.decider.key_prefix = value;
}

void applyLogLevel(Settings& settings, const std::string& value, const std::string& given_as) {
  const std::optional<LogLevel> level = logLevelNamed(value);
  if (!level) throw wrong(given_as, value, "expected error, warn, info or debug (or panic, fatal, warning, trace)");
  settings.log.level = *level;
}

void applyMetricsPath(Settings& settings, const std::string& value, const std::string& given_as) {
  if (value.empty() || value.front() != '/') throw wrong(given_as, value, "expected a path that starts with /");
  settings.metrics_path = value;
}

}  // namespace swl::ratelimit::settings

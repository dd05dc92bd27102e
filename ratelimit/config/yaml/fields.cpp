// The DomainReader's scalar values: each checked as envoyproxy/ratelimit's validateYamlKeys checks every
// scalar, then, where its key is read, decoded as yaml.v2 decodes it into envoyproxy/ratelimit's types
// (a string, a bool, a uint32) and kept in what the descriptor or its rate_limit says (written.hpp).

#include <ratelimit/config/error.hpp>
#include <ratelimit/config/yaml/domain_reader.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace swl::ratelimit::reader {

using yaml::described;
using yaml::ScalarStyle;

void DomainReader::takeScalarValue(Frame& top, const Scalar& scalar) {
  switch (top.place) {
    case Place::document: {
      const Resolved resolved = yaml::resolveScalar(scalar, file_);
      if (resolved.kind != Kind::null) {
        refuse(scalar.line, "the file is " + described(scalar, resolved) + ", not a map of domain and descriptors");
      }
      return;
    }
    case Place::descriptors:
    case Place::replaces: {
      const Resolved resolved = yaml::resolveScalar(scalar, file_);
      const std::string_view what = top.place == Place::descriptors ? "descriptor" : "replaces entry";
      if (resolved.kind == Kind::null) {
        defer(top, Key::none, scalar.line,
              std::string(top.place == Place::descriptors ? "descriptors" : "replaces") +
                  " holds an empty item: each is a " + std::string(what) + " (a map)");
      } else {
        refuse(scalar.line, std::string(top.place == Place::descriptors ? "descriptors" : "replaces") + " holds " +
                                described(scalar, resolved) + ", which is not a " + std::string(what) + " (a map)");
      }
      return;
    }
    case Place::ignored:
      if (!top.is_map) {
        defer(top, Key::none, scalar.line,
              "a list here holds " + described(scalar, yaml::resolveScalar(scalar, file_)) +
                  ": envoyproxy/ratelimit's lists hold maps only");
        return;
      }
      if (top.value == Frame::Value::ignored) checkKind(top, scalar, yaml::resolveScalar(scalar, file_));
      return;
    case Place::metadata:
    case Place::skipped:
      return;
    default:
      break;
  }
  if (top.value == Frame::Value::skipped) return;
  const Resolved resolved = yaml::resolveScalar(scalar, file_);
  checkKind(top, scalar, resolved);
  if (top.value == Frame::Value::read) readField(top, scalar, resolved);
}

// validateYamlKeys: a scalar is text, a whole number of int64, a boolean or null; a float, or a
// number past int64, refuses the file.
void DomainReader::checkKind(Frame& map, const Scalar& scalar, const Resolved& resolved) {
  if (resolved.kind == Kind::floating || resolved.kind == Kind::big_integer) {
    defer(map, map.key, scalar.line,
          std::string(nameOf(map.key)) + " is " + described(scalar, resolved) +
              (resolved.kind == Kind::floating
                   ? ", a number that is not whole, which envoyproxy/ratelimit refuses: quote it if it is text"
                   : ", past the int64 envoyproxy/ratelimit reads: quote it if it is text"));
  }
}

std::string DomainReader::text(const Scalar& scalar, const Resolved& resolved) {
  return resolved.kind == Kind::null ? std::string() : std::string(scalar.text);
}

bool DomainReader::flag(const Frame& map, const Scalar& scalar, const Resolved& resolved) {
  if (resolved.kind == Kind::null) return false;
  if (resolved.kind != Kind::boolean) {
    refuse(scalar.line, std::string(nameOf(map.key)) + " is true or false, not " + described(scalar, resolved));
  }
  return resolved.boolean;
}

void DomainReader::refuseType(const Frame& map, const std::string& expected) {
  refuse(map.key_line, std::string(nameOf(map.key)) + " is " + expected);
}

void DomainReader::readField(Frame& map, const Scalar& scalar, const Resolved& resolved) {
  if (map.place == Place::rate_limit || map.place == Place::replaces_entry) {
    readRateLimitField(map, scalar, resolved);
  } else {
    readDescriptorField(map, scalar, resolved);
  }
}

// A key of the file's own map, or of a descriptor's.
void DomainReader::readDescriptorField(Frame& map, const Scalar& scalar, const Resolved& resolved) {
  WrittenDescriptor* descriptor = map.descriptor == kNone ? nullptr : &written_[map.descriptor];
  switch (map.key) {
    case Key::domain:
      domain_.name = text(scalar, resolved);
      domain_line_ = map.key_line;
      has_domain_ = true;
      return;
    case Key::descriptors:
      if (resolved.kind != Kind::null) refuseType(map, "a list of descriptors, not " + described(scalar, resolved));
      written_[map.place == Place::file ? 0 : map.descriptor].first_child = kNone;
      written_[map.place == Place::file ? 0 : map.descriptor].last_child = kNone;
      return;
    case Key::key:
      descriptor->key = text(scalar, resolved);
      return;
    case Key::value:
      descriptor->value = text(scalar, resolved);
      return;
    case Key::rate_limit:
      if (resolved.kind != Kind::null) {
        refuseType(map, "a map (unit and requests_per_unit, or unlimited: true), not " + described(scalar, resolved));
      }
      rate_limits_[map.level] = WrittenRateLimit{};
      return;
    case Key::shadow_mode:
      descriptor->shadow_mode = flag(map, scalar, resolved);
      return;
    case Key::quota_mode:
      descriptor->quota_mode = flag(map, scalar, resolved);
      return;
    case Key::detailed_metric:
      descriptor->detailed_metric = flag(map, scalar, resolved);
      return;
    case Key::value_to_metric:
      descriptor->value_to_metric = flag(map, scalar, resolved);
      return;
    case Key::share_threshold:
      descriptor->share_threshold = flag(map, scalar, resolved);
      return;
    case Key::metadata:
      if (resolved.kind != Kind::null) refuseType(map, "a map, not " + described(scalar, resolved));
      return;
    default:
      return;
  }
}

// A key of a rate_limit, or of one of its replaces entries.
void DomainReader::readRateLimitField(Frame& map, const Scalar& scalar, const Resolved& resolved) {
  WrittenRateLimit& rate_limit = rate_limits_[map.level];
  switch (map.key) {
    case Key::unit:
      rate_limit.unit = text(scalar, resolved);
      rate_limit.unit_line = map.key_line;
      return;
    case Key::requests_per_unit:
      rate_limit.requests_per_unit = requestsPerUnit(scalar, resolved);
      rate_limit.requests_line = map.key_line;
      return;
    case Key::unlimited:
      rate_limit.unlimited = flag(map, scalar, resolved);
      return;
    case Key::name:
      if (map.place == Place::replaces_entry) {
        rate_limit.replaces.back() = {text(scalar, resolved), map.key_line};
      } else {
        rate_limit.name = text(scalar, resolved);
      }
      return;
    case Key::replaces:
      if (resolved.kind != Kind::null) refuseType(map, "a list of {name: ...}, not " + described(scalar, resolved));
      rate_limit.replaces.clear();
      return;
    case Key::algorithm:
      rate_limit.algorithm = resolved.kind == Kind::null ? std::nullopt : std::optional(std::string(scalar.text));
      rate_limit.algorithm_line = map.key_line;
      return;
    case Key::time_zone:
      rate_limit.time_zone = resolved.kind == Kind::null ? std::nullopt : std::optional(std::string(scalar.text));
      rate_limit.time_zone_line = map.key_line;
      return;
    case Key::calendar:
      rate_limit.calendar = resolved.kind == Kind::null ? std::nullopt : std::optional(flag(map, scalar, resolved));
      rate_limit.calendar_line = map.key_line;
      return;
    case Key::weight:
      rate_limit.weight = resolved.kind == Kind::null ? std::nullopt : std::optional(weight(scalar, resolved));
      rate_limit.weight_line = map.key_line;
      return;
    default:
      return;
  }
}

// A uint32, as yaml.v2 decodes one: a whole number from 0 to 4294967295 (a float that is one is
// taken too, though validateYamlKeys refuses floats), or null for 0.
std::uint32_t DomainReader::requestsPerUnit(const Scalar& scalar, const Resolved& resolved) {
  const std::string saying = "requests_per_unit " + std::string(scalar.text);
  switch (resolved.kind) {
    case Kind::null:
      return 0;
    case Kind::integer:
      if (resolved.integer < 0) refuse(scalar.line, saying + " is negative");
      if (resolved.integer > kMostRequests) {
        refuse(scalar.line, saying + " is above " + std::to_string(kMostRequests) + ", the most Envoy's API holds");
      }
      return static_cast<std::uint32_t>(resolved.integer);
    case Kind::big_integer:
      refuse(scalar.line, saying + " is above " + std::to_string(kMostRequests) + ", the most Envoy's API holds");
    case Kind::floating:
      if (resolved.floating >= 0 && resolved.floating <= kMostRequests) {
        return static_cast<std::uint32_t>(resolved.floating);
      }
      refuse(scalar.line, saying + " is not a whole number from 0 to " + std::to_string(kMostRequests));
    default:
      break;
  }
  refuse(scalar.line, "requests_per_unit is a whole number, not " + described(scalar, resolved) +
                          (scalar.style == ScalarStyle::plain ? "" : ": write it without quotes"));
}

std::int64_t DomainReader::weight(const Scalar& scalar, const Resolved& resolved) {
  const std::string saying = "weight " + std::string(scalar.text);
  if (resolved.kind != Kind::integer) refuse(scalar.line, saying + " is not a whole number");
  if (resolved.integer < 0) refuse(scalar.line, saying + " is negative");
  if (resolved.integer == 0) refuse(scalar.line, "weight is 0: it must be at least 1");
  return resolved.integer;
}

}  // namespace swl::ratelimit::reader

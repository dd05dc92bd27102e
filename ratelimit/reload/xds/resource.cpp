// An xDS resource written out as the YAML document envoyproxy/ratelimit's xDS provider makes of it, then
// read by the YAML reader: one set of rules and messages for files and resources alike.

#include <ratelimit/config/error.hpp>
#include <ratelimit/reload/xds/resource.hpp>

#include <google/protobuf/struct.pb.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

namespace swl::ratelimit::xds {

namespace {

namespace conf = ::ratelimit::config::ratelimit::v3;

// `text` as a double-quoted YAML scalar: every byte as it is but the quote, the backslash and the
// controls, which YAML escapes.
std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.append(1, '\\').append(1, c);
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out.append(escaped);
    } else {
      out.append(1, c);
    }
  }
  return out + "\"";
}

// A google.protobuf.Value as YAML flow (JSON is YAML): metadata, which the reader keeps but never reads.
std::string flow(const google::protobuf::Value& value) {
  switch (value.kind_case()) {
    case google::protobuf::Value::kBoolValue:
      return value.bool_value() ? "true" : "false";
    case google::protobuf::Value::kNumberValue: {
      char number[32];
      std::snprintf(number, sizeof number, "%.17g", value.number_value());
      return number;
    }
    case google::protobuf::Value::kStringValue:
      return quoted(value.string_value());
    case google::protobuf::Value::kListValue: {
      std::string out = "[";
      for (const google::protobuf::Value& item : value.list_value().values()) {
        out += (out.size() > 1 ? ", " : "") + flow(item);
      }
      return out + "]";
    }
    case google::protobuf::Value::kStructValue: {
      std::string out = "{";
      for (const auto& [key, item] : value.struct_value().fields()) {
        out += (out.size() > 1 ? ", " : "") + quoted(key) + ": " + flow(item);
      }
      return out + "}";
    }
    default:
      return "null";
  }
}

// The document, a line at a time, each with the field it holds.
class Writer {
 public:
  void line(const std::string& indent, const std::string& text, std::string field) {
    written_.yaml.append(indent).append(text).append(1, '\n');
    written_.fields.push_back(std::move(field));
  }
  WrittenResource take() { return std::move(written_); }

 private:
  WrittenResource written_;
};

void writeRateLimit(Writer& out, const conf::RateLimitPolicy& policy, const std::string& indent,
                    const std::string& field) {
  out.line(indent, "rate_limit:", field);
  const std::string inner = indent + "  ";
  out.line(inner, "unit: " + conf::RateLimitUnit_Name(policy.unit()), field + ".unit");
  out.line(inner, "requests_per_unit: " + std::to_string(policy.requests_per_unit()), field + ".requests_per_unit");
  if (policy.unlimited()) out.line(inner, "unlimited: true", field + ".unlimited");
  if (!policy.name().empty()) out.line(inner, "name: " + quoted(policy.name()), field + ".name");
  if (policy.replaces_size() == 0) return;
  out.line(inner, "replaces:", field + ".replaces");
  for (int i = 0; i < policy.replaces_size(); ++i) {
    const std::string at = field + ".replaces[" + std::to_string(i) + "]";
    out.line(inner, "  - name: " + quoted(policy.replaces(i).name()), at + ".name");
  }
}

void writeDescriptors(Writer& out, const google::protobuf::RepeatedPtrField<conf::RateLimitDescriptor>& descriptors,
                      const std::string& indent, const std::string& path) {
  for (int i = 0; i < descriptors.size(); ++i) {
    const conf::RateLimitDescriptor& descriptor = descriptors.Get(i);
    const std::string field = path + "descriptors[" + std::to_string(i) + "]";
    const std::string inner = indent + "    ";
    out.line(indent, "  - key: " + quoted(descriptor.key()), field + ".key");
    if (!descriptor.value().empty()) out.line(inner, "value: " + quoted(descriptor.value()), field + ".value");
    if (descriptor.has_rate_limit()) writeRateLimit(out, descriptor.rate_limit(), inner, field + ".rate_limit");
    if (descriptor.shadow_mode()) out.line(inner, "shadow_mode: true", field + ".shadow_mode");
    if (descriptor.detailed_metric()) out.line(inner, "detailed_metric: true", field + ".detailed_metric");
    if (descriptor.quota_mode()) out.line(inner, "quota_mode: true", field + ".quota_mode");
    if (descriptor.has_metadata()) {
      google::protobuf::Value metadata;
      *metadata.mutable_struct_value() = descriptor.metadata();
      out.line(inner, "metadata: " + flow(metadata), field + ".metadata");
    }
    if (descriptor.descriptors_size() > 0) {
      out.line(inner, "descriptors:", field + ".descriptors");
      writeDescriptors(out, descriptor.descriptors(), inner, field + ".");
    }
  }
}

// A message of the reader's, "FILE:LINE: why", with the field of that line in place of the line.
std::string atField(const std::string& message, const std::string& resource, const WrittenResource& written) {
  const std::string prefix = resource + ":";
  if (message.compare(0, prefix.size(), prefix) != 0) return message;
  std::size_t at = prefix.size();
  std::size_t line = 0;
  while (at < message.size() && message[at] >= '0' && message[at] <= '9') line = line * 10 + (message[at++] - '0');
  if (message.compare(at, 2, ": ") != 0) return message;
  const std::string field = line >= 1 && line <= written.fields.size() ? written.fields[line - 1] : std::string();
  return resource + (field.empty() ? std::string() : ", " + field) + ": " + message.substr(at + 2);
}

}  // namespace

WrittenResource writtenAsYaml(const conf::RateLimitConfig& config) {
  Writer out;
  out.line("", "domain: " + quoted(config.domain()), "domain");
  if (config.descriptors_size() > 0) {
    out.line("", "descriptors:", "descriptors");
    writeDescriptors(out, config.descriptors(), "", "");
  }
  return out.take();
}

Domain domainOf(const conf::RateLimitConfig& config) {
  const std::string resource = "xDS resource " + quoted(config.name());
  const WrittenResource written = writtenAsYaml(config);
  Domain domain;
  try {
    domain = parseDomain(written.yaml, resource);
  } catch (const ConfigError& error) {
    throw ConfigError(atField(error.what(), resource, written));
  }
  for (std::string& warning : domain.warnings) warning = atField(warning, resource, written);
  return domain;
}

Configuration configurationOf(const google::protobuf::RepeatedPtrField<google::protobuf::Any>& resources,
                              bool merge_domains) {
  Configuration configuration;
  for (int i = 0; i < resources.size(); ++i) {
    const google::protobuf::Any& resource = resources.Get(i);
    const std::string number = "xDS resource #" + std::to_string(i + 1);
    if (resource.type_url() != kRateLimitConfigType) {
      throw ConfigError(number + " is a " + resource.type_url() + ", not a " + kRateLimitConfigType);
    }
    conf::RateLimitConfig config;
    if (!resource.UnpackTo(&config)) throw ConfigError(number + " does not hold a RateLimitConfig that can be read");
    configuration.add(domainOf(config), merge_domains);
  }
  return configuration;
}

}  // namespace swl::ratelimit::xds

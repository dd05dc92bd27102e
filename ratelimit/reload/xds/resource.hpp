#pragma once
/// \file
/// An xDS resource of envoyproxy/ratelimit's configuration (ratelimit.config.ratelimit.v3.RateLimitConfig,
/// one domain each) read by the same rules as a YAML file: it is written out as the YAML document
/// envoyproxy/ratelimit's own xDS provider makes of it (its config.ConfigXdsProtoToYaml), and that is read
/// by the YAML reader (config/yaml/), so every check and every message is a file's. A message names the
/// resource and the field instead of a file and a line:
///
///   xDS resource "default/eg/http", descriptors[0].descriptors[1].rate_limit.unit: ...

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/config/domain.hpp>

#include "ratelimit/config/ratelimit/v3/rls_conf.pb.h"

#include <google/protobuf/any.pb.h>

#include <string>
#include <vector>

namespace swl::ratelimit::xds {

/// The type URL of the resources this client asks for.
inline constexpr const char* kRateLimitConfigType = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig";

/// `config` as the YAML document it stands for, with the field each of its lines holds ("" for a line of
/// no field), for messages.
struct WrittenResource {
  std::string yaml;
  std::vector<std::string> fields;  // by line, from line 1
};
WrittenResource writtenAsYaml(const ::ratelimit::config::ratelimit::v3::RateLimitConfig& config);

/// The domain `config` defines. Anything wrong is a ConfigError naming the resource and the field.
Domain domainOf(const ::ratelimit::config::ratelimit::v3::RateLimitConfig& config);

/// Every domain the resources of one response define: what the server answers from once it is in force.
/// A resource of another type, one that does not unpack, a domain given twice (but with `merge_domains`,
/// envoyproxy's MERGE_DOMAIN_CONFIG), or any resource wrong is a ConfigError, and none is taken.
Configuration configurationOf(const google::protobuf::RepeatedPtrField<google::protobuf::Any>& resources,
                              bool merge_domains);

}  // namespace swl::ratelimit::xds

#pragma once
// A domain read from YAML text, as swl-ratelimit reads a file ("test.yaml" in its errors).

#include <ratelimit/config/configuration.hpp>

#include <string>

namespace swl::test {

inline swl::ratelimit::Domain domainOf(const std::string& yaml) {
  return swl::ratelimit::parseDomain(yaml, "test.yaml");
}

}  // namespace swl::test

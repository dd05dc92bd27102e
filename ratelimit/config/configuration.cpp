// Every domain the service answers for, gathered from the files one by one: a domain twice is refused,
// or merged (envoyproxy/ratelimit's MERGE_DOMAIN_CONFIG).

#include <ratelimit/config/configuration.hpp>
#include <ratelimit/config/domain.hpp>

#include <iterator>
#include <string>
#include <utility>

namespace swl::ratelimit {

namespace {

std::string describe(const SourceLocation& source) { return source.file + ":" + std::to_string(source.line); }

}  // namespace

void Configuration::add(Domain domain, bool merge_domains) {
  warnings_.insert(warnings_.end(), std::make_move_iterator(domain.warnings.begin()),
                   std::make_move_iterator(domain.warnings.end()));
  domain.warnings.clear();
  const auto taken = domains_.find(domain.name);
  if (taken == domains_.end()) {
    std::string name = domain.name;
    domains_.emplace(std::move(name), std::move(domain));
    return;
  }
  if (!merge_domains) {
    throw ConfigError(describe(domain.source) + ": domain \"" + domain.name + "\" is defined already, at " +
                      describe(taken->second.source) + " (merging the files of one domain is an option)");
  }
  Domain& kept = taken->second;
  if (const auto repeat = kept.rules.merge(std::move(domain.rules))) {
    throw ConfigError(repeatMessage(kept.name, kept.rules, *repeat));
  }
}

void Configuration::warn(std::string warning) { warnings_.push_back(std::move(warning)); }

}  // namespace swl::ratelimit

// envoyproxy/ratelimit's YAML file read as its Go loader (gopkg.in/yaml.v2, then its own checks) reads
// it. One file's text goes through three parts, none doing I/O:
//  1. events.hpp, readFirstDocument: libyaml's events (yaml.v2 is a port of libyaml; parser.hpp, its
//     reader refusing bytes that are not UTF-8 or UTF-16 of the characters YAML allows, as yaml.v2's
//     does) with YAML 1.1's aliases replayed and merge keys (`<<`) expanded in yaml.v2's order, so that
//     what follows sees plain maps, lists and scalars; scalar.hpp reads a scalar as yaml.v2 does (`yes`
//     is true, `0x10` is 16, `1.5` is a float).
//  2. domain_reader.hpp, DomainReader: what each map and list is for, by where it is (the file, a
//     descriptor, a rate_limit...; keys.hpp), into small records of what each descriptor says
//     (written.hpp); each rate_limit made into a Rule (rate_limit.hpp).
//  3. DomainReader::finish: the records laid out as the domain's RuleTree.
// The text is read once, event by event; no tree of YAML nodes is ever built: that was most of a large
// file's time and memory.

#include <ratelimit/config/domain.hpp>
#include <ratelimit/config/error.hpp>
#include <ratelimit/config/yaml/domain_reader.hpp>
#include <ratelimit/config/yaml/events.hpp>

#include <string>
#include <string_view>

namespace swl::ratelimit {

Domain parseDomain(std::string_view text, const std::string& file) {
  reader::DomainReader reader(file);
  const yaml::FirstDocument read = yaml::readFirstDocument(text, file, reader);
  if (!read.found) throw ConfigError(lineAt(file, 1) + "the file is empty: it must name its domain");
  Domain domain = reader.finish();
  if (read.next_document_line != 0) {
    domain.warnings.push_back(lineAt(file, read.next_document_line) +
                              "a second YAML document: ignored, as envoyproxy/ratelimit reads the first only");
  }
  return domain;
}

}  // namespace swl::ratelimit

// Reading envoyproxy/ratelimit's YAML as its Go loader reads it (gopkg.in/yaml.v2, then its own checks),
// with yaml-cpp's event parser, which stays inside this file. The text is read once, event by event,
// into small records of what each descriptor says; the domain's tree is made from them at the end of
// the document. No tree of YAML nodes is ever built: that was most of a large file's time and memory.
//
// Four steps, each a part of its own below:
//  1. checkedText: the bytes are UTF-8 (or UTF-16, converted) of the characters YAML allows, as yaml.v2
//     refuses a file for any other byte, even in a comment.
//  2. YamlEvents: yaml-cpp's events with YAML 1.1's aliases replayed and merge keys (`<<`) expanded in
//     yaml.v2's order, so that what follows sees plain maps, lists and scalars; resolveScalar reads a
//     scalar as yaml.v2 does (`yes` is true, `0x10` is 16, `1.5` is a float).
//  3. Reader: what each map and list is for, by where it is (the file, a descriptor, a rate_limit...).
//     A key is read where it belongs, validated and ignored (with a warning) where it means nothing, as
//     envoyproxy/ratelimit does, and refused where it is unknown.
//  4. makeDomain: the records laid out as the domain's RuleTree.
//
// envoyproxy/ratelimit checks a file in three passes over different decodings of it: a check of every
// key and scalar (validateYamlKeys) on a decoding where a key given twice keeps its last value, a typed
// decoding whose type errors stand even when a later key replaces the value, and its own checks on what
// the typed decoding kept. One pass here keeps all three: a type error refuses the file at once, while
// the other refusals wait in the map whose key they are under, and are dropped if that key is given
// again; whatever is left when the document ends refuses the file.

#include <ratelimit/config.hpp>

#include <swl/algorithms/fixed_window.hpp>
#include <swl/algorithms/gcra.hpp>
#include <swl/algorithms/sliding_window_log.hpp>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <istream>
#include <optional>
#include <sstream>
#include <streambuf>
#include <system_error>
#include <utility>

namespace swl::ratelimit {

namespace {

// Past these a file is refused. yaml.v2 has no such limits, but YAML aliases can make a tree of any
// size from a few lines, and yaml-cpp itself gives up near 500 levels; no real file comes close.
constexpr std::size_t kMostLevels = 64;       // descriptors within descriptors
constexpr std::size_t kMostYamlLevels = 200;  // maps and lists within each other, aliases replayed
constexpr std::size_t kMostDescriptors = 1'000'000;
constexpr std::size_t kMostReplayedEvents = 4'000'000;  // what aliases add, beyond the text itself
constexpr std::size_t kMostWarnings = 100;              // per file; then one line says how many more
// Envoy's API holds requests_per_unit in a uint32, and so does envoyproxy/ratelimit's YAML.
constexpr std::uint32_t kMostRequests = 4294967295u;
constexpr std::uint32_t kNone = RuleTree::kNone;

std::string lineAt(const std::string& file, int line) { return file + ":" + std::to_string(line) + ": "; }

std::string inQuotes(std::string_view text);

// "b.yaml:7: a second descriptor shop.user_admin, the first at line 3: ..."
std::string repeatMessage(const std::string& domain, const RuleTree& tree, const RuleTree::Repeat& repeat) {
  const SourceLocation second = tree.locationOf(repeat.second);
  const SourceLocation first = tree.locationOf(repeat.first);
  std::string message = lineAt(second.file, second.line) + "a second descriptor " + domain + "." +
                        tree.pathOf(repeat.second) + ", the first at " +
                        (first.file == second.file ? "line " + std::to_string(first.line)
                                                   : first.file + ":" + std::to_string(first.line));
  if (tree.keyOf(repeat.first) == tree.keyOf(repeat.second)) return message + ": siblings differ in key or value";
  const auto described = [&](std::uint32_t node) {
    return "the key " + inQuotes(tree.keyOf(node)) +
           (tree.valueOf(node).empty() ? "" : " with the value " + inQuotes(tree.valueOf(node)));
  };
  return message + ": envoyproxy/ratelimit names " + described(repeat.first) + " and " + described(repeat.second) +
         " alike (key_value), and takes them for one";
}

// ---------------------------------------------------------------------------------------------------
// 1. The text: the characters yaml.v2 reads (its reader refuses any other, anywhere in the file).

bool allowedInYaml(std::uint32_t code) {
  return code == 0x09 || code == 0x0A || code == 0x0D || (code >= 0x20 && code <= 0x7E) || code == 0x85 ||
         (code >= 0xA0 && code <= 0xD7FF) || (code >= 0xE000 && code <= 0xFFFD) ||
         (code >= 0x10000 && code <= 0x10FFFF);
}

int lineOfOffset(std::string_view text, std::size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

std::string hexByte(unsigned char byte) {
  static constexpr char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[byte >> 4] + kDigits[byte & 15];
}

std::string codePoint(std::uint32_t code) {
  std::ostringstream text;
  text << "U+" << std::uppercase << std::hex << code;
  return text.str();
}

void appendUtf8(std::uint32_t code, std::string& out) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// UTF-16 with its byte order mark, as yaml.v2 takes it, into UTF-8.
std::string fromUtf16(std::string_view bytes, bool big_endian, const std::string& file) {
  std::string text;
  text.reserve(bytes.size());
  int line = 1;
  const auto unit = [&](std::size_t at) {
    const auto high = static_cast<unsigned char>(bytes[at + (big_endian ? 0 : 1)]);
    const auto low = static_cast<unsigned char>(bytes[at + (big_endian ? 1 : 0)]);
    return static_cast<std::uint32_t>(high << 8 | low);
  };
  for (std::size_t at = 2; at < bytes.size(); at += 2) {
    if (at + 1 >= bytes.size()) throw ConfigError(lineAt(file, line) + "the UTF-16 text ends in half a character");
    std::uint32_t code = unit(at);
    if (code >= 0xDC00 && code <= 0xDFFF) {
      throw ConfigError(lineAt(file, line) + "not UTF-16: a low surrogate with no high one before it");
    }
    if (code >= 0xD800 && code <= 0xDBFF) {
      const std::uint32_t next = at + 3 < bytes.size() ? unit(at + 2) : 0;
      if (next < 0xDC00 || next > 0xDFFF) {
        throw ConfigError(lineAt(file, line) + "not UTF-16: a high surrogate with no low one after it");
      }
      code = 0x10000 + ((code - 0xD800) << 10) + (next - 0xDC00);
      at += 2;
    }
    if (!allowedInYaml(code)) {
      throw ConfigError(lineAt(file, line) + "the character " + codePoint(code) + ", which YAML does not allow");
    }
    if (code == '\n') ++line;
    appendUtf8(code, text);
  }
  return text;
}

// The file's text as UTF-8: `bytes` itself, or its conversion (kept in `converted`) when it is UTF-16.
// Anything yaml.v2 would refuse is refused at its line: bytes that are not UTF-8 (a domain, key or
// value in them could never match Envoy's strings, which are UTF-8), or a control character.
std::string_view checkedText(std::string_view bytes, std::string& converted, const std::string& file) {
  if (bytes.size() >= 2 && ((bytes[0] == '\xFF' && bytes[1] == '\xFE') || (bytes[0] == '\xFE' && bytes[1] == '\xFF'))) {
    converted = fromUtf16(bytes, bytes[0] == '\xFE', file);
    return converted;
  }
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t size = bytes.size();
  std::size_t at = 0;
  while (at < size) {
    const unsigned char first = data[at];
    if (first >= 0x20 && first < 0x7F) {  // most of any file
      ++at;
      continue;
    }
    std::size_t length = 0;
    std::uint32_t code = 0;
    if (first < 0x80) {
      length = 1;
      code = first;
    } else if (first >= 0xC2 && first <= 0xDF) {
      length = 2;
      code = first & 0x1F;
    } else if (first >= 0xE0 && first <= 0xEF) {
      length = 3;
      code = first & 0x0F;
    } else if (first >= 0xF0 && first <= 0xF4) {
      length = 4;
      code = first & 0x07;
    } else {
      throw ConfigError(lineAt(file, lineOfOffset(bytes, at)) + "not UTF-8 (the byte " + hexByte(first) +
                        "): envoyproxy/ratelimit reads UTF-8 only");
    }
    for (std::size_t next = 1; next < length; ++next) {
      if (at + next >= size || (data[at + next] & 0xC0) != 0x80) {
        throw ConfigError(lineAt(file, lineOfOffset(bytes, at)) + "not UTF-8 (the byte " + hexByte(first) +
                          " starts a character that is not finished): envoyproxy/ratelimit reads UTF-8 only");
      }
      code = code << 6 | (data[at + next] & 0x3F);
    }
    const bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
    if (overlong || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) {
      throw ConfigError(lineAt(file, lineOfOffset(bytes, at)) + "not UTF-8 (an encoding UTF-8 forbids, from the byte " +
                        hexByte(first) + "): envoyproxy/ratelimit reads UTF-8 only");
    }
    if (!allowedInYaml(code)) {
      throw ConfigError(lineAt(file, lineOfOffset(bytes, at)) + "the character " + codePoint(code) +
                        ", which YAML does not allow (a control character)");
    }
    at += length;
  }
  return bytes;
}

// A read-only view of the text as a stream, for yaml-cpp: no copy of a large file.
class TextBuffer : public std::streambuf {
 public:
  explicit TextBuffer(std::string_view text) {
    char* begin = const_cast<char*>(text.data());
    setg(begin, begin, begin + text.size());
  }
};

// ---------------------------------------------------------------------------------------------------
// 2a. Scalars, as yaml.v2 resolves them (resolve.go): an unquoted scalar is null, a boolean (YAML 1.1's
// yes/no/on/off too), an integer in Go's notation (0x1F, 0o17, 017, 0b101, 1_000), a float, or text; a
// quoted or block one is text.

enum class ScalarStyle : std::uint8_t { plain, quoted, tagged };

struct Scalar {
  std::string_view text;
  int line = 0;
  ScalarStyle style = ScalarStyle::plain;
  std::string_view tag;  // the explicit tag, for ScalarStyle::tagged
  bool null = false;     // an empty node (`key:`), which yaml-cpp reports apart from a written `~`
};

enum class Kind : std::uint8_t { null, boolean, integer, big_integer, floating, text };

struct Resolved {
  Kind kind = Kind::text;
  bool boolean = false;
  std::int64_t integer = 0;  // for Kind::integer
  double floating = 0;       // for Kind::floating
};

bool oneOf(std::string_view text, std::initializer_list<std::string_view> words) {
  return std::find(words.begin(), words.end(), text) != words.end();
}

// strconv.ParseUint(text, 0, 64): a 0x, 0o, 0b or 0 (octal) prefix, no sign. nullopt: not a number
// in that notation, or above 2^64 - 1.
std::optional<std::uint64_t> parseGoUnsigned(std::string_view text) {
  unsigned base = 10;
  if (text.size() >= 2 && text[0] == '0') {
    const char mark = static_cast<char>(text[1] | 0x20);
    if (mark == 'x' || mark == 'o' || mark == 'b') {
      base = mark == 'x' ? 16 : mark == 'o' ? 8 : 2;
      text.remove_prefix(2);
    } else {
      base = 8;
      text.remove_prefix(1);
    }
  }
  if (text.empty()) return std::nullopt;
  std::uint64_t number = 0;
  for (const char c : text) {
    unsigned digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<unsigned>(c - '0');
    } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
      digit = static_cast<unsigned>((c | 0x20) - 'a' + 10);
    } else {
      return std::nullopt;
    }
    if (digit >= base) return std::nullopt;
    if (number > (UINT64_MAX - digit) / base) return std::nullopt;
    number = number * base + digit;
  }
  return number;
}

// yaml.v2's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
bool looksLikeFloat(std::string_view text) {
  std::size_t at = 0;
  const auto digits = [&] {
    const std::size_t start = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
    return at - start;
  };
  if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
  if (at < text.size() && text[at] == '.') {
    ++at;
    if (digits() == 0) return false;
  } else {
    if (digits() == 0) return false;
    if (at < text.size() && text[at] == '.') {
      ++at;
      digits();
    }
  }
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
    if (digits() == 0) return false;
  }
  return at == text.size();
}

Resolved resolvePlain(std::string_view text) {
  Resolved resolved;
  if (text.empty()) {
    resolved.kind = Kind::null;
    return resolved;
  }
  // yaml.v2 goes by the first character; every word it knows has at most 5 (most scalars are text).
  const char first = text[0];
  const bool word = text.size() <= 5 && std::string_view("yYnNtTfFoO~.+-").find(first) != std::string_view::npos;
  const bool number = first == '.' || first == '+' || first == '-' || (first >= '0' && first <= '9');
  if (!word && !number) return resolved;
  if (oneOf(text, {"~", "null", "Null", "NULL"})) {
    resolved.kind = Kind::null;
  } else if (oneOf(text, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})) {
    resolved.kind = Kind::boolean;
    resolved.boolean = true;
  } else if (oneOf(text, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})) {
    resolved.kind = Kind::boolean;
  } else if (oneOf(text, {".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf",
                          "-.INF"})) {
    resolved.kind = Kind::floating;
    resolved.floating = text[1] == 'n' || text[1] == 'N' ? std::nan("") : text[0] == '-' ? -HUGE_VAL : HUGE_VAL;
  } else if (text[0] == '.' || text[0] == '+' || text[0] == '-' || (text[0] >= '0' && text[0] <= '9')) {
    std::string plain(text);
    if (text[0] != '.') plain.erase(std::remove(plain.begin(), plain.end(), '_'), plain.end());
    std::string_view digits = plain;
    const bool negative = !digits.empty() && digits[0] == '-';
    if (text[0] != '.' && !digits.empty() && (digits[0] == '+' || digits[0] == '-')) digits.remove_prefix(1);
    const bool signed_text = digits.size() != plain.size();
    if (text[0] != '.') {
      if (const auto magnitude = parseGoUnsigned(digits)) {
        if (!negative && *magnitude <= static_cast<std::uint64_t>(INT64_MAX)) {
          resolved.kind = Kind::integer;
          resolved.integer = static_cast<std::int64_t>(*magnitude);
          return resolved;
        }
        if (negative && *magnitude <= static_cast<std::uint64_t>(INT64_MAX) + 1) {
          resolved.kind = Kind::integer;
          resolved.integer = static_cast<std::int64_t>(0 - *magnitude);
          return resolved;
        }
        // ParseUint takes no sign: a signed number past int64 goes on to be a float.
        if (!signed_text) {
          resolved.kind = Kind::big_integer;
          return resolved;
        }
      }
    }
    if (looksLikeFloat(plain)) {
      errno = 0;
      const double value = std::strtod(plain.c_str(), nullptr);
      // strconv.ParseFloat fails past the largest double, and the text is then just text.
      if (!(errno == ERANGE && std::isinf(value))) {
        resolved.kind = Kind::floating;
        resolved.floating = value;
      }
    }
  }
  return resolved;
}

// What yaml.v2 makes of a scalar, or why it refuses it (an explicit tag the text does not fit).
Resolved resolveScalar(const Scalar& scalar, const std::string& file) {
  if (scalar.null) return Resolved{Kind::null};
  if (scalar.style == ScalarStyle::plain) return resolvePlain(scalar.text);
  if (scalar.style == ScalarStyle::quoted) return Resolved{};
  constexpr std::string_view kCoreTags = "tag:yaml.org,2002:";
  if (scalar.tag.substr(0, kCoreTags.size()) != kCoreTags) return Resolved{};  // a tag of one's own: text
  const std::string_view tag = scalar.tag.substr(kCoreTags.size());
  if (tag != "bool" && tag != "int" && tag != "float" && tag != "null") return Resolved{};
  Resolved resolved = resolvePlain(scalar.text);
  if (tag == "float" && resolved.kind == Kind::integer) {
    resolved.kind = Kind::floating;
    resolved.floating = static_cast<double>(resolved.integer);
  }
  const bool fits = (tag == "bool" && resolved.kind == Kind::boolean) ||
                    (tag == "int" && (resolved.kind == Kind::integer || resolved.kind == Kind::big_integer)) ||
                    (tag == "float" && resolved.kind == Kind::floating) ||
                    (tag == "null" && resolved.kind == Kind::null);
  if (!fits) {
    throw ConfigError(lineAt(file, scalar.line) + "not valid YAML: \"" + std::string(scalar.text) + "\" is not a !!" +
                      std::string(tag));
  }
  return resolved;
}

std::string inQuotes(std::string_view text) {
  constexpr std::size_t kLongest = 60;
  if (text.size() > kLongest) return "\"" + std::string(text.substr(0, kLongest)) + "...\"";
  return "\"" + std::string(text) + "\"";
}

// How a scalar reads in a message: "the text \"5\"", "the number 1.5", "true".
std::string described(const Scalar& scalar, const Resolved& resolved) {
  switch (resolved.kind) {
    case Kind::null:
      return "null";
    case Kind::boolean:
      return std::string(scalar.text) + " (a boolean in YAML 1.1)";
    case Kind::integer:
    case Kind::big_integer:
    case Kind::floating:
      return "the number " + std::string(scalar.text);
    case Kind::text:
      break;
  }
  return "the text " + inQuotes(scalar.text);
}

// ---------------------------------------------------------------------------------------------------
// 3a. The keys. envoyproxy/ratelimit accepts any of its own keys in any map of the file and reads each
// only where it belongs; swl's own are read in a rate_limit only.

enum class Key : std::uint8_t {
  domain,
  descriptors,
  key,
  value,
  rate_limit,
  unit,
  requests_per_unit,
  unlimited,
  name,
  replaces,
  shadow_mode,
  quota_mode,
  detailed_metric,
  value_to_metric,
  share_threshold,
  metadata,
  // swl's
  algorithm,
  calendar,
  time_zone,
  weight,
  unknown,
  none,
};

constexpr std::array<std::string_view, 20> kKeyNames{"domain",
                                                     "descriptors",
                                                     "key",
                                                     "value",
                                                     "rate_limit",
                                                     "unit",
                                                     "requests_per_unit",
                                                     "unlimited",
                                                     "name",
                                                     "replaces",
                                                     "shadow_mode",
                                                     "quota_mode",
                                                     "detailed_metric",
                                                     "value_to_metric",
                                                     "share_threshold",
                                                     "metadata",
                                                     "algorithm",
                                                     "calendar",
                                                     "time_zone",
                                                     "weight"};

Key keyNamed(std::string_view text) {
  for (std::size_t at = 0; at < kKeyNames.size(); ++at) {
    if (kKeyNames[at] == text) return static_cast<Key>(at);
  }
  return Key::unknown;
}

std::string_view nameOf(Key key) { return kKeyNames[static_cast<std::size_t>(key)]; }

bool envoysKey(Key key) { return key <= Key::metadata; }

// Where a key is read, for the warning that says it is not read here.
std::string_view whereRead(Key key) {
  switch (key) {
    case Key::domain:
      return "at the file's top level";
    case Key::unit:
    case Key::requests_per_unit:
    case Key::unlimited:
    case Key::replaces:
      return "in a rate_limit";
    case Key::name:
      return "in a rate_limit or a replaces entry";
    default:
      return "in a descriptor";
  }
}

// What each map or list of the file is for.
enum class Place : std::uint8_t {
  document,        // the document itself: one node
  file,            // the top-level map: domain, descriptors
  descriptors,     // a list of descriptors
  descriptor,      // key, value, rate_limit, descriptors, flags, metadata
  rate_limit,      // unit, requests_per_unit, unlimited, name, replaces; swl's keys
  replaces,        // a list of {name: ...}
  replaces_entry,  // name
  metadata,        // anything at all, not read
  ignored,         // the value of a key where it means nothing: checked as envoyproxy checks it, not read
  skipped,         // the value of an unknown key: the file is refused already
};

std::string_view nameOf(Place place) {
  switch (place) {
    case Place::file:
      return "the file";
    case Place::descriptor:
      return "a descriptor";
    case Place::rate_limit:
      return "a rate_limit";
    case Place::replaces_entry:
      return "a replaces entry";
    default:
      return "this map";
  }
}

std::string_view keysReadIn(Place place) {
  switch (place) {
    case Place::file:
      return "domain, descriptors";
    case Place::descriptor:
      return "key, value, rate_limit, descriptors, shadow_mode, quota_mode, detailed_metric, value_to_metric, "
             "share_threshold, metadata";
    case Place::rate_limit:
      return "unit, requests_per_unit, unlimited, name, replaces, algorithm, calendar, time_zone, weight";
    case Place::replaces_entry:
      return "name";
    default:
      return "envoyproxy/ratelimit's keys";
  }
}

// Whether `key` is read in a map of `place`.
bool readIn(Place place, Key key) {
  switch (place) {
    case Place::file:
      return key == Key::domain || key == Key::descriptors;
    case Place::descriptor:
      return key == Key::key || key == Key::value || key == Key::rate_limit || key == Key::descriptors ||
             key == Key::shadow_mode || key == Key::quota_mode || key == Key::detailed_metric ||
             key == Key::value_to_metric || key == Key::share_threshold || key == Key::metadata;
    case Place::rate_limit:
      return key == Key::unit || key == Key::requests_per_unit || key == Key::unlimited || key == Key::name ||
             key == Key::replaces || key == Key::algorithm || key == Key::calendar || key == Key::time_zone ||
             key == Key::weight;
    case Place::replaces_entry:
      return key == Key::name;
    default:
      return false;
  }
}

struct AlgorithmName {
  std::string_view name;
  Algorithm algorithm;
};
constexpr std::array<AlgorithmName, 3> kAlgorithms{{
    {"sliding_window_log", Algorithm::sliding_window_log},
    {"gcra", Algorithm::gcra},
    {"fixed_window", Algorithm::fixed_window},
}};

std::string lowercase(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lower;
}

const UnitInfo* unitNamed(std::string_view name) {
  const std::string lower = lowercase(name);
  for (const UnitInfo& unit : kUnits) {
    if (unit.name == lower) return &unit;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------------
// 3b. The reader: one frame per open map or list.

// A refusal that a later repeat of the key it is under may still drop.
struct Deferred {
  Key key;  // Key::none: the map's or list's own
  int line;
  std::string message;
};

struct Frame {
  Frame(Place place, bool is_map, int line) : place(place), is_map(is_map), line(line) {}

  Place place;
  bool is_map;
  int line;
  // In a map: the key whose value comes next (Key::none while a key is awaited), and what becomes of
  // that value.
  Key key = Key::none;
  int key_line = 0;
  enum class Value : std::uint8_t { read, ignored, skipped } value = Value::read;
  std::uint32_t assigned = 0;                    // the keys given a value in this map, by bit
  std::array<int, kKeyNames.size()> given_at{};  // where each key is first written here (not merged), or 0
  std::uint32_t descriptor = kNone;              // a descriptor: itself; a list of descriptors: their parent
  std::size_t level = 0;                         // descriptors: how deep (1 for the file's own)
  std::vector<Deferred> deferred;
};

// What one descriptor says, gathered while its map is read; its children are a chain of indices.
struct WrittenDescriptor {
  std::string key;
  std::string value;
  int line = 0;
  bool shadow_mode = false;
  bool quota_mode = false;
  bool detailed_metric = false;
  bool value_to_metric = false;
  bool share_threshold = false;
  std::uint32_t rule = kNone;  // kept by the domain's RuleTree (keepRule)
  std::uint32_t first_child = kNone;
  std::uint32_t last_child = kNone;
  std::uint32_t next = kNone;
};

// What one rate_limit says. A second `rate_limit:` in a descriptor adds to the first, field by field,
// as yaml.v2 decodes into the pointer it made for the first; null takes it away.
struct WrittenRateLimit {
  bool present = false;
  int line = 0;
  std::string unit;
  int unit_line = 0;
  std::uint32_t requests_per_unit = 0;
  int requests_line = 0;
  bool unlimited = false;
  std::string name;
  std::vector<std::pair<std::string, int>> replaces;
  std::optional<std::string> algorithm;
  int algorithm_line = 0;
  std::optional<bool> calendar;
  int calendar_line = 0;
  std::optional<std::string> time_zone;
  int time_zone_line = 0;
  std::optional<std::int64_t> weight;
  int weight_line = 0;
};

class Reader {
 public:
  explicit Reader(const std::string& file) : file_(file) {
    frames_.reserve(kMostYamlLevels + 2);
    frames_.emplace_back(Place::document, false, 1);
    written_.emplace_back();  // the file's own list of descriptors hangs from written_[0]
    rate_limits_.resize(kMostLevels + 2);
  }

  // Whether the next scalar is a map's key: merge keys (`<<`) are found by the events' layer.
  bool awaitsKey() const noexcept { return frames_.back().is_map && frames_.back().key == Key::none; }

  void scalar(const Scalar& scalar, bool merged) {
    Frame& top = frames_.back();
    if (top.is_map && top.key == Key::none) {
      takeKey(top, scalar, merged);
      return;
    }
    takeScalarValue(top, scalar);
    if (top.is_map) top.key = Key::none;
  }

  void start(bool is_map, int line) {
    Frame& top = frames_.back();
    if (top.is_map && top.key == Key::none) {
      refuse(line, std::string(nameOf(top.place)) + " has a key that is not a word but a " + (is_map ? "map" : "list"));
    }
    Frame child{placeOfChild(top, is_map, line), is_map, line};
    if (child.place == Place::descriptor) startDescriptor(top, child);
    if (child.place == Place::descriptors) {
      child.level = top.place == Place::file ? 1 : top.level + 1;
      child.descriptor = top.descriptor;
    }
    if (child.place == Place::rate_limit || child.place == Place::replaces || child.place == Place::replaces_entry) {
      child.level = top.level;
      child.descriptor = top.descriptor;
    }
    if (child.place == Place::replaces_entry) rate_limits_[child.level].replaces.emplace_back("", line);
    frames_.push_back(std::move(child));
  }

  void end() {
    Frame done = std::move(frames_.back());
    frames_.pop_back();
    if (done.place == Place::descriptor) finishDescriptor(done);
    Frame& parent = frames_.back();
    if (!done.deferred.empty()) {
      const auto first = std::min_element(done.deferred.begin(), done.deferred.end(),
                                          [](const Deferred& a, const Deferred& b) { return a.line < b.line; });
      parent.deferred.push_back({parent.is_map ? parent.key : Key::none, first->line, std::move(first->message)});
    }
    if (parent.is_map) parent.key = Key::none;
  }

  // The document is over: what it says, made into the domain.
  Domain finish() {
    Frame& document = frames_.front();
    if (!document.deferred.empty()) {
      const auto first = std::min_element(document.deferred.begin(), document.deferred.end(),
                                          [](const Deferred& a, const Deferred& b) { return a.line < b.line; });
      refuse(first->line, first->message);
    }
    if (!has_domain_) refuse(domain_line_, "no domain: every file names its domain");
    if (domain_.name.empty()) refuse(domain_line_, "the domain is empty");
    return makeDomain();
  }

  void setEmptyFileLine(int line) { domain_line_ = line; }

  std::vector<std::string> takeWarnings() {
    if (warnings_dropped_ > 0) {
      warnings_.push_back(file_ + ": and " + std::to_string(warnings_dropped_) + " more warnings");
    }
    return std::move(warnings_);
  }

  [[noreturn]] void refuse(int line, const std::string& why) const { throw ConfigError(lineAt(file_, line) + why); }

 private:
  void warn(int line, const std::string& what) {
    if (warnings_.size() < kMostWarnings) {
      warnings_.push_back(lineAt(file_, line) + what);
    } else {
      ++warnings_dropped_;
    }
  }

  void defer(Frame& frame, Key key, int line, std::string message) {
    frame.deferred.push_back({key, line, std::move(message)});
  }

  // ----- keys

  void takeKey(Frame& map, const Scalar& scalar, bool merged) {
    const Resolved resolved = resolveScalar(scalar, file_);
    map.key_line = scalar.line;
    if (map.place == Place::metadata || map.place == Place::skipped) {
      map.key = Key::unknown;
      map.value = map.place == Place::metadata ? Frame::Value::read : Frame::Value::skipped;
      return;
    }
    if (resolved.kind != Kind::text) {
      map.key = Key::unknown;
      map.value = Frame::Value::skipped;
      defer(map, Key::none, scalar.line,
            "the key " + std::string(scalar.null ? "null" : scalar.text) + " is read as " +
                (resolved.kind == Kind::boolean ? "a boolean"
                 : resolved.kind == Kind::null  ? "null"
                                                : "a number") +
                ", not a word (YAML 1.1): keys are words");
      return;
    }
    const Key key = keyNamed(scalar.text);
    map.key = key;
    if (key == Key::unknown || (!envoysKey(key) && map.place != Place::rate_limit)) {
      map.value = Frame::Value::skipped;
      std::string message = "unknown key " + inQuotes(scalar.text) + " in " + std::string(nameOf(map.place));
      if (key != Key::unknown) {
        message += ": swl's " + std::string(scalar.text) + " is read in a rate_limit only";
      } else if (map.place != Place::ignored) {
        message += " (" + std::string(keysReadIn(map.place)) + ")";
      }
      defer(map, Key::none, scalar.line, std::move(message));
      return;
    }
    // The last value of a key given twice is the one kept: what was refused in an earlier one goes.
    const std::uint32_t bit = 1u << static_cast<unsigned>(key);
    if (map.assigned & bit) {
      map.deferred.erase(std::remove_if(map.deferred.begin(), map.deferred.end(),
                                        [&](const Deferred& refusal) { return refusal.key == key; }),
                         map.deferred.end());
    }
    map.assigned |= bit;
    // A key a merge (`<<`) brings is meant to be overridden: only a key written twice is warned of.
    int& given_at = map.given_at[static_cast<std::size_t>(key)];
    if (!merged && given_at != 0 && map.place != Place::ignored) {
      warn(scalar.line, std::string(scalar.text) + " is given again in " + std::string(nameOf(map.place)) +
                            " (first at line " + std::to_string(given_at) +
                            "): the last is read, as envoyproxy/ratelimit reads it");
    } else if (!merged && given_at == 0) {
      given_at = scalar.line;
    }
    if (map.place == Place::ignored) {
      map.value = key == Key::metadata ? Frame::Value::skipped : Frame::Value::ignored;
      return;
    }
    if (readIn(map.place, key)) {
      map.value = Frame::Value::read;
      return;
    }
    map.value = key == Key::metadata ? Frame::Value::skipped : Frame::Value::ignored;
    warn(scalar.line, std::string(scalar.text) + " means nothing in " + std::string(nameOf(map.place)) +
                          " (it is read " + std::string(whereRead(key)) +
                          "): ignored, as envoyproxy/ratelimit ignores it");
  }

  // ----- scalars

  void takeScalarValue(Frame& top, const Scalar& scalar) {
    switch (top.place) {
      case Place::document: {
        const Resolved resolved = resolveScalar(scalar, file_);
        if (resolved.kind != Kind::null) {
          refuse(scalar.line, "the file is " + described(scalar, resolved) + ", not a map of domain and descriptors");
        }
        return;
      }
      case Place::descriptors:
      case Place::replaces: {
        const Resolved resolved = resolveScalar(scalar, file_);
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
                "a list here holds " + described(scalar, resolveScalar(scalar, file_)) +
                    ": envoyproxy/ratelimit's lists hold maps only");
          return;
        }
        if (top.value == Frame::Value::ignored) checkKind(top, scalar, resolveScalar(scalar, file_));
        return;
      case Place::metadata:
      case Place::skipped:
        return;
      default:
        break;
    }
    if (top.value == Frame::Value::skipped) return;
    const Resolved resolved = resolveScalar(scalar, file_);
    checkKind(top, scalar, resolved);
    if (top.value == Frame::Value::read) readField(top, scalar, resolved);
  }

  // validateYamlKeys: a scalar is text, a whole number of int64, a boolean or null; a float, or a
  // number past int64, refuses the file.
  void checkKind(Frame& map, const Scalar& scalar, const Resolved& resolved) {
    if (resolved.kind == Kind::floating || resolved.kind == Kind::big_integer) {
      defer(map, map.key, scalar.line,
            std::string(nameOf(map.key)) + " is " + described(scalar, resolved) +
                (resolved.kind == Kind::floating
                     ? ", a number that is not whole, which envoyproxy/ratelimit refuses: quote it if it is text"
                     : ", past the int64 envoyproxy/ratelimit reads: quote it if it is text"));
    }
  }

  static std::string text(const Scalar& scalar, const Resolved& resolved) {
    return resolved.kind == Kind::null ? std::string() : std::string(scalar.text);
  }

  bool flag(const Frame& map, const Scalar& scalar, const Resolved& resolved) {
    if (resolved.kind == Kind::null) return false;
    if (resolved.kind != Kind::boolean) {
      refuse(scalar.line, std::string(nameOf(map.key)) + " is true or false, not " + described(scalar, resolved));
    }
    return resolved.boolean;
  }

  [[noreturn]] void refuseType(const Frame& map, const std::string& expected) {
    refuse(map.key_line, std::string(nameOf(map.key)) + " is " + expected);
  }

  void readField(Frame& map, const Scalar& scalar, const Resolved& resolved) {
    WrittenDescriptor* descriptor = map.descriptor == kNone ? nullptr : &written_[map.descriptor];
    WrittenRateLimit* rate_limit = map.place == Place::rate_limit ? &rate_limits_[map.level] : nullptr;
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
      case Key::unit:
        rate_limit->unit = text(scalar, resolved);
        rate_limit->unit_line = map.key_line;
        return;
      case Key::requests_per_unit:
        rate_limit->requests_per_unit = requestsPerUnit(map, scalar, resolved);
        rate_limit->requests_line = map.key_line;
        return;
      case Key::unlimited:
        rate_limit->unlimited = flag(map, scalar, resolved);
        return;
      case Key::name:
        if (map.place == Place::replaces_entry) {
          rate_limits_[map.level].replaces.back() = {text(scalar, resolved), map.key_line};
        } else {
          rate_limit->name = text(scalar, resolved);
        }
        return;
      case Key::replaces:
        if (resolved.kind != Kind::null) refuseType(map, "a list of {name: ...}, not " + described(scalar, resolved));
        rate_limit->replaces.clear();
        return;
      case Key::algorithm:
        rate_limit->algorithm = resolved.kind == Kind::null ? std::nullopt : std::optional(std::string(scalar.text));
        rate_limit->algorithm_line = map.key_line;
        return;
      case Key::time_zone:
        rate_limit->time_zone = resolved.kind == Kind::null ? std::nullopt : std::optional(std::string(scalar.text));
        rate_limit->time_zone_line = map.key_line;
        return;
      case Key::calendar:
        rate_limit->calendar = resolved.kind == Kind::null ? std::nullopt : std::optional(flag(map, scalar, resolved));
        rate_limit->calendar_line = map.key_line;
        return;
      case Key::weight:
        rate_limit->weight = resolved.kind == Kind::null ? std::nullopt : std::optional(weight(map, scalar, resolved));
        rate_limit->weight_line = map.key_line;
        return;
      default:
        return;
    }
  }

  // A uint32, as yaml.v2 decodes one: a whole number from 0 to 4294967295 (a float that is one is
  // taken too, though validateYamlKeys refuses floats), or null for 0.
  std::uint32_t requestsPerUnit(const Frame& map, const Scalar& scalar, const Resolved& resolved) {
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
    (void)map;
    refuse(scalar.line, "requests_per_unit is a whole number, not " + described(scalar, resolved) +
                            (scalar.style == ScalarStyle::plain ? "" : ": write it without quotes"));
  }

  std::int64_t weight(const Frame& map, const Scalar& scalar, const Resolved& resolved) {
    (void)map;
    const std::string saying = "weight " + std::string(scalar.text);
    if (resolved.kind != Kind::integer) refuse(scalar.line, saying + " is not a whole number");
    if (resolved.integer < 0) refuse(scalar.line, saying + " is negative");
    if (resolved.integer == 0) refuse(scalar.line, "weight is 0: it must be at least 1");
    return resolved.integer;
  }

  // ----- maps and lists

  Place placeOfChild(Frame& top, bool is_map, int line) {
    const char* kind = is_map ? "a map" : "a list";
    switch (top.place) {
      case Place::document:
        if (!is_map) refuse(line, "the file is a list: a file is a map of domain and descriptors");
        return Place::file;
      case Place::descriptors:
        if (!is_map) refuse(line, "descriptors holds a list, which is not a descriptor (a map)");
        return Place::descriptor;
      case Place::replaces:
        if (!is_map) refuse(line, "replaces holds a list, which is not a replaces entry (a map: {name: ...})");
        return Place::replaces_entry;
      case Place::metadata:
        return Place::metadata;
      case Place::skipped:
        return Place::skipped;
      case Place::ignored:
        if (!top.is_map && !is_map) {
          defer(top, Key::none, line, "a list here holds a list: envoyproxy/ratelimit's lists hold maps only");
          return Place::skipped;
        }
        return top.is_map && top.value == Frame::Value::skipped ? Place::skipped : Place::ignored;
      default:
        break;
    }
    if (top.value == Frame::Value::skipped) return Place::skipped;
    if (top.value == Frame::Value::ignored) return Place::ignored;
    switch (top.key) {
      case Key::descriptors: {
        if (is_map) refuseType(top, "a list of descriptors, not a map");
        WrittenDescriptor& parent = written_[top.place == Place::file ? 0 : top.descriptor];
        parent.first_child = parent.last_child = kNone;
        return Place::descriptors;
      }
      case Key::rate_limit: {
        if (!is_map) refuseType(top, "a map (unit and requests_per_unit, or unlimited: true), not a list");
        WrittenRateLimit& rate_limit = rate_limits_[top.level];
        if (!rate_limit.present) {
          rate_limit = WrittenRateLimit{};
          rate_limit.present = true;
          rate_limit.line = top.key_line;
        }
        return Place::rate_limit;
      }
      case Key::replaces:
        if (is_map) refuseType(top, "a list of {name: ...}, not a map");
        rate_limits_[top.level].replaces.clear();
        return Place::replaces;
      case Key::metadata:
        if (!is_map) refuseType(top, "a map, not a list");
        return Place::metadata;
      default:
        refuseType(top, std::string("a single word or number, not ") + kind);
    }
  }

  void startDescriptor(Frame& list, Frame& descriptor) {
    if (++descriptors_read_ > kMostDescriptors) {
      refuse(descriptor.line, "more than " + std::to_string(kMostDescriptors) + " descriptors in one file");
    }
    if (list.level > kMostLevels) {
      refuse(descriptor.line, "descriptors nested more than " + std::to_string(kMostLevels) +
                                  " levels deep (a YAML alias that holds itself?)");
    }
    const std::uint32_t parent = list.descriptor == kNone ? 0 : list.descriptor;
    const auto index = static_cast<std::uint32_t>(written_.size());
    written_.emplace_back();
    written_.back().line = descriptor.line;
    WrittenDescriptor& owner = written_[parent];
    if (owner.last_child == kNone) {
      owner.first_child = index;
    } else {
      written_[owner.last_child].next = index;
    }
    owner.last_child = index;
    descriptor.descriptor = index;
    descriptor.level = list.level;
    rate_limits_[list.level] = WrittenRateLimit{};
  }

  void finishDescriptor(Frame& frame) {
    WrittenDescriptor& descriptor = written_[frame.descriptor];
    written_text_ += descriptor.key.size() + descriptor.value.size();
    if (descriptor.key.empty()) defer(frame, Key::none, frame.line, "a descriptor has no key, or an empty one");
    if (descriptor.share_threshold && descriptor.key.find('*') == std::string::npos &&
        descriptor.value.find('*') == std::string::npos) {
      defer(frame, Key::none, frame.line,
            "share_threshold: true needs a pattern, a value with '*', and key " + inQuotes(descriptor.key) +
                (descriptor.value.empty() ? " has no value" : " has the value " + inQuotes(descriptor.value)));
    }
    WrittenRateLimit& written = rate_limits_[frame.level];
    if (!written.present) return;
    std::optional<Rule> rule = makeRule(frame, written);
    written = WrittenRateLimit{};
    if (!rule) return;
    rule->shadow_mode = descriptor.shadow_mode;
    rule->quota_mode = descriptor.quota_mode;
    rule->detailed_metric = descriptor.detailed_metric;
    descriptor.rule = domain_.rules.keepRule(std::move(*rule));
  }

  // The rule a rate_limit makes, checked as envoyproxy/ratelimit checks it, then as swl can keep it.
  std::optional<Rule> makeRule(Frame& frame, WrittenRateLimit& written) {
    Rule rule;
    rule.name = std::move(written.name);
    rule.source.line = written.line;
    const UnitInfo* unit = unitNamed(written.unit);
    const auto refuseHere = [&](int line, std::string why) {
      defer(frame, Key::none, line, std::move(why));
      return std::optional<Rule>();
    };
    for (auto& [name, line] : written.replaces) {
      if (name.empty()) return refuseHere(line, "a replaces entry has no name, or an empty one");
      if (name == rule.name) return refuseHere(line, "a rate_limit cannot replace itself (" + inQuotes(name) + ")");
      rule.replaces.push_back(std::move(name));
    }
    if (written.unlimited) {
      if (unit) {
        return refuseHere(written.unit_line,
                          "unlimited: true takes no unit: nothing is counted (envoyproxy/ratelimit refuses it too)");
      }
      for (const auto& [given, line] : {std::pair{written.algorithm.has_value(), written.algorithm_line},
                                        std::pair{written.calendar.has_value(), written.calendar_line},
                                        std::pair{written.time_zone.has_value(), written.time_zone_line},
                                        std::pair{written.weight.has_value(), written.weight_line}}) {
        if (given) {
          return refuseHere(line,
                            "unlimited: true takes no algorithm, calendar, time_zone or weight: nothing is counted");
        }
      }
      if (written.unit_line != 0 || written.requests_line != 0) {
        warn(written.unit_line != 0 ? written.unit_line : written.requests_line,
             "unlimited: true ignores unit and requests_per_unit, as envoyproxy/ratelimit does");
      }
      rule.unlimited = true;
      return rule;
    }
    if (!unit) {
      if (written.unit.empty()) {
        return refuseHere(written.line,
                          "rate_limit has no unit (second, minute, hour, day, week, month or year), "
                          "or an empty one (or say unlimited: true)");
      }
      return refuseHere(written.unit_line,
                        "unknown unit " + inQuotes(written.unit) + " (second, minute, hour, day, week, month or year)");
    }
    rule.unit = unit->unit;
    rule.limit = Limit{static_cast<std::int64_t>(written.requests_per_unit), unit->length};
    if (written.weight) {
      rule.weight = *written.weight;
      if (rule.limit.max_requests > 0 && rule.weight > rule.limit.max_requests) {
        return refuseHere(written.weight_line,
                          "weight " + std::to_string(rule.weight) + " is above requests_per_unit " +
                              std::to_string(rule.limit.max_requests) + ": no hit could ever be allowed");
      }
    }
    if (written.time_zone && !written.calendar.value_or(false)) {
      return refuseHere(written.time_zone_line, "time_zone is only for calendar: true");
    }
    rule.calendar = written.calendar.value_or(false);
    if (rule.calendar) {
      if (rule.unit < Unit::day) {
        return refuseHere(written.calendar_line, "calendar periods are days, weeks, months or years, and " +
                                                     std::string(unit->name) + " is none of them");
      }
      rule.time_zone = written.time_zone.value_or("UTC");
      if (rule.time_zone.empty()) return refuseHere(written.time_zone_line, "time_zone is empty");
    }
    rule.algorithm = rule.calendar ? Algorithm::fixed_window : Algorithm::sliding_window_log;
    if (written.algorithm) {
      const std::string& name = *written.algorithm;
      const auto known = std::find_if(kAlgorithms.begin(), kAlgorithms.end(),
                                      [&](const AlgorithmName& candidate) { return candidate.name == name; });
      if (known == kAlgorithms.end()) {
        return refuseHere(written.algorithm_line,
                          "unknown algorithm " + inQuotes(name) + " (sliding_window_log, gcra or fixed_window)");
      }
      if (rule.calendar && known->algorithm != Algorithm::fixed_window) {
        return refuseHere(written.algorithm_line, "calendar periods are counted as fixed windows: algorithm " + name +
                                                      " cannot keep them (say fixed_window, or leave algorithm out)");
      }
      rule.algorithm = known->algorithm;
    }
    // A limit of 0 refuses every hit and never asks Redis: no algorithm keeps it, so none checks it.
    if (rule.limit.max_requests == 0) return rule;
    try {
      switch (rule.algorithm) {
        case Algorithm::sliding_window_log:
          SlidingWindowLog::check(rule.limit);
          break;
        case Algorithm::gcra:
          Gcra::check(rule.limit);
          break;
        case Algorithm::fixed_window:
          FixedWindow::check(rule.limit);
          break;
      }
    } catch (const InvalidArgument& refusal) {
      return refuseHere(written.algorithm ? written.algorithm_line : written.requests_line, refusal.what());
    }
    return rule;
  }

  // ----- 4. the domain's tree

  Domain makeDomain() {
    Domain domain = std::move(domain_);
    domain.source = {file_, domain_line_};
    domain.rules.reserve(written_.size(), written_text_);
    std::string stats_key = domain.name;
    std::vector<PathStep> path;
    addChildren(domain.rules, RuleTree::kRoot, written_[0].first_child, stats_key, path);
    written_.clear();
    if (const auto repeat = domain.rules.arrange()) refuseRepeat(domain, *repeat);
    return domain;
  }

  void addChildren(RuleTree& tree, std::uint32_t parent, std::uint32_t first, std::string& stats_key,
                   std::vector<PathStep>& path) {
    for (std::uint32_t at = first; at != kNone; at = written_[at].next) {
      WrittenDescriptor& descriptor = written_[at];
      const std::uint32_t node = tree.addNode(parent, descriptor.key, descriptor.value, file_, descriptor.line);
      const std::size_t stats_size = stats_key.size();
      stats_key.append(".").append(descriptor.key);
      if (!descriptor.value.empty()) stats_key.append("_").append(descriptor.value);
      path.push_back({std::move(descriptor.key), std::move(descriptor.value), descriptor.value_to_metric,
                      descriptor.share_threshold});
      if (descriptor.rule != kNone) {
        Rule& rule = tree.setRule(node, descriptor.rule);
        rule.stats_key = stats_key;
        rule.path = path;
        rule.source.file = file_;
      }
      addChildren(tree, node, descriptor.first_child, stats_key, path);
      path.pop_back();
      stats_key.resize(stats_size);
    }
  }

  [[noreturn]] static void refuseRepeat(const Domain& domain, const RuleTree::Repeat& repeat) {
    throw ConfigError(repeatMessage(domain.name, domain.rules, repeat));
  }

  const std::string& file_;
  std::vector<Frame> frames_;
  // Deques: they grow without moving what they hold, so a large file is never held twice.
  std::deque<WrittenDescriptor> written_;
  std::size_t written_text_ = 0;               // the keys' and values' bytes
  std::vector<WrittenRateLimit> rate_limits_;  // the open descriptors' rate_limits, by level
  std::vector<std::string> warnings_;
  std::size_t warnings_dropped_ = 0;
  std::size_t descriptors_read_ = 0;
  Domain domain_;
  int domain_line_ = 1;
  bool has_domain_ = false;
};

// ---------------------------------------------------------------------------------------------------
// 2b. yaml-cpp's events, with aliases replayed and merge keys expanded, into the Reader.

enum class EventKind : std::uint8_t { scalar, null, alias, sequence_start, sequence_end, map_start, map_end };

// An event kept for later: the nodes that anchors name, and the list of maps a merge key takes.
struct StoredEvent {
  EventKind kind;
  int line;
  ScalarStyle style = ScalarStyle::plain;
  YAML::anchor_t anchor = 0;  // an alias's
  std::string text;
  std::string tag;
};

struct EventView {
  EventView(EventKind kind, int line, ScalarStyle style = ScalarStyle::plain, YAML::anchor_t anchor = 0,
            std::string_view text = {}, std::string_view tag = {})
      : kind(kind), line(line), style(style), anchor(anchor), text(text), tag(tag) {}

  EventKind kind;
  int line;
  ScalarStyle style;
  YAML::anchor_t anchor;
  std::string_view text;
  std::string_view tag;
};

EventView viewOf(const StoredEvent& event) {
  return {event.kind, event.line, event.style, event.anchor, event.text, event.tag};
}

bool starts(EventKind kind) { return kind == EventKind::sequence_start || kind == EventKind::map_start; }
bool ends(EventKind kind) { return kind == EventKind::sequence_end || kind == EventKind::map_end; }

class YamlEvents : public YAML::EventHandler {
 public:
  YamlEvents(Reader& reader, std::string_view text) : reader_(reader), text_(text) {}

  // Where the last quoted or block scalar of the text starts (0 if none): yaml-cpp 0.7 takes a quoted
  // scalar that the text ends in before its closing quote, which yaml.v2 refuses.
  std::size_t lastQuoted() const noexcept { return last_quoted_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnAnchor(const YAML::Mark&, const std::string& name) override { anchor_name_ = name; }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    live({EventKind::null, lineBefore(mark)}, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    live({EventKind::alias, mark.line + 1, ScalarStyle::plain, anchor}, 0);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    // yaml-cpp marks an untagged plain scalar "?" and an untagged quoted or block one "!".
    const ScalarStyle style = tag == "?" ? ScalarStyle::plain : tag == "!" ? ScalarStyle::quoted : ScalarStyle::tagged;
    if (style != ScalarStyle::plain)
      last_quoted_ = std::max<std::size_t>(last_quoted_, static_cast<std::size_t>(mark.pos));
    live({EventKind::scalar, mark.line + 1, style, 0, value, tag}, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    live({EventKind::sequence_start, mark.line + 1}, anchor);
  }
  void OnSequenceEnd() override { live({EventKind::sequence_end, 0}, 0); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    live({EventKind::map_start, mark.line + 1}, anchor);
  }
  void OnMapEnd() override { live({EventKind::map_end, 0}, 0); }

 private:
  struct Anchored {
    std::size_t begin = 0;
    std::size_t end = 0;
    bool complete = false;
    std::string name;
  };
  // A map or list being delivered; a merged one (the value of `<<`) is not shown to the reader.
  struct Open {
    bool merged;
  };
  enum class Merge : std::uint8_t { none, value, element };

  // An event as yaml-cpp reports it: kept if an anchor is open around it, then delivered.
  void live(const EventView& event, YAML::anchor_t anchor) {
    if (anchor != 0) {
      if (anchors_.size() <= anchor) anchors_.resize(anchor + 1);
      anchors_[anchor] = Anchored{recorded_.size(), 0, false, std::move(anchor_name_)};
      if (starts(event.kind)) open_anchors_.emplace_back(anchor, live_depth_ + 1);
    }
    if (starts(event.kind)) ++live_depth_;
    if (!open_anchors_.empty() || anchor != 0) {
      recorded_.push_back({event.kind, event.line, event.style, event.anchor, std::string(event.text),
                           event.style == ScalarStyle::tagged ? std::string(event.tag) : std::string()});
    }
    if (anchor != 0 && !starts(event.kind)) {
      anchors_[anchor].end = recorded_.size();
      anchors_[anchor].complete = true;
    }
    if (ends(event.kind)) {
      if (!open_anchors_.empty() && open_anchors_.back().second == live_depth_) {
        Anchored& closed = anchors_[open_anchors_.back().first];
        closed.end = recorded_.size();
        closed.complete = true;
        open_anchors_.pop_back();
      }
      --live_depth_;
    }
    deliver(event);
  }

  void deliver(const EventView& event) {
    if (capture_depth_ > 0) {
      capture(event);
      return;
    }
    switch (event.kind) {
      case EventKind::alias:
        // yaml.v2 merges an alias of a map, never of a list.
        if (merge_ == Merge::value) merge_ = Merge::element;
        replay(event);
        return;
      case EventKind::scalar:
      case EventKind::null: {
        if (merge_ != Merge::none) refuseMerge(event.line);
        if (event.kind == EventKind::scalar && event.style == ScalarStyle::plain && event.text == "<<" &&
            reader_.awaitsKey()) {
          merge_ = Merge::value;  // yaml.v2 merges the map (or maps) that follows into this one
          return;
        }
        Scalar scalar{event.text, event.line, event.style, event.tag, event.kind == EventKind::null};
        reader_.scalar(scalar, !open_.empty() && open_.back().merged);
        return;
      }
      case EventKind::map_start:
      case EventKind::sequence_start:
        if (open_.size() >= kMostYamlLevels) {
          reader_.refuse(event.line, "nested more than " + std::to_string(kMostYamlLevels) +
                                         " levels deep (maps and lists within each other, YAML aliases replayed)");
        }
        if (merge_ != Merge::none) {
          if (event.kind == EventKind::sequence_start && merge_ == Merge::value) {
            merge_ = Merge::none;
            capture_depth_ = 1;
            captured_.clear();
            return;
          }
          if (event.kind == EventKind::sequence_start) refuseMerge(event.line);
          merge_ = Merge::none;
          open_.push_back({true});
          return;
        }
        open_.push_back({false});
        reader_.start(event.kind == EventKind::map_start, event.line);
        return;
      case EventKind::map_end:
      case EventKind::sequence_end: {
        const bool merged = open_.back().merged;
        open_.pop_back();
        if (!merged) reader_.end();
        return;
      }
    }
  }

  // Replays the node an alias names, as if it were written here.
  void replay(const EventView& alias) {
    if (alias.anchor >= anchors_.size() || !anchors_[alias.anchor].complete) {
      reader_.refuse(alias.line, "the alias *" + (alias.anchor < anchors_.size() ? anchors_[alias.anchor].name : "") +
                                     " is inside the node it names: it would nest forever");
    }
    const Anchored& anchored = anchors_[alias.anchor];
    replayed_ += anchored.end - anchored.begin;
    if (replayed_ > kMostReplayedEvents) {
      reader_.refuse(alias.line, "YAML aliases here replay more than " + std::to_string(kMostReplayedEvents) +
                                     " nodes (aliases of aliases?)");
    }
    for (std::size_t at = anchored.begin; at < anchored.end; ++at) deliver(viewOf(recorded_[at]));
  }

  // The list after `<<`: kept whole, then merged from its last map to its first, so that the first
  // map's keys are the ones that stay (yaml.v2's order).
  void capture(const EventView& event) {
    if (starts(event.kind)) ++capture_depth_;
    if (ends(event.kind) && --capture_depth_ == 0) {
      std::vector<StoredEvent> list = std::move(captured_);
      captured_.clear();
      mergeList(list);
      return;
    }
    captured_.push_back(
        {event.kind, event.line, event.style, event.anchor, std::string(event.text), std::string(event.tag)});
  }

  void mergeList(const std::vector<StoredEvent>& list) {
    std::vector<std::pair<std::size_t, std::size_t>> items;
    for (std::size_t at = 0; at < list.size();) {
      std::size_t end = at + 1;
      if (starts(list[at].kind)) {
        for (int depth = 1; depth > 0; ++end) depth += starts(list[end].kind) ? 1 : ends(list[end].kind) ? -1 : 0;
      }
      items.emplace_back(at, end);
      at = end;
    }
    for (auto item = items.rbegin(); item != items.rend(); ++item) {
      const StoredEvent& first = list[item->first];
      if (first.kind != EventKind::map_start && first.kind != EventKind::alias) refuseMerge(first.line);
      merge_ = Merge::element;
      for (std::size_t at = item->first; at < item->second; ++at) deliver(viewOf(list[at]));
    }
  }

  [[noreturn]] void refuseMerge(int line) {
    reader_.refuse(line, "<< merges a map, an alias of one, or a list of them, into this map; this is none of them");
  }

  // yaml-cpp marks an empty node where the next token is, often on a later line: the line of what
  // comes before it (the `-` of an empty item) is the one to name.
  int lineBefore(const YAML::Mark& mark) const {
    std::size_t at = std::min(static_cast<std::size_t>(std::max(mark.pos, 0)), text_.size());
    const std::string_view here = text_.substr(at);
    for (const std::string_view written : {"~", "null", "Null", "NULL"}) {
      if (here.substr(0, written.size()) == written) return mark.line + 1;  // a null written as such
    }
    while (at > 0 && (text_[at - 1] == ' ' || text_[at - 1] == '\t' || text_[at - 1] == '\n' || text_[at - 1] == '\r'))
      --at;
    return at == 0 ? 1 : lineOfOffset(text_, at - 1);
  }

  Reader& reader_;
  std::string_view text_;
  std::vector<StoredEvent> recorded_;
  std::vector<Anchored> anchors_;  // by yaml-cpp's number
  std::vector<std::pair<YAML::anchor_t, int>> open_anchors_;
  std::string anchor_name_;
  int live_depth_ = 0;
  std::size_t replayed_ = 0;
  std::vector<Open> open_;
  Merge merge_ = Merge::none;
  int capture_depth_ = 0;
  std::vector<StoredEvent> captured_;
  std::size_t last_quoted_ = 0;
};

// Whether the quoted scalar that starts at `at` (its quote) is closed before the text ends. Only the
// last one can fail to be: an open quote takes everything after it.
bool closedQuote(std::string_view text, std::size_t at) {
  if (at >= text.size() || (text[at] != '\'' && text[at] != '"')) return true;  // a block scalar, or tagged
  const char quote = text[at];
  for (std::size_t next = at + 1; next < text.size(); ++next) {
    if (quote == '"' && text[next] == '\\') {
      ++next;
    } else if (text[next] == quote) {
      if (quote == '\'' && next + 1 < text.size() && text[next + 1] == '\'') {
        ++next;  // '' is a quote inside single quotes
      } else {
        return true;
      }
    }
  }
  return false;
}

// Stops yaml-cpp at the start of a second document: yaml.v2 reads the first only.
struct SecondDocument : YAML::EventHandler {
  struct Found {
    int line;
  };
  void OnDocumentStart(const YAML::Mark& mark) override { throw Found{mark.line + 1}; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// ---------------------------------------------------------------------------------------------------
// Files and directories.

std::string describe(const SourceLocation& source) { return source.file + ":" + std::to_string(source.line); }

std::string contentsOf(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file.string() + ": cannot be opened: " + std::strerror(errno));
  std::string contents;
  std::array<char, 1 << 16> chunk;
  while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0) {
    contents.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw ConfigError(file.string() + ": cannot be read: " + std::strerror(errno));
  return contents;
}

std::vector<std::filesystem::path> configFiles(const std::filesystem::path& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error) throw ConfigError(path.string() + ": " + error.message());
  if (!std::filesystem::is_directory(status)) return {path};
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator entry(path, error), end; !error && entry != end; entry.increment(error)) {
    const std::filesystem::path& file = entry->path();
    const std::string name = file.filename().string();
    if (name.empty() || name.front() == '.') continue;
    if (file.extension() != ".yaml" && file.extension() != ".yml") continue;
    // Through a link: a link that leads nowhere, or to itself, is named, never passed over.
    std::error_code kind_error;
    const std::filesystem::file_status kind = std::filesystem::status(file, kind_error);
    if (kind_error) throw ConfigError(file.string() + ": cannot be read: " + kind_error.message());
    if (std::filesystem::is_regular_file(kind)) files.push_back(file);
  }
  if (error) throw ConfigError(path.string() + ": " + error.message());
  if (files.empty()) throw ConfigError(path.string() + ": no *.yaml or *.yml file in this directory");
  std::sort(files.begin(), files.end());
  return files;
}

// goruntime's walk (filepath.Walk, which takes each entry as Lstat sees it): every file that is not a
// directory is read, through a link if it is one; a link to a directory is not walked into, and what
// cannot be read is passed over with a word. Dot-files and dot-directories are passed over on request,
// as Kubernetes' ConfigMap mounts need (their `..2024_...` directory holds every file a second time).
using PassedOver = std::vector<std::pair<std::filesystem::path, std::string>>;

void walkRuntime(const std::filesystem::path& directory, bool ignore_dot_files, PassedOver& passed_over,
                 std::vector<std::filesystem::path>& files, bool top = false) {
  std::error_code error;
  std::filesystem::directory_iterator entry(directory, error), end;
  for (; !error && entry != end; entry.increment(error)) {
    const std::filesystem::path& path = entry->path();
    if (ignore_dot_files && path.filename().string().rfind('.', 0) == 0) continue;
    std::error_code kind_error;
    const std::filesystem::file_status own = entry->symlink_status(kind_error);
    if (!kind_error && std::filesystem::is_directory(own)) {
      walkRuntime(path, ignore_dot_files, passed_over, files);
      continue;
    }
    const std::filesystem::file_status through = std::filesystem::status(path, kind_error);
    if (kind_error) {
      passed_over.emplace_back(path, kind_error.message() + " (envoyproxy/ratelimit's runtime passes over it too)");
    } else if (std::filesystem::is_directory(through)) {
      passed_over.emplace_back(path, "a link to a directory, which the runtime does not walk into");
    } else if (!std::filesystem::is_regular_file(through)) {
      passed_over.emplace_back(path, "not a regular file");
    } else {
      files.push_back(path);
    }
  }
  if (error && top) throw ConfigError(directory.string() + ": " + error.message());
  if (error) passed_over.emplace_back(directory, "not read whole: " + error.message());
}

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

Domain parseDomain(std::string_view yaml, const std::string& file) {
  std::string converted;
  const std::string_view text = checkedText(yaml, converted, file);
  TextBuffer buffer(text);
  std::istream stream(&buffer);
  Reader reader(file);
  YamlEvents events(reader, text);
  try {
    YAML::Parser parser(stream);
    const auto refuseOpenQuote = [&] {
      if (!closedQuote(text, events.lastQuoted())) {
        reader.refuse(lineOfOffset(text, events.lastQuoted()),
                      "not valid YAML: a quoted text starts here and is never closed");
      }
    };
    try {
      if (!parser.HandleNextDocument(events)) reader.refuse(1, "the file is empty: it must name its domain");
    } catch (const ConfigError&) {
      refuseOpenQuote();  // what the reader refused is what yaml-cpp made of the open quote
      throw;
    }
    refuseOpenQuote();
    Domain domain = reader.finish();
    domain.warnings = reader.takeWarnings();
    try {
      SecondDocument second;
      parser.HandleNextDocument(second);
    } catch (const SecondDocument::Found& found) {
      domain.warnings.push_back(lineAt(file, found.line) +
                                "a second YAML document: ignored, as envoyproxy/ratelimit reads the first only");
    } catch (const YAML::Exception&) {
      // What follows the first document is not read, so neither is it refused.
    }
    return domain;
  } catch (const YAML::DeepRecursion& error) {
    throw ConfigError(lineAt(file, error.mark.line + 1) +
                      "nested too deep for the YAML parser (maps and lists within "
                      "each other, past " +
                      std::to_string(kMostYamlLevels) + " levels)");
  } catch (const YAML::Exception& error) {
    throw ConfigError(lineAt(file, error.mark.line + 1) + "not valid YAML: " + error.msg);
  }
}

Configuration loadConfiguration(const std::filesystem::path& path, bool merge_domains) {
  Configuration configuration;
  for (const std::filesystem::path& file : configFiles(path)) {
    configuration.add(parseDomain(contentsOf(file), file.string()), merge_domains);
  }
  return configuration;
}

Configuration loadRuntimeConfiguration(const std::filesystem::path& directory, bool ignore_dot_files,
                                       bool merge_domains) {
  std::error_code error;
  if (!std::filesystem::is_directory(directory, error)) {
    throw ConfigError(directory.string() + ": " + (error ? error.message() : std::string("not a directory")));
  }
  Configuration configuration;
  std::vector<std::filesystem::path> files;
  PassedOver passed_over;
  walkRuntime(directory, ignore_dot_files, passed_over, files, true);
  std::sort(passed_over.begin(), passed_over.end());
  for (const auto& [path, why] : passed_over) configuration.warn(path.string() + ": not read: " + why);
  std::sort(files.begin(), files.end());
  for (const std::filesystem::path& file : files) {
    std::string contents;
    try {
      contents = contentsOf(file);
    } catch (const ConfigError& unreadable) {
      configuration.warn(std::string(unreadable.what()) +
                         " (not read: envoyproxy/ratelimit's runtime passes over it too)");
      continue;
    }
    configuration.add(parseDomain(contents, file.string()), merge_domains);
  }
  return configuration;
}

void returnFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace swl::ratelimit

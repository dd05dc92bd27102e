// libyaml's refusals as swl-ratelimit says them. Its reader checks the bytes (libyaml's reader.c, as
// yaml.v2's readerc.go): UTF-8 or UTF-16 with its byte order mark, of the characters YAML allows; its
// scanner and parser check the YAML. The reader reads ahead in blocks of 16 kB, so a wrong byte in the
// block being read is refused before a YAML error in it, and a byte past the first document's block is
// read only as far as the start of a second document; yaml.v2 too reads no further than it needs.

#include <ratelimit/config/error.hpp>
#include <ratelimit/config/yaml/parser.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <sstream>
#include <string>
#include <string_view>

namespace swl::ratelimit::yaml {

namespace {

bool isUtf16(std::string_view text) {
  return text.size() >= 2 && ((text[0] == '\xFF' && text[1] == '\xFE') || (text[0] == '\xFE' && text[1] == '\xFF'));
}

// The line (from 1) of the byte at `offset`: its UTF-16 units or its bytes that are a line feed before it.
int lineOfOffset(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  if (!isUtf16(text)) {
    return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
  }
  const bool big_endian = text[0] == '\xFE';
  int line = 1;
  for (std::size_t at = 2; at + 1 < offset; at += 2) {
    const char high = text[at + (big_endian ? 0 : 1)];
    const char low = text[at + (big_endian ? 1 : 0)];
    line += high == '\0' && low == '\n' ? 1 : 0;
  }
  return line;
}

std::string hexByte(unsigned char byte) {
  static constexpr char kDigits[] = "0123456789abcdef";
  return std::string("0x") + kDigits[byte >> 4] + kDigits[byte & 15];
}

std::string codePoint(int code) {
  std::ostringstream text;
  text << "U+" << std::uppercase << std::hex << code;
  return text.str();
}

// The first byte of the UTF-8 character whose byte at `offset` libyaml refused: the byte itself, or for
// a trailing byte that is not one, the character's first byte before it.
unsigned char leadingByte(std::string_view text, std::size_t offset, bool trailing) {
  if (offset >= text.size()) return 0;
  std::size_t at = offset;
  if (trailing) {
    while (at > 0 && (static_cast<unsigned char>(text[at - 1]) & 0xC0) == 0x80) --at;
    if (at > 0) --at;
  }
  return static_cast<unsigned char>(text[at]);
}

// What the reader refused, in our words; empty for a refusal of its own to say as libyaml says it.
std::string bytesRefusal(std::string_view text, std::string_view problem, std::size_t offset, int value) {
  const std::string utf8_only = "): envoyproxy/ratelimit reads UTF-8 only";
  if (problem == "invalid leading UTF-8 octet") {
    return "not UTF-8 (the byte " + hexByte(static_cast<unsigned char>(value)) + utf8_only;
  }
  if (problem == "incomplete UTF-8 octet sequence" || problem == "invalid trailing UTF-8 octet") {
    return "not UTF-8 (the byte " + hexByte(leadingByte(text, offset, problem != "incomplete UTF-8 octet sequence")) +
           " starts a character that is not finished" + utf8_only;
  }
  if (!isUtf16(text) && (problem == "invalid length of a UTF-8 sequence" || problem == "invalid Unicode character")) {
    return "not UTF-8 (an encoding UTF-8 forbids, from the byte " + hexByte(leadingByte(text, offset, false)) +
           utf8_only;
  }
  if (problem == "control characters are not allowed") {
    return "the character " + codePoint(value) + ", which YAML does not allow (a control character)";
  }
  if (problem == "incomplete UTF-16 character") return "the UTF-16 text ends in half a character";
  if (problem == "unexpected low surrogate area") return "not UTF-16: a low surrogate with no high one before it";
  if (problem == "incomplete UTF-16 surrogate pair" || problem == "expected low surrogate area") {
    return "not UTF-16: a high surrogate with no low one after it";
  }
  return {};
}

}  // namespace

Parser::Parser(std::string_view text, const std::string& file) : text_(text), file_(file) {
  if (yaml_parser_initialize(&parser_) == 0) throw std::bad_alloc();
  // libyaml asserts a text, even an empty one; yaml.v2 reads an empty one as a lone line break.
  const char* bytes = text.data() != nullptr ? text.data() : "";
  yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(bytes), text.size());
}

void Parser::refuse() const {
  if (parser_.error == YAML_MEMORY_ERROR) throw std::bad_alloc();
  if (parser_.error == YAML_READER_ERROR) refuseBytes();
  const std::string problem = parser_.problem != nullptr ? parser_.problem : "a text the YAML parser cannot read";
  const int line = static_cast<int>(parser_.problem_mark.line) + 1;
  if (parser_.context == nullptr) throw ConfigError(lineAt(file_, line) + "not valid YAML: " + problem);
  const std::string context = parser_.context;
  const int context_line = static_cast<int>(parser_.context_mark.line) + 1;
  // An open quote takes the rest of the file: where it starts is the line to name, not the file's end.
  if (context == "while scanning a quoted scalar" && problem == "found unexpected end of stream") {
    throw ConfigError(lineAt(file_, context_line) + "not valid YAML: a quoted text starts here and is never closed");
  }
  throw ConfigError(lineAt(file_, line) + "not valid YAML: " + problem + " (" + context +
                    (context_line == line ? "" : " started at line " + std::to_string(context_line)) + ")");
}

void Parser::refuseBytes() const {
  const std::string problem = parser_.problem != nullptr ? parser_.problem : "a text the YAML reader cannot read";
  const std::string said = bytesRefusal(text_, problem, parser_.problem_offset, parser_.problem_value);
  throw ConfigError(lineAt(file_, lineOfOffset(text_, parser_.problem_offset)) +
                    (said.empty() ? "not valid YAML: " + problem : said));
}

}  // namespace swl::ratelimit::yaml

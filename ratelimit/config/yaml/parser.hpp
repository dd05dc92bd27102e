#pragma once
/// \file
/// libyaml's parser and its events, each freed when it goes, and what libyaml refuses said as a
/// ConfigError "file:line: ...". yaml.v2 is a port of libyaml: both refuse the same text, in the same
/// words, and both read a file's bytes through the same reader, which refuses any byte that is not UTF-8
/// (or UTF-16 with its byte order mark) of a character YAML allows, even in a comment. A domain, key or
/// value in any other encoding could never match Envoy's strings, which are UTF-8. The reader's
/// refusals are said in our words (parser.cpp), at the line of the byte.

#include <yaml.h>

#include <string>
#include <string_view>

namespace swl::ratelimit::yaml {

/// One of libyaml's events, freed when it goes (or when Parser::next fills it again).
class Event {
 public:
  Event() noexcept = default;
  ~Event() { yaml_event_delete(&event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  const yaml_event_t& operator*() const noexcept { return event_; }
  const yaml_event_t* operator->() const noexcept { return &event_; }

 private:
  friend class Parser;
  yaml_event_t event_{};
};

/// libyaml's parser over a text (not copied: it must outlive the parser), freed when it goes.
class Parser {
 public:
  /// `file` names the text in messages.
  Parser(std::string_view text, const std::string& file);
  ~Parser() { yaml_parser_delete(&parser_); }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  /// The next event, into `event`. Past the stream's end, an event of type YAML_NO_EVENT. Text libyaml
  /// refuses is a ConfigError at the line it found it.
  void next(Event& event) {
    if (!tryNext(event)) refuse();
  }

  /// As next, but false where next refuses.
  bool tryNext(Event& event) noexcept {
    yaml_event_delete(&event.event_);
    return yaml_parser_parse(&parser_, &event.event_) != 0 && parser_.error == YAML_NO_ERROR;
  }

 private:
  [[noreturn]] void refuse() const;
  [[noreturn]] void refuseBytes() const;

  yaml_parser_t parser_;
  std::string_view text_;
  const std::string& file_;
};

}  // namespace swl::ratelimit::yaml

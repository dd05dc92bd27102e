#pragma once
/// \file
/// The first YAML document of a text, as envoyproxy/ratelimit's loader (gopkg.in/yaml.v2) sees it, as a
/// stream of maps, lists and scalars for a Handler. The parser is libyaml's, which yaml.v2 is a port of:
/// it refuses the text yaml.v2 refuses, in the same words, at the line of the problem (yaml.v2 counts a
/// parser error's line from 0, a scanner error's from 1). On top of it, YAML 1.1's aliases are replayed
/// where they are written and merge keys (`<<`) expanded in yaml.v2's order, so that the Handler never
/// sees either; no tree of nodes is ever built. Of several documents, the first is read and the start of
/// the second is reported, as yaml.v2 reads the first only.
///
///   struct Printer : yaml::Handler { ... };
///   Printer printer;
///   const yaml::FirstDocument read = yaml::readFirstDocument(text, "a.yaml", printer);
///
/// Everything refused is a ConfigError "file:line: ...": bytes or text that are not YAML (parser.hpp), an alias of no
/// anchor or of the node it is in, a merge of what is not a map, nesting past kMostYamlLevels, aliases that replay more
/// than kMostReplayedEvents events.

#include <ratelimit/config/error.hpp>
#include <ratelimit/config/yaml/parser.hpp>
#include <ratelimit/config/yaml/scalar.hpp>

#include <yaml.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace swl::ratelimit::yaml {

/// Past these a text is refused. yaml.v2 has no such limits, but aliases can make a tree of any size (or
/// a cycle) from a few lines; no real file comes close.
inline constexpr std::size_t kMostYamlLevels = 200;            // maps and lists within each other, aliases replayed
inline constexpr std::size_t kMostReplayedEvents = 4'000'000;  // what aliases add, beyond the text itself

/// What the document's nodes are delivered to, in the order they are written, aliases replayed and
/// merge keys expanded: a map or a list is start, what it holds, end; a map holds a key, then its value,
/// and so on. A merged map (the value of `<<`) is not started or ended: its keys and values are
/// delivered as the merging map's own, from the merge's last map to its first (the first's keys are the
/// ones that stay, as a key given twice keeps its last value).
class Handler {
 public:
  virtual ~Handler() = default;
  /// A scalar. `merged`: it is a key or a value of a map merged in by `<<`.
  virtual void scalar(const Scalar& scalar, bool merged) = 0;
  /// A map (`is_map`) or a list starts at `line`.
  virtual void start(bool is_map, int line) = 0;
  /// The innermost map or list started ends.
  virtual void end() = 0;
};

/// An event of the document's node, as Events takes it: the parser's, or one kept for a replay.
enum class EventKind : std::uint8_t { scalar, alias, sequence_start, sequence_end, map_start, map_end };

struct EventView {
  EventView(EventKind kind, int line, ScalarStyle style = ScalarStyle::plain, std::string_view text = {},
            std::string_view tag = {}, std::size_t anchor = 0)
      : kind(kind), line(line), style(style), text(text), tag(tag), anchor(anchor) {}

  EventKind kind;
  int line;
  ScalarStyle style;
  std::string_view text;  // a scalar's; an alias's name
  std::string_view tag;   // a scalar's explicit tag, resolved ("tag:yaml.org,2002:int", "!")
  std::size_t anchor;     // an alias's: the anchor it names, by Events' number (Events::take sets it)
};

/// Aliases replayed and merge keys expanded, into a Handler: take each event of the document's node.
class Events {
 public:
  /// `file` names the text in messages.
  Events(Handler& handler, const std::string& file) : handler_(handler), file_(file) {}

  /// One event as the parser gives it, and the name of the anchor it defines (empty: none).
  void take(EventView event, std::string_view anchor) {
    if (event.kind == EventKind::alias) event.anchor = anchorNamed(event.text, event.line);
    const bool anchored = !anchor.empty();
    if (anchored) {
      // As in yaml.v2, a name given again names the later node from here on.
      named_[std::string(anchor)] = anchors_.size();
      anchors_.push_back(Anchored{recorded_.size(), 0, false, std::string(anchor)});
      if (starts(event.kind)) open_anchors_.emplace_back(anchors_.size() - 1, live_depth_ + 1);
    }
    if (starts(event.kind)) ++live_depth_;
    if (!open_anchors_.empty() || anchored) recorded_.push_back(stored(event));
    if (anchored && !starts(event.kind)) {
      anchors_.back().end = recorded_.size();
      anchors_.back().complete = true;
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

 private:
  // An event kept for later: the nodes that anchors name, and the list of maps a merge key takes.
  struct StoredEvent {
    EventKind kind;
    int line;
    ScalarStyle style;
    std::size_t anchor;
    std::string text;
    std::string tag;
  };
  struct Anchored {
    std::size_t begin = 0;  // in recorded_
    std::size_t end = 0;
    bool complete = false;
    std::string name;
  };
  // A map or list being delivered; a merged one (the value of `<<`) is not shown to the handler.
  struct Open {
    bool is_map;
    bool merged;
    bool awaiting_key;  // a map's: whether the next node is a key
  };
  enum class Merge : std::uint8_t { none, value, element };

  static bool starts(EventKind kind) { return kind == EventKind::sequence_start || kind == EventKind::map_start; }
  static bool ends(EventKind kind) { return kind == EventKind::sequence_end || kind == EventKind::map_end; }

  static StoredEvent stored(const EventView& event) {
    return {event.kind,
            event.line,
            event.style,
            event.anchor,
            std::string(event.text),
            event.style == ScalarStyle::plain ? std::string() : std::string(event.tag)};
  }
  static EventView viewOf(const StoredEvent& event) {
    return {event.kind, event.line, event.style, event.text, event.tag, event.anchor};
  }

  // yaml.v2's isMerge: `<<` as a key, untagged and unquoted, tagged `!`, or tagged !!merge.
  static bool isMergeKey(const EventView& event) {
    return event.text == "<<" &&
           (event.style == ScalarStyle::plain || event.tag == "!" || event.tag == "tag:yaml.org,2002:merge");
  }

  std::size_t anchorNamed(std::string_view name, int line) const {
    const auto found = named_.find(std::string(name));
    if (found == named_.end()) {
      throw ConfigError(lineAt(file_, line) + "not valid YAML: the alias *" + std::string(name) +
                        " names no anchor (&" + std::string(name) + ") written before it");
    }
    return found->second;
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
      case EventKind::scalar: {
        if (merge_ != Merge::none) refuseMerge(event.line);
        Open* map = !open_.empty() && open_.back().is_map ? &open_.back() : nullptr;
        const bool key = map != nullptr && map->awaiting_key;
        if (key && isMergeKey(event)) {
          map->awaiting_key = false;
          merge_ = Merge::value;  // yaml.v2 merges the map (or maps) that follows into this one
          return;
        }
        if (map != nullptr) map->awaiting_key = !key;
        handler_.scalar(Scalar{event.text, event.line, event.style, event.tag}, map != nullptr && map->merged);
        return;
      }
      case EventKind::map_start:
      case EventKind::sequence_start:
        if (open_.size() >= kMostYamlLevels) {
          throw ConfigError(lineAt(file_, event.line) + "nested more than " + std::to_string(kMostYamlLevels) +
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
          open_.push_back({true, true, true});
          return;
        }
        open_.push_back({event.kind == EventKind::map_start, false, true});
        handler_.start(event.kind == EventKind::map_start, event.line);
        return;
      case EventKind::map_end:
      case EventKind::sequence_end: {
        const bool merged = open_.back().merged;
        open_.pop_back();
        if (!merged) handler_.end();
        // The node was a value (a map or list as a key is the handler's to refuse): a key comes next,
        // and so after a merged map, whose keys were the merging map's own.
        if (!open_.empty() && open_.back().is_map) open_.back().awaiting_key = merged || !open_.back().awaiting_key;
        return;
      }
    }
  }

  // Replays the node an alias names, as if it were written here.
  void replay(const EventView& alias) {
    const Anchored& anchored = anchors_[alias.anchor];
    if (!anchored.complete) {
      throw ConfigError(lineAt(file_, alias.line) + "the alias *" + anchored.name +
                        " is inside the node it names: it would nest forever");
    }
    replayed_ += anchored.end - anchored.begin;
    if (replayed_ > kMostReplayedEvents) {
      throw ConfigError(lineAt(file_, alias.line) + "YAML aliases here replay more than " +
                        std::to_string(kMostReplayedEvents) + " nodes (aliases of aliases?)");
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
      if (!open_.empty()) open_.back().awaiting_key = true;
      return;
    }
    captured_.push_back(stored(event));
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

  [[noreturn]] void refuseMerge(int line) const {
    throw ConfigError(lineAt(file_, line) +
                      "<< merges a map, an alias of one, or a list of them, into this map; this is none of them");
  }

  Handler& handler_;
  const std::string& file_;
  std::vector<StoredEvent> recorded_;
  std::vector<Anchored> anchors_;                          // by Events' number, in the order defined
  std::unordered_map<std::string, std::size_t> named_;     // each name's latest anchor
  std::vector<std::pair<std::size_t, int>> open_anchors_;  // anchored maps and lists not ended, and their depth
  int live_depth_ = 0;
  std::size_t replayed_ = 0;
  std::vector<Open> open_;
  Merge merge_ = Merge::none;
  int capture_depth_ = 0;
  std::vector<StoredEvent> captured_;
};

/// What readFirstDocument found besides the first document's nodes.
struct FirstDocument {
  /// false: the text holds no document at all (it is empty, or comments only).
  bool found = false;
  /// Where a second document starts, or 0: it is not read, as yaml.v2 does not read it.
  int next_document_line = 0;
};

namespace events_detail {

inline std::string_view textOf(const yaml_char_t* text) {
  return text == nullptr ? std::string_view() : std::string_view(reinterpret_cast<const char*>(text));
}

inline int lineOf(const yaml_event_t& event) { return static_cast<int>(event.start_mark.line) + 1; }

// A scalar's style as yaml.v2 reads it: libyaml's plain_implicit (plain and untagged, or tagged `!`)
// is resolved, except that `!` makes text; any other tag says what the scalar is.
inline ScalarStyle styleOf(const yaml_event_t& event) {
  const auto& scalar = event.data.scalar;
  if (scalar.tag == nullptr) return scalar.style == YAML_PLAIN_SCALAR_STYLE ? ScalarStyle::plain : ScalarStyle::quoted;
  return textOf(scalar.tag) == "!" ? ScalarStyle::quoted : ScalarStyle::tagged;
}

}  // namespace events_detail

/// Reads the first YAML document of `text` (UTF-8, or UTF-16 with its byte order mark) into `handler`; `file` names
/// the text in messages. The text after the first document is not read (and so not refused), but for
/// the start of a second document.
inline FirstDocument readFirstDocument(std::string_view text, const std::string& file, Handler& handler) {
  using events_detail::lineOf;
  using events_detail::textOf;
  Parser parser(text, file);
  Event event;
  parser.next(event);  // the stream's start
  parser.next(event);
  if (event->type != YAML_DOCUMENT_START_EVENT) return {};
  Events events(handler, file);
  for (parser.next(event); event->type != YAML_DOCUMENT_END_EVENT; parser.next(event)) {
    const yaml_event_t& taken = *event;
    switch (taken.type) {
      case YAML_SCALAR_EVENT:
        events.take({EventKind::scalar, lineOf(taken), events_detail::styleOf(taken),
                     std::string_view(reinterpret_cast<const char*>(taken.data.scalar.value), taken.data.scalar.length),
                     textOf(taken.data.scalar.tag)},
                    textOf(taken.data.scalar.anchor));
        break;
      case YAML_ALIAS_EVENT:
        events.take({EventKind::alias, lineOf(taken), ScalarStyle::plain, textOf(taken.data.alias.anchor)}, {});
        break;
      case YAML_SEQUENCE_START_EVENT:
        events.take({EventKind::sequence_start, lineOf(taken)}, textOf(taken.data.sequence_start.anchor));
        break;
      case YAML_SEQUENCE_END_EVENT:
        events.take({EventKind::sequence_end, lineOf(taken)}, {});
        break;
      case YAML_MAPPING_START_EVENT:
        events.take({EventKind::map_start, lineOf(taken)}, textOf(taken.data.mapping_start.anchor));
        break;
      case YAML_MAPPING_END_EVENT:
        events.take({EventKind::map_end, lineOf(taken)}, {});
        break;
      default:  // libyaml ends a document before its stream: never here
        throw ConfigError(lineAt(file, lineOf(taken)) + "not valid YAML: the document ends before its nodes do");
    }
  }
  FirstDocument read{true, 0};
  if (parser.tryNext(event) && event->type == YAML_DOCUMENT_START_EVENT) read.next_document_line = lineOf(*event);
  return read;
}

}  // namespace swl::ratelimit::yaml

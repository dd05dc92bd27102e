#pragma once
/// \file
/// swl-ratelimit's log: one line per event on standard output, at four levels, as text for people or
/// as JSON lines for a log pipeline. The JSON names its fields as envoyproxy/ratelimit's LOG_FORMAT=json
/// does (`@timestamp`, `level`, `@message`), so the queries written for that server find ours.
///
///   2026-07-05T10:11:12.345678Z info swl-ratelimit: listening on 0.0.0.0:8081, 2 domain(s) from ...
///   {"@timestamp":"2026-07-05T10:11:12.345678Z","level":"info","@message":"swl-ratelimit: listening on ..."}

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace swl::ratelimit {

/// How much the log says: each level says what the ones before it say, and more.
enum class LogLevel {
  error,  ///< what stops the server, or fails a part of it
  warn,   ///< what an operator should look at: a configuration refused, a setting that does nothing here
  info,   ///< start, listeners, every configuration put in force (the default)
  debug,  ///< more than an operator needs
};

enum class LogFormat { text, json };

/// How much the log says, and how.
struct LogOptions {
  LogLevel level = LogLevel::info;
  LogFormat format = LogFormat::text;
};

/// The level a name gives, as envoyproxy/ratelimit's LOG_LEVEL (logrus) takes names, in any case:
/// panic, fatal and error are `error` here (the server has nothing to say that is more grave), warn or
/// warning, info, debug and trace (here `debug`).
inline std::optional<LogLevel> logLevelNamed(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (lower == "panic" || lower == "fatal" || lower == "error") return LogLevel::error;
  if (lower == "warn" || lower == "warning") return LogLevel::warn;
  if (lower == "info") return LogLevel::info;
  if (lower == "debug" || lower == "trace") return LogLevel::debug;
  return std::nullopt;
}

inline const char* nameOf(LogLevel level) {
  static constexpr const char* names[] = {"error", "warn", "info", "debug"};
  return names[static_cast<int>(level)];
}

/// One line of the log, without its newline: the time (UTC, RFC 3339, microseconds), the level and the
/// message. In JSON the message is escaped: a configuration's error may quote any byte of a file.
inline std::string logLine(LogFormat format, LogLevel level, std::chrono::system_clock::time_point time,
                           std::string_view message) {
  const auto since_epoch = std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch());
  const std::time_t seconds = static_cast<std::time_t>(since_epoch.count() / 1'000'000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char timestamp[40];
  const std::size_t length = std::strftime(timestamp, sizeof timestamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(timestamp + length, sizeof timestamp - length, ".%06dZ",
                static_cast<int>(since_epoch.count() % 1'000'000));
  if (format == LogFormat::text) return std::string(timestamp) + " " + nameOf(level) + " " + std::string(message);
  std::string line =
      std::string(R"({"@timestamp":")") + timestamp + R"(","level":")" + nameOf(level) + R"(","@message":")";
  for (const char c : message) {
    switch (c) {
      case '"':
        line += "\\\"";
        break;
      case '\\':
        line += "\\\\";
        break;
      case '\n':
        line += "\\n";
        break;
      case '\r':
        line += "\\r";
        break;
      case '\t':
        line += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          line += escaped;
        } else {
          line += c;
        }
    }
  }
  return line + "\"}";
}

/// The server's log, written from any thread: whole lines, never two interleaved.
class Log {
 public:
  explicit Log(LogOptions options = {}, std::ostream& out = std::cout)
      : level_(options.level), format_(options.format), out_(&out) {}

  bool says(LogLevel level) const noexcept { return level <= level_; }

  void write(LogLevel level, std::string_view message) {
    if (!says(level)) return;
    const std::string line = logLine(format_, level, std::chrono::system_clock::now(), message);
    const std::lock_guard<std::mutex> lock(mutex_);
    // Flushed at once: a supervisor, or a test, reads the lines as they come.
    *out_ << line << std::endl;
  }

  void error(std::string_view message) { write(LogLevel::error, message); }
  void warn(std::string_view message) { write(LogLevel::warn, message); }
  void info(std::string_view message) { write(LogLevel::info, message); }
  void debug(std::string_view message) { write(LogLevel::debug, message); }

 private:
  LogLevel level_;
  LogFormat format_;
  std::ostream* out_;
  std::mutex mutex_;
};

}  // namespace swl::ratelimit

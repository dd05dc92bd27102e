#pragma once
/// \file
/// The configuration watcher: a thread that waits on inotify for the configuration's files to change,
/// lets a burst of changes settle, and then reloads, as SIGHUP does. It sees what updates a
/// configuration in practice:
///
///   - a file written, created, removed or renamed over (an editor's save), in the directory or, for
///     envoyproxy's runtime directory, any directory under it (goruntime reads them all);
///   - a Kubernetes ConfigMap's update: the kubelet writes the files into a new `..2026_yy/`, points a
///     `..data_tmp` symlink at it and renames that over `..data`, to which `config.yaml -> ..data/config.yaml`
///     points: the rename is an event of the mounted directory itself;
///   - with envoyproxy's RUNTIME_WATCH_ROOT=true, the swap of the RUNTIME_ROOT symlink itself
///     (`ln -s new tmp && mv -T tmp current`), seen in its parent directory.
///
/// Which directories to watch is a function of the configuration's source (watchedDirectories), and when a burst has
/// settled is a part of its own (Settling): both without I/O. After each burst the watches are made
/// again, so that a directory that came (a ConfigMap's new `..2026_yy/`, the tree behind a swapped root)
/// is watched, and one that went is not.

#include <ratelimit/config/source.hpp>
#include <ratelimit/telemetry/log.hpp>

#include <swl/error.hpp>

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace swl::ratelimit {

/// A directory the watcher looks at: with `recursive`, every directory under it too (not through
/// symlinks); with `names`, only the changes of these entries of it count (the others may be anything:
/// /etc, say).
struct WatchedDirectory {
  std::filesystem::path directory;
  bool recursive = false;
  std::vector<std::string> names;
};

/// The directories whose changes reload the configuration `source` holds; `config_is_directory` says
/// what --config names. A --config file is watched by name in its directory, with `..data`, the
/// symlink a ConfigMap mount swaps.
inline std::vector<WatchedDirectory> watchedDirectories(const ConfigSource& source, bool config_is_directory) {
  const auto withoutTrailingSlash = [](std::filesystem::path path) {
    return path.has_filename() || !path.has_parent_path() ? path : path.parent_path();
  };
  const auto parentOf = [](const std::filesystem::path& path) {
    return path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  };
  if (source.runtime) {
    std::vector<WatchedDirectory> watched{{source.runtime->files(), true, {}}};
    if (source.runtime->watch_root) {
      const std::filesystem::path root = withoutTrailingSlash(source.runtime->root);
      watched.push_back({parentOf(root), false, {root.filename().string()}});
    }
    return watched;
  }
  if (config_is_directory) return {{source.path, false, {}}};
  const std::filesystem::path file = withoutTrailingSlash(source.path);
  return {{parentOf(file), false, {file.filename().string(), "..data"}}};
}

/// When a burst of changes has settled: `quiet` after the last change, and never later than `most`
/// after the first, so that a directory that never stops changing still reloads.
class Settling {
 public:
  using Clock = std::chrono::steady_clock;

  Settling(std::chrono::milliseconds quiet, std::chrono::milliseconds most) : quiet_(quiet), most_(most) {}

  void changed(Clock::time_point now) {
    if (!pending_) first_ = now;
    pending_ = true;
    last_ = now;
  }

  /// When to reload; none while nothing changed since the last reload.
  std::optional<Clock::time_point> due() const {
    if (!pending_) return std::nullopt;
    return std::min(last_ + quiet_, first_ + most_);
  }

  void reloaded() { pending_ = false; }

 private:
  std::chrono::milliseconds quiet_;
  std::chrono::milliseconds most_;
  bool pending_ = false;
  Clock::time_point first_{};
  Clock::time_point last_{};
};

/// A file descriptor, closed with its owner.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd = -1) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

class ConfigurationWatcher {
 public:
  /// How long a burst of changes must be quiet: a ConfigMap's update is a handful of events within
  /// milliseconds, and an editor's save a few more.
  static constexpr std::chrono::milliseconds kQuiet{200};
  /// The longest a burst may put a reload off.
  static constexpr std::chrono::milliseconds kMostDelay{2000};

  /// Watches `watched` from a thread of its own, and calls `reload` there once each burst of changes has
  /// settled. A directory that is not there is watched once it comes (after a change elsewhere).
  /// Throws swl::Error when inotify cannot be had.
  ConfigurationWatcher(std::vector<WatchedDirectory> watched, std::function<void()> reload, Log& log)
      : watched_(std::move(watched)),
        reload_(std::move(reload)),
        log_(&log),
        inotify_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)),
        stop_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (inotify_.get() < 0 || stop_.get() < 0) {
      throw Error(std::string("swl-ratelimit: cannot watch the configuration's files: ") + std::strerror(errno));
    }
    watchAgain();
    thread_ = std::thread([this] { run(); });
  }

  ~ConfigurationWatcher() {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto written = ::write(stop_.get(), &one, sizeof one);
    thread_.join();
  }

  ConfigurationWatcher(const ConfigurationWatcher&) = delete;
  ConfigurationWatcher& operator=(const ConfigurationWatcher&) = delete;

 private:
  static constexpr std::uint32_t kEvents = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE |
                                           IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

  // Which changes of one watched directory count: all, or those of these names.
  struct Counted {
    bool all = false;
    std::set<std::string> names;
  };

  void run() {
    Settling settling(kQuiet, kMostDelay);
    for (;;) {
      int timeout = -1;
      if (const auto due = settling.due()) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(*due - Settling::Clock::now());
        timeout = static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
      }
      pollfd waiting[2] = {{stop_.get(), POLLIN, 0}, {inotify_.get(), POLLIN, 0}};
      if (::poll(waiting, 2, timeout) < 0 && errno != EINTR) {
        log_->error(std::string("swl-ratelimit: the configuration is watched no more: ") + std::strerror(errno));
        return;
      }
      if (waiting[0].revents != 0) return;
      if (waiting[1].revents != 0 && readEvents()) settling.changed(Settling::Clock::now());
      const auto due = settling.due();
      if (due && Settling::Clock::now() >= *due) {
        settling.reloaded();
        watchAgain();
        reload_();
      }
    }
  }

  // Reads every event waiting; true when one of them counts.
  bool readEvents() {
    bool counts = false;
    alignas(inotify_event) char buffer[16 * 1024];
    for (;;) {
      const ssize_t length = ::read(inotify_.get(), buffer, sizeof buffer);
      if (length <= 0) return counts;  // EAGAIN: nothing more
      for (ssize_t at = 0; at < length;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        if (event->mask & IN_Q_OVERFLOW) {
          counts = true;  // events were lost: any of them may have counted
          continue;
        }
        if (event->mask & IN_IGNORED) continue;  // a watch went with its directory; the next burst watches again
        const auto found = counted_.find(event->wd);
        if (found == counted_.end()) continue;
        const std::string name = event->len > 0 ? std::string(event->name) : std::string();
        if (found->second.all || name.empty() || found->second.names.count(name) > 0) counts = true;
      }
    }
  }

  // Watches every directory of watched_ that is there now, and no other.
  void watchAgain() {
    std::map<int, Counted> counted;
    const auto watch = [&](const std::filesystem::path& directory, const std::vector<std::string>& names) {
      const int wd = ::inotify_add_watch(inotify_.get(), directory.c_str(), kEvents);
      if (wd < 0) {
        log_->debug("swl-ratelimit: cannot watch " + directory.string() + " yet: " + std::strerror(errno));
        return;
      }
      Counted& each = counted[wd];
      if (names.empty()) each.all = true;
      each.names.insert(names.begin(), names.end());
    };
    for (const WatchedDirectory& watched : watched_) {
      watch(watched.directory, watched.names);
      if (!watched.recursive) continue;
      std::error_code error;
      std::filesystem::recursive_directory_iterator each(
          watched.directory, std::filesystem::directory_options::skip_permission_denied, error);
      for (; !error && each != std::filesystem::recursive_directory_iterator(); each.increment(error)) {
        if (each->is_directory(error) && !each->is_symlink(error)) watch(each->path(), {});
      }
    }
    for (const auto& watching : counted_) {
      if (counted.count(watching.first) == 0) ::inotify_rm_watch(inotify_.get(), watching.first);
    }
    counted_ = std::move(counted);
  }

  std::vector<WatchedDirectory> watched_;
  std::function<void()> reload_;
  Log* log_;
  FileDescriptor inotify_;
  FileDescriptor stop_;
  std::map<int, Counted> counted_;  // by watch descriptor; the thread's alone once it runs
  std::thread thread_;
};

}  // namespace swl::ratelimit

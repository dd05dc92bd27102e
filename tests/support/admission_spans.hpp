#pragma once
// What the client saw of each admission: the monotonic time before it asked and after it was answered.
// The limiter admitted the request at some moment in between, so the most spans that fit inside one
// window-long interval is a sound upper bound on the most admissions a window held, whatever decided
// them and in whichever process (CLOCK_MONOTONIC is one clock for the whole machine).

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace swl::test {

struct Span {
  std::int64_t start_ns;
  std::int64_t end_ns;
};

inline std::int64_t monotonicNs() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

// The most spans lying wholly inside one closed interval [a, a + window_ns]. Such an interval can be
// moved right until a is some span's start without losing a span, so only those are tried. For each,
// the spans inside are those ending by a + window_ns, less those starting before a, plus those starting
// before a and ending after a + window_ns (longer than a window: counted one by one, there are few).
inline std::int64_t mostInOneWindow(const std::vector<Span>& spans, std::int64_t window_ns) {
  std::vector<std::int64_t> starts, ends;
  std::vector<Span> longer;
  for (const Span& span : spans) {
    starts.push_back(span.start_ns);
    ends.push_back(span.end_ns);
    if (span.end_ns - span.start_ns > window_ns) longer.push_back(span);
  }
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());
  std::int64_t most = 0;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (i > 0 && starts[i] == starts[i - 1]) continue;
    const std::int64_t a = starts[i], b = a + window_ns;
    std::int64_t inside = static_cast<std::int64_t>(std::upper_bound(ends.begin(), ends.end(), b) - ends.begin()) -
                          static_cast<std::int64_t>(i);
    for (const Span& span : longer) inside += span.start_ns < a && span.end_ns > b ? 1 : 0;
    most = std::max(most, inside);
  }
  return most;
}

// The most spans that share one moment. Spans are [start, end): one that ends when another starts does
// not overlap it, so a holder's span measured from after its acquire was answered to before its release
// was sent can only under-count the slots held at once.
inline std::int64_t mostAtOnce(const std::vector<Span>& spans) {
  std::vector<std::pair<std::int64_t, int>> changes;  // (time, +1 start | -1 end): ends sort first
  for (const Span& span : spans) {
    changes.emplace_back(span.start_ns, 1);
    changes.emplace_back(span.end_ns, -1);
  }
  std::sort(changes.begin(), changes.end());
  std::int64_t now = 0, most = 0;
  for (const auto& change : changes) most = std::max(most, now += change.second);
  return most;
}

// What `threads` threads did asking as fast as they could from start_ns until stop_ns: their decisions,
// their admissions, and each admission's span when `keep_spans`. `ask(thread)` makes one request and
// says whether it was admitted.
struct Hammering {
  std::int64_t decisions = 0;
  std::int64_t admitted = 0;
  std::vector<Span> spans;
};

template <class Ask>
Hammering hammer(int threads, std::int64_t start_ns, std::int64_t stop_ns, bool keep_spans, Ask&& ask) {
  std::vector<Hammering> each(static_cast<std::size_t>(threads));
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&, t] {
      Hammering mine;  // the thread's own until it is done: counters shared in one cache line would slow it
      while (monotonicNs() < start_ns) std::this_thread::yield();
      for (std::int64_t before = monotonicNs(); before < stop_ns; before = monotonicNs()) {
        const bool allowed = ask(t);
        ++mine.decisions;
        if (!allowed) continue;
        ++mine.admitted;
        if (keep_spans) mine.spans.push_back({before, monotonicNs()});
      }
      each[static_cast<std::size_t>(t)] = std::move(mine);
    });
  }
  for (std::thread& thread : running) thread.join();
  Hammering all;
  for (const Hammering& mine : each) {
    all.decisions += mine.decisions;
    all.admitted += mine.admitted;
    all.spans.insert(all.spans.end(), mine.spans.begin(), mine.spans.end());
  }
  return all;
}

inline void writeSpans(const std::string& path, const std::vector<Span>& spans) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error("cannot write " + path);
  const std::size_t written = std::fwrite(spans.data(), sizeof(Span), spans.size(), file);
  std::fclose(file);
  if (written != spans.size()) throw std::runtime_error("short write to " + path);
}

inline std::vector<Span> readSpans(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) throw std::runtime_error("cannot read " + path);
  std::vector<Span> spans;
  Span span{};
  while (std::fread(&span, sizeof span, 1, file) == 1) spans.push_back(span);
  std::fclose(file);
  return spans;
}

}  // namespace swl::test

// The statsd sink's I/O: a connected UDP socket to statsd, and the thread that flushes to it.

#include <ratelimit/telemetry/statsd.hpp>

#include <netdb.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace swl::ratelimit {

void StatsdTimer::observe(std::chrono::nanoseconds took) {
  const auto milliseconds = static_cast<std::uint64_t>(
      std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  if (milliseconds < kCountedMilliseconds) {
    counts_[milliseconds].fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const std::lock_guard<std::mutex> lock(slower_mutex_);
  if (slower_.size() < kMostSlower) slower_.push_back(milliseconds);
}

void StatsdTimer::take(const std::function<void(std::uint64_t milliseconds, std::uint64_t times)>& each) {
  for (std::size_t milliseconds = 0; milliseconds < kCountedMilliseconds; ++milliseconds) {
    if (const std::uint32_t times = counts_[milliseconds].exchange(0, std::memory_order_relaxed); times != 0) {
      each(milliseconds, times);
    }
  }
  std::vector<std::uint64_t> slower;
  {
    const std::lock_guard<std::mutex> lock(slower_mutex_);
    slower.swap(slower_);
  }
  for (const std::uint64_t milliseconds : slower) each(milliseconds, 1);
}

StatsdSink::StatsdSink(const StatsdOptions& options, Log* log)
    : host_(options.host),
      port_(options.port),
      interval_(std::max(options.flush_interval, std::chrono::milliseconds(1))),  // 0 would spin
      tag_suffix_(tagSuffix(options.extra_tags)),
      log_(log),
      thread_([this] { run(); }) {}

StatsdSink::~StatsdSink() {
  {
    const std::lock_guard<std::mutex> lock(stop_mutex_);
    stopping_ = true;
  }
  stop_.notify_one();
  thread_.join();
  flush();  // what the last calls added, after the thread's last flush
  if (socket_ >= 0) ::close(socket_);
}

StatsdCounter& StatsdSink::counter(std::string_view name) {
  return *counters_.find(name, [] { return StatsdCounter(); });
}

StatsdTimer& StatsdSink::timer(std::string_view name) {
  return *timers_.find(name, [] { return StatsdTimer(); });
}

// Flushes at each interval's end, counted from the start, so that a slow flush does not push the
// next ones later.
void StatsdSink::run() {
  auto next = std::chrono::steady_clock::now() + interval_;
  std::unique_lock<std::mutex> lock(stop_mutex_);
  while (!stop_.wait_until(lock, next, [this] { return stopping_; })) {
    lock.unlock();
    flush();
    lock.lock();
    next += interval_;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + interval_;  // a flush longer than the interval: no burst of them after
  }
}

void StatsdSink::flush() {
  const std::lock_guard<std::mutex> lock(flush_mutex_);
  DatagramPacker packer([this](std::string_view datagram) { send(datagram); });
  std::string name;
  for (const auto& [counter_name, counter] : counters_.all()) {
    if (const std::uint64_t gained = counter->take(); gained != 0) {
      name.assign(counter_name).append(tag_suffix_);
      packer.add(counterLine(name, gained));
    }
  }
  for (const auto& [timer_name, timer] : timers_.all()) {
    name.assign(timer_name).append(tag_suffix_);
    timer->take([&](std::uint64_t milliseconds, std::uint64_t times) {
      const std::string line = timerLine(name, milliseconds);
      for (std::uint64_t i = 0; i < times; ++i) packer.add(line);
    });
  }
  packer.finish();
}

// statsd is lossy by design: a datagram nobody receives (ECONNREFUSED, from the last one's ICMP) is
// dropped; any other failure connects again, resolving the host anew, for the next datagram.
void StatsdSink::send(std::string_view datagram) {
  if (socket_ < 0 && !connectSocket()) return;
  if (::send(socket_, datagram.data(), datagram.size(), MSG_NOSIGNAL) >= 0 || errno == ECONNREFUSED) return;
  ::close(socket_);
  socket_ = -1;
}

// A UDP socket connected to the first of the host's addresses that takes one, as Go's net.Dial("udp")
// gostats uses does.
bool StatsdSink::connectSocket() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int resolved = ::getaddrinfo(host_.c_str(), std::to_string(port_).c_str(), &hints, &found);
  if (resolved != 0) {
    if (!warned_ && log_ != nullptr) {
      log_->warn("swl-ratelimit: statsd: cannot find " + host_ + ": " + ::gai_strerror(resolved) +
                 "; the statistics are dropped until it can be found");
    }
    warned_ = true;
    return false;
  }
  for (const addrinfo* address = found; address != nullptr && socket_ < 0; address = address->ai_next) {
    socket_ = ::socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC, address->ai_protocol);
    if (socket_ >= 0 && ::connect(socket_, address->ai_addr, address->ai_addrlen) != 0) {
      ::close(socket_);
      socket_ = -1;
    }
  }
  ::freeaddrinfo(found);
  warned_ = warned_ && socket_ < 0;
  return socket_ >= 0;
}

}  // namespace swl::ratelimit

#pragma once
/// \file
/// The threads swl-ratelimit decides on. A decision waits on Redis, and gRPC's callback API must never
/// be made to wait on its own threads: each call is handed here, and finished from here.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace swl::ratelimit {

/// A fixed number of threads running the work handed to them, first come first served.
class DecidingThreads {
 public:
  /// `count` threads, at least one: one per Redis connection, so that no decision waits for a connection.
  explicit DecidingThreads(std::size_t count) {
    threads_.reserve(count == 0 ? 1 : count);
    for (std::size_t i = 0; i < threads_.capacity(); ++i) threads_.emplace_back([this] { work(); });
  }

  /// Runs what was handed over and not yet run, then joins the threads.
  ~DecidingThreads() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    more_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }

  DecidingThreads(const DecidingThreads&) = delete;
  DecidingThreads& operator=(const DecidingThreads&) = delete;

  /// Runs `work` on one of the threads, soon; from any thread.
  void post(std::function<void()> work) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(work));
    }
    more_.notify_one();
  }

 private:
  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      more_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      std::function<void()> next = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      next();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable more_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace swl::ratelimit

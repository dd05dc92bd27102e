#pragma once
/// \file
/// The threads swl-ratelimit decides on. A decision waits on Redis, and gRPC's callback API must never
/// be made to wait on its own threads: each call is handed here, and finished from here.
///
/// A thread takes every call that waits, up to a batch's most, and decides them together: one pipelined
/// round trip to Redis for the lot (Decider::decideMany). Under load, calls queue while the threads wait
/// on Redis, so each wakes once for many calls and Redis reads many calls at once; when calls are few, a
/// call is taken as soon as it comes, alone.

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <iterator>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace swl::ratelimit {

/// A fixed number of threads deciding the Work handed to them, in batches, first come first served.
template <class Work>
class DecidingThreads {
 public:
  /// What decides a batch; it must not throw.
  using Decide = std::function<void(std::vector<Work>&)>;

  /// `count` threads (at least one), each deciding at most `most_at_once` calls together by `decide`.
  DecidingThreads(std::size_t count, std::size_t most_at_once, Decide decide)
      : most_at_once_(std::max<std::size_t>(most_at_once, 1)), decide_(std::move(decide)) {
    threads_.reserve(std::max<std::size_t>(count, 1));
    for (std::size_t i = 0; i < threads_.capacity(); ++i) threads_.emplace_back([this] { work(); });
  }

  /// Decides what was handed over and not yet decided, then joins the threads.
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

  /// Decides `work` on one of the threads, soon; from any thread.
  void post(Work work) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(work));
    }
    more_.notify_one();
  }

 private:
  void work() {
    std::vector<Work> batch;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      more_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to decide
      const auto taken = static_cast<std::ptrdiff_t>(std::min(queue_.size(), most_at_once_));
      batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.begin() + taken));
      queue_.erase(queue_.begin(), queue_.begin() + taken);
      lock.unlock();
      decide_(batch);
      batch.clear();
      lock.lock();
    }
  }

  const std::size_t most_at_once_;
  const Decide decide_;
  std::mutex mutex_;
  std::condition_variable more_;
  std::deque<Work> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace swl::ratelimit

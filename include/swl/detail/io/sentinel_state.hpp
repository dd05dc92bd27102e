#pragma once
// Where a Sentinel-watched master is: asked of the sentinels, and told by their announcements (a thread
// that listens); SentinelConnection builds on it.

#include <swl/connection_options.hpp>
#include <swl/detail/io/checked_options.hpp>
#include <swl/detail/io/dial.hpp>
#include <swl/detail/io/topology.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>
#include <swl/redis/connection.hpp>
#include <swl/redis/connection_pool.hpp>

#include <poll.h>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace swl::detail {

// Where the master is, as the sentinels say: asked on demand, and told by their announcements. Shared by
// the pool's connections (which ask it on every reconnect) and the thread that listens to the sentinels.
class SentinelState {
 public:
  SentinelState(const std::vector<Address>& sentinels, std::string master_name, const ConnectionOptions& options)
      : master_name_(std::move(master_name)) {
    static constexpr std::string_view kWho = "swl::SentinelConnection";
    if (sentinels.empty()) throw InvalidArgument(std::string(kWho) + ": no sentinel given");
    if (master_name_.empty()) throw InvalidArgument(std::string(kWho) + ": the master name is empty");
    if (options.db != 0) {
      throw InvalidArgument("swl::SentinelOptions: sentinel.db is " + std::to_string(options.db) +
                            "; sentinels have no databases, set master.db instead");
    }
    for (const Address& sentinel : sentinels) {
      endpoints_ += (endpoints_.empty() ? "" : ", ") + checkedAddress(kWho, sentinel).endpoint();
      addresses_.push_back(sentinel);
      connections_.push_back(Connection::to(sentinel, options));
    }
  }

  // Where writes go now: the master a failover announced, or else the one the sentinels name.
  Address master() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (announced_) return *announced_;
    return askLocked();
  }

  // "host:port" of the master, asked of the sentinels now.
  Address askForMaster() {
    std::lock_guard<std::mutex> lock(mutex_);
    return askLocked();
  }

  void heard(const FailoverNews& news) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (news.kind == FailoverNews::Kind::aborted) {
      announced_.reset();
    } else {
      if (announced_ && announced_->endpoint() == news.master.endpoint()) {
        confirmed_ = confirmed_ || news.kind != FailoverNews::Kind::selected;
        return;
      }
      announced_ = news.master;
      confirmed_ = news.kind != FailoverNews::Kind::selected;
    }
    epoch_.fetch_add(1, std::memory_order_release);
  }

  // A connection met READONLY. While a chosen replica awaits its promotion that is expected: the call
  // asks again. Otherwise whatever was announced is out of date, and the sentinels are asked instead.
  void refusedWrites() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!announced_ || !confirmed_) return;
    announced_.reset();
    epoch_.fetch_add(1, std::memory_order_release);
  }

  // Moves on whenever the master may have changed: connections opened before reconnect.
  std::uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_acquire); }

  const std::string& masterName() const noexcept { return master_name_; }
  const std::vector<Address>& sentinels() const noexcept { return addresses_; }

  // Names the master in the messages of its connections, whose address changes with every failover.
  std::string description() const { return "master '" + master_name_ + "' of sentinels " + endpoints_; }

 private:
  // Throws AuthError when a sentinel refused our credentials (and none answered), ProtocolError when one
  // answered nonsense, ConnectionError otherwise; the message names every sentinel's trouble.
  Address askLocked() {
    std::string troubles;
    bool refused_credentials = false, answered_nonsense = false;
    for (std::size_t tried = 0; tried < connections_.size(); ++tried) {
      const std::size_t index = (first_ + tried) % connections_.size();
      Connection& sentinel = connections_[index];
      try {
        const Reply reply = sentinel.command({"SENTINEL", "get-master-addr-by-name", master_name_});
        if (auto master = parseMasterAddress(*reply, sentinel.endpoint(), master_name_)) {
          first_ = index;
          return *std::move(master);
        }
        troubles += (troubles.empty() ? "" : "; ") + ("sentinel " + sentinel.endpoint() + " does not know it");
      } catch (const AuthError& error) {
        refused_credentials = true;
        troubles += (troubles.empty() ? "" : "; ") + std::string(error.what());
      } catch (const ProtocolError& error) {
        answered_nonsense = true;
        troubles += (troubles.empty() ? "" : "; ") + std::string(error.what());
      } catch (const Error& error) {
        troubles += (troubles.empty() ? "" : "; ") + std::string(error.what());
      }
    }
    const std::string message = "swl::SentinelConnection: none of the sentinels " + endpoints_ + " named the master '" +
                                master_name_ + "': " + troubles;
    if (refused_credentials) throw AuthError(message);
    if (answered_nonsense) throw ProtocolError(message);
    throw ConnectionError(message);
  }

  std::string master_name_;
  std::string endpoints_;
  std::vector<Address> addresses_;
  std::mutex mutex_;  // one asker at a time: an answer is needed only when a connection (re)connects
  std::vector<Connection> connections_;
  std::size_t first_ = 0;             // the sentinel that answered last
  std::optional<Address> announced_;  // the master a failover announced, until READONLY says otherwise
  bool confirmed_ = false;            // promoted or switched, not only chosen
  std::atomic<std::uint64_t> epoch_{0};
};

// A thread subscribed to every sentinel's failover channels, telling the SentinelState what it hears.
// A sentinel it cannot reach is tried again every second; it stops (and joins) when destroyed.
class FailoverListener {
 public:
  FailoverListener(std::shared_ptr<SentinelState> state, const ConnectionOptions& options)
      : state_(std::move(state)), options_(options), dialer_(options), thread_([this] { listen(); }) {}

  FailoverListener(const FailoverListener&) = delete;
  FailoverListener& operator=(const FailoverListener&) = delete;

  ~FailoverListener() {
    stop_.store(true);
    thread_.join();
  }

 private:
  using Clock = std::chrono::steady_clock;

  struct Subscription {
    Address sentinel;
    ContextPtr context;
    Clock::time_point next_attempt{};
  };

  void listen() {
    std::vector<Subscription> subscriptions;
    for (const Address& sentinel : state_->sentinels()) subscriptions.push_back({sentinel, nullptr, {}});
    while (!stop_.load()) {
      for (Subscription& subscription : subscriptions) {
        if (!subscription.context && Clock::now() >= subscription.next_attempt) subscribe(subscription);
      }
      std::vector<pollfd> watched;
      std::vector<Subscription*> of;
      for (Subscription& subscription : subscriptions) {
        if (subscription.context) watched.push_back({subscription.context->fd, POLLIN, 0}), of.push_back(&subscription);
      }
      // Wakes at least every 100 ms to see whether it should stop or retry a sentinel.
      if (watched.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      if (::poll(watched.data(), watched.size(), 100) <= 0) continue;
      for (std::size_t i = 0; i < watched.size(); ++i) {
        if (watched[i].revents != 0) read(*of[i]);
      }
    }
  }

  void subscribe(Subscription& subscription) {
    try {
      Link link([&] { return dialer_.dial(subscription.sentinel); }, subscription.sentinel.endpoint(), options_);
      ContextPtr context = link.handOver();
      for (const char* command :
           {"SUBSCRIBE +selected-slave +promoted-slave +switch-master", "PSUBSCRIBE -failover-abort-*"}) {
        if (redisAppendCommand(context.get(), command) != REDIS_OK) throw ConnectionError("cannot subscribe");
      }
      int done = 0;
      while (done == 0) {
        if (redisBufferWrite(context.get(), &done) != REDIS_OK) throw ConnectionError("cannot subscribe");
      }
      subscription.context = std::move(context);
    } catch (const Error&) {
      subscription.next_attempt = Clock::now() + std::chrono::seconds(1);
    }
  }

  // Reads what arrived; a message about our master goes to the state. A broken or nonsensical
  // subscription is dropped and made again later.
  void read(Subscription& subscription) {
    redisContext& context = *subscription.context;
    try {
      if (redisBufferRead(&context) != REDIS_OK) throw ConnectionError("the subscription broke");
      for (;;) {
        void* raw = nullptr;
        if (redisGetReplyFromReader(&context, &raw) != REDIS_OK) throw ProtocolError("unreadable");
        if (raw == nullptr) return;
        const Reply message(static_cast<redisReply*>(raw));
        // ["message", channel, payload] or ["pmessage", pattern, channel, payload]
        const bool pattern = (*message)[0].text() == "pmessage";
        if (!pattern && (*message)[0].text() != "message") continue;  // a subscription's confirmation
        const ReplyView channel = (*message)[pattern ? 2 : 1];
        const ReplyView payload = (*message)[pattern ? 3 : 2];
        if (const auto news = parseFailoverNews(channel.text(), payload.text(), state_->masterName(),
                                                subscription.sentinel.endpoint())) {
          state_->heard(*news);
        }
      }
    } catch (const Error&) {
      subscription.context.reset();
      subscription.next_attempt = Clock::now() + std::chrono::seconds(1);
    }
  }

  std::shared_ptr<SentinelState> state_;
  ConnectionOptions options_;
  Dialer dialer_;
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: it starts once everything it reads is ready
};

}  // namespace swl::detail

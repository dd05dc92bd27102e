// swl_bench: decisions per second and latency of swl against one Redis, and of a bare hiredis loop
// sending the very same EVALSHA (--mode raw), so the two can be compared in one run.
//
//   swl_bench --port 6379 --mode sync --threads 1 --requests 200000
//   swl_bench --port 6379 --mode raw  --threads 1 --requests 200000
//
// Modes: raw (bare hiredis, --pipeline D commands per round trip), sync (a Connection and a limiter
// per thread), pool (one ConnectionPool of --threads connections shared by --threads threads through one
// limiter), batch (tryAcquireMany of --pipeline requests per thread), async (one event loop and
// AsyncConnection per thread, --pipeline requests in flight on each), asio (the same on an io_context
// and AsioConnection per thread, through AsioLimiter's callbacks), asio-raw (the same EVALSHA through
// hiredis's async API on a bare io_context per thread, nothing of swl's). With --cluster, --host/--port
// name one node of a Redis Cluster, and pool and batch run over one ClusterConnection shared by the
// threads (a pool of --threads connections per master).
// Progress goes to stderr; the last stdout line is one JSON object.
#include <swl/asio/limiter.hpp>
#include <swl/async/limiter.hpp>
#include <swl/swl.hpp>

#include <event2/event.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Settings {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string mode = "sync";
  int threads = 1;
  int keys = 10000;
  std::int64_t limit = 100;
  std::int64_t window_ms = 1000;
  std::int64_t requests = 100000;
  int pipeline = 1;
  bool cluster = false;
  swl::ConnectionOptions connection;  // swl's defaults, but for --replica-acks and --command-timeout-ms
};

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "swl_bench: " << problem << "\n"
            << "usage: swl_bench [--host H] [--port P] [--mode raw|sync|pool|batch|async|asio|asio-raw] [--threads T]\n"
            << "                 [--keys K] [--limit L] [--window-ms W] [--requests N] [--pipeline D]\n"
            << "                 [--cluster]   (--host/--port is a cluster node; modes pool and batch)\n"
            << "                 [--replica-acks N] [--command-timeout-ms T]   (ConnectionOptions; not raw)\n"
            << "                 [--native-module use_when_loaded|never|required]   (ConnectionOptions; not raw)\n"
            << "       swl_bench --print-script   (the Lua script swl runs, for redis-benchmark)\n";
  std::exit(2);
}

swl::NativeModule nativeModuleOf(const std::string& value) {
  if (value == "use_when_loaded") return swl::NativeModule::use_when_loaded;
  if (value == "never") return swl::NativeModule::never;
  if (value == "required") return swl::NativeModule::required;
  usage("--native-module is use_when_loaded, never or required, not '" + value + "'");
}

Settings parse(int argc, char** argv) {
  Settings settings;
  std::map<std::string, std::function<void(const std::string&)>> flags = {
      {"--host", [&](const std::string& v) { settings.host = v; }},
      {"--port", [&](const std::string& v) { settings.port = std::stoi(v); }},
      {"--mode", [&](const std::string& v) { settings.mode = v; }},
      {"--threads", [&](const std::string& v) { settings.threads = std::stoi(v); }},
      {"--keys", [&](const std::string& v) { settings.keys = std::stoi(v); }},
      {"--limit", [&](const std::string& v) { settings.limit = std::stoll(v); }},
      {"--window-ms", [&](const std::string& v) { settings.window_ms = std::stoll(v); }},
      {"--requests", [&](const std::string& v) { settings.requests = std::stoll(v); }},
      {"--pipeline", [&](const std::string& v) { settings.pipeline = std::stoi(v); }},
      {"--replica-acks", [&](const std::string& v) { settings.connection.replica_acks = std::stoi(v); }},
      {"--native-module", [&](const std::string& v) { settings.connection.native_module = nativeModuleOf(v); }},
      {"--command-timeout-ms",
       [&](const std::string& v) { settings.connection.command_timeout = std::chrono::milliseconds(std::stoll(v)); }},
  };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--print-script") {
      std::cout << swl::SlidingWindowLimiter<>::script().text();
      std::exit(0);
    }
    if (flag == "--cluster") {
      settings.cluster = true;
      continue;
    }
    auto known = flags.find(flag);
    if (known == flags.end()) usage("unknown flag " + flag);
    if (i + 1 >= argc) usage(flag + " needs a value");
    try {
      known->second(argv[++i]);
    } catch (const std::exception&) {
      usage(flag + " needs a number, not '" + argv[i] + "'");
    }
  }
  if (settings.threads < 1 || settings.keys < 1 || settings.limit < 1 || settings.window_ms < 1 ||
      settings.requests < 1 || settings.pipeline < 1) {
    usage("every count must be at least 1");
  }
  if (settings.cluster && settings.mode != "pool" && settings.mode != "batch") usage("--cluster runs pool or batch");
  return settings;
}

// What one thread measured.
struct Tally {
  std::int64_t allowed = 0;
  std::int64_t rejected = 0;
  std::vector<float> latencies_us;

  void record(bool admitted, Clock::duration latency) {
    (admitted ? allowed : rejected) += 1;
    latencies_us.push_back(std::chrono::duration<float, std::micro>(latency).count());
  }
};

// Uniform keys from a cheap per-thread generator; the same key names in every mode.
class KeyPicker {
 public:
  KeyPicker(int keys, int seed) : keys_(static_cast<std::uint64_t>(keys)), state_(0x9E3779B97F4A7C15ull * (seed + 1)) {}
  std::string next() {
    state_ ^= state_ << 13, state_ ^= state_ >> 7, state_ ^= state_ << 17;
    return "k" + std::to_string(state_ % keys_);
  }

 private:
  std::uint64_t keys_;
  std::uint64_t state_;
};

std::int64_t share(const Settings& settings, int thread) {
  return settings.requests / settings.threads + (thread < settings.requests % settings.threads ? 1 : 0);
}

swl::Limit limitOf(const Settings& settings) {
  return swl::Limit{settings.limit, std::chrono::milliseconds(settings.window_ms)};
}

const swl::PrefixKey kBenchKeys("bench");

// The baseline: the same EVALSHA with the same arguments swl sends, through bare hiredis.
void runRaw(const Settings& settings, int thread, Tally& tally) {
  redisContext* context = redisConnect(settings.host.c_str(), settings.port);
  if (context == nullptr || context->err != 0) usage("cannot connect to redis for --mode raw");
  const swl::Script& script = swl::SlidingWindowLimiter<>::script();
  const std::string sha(script.sha()), window = std::to_string(settings.window_ms * 1000);
  const std::string limit = std::to_string(settings.limit), ttl = std::to_string(settings.window_ms);
  const std::string load(script.text());
  freeReplyObject(redisCommand(context, "SCRIPT LOAD %b", load.data(), load.size()));

  KeyPicker keys(settings.keys, thread);
  swl::CompactMember members;
  std::vector<std::string> redis_keys(settings.pipeline), member_texts(settings.pipeline);
  for (std::int64_t left = share(settings, thread); left > 0;) {
    const int depth = static_cast<int>(std::min<std::int64_t>(left, settings.pipeline));
    const auto started = Clock::now();
    for (int i = 0; i < depth; ++i) {
      redis_keys[i] = "bench:" + keys.next();
      member_texts[i] = members.next();
      const char* argv[] = {"EVALSHA",
                            sha.c_str(),
                            "1",
                            redis_keys[i].c_str(),
                            window.c_str(),
                            limit.c_str(),
                            "1",
                            "",
                            member_texts[i].c_str(),
                            ttl.c_str(),
                            "0"};
      size_t lengths[11];
      for (int a = 0; a < 11; ++a) lengths[a] = std::char_traits<char>::length(argv[a]);
      redisAppendCommandArgv(context, 11, argv, lengths);
    }
    for (int i = 0; i < depth; ++i) {
      void* reply = nullptr;
      if (redisGetReply(context, &reply) != REDIS_OK) usage("redis failed during --mode raw");
      auto* decision = static_cast<redisReply*>(reply);
      const bool admitted = decision->type == REDIS_REPLY_ARRAY && decision->element[0]->integer == 1;
      tally.record(admitted, Clock::now() - started);
      freeReplyObject(reply);
    }
    left -= depth;
  }
  redisFree(context);
}

// One tryAcquire at a time on this thread, through `limiter` (its own, or one shared over a pool).
void decideOneByOne(const Settings& settings, int thread, Tally& tally, swl::SlidingWindowLimiter<>& limiter) {
  KeyPicker keys(settings.keys, thread);
  for (std::int64_t i = share(settings, thread); i > 0; --i) {
    const std::string key = keys.next();
    const auto started = Clock::now();
    const bool admitted = limiter.tryAcquire(key).allowed;
    tally.record(admitted, Clock::now() - started);
  }
}

void runSync(const Settings& settings, int thread, Tally& tally) {
  auto connection = swl::Connection::tcp(settings.host, settings.port, settings.connection);
  swl::SlidingWindowLimiter<> limiter(connection, limitOf(settings), {}, kBenchKeys);
  decideOneByOne(settings, thread, tally, limiter);
}

// tryAcquireMany over `shared` (a cluster), or over a connection of this thread's own.
void runBatch(const Settings& settings, int thread, Tally& tally, swl::RedisClient* shared) {
  std::optional<swl::Connection> own;
  if (shared == nullptr) own.emplace(swl::Connection::tcp(settings.host, settings.port, settings.connection));
  swl::SlidingWindowLimiter<> limiter(shared != nullptr ? *shared : *own, limitOf(settings), {}, kBenchKeys);
  KeyPicker keys(settings.keys, thread);
  std::vector<std::string> names(settings.pipeline);
  std::vector<swl::AcquireRequest> requests;
  for (std::int64_t left = share(settings, thread); left > 0;) {
    const int depth = static_cast<int>(std::min<std::int64_t>(left, settings.pipeline));
    requests.clear();
    for (int i = 0; i < depth; ++i) names[i] = keys.next(), requests.push_back({names[i], 1});
    const auto started = Clock::now();
    const std::vector<swl::Outcome> outcomes = limiter.tryAcquireMany(requests);
    const auto latency = Clock::now() - started;
    for (const swl::Outcome& outcome : outcomes) tally.record(outcome.value().allowed, latency);
    left -= depth;
  }
}

void runAsync(const Settings& settings, int thread, Tally& tally) {
  std::unique_ptr<event_base, void (*)(event_base*)> loop(event_base_new(), event_base_free);
  {
    auto redis = swl::AsyncConnection::tcp(loop.get(), settings.host, settings.port, settings.connection);
    swl::AsyncSlidingWindowLimiter<> limiter(redis, limitOf(settings), {}, kBenchKeys);
    KeyPicker keys(settings.keys, thread);
    std::int64_t to_send = share(settings, thread), to_answer = to_send;
    std::function<void()> sendOne = [&] {
      --to_send;
      const auto started = Clock::now();
      limiter.tryAcquire(keys.next(), 1, [&, started](swl::Outcome outcome) {
        tally.record(outcome.value().allowed, Clock::now() - started);
        if (--to_answer == 0) event_base_loopbreak(loop.get());
        if (to_send > 0) sendOne();  // keep --pipeline requests in flight
      });
    };
    for (int i = 0; i < settings.pipeline && to_send > 0; ++i) sendOne();
    event_base_dispatch(loop.get());
  }
}

void runAsio(const Settings& settings, int thread, Tally& tally) {
  swl::asio::io_context io(1);
  auto redis = swl::AsioConnection::tcp(io.get_executor(), settings.host, settings.port, settings.connection);
  swl::AsioSlidingWindowLimiter<> limiter(redis, limitOf(settings), {}, kBenchKeys);
  KeyPicker keys(settings.keys, thread);
  std::int64_t to_send = share(settings, thread), to_answer = to_send;
  std::function<void()> sendOne = [&] {
    --to_send;
    const auto started = Clock::now();
    limiter.async_try_acquire(keys.next(), 1, [&, started](swl::asio_error_code error, swl::Decision decision) {
      if (error) usage("redis failed during --mode asio: " + error.message());
      tally.record(decision.allowed, Clock::now() - started);
      if (--to_answer == 0) redis.close();
      if (to_send > 0) sendOne();  // keep --pipeline requests in flight
    });
  };
  for (int i = 0; i < settings.pipeline && to_send > 0; ++i) sendOne();
  io.run();
}

// hiredis's async API on an io_context with nothing of swl's: its socket watched by a bare
// stream_descriptor through hiredis's event hooks. Reads wait on the reactor; the commands a turn of the
// loop queued go out in one write once the turn's handlers have run, and a full socket buffer waits for
// writability. The baseline of --mode asio: what swl adds on top of the loop is the rest.
class BareAsioWatch {
 public:
  BareAsioWatch(swl::asio::io_context& io, redisAsyncContext& context) : io_(io), socket_(io), context_(&context) {
    socket_.assign(context.c.fd);
    context.ev.data = this;
    context.ev.addRead = [](void* self) { static_cast<BareAsioWatch*>(self)->waitRead(); };
    context.ev.delRead = [](void*) {};
    context.ev.addWrite = [](void* self) { static_cast<BareAsioWatch*>(self)->writeSoon(); };
    context.ev.delWrite = [](void*) {};
    context.ev.cleanup = [](void* self) {
      auto& watch = *static_cast<BareAsioWatch*>(self);
      watch.context_ = nullptr;
      watch.socket_.release();
    };
  }

 private:
  void waitRead() {
    if (read_waiting_ || context_ == nullptr) return;
    read_waiting_ = true;
    socket_.async_wait(swl::asio::posix::descriptor_base::wait_read, [this](swl::asio_error_code error) {
      read_waiting_ = false;
      if (error || context_ == nullptr) return;
      redisAsyncHandleRead(context_);
      waitRead();
    });
  }
  void writeSoon() {
    if (write_posted_ || context_ == nullptr) return;
    write_posted_ = true;
    swl::asio::post(io_, [this] {
      write_posted_ = false;
      if (context_ != nullptr) redisAsyncHandleWrite(context_);  // asks again (addWrite) if the buffer filled
    });
  }

  swl::asio::io_context& io_;
  swl::asio::posix::stream_descriptor socket_;
  redisAsyncContext* context_;
  bool read_waiting_ = false, write_posted_ = false;
};

// --mode asio-raw: --pipeline calls kept in flight on one bare hiredis async context; each slot is one call
// in flight, handed to hiredis as the call's private data.
class BareAsioLoop {
 public:
  BareAsioLoop(const Settings& settings, int thread, Tally& tally)
      : settings_(settings),
        tally_(tally),
        keys_(settings.keys, thread),
        to_send_(share(settings, thread)),
        to_answer_(to_send_),
        slots_(static_cast<std::size_t>(settings.pipeline)) {
    const swl::Script& script = swl::SlidingWindowLimiter<>::script();
    sha_ = script.sha();
    window_ = std::to_string(settings.window_ms * 1000);
    limit_ = std::to_string(settings.limit);
    ttl_ = std::to_string(settings.window_ms);
    for (Slot& slot : slots_) slot.loop = this;
  }

  void run() {
    swl::asio::io_context io(1);
    context_ = redisAsyncConnect(settings_.host.c_str(), settings_.port);
    if (context_ == nullptr || context_->err != 0) usage("cannot connect to redis for --mode asio-raw");
    BareAsioWatch watch(io, *context_);
    const std::string load(swl::SlidingWindowLimiter<>::script().text());
    redisAsyncCommand(context_, nullptr, nullptr, "SCRIPT LOAD %b", load.data(), load.size());
    for (Slot& slot : slots_) {
      if (to_send_ > 0) send(slot);
    }
    io.run();
  }

 private:
  struct Slot {
    BareAsioLoop* loop = nullptr;
    Clock::time_point started;
    std::string key, member;
  };

  void send(Slot& slot) {
    --to_send_;
    slot.started = Clock::now();
    slot.key = "bench:" + keys_.next();
    slot.member = members_.next();
    const char* argv[] = {"EVALSHA",           sha_.c_str(),   "1", slot.key.c_str(),
                          window_.c_str(),     limit_.c_str(), "1", "",
                          slot.member.c_str(), ttl_.c_str(),   "0"};
    size_t lengths[11];
    for (int a = 0; a < 11; ++a) lengths[a] = std::char_traits<char>::length(argv[a]);
    redisAsyncCommandArgv(context_, &BareAsioLoop::replied, &slot, 11, argv, lengths);
  }

  static void replied(redisAsyncContext*, void* reply, void* privdata) {
    Slot& slot = *static_cast<Slot*>(privdata);
    BareAsioLoop& loop = *slot.loop;
    const auto* decision = static_cast<const redisReply*>(reply);
    if (decision == nullptr) return;  // the context is going away
    if (decision->type != REDIS_REPLY_ARRAY) usage("redis failed during --mode asio-raw");
    loop.tally_.record(decision->element[0]->integer == 1, Clock::now() - slot.started);
    if (--loop.to_answer_ == 0) return redisAsyncDisconnect(loop.context_);
    if (loop.to_send_ > 0) loop.send(slot);  // keep --pipeline requests in flight
  }

  const Settings& settings_;
  Tally& tally_;
  KeyPicker keys_;
  swl::CompactMember members_;
  std::int64_t to_send_, to_answer_;
  std::vector<Slot> slots_;
  std::string sha_, window_, limit_, ttl_;
  redisAsyncContext* context_ = nullptr;
};

// The CPU this process has used, user and system, in seconds: what a client costs its machine per
// decision, which a noisy neighbour disturbs far less than the rate.
double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& time) { return time.tv_sec + time.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double percentile(std::vector<float>& sorted, double fraction) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<std::size_t>(fraction * sorted.size()))];
}

}  // namespace

int main(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
  std::cerr << "swl_bench: mode " << settings.mode << ", " << settings.threads << " thread(s), pipeline "
            << settings.pipeline << ", " << settings.requests << " requests over " << settings.keys << " keys\n";

  // Threads share one client in pool mode, and in batch mode over a cluster.
  const swl::PoolOptions pool_options{static_cast<std::size_t>(settings.threads), std::chrono::milliseconds(5000)};
  std::unique_ptr<swl::RedisClient> shared;
  if (settings.cluster) {
    swl::ClusterOptions options;
    options.pool = pool_options;
    options.connection = settings.connection;
    auto cluster =
        std::make_unique<swl::ClusterConnection>(std::vector<swl::Address>{{settings.host, settings.port}}, options);
    cluster->refresh();
    std::cerr << "swl_bench: cluster of " << cluster->masters().size() << " masters\n";
    shared = std::move(cluster);
  } else if (settings.mode == "pool") {
    shared = std::make_unique<swl::ConnectionPool>(
        [&] { return swl::Connection::tcp(settings.host, settings.port, settings.connection); }, pool_options);
  }
  std::unique_ptr<swl::SlidingWindowLimiter<>> pooled;
  if (shared)
    pooled =
        std::make_unique<swl::SlidingWindowLimiter<>>(*shared, limitOf(settings), swl::LimiterOptions{}, kBenchKeys);

  // Load the script before the clock starts, so no mode pays for it: one decision per key loads it
  // on every server these keys live on.
  if (shared) {
    KeyPicker warm(settings.keys, settings.threads);
    for (int i = 0; i < std::min(settings.keys, 1000); ++i) pooled->tryAcquire(warm.next());
  } else {
    auto connection = swl::Connection::tcp(settings.host, settings.port, settings.connection);
    swl::detail::linkOf(connection).load(swl::SlidingWindowLimiter<>::script());
  }

  std::vector<Tally> tallies(settings.threads);
  for (Tally& tally : tallies) tally.latencies_us.reserve(share(settings, 0));
  std::function<void(int)> work;
  if (settings.mode == "raw")
    work = [&](int t) { runRaw(settings, t, tallies[t]); };
  else if (settings.mode == "sync")
    work = [&](int t) { runSync(settings, t, tallies[t]); };
  else if (settings.mode == "pool")
    work = [&](int t) { decideOneByOne(settings, t, tallies[t], *pooled); };
  else if (settings.mode == "batch")
    work = [&](int t) { runBatch(settings, t, tallies[t], settings.cluster ? shared.get() : nullptr); };
  else if (settings.mode == "async")
    work = [&](int t) { runAsync(settings, t, tallies[t]); };
  else if (settings.mode == "asio")
    work = [&](int t) { runAsio(settings, t, tallies[t]); };
  else if (settings.mode == "asio-raw")
    work = [&](int t) { BareAsioLoop(settings, t, tallies[t]).run(); };
  else
    usage("unknown mode " + settings.mode);

  const double cpu_before = cpuSeconds();
  const auto started = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < settings.threads; ++t) threads.emplace_back(work, t);
  for (std::thread& thread : threads) thread.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  const double cpu_seconds = cpuSeconds() - cpu_before;

  std::int64_t allowed = 0, rejected = 0;
  std::vector<float> latencies;
  for (Tally& tally : tallies) {
    allowed += tally.allowed, rejected += tally.rejected;
    latencies.insert(latencies.end(), tally.latencies_us.begin(), tally.latencies_us.end());
  }
  std::sort(latencies.begin(), latencies.end());
  const std::int64_t decisions = allowed + rejected;
  std::cerr << "swl_bench: done in " << seconds << " s\n";
  std::printf(
      "{\"mode\":\"%s\",\"threads\":%d,\"pipeline\":%d,\"decisions\":%lld,\"seconds\":%.3f,\"decisions_per_sec\":%.0f,"
      "\"allowed\":%lld,\"rejected\":%lld,\"p50_us\":%.1f,\"p99_us\":%.1f,\"cpu_us_per_decision\":%.2f}\n",
      settings.mode.c_str(), settings.threads, settings.pipeline, static_cast<long long>(decisions), seconds,
      decisions / seconds, static_cast<long long>(allowed), static_cast<long long>(rejected),
      percentile(latencies, 0.50), percentile(latencies, 0.99), cpu_seconds * 1e6 / decisions);
  return 0;
}

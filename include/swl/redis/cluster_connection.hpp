#pragma once
/// \file
/// ClusterConnection: Redis Cluster behind the RedisClient interface, so the limiters run on a cluster
/// unchanged: the user swaps the connection, not the code.
///
///   auto cluster = swl::ClusterConnection::tcp({{"10.0.0.1", 7000}, {"10.0.0.2", 7000}});
///   swl::SlidingWindowLimiter<> limiter(cluster, swl::Limit{100, std::chrono::seconds(10)});
///
/// Each call goes straight to the master that serves its key's hash slot (see hash_slot.hpp), read
/// from CLUSTER SLOTS of any node the seeds lead to. Every master gets its own ConnectionPool, so a
/// ClusterConnection may be shared by any number of threads, and each node loads the script the first
/// time it answers NOSCRIPT, as a single Redis does.
///
/// The cluster changes under the client, and the client follows:
/// - MOVED (the slot has a new owner: resharding, failover): the call goes to the new owner, the slot
///   map is corrected at once and read again from the cluster (at most every `refresh_interval`);
/// - ASK (the slot is being migrated and this key has left already): the call goes to the target,
///   preceded by ASKING; the map is not touched, the slot still belongs to the source;
/// - TRYAGAIN, CLUSTERDOWN (keys half moved; no quorum while a failed master is replaced): the call is
///   asked again after a short pause, for as long as the command timeout allows.
/// All of these are answered before the script runs, so repeating the call cannot count it twice.
/// The first redirection of a call is followed at once. A second one means the cluster is changing
/// its mind mid-reshard (the source already names the target, the target does not know yet and sends
/// the call back), so later ones wait like TRYAGAIN. Redirections are bounded (`max_redirects` and the
/// command timeout); a call that still finds no home fails with ReplyError.
/// A call whose connection breaks may have run, so it is never repeated: it fails with ConnectionError
/// (the limiter's failure policy answers) and the slot map is read again, so once the cluster has
/// promoted a replica the next calls reach it.
///
/// Every call finishes within its command timeout, plus at most a quarter of it to read the slot map
/// again after a failure, whatever the cluster does: that read asks the node that just failed last,
/// skips nodes whose circuit is open (each node has its own breaker, see ConnectionOptions), waits only
/// briefly for a read another thread has under way, and gives each node only the time that is left.

#include <swl/connection_options.hpp>
#include <swl/detail/holds_error.hpp>
#include <swl/detail/io/batch.hpp>
#include <swl/detail/io/call_steps.hpp>
#include <swl/detail/io/checked_options.hpp>
#include <swl/detail/io/topology.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>
#include <swl/redis/connection.hpp>
#include <swl/redis/connection_pool.hpp>
#include <swl/redis/hash_slot.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace swl {

/// How a ClusterConnection reaches the nodes and follows the cluster's redirects.
struct ClusterOptions {
  ConnectionOptions connection;  ///< for every node; AUTH must hold on all of them; db must stay 0
  PoolOptions pool{4, std::chrono::milliseconds(100)};  ///< per master
  int max_redirects = 16;                               ///< MOVED + ASK followed for one call
  /// The slot map is read again after MOVED or a broken connection, but not more often than this.
  std::chrono::milliseconds refresh_interval{100};
};

/// Redis Cluster as one RedisClient: each call goes to the master that serves its key's hash slot;
/// cluster_connection.hpp says how slots are learnt and redirects followed.
class ClusterConnection : public RedisClient {
 public:
  /// Nothing is dialled here: the first call reads the slot map, so a service may start while the
  /// cluster is down and let its failure policy answer until it is back.
  static ClusterConnection tcp(std::vector<Address> seeds, ClusterOptions options = {}) {
    return ClusterConnection(std::move(seeds), std::move(options));
  }

  /// As tcp(seeds, options): nothing is dialled here. No seeds, or options no cluster takes (a db
  /// other than 0), are an InvalidArgument.
  explicit ClusterConnection(std::vector<Address> seeds, ClusterOptions options = {})
      : options_(std::move(options)), slots_(std::make_unique<SlotTable>()), description_("cluster seeds") {
    if (seeds.empty()) throw InvalidArgument("swl::ClusterConnection::tcp: no seed node given");
    detail::Dialer{options_.connection};  // checks the options and the TLS files now, not at the first call
    if (options_.connection.db != 0) {
      throw InvalidArgument("swl::ClusterOptions: db " + std::to_string(options_.connection.db) +
                            " is not 0; Redis Cluster has only database 0");
    }
    if (options_.max_redirects < 1) throw InvalidArgument("swl::ClusterOptions: max_redirects must be at least 1");
    if (options_.refresh_interval.count() < 0)
      throw InvalidArgument("swl::ClusterOptions: refresh_interval is negative");
    for (Address& seed : seeds) {
      description_ += ' ' + detail::checkedAddress("swl::ClusterConnection::tcp", seed).endpoint();
      seeds_.push_back(std::move(seed));
    }
  }

  /// Neither copied nor moved: limiters refer to it.
  ///@{
  ClusterConnection(const ClusterConnection&) = delete;
  ClusterConnection& operator=(const ClusterConnection&) = delete;
  ///@}

  using RedisClient::run;
  Reply run(const ScriptCall& call) override {
    const Clock::time_point deadline = deadlineOfCall();
    return follow(call, ownerOf(slotOf(call), deadline), deadline);
  }

  /// Every master involved gets its share of the calls pipelined, all of them at once, so the batch
  /// costs about one round trip however many masters it spans; calls redirected on the way then
  /// finish one by one.
  std::vector<ScriptReply> runMany(const std::vector<ScriptCall>& calls) override {
    const Clock::time_point deadline = deadlineOfCall();
    std::vector<ScriptReply> results(calls.size());
    std::vector<NodeBatch> batches;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      try {
        NodeBatch& batch = batchOf(batches, &ownerOf(slotOf(calls[i]), deadline));
        batch.indices.push_back(i);
        batch.calls.push_back(calls[i]);
      } catch (const Error&) {
        results[i].error = std::current_exception();
      }
    }
    std::vector<std::optional<ConnectionPool::BorrowedConnection>> leases(batches.size());
    std::vector<std::optional<detail::Batch>> sent(batches.size());
    for (std::size_t b = 0; b < batches.size(); ++b) {
      const NodeBatch& batch = batches[b];
      try {
        detail::breakerOf(batch.node->pool)->refuseWhileOpen(batch.node->endpoint);
        leases[b].emplace(batch.node->pool.borrow());
        sent[b].emplace(detail::linkOf(**leases[b]), batch.calls).send();
      } catch (const ConnectionError&) {  // no answer will come; a part written out may have run
        sent[b].reset(), leases[b].reset();
        for (std::size_t index : batch.indices) results[index].error = std::current_exception();
      }
    }
    for (std::size_t b = 0; b < batches.size(); ++b) {
      if (!sent[b]) continue;
      const NodeBatch& batch = batches[b];
      std::vector<ScriptReply> replies = sent[b]->collect();
      leases[b].reset();
      for (std::size_t i = 0; i < replies.size(); ++i) results[batch.indices[i]] = std::move(replies[i]);
    }
    // Every connection is back in its pool: redirections may now borrow from any of them.
    for (NodeBatch& batch : batches) {
      for (std::size_t index : batch.indices) {
        ScriptReply& result = results[index];
        if (result.error && !detail::holdsError<CircuitOpenError>(result.error))
          refreshAfterFailure(*batch.node, deadline);
        if (!result.reply || !result.reply->isError()) continue;
        try {
          result.reply = follow(calls[index], *batch.node, deadline, std::move(result.reply));
        } catch (const Error&) {
          result.error = std::current_exception();
        }
      }
    }
    return results;
  }

  /// Reads the slot map now. Throws ConnectionError when no known node answers CLUSTER SLOTS.
  void refresh() {
    std::lock_guard<std::mutex> lock(refresh_mutex_);
    refreshLocked(nullptr, deadlineOfCall());
  }

  /// "host:port" of the master that serves `redis_key` (reading the slot map first if need be).
  std::string masterOf(std::string_view redis_key) { return ownerOf(hashSlot(redis_key), deadlineOfCall()).endpoint; }

  /// The masters the slot map names, each once, in slot order.
  std::vector<std::string> masters() const {
    std::vector<std::string> endpoints;
    for (const auto& owner : *slots_) {
      const Node* node = owner.load(std::memory_order_acquire);
      if (node != nullptr && std::find(endpoints.begin(), endpoints.end(), node->endpoint) == endpoints.end()) {
        endpoints.push_back(node->endpoint);
      }
    }
    return endpoints;
  }

 private:
  // One master or replica swl has heard of. Nodes are never forgotten, so the slot map can point at
  // them without locks; their connections open only when a slot leads there.
  struct Node {
    Node(Address node_address, const ClusterOptions& options)
        : address(std::move(node_address)),
          endpoint(address.endpoint()),
          pool([&] { return Connection::to(address, options.connection); }, options.pool) {}

    Address address;
    std::string endpoint;
    ConnectionPool pool;
  };

  using SlotTable = std::array<std::atomic<Node*>, kClusterSlots>;
  using Clock = std::chrono::steady_clock;

  // The calls of a batch that one master serves, and the connection they travel on.
  struct NodeBatch {
    Node* node;
    std::vector<std::size_t> indices;
    std::vector<ScriptCall> calls;
  };

  // The batch of `node`'s calls. The batches stay ordered by node, so every thread borrows from the pools
  // in the same order and none waits on another that waits on it; a batch spans few masters.
  static NodeBatch& batchOf(std::vector<NodeBatch>& batches, Node* node) {
    auto at = std::find_if(batches.begin(), batches.end(),
                           [node](const NodeBatch& batch) { return !std::less<Node*>()(batch.node, node); });
    if (at == batches.end() || at->node != node) at = batches.insert(at, NodeBatch{node, {}, {}});
    return *at;
  }

  static std::uint16_t slotOf(const ScriptCall& call) {
    if (call.keyCount() == 0) return 0;  // any master runs a call without keys
    const std::uint16_t slot = hashSlot(call.key(0));
    for (std::size_t i = 1; i < call.keyCount(); ++i) {
      if (hashSlot(call.key(i)) != slot) {
        throw InvalidArgument("swl::ClusterConnection: script " + call.script().name() +
                              " names keys in different hash slots; give them one {hash tag} (see HashTagKey)");
      }
    }
    return slot;
  }

  // The time a call has: its command timeout (or, with none set, a second to find its way).
  Clock::time_point deadlineOfCall() const {
    const std::chrono::milliseconds timeout = options_.connection.command_timeout;
    return Clock::now() + (timeout.count() > 0 ? timeout : std::chrono::milliseconds(1000));
  }

  // Takes the lock if it comes free before `deadline`, trying every millisecond: the waits are short, and
  // a timed mutex's try_lock_until is invisible to ThreadSanitizer on this toolchain (pthread_mutex_clocklock).
  static bool lockBefore(std::unique_lock<std::mutex>& lock, Clock::time_point deadline) {
    while (!lock.try_lock()) {
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  Node& ownerOf(std::uint16_t slot, Clock::time_point deadline) {
    if (Node* owner = (*slots_)[slot].load(std::memory_order_acquire)) return *owner;
    {
      std::unique_lock<std::mutex> lock(refresh_mutex_, std::defer_lock);
      if (lockBefore(lock, deadline) && (*slots_)[slot].load(std::memory_order_acquire) == nullptr) {
        refreshLocked(nullptr, deadline);
      }
    }
    if (Node* owner = (*slots_)[slot].load(std::memory_order_acquire)) return *owner;
    throw ConnectionError(description_ + ": no master serves hash slot " + std::to_string(slot));
  }

  // One call on the cluster, sent to `first` (unless `reply` is its answer already, a batch's) and then
  // wherever the reply machine says (detail/io/call_steps.hpp), until it answers or gives up.
  Reply follow(const ScriptCall& call, Node& first, Clock::time_point deadline, Reply reply = Reply()) {
    detail::CallSteps::Terms terms(options_.connection);
    terms.follows_redirections = true;
    terms.max_redirects = options_.max_redirects;
    terms.give_up_at = deadline;
    detail::CallSteps steps(call.script(), description_, terms);
    Node* asked = &first;
    bool asking = false;
    bool as_script = false;
    if (!reply) reply = sendTo(*asked, call, asking, as_script, deadline);
    for (;;) {
      const detail::CallSteps::Next next = steps.replied(*reply, asked->endpoint, Clock::now(), &asked->address);
      // The pause first: a slot map read after it is the fresher for it.
      if (next.pause.count() > 0) std::this_thread::sleep_for(next.pause);
      switch (next.step) {
        case detail::CallSteps::Step::done:
          return reply;
        case detail::CallSteps::Step::give_up:
          std::rethrow_exception(next.error);
        case detail::CallSteps::Step::resend_to:
        case detail::CallSteps::Step::resend_asking: {
          Node& target = nodeAt(next.redirection->target);
          asking = next.step == detail::CallSteps::Step::resend_asking;
          if (!asking) {  // MOVED: the slot's owner changed, and the map says so from now on
            (*slots_)[next.redirection->slot].store(&target, std::memory_order_release);
            refreshSoon(nullptr, deadline);
          }
          asked = &target;
          break;
        }
        case detail::CallSteps::Step::pause_then_resend:
          if (!asking) asked = &ownerOf(slotOf(call), deadline);
          break;
        case detail::CallSteps::Step::load_then_resend:
          loadOn(*asked, call.script());
          break;
        case detail::CallSteps::Step::resend_as_script:
          as_script = true;
          break;
      }
      reply = sendTo(*asked, call, asking, as_script, deadline);
    }
  }

  // The call's round trip to `node`. A connection that fails may mean a master died: its replica may be
  // serving the slot by the next call, so the slot map is read again soon.
  Reply sendTo(Node& node, const ScriptCall& call, bool asking, bool as_script, Clock::time_point deadline) {
    try {
      return evaluateOn(node, call, asking, as_script);
    } catch (const ConnectionError&) {
      if (!detail::holdsError<CircuitOpenError>(std::current_exception())) refreshAfterFailure(node, deadline);
      throw;
    }
  }

  static Reply evaluateOn(Node& node, const ScriptCall& call, bool asking, bool as_script) {
    detail::breakerOf(node.pool)->refuseWhileOpen(node.endpoint);
    ConnectionPool::BorrowedConnection lease = node.pool.borrow();
    return detail::linkOf(*lease).evaluate(call, asking, as_script);
  }

  static void loadOn(Node& node, const Script& script) {
    detail::breakerOf(node.pool)->refuseWhileOpen(node.endpoint);
    ConnectionPool::BorrowedConnection lease = node.pool.borrow();
    detail::linkOf(*lease).load(script);
  }

  Node& nodeAt(const Address& address) {
    const std::string endpoint = address.endpoint();
    std::lock_guard<std::mutex> lock(nodes_mutex_);
    if (Node* known = knownNode(endpoint)) return *known;
    return *nodes_.emplace_back(std::make_unique<Node>(address, options_));
  }

  // The node at "host:port" once met, else null (callers hold nodes_mutex_). A cluster has few nodes.
  Node* knownNode(std::string_view endpoint) const {
    for (const std::unique_ptr<Node>& node : nodes_) {
      if (node->endpoint == endpoint) return node.get();
    }
    return nullptr;
  }

  // After a call failed on `failed`: the map is read again, within a quarter of a command timeout past
  // the call's own deadline, so that the call's caller waits little longer than the call itself.
  void refreshAfterFailure(Node& failed, Clock::time_point deadline) noexcept {
    refreshSoon(&failed, std::max(deadline, Clock::now() + options_.connection.command_timeout / 4));
  }

  // Reads the map again unless it was read less than refresh_interval ago. A read under way on another
  // thread is waited for only briefly: that thread will have the map right for the next calls.
  void refreshSoon(Node* failed, Clock::time_point until) noexcept {
    std::unique_lock<std::mutex> lock(refresh_mutex_, std::defer_lock);
    if (!lockBefore(lock, Clock::now() + std::chrono::milliseconds(2))) return;
    if (Clock::now() < last_refresh_ + options_.refresh_interval) return;
    try {
      refreshLocked(failed, until);
    } catch (const Error&) {
      // The calls that need the map will say why it cannot be read.
    }
  }

  // Asks the masters it knows, then the seeds, and `failed` (the node a call just failed on) last, until
  // one answers CLUSTER SLOTS. Nodes whose circuit is open are passed by, and each node gets only the
  // time left until `until`.
  void refreshLocked(Node* failed, Clock::time_point until) {
    last_refresh_ = Clock::now();
    std::vector<Node*> candidates;
    const auto add = [&](Node* node) {
      if (node != failed && std::find(candidates.begin(), candidates.end(), node) == candidates.end()) {
        candidates.push_back(node);
      }
    };
    for (const std::string& master : masters()) {
      std::lock_guard<std::mutex> lock(nodes_mutex_);
      if (Node* node = knownNode(master)) add(node);  // every master was met through nodeAt, and stays
    }
    for (const Address& seed : seeds_) add(&nodeAt(seed));
    if (failed != nullptr) candidates.push_back(failed);

    std::string errors;
    for (Node* node : candidates) {
      try {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
        if (left.count() <= 0) throw TimeoutError("no time left to ask " + node->endpoint);
        detail::breakerOf(node->pool)->refuseWhileOpen(node->endpoint);
        ConnectionPool::BorrowedConnection lease = node->pool.borrow(left);
        const Reply reply = detail::linkOf(*lease).command({"CLUSTER", "SLOTS"}, left);
        apply(detail::parseClusterSlots(*reply, node->address));
        return;
      } catch (const Error& error) {
        errors += errors.empty() ? "" : "; ";
        errors += error.what();
      }
    }
    throw ConnectionError(description_ + ": no node answered CLUSTER SLOTS: " + errors);
  }

  void apply(const std::vector<detail::SlotRange>& ranges) {
    std::vector<Node*> owners(kClusterSlots, nullptr);
    for (const detail::SlotRange& range : ranges) {
      Node* owner = &nodeAt(range.master);
      std::fill(owners.begin() + range.first, owners.begin() + range.last + 1, owner);
    }
    for (std::size_t slot = 0; slot < kClusterSlots; ++slot) {
      (*slots_)[slot].store(owners[slot], std::memory_order_release);
    }
  }

  ClusterOptions options_;
  std::vector<Address> seeds_;
  std::unique_ptr<SlotTable> slots_;  // which master serves each slot; null: ask the cluster

  std::mutex nodes_mutex_;
  std::vector<std::unique_ptr<Node>> nodes_;  // each "host:port" once

  std::mutex refresh_mutex_;  // one map reader at a time
  Clock::time_point last_refresh_{};
  std::string description_;
};

}  // namespace swl

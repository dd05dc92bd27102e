#pragma once
// A batch: many script calls on one Link, written out in one go and answered in order, with what a batch
// needs around its calls: TIME ahead of them when one carries a deadline and the clock's reading is stale,
// WAIT after them when replicas must acknowledge their writes, and, for the calls that met an empty
// script cache, one SCRIPT LOAD per script and those calls once more, as the reply machine says
// (CallSteps). Replies are left unjudged, error replies included; only a failed connection sets
// ScriptReply::error. Connection::runMany, Sentinel and the Cluster (one batch per master, all written
// before any is read) use it.

#include <swl/detail/io/call_steps.hpp>
#include <swl/detail/io/link.hpp>
#include <swl/detail/io/outgoing.hpp>
#include <swl/error.hpp>
#include <swl/redis/client.hpp>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <string_view>
#include <utility>
#include <vector>

namespace swl::detail {

class Batch {
 public:
  // A batch of `calls` on `link`; both must outlive it, and nothing else may use the link between
  // send() and collect().
  Batch(Link& link, const std::vector<ScriptCall>& calls) noexcept : link_(&link), calls_(&calls) {}

  // send() and collect() at once.
  static std::vector<ScriptReply> run(Link& link, const std::vector<ScriptCall>& calls) {
    Batch batch(link, calls);
    try {
      batch.send();
    } catch (const Error&) {
      std::vector<ScriptReply> results(calls.size());
      for (ScriptReply& result : results) result.error = std::current_exception();
      return results;
    }
    return batch.collect();
  }

  // Writes the calls out. Throws ConnectionError when they could not all be written; none is waiting
  // for an answer then.
  void send() {
    const std::vector<ScriptCall>& calls = *calls_;
    const bool time = link_->clockStale() && std::any_of(calls.begin(), calls.end(), [](const ScriptCall& call) {
                        return call.deadlineWord() != 0;
                      });
    const std::size_t first = time ? 1 : 0;
    link_->queue(first + calls.size() + link_->waits(), [&](std::size_t i) {
      if (i < first) return kTimeCommand.words();
      return i - first < calls.size() ? link_->wordsFor(calls[i - first]) : link_->waitWords();
    });
    link_->flush();
    time_asked_ = time;  // only once it is on its way: a failed send leaves nothing to read
  }

  // Reads the answers of what send() wrote, in input order.
  std::vector<ScriptReply> collect() {
    const std::vector<ScriptCall>& calls = *calls_;
    std::vector<ScriptReply> results(calls.size());
    Reply acknowledged;
    try {
      const std::size_t first = std::exchange(time_asked_, false) ? 1 : 0;
      link_->receive(first + calls.size() + link_->waits(), [&](std::size_t i, Reply reply) {
        if (i < first) return link_->readTime(*reply);
        i -= first;
        (i < calls.size() ? results[i].reply : acknowledged) = std::move(reply);
      });
      if (link_->waits() != 0) unacknowledgedFail(results, acknowledged);
    } catch (const Error&) {
      for (ScriptReply& result : results) {
        if (!result.reply) result.error = std::current_exception();
      }
    }
    resendWhereScriptMissing(results);
    return results;
  }

 private:
  // The calls that met an empty script cache (NOSCRIPT), and those sent as the module's command that the
  // module could not take (CallSteps' resend_as_script), run once more as the script, after one SCRIPT
  // LOAD per script; their replies, or errors, replace the first ones in `results`.
  void resendWhereScriptMissing(std::vector<ScriptReply>& results) {
    const std::vector<ScriptCall>& calls = *calls_;
    std::vector<std::size_t> again;
    std::vector<const Script*> loaded;
    const CallSteps::Clock::time_point now = CallSteps::Clock::now();
    for (std::size_t index = 0; index < calls.size(); ++index) {
      ScriptReply& result = results[index];
      const Script& script = calls[index].script();
      if (!result.reply) continue;
      const CallSteps::Next next =
          CallSteps(script, link_->endpoint(), link_->stepTerms()).replied(*result.reply, link_->endpoint(), now);
      if (next.step != CallSteps::Step::load_then_resend && next.step != CallSteps::Step::resend_as_script) continue;
      if (next.module_gone) link_->forgetModule();
      result.reply = Reply();
      try {
        if (std::find(loaded.begin(), loaded.end(), &script) == loaded.end()) {
          link_->load(script), loaded.push_back(&script);
        }
        again.push_back(index);
      } catch (const Error&) {
        result.error = std::current_exception();
      }
    }
    if (again.empty()) return;
    Reply acknowledged;
    try {
      link_->pipeline(
          again.size() + link_->waits(),
          [&](std::size_t i) { return i < again.size() ? wordsOf(calls[again[i]]) : link_->waitWords(); },
          [&](std::size_t i, Reply reply) {
            (i < again.size() ? results[again[i]].reply : acknowledged) = std::move(reply);
          });
      if (link_->waits() != 0) unacknowledgedFail(results, acknowledged);
    } catch (const Error&) {
      for (std::size_t index : again) {
        if (!results[index].reply) results[index].error = std::current_exception();
      }
    }
  }

  // Fewer replicas acknowledged the batch than asked: every call it answered fails with WAIT's
  // TimeoutError (they ran, and a failover now could lose them).
  void unacknowledgedFail(std::vector<ScriptReply>& results, const Reply& acknowledged) const {
    try {
      link_->requireAcknowledged(*acknowledged);
    } catch (const TimeoutError&) {
      for (ScriptReply& result : results) {
        if (result.reply && !result.reply->isError()) result.reply = Reply(), result.error = std::current_exception();
      }
    }
  }

  Link* link_;
  const std::vector<ScriptCall>* calls_;
  bool time_asked_ = false;  // send() sent TIME ahead of the calls: collect() reads its reply first
};

// A batch's replies, each error reply turned into its Outcome's error (a batch throws for none).
inline std::vector<ScriptReply> errorRepliesAsErrors(std::vector<ScriptReply> results, std::string_view endpoint,
                                                     const std::vector<ScriptCall>& calls) {
  for (std::size_t i = 0; i < calls.size(); ++i) {
    ScriptReply& result = results[i];
    if (result.reply && result.reply->isError()) {
      result.error = scriptError(endpoint, calls[i].script(), *result.reply);
      result.reply = Reply();
    }
  }
  return results;
}

}  // namespace swl::detail

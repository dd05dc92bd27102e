#pragma once
// The sessions made on one Asio execution context, ended when it shuts down. A call in flight holds its
// session (to send again after NOSCRIPT, to end early), and the session holds the call until hiredis
// hands its reply back: a cycle that only the reply, or the session's end, breaks. An io_context
// destroyed while calls await a reply (Redis stopped, say) never runs them again, so the context's own
// shutdown ends each session it still has: hiredis's context is freed (its socket closed), and the calls
// are destroyed without their handlers being run, as Asio destroys every handler it never ran.

#include <swl/asio/backend.hpp>

#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace swl::detail {

// A service of the context: Asio makes one per execution context, and calls its shutdown() when the
// context is shut down or destroyed, before it destroys the handlers still queued on it. `Session` has
// `void shutdown()`.
template <class Session>
class ContextSessions final : public asio::execution_context::service {
 public:
  inline static asio::execution_context::id id;

  explicit ContextSessions(asio::execution_context& context) : asio::execution_context::service(context) {}

  // `session`, whose work runs on `executor`, ends when that executor's context shuts down.
  static void enroll(const std::shared_ptr<Session>& session, const asio::any_io_executor& executor) {
    auto& sessions = asio::use_service<ContextSessions>(asio::query(executor, asio::execution::context));
    const std::lock_guard<std::mutex> lock(sessions.mutex_);
    // Sessions come and go with connections, not calls: a walk over the list per new one is nothing.
    auto& enrolled = sessions.sessions_;
    enrolled.erase(std::remove_if(enrolled.begin(), enrolled.end(), [](const auto& weak) { return weak.expired(); }),
                   enrolled.end());
    enrolled.push_back(session);
  }

 private:
  // On the thread that shuts the context down: no other thread runs it any more.
  void shutdown() override {
    std::vector<std::weak_ptr<Session>> enrolled;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      enrolled.swap(sessions_);
    }
    for (const std::weak_ptr<Session>& weak : enrolled) {
      if (const std::shared_ptr<Session> session = weak.lock()) session->shutdown();
    }
  }

  std::mutex mutex_;
  std::vector<std::weak_ptr<Session>> sessions_;
};

}  // namespace swl::detail

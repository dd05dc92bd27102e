#pragma once
/// \file
/// Every Lua script swl sends to Redis, each whole and exactly as Redis receives it (loaded once with
/// SCRIPT LOAD, then called by its SHA-1 with EVALSHA), for whoever audits what runs inside their Redis.
/// examples/swl_scripts prints them; tests/test_scripts.cpp loads each into a real Redis, and checks that
/// docs/scripts.md shows the log's as it is.

#include <swl/algorithms/bucketed_window.hpp>
#include <swl/algorithms/fixed_window.hpp>
#include <swl/algorithms/gcra.hpp>
#include <swl/algorithms/sliding_counter.hpp>
#include <swl/algorithms/sliding_window.hpp>
#include <swl/composites/multi_limiter.hpp>
#include <swl/concurrency_limiter.hpp>
#include <swl/periodic_limiter.hpp>
#include <swl/redis/client.hpp>
#include <swl/redis_limiter.hpp>

#include <vector>

namespace swl {

/// Each script once: the log's decision, settle, lease and check, MultiLimiter's and its holds', the other algorithms'
/// (the bucketed window's is one for any number of buckets: it takes them as an argument), the periodic quota's
/// (calendar days and months), each decision's blocking variant (LimiterOptions::block_for), the concurrency slots',
/// and the one that forgets a key (reset).
inline std::vector<const Script*> everyScript() {
  const detail::SlotScripts& slots = detail::slotScripts();
  return {&detail::scriptOf<SlidingWindowLog>(),
          &detail::scriptOf<SlidingWindowLog, detail::ScriptRole::settle>(),
          &detail::scriptOf<SlidingWindowLog, detail::ScriptRole::lease>(),
          &detail::logCheckScript(),
          &MultiLimiter<>::script(),
          &MultiLimiter<>::holdsScript(),
          &detail::scriptOf<FixedWindow>(),
          &detail::scriptOf<SlidingCounter>(),
          &detail::scriptOf<Gcra>(),
          &detail::scriptOf<BucketedWindow<>>(),
          &detail::scriptOf<detail::PeriodicWindow>(),
          &detail::scriptOf<SlidingWindowLog>(true),
          &detail::scriptOf<SlidingWindowLog, detail::ScriptRole::lease>(true),
          &detail::scriptOf<FixedWindow>(true),
          &detail::scriptOf<SlidingCounter>(true),
          &detail::scriptOf<Gcra>(true),
          &detail::scriptOf<BucketedWindow<>>(true),
          &detail::scriptOf<detail::PeriodicWindow>(true),
          &slots.acquire,
          &slots.release,
          &slots.extend,
          &detail::forgetScript()};
}

}  // namespace swl

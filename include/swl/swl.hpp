#pragma once
/// \file
/// swl: exact, distributed rate limiting on Redis. Include this one header.
///
/// The folders are the map, from the values at the bottom to the limiters built of limiters at the top:
///   error, decision, options, observer   the values every layer shares
///   limiter                              the contract every limiter keeps, and what they all do alike
///   policies/                            how keys, members and expiries are chosen
///   redis/                               the clients: one connection, a pool, a cluster, Sentinel
///   redis_limiter, algorithms/           the Redis engine, and the five algorithms it runs
///   local_limiter                        the same window in this process's memory
///   concurrency_limiter                  at most N in flight per key, on Redis
///   composites/                          limiters made of limiters: tiered, multi, sharded
///   integrations/                        HTTP headers (here), Prometheus (swl::prometheus, not here)
///   async/                               the event-loop connection and limiters (swl::async, not here)
///   detail/                              what users never name

#include <swl/access_list.hpp>
#include <swl/algorithm.hpp>
#include <swl/algorithms/bucketed_window.hpp>
#include <swl/algorithms/fixed_window.hpp>
#include <swl/algorithms/gcra.hpp>
#include <swl/algorithms/sliding_counter.hpp>
#include <swl/algorithms/sliding_window.hpp>
#include <swl/borrowed_text.hpp>
#include <swl/composites/leasing_limiter.hpp>
#include <swl/composites/multi_limiter.hpp>
#include <swl/composites/sharded_limiter.hpp>
#include <swl/composites/tiered_limiter.hpp>
#include <swl/concurrency_limiter.hpp>
#include <swl/connection_options.hpp>
#include <swl/decision.hpp>
#include <swl/error.hpp>
#include <swl/integrations/http_headers.hpp>
#include <swl/limiter.hpp>
#include <swl/local_limiter.hpp>
#include <swl/observer.hpp>
#include <swl/options.hpp>
#include <swl/periodic_limiter.hpp>
#include <swl/periods.hpp>
#include <swl/policies/keys.hpp>
#include <swl/policies/members.hpp>
#include <swl/policies/ttl.hpp>
#include <swl/redis/client.hpp>
#include <swl/redis/cluster_connection.hpp>
#include <swl/redis/connection.hpp>
#include <swl/redis/connection_pool.hpp>
#include <swl/redis/hash_slot.hpp>
#include <swl/redis/sentinel_connection.hpp>
#include <swl/redis_limiter.hpp>
#include <swl/scripts.hpp>
#include <swl/testing/manual_clock.hpp>

#pragma once
// swl: exact, distributed rate limiting on Redis. Include this one header.

#include <swl/basic_limiter.hpp>
#include <swl/clock.hpp>
#include <swl/cluster_connection.hpp>
#include <swl/connection.hpp>
#include <swl/connection_options.hpp>
#include <swl/connection_pool.hpp>
#include <swl/counter_limiter.hpp>
#include <swl/error.hpp>
#include <swl/fixed_window.hpp>
#include <swl/gcra.hpp>
#include <swl/hash_slot.hpp>
#include <swl/key_policy.hpp>
#include <swl/limit.hpp>
#include <swl/limiter_options.hpp>
#include <swl/member_policy.hpp>
#include <swl/multi_limiter.hpp>
#include <swl/outcome.hpp>
#include <swl/redis_client.hpp>
#include <swl/script.hpp>
#include <swl/sliding_counter.hpp>
#include <swl/sliding_window.hpp>
#include <swl/ttl_policy.hpp>

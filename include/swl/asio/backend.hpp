#pragma once
/// \file
/// Which Asio swl's Asio face runs on: standalone Asio (Debian libasio-dev) by default, Boost.Asio
/// (libboost-dev) when SWL_USE_BOOST_ASIO is defined, as the CMake target swl::boost_asio does, the way
/// asio-grpc and Crow choose. The rest of swl names it only through these aliases, so the same code
/// serves both:
///
///   swl::asio                the Asio namespace (::asio or boost::asio)
///   swl::asio_error_code     the error code its handlers take (std::error_code or boost::system::error_code)
///   swl::asio_system_error   what use_future, use_awaitable and a co_awaited deferred operation throw for
///                            an error code (std::system_error or boost::system::system_error)
///   swl::asio_default_token  the completion token of an operation given none: asio::deferred, which a
///                            C++20 coroutine awaits directly, on an Asio that can await it (1.26 and
///                            later, Boost 1.81 and later); before that asio::experimental::deferred, which
///                            a coroutine hands asio::use_awaitable: `co_await op(asio::use_awaitable)`

#include <system_error>

#ifdef SWL_USE_BOOST_ASIO
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/version.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#if BOOST_ASIO_VERSION >= 102600
#include <boost/asio/deferred.hpp>
#else
#include <boost/asio/experimental/deferred.hpp>
#endif
namespace swl {
namespace asio = boost::asio;
using asio_error_code = boost::system::error_code;
using asio_system_error = boost::system::system_error;
#if BOOST_ASIO_VERSION >= 102600
using asio_default_token = asio::deferred_t;
#else
using asio_default_token = asio::experimental::deferred_t;
#endif
}  // namespace swl
#else
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/bind_executor.hpp>
#include <asio/dispatch.hpp>
#include <asio/execution/context.hpp>
#include <asio/execution/outstanding_work.hpp>
#include <asio/execution_context.hpp>
#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/post.hpp>
#include <asio/prefer.hpp>
#include <asio/query.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/version.hpp>
#if ASIO_VERSION >= 102600
#include <asio/deferred.hpp>
#else
#include <asio/experimental/deferred.hpp>
#endif
namespace swl {
namespace asio = ::asio;
using asio_error_code = std::error_code;
using asio_system_error = std::system_error;
#if ASIO_VERSION >= 102600
using asio_default_token = asio::deferred_t;
#else
using asio_default_token = asio::experimental::deferred_t;
#endif
}  // namespace swl
#endif

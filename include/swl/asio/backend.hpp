#pragma once
/// \file
/// Which Asio swl's Asio face runs on: standalone Asio (Debian libasio-dev) by default, Boost.Asio
/// (libboost-dev) when SWL_USE_BOOST_ASIO is defined, as the CMake target swl::boost_asio does, the way
/// asio-grpc and Crow choose. The rest of swl names it only through these aliases, so the same code
/// serves both:
///
///   swl::asio               the Asio namespace (::asio or boost::asio)
///   swl::asio_error_code    the error code its handlers take (std::error_code or boost::system::error_code)

#include <system_error>

#ifdef SWL_USE_BOOST_ASIO
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/system/error_code.hpp>
namespace swl {
namespace asio = boost::asio;
using asio_error_code = boost::system::error_code;
}  // namespace swl
#else
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/bind_executor.hpp>
#include <asio/dispatch.hpp>
#include <asio/execution/outstanding_work.hpp>
#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/post.hpp>
#include <asio/prefer.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
namespace swl {
namespace asio = ::asio;
using asio_error_code = std::error_code;
}  // namespace swl
#endif

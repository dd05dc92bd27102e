#pragma once
/// \file
/// The error codes of swl's Asio operations: which swl::Error kept a call from being decided, for a
/// handler's `error_code` (std::error_code under standalone Asio; boost::system::error_code holds it
/// under Boost.Asio). A cancelled operation ends with Asio's own `asio::error::operation_aborted`.
///
///   limiter.async_try_acquire("user:42", 1, [](swl::asio_error_code error, swl::Decision decision) {
///     if (error == swl::AsioErrc::timeout) ...
///   });
///
/// The message of the error itself (which server, what it said) goes to the limiter's observer.

#include <swl/error.hpp>

#include <exception>
#include <string>
#include <system_error>

namespace swl {

/// One per kind of swl::Error (error.hpp); `unknown` for anything else.
enum class AsioErrc {
  invalid_argument = 1,  ///< InvalidArgument: bad input, or a call the client refused to send
  connection,            ///< ConnectionError: no connection, or it broke
  timeout,               ///< TimeoutError: no reply before the call's deadline
  auth,                  ///< AuthError: the server refused the credentials
  tls,                   ///< TlsError
  circuit_open,          ///< CircuitOpenError: not asked while the server's circuit is open
  reply,                 ///< ReplyError: the server answered with an error
  protocol,              ///< ProtocolError: a reply swl cannot read
  unknown,               ///< an error of no swl kind
};

/// The category of AsioErrc, named "swl".
inline const std::error_category& asioCategory() noexcept {
  struct Category final : std::error_category {
    const char* name() const noexcept override { return "swl"; }
    std::string message(int value) const override {
      switch (static_cast<AsioErrc>(value)) {
        case AsioErrc::invalid_argument:
          return "invalid argument";
        case AsioErrc::connection:
          return "no connection to Redis";
        case AsioErrc::timeout:
          return "Redis did not answer before the deadline";
        case AsioErrc::auth:
          return "Redis refused the credentials";
        case AsioErrc::tls:
          return "TLS failed";
        case AsioErrc::circuit_open:
          return "the server's circuit is open";
        case AsioErrc::reply:
          return "Redis answered with an error";
        case AsioErrc::protocol:
          return "a reply swl cannot read";
        case AsioErrc::unknown:
          break;
      }
      return "swl error";
    }
  };
  static const Category category;
  return category;
}

/// The std::error_code of `value` (found by argument-dependent lookup, so `error == swl::AsioErrc::timeout`
/// compares).
inline std::error_code make_error_code(AsioErrc value) noexcept { return {static_cast<int>(value), asioCategory()}; }

/// The code for the swl::Error `error` holds (most derived kind first).
inline std::error_code errorCodeOf(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const InvalidArgument&) {
    return make_error_code(AsioErrc::invalid_argument);
  } catch (const TimeoutError&) {
    return make_error_code(AsioErrc::timeout);
  } catch (const AuthError&) {
    return make_error_code(AsioErrc::auth);
  } catch (const TlsError&) {
    return make_error_code(AsioErrc::tls);
  } catch (const CircuitOpenError&) {
    return make_error_code(AsioErrc::circuit_open);
  } catch (const ConnectionError&) {
    return make_error_code(AsioErrc::connection);
  } catch (const ProtocolError&) {
    return make_error_code(AsioErrc::protocol);
  } catch (const ReplyError&) {
    return make_error_code(AsioErrc::reply);
  } catch (...) {
    return make_error_code(AsioErrc::unknown);
  }
}

}  // namespace swl

// The standard's hook that makes AsioErrc an error code: nothing of swl's for the reference to show.
/// \cond
template <>
struct std::is_error_code_enum<swl::AsioErrc> : std::true_type {};
/// \endcond

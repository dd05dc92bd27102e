#pragma once
/// \file
/// The exceptions swl throws. Catch swl::Error for everything, or a branch for one kind of trouble:
///
///   Error                    anything swl throws
///   ├── InvalidArgument      the caller's input or configuration is wrong; nothing was sent to Redis
///   ├── ConnectionError      Redis could not be reached or the connection broke (refused, reset, EOF)
///   │   ├── TimeoutError     connecting or waiting for a reply took longer than the configured timeout
///   │   ├── AuthError        Redis refused the credentials (the message never contains the password); also
///   │   │                    every call while the circuit this opened is open
///   │   ├── TlsError         the TLS handshake failed: the server's certificate was not accepted, or ours
///   │   │                    (likewise while its circuit is open)
///   │   └── CircuitOpenError Redis could not be reached moments ago (a timeout, a refused connect) and is
///   │                        not asked again until its cool-down passed
///   └── ReplyError           Redis answered with an error (OOM, NOSCRIPT that persists, WRONGTYPE, ...)
///       └── ProtocolError    Redis answered, but not in the shape swl expects
///
/// ConnectionError and ReplyError are "Redis could not decide": a limiter hands them to its failure policy.
/// InvalidArgument is always thrown: failing open on a programming error would hide it.

#include <swl/detail/messages.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

/// Exact, distributed rate limiting on Redis. What users never name lives in swl::detail.
namespace swl {

/// Anything swl throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The caller's input or configuration is wrong; nothing was sent to Redis.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// Redis could not be reached or the connection broke (refused, reset, EOF).
class ConnectionError : public Error {
 public:
  using Error::Error;
};

/// Connecting or waiting for a reply took longer than the configured timeout.
class TimeoutError : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};

/// Redis refused the credentials (the message never contains the password); also every
/// call while the circuit this opened is open.
class AuthError : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};

/// The TLS handshake failed: the server's certificate was not accepted, or ours (likewise while
/// its circuit is open).
class TlsError : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};

/// Redis could not be reached moments ago (a timeout, a refused connect) and is not asked again
/// until its cool-down passed.
class CircuitOpenError : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};

/// Redis answered with an error (OOM, NOSCRIPT that persists, WRONGTYPE, ...).
class ReplyError : public Error {
 public:
  using Error::Error;
};

/// Redis answered, but not in the shape swl expects.
class ProtocolError : public ReplyError {
 public:
  using ReplyError::ReplyError;
};

}  // namespace swl

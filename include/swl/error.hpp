#pragma once
// The exceptions swl throws. Catch swl::Error for everything, or a branch for one kind of trouble:
//
//   Error                    anything swl throws
//   ├── InvalidArgument      the caller's input or configuration is wrong; nothing was sent to Redis
//   ├── ConnectionError      Redis could not be reached or the connection broke (refused, reset, EOF)
//   │   ├── TimeoutError     connecting or waiting for a reply took longer than the configured timeout
//   │   └── AuthError        Redis refused the credentials (the message never contains the password)
//   └── ReplyError           Redis answered with an error (OOM, NOSCRIPT that persists, WRONGTYPE, ...)
//       └── ProtocolError    Redis answered, but not in the shape swl expects
//
// ConnectionError and ReplyError are "Redis could not decide": a limiter hands them to its failure policy.
// InvalidArgument is always thrown: failing open on a programming error would hide it.

#include <stdexcept>

namespace swl {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InvalidArgument : public Error {
 public:
  using Error::Error;
};

class ConnectionError : public Error {
 public:
  using Error::Error;
};

class TimeoutError : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};

class AuthError : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};

class ReplyError : public Error {
 public:
  using Error::Error;
};

class ProtocolError : public ReplyError {
 public:
  using ReplyError::ReplyError;
};

}  // namespace swl

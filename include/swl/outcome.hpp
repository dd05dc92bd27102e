#pragma once
// Outcome: a decision that could not be thrown. Batches (one failed key must not hide the others'
// decisions) and async callbacks (no caller stack to throw into) hand back an Outcome per request.

#include <swl/limit.hpp>

#include <exception>

namespace swl {

struct Outcome {
  // What to do with the request: Redis's answer, the failure policy's, or a denial when `error` is set.
  Decision decision;
  // Set when the request was invalid (InvalidArgument), or when Redis could not decide and the failure
  // policy is FailurePolicy::throw_error; what tryAcquire would have thrown.
  std::exception_ptr error;

  bool ok() const noexcept { return !error; }

  // The decision, or the error rethrown: the batch or callback twin of calling tryAcquire.
  const Decision& value() const {
    if (error) std::rethrow_exception(error);
    return decision;
  }
};

}  // namespace swl

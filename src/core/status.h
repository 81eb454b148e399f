// Status: the error type of every fallible call in dbstreams.
//
// Contract:
//  - A default-constructed Status is OK and costs one null pointer.
//  - A non-OK Status carries a code, a message meant for the operator (it names the object
//    that failed and, where possible, what to do), and whether retrying the same call unchanged
//    may succeed (`retryable()`): network blips, lock timeouts and unavailable servers are
//    retryable; bad input, missing privileges and corruption are not.
//  - Status is cheap to move and safe to copy. It is not thread-safe to mutate one instance
//    from several threads (there is nothing to mutate after construction but WithContext,
//    which returns a new Status).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace dbs {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,     // the caller's input is wrong (config, request, identifier)
  kNotFound,            // a named object does not exist
  kAlreadyExists,       // creating something that exists
  kPermissionDenied,    // authenticated, but lacking a privilege
  kUnauthenticated,     // wrong or missing credentials
  kFailedPrecondition,  // the system is not in a state that allows the call
  kUnavailable,         // a server or service cannot be reached right now
  kTimeout,             // a deadline passed
  kCorruption,          // bytes that do not decode (untrusted input, damaged data)
  kUnsupported,         // a type, feature or version we do not handle
  kResourceExhausted,   // a limit was hit (payload size, memory budget, disk)
  kAborted,             // a concurrent conflict (deadlock, serialization failure)
  kCancelled,           // the operation was stopped on request
  kIoError,             // local file or OS error
  kInternal,            // a bug: an invariant did not hold
};

// Whether a failed call may succeed if retried unchanged.
enum class Retry : uint8_t { kFail = 0, kRetry = 1 };

std::string_view StatusCodeName(StatusCode code);

// The retry class a code has unless the caller says otherwise.
Retry DefaultRetry(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);
  Status(StatusCode code, Retry retry, std::string message);

  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return Status(StatusCode::kInvalidArgument, std::move(msg));
  }
  static Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
  static Status AlreadyExists(std::string msg) {
    return Status(StatusCode::kAlreadyExists, std::move(msg));
  }
  static Status PermissionDenied(std::string msg) {
    return Status(StatusCode::kPermissionDenied, std::move(msg));
  }
  static Status Unauthenticated(std::string msg) {
    return Status(StatusCode::kUnauthenticated, std::move(msg));
  }
  static Status FailedPrecondition(std::string msg) {
    return Status(StatusCode::kFailedPrecondition, std::move(msg));
  }
  static Status Unavailable(std::string msg) {
    return Status(StatusCode::kUnavailable, std::move(msg));
  }
  static Status Timeout(std::string msg) { return Status(StatusCode::kTimeout, std::move(msg)); }
  static Status Corruption(std::string msg) {
    return Status(StatusCode::kCorruption, std::move(msg));
  }
  static Status Unsupported(std::string msg) {
    return Status(StatusCode::kUnsupported, std::move(msg));
  }
  static Status ResourceExhausted(std::string msg) {
    return Status(StatusCode::kResourceExhausted, std::move(msg));
  }
  static Status Aborted(std::string msg) { return Status(StatusCode::kAborted, std::move(msg)); }
  static Status Cancelled(std::string msg) {
    return Status(StatusCode::kCancelled, std::move(msg));
  }
  static Status IoError(std::string msg) { return Status(StatusCode::kIoError, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  bool retryable() const { return rep_ != nullptr && rep_->retry == Retry::kRetry; }
  // Empty for OK.
  const std::string& message() const;

  // "NotFound: table public.t does not exist" or "OK".
  std::string ToString() const;

  // A copy whose message is prefixed with `context` ("reading public.t: <message>").
  // OK stays OK.
  Status WithContext(std::string_view context) const;
  // A copy with the retry class replaced.
  Status WithRetry(Retry retry) const;

 private:
  struct Rep {
    StatusCode code;
    Retry retry;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;
};

}  // namespace dbs

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define DBS_RETURN_IF_ERROR(expr)                      \
  do {                                                 \
    ::dbs::Status dbs_status_tmp_ = (expr);            \
    if (!dbs_status_tmp_.ok()) return dbs_status_tmp_; \
  } while (0)

// Result<T>: a value or a non-OK Status.
//
// Contract: a Result built from a Status must not be built from an OK Status (that is a bug;
// it is turned into an Internal error so release builds still fail loudly). Accessing value()
// of an error Result aborts: check ok() first or use DBS_ASSIGN_OR_RETURN.
#pragma once

#include <cstdlib>
#include <utility>
#include <variant>

#include "core/status.h"

namespace dbs {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<1>, std::move(value)) {}        // NOLINT: implicit
  Result(Status status) : v_(std::in_place_index<0>, std::move(status)) {  // NOLINT: implicit
    if (std::get<0>(v_).ok()) {
      v_.template emplace<0>(Status::Internal("Result constructed from an OK Status"));
    }
  }

  bool ok() const { return v_.index() == 1; }
  // OK when a value is held.
  Status status() const { return ok() ? Status() : std::get<0>(v_); }

  T& value() & {
    Check();
    return std::get<1>(v_);
  }
  const T& value() const& {
    Check();
    return std::get<1>(v_);
  }
  T&& value() && {
    Check();
    return std::get<1>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void Check() const {
    if (!ok()) std::abort();
  }
  std::variant<Status, T> v_;
};

}  // namespace dbs

#define DBS_CONCAT_INNER_(a, b) a##b
#define DBS_CONCAT_(a, b) DBS_CONCAT_INNER_(a, b)
#define DBS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

// `DBS_ASSIGN_OR_RETURN(auto x, Foo());` declares x from Foo()'s value, or returns its Status.
#define DBS_ASSIGN_OR_RETURN(lhs, expr) \
  DBS_ASSIGN_OR_RETURN_IMPL_(DBS_CONCAT_(dbs_result_tmp_, __LINE__), lhs, expr)

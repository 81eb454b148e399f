#include "core/status.h"
#include "core/result.h"

#include <gtest/gtest.h>

namespace dbs {
namespace {

TEST(Status, OkIsCheapAndEmpty) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.message(), "");
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_FALSE(s.retryable());
}

TEST(Status, CarriesCodeMessageAndRetryClass) {
  Status s = Status::Unavailable("mariadb at 127.0.0.1:3306 is not reachable");
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.retryable());
  EXPECT_EQ(s.ToString(), "Unavailable: mariadb at 127.0.0.1:3306 is not reachable");
  EXPECT_FALSE(Status::PermissionDenied("x").retryable());
  EXPECT_FALSE(Status::Corruption("x").retryable());
  EXPECT_TRUE(Status::Timeout("x").retryable());
  EXPECT_FALSE(Status::Timeout("x").WithRetry(Retry::kFail).retryable());
}

TEST(Status, ContextPrefixesAndCopiesAreIndependent) {
  Status a = Status::NotFound("table t");
  Status b = a.WithContext("reading db1");
  EXPECT_EQ(b.message(), "reading db1: table t");
  EXPECT_EQ(b.code(), StatusCode::kNotFound);
  Status c = a;
  EXPECT_EQ(c.message(), "table t");
  EXPECT_TRUE(Status().WithContext("x").ok());
}

Result<int> Half(int v) {
  if (v % 2) return Status::InvalidArgument("odd");
  return v / 2;
}

Result<int> Quarter(int v) {
  DBS_ASSIGN_OR_RETURN(int h, Half(v));
  DBS_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(Result, PropagatesValuesAndErrors) {
  EXPECT_EQ(*Quarter(8), 2);
  auto r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "odd");
  Result<int> bad(Status::Ok());
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace dbs

// MySQL character sets -> UTF-8 for binlog row images (src/sources/mysql/charset.h).
#include <gtest/gtest.h>

#include "sources/mysql/charset.h"

namespace dbs::mysql {
namespace {

TEST(MysqlCharset, ConvertsExactlyOrFails) {
  EXPECT_TRUE(IsUtf8OrBinaryCharset("utf8mb4"));
  EXPECT_TRUE(IsUtf8OrBinaryCharset("UTF8MB3"));
  EXPECT_TRUE(IsUtf8OrBinaryCharset("binary"));
  EXPECT_FALSE(IsUtf8OrBinaryCharset("latin1"));
  // MySQL's latin1: Windows-1252 plus the C1 controls for its five undefined bytes.
  EXPECT_EQ(*CharsetToUtf8("latin1", "\x80\x81\x8d\xe9\xff"), "€\u0081\u008déÿ");
  EXPECT_EQ(*CharsetToUtf8("cp1251", "\xcc\xee\xf1\xea\xe2\xe0"), "Москва");
  EXPECT_EQ(*CharsetToUtf8("gbk", "\xc4\xe3\xba\xc3"), "你好");
  EXPECT_EQ(*CharsetToUtf8("utf8mb4", "\xf0\x9f\x98\x80"), "😀");
  // No Unicode mapping: an error naming the character set, never '?'.
  auto bad = CharsetToUtf8("cp1251", "a\x98z");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cp1251"), std::string::npos);
  EXPECT_NE(bad.status().message().find("offset 1"), std::string::npos);
  EXPECT_FALSE(CharsetToUtf8("ascii", "caf\xe9").ok());
  EXPECT_FALSE(CharsetToUtf8("gbk", "\x81\xff").ok());
  EXPECT_EQ(CharsetToUtf8("nosuchset", "x").status().code(), StatusCode::kUnsupported);
  // Long input crosses the output buffer's first size estimate.
  std::string many(10000, '\xe0');
  auto big = CharsetToUtf8("cp1251", many);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->size(), 20000u);
}

}  // namespace
}  // namespace dbs::mysql

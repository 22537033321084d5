#include "src/storage/brace_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "feedline/error.h"

namespace feedline::storage {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BraceList, RangesKeepTheWidthOfTheirFirstBound) {
  EXPECT_THAT(ExpandBraceList("s3://b/shard-{000008..000011}.tar"),
              ElementsAre("s3://b/shard-000008.tar", "s3://b/shard-000009.tar",
                          "s3://b/shard-000010.tar", "s3://b/shard-000011.tar"));
  EXPECT_THAT(ExpandBraceList("x{9..10}"), ElementsAre("x9", "x10"));
  EXPECT_THAT(ExpandBraceList("one"), ElementsAre("one"));
}

TEST(BraceList, ListsAndSeveralGroupsExpandLeftToRight) {
  EXPECT_THAT(ExpandBraceList("a{1..2}b{x,y}"), ElementsAre("a1bx", "a1by", "a2bx", "a2by"));
  EXPECT_THAT(ExpandBraceList("{train,val}/s.tar"), ElementsAre("train/s.tar", "val/s.tar"));
  EXPECT_TRUE(HasBraceList("a{0..1}"));
  EXPECT_FALSE(HasBraceList("a{0..1"));
  EXPECT_FALSE(HasBraceList("plain"));
}

TEST(BraceList, BadPatternsAreRefusedNamingThem) {
  auto message = [](const std::string& pattern) {
    try {
      ExpandBraceList(pattern, 1000);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message("s-{5..3}.tar"), HasSubstr("s-{5..3}.tar: range {5..3} ends below its start"));
  EXPECT_THAT(message("s-{a..3}.tar"), HasSubstr("bad range {a..3}"));
  EXPECT_THAT(message("s-{}.tar"), HasSubstr("bad group {}"));
  EXPECT_THAT(message("s-{1..2.tar"), HasSubstr("'{' without its '}'"));
  EXPECT_THAT(message("s-1}.tar"), HasSubstr("'}' without its '{'"));
  EXPECT_THAT(message("{0..99}{0..99}"), HasSubstr("stands for more than 1000 names"));
}

}  // namespace
}  // namespace feedline::storage

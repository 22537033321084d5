#include "feedline/failure_kind.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "feedline/error.h"

namespace feedline {
namespace {

TEST(FailureKind, EveryKindHasItsOwnNameAndIsFoundByIt) {
  std::set<std::string> names;
  for (int i = 0; i < kFailureKindCount; ++i) {
    const auto kind = static_cast<FailureKind>(i);
    const std::string name = FailureKindName(kind);
    EXPECT_NE(name, "unknown") << i;
    EXPECT_TRUE(names.insert(name).second) << "two kinds are named " << name;
    ASSERT_TRUE(FailureKindNamed(name).has_value()) << name;
    EXPECT_EQ(*FailureKindNamed(name), kind);
  }
  // The names the statistics and the Python error's `reason` have always shown.
  EXPECT_STREQ(FailureKindName(FailureKind::kIo), "io");
  EXPECT_STREQ(FailureKindName(FailureKind::kWorkerDied), "worker died");
  EXPECT_STREQ(FailureKindName(FailureKind::kTooLarge), "too_large");
  EXPECT_FALSE(FailureKindNamed("Decode").has_value());
  EXPECT_FALSE(FailureKindNamed("").has_value());
}

TEST(SampleError, KeepsItsKindAndOriginWhenTheIndexIsFilledIn) {
  FailureOrigin origin;
  origin.exception_type = "mypkg.errors.BadRecord";
  origin.worker_pid = 1234;
  origin.signal = 9;
  const SampleError error(FailureKind::kException, "a.jpg", "it raised", -1, origin);
  const SampleError named = error.WithIndex(7);
  EXPECT_EQ(named.kind(), FailureKind::kException);
  EXPECT_EQ(named.reason(), "exception");
  EXPECT_EQ(named.index(), 7);
  EXPECT_EQ(named.source(), "a.jpg");
  EXPECT_EQ(named.origin().exception_type, "mypkg.errors.BadRecord");
  EXPECT_EQ(named.origin().worker_pid, 1234);
  EXPECT_EQ(named.origin().signal, 9);
  EXPECT_STREQ(named.what(), "sample 7 (a.jpg): exception: it raised");
}

TEST(SampleError, HasNoOriginUnlessOneIsGiven) {
  const SampleError error(FailureKind::kDecode, "b.png", "corrupt PNG");
  EXPECT_TRUE(error.origin().exception_type.empty());
  EXPECT_EQ(error.origin().worker_pid, -1);
  EXPECT_EQ(error.origin().signal, 0);
}

TEST(TimeoutError, IsOfKindTimeout) {
  const TimeoutError error(3, "c.jpg", 0.5);
  EXPECT_EQ(error.kind(), FailureKind::kTimeout);
  EXPECT_EQ(error.reason(), "timeout");
  EXPECT_EQ(error.index(), 3);
}

}  // namespace
}  // namespace feedline

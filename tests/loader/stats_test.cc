// StatsSnapshot::wait_fraction: the share of the loader's time the consumer
// spent waiting, which the loop report and `feedline bench` judge by.
#include "feedline/stats.h"

#include <gtest/gtest.h>

namespace feedline {
namespace {

TEST(WaitFraction, IsTheWaitOverTheElapsedTime) {
  StatsSnapshot s;
  s.elapsed_ns = 1'000'000'000;
  s.consumer_wait_ns = 250'000'000;
  EXPECT_DOUBLE_EQ(s.wait_fraction(), 0.25);
}

TEST(WaitFraction, IsZeroBeforeAnythingRan) {
  StatsSnapshot s;
  s.consumer_wait_ns = 5;
  EXPECT_EQ(s.wait_fraction(), 0.0);
  s.elapsed_ns = -1;
  EXPECT_EQ(s.wait_fraction(), 0.0);
}

TEST(WaitFraction, StaysWithinZeroAndOne) {
  // Counters read at slightly different times can disagree.
  StatsSnapshot s;
  s.elapsed_ns = 100;
  s.consumer_wait_ns = 130;
  EXPECT_EQ(s.wait_fraction(), 1.0);
  s.consumer_wait_ns = -3;
  EXPECT_EQ(s.wait_fraction(), 0.0);
}

}  // namespace
}  // namespace feedline

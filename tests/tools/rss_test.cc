#include "tools/rss.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

namespace feedline::cli {
namespace {

constexpr size_t kTouchBytes = 64 << 20;

TEST(Rss, PeakIsAtLeastTheCurrentSize) {
  const double current = CurrentRssMib();
  EXPECT_GT(current, 0);
  EXPECT_GE(PeakRssMib(), current);
}

TEST(Rss, PeakFollowsTouchedMemory) {
  const double before = PeakRssMib();
  {
    std::unique_ptr<char[]> block(new char[kTouchBytes]);
    std::memset(block.get(), 1, kTouchBytes);
    // Keep the writes from being optimized away.
    volatile char sink = block[kTouchBytes - 1];
    (void)sink;
  }
  // The 64 MiB block was resident at once, whatever the allocator did since.
  EXPECT_GE(PeakRssMib(), before + 48);
}

TEST(Rss, ResetStartsTheMeasurementAgain) {
  {
    std::unique_ptr<char[]> block(new char[kTouchBytes]);
    std::memset(block.get(), 1, kTouchBytes);
    volatile char sink = block[0];
    (void)sink;
  }
  if (!ResetPeakRss()) GTEST_SKIP() << "this kernel does not allow resetting the peak";
  // The freed block no longer counts: the peak is back near the current size.
  EXPECT_LE(PeakRssMib(), CurrentRssMib() + 8);
  EXPECT_GE(PeakRssMib(), CurrentRssMib() - 1);
}

}  // namespace
}  // namespace feedline::cli

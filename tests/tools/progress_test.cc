#include "tools/progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace feedline::cli {
namespace {

using ::testing::HasSubstr;

ProgressState State(int64_t epoch, int64_t batch, double elapsed_s) {
  ProgressState s;
  s.epoch = epoch;
  s.epochs = 2;
  s.batch = batch;
  s.batches_per_epoch = 10;
  s.images = (epoch * 10 + batch) * 32;
  s.elapsed_s = elapsed_s;
  return s;
}

TEST(Progress, EtaFollowsTheRateSoFar) {
  // 5 of 20 batches in 10 s: 15 left at 2 s each.
  EXPECT_DOUBLE_EQ(EtaSeconds(State(0, 5, 10)), 30);
  EXPECT_DOUBLE_EQ(EtaSeconds(State(1, 10, 40)), 0);
  EXPECT_EQ(EtaSeconds(State(0, 0, 1)), -1);
  ProgressState unknown = State(0, 5, 10);
  unknown.batches_per_epoch = -1;
  EXPECT_EQ(EtaSeconds(unknown), -1);
}

TEST(Progress, Durations) {
  EXPECT_EQ(FormatDuration(0), "0 s");
  EXPECT_EQ(FormatDuration(42.4), "42 s");
  EXPECT_EQ(FormatDuration(185), "3:05");
  EXPECT_EQ(FormatDuration(3723), "1:02:03");
  EXPECT_EQ(FormatDuration(-5), "0 s");
}

TEST(Progress, BarShowsEpochBatchesRateAndEta) {
  // Epoch 2 of 2, 5 of 10 batches: 15 batches of 32 images in 10 s.
  EXPECT_EQ(FormatProgressBar(State(1, 5, 10), 10),
            "epoch 2/2 [#####-----] 5/10  48 images/s  ETA 3 s");
  EXPECT_EQ(FormatProgressBar(State(0, 0, 0), 4), "epoch 1/2 [----] 0/10  0 images/s  ETA ?");
}

TEST(Progress, PlainLineEndsWithTheLoadersVerdict) {
  ProgressState state = State(1, 5, 10);
  state.verdict = "loader-bound: the loop waited 41% of the time";
  EXPECT_EQ(FormatProgressLine(state),
            "epoch 2/2: batch 5/10, 48 images/s, ETA 3 s; loader-bound: the loop waited 41% of "
            "the time");
  // The bar stays one line.
  EXPECT_EQ(FormatProgressBar(state, 10), "epoch 2/2 [#####-----] 5/10  48 images/s  ETA 3 s");
}

TEST(Progress, PlainLine) {
  EXPECT_EQ(FormatProgressLine(State(0, 5, 10)), "epoch 1/2: batch 5/10, 16 images/s, ETA 30 s");
}

// Everything a reporter wrote to a temporary file.
std::string Written(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text += static_cast<char>(c);
  return text;
}

TEST(ProgressReporter, LinesModeWritesAtMostOneLinePerInterval) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressReporter reporter(file, ProgressReporter::Mode::kLines, /*line_interval_s=*/5);
    reporter.Update(State(0, 1, 1));  // too early
    reporter.Update(State(0, 3, 5));  // first line
    reporter.Update(State(0, 4, 7));  // too soon after it
    reporter.Update(State(0, 6, 10.2));
  }
  const std::string text = Written(file);
  std::fclose(file);
  EXPECT_EQ(text,
            "epoch 1/2: batch 3/10, 19 images/s, ETA 28 s\n"
            "epoch 1/2: batch 6/10, 19 images/s, ETA 24 s\n");
}

TEST(ProgressReporter, BarModeRedrawsInPlaceAndClearsAtTheEnd) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressReporter reporter(file, ProgressReporter::Mode::kBar);
    reporter.Update(State(0, 1, 1));
    reporter.Update(State(0, 2, 2));
    reporter.Finish();
  }
  const std::string text = Written(file);
  std::fclose(file);
  EXPECT_THAT(text, HasSubstr("\repoch 1/2 ["));
  EXPECT_THAT(text, HasSubstr("2/10"));
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 4), "\r\033[K");
}

TEST(ProgressReporter, OffWritesNothing) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressReporter reporter(file, ProgressReporter::Mode::kOff);
    reporter.Update(State(0, 5, 100));
  }
  EXPECT_EQ(Written(file), "");
  std::fclose(file);
}

TEST(ProgressReporter, FileIsNotATerminal) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(ProgressReporter::ModeFor(file), ProgressReporter::Mode::kLines);
  std::fclose(file);
}

}  // namespace
}  // namespace feedline::cli

// FailurePolicy: what happens to a row whose sample failed: raise, skip, or
// replace with deterministic substitutes up to max_replace_attempts loads.
#include "src/loader/error_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loader/test_datasets.h"

namespace feedline::internal {
namespace {

using ::testing::HasSubstr;

// Plays the engine: records what it was asked to load and fails the
// indices in `bad` (or gives up on the row, as for a timeout, with `abandon`).
class RecordingLoader : public SubstituteLoader {
 public:
  explicit RecordingLoader(std::set<int64_t> bad = {}, bool abandon = false)
      : bad_(std::move(bad)), abandon_(abandon) {}
  LoadOutcome Load(int64_t index, int attempt, std::optional<SampleError>* error) override {
    loads.push_back({index, attempt});
    if (abandon_) return LoadOutcome::kAbandoned;
    if (bad_.count(index) || fail_all) {
      *error = SampleError(FailureKind::kIo, "sub" + std::to_string(index), "unreadable", index);
      return LoadOutcome::kFailed;
    }
    return LoadOutcome::kOk;
  }
  struct Call {
    int64_t index;
    int attempt;
  };
  std::vector<Call> loads;
  bool fail_all = false;

 private:
  std::set<int64_t> bad_;
  bool abandon_;
};

// A slot whose single row planned sample `index` of epoch `epoch`.
void PlanRow(Slot* slot, int64_t index, int64_t epoch = 0) {
  slot->epoch = epoch;
  slot->indices = {index};
  slot->status = {RowStatus::kPending};
}

SampleError DecodeError(int64_t index) {
  return SampleError(FailureKind::kDecode, "file" + std::to_string(index) + ".jpg",
                     "corrupt data", index);
}

LoaderOptions WithPolicy(ErrorPolicy policy, int max_attempts = 16, uint64_t seed = 7) {
  LoaderOptions options;
  options.error_policy = policy;
  options.max_replace_attempts = max_attempts;
  options.seed = seed;
  return options;
}

TEST(FailurePolicyTest, RaiseMarksTheRowFailedWithItsErrorAndLoadsNothing) {
  testing::FaultyDataset dataset(10, {3});
  FailurePolicy policy(WithPolicy(ErrorPolicy::kRaise), &dataset);
  Slot slot;
  PlanRow(&slot, 3);
  RecordingLoader loader;
  policy.HandleFailure(&slot, 0, DecodeError(3), 1, loader);
  EXPECT_EQ(slot.status[0], RowStatus::kFailed);
  ASSERT_EQ(slot.errors.size(), 1u);
  EXPECT_EQ(slot.errors[0].first, 0);
  EXPECT_EQ(slot.errors[0].second.kind(), FailureKind::kDecode);
  EXPECT_EQ(slot.errors[0].second.index(), 3);
  EXPECT_EQ(slot.error_reasons, std::vector<std::string>{"decode"});
  EXPECT_TRUE(loader.loads.empty());
}

TEST(FailurePolicyTest, SkipMarksTheRowSkippedAndCountsTheFailure) {
  testing::FaultyDataset dataset(10, {4});
  FailurePolicy policy(WithPolicy(ErrorPolicy::kSkip), &dataset);
  Slot slot;
  PlanRow(&slot, 4);
  RecordingLoader loader;
  policy.HandleFailure(&slot, 0, DecodeError(4), 1, loader);
  EXPECT_EQ(slot.status[0], RowStatus::kSkipped);
  EXPECT_TRUE(slot.errors.empty());
  EXPECT_EQ(slot.error_reasons, std::vector<std::string>{"decode"});
  EXPECT_TRUE(loader.loads.empty());
}

TEST(FailurePolicyTest, ReplaceLoadsTheFirstSubstituteIntoTheRow) {
  testing::FaultyDataset dataset(100, {5});
  FailurePolicy policy(WithPolicy(ErrorPolicy::kReplace), &dataset);
  Slot slot;
  PlanRow(&slot, 5, /*epoch=*/2);
  RecordingLoader loader;
  policy.HandleFailure(&slot, 0, DecodeError(5), 1, loader);
  ASSERT_EQ(loader.loads.size(), 1u);
  EXPECT_EQ(loader.loads[0].attempt, 1);
  EXPECT_EQ(loader.loads[0].index, policy.SubstituteIndex(2, 5, 1));
  EXPECT_EQ(slot.status[0], RowStatus::kReplaced);
  EXPECT_EQ(slot.indices[0], loader.loads[0].index);
  EXPECT_TRUE(slot.errors.empty());
  EXPECT_EQ(slot.error_reasons, std::vector<std::string>{"decode"});
  EXPECT_EQ(slot.failed_substitutes, 0);
}

TEST(FailurePolicyTest, ReplaceTriesFurtherSubstitutesWhileTheyFail) {
  testing::FaultyDataset dataset(100, {});
  FailurePolicy policy(WithPolicy(ErrorPolicy::kReplace), &dataset);
  const int64_t first = policy.SubstituteIndex(0, 9, 1);
  const int64_t second = policy.SubstituteIndex(0, 9, 2);
  ASSERT_NE(first, second) << "pick another seed: the test needs two distinct substitutes";
  Slot slot;
  PlanRow(&slot, 9);
  RecordingLoader loader({first});
  policy.HandleFailure(&slot, 0, DecodeError(9), 1, loader);
  ASSERT_EQ(loader.loads.size(), 2u);
  EXPECT_EQ(loader.loads[1].index, second);
  EXPECT_EQ(loader.loads[1].attempt, 2);
  EXPECT_EQ(slot.status[0], RowStatus::kReplaced);
  EXPECT_EQ(slot.indices[0], second);
  EXPECT_EQ(slot.failed_substitutes, 1);
}

TEST(FailurePolicyTest, ReplaceGivesUpAfterMaxAttemptsNamingThePlannedSample) {
  testing::FaultyDataset dataset(100, {});
  FailurePolicy policy(WithPolicy(ErrorPolicy::kReplace, /*max_attempts=*/3), &dataset);
  Slot slot;
  PlanRow(&slot, 12);
  RecordingLoader loader;
  loader.fail_all = true;
  policy.HandleFailure(&slot, 0, DecodeError(12), 1, loader);
  // Three loads in all: the planned sample and two substitutes.
  EXPECT_EQ(loader.loads.size(), 2u);
  EXPECT_EQ(slot.status[0], RowStatus::kFailed);
  EXPECT_EQ(slot.indices[0], 12);
  ASSERT_EQ(slot.errors.size(), 1u);
  const SampleError& error = slot.errors[0].second;
  EXPECT_EQ(error.kind(), FailureKind::kDecode) << "the planned sample's failure";
  EXPECT_EQ(error.index(), 12);
  EXPECT_EQ(error.source(), "file12.jpg");
  EXPECT_THAT(error.message(), HasSubstr("corrupt data"));
  EXPECT_THAT(error.message(), HasSubstr("the 2 substitutes tried for it failed too"));
  EXPECT_THAT(error.message(), HasSubstr("unreadable"));
  EXPECT_EQ(slot.failed_substitutes, 2);
}

TEST(FailurePolicyTest, ReplaceWithOneAttemptRaisesTheOriginalFailure) {
  testing::FaultyDataset dataset(100, {});
  FailurePolicy policy(WithPolicy(ErrorPolicy::kReplace, /*max_attempts=*/1), &dataset);
  Slot slot;
  PlanRow(&slot, 1);
  RecordingLoader loader;
  policy.HandleFailure(&slot, 0, DecodeError(1), 1, loader);
  EXPECT_TRUE(loader.loads.empty());
  EXPECT_EQ(slot.status[0], RowStatus::kFailed);
  ASSERT_EQ(slot.errors.size(), 1u);
  EXPECT_THAT(slot.errors[0].second.message(), HasSubstr("the 0 substitutes tried"));
}

TEST(FailurePolicyTest, AnAbandonedSubstituteCancelsTheRow) {
  testing::FaultyDataset dataset(100, {});
  FailurePolicy policy(WithPolicy(ErrorPolicy::kReplace), &dataset);
  Slot slot;
  PlanRow(&slot, 2);
  RecordingLoader loader({}, /*abandon=*/true);
  policy.HandleFailure(&slot, 0, DecodeError(2), 1, loader);
  EXPECT_EQ(slot.status[0], RowStatus::kCancelled);
  EXPECT_TRUE(slot.errors.empty());
}

TEST(FailurePolicyTest, ASubstitutesFailureCountsAsAFailedSubstituteNotAReason) {
  // A substitute's own timeout brings the row back with attempt 2: the
  // planned sample's failure was counted already.
  testing::FaultyDataset dataset(100, {});
  FailurePolicy policy(WithPolicy(ErrorPolicy::kReplace, /*max_attempts=*/2), &dataset);
  Slot slot;
  PlanRow(&slot, 30);
  RecordingLoader loader;
  policy.HandleFailure(&slot, 0, policy.TimeoutFor(slot.indices[0]), 2, loader);
  EXPECT_TRUE(slot.error_reasons.empty());
  EXPECT_EQ(slot.failed_substitutes, 1);
  EXPECT_EQ(slot.status[0], RowStatus::kFailed);
  ASSERT_EQ(slot.errors.size(), 1u);
  EXPECT_EQ(slot.errors[0].second.index(), 30);
}

TEST(FailurePolicyTest, SubstitutesDependOnlyOnSeedEpochIndexAndAttempt) {
  testing::FaultyDataset dataset(1000, {});
  FailurePolicy a(WithPolicy(ErrorPolicy::kReplace, 16, /*seed=*/1), &dataset);
  FailurePolicy b(WithPolicy(ErrorPolicy::kReplace, 16, /*seed=*/1), &dataset);
  FailurePolicy other_seed(WithPolicy(ErrorPolicy::kReplace, 16, /*seed=*/2), &dataset);
  EXPECT_EQ(a.SubstituteIndex(3, 17, 0), 17) << "attempt 0 is the planned sample";
  int differs_by_seed = 0;
  int differs_by_epoch = 0;
  for (int attempt = 1; attempt <= 20; ++attempt) {
    const int64_t index = a.SubstituteIndex(3, 17, attempt);
    EXPECT_GE(index, 0);
    EXPECT_LT(index, 1000);
    EXPECT_EQ(index, b.SubstituteIndex(3, 17, attempt));
    differs_by_seed += index != other_seed.SubstituteIndex(3, 17, attempt);
    differs_by_epoch += index != a.SubstituteIndex(4, 17, attempt);
  }
  EXPECT_GT(differs_by_seed, 10);
  EXPECT_GT(differs_by_epoch, 10);
}

TEST(FailurePolicyTest, TimeoutForNamesTheSampleAndTheLimit) {
  testing::FaultyDataset dataset(10, {});
  LoaderOptions options;
  options.timeout = std::chrono::milliseconds(1500);
  FailurePolicy policy(options, &dataset);
  const SampleError error = policy.TimeoutFor(6);
  EXPECT_EQ(error.kind(), FailureKind::kTimeout);
  EXPECT_EQ(error.index(), 6);
  EXPECT_EQ(error.source(), "file6.jpg");
  EXPECT_THAT(error.what(), HasSubstr("1.5"));
}

// A dataset whose Source throws: the timeout is still reported.
class NoSourceDataset : public testing::IndexDataset {
 public:
  NoSourceDataset() : IndexDataset(4) {}
  std::string Source(int64_t) const override { throw Error("no source"); }
};

TEST(FailurePolicyTest, TimeoutForWithoutASourceOrADataset) {
  NoSourceDataset dataset;
  LoaderOptions options;
  EXPECT_EQ(FailurePolicy(options, &dataset).TimeoutFor(2).source(), "");
  // An IterableDataset's policy has no Dataset.
  const SampleError stream_error = FailurePolicy(options, nullptr).TimeoutFor(2);
  EXPECT_EQ(stream_error.kind(), FailureKind::kTimeout);
  EXPECT_EQ(stream_error.source(), "");
}

}  // namespace
}  // namespace feedline::internal

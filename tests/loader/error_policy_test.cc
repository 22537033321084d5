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
// indices in `bad` (every one with `fail_all`), or gives up on the row, as
// for a timeout, with `abandon`.
class RecordingLoader : public SubstituteLoader {
 public:
  LoadOutcome Load(int64_t index, int attempt, std::optional<SampleError>* error) override {
    loads.push_back({index, attempt});
    if (abandon) return LoadOutcome::kAbandoned;
    if (bad.count(index) || fail_all) {
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
  std::set<int64_t> bad;
  bool fail_all = false;
  bool abandon = false;
};

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

// One row, planned as sample `index`, whose load failed; the test plays the
// engine's substitute loads (loader_).
class FailurePolicyTest : public ::testing::Test {
 protected:
  // Applies `policy` to row 0 of slot_, planned as `index` of `epoch`, whose
  // load number `attempt - 1` failed with `error` (default: a decode error).
  void Handle(const FailurePolicy& policy, int64_t index, int64_t epoch = 0, int attempt = 1,
              std::optional<SampleError> error = std::nullopt) {
    slot_.epoch = epoch;
    slot_.indices = {index};
    slot_.status = {RowStatus::kPending};
    policy.HandleFailure(&slot_, 0, error ? *error : DecodeError(index), attempt, loader_);
  }
  const SampleError& only_error() {
    EXPECT_EQ(slot_.errors.size(), 1u);
    return slot_.errors.at(0).second;
  }

  testing::FaultyDataset dataset_{100, {}};
  Slot slot_;
  RecordingLoader loader_;
};

TEST_F(FailurePolicyTest, RaiseMarksTheRowFailedWithItsErrorAndLoadsNothing) {
  Handle(FailurePolicy(WithPolicy(ErrorPolicy::kRaise), &dataset_), 3);
  EXPECT_EQ(slot_.status[0], RowStatus::kFailed);
  EXPECT_EQ(slot_.errors.at(0).first, 0);
  EXPECT_EQ(only_error().kind(), FailureKind::kDecode);
  EXPECT_EQ(only_error().index(), 3);
  EXPECT_EQ(slot_.error_reasons, std::vector<std::string>{"decode"});
  EXPECT_TRUE(loader_.loads.empty());
}

TEST_F(FailurePolicyTest, SkipMarksTheRowSkippedAndCountsTheFailure) {
  Handle(FailurePolicy(WithPolicy(ErrorPolicy::kSkip), &dataset_), 4);
  EXPECT_EQ(slot_.status[0], RowStatus::kSkipped);
  EXPECT_TRUE(slot_.errors.empty());
  EXPECT_EQ(slot_.error_reasons, std::vector<std::string>{"decode"});
  EXPECT_TRUE(loader_.loads.empty());
}

TEST_F(FailurePolicyTest, ReplaceLoadsTheFirstSubstituteIntoTheRow) {
  const FailurePolicy policy(WithPolicy(ErrorPolicy::kReplace), &dataset_);
  Handle(policy, 5, /*epoch=*/2);
  ASSERT_EQ(loader_.loads.size(), 1u);
  EXPECT_EQ(loader_.loads[0].attempt, 1);
  EXPECT_EQ(loader_.loads[0].index, policy.SubstituteIndex(2, 5, 1));
  EXPECT_EQ(slot_.status[0], RowStatus::kReplaced);
  EXPECT_EQ(slot_.indices[0], loader_.loads[0].index);
  EXPECT_TRUE(slot_.errors.empty());
  EXPECT_EQ(slot_.error_reasons, std::vector<std::string>{"decode"});
  EXPECT_EQ(slot_.failed_substitutes, 0);
}

TEST_F(FailurePolicyTest, ReplaceTriesFurtherSubstitutesWhileTheyFail) {
  const FailurePolicy policy(WithPolicy(ErrorPolicy::kReplace), &dataset_);
  const int64_t first = policy.SubstituteIndex(0, 9, 1);
  const int64_t second = policy.SubstituteIndex(0, 9, 2);
  ASSERT_NE(first, second) << "pick another seed: the test needs two distinct substitutes";
  loader_.bad = {first};
  Handle(policy, 9);
  ASSERT_EQ(loader_.loads.size(), 2u);
  EXPECT_EQ(loader_.loads[1].index, second);
  EXPECT_EQ(loader_.loads[1].attempt, 2);
  EXPECT_EQ(slot_.status[0], RowStatus::kReplaced);
  EXPECT_EQ(slot_.indices[0], second);
  EXPECT_EQ(slot_.failed_substitutes, 1);
}

TEST_F(FailurePolicyTest, ReplaceGivesUpAfterMaxAttemptsNamingThePlannedSample) {
  loader_.fail_all = true;
  Handle(FailurePolicy(WithPolicy(ErrorPolicy::kReplace, /*max_attempts=*/3), &dataset_), 12);
  // Three loads in all: the planned sample and two substitutes.
  EXPECT_EQ(loader_.loads.size(), 2u);
  EXPECT_EQ(slot_.status[0], RowStatus::kFailed);
  EXPECT_EQ(slot_.indices[0], 12);
  const SampleError& error = only_error();
  EXPECT_EQ(error.kind(), FailureKind::kDecode) << "the planned sample's failure";
  EXPECT_EQ(error.index(), 12);
  EXPECT_EQ(error.source(), "file12.jpg");
  EXPECT_THAT(error.message(), HasSubstr("corrupt data"));
  EXPECT_THAT(error.message(), HasSubstr("the 2 substitutes tried for it failed too"));
  EXPECT_THAT(error.message(), HasSubstr("unreadable"));
  EXPECT_EQ(slot_.failed_substitutes, 2);
}

TEST_F(FailurePolicyTest, ReplaceWithOneAttemptRaisesTheOriginalFailure) {
  Handle(FailurePolicy(WithPolicy(ErrorPolicy::kReplace, /*max_attempts=*/1), &dataset_), 1);
  EXPECT_TRUE(loader_.loads.empty());
  EXPECT_EQ(slot_.status[0], RowStatus::kFailed);
  EXPECT_THAT(only_error().message(), HasSubstr("the 0 substitutes tried"));
}

TEST_F(FailurePolicyTest, AnAbandonedSubstituteCancelsTheRow) {
  loader_.abandon = true;
  Handle(FailurePolicy(WithPolicy(ErrorPolicy::kReplace), &dataset_), 2);
  EXPECT_EQ(slot_.status[0], RowStatus::kCancelled);
  EXPECT_TRUE(slot_.errors.empty());
}

TEST_F(FailurePolicyTest, ASubstitutesFailureCountsAsAFailedSubstituteNotAReason) {
  // A substitute's own timeout brings the row back with attempt 2: the
  // planned sample's failure was counted already.
  const FailurePolicy policy(WithPolicy(ErrorPolicy::kReplace, /*max_attempts=*/2), &dataset_);
  Handle(policy, 30, 0, /*attempt=*/2, policy.TimeoutFor(30));
  EXPECT_TRUE(slot_.error_reasons.empty());
  EXPECT_EQ(slot_.failed_substitutes, 1);
  EXPECT_EQ(slot_.status[0], RowStatus::kFailed);
  EXPECT_EQ(only_error().index(), 30);
}

TEST(FailurePolicyIndexTest, SubstitutesDependOnlyOnSeedEpochIndexAndAttempt) {
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

TEST(FailurePolicyTimeoutTest, TimeoutForNamesTheSampleAndTheLimit) {
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

TEST(FailurePolicyTimeoutTest, TimeoutForWithoutASourceOrADataset) {
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

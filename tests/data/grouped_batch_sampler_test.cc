// GroupedBatchSampler and AspectRatioGroups: the batches torchvision's
// detection references give (their GroupedBatchSampler and
// create_aspect_ratio_groups), worked out by hand here.
#include "feedline/grouped_batch_sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "feedline/error.h"

namespace feedline {
namespace {

using ::testing::ElementsAre;

// The indices it is given, whatever the epoch.
class ListSampler : public Sampler {
 public:
  explicit ListSampler(std::vector<int64_t> indices) : indices_(std::move(indices)) {}
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  std::vector<int64_t> Indices(int64_t) const override { return indices_; }

 private:
  std::vector<int64_t> indices_;
};

std::vector<std::vector<int64_t>> GroupedBatches(const BatchSampler& sampler) {
  const EpochPlan plan = sampler.Plan(0);
  std::vector<std::vector<int64_t>> out;
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    out.emplace_back(plan.batch(b).begin(), plan.batch(b).end());
  }
  return out;
}

TEST(GroupedBatchSamplerTest, ABatchIsOneGroupsIndicesInTheOrderTheyFill) {
  // Groups: even indices 0, odd 1. Order 0 1 2 4 3 5 6 7 8 9: group 0
  // fills [0, 2, 4] first, then group 1 [1, 3, 5]; [6, 8] and [7, 9] are
  // left, equally full, and size() = 3 asks for one more: group 0's, whose
  // buffer started first, topped up with its first index of the epoch.
  const std::vector<int64_t> groups = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  GroupedBatchSampler sampler(
      std::make_shared<ListSampler>(std::vector<int64_t>{0, 1, 2, 4, 3, 5, 6, 7, 8, 9}), groups,
      3);
  EXPECT_EQ(sampler.size(), 3);  // 10 / 3
  EXPECT_THAT(GroupedBatches(sampler),
              ElementsAre(ElementsAre(0, 2, 4), ElementsAre(1, 3, 5), ElementsAre(6, 8, 0)));
}

TEST(GroupedBatchSamplerTest, TheFullestUnfinishedBuffersAreToppedUpWithTheirGroupRepeated) {
  // Three groups; batch 4; 10 indices: size() = 2. Group 0 (0..4) fills
  // [0, 1, 2, 3] at index 3; nothing else fills; the buffers left: group 0
  // [4] (restarted after its batch), group 1 [5, 6, 7], group 2 [8, 9].
  // Fullest first: group 1, topped up with its first index: [5, 6, 7, 5].
  const std::vector<int64_t> groups = {0, 0, 0, 0, 0, 1, 1, 1, 2, 2};
  GroupedBatchSampler sampler(
      std::make_shared<ListSampler>(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), groups,
      4);
  EXPECT_THAT(GroupedBatches(sampler),
              ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(5, 6, 7, 5)));
}

TEST(GroupedBatchSamplerTest, TiesGoInTheOrderTheBuffersWereLastStarted) {
  // Batch 2, groups a (0, 2, 4) and b (1, 3): order 0 1 2 3 4 ... size() 2.
  // a fills [0, 2] at index 2 (its buffer starts again, after b's); b fills
  // [1, 3]; a holds [4]: 2 batches already, none topped up.
  const std::vector<int64_t> groups = {7, 9, 7, 9, 7};
  GroupedBatchSampler two(std::make_shared<ListSampler>(std::vector<int64_t>{0, 1, 2, 3, 4}),
                          groups, 2);
  EXPECT_THAT(GroupedBatches(two), ElementsAre(ElementsAre(0, 2), ElementsAre(1, 3)));
  // Batch 3, order 1 0 2 3 4 (groups 9 7 7 9 7): a fills [0, 2, 4]; b holds
  // [1, 3] alone; size() = 1: done. With 6 indices (one more of a), size()
  // = 2: b, the fullest, gets topped up: [1, 3, 1].
  GroupedBatchSampler six(std::make_shared<ListSampler>(std::vector<int64_t>{1, 0, 2, 3, 4, 5}),
                          std::vector<int64_t>{7, 9, 7, 9, 7, 7}, 3);
  EXPECT_THAT(GroupedBatches(six), ElementsAre(ElementsAre(0, 2, 4), ElementsAre(1, 3, 1)));
}

TEST(GroupedBatchSamplerTest, BadArgumentsAreRefusedNamingThem) {
  EXPECT_THROW(GroupedBatchSampler(nullptr, {0}, 1), Error);
  EXPECT_THROW(GroupedBatchSampler(std::make_shared<ListSampler>(std::vector<int64_t>{0}), {0}, 0),
               Error);
  GroupedBatchSampler short_groups(std::make_shared<ListSampler>(std::vector<int64_t>{0, 5}),
                                   {0, 0}, 1);
  try {
    short_groups.Plan(0);
    FAIL() << "index 5 has no group";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("index 5"));
  }
}

TEST(AspectRatioGroupsTest, RatiosFallIntoTheReferencesBins) {
  // k = 1: bins 0.5, 1, 2. Ratios 0.25, 0.5, 0.75, 1, 1.5, 2, 3.
  const std::vector<int64_t> widths = {1, 1, 3, 4, 3, 4, 3};
  const std::vector<int64_t> heights = {4, 2, 4, 4, 2, 2, 1};
  EXPECT_THAT(AspectRatioGroups(widths, heights, 1), ElementsAre(0, 1, 1, 2, 2, 3, 3));
  // k = 0: the one bin 1.0.
  EXPECT_THAT(AspectRatioGroups(widths, heights, 0), ElementsAre(0, 0, 0, 1, 1, 1, 1));
  EXPECT_THROW(AspectRatioGroups(widths, std::vector<int64_t>{1}, 1), Error);
  EXPECT_THROW(AspectRatioGroups(std::vector<int64_t>{1}, std::vector<int64_t>{0}, 1), Error);
}

}  // namespace
}  // namespace feedline

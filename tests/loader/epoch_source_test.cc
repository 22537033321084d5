// One epoch: DistributedBatchSampler::set_epoch (what Paddle's loops call)
// sets the loader's epoch; the loader reports it, plans it, checkpoints it,
// counts on from it once unpinned, and refuses a set_epoch that disagrees.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "feedline/batch_sampler.h"
#include "feedline/data_loader.h"
#include "feedline/error.h"
#include "loader/test_datasets.h"

namespace feedline {
namespace {

std::vector<std::vector<int64_t>> Pass(DataLoader& loader) {
  std::vector<std::vector<int64_t>> batches;
  for (const Batch& batch : loader) batches.push_back(testing::Indices(batch));
  return batches;
}

std::vector<std::vector<int64_t>> Planned(const BatchSampler& sampler, int64_t epoch) {
  const EpochPlan plan = sampler.Plan(epoch);
  std::vector<std::vector<int64_t>> batches;
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    const auto rows = plan.batch(b);
    batches.emplace_back(rows.begin(), rows.end());
  }
  return batches;
}

TEST(EpochSourceTest, TheSamplersSetEpochIsTheLoadersEpoch) {
  auto sampler = std::make_shared<DistributedBatchSampler>(40, 4, 2, 1, /*shuffle=*/true,
                                                           /*drop_last=*/false, /*seed=*/5);
  LoaderOptions options;
  options.batch_sampler = sampler;
  options.num_workers = 2;
  DataLoader loader(std::make_shared<testing::IndexDataset>(40), options);

  sampler->set_epoch(3);
  EXPECT_EQ(loader.epoch(), 3);
  EXPECT_EQ(loader.state().epoch, 3);
  EXPECT_EQ(Pass(loader), Planned(*sampler, 3));
  EXPECT_EQ(loader.epoch(), 3);  // still pinned: the next pass is epoch 3 again

  // The loader agrees or refuses; it never ignores a set_epoch silently.
  EXPECT_THROW(loader.set_epoch(5), Error);
  loader.set_epoch(3);
  EXPECT_EQ(Pass(loader), Planned(*sampler, 3));

  // Unpinned, the loader counts on from the epoch it ran.
  sampler->set_epoch(-1);
  EXPECT_EQ(loader.epoch(), 4);
  EXPECT_EQ(Pass(loader), Planned(*sampler, 4));
  EXPECT_EQ(loader.epoch(), 5);
  loader.set_epoch(7);
  EXPECT_EQ(Pass(loader), Planned(*sampler, 7));
}

}  // namespace
}  // namespace feedline

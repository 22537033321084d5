// HardExampleSampler under the loader: the loop's updates shape the next
// epochs, and a checkpoint (loader state + sampler state) resumes exactly.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/hard_example_sampler.h"
#include "test_datasets.h"

namespace feedline {
namespace {

using testing::IndexDataset;
using testing::Indices;

struct Job {
  std::shared_ptr<HardExampleSampler> sampler;
  std::unique_ptr<DataLoader> loader;
};

Job MakeRun() {
  Job run;
  run.sampler = std::make_shared<HardExampleSampler>(
      30, /*seed=*/3, HardExampleSampler::Options{.num_samples = 24});
  LoaderOptions options;
  options.batch_size = 4;
  options.num_workers = 2;
  options.sampler = run.sampler;
  run.loader = std::make_unique<DataLoader>(std::make_shared<IndexDataset>(30), options);
  return run;
}

// What a training step reports: a loss that depends on the sample only.
void Train(const Batch& batch, HardExampleSampler& sampler) {
  std::vector<double> losses;
  for (int64_t i : batch.indices()) losses.push_back(static_cast<double>(i % 5));
  sampler.Update(batch.indices(), losses);
}

TEST(HardExampleResumeTest, LoaderAndSamplerStatesResumeExactly) {
  Job a = MakeRun();
  for (const Batch& batch : *a.loader) Train(batch, *a.sampler);  // epoch 0
  std::vector<std::vector<int64_t>> after;
  LoaderState loader_state;
  HardExampleSampler::State sampler_state;
  int64_t seen = 0;
  for (const Batch& batch : *a.loader) {  // epoch 1, checkpoint after 3 batches
    EXPECT_EQ(Indices(batch), std::vector<int64_t>(batch.indices().begin(), batch.indices().end()));
    Train(batch, *a.sampler);
    if (++seen == 3) {
      loader_state = a.loader->state();
      sampler_state = a.sampler->state();
    } else if (seen > 3) {
      after.push_back(Indices(batch));
    }
  }
  for (const Batch& batch : *a.loader) {  // epoch 2
    after.push_back(Indices(batch));
    Train(batch, *a.sampler);
  }
  ASSERT_EQ(loader_state.epoch, 1);
  ASSERT_EQ(loader_state.next_batch, 3);

  Job b = MakeRun();
  b.sampler->Restore(sampler_state);
  b.loader->Restore(loader_state);
  std::vector<std::vector<int64_t>> resumed;
  for (int pass = 0; pass < 2; ++pass) {
    for (const Batch& batch : *b.loader) {
      resumed.push_back(Indices(batch));
      Train(batch, *b.sampler);
    }
  }
  EXPECT_EQ(resumed, after);
}

TEST(HardExampleResumeTest, ALoaderStateWithoutTheSamplerStateIsRefused) {
  Job a = MakeRun();
  for (const Batch& batch : *a.loader) Train(batch, *a.sampler);
  LoaderState state;
  for (const Batch& batch : *a.loader) {
    Train(batch, *a.sampler);
    state = a.loader->state();
    break;
  }
  Job fresh = MakeRun();  // uniform scores: epoch 1 would be drawn differently
  try {
    fresh.loader->Restore(state);
    FAIL() << "Restore accepted a plan drawn from other scores";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plan_hash"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace feedline

#include "feedline/synth/index_dataset.h"

#include <gtest/gtest.h>

#include <vector>

#include "feedline/data_loader.h"
#include "feedline/error.h"

namespace feedline::synth {
namespace {

TEST(IndexDataset, SampleIsItsIndex) {
  IndexDataset dataset(10);
  EXPECT_EQ(dataset.size(), 10);
  Sample sample;
  SampleContext ctx(0, 0, 7);
  dataset.Get(7, sample, ctx);
  EXPECT_EQ(sample["index"].dtype(), DType::kI64);
  EXPECT_EQ(sample["index"].shape().rank(), 0);
  EXPECT_EQ(*sample["index"].data<int64_t>(), 7);
  EXPECT_EQ(dataset.Source(7), "synthetic:7");
}

TEST(IndexDataset, DeclaresTheIndexFixed) {
  const std::vector<FieldSpec> fields = IndexDataset(3).FixedFields();
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_EQ(fields[0].name, "index");
  EXPECT_EQ(fields[0].dtype, DType::kI64);
  EXPECT_EQ(fields[0].shape.rank(), 0);
}

TEST(IndexDataset, NoiseIsTheSamplesOwnDraws) {
  IndexDataset dataset(10, {.fixed = false, .noise = true});
  EXPECT_TRUE(dataset.FixedFields().empty());
  Sample sample;
  SampleContext ctx(/*seed=*/3, /*epoch=*/1, /*index=*/4);
  dataset.Get(4, sample, ctx);
  Rng rng(3, 1, 4);
  const Tensor& noise = sample["noise"];
  ASSERT_EQ(noise.shape(), Shape{4});
  for (int k = 0; k < 4; ++k) EXPECT_EQ(noise.data<float>()[k], static_cast<float>(rng.Uniform()));
}

TEST(IndexDataset, BadArguments) {
  EXPECT_THROW(IndexDataset(-1), Error);
  IndexDataset dataset(3);
  Sample sample;
  SampleContext ctx(0, 0, 3);
  EXPECT_THROW(dataset.Get(3, sample, ctx), IndexError);
}

TEST(IndexDataset, LoaderDeliversEveryIndexOnce) {
  LoaderOptions options;
  options.batch_size = 16;
  options.num_workers = 2;
  DataLoader loader(std::make_shared<IndexDataset>(100), options);
  std::vector<int> seen(100, 0);
  for (const Batch& batch : loader) {
    const Tensor& index = batch["index"];
    ASSERT_EQ(index.shape().rank(), 1);
    for (int64_t i = 0; i < batch.size(); ++i)
      ++seen[static_cast<size_t>(index.data<int64_t>()[i])];
  }
  EXPECT_EQ(seen, std::vector<int>(100, 1));
}

}  // namespace
}  // namespace feedline::synth

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/sampler.h"

namespace feedline {
namespace {

TEST(SequentialSamplerTest, YieldsZeroToNMinusOne) {
  SequentialSampler sampler(6);
  EXPECT_EQ(sampler.size(), 6);
  EXPECT_EQ(sampler.Indices(0), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(SequentialSamplerTest, SameOrderEveryEpoch) {
  SequentialSampler sampler(1000);
  const std::vector<int64_t> first = sampler.Indices(0);
  ASSERT_EQ(first.size(), 1000u);
  for (size_t i = 0; i < first.size(); ++i) ASSERT_EQ(first[i], static_cast<int64_t>(i));
  EXPECT_EQ(sampler.Indices(7), first);
}

TEST(SequentialSamplerTest, EmptyIsAllowed) {
  SequentialSampler sampler(0);
  EXPECT_EQ(sampler.size(), 0);
  EXPECT_TRUE(sampler.Indices(0).empty());
}

TEST(SequentialSamplerTest, RejectsNegativeSizeAndEpoch) {
  try {
    SequentialSampler sampler(-4);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n must be >= 0, got -4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(SequentialSampler(3).Indices(-1), Error);
}

TEST(SequentialSamplerTest, UsableThroughTheInterface) {
  const std::unique_ptr<Sampler> sampler = std::make_unique<SequentialSampler>(3);
  EXPECT_EQ(sampler->size(), 3);
  EXPECT_EQ(sampler->Indices(1), (std::vector<int64_t>{0, 1, 2}));
}

}  // namespace
}  // namespace feedline

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/sampler.h"
#include "testing/chi_square.h"

namespace feedline {
namespace {

// 90 samples of class 0, 9 of class 7, 1 of class -3, interleaved.
std::vector<int64_t> SkewedLabels() {
  std::vector<int64_t> labels;
  for (int i = 0; i < 100; ++i) {
    if (i == 50) {
      labels.push_back(-3);
    } else if (i % 11 == 5) {
      labels.push_back(7);
    } else {
      labels.push_back(0);
    }
  }
  return labels;
}

TEST(ClassBalancedSamplerTest, EveryClassEquallyLikely) {
  const std::vector<int64_t> labels = SkewedLabels();
  std::map<int64_t, int64_t> sizes;
  for (int64_t label : labels) ++sizes[label];
  ASSERT_EQ(sizes[0], 90);
  ASSERT_EQ(sizes[7], 9);
  ASSERT_EQ(sizes[-3], 1);

  ClassBalancedSampler sampler(labels, /*seed=*/1, /*num_samples=*/30000);
  EXPECT_EQ(sampler.size(), 30000);
  std::map<int64_t, int64_t> per_class;
  std::vector<int64_t> per_member_of_class0(labels.size());
  for (int64_t i : sampler.Indices(0)) {
    ASSERT_GE(i, 0);
    ASSERT_LT(i, static_cast<int64_t>(labels.size()));
    const int64_t label = labels[static_cast<size_t>(i)];
    ++per_class[label];
    if (label == 0) ++per_member_of_class0[static_cast<size_t>(i)];
  }
  ASSERT_EQ(per_class.size(), 3u);
  const std::vector<int64_t> class_counts = {per_class[-3], per_class[0], per_class[7]};
  EXPECT_LT(test::ChiSquare(class_counts), test::ChiSquareBound(2));

  // Within a class, members are uniform.
  std::vector<int64_t> member_counts;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == 0) member_counts.push_back(per_member_of_class0[i]);
  }
  EXPECT_LT(test::ChiSquare(member_counts), test::ChiSquareBound(89));
  // The only member of class -3 is drawn a third of the time.
  const int64_t lone = per_class[-3];
  EXPECT_GT(lone, 9000);
}

TEST(ClassBalancedSamplerTest, DefaultsToOneEpochOfLabels) {
  ClassBalancedSampler sampler(SkewedLabels(), 3);
  EXPECT_EQ(sampler.size(), 100);
  EXPECT_EQ(sampler.Indices(0).size(), 100u);
}

TEST(ClassBalancedSamplerTest, PureFunctionOfSeedAndEpoch) {
  const std::vector<int64_t> labels = SkewedLabels();
  ClassBalancedSampler a(labels, 5), b(labels, 5);
  EXPECT_EQ(a.Indices(1), b.Indices(1));
  EXPECT_NE(a.Indices(1), a.Indices(2));
  EXPECT_NE(a.Indices(1), ClassBalancedSampler(labels, 6).Indices(1));
}

TEST(ClassBalancedSamplerTest, IndependentOfLabelOrderOfAppearance) {
  // Classes are ordered by label value, not by first appearance, so the same
  // labels listed in another order give the same sequence of classes.
  const std::vector<int64_t> first_seen_0 = {0, 0, 5, 5, 5};
  const std::vector<int64_t> first_seen_5 = {5, 5, 5, 0, 0};
  const std::vector<int64_t> a = ClassBalancedSampler(first_seen_0, 2, 40).Indices(0);
  const std::vector<int64_t> b = ClassBalancedSampler(first_seen_5, 2, 40).Indices(0);
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(first_seen_0[static_cast<size_t>(a[k])], first_seen_5[static_cast<size_t>(b[k])]);
  }
}

TEST(ClassBalancedSamplerTest, SingleClassIsUniformOverItsMembers) {
  ClassBalancedSampler sampler(std::vector<int64_t>(6, 4), 8, 12000);
  std::vector<int64_t> counts(6);
  for (int64_t i : sampler.Indices(0)) ++counts[static_cast<size_t>(i)];
  EXPECT_LT(test::ChiSquare(counts), test::ChiSquareBound(5));
}

TEST(ClassBalancedSamplerTest, RejectsBadArguments) {
  EXPECT_THROW(ClassBalancedSampler({}, 0), Error);
  try {
    ClassBalancedSampler({1, 2}, 0, 0);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("num_samples must be >= 1, got 0"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ClassBalancedSampler({1, 2}, 0).Indices(-1), Error);
}

}  // namespace
}  // namespace feedline

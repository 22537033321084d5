#include "feedline/subset.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "testing/sample_x.h"

namespace feedline {
namespace {

// Sample i has field "x" = 100 + i, source "item<i>" and length 10 * i.
class Numbers : public Dataset {
 public:
  explicit Numbers(int64_t n, std::vector<FieldSpec> fixed = {}) : n_(n), fixed_(fixed) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    CheckIndex(index, n_);
    out.SetScalar<int64_t>("x", 100 + index);
  }
  std::string Source(int64_t index) const override { return "item" + std::to_string(index); }
  int64_t Length(int64_t index) const override { return 10 * index; }
  std::vector<FieldSpec> FixedFields() const override { return fixed_; }

 private:
  int64_t n_;
  std::vector<FieldSpec> fixed_;
};

using test::GetX;

TEST(SubsetTest, MapsIndicesThroughTheList) {
  auto base = std::make_shared<Numbers>(10);
  Subset subset(base, {7, 2, 2, 9});
  ASSERT_EQ(subset.size(), 4);
  EXPECT_EQ(GetX(subset, 0), 107);
  EXPECT_EQ(GetX(subset, 1), 102);
  EXPECT_EQ(GetX(subset, 2), 102);
  EXPECT_EQ(GetX(subset, 3), 109);
  EXPECT_EQ(subset.Source(0), "item7");
  EXPECT_EQ(subset.Source(3), "item9");
  EXPECT_EQ(subset.Length(1), 20);
  EXPECT_EQ(subset.Length(3), 90);
}

TEST(SubsetTest, EmptySubset) {
  Subset subset(std::make_shared<Numbers>(3), {});
  EXPECT_EQ(subset.size(), 0);
  EXPECT_THROW(GetX(subset, 0), IndexError);
}

TEST(SubsetTest, ConstructorRejectsIndicesOutOfRange) {
  auto base = std::make_shared<Numbers>(5);
  EXPECT_THROW(Subset(base, {0, 5}), IndexError);
  EXPECT_THROW(Subset(base, {-1}), IndexError);
  try {
    Subset(base, {1, 2, 12});
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("12"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(Subset(base, {0, 4}));
}

TEST(SubsetTest, AccessOutOfRangeIsIndexError) {
  Subset subset(std::make_shared<Numbers>(5), {1, 3});
  EXPECT_THROW(GetX(subset, 2), IndexError);
  EXPECT_THROW(GetX(subset, -1), IndexError);
  EXPECT_THROW(subset.Source(2), IndexError);
  EXPECT_THROW(subset.Length(-1), IndexError);
}

TEST(SubsetTest, NullDatasetIsError) { EXPECT_THROW(Subset(nullptr, {}), Error); }

TEST(SubsetTest, ForwardsFixedFields) {
  auto base =
      std::make_shared<Numbers>(4, std::vector<FieldSpec>{{"image", DType::kU8, Shape{8, 8, 3}}});
  Subset subset(base, {3});
  const std::vector<FieldSpec> fixed = subset.FixedFields();
  ASSERT_EQ(fixed.size(), 1u);
  EXPECT_EQ(fixed[0].name, "image");
  EXPECT_EQ(fixed[0].dtype, DType::kU8);
  EXPECT_EQ(fixed[0].shape, (Shape{8, 8, 3}));
  EXPECT_TRUE(Subset(std::make_shared<Numbers>(4), {1}).FixedFields().empty());
}

}  // namespace
}  // namespace feedline

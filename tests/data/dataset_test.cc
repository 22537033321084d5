// Dataset's defaults for what a dataset need not say, and CheckIndex, the
// range check every dataset's Get() starts with.
#include "feedline/dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"

namespace feedline {
namespace {

using ::testing::HasSubstr;

// A dataset that says only its size and how to load a sample.
class Minimal : public Dataset {
 public:
  int64_t size() const override { return 3; }
  void Get(int64_t index, Sample& /*out*/, SampleContext& /*ctx*/) const override {
    CheckIndex(index, size());
  }
};

TEST(Dataset, HasNoSourceNoFixedFieldsByDefault) {
  const Minimal d;
  EXPECT_EQ(d.Source(0), "");
  EXPECT_TRUE(d.FixedFields().empty());
  d.AbandonInFlight();  // a no-op by default
}

TEST(Dataset, WithoutLengthsSaysWhoNeedsThem) {
  const Minimal d;
  try {
    d.Length(0);
    FAIL() << "Length() of a dataset that does not report lengths";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("DynamicBatchSampler needs Dataset::Length()"));
  }
}

TEST(CheckIndex, AcceptsTheRangeRefusesTheRestNamingBoth) {
  EXPECT_NO_THROW(CheckIndex(0, 3));
  EXPECT_NO_THROW(CheckIndex(2, 3));
  for (const int64_t bad : {int64_t{-1}, int64_t{3}, int64_t{1} << 40}) {
    try {
      CheckIndex(bad, 3);
      FAIL() << bad << " is out of range";
    } catch (const IndexError& e) {
      EXPECT_THAT(e.what(), HasSubstr("index " + std::to_string(bad) +
                                      " is out of range for a dataset of 3 samples"));
    }
  }
  EXPECT_THROW(CheckIndex(0, 0), IndexError);
}

TEST(CheckIndex, IsWhatGetThrowsThrough) {
  const Minimal d;
  Sample sample;
  SampleContext ctx(1, 0, 5);
  EXPECT_THROW(d.Get(5, sample, ctx), IndexError);
}

}  // namespace
}  // namespace feedline

#include "tools/failure_recorder.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"

namespace feedline::cli {
namespace {

// Samples 1 and 3 fail: 1 with a SampleError naming its file, 3 with a
// plain exception.
class SomeBroken : public Dataset {
 public:
  int64_t size() const override { return 5; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    if (index == 1) throw SampleError(FailureKind::kDecode, "one.jpg", "corrupt");
    if (index == 3) throw std::runtime_error("boom");
    out.SetScalar<int64_t>("x", index);
  }
  std::string Source(int64_t index) const override { return "file" + std::to_string(index); }
};

TEST(FailureRecorder, RecordsEachFailedFileOnceAndRethrows) {
  FailureRecorder recorder(std::make_shared<SomeBroken>(), /*keep=*/10);
  Sample sample;
  SampleContext ctx(0, 0, 0);
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int64_t i = 0; i < recorder.size(); ++i) {
      sample.Clear();
      try {
        recorder.Get(i, sample, ctx);
        EXPECT_TRUE(i != 1 && i != 3) << i;
      } catch (const SampleError& e) {
        EXPECT_EQ(i, 1);
        EXPECT_EQ(e.source(), "one.jpg");
      } catch (const std::runtime_error& e) {
        EXPECT_EQ(i, 3);
        EXPECT_STREQ(e.what(), "boom");
      }
    }
  }
  const std::vector<RecordedFailure> failures = recorder.failures();
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0].path, "one.jpg");
  EXPECT_EQ(failures[0].reason, "decode");
  EXPECT_EQ(failures[0].message, "corrupt");
  EXPECT_EQ(failures[1].path, "file3");
  EXPECT_EQ(failures[1].reason, "exception");
  EXPECT_EQ(failures[1].message, "boom");
  EXPECT_EQ(recorder.distinct_failures(), 2);
}

TEST(FailureRecorder, KeepsOnlyTheFirstButCountsAll) {
  FailureRecorder recorder(std::make_shared<SomeBroken>(), /*keep=*/1);
  Sample sample;
  SampleContext ctx(0, 0, 0);
  for (int64_t i = 0; i < recorder.size(); ++i) {
    sample.Clear();
    try {
      recorder.Get(i, sample, ctx);
    } catch (const std::exception&) {
    }
  }
  ASSERT_EQ(recorder.failures().size(), 1u);
  EXPECT_EQ(recorder.failures()[0].path, "one.jpg");
  EXPECT_EQ(recorder.distinct_failures(), 2);
  EXPECT_EQ(recorder.Source(4), "file4");
  EXPECT_THROW(FailureRecorder(nullptr, 1), Error);
}

}  // namespace
}  // namespace feedline::cli

#include "tools/batch_memory.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "feedline/error.h"
#include "tools/command_line.h"

namespace feedline::cli {
namespace {

// A dataset that only declares its fields.
class FieldsOnly : public Dataset {
 public:
  explicit FieldsOnly(std::vector<FieldSpec> fields) : fields_(std::move(fields)) {}
  int64_t size() const override { return 1; }
  void Get(int64_t, Sample&, SampleContext&) const override {}
  std::vector<FieldSpec> FixedFields() const override { return fields_; }

 private:
  std::vector<FieldSpec> fields_;
};

TEST(BatchMemory, BatchBytesSumsTheFixedFields) {
  const FieldsOnly images(
      {{"image", DType::kF32, Shape{3, 224, 224}}, {"label", DType::kI64, Shape{}}});
  EXPECT_EQ(BatchBytes(images, 64), 64 * (3 * 224 * 224 * 4 + 8));
  EXPECT_EQ(BatchBytes(FieldsOnly({}), 64), 0);
  const FieldsOnly huge({{"x", DType::kF32, Shape{1LL << 40, 1LL << 40}}});
  EXPECT_EQ(BatchBytes(huge, 2), std::numeric_limits<int64_t>::max()) << "saturates";
}

TEST(BatchMemory, BatchesInFlight) {
  LoaderOptions options;
  options.num_workers = 0;
  EXPECT_EQ(BatchesInFlight(options), 2);
  options.num_workers = 4;
  options.prefetch_factor = 3;
  EXPECT_EQ(BatchesInFlight(options), 12);
}

TEST(BatchMemory, RefusesBatchesLargerThanMemory) {
  const FieldsOnly big({{"image", DType::kF32, Shape{3, 30000, 30000}}});
  LoaderOptions options;
  options.batch_size = 64;
  options.num_workers = 2;
  options.prefetch_factor = 2;
  try {
    CheckBatchMemory(big, options, int64_t{16} << 30);
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "a batch of 64 samples takes 691.2 GB and 4 batches are kept in flight: more than "
              "the 17.2 GB of memory of this machine; lower --size, --batch, --workers or "
              "--prefetch");
  }
  const FieldsOnly small({{"image", DType::kF32, Shape{3, 224, 224}}});
  EXPECT_NO_THROW(CheckBatchMemory(small, options, int64_t{16} << 30));
  EXPECT_NO_THROW(CheckBatchMemory(big, options, 0)) << "unknown memory: no check";
  EXPECT_GT(PhysicalMemoryBytes(), 0);
}

}  // namespace
}  // namespace feedline::cli

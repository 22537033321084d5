// Fields learned from the first batch of a dataset that declares none are
// written straight into the batch rows (src/loader/slot_layout.h); a later
// sample that does not fit gets the batches it would have got without
// learning: padded, or the same collate error.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "feedline/collate.h"
#include "feedline/data_loader.h"
#include "feedline/error.h"

namespace feedline {
namespace {

// "x": float32 of `width(i)` values i*100 + k (int64 from `int_from` on),
// "label": int64 i. Records where each index's "x" was written.
class ShapedDataset : public Dataset {
 public:
  ShapedDataset(int64_t size, int64_t wide_from, int64_t int_from)
      : size_(size), wide_from_(wide_from), int_from_(int_from) {}
  int64_t size() const override { return size_; }
  void Get(int64_t i, Sample& out, SampleContext&) const override {
    const int64_t width = i >= wide_from_ ? 6 : 4;
    if (i >= int_from_) {
      Tensor x = out.Allocate("x", DType::kI64, Shape{width});
      for (int64_t k = 0; k < width; ++k) x.data<int64_t>()[k] = i * 100 + k;
    } else {
      Tensor x = out.Allocate("x", DType::kF32, Shape{width});
      for (int64_t k = 0; k < width; ++k) x.data<float>()[k] = static_cast<float>(i * 100 + k);
      std::lock_guard<std::mutex> lock(mu_);
      written_at_[i] = x.raw();
    }
    out.SetScalar<int64_t>("label", i);
  }
  const void* written_at(int64_t i) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = written_at_.find(i);
    return it == written_at_.end() ? nullptr : it->second;
  }

 private:
  int64_t size_, wide_from_, int_from_;
  mutable std::mutex mu_;
  mutable std::map<int64_t, const void*> written_at_;
};

// Every batch of `epochs` epochs as field names and bytes.
std::vector<std::string> Load(std::shared_ptr<Dataset> dataset, LoaderOptions o, int epochs) {
  DataLoader loader(std::move(dataset), o);
  std::vector<std::string> out;
  for (int e = 0; e < epochs; ++e) {
    for (const Batch& batch : loader) {
      std::string s;
      for (int f = 0; f < batch.num_fields(); ++f) {
        const Tensor& t = batch.field(f);
        s += batch.field_name(f) + t.shape().ToString() + ":";
        s.append(static_cast<const char*>(t.raw()), t.bytes());
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

// The same collate run as a custom collate function, which learns nothing.
LoaderOptions WithoutLearning(LoaderOptions o) {
  o.collate_fn = [](std::span<const Sample* const> samples, BatchBuilder& out) {
    DefaultCollate(samples, CollateOptions{}, out);
  };
  return o;
}

TEST(LearnedLayout, FieldsOfTheFirstBatchAreWrittenInPlace) {
  auto dataset = std::make_shared<ShapedDataset>(64, 1 << 20, 1 << 20);
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 2;
  o.shuffle = true;
  DataLoader loader(dataset, o);
  int in_place_rows = 0, checked_rows = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (const Batch& batch : loader) {
      ASSERT_EQ(batch.num_fields(), 2);
      EXPECT_EQ(batch.field_name(0), "x");
      EXPECT_EQ(batch.field_name(1), "label");
      const Tensor& x = batch["x"];
      const Tensor& label = batch["label"];
      ASSERT_EQ(x.shape(), (Shape{4, 4}));
      for (int64_t r = 0; r < 4; ++r) {
        const int64_t i = label.data<int64_t>()[r];
        for (int64_t k = 0; k < 4; ++k) {
          ASSERT_EQ(x.data<float>()[r * 4 + k], static_cast<float>(i * 100 + k));
        }
        if (epoch == 1) {
          // Every slot was bound again after the first batch was collated.
          ++checked_rows;
          if (dataset->written_at(i) == x.data<float>() + r * 4) ++in_place_rows;
        }
      }
    }
  }
  EXPECT_EQ(checked_rows, 64);
  EXPECT_EQ(in_place_rows, 64);
}

TEST(LearnedLayout, BatchesAreThoseOfACollateThatLearnsNothing) {
  for (int workers : {0, 2}) {
    LoaderOptions o;
    o.batch_size = 4;
    o.num_workers = workers;
    o.shuffle = true;
    auto dataset = std::make_shared<ShapedDataset>(40, 1 << 20, 1 << 20);
    EXPECT_EQ(Load(dataset, o, 2), Load(dataset, WithoutLearning(o), 2)) << workers;
  }
}

TEST(LearnedLayout, AWiderSampleAfterLearningIsPaddedAsBefore) {
  for (int workers : {0, 2}) {
    LoaderOptions o;
    o.batch_size = 4;
    o.num_workers = workers;
    // Batches 0-1 learn x as float32[4]; batch 2 mixes widths 4 and 6.
    auto dataset = std::make_shared<ShapedDataset>(24, 10, 1 << 20);
    std::vector<std::string> learned = Load(dataset, o, 2);
    ASSERT_EQ(learned.size(), 12u);
    EXPECT_NE(learned[2].find("x_lengths"), std::string::npos) << workers;
    EXPECT_EQ(learned, Load(dataset, WithoutLearning(o), 2)) << workers;
  }
}

TEST(LearnedLayout, ADtypeChangeAfterLearningGivesTheCollateError) {
  auto message = [](LoaderOptions o) {
    DataLoader loader(std::make_shared<ShapedDataset>(16, 1 << 20, 10), o);
    try {
      for (const Batch& batch : loader) (void)batch;
    } catch (const SampleError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  LoaderOptions o;
  o.batch_size = 4;
  const std::string learned = message(o);
  EXPECT_NE(learned.find("field 'x' has f32 [4] in one sample and i64 [4] in another"),
            std::string::npos)
      << learned;
  EXPECT_EQ(learned, message(WithoutLearning(o)));
}

}  // namespace
}  // namespace feedline

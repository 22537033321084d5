// SampleContext::batch through the loader: each sample sees the indices its
// batch was planned with, whichever worker loads it, and a Subset or Concat
// shows them in its part's indices.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <vector>

#include "feedline/concat.h"
#include "feedline/data_loader.h"
#include "feedline/subset.h"

namespace feedline {
namespace {

constexpr int kMaxBatchShown = 4;

// Sample i: "index" = i, "batch" = the indices its context shows, padded
// with -1 to kMaxBatchShown.
class SampleBatchEcho : public Dataset {
 public:
  explicit SampleBatchEcho(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override {
    CheckIndex(index, n_);
    out.SetScalar<int64_t>("index", index);
    Tensor batch = out.Allocate("batch", DType::kI64, Shape{kMaxBatchShown});
    int64_t* v = batch.data<int64_t>();
    for (int k = 0; k < kMaxBatchShown; ++k) {
      v[k] = k < static_cast<int>(ctx.batch().size()) ? ctx.batch()[k] : -1;
    }
  }

 private:
  int64_t n_;
};

// Every batch of an epoch: each row's "batch" field and the batch's indices.
struct SeenBatches {
  std::vector<std::vector<int64_t>> indices;         // per batch
  std::vector<std::vector<int64_t>> shown_per_row;  // per row, in order
};

SeenBatches LoadBatchesOf(std::shared_ptr<const Dataset> data, int workers) {
  LoaderOptions o;
  o.batch_size = 3;
  o.shuffle = true;
  o.seed = 9;
  o.num_workers = workers;
  DataLoader loader(data, o);
  SeenBatches seen;
  while (std::optional<Batch> b = loader.Next()) {
    const Tensor& index = (*b)["index"];
    const Tensor& batch = (*b)["batch"];
    std::vector<int64_t> rows(index.data<int64_t>(), index.data<int64_t>() + b->size());
    seen.indices.push_back(rows);
    for (int64_t r = 0; r < b->size(); ++r) {
      const int64_t* v = batch.data<int64_t>() + r * kMaxBatchShown;
      seen.shown_per_row.emplace_back(v, v + kMaxBatchShown);
    }
  }
  return seen;
}

// `rows` padded with -1 to kMaxBatchShown.
std::vector<int64_t> PaddedBatch(std::vector<int64_t> rows) {
  rows.resize(kMaxBatchShown, -1);
  return rows;
}

TEST(SampleBatch, EachSampleSeesItsPlannedBatchWhicheverWorkerLoadsIt) {
  auto data = std::make_shared<SampleBatchEcho>(10);
  const SeenBatches alone = LoadBatchesOf(data, 0);
  ASSERT_EQ(alone.indices.size(), 4u);  // 3 + 3 + 3 + 1
  size_t row = 0;
  for (const std::vector<int64_t>& batch : alone.indices) {
    for (size_t r = 0; r < batch.size(); ++r) {
      EXPECT_EQ(alone.shown_per_row[row++], PaddedBatch(batch));
    }
  }
  for (int workers : {1, 2, 4}) {
    const SeenBatches threads = LoadBatchesOf(data, workers);
    EXPECT_EQ(threads.indices, alone.indices) << workers;
    EXPECT_EQ(threads.shown_per_row, alone.shown_per_row) << workers;
  }
}

TEST(SampleBatch, ASubsetOrConcatShowsTheBatchInItsPartsIndices) {
  auto base = std::make_shared<SampleBatchEcho>(20);
  // Subset sample i is base sample 2 i + 1: the base sees 2 b + 1 for each b.
  std::vector<int64_t> odd;
  for (int64_t i = 0; i < 8; ++i) odd.push_back(2 * i + 1);
  const SeenBatches subset = LoadBatchesOf(std::make_shared<Subset>(base, odd), 2);
  size_t row = 0;
  for (const std::vector<int64_t>& batch : subset.indices) {
    for (size_t r = 0; r < batch.size(); ++r) {
      // "index" is the base's (what its Get was given); the batch too.
      for (int64_t shown : subset.shown_per_row[row]) {
        if (shown >= 0) {
          EXPECT_EQ(shown % 2, 1);
        }
      }
      EXPECT_EQ(subset.shown_per_row[row][r], batch[r]);
      ++row;
    }
  }
  // Concat of 5 + 5: each part sees only its own rows of the batch, local.
  auto concat = std::make_shared<Concat>(std::vector<std::shared_ptr<const Dataset>>{
      std::make_shared<SampleBatchEcho>(5), std::make_shared<SampleBatchEcho>(5)});
  LoaderOptions o;
  o.batch_size = 10;
  DataLoader loader(concat, o);
  const Batch b = *loader.Next();
  const int64_t* shown = b["batch"].data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(shown, shown + kMaxBatchShown), PaddedBatch({0, 1, 2, 3}));
  const int64_t* last = shown + 9 * kMaxBatchShown;
  EXPECT_EQ(std::vector<int64_t>(last, last + kMaxBatchShown), PaddedBatch({0, 1, 2, 3}));
}

TEST(SampleBatch, ASampleReadAloneHasNone) {
  SampleBatchEcho data(3);
  SampleContext ctx(0, 0, 1);
  Sample out;
  data.Get(1, out, ctx);
  EXPECT_EQ(std::vector<int64_t>(out.Find("batch")->data<int64_t>(),
                                 out.Find("batch")->data<int64_t>() + kMaxBatchShown),
            PaddedBatch({}));
}

}  // namespace
}  // namespace feedline

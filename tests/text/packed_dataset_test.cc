#include "feedline/text/packed_dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/error.h"
#include "feedline/text/columnar_dataset.h"
#include "feedline/text/pack_batch_sampler.h"
#include "feedline/text/token_dataset.h"
#include "text/memory_row_groups.h"

namespace feedline::text {
namespace {

// Documents whose tokens are their positions in the flat array, so that
// every token is unique: 0..L0-1, L0..L0+L1-1, ...
std::shared_ptr<TokenDataset> Documents(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> offsets{0};
  for (int64_t l : lengths) offsets.push_back(offsets.back() + l);
  std::vector<int32_t> tokens(static_cast<size_t>(offsets.back()));
  std::iota(tokens.begin(), tokens.end(), 0);
  return std::make_shared<TokenDataset>(std::move(tokens), std::move(offsets));
}

std::vector<int64_t> DocumentLengths(size_t n) {
  std::vector<int64_t> lengths(n);
  for (size_t i = 0; i < n; ++i) lengths[i] = static_cast<int64_t>((i * 53) % 97);  // some 0
  return lengths;
}

// The same documents without the in-place path: int32 fields through Get.
class Int32Documents : public Dataset {
 public:
  explicit Int32Documents(std::shared_ptr<const TokenDataset> docs) : docs_(std::move(docs)) {}
  int64_t size() const override { return docs_->size(); }
  int64_t Length(int64_t i) const override { return docs_->Length(i); }
  void Get(int64_t i, Sample& out, SampleContext&) const override {
    auto tokens = docs_->document(i);
    out.SetVector<int32_t>("tokens", tokens.data(), static_cast<int64_t>(tokens.size()));
  }

 private:
  std::shared_ptr<const TokenDataset> docs_;
};

struct Row {
  std::vector<int64_t> input_ids, labels, position_ids;
  std::vector<int32_t> segment_ids, cu_seqlens;
};

Row GetRow(const Dataset& data, int64_t index, int64_t epoch = 0) {
  Sample sample;
  SampleContext ctx(0, epoch, index);
  data.Get(index, sample, ctx);
  auto read = [&](const char* name, auto* out) {
    using T = typename std::remove_pointer_t<decltype(out)>::value_type;
    const Tensor& t = sample[name];
    const T* p = t.data<T>();
    out->assign(p, p + t.elements());
  };
  Row row;
  read("input_ids", &row.input_ids);
  read("labels", &row.labels);
  read("position_ids", &row.position_ids);
  read("segment_ids", &row.segment_ids);
  read("cu_seqlens", &row.cu_seqlens);
  return row;
}

std::shared_ptr<const PackSchedule> Schedule(const std::vector<int64_t>& lengths,
                                             PackOptions options,
                                             std::shared_ptr<const Sampler> order = nullptr) {
  if (!order) order = std::make_shared<SequentialSampler>(static_cast<int64_t>(lengths.size()));
  return std::make_shared<PackSchedule>(lengths, std::move(order), options);
}

TEST(PackedDatasetTest, WritesTheFieldsOfARow) {
  // seq_len 8, best fit: docs of 3 and 4 tokens share row 0 (7 tokens, 1 pad).
  PackOptions options;
  options.seq_len = 8;
  options.max_segments = 3;
  const std::vector<int64_t> lengths = {3, 4};
  auto schedule = Schedule(lengths, options);
  PackedDataset data(Documents(lengths), schedule);
  ASSERT_EQ(schedule->Rows(0)->num_rows(), 1);
  EXPECT_EQ(data.size(), 2);  // each document could have had a row of its own
  const Row row = GetRow(data, 0);
  EXPECT_EQ(GetRow(data, 1).input_ids, row.input_ids);  // past the plan: wraps
  EXPECT_EQ(row.input_ids, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 0}));
  EXPECT_EQ(row.labels, (std::vector<int64_t>{1, 2, -100, 4, 5, 6, -100, -100}));
  EXPECT_EQ(row.position_ids, (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 3, 0}));
  EXPECT_EQ(row.segment_ids, (std::vector<int32_t>{1, 1, 1, 2, 2, 2, 2, 0}));
  EXPECT_EQ(row.cu_seqlens, (std::vector<int32_t>{0, 3, 7, 7}));
  const std::vector<FieldSpec> fixed = data.FixedFields();
  ASSERT_EQ(fixed.size(), 5u);
  EXPECT_EQ(fixed[4].shape, Shape({4}));
}

TEST(PackedDatasetTest, LabelOptions) {
  PackOptions options;
  options.seq_len = 8;
  const std::vector<int64_t> lengths = {3, 4};
  PackedRowOptions unmasked;
  unmasked.mask_boundaries = false;
  PackedDataset plain(Documents(lengths), Schedule(lengths, options), unmasked);
  EXPECT_EQ(GetRow(plain, 0).labels, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, -100, -100}));

  PackedRowOptions unshifted;
  unshifted.shift_labels = false;
  PackedDataset hf(Documents(lengths), Schedule(lengths, options), unshifted);
  EXPECT_EQ(GetRow(hf, 0).labels, (std::vector<int64_t>{0, 1, 2, -100, 4, 5, 6, -100}));
}

TEST(PackedDatasetTest, APieceCutFromItsDocumentIsLabelledWithTheNextToken) {
  PackOptions options;
  options.seq_len = 4;
  options.strategy = PackStrategy::kConcatSplit;
  const std::vector<int64_t> lengths = {6};
  auto schedule = Schedule(lengths, options);
  PackedDataset data(Documents(lengths), schedule);
  ASSERT_EQ(schedule->Rows(0)->num_rows(), 2);
  EXPECT_EQ(GetRow(data, 0).labels, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(GetRow(data, 1).labels, (std::vector<int64_t>{5, -100, -100, -100}));
  EXPECT_EQ(GetRow(data, 1).position_ids, (std::vector<int64_t>{0, 1, 0, 0}));
}

TEST(PackedDatasetTest, AnyIntegerFieldThroughGetGivesTheSameRows) {
  PackOptions options;
  options.seq_len = 64;
  const std::vector<int64_t> lengths = DocumentLengths(200);
  auto docs = Documents(lengths);
  auto schedule = Schedule(lengths, options, std::make_shared<RandomSampler>(200, 9));
  PackedDataset direct(docs, schedule);
  PackedRowOptions row_options;
  row_options.tokens_field = "tokens";
  PackedDataset through_get(std::make_shared<Int32Documents>(docs), schedule, row_options);
  for (int64_t r = 0; r < schedule->Rows(1)->num_rows(); ++r) {
    const Row a = GetRow(direct, r, 1), b = GetRow(through_get, r, 1);
    ASSERT_EQ(a.input_ids, b.input_ids) << r;
    ASSERT_EQ(a.labels, b.labels) << r;
    ASSERT_EQ(a.cu_seqlens, b.cu_seqlens) << r;
  }
}

TEST(PackedDatasetTest, AMissingFieldIsASampleErrorNamingIt) {
  const std::vector<int64_t> lengths = {3};
  auto docs = Documents(lengths);
  PackedRowOptions row_options;
  row_options.tokens_field = "text";
  PackedDataset data(std::make_shared<Int32Documents>(docs), Schedule(lengths, PackOptions{}),
                     row_options);
  try {
    GetRow(data, 0);
    FAIL();
  } catch (const SampleError& e) {
    EXPECT_NE(e.message().find("\"text\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(GetRow(data, 1), IndexError);
  EXPECT_THROW(PackedDataset(docs, Schedule({1, 2}, PackOptions{})), Error);
}

// One int64 document per index, its tokens as given.
class Int64Documents : public Dataset {
 public:
  explicit Int64Documents(std::vector<std::vector<int64_t>> docs) : docs_(std::move(docs)) {}
  int64_t size() const override { return static_cast<int64_t>(docs_.size()); }
  int64_t Length(int64_t i) const override {
    return static_cast<int64_t>(docs_[static_cast<size_t>(i)].size());
  }
  void Get(int64_t i, Sample& out, SampleContext&) const override {
    const std::vector<int64_t>& d = docs_[static_cast<size_t>(i)];
    out.SetVector<int64_t>("tokens", d.data(), static_cast<int64_t>(d.size()));
  }

 private:
  std::vector<std::vector<int64_t>> docs_;
};

TEST(PackedDatasetTest, ATokenOutside32BitsIsASampleErrorAsTokenDatasetRefusesIt) {
  PackedRowOptions row_options;
  row_options.tokens_field = "tokens";
  for (int64_t bad : {int64_t{1} << 32, int64_t{1} << 31, -(int64_t{1} << 31) - 1}) {
    PackedDataset data(std::make_shared<Int64Documents>(std::vector<std::vector<int64_t>>{
                           {5, bad, 7}}),
                       Schedule({3}, PackOptions{}), row_options);
    try {
      GetRow(data, 0);
      FAIL() << bad;
    } catch (const SampleError& e) {
      EXPECT_NE(e.message().find("holds token " + std::to_string(bad) + " at 1"),
                std::string::npos)
          << e.what();
    }
  }
  PackedDataset fine(std::make_shared<Int64Documents>(std::vector<std::vector<int64_t>>{
                         {5, (int64_t{1} << 31) - 1, 7}}),
                     Schedule({3}, PackOptions{}), row_options);
  EXPECT_EQ(GetRow(fine, 0).input_ids[1], (int64_t{1} << 31) - 1);
}

// One epoch through the loader: the rows' tokens (padding left out), row
// by row in batch order.
std::vector<std::vector<int64_t>> Epoch(DataLoader& loader, int64_t max_batches = -1) {
  std::vector<std::vector<int64_t>> rows;
  int64_t batches = 0;
  for (const Batch& batch : loader) {
    const Tensor& ids = batch["input_ids"];
    const Tensor& seg = batch["segment_ids"];
    const int64_t seq_len = ids.shape()[1];
    for (int64_t r = 0; r < batch.size(); ++r) {
      std::vector<int64_t> row;
      for (int64_t t = 0; t < seq_len; ++t) {
        if (seg.data<int32_t>()[r * seq_len + t] != 0) {
          row.push_back(ids.data<int64_t>()[r * seq_len + t]);
        }
      }
      rows.push_back(std::move(row));
    }
    if (++batches == max_batches) break;
  }
  return rows;
}

std::unique_ptr<DataLoader> Loader(int workers, uint64_t seed) {
  PackOptions options;
  options.seq_len = 128;
  options.max_segments = 4;
  const std::vector<int64_t> lengths = DocumentLengths(600);
  auto schedule = Schedule(lengths, options, std::make_shared<RandomSampler>(600, seed));
  LoaderOptions loader;
  loader.batch_sampler = std::make_shared<PackBatchSampler>(schedule, 8, false);
  loader.num_workers = workers;
  loader.seed = seed;
  return std::make_unique<DataLoader>(
      std::make_shared<PackedDataset>(Documents(lengths), schedule), loader);
}

TEST(PackedDatasetTest, EveryTokenOnceAnEpochTheSameForAnyWorkerCount) {
  const std::vector<int64_t> lengths = DocumentLengths(600);
  const int64_t total = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
  auto zero = Loader(0, 11);
  const auto epoch0 = Epoch(*zero);
  const auto epoch1 = Epoch(*zero);
  EXPECT_NE(epoch0, epoch1);
  for (const auto& epoch : {epoch0, epoch1}) {
    std::vector<int64_t> tokens;
    for (const auto& row : epoch) {
      EXPECT_LE(row.size(), 128u);
      tokens.insert(tokens.end(), row.begin(), row.end());
    }
    std::sort(tokens.begin(), tokens.end());
    std::vector<int64_t> expected(static_cast<size_t>(total));
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(tokens, expected);
  }
  for (int workers : {1, 3}) {
    auto loader = Loader(workers, 11);
    EXPECT_EQ(Epoch(*loader), epoch0) << workers << " workers";
    EXPECT_EQ(Epoch(*loader), epoch1) << workers << " workers";
  }
}

TEST(PackedDatasetTest, ResumesMidEpochWithTheSameRows) {
  auto whole = Loader(2, 5);
  Epoch(*whole);
  const auto expected = Epoch(*whole);  // epoch 1
  auto first = Loader(2, 5);
  Epoch(*first);
  auto head = Epoch(*first, /*max_batches=*/3);
  const LoaderState state = first->state();
  EXPECT_EQ(state.epoch, 1);
  auto second = Loader(3, 5);
  second->Restore(state);
  auto tail = Epoch(*second);
  head.insert(head.end(), tail.begin(), tail.end());
  EXPECT_EQ(head, expected);
}

// Documents read from row groups (a ColumnarDataset, as Parquet files are)
// packed in file order: groups of 30 documents, 2 held, while the rows still
// open hold documents of more groups than that.
struct GroupedLoader {
  std::shared_ptr<testing::MemoryRowGroups> source;
  std::shared_ptr<ColumnarDataset> documents;
  std::unique_ptr<DataLoader> loader;
};

GroupedLoader PackGroups(int workers) {
  const std::vector<int64_t> lengths = DocumentLengths(600);
  GroupedLoader out;
  out.source = std::make_shared<testing::MemoryRowGroups>(std::vector<int64_t>(20, 30), lengths);
  ColumnarOptions columnar;
  columnar.max_row_groups = 2;
  columnar.lengths = lengths;
  out.documents = std::make_shared<ColumnarDataset>(
      out.source, testing::MemoryRowGroups::Columns(), columnar);
  PackOptions options;
  options.seq_len = 128;
  options.open_rows = 8;
  auto schedule = Schedule(lengths, options);
  LoaderOptions loader;
  loader.batch_sampler = std::make_shared<PackBatchSampler>(schedule, 4, false);
  loader.num_workers = workers;
  out.loader = std::make_unique<DataLoader>(
      std::make_shared<PackedDataset>(out.documents, schedule), loader);
  return out;
}

TEST(PackedDatasetTest, DocumentsFromRowGroupsReadEachGroupOnceAnEpoch) {
  const std::vector<int64_t> lengths = DocumentLengths(600);
  const int64_t total = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
  std::vector<std::vector<int64_t>> first_epoch;
  for (int workers : {0, 2}) {
    GroupedLoader packed = PackGroups(workers);
    for (int epoch = 0; epoch < 2; ++epoch) {
      const auto rows = Epoch(*packed.loader);
      EXPECT_EQ(packed.source->reads, 20 * (epoch + 1)) << workers << " workers";
      if (first_epoch.empty()) first_epoch = rows;
      EXPECT_EQ(rows, first_epoch) << workers << " workers";
    }
    EXPECT_LE(packed.documents->row_groups_held(), 2);
  }
  std::vector<int64_t> tokens;
  for (const auto& row : first_epoch) tokens.insert(tokens.end(), row.begin(), row.end());
  std::sort(tokens.begin(), tokens.end());
  std::vector<int64_t> expected(static_cast<size_t>(total));
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(tokens, expected);

  // Resumed mid-epoch: the rest of the epoch reads each group it needs once.
  GroupedLoader first = PackGroups(2);
  auto head = Epoch(*first.loader, /*max_batches=*/20);
  GroupedLoader second = PackGroups(2);
  second.loader->Restore(first.loader->state());
  auto tail = Epoch(*second.loader);
  head.insert(head.end(), tail.begin(), tail.end());
  EXPECT_EQ(head, first_epoch);
  EXPECT_LE(second.source->reads, 20);
}

}  // namespace
}  // namespace feedline::text

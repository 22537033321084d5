#include "feedline/text/columnar_dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "feedline/data_loader.h"
#include "feedline/error.h"
#include "feedline/sampler.h"
#include "text/memory_row_groups.h"

namespace feedline::text {
namespace {

using testing::MemoryRowGroups;

std::vector<int64_t> TokensOf(const Sample& sample) {
  const Tensor& t = sample["input_ids"];
  EXPECT_EQ(t.dtype(), DType::kI64);
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.elements());
}

TEST(ColumnarDatasetTest, EveryColumnFillsItsFieldRowByRowAcrossGroups) {
  auto source = std::make_shared<MemoryRowGroups>(std::vector<int64_t>{3, 0, 4});
  ColumnarDataset rows(source, MemoryRowGroups::Columns());
  ASSERT_EQ(rows.size(), 7);
  EXPECT_EQ(rows.num_row_groups(), 3);
  SampleContext ctx(0, 0, 0);
  for (int64_t i = 0; i < 7; ++i) {
    Sample sample;
    rows.Get(i, sample, ctx);
    std::vector<int64_t> expected;
    for (int64_t t = 0; t < i % 4; ++t) expected.push_back(i + t);
    EXPECT_EQ(TokensOf(sample), expected) << "row " << i;
    EXPECT_EQ(sample["id"].dtype(), DType::kI64);
    EXPECT_EQ(sample["id"].shape().rank(), 0);
    EXPECT_EQ(sample["id"].data<int64_t>()[0], 100 + i);
  }
  EXPECT_EQ(rows.group_of_row(3), 2);  // the empty group 1 is skipped
  EXPECT_EQ(rows.Source(4), "memory, row group 2, row 1");
  EXPECT_EQ(rows.row_group_reads(), 2);
  ASSERT_EQ(rows.FixedFields().size(), 1u);
  EXPECT_EQ(rows.FixedFields()[0].name, "id");
  EXPECT_THROW(rows.Length(0), Error);
}

TEST(ColumnarDatasetTest, GetListGivesAListRowInPlace) {
  auto source = std::make_shared<MemoryRowGroups>(std::vector<int64_t>{3, 4});
  ColumnarDataset rows(source, MemoryRowGroups::Columns());
  ASSERT_EQ(rows.ListColumn("input_ids"), 0);
  EXPECT_EQ(rows.ListColumn("id"), -1);  // a scalar column
  EXPECT_EQ(rows.ListColumn("text"), -1);
  for (int64_t i = 0; i < 7; ++i) {
    const ListRow list = rows.GetList(i, 0);
    ASSERT_EQ(list.dtype, DType::kI32);
    const auto* values = static_cast<const int32_t*>(list.data);
    std::vector<int64_t> expected;
    for (int64_t t = 0; t < i % 4; ++t) expected.push_back(i + t);
    EXPECT_EQ(std::vector<int64_t>(values, values + list.size), expected) << "row " << i;
    EXPECT_NE(list.owner, nullptr);
  }
  EXPECT_EQ(rows.row_group_reads(), 2);
  EXPECT_THROW(rows.GetList(0, 1), Error);  // not a list column
  source->failing = 0;
  ColumnarDataset failing(source, MemoryRowGroups::Columns());
  EXPECT_THROW(failing.GetList(0, 0), SampleError);
}

TEST(ColumnarDatasetTest, ARowMapSelectsAndReordersRowsWithTheirLengths) {
  auto source = std::make_shared<MemoryRowGroups>(std::vector<int64_t>{4, 4});
  ColumnarOptions options;
  options.row_map = {7, 2, 5};
  options.lengths = {3, 2, 1};
  ColumnarDataset rows(source, MemoryRowGroups::Columns(), options);
  ASSERT_EQ(rows.size(), 3);
  SampleContext ctx(0, 0, 0);
  Sample sample;
  rows.Get(0, sample, ctx);
  EXPECT_EQ(TokensOf(sample), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(rows.Length(1), 2);
  EXPECT_EQ(rows.Source(2), "memory, row group 1, row 1");
  options.row_map = {8};
  options.lengths = {};
  EXPECT_THROW(ColumnarDataset(source, MemoryRowGroups::Columns(), options), Error);
  options.row_map = {1, 2};
  options.lengths = {1};
  EXPECT_THROW(ColumnarDataset(source, MemoryRowGroups::Columns(), options), Error);
}

TEST(ColumnarDatasetTest, BytesColumnsGetTheirPrefix) {
  class Strings : public RowGroupSource {
   public:
    std::vector<int64_t> RowsPerGroup() const override { return {2}; }
    std::string Describe(int64_t) const override { return "strings"; }
    DecodedRowGroup Read(int64_t) const override {
      DecodedRowGroup out;
      out.rows = 2;
      std::vector<std::byte> text;
      for (char c : std::string("abcde")) text.push_back(static_cast<std::byte>(c));
      out.columns = {DecodedColumn::Owning(std::move(text), {0, 2, 5})};
      return out;
    }
  };
  ColumnarDataset rows(std::make_shared<Strings>(),
                       {{"text", "text", ColumnKind::kBytes, DType::kU8, "s"}});
  Sample sample;
  SampleContext ctx(0, 0, 0);
  rows.Get(1, sample, ctx);
  const Tensor& t = sample["text"];
  EXPECT_EQ(std::string(static_cast<const char*>(t.raw()), static_cast<size_t>(t.elements())),
            "scde");
}

TEST(ColumnarDatasetTest, AnUnreadableGroupIsASampleErrorNamingIt) {
  auto source = std::make_shared<MemoryRowGroups>(std::vector<int64_t>{2, 2});
  source->failing = 1;
  ColumnarDataset rows(source, MemoryRowGroups::Columns());
  Sample sample;
  SampleContext ctx(0, 0, 0);
  rows.Get(1, sample, ctx);  // its read-ahead of group 1 fails quietly
  try {
    rows.Get(2, sample, ctx);
    FAIL() << "no error";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.kind(), FailureKind::kIo);
    EXPECT_EQ(e.source(), "memory, row group 1");
    EXPECT_NE(std::string(e.what()).find("unreadable"), std::string::npos);
  }
}

TEST(ColumnarDatasetTest, BadColumnsAreRefused) {
  auto source = std::make_shared<MemoryRowGroups>(std::vector<int64_t>{2});
  EXPECT_THROW(ColumnarDataset(source, {}), Error);
  auto twice = MemoryRowGroups::Columns();
  twice[1].field = "input_ids";
  EXPECT_THROW(ColumnarDataset(source, twice), Error);
  auto floats = MemoryRowGroups::Columns();
  floats[0].dtype = DType::kF32;
  EXPECT_THROW(ColumnarDataset(source, floats), Error);
}

TEST(ColumnarDatasetTest, ASequentialEpochThroughTheLoaderReadsEachGroupOnce) {
  auto source = std::make_shared<MemoryRowGroups>(std::vector<int64_t>(20, 10));
  ColumnarOptions options;
  options.max_row_groups = 8;
  auto rows = std::make_shared<ColumnarDataset>(source, MemoryRowGroups::Columns(), options);
  LoaderOptions loader;
  loader.batch_size = 4;
  loader.num_workers = 2;
  DataLoader data(rows, loader);
  std::vector<int64_t> ids;
  for (const Batch& batch : data) {
    const Tensor& id = batch["id"];
    for (int64_t r = 0; r < batch.size(); ++r) ids.push_back(id.data<int64_t>()[r]);
  }
  ASSERT_EQ(ids.size(), 200u);
  for (int64_t i = 0; i < 200; ++i) EXPECT_EQ(ids[static_cast<size_t>(i)], 100 + i);
  EXPECT_EQ(source->reads, 20);
  EXPECT_LE(rows->row_groups_held(), 8);
}

// Visits the groups of `rows`-row groups in an order of its own, each
// group's rows in an order of their own: a shuffle within one group at a time.
class GroupShuffleSampler : public Sampler {
 public:
  GroupShuffleSampler(std::vector<int64_t> groups, int64_t rows)
      : groups_(std::move(groups)), rows_(rows) {}
  int64_t size() const override { return static_cast<int64_t>(groups_.size()) * rows_; }
  std::vector<int64_t> Indices(int64_t epoch) const override {
    std::vector<int64_t> order;
    for (int64_t g : groups_) {
      for (int64_t r = 0; r < rows_; ++r) order.push_back(g * rows_ + (r * 7 + epoch) % rows_);
    }
    return order;
  }

 private:
  std::vector<int64_t> groups_;
  int64_t rows_;
};

TEST(ColumnarDatasetTest, AShuffledEpochReadsEachGroupAheadOfNeedInFirstUseOrder) {
  auto source = std::make_shared<MemoryRowGroups>(std::vector<int64_t>(12, 10));
  ColumnarOptions options;
  options.max_row_groups = 4;
  auto rows = std::make_shared<ColumnarDataset>(source, MemoryRowGroups::Columns(), options);
  const std::vector<int64_t> groups{5, 11, 0, 7, 3, 9, 1, 10, 2, 8, 4, 6};
  LoaderOptions loader;
  loader.batch_size = 5;
  loader.num_workers = 1;
  loader.prefetch_factor = 1;
  loader.sampler = std::make_shared<GroupShuffleSampler>(groups, 10);
  DataLoader data(rows, loader);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> ids;
    for (const Batch& batch : data) {
      const Tensor& id = batch["id"];
      for (int64_t r = 0; r < batch.size(); ++r) ids.push_back(id.data<int64_t>()[r]);
    }
    ASSERT_EQ(ids.size(), 120u);
    EXPECT_EQ(ids[0], 100 + 50 + epoch);  // group 5 first
  }
  // Every group once per epoch, in the order the plan first needs it, and
  // all but the epoch's first read before a Get asked for it. The second
  // epoch ends as the first did: the groups still held from its end are not
  // read again.
  const std::vector<int64_t> log = rows->row_group_read_log();
  ASSERT_GE(log.size(), 12u + 12u - 4u);
  ASSERT_LE(log.size(), 24u);
  EXPECT_EQ(std::vector<int64_t>(log.begin(), log.begin() + 12), groups);
  EXPECT_EQ(std::vector<int64_t>(log.begin() + 12, log.end()),
            std::vector<int64_t>(groups.begin(), groups.begin() + (log.size() - 12)));
  EXPECT_EQ(rows->row_group_reads(), static_cast<int64_t>(log.size()));
  EXPECT_GE(rows->row_group_reads_ahead(), rows->row_group_reads() - 2);
  EXPECT_LE(rows->row_groups_held(), 4);
}

// A source that records the plans and progress it is told (a remote
// source fetches its files ahead by them).
class PlannedRowGroups : public MemoryRowGroups {
 public:
  using MemoryRowGroups::MemoryRowGroups;
  void PlanGroups(const std::vector<PlannedGroup>& plan) const override {
    std::lock_guard<std::mutex> lock(mu);
    plans.push_back(plan);
  }
  void PlanProgress(int64_t delivered) const override {
    std::lock_guard<std::mutex> lock(mu);
    progress = std::max(progress, delivered);
  }
  mutable std::mutex mu;
  mutable std::vector<std::vector<PlannedGroup>> plans;
  mutable int64_t progress = 0;
};

TEST(ColumnarDatasetTest, TheSourceIsToldTheEpochsGroupsInFirstUseOrderAndTheProgress) {
  auto source = std::make_shared<PlannedRowGroups>(std::vector<int64_t>(6, 10));
  auto rows = std::make_shared<ColumnarDataset>(source, MemoryRowGroups::Columns());
  const std::vector<int64_t> groups{4, 1, 5, 0, 3, 2};
  LoaderOptions loader;
  loader.batch_size = 5;
  loader.num_workers = 1;
  loader.sampler = std::make_shared<GroupShuffleSampler>(groups, 10);
  DataLoader data(rows, loader);
  int64_t delivered = 0;
  for (const Batch& batch : data) delivered += batch.size();
  ASSERT_EQ(delivered, 60);
  std::lock_guard<std::mutex> lock(source->mu);
  ASSERT_FALSE(source->plans.empty());
  const std::vector<PlannedGroup>& plan = source->plans.front();
  ASSERT_EQ(plan.size(), groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    EXPECT_EQ(plan[i].group, groups[i]);
    EXPECT_EQ(plan[i].first_use, static_cast<int64_t>(i) * 10);
    EXPECT_EQ(plan[i].last_use, static_cast<int64_t>(i) * 10 + 9);
  }
  EXPECT_GE(source->progress, 50);  // told as batches were delivered
}

}  // namespace
}  // namespace feedline::text

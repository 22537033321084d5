#include "src/text/row_group_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "feedline/error.h"
#include "text/memory_row_groups.h"

namespace feedline::text::internal {
namespace {

using testing::MemoryRowGroups;

std::shared_ptr<MemoryRowGroups> Groups(std::vector<int64_t> rows) {
  return std::make_shared<MemoryRowGroups>(std::move(rows));
}

// Groups whose first read of `gated` says it began (`started`) and then
// waits for `open`: a read held under way, so that another Get waits for it.
class GatedRowGroups : public MemoryRowGroups {
 public:
  GatedRowGroups(std::vector<int64_t> rows, int64_t gated)
      : MemoryRowGroups(std::move(rows)), gated_(gated) {}
  DecodedRowGroup Read(int64_t group) const override {
    if (group == gated_ && !passed_.exchange(true)) {
      started.count_down();
      open.wait();
    }
    return MemoryRowGroups::Read(group);
  }

  mutable std::latch started{1};
  mutable std::latch open{1};

 private:
  const int64_t gated_;
  mutable std::atomic<bool> passed_{false};
};

int64_t IdOf(const HeldRow& held) {
  int64_t id = 0;
  std::memcpy(&id, held.decoded->columns[1].values.data() + held.row * sizeof(id), sizeof(id));
  return id;
}

TEST(RowGroupCacheTest, HoldsAtMostTheLimitLeastRecentlyUsedFirst) {
  auto source = Groups({2, 2, 2, 2});
  RowGroupCache cache(source, source->RowsPerGroup(), MemoryRowGroups::Columns(), 2, 0);
  cache.Acquire(0);
  cache.Acquire(1);
  cache.Acquire(0);  // 0 used last: 1 goes when 2 comes
  cache.Acquire(2);
  EXPECT_EQ(cache.held(), 2);
  EXPECT_EQ(cache.reads(), 3);
  cache.Acquire(0);
  EXPECT_EQ(cache.reads(), 3);
  cache.Acquire(1);
  EXPECT_EQ(cache.reads(), 4);
}

TEST(RowGroupCacheTest, ThreadsWantingOneGroupReadItOnce) {
  auto source = Groups({1000, 1000});
  RowGroupCache cache(source, source->RowsPerGroup(), MemoryRowGroups::Columns(), 1, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) EXPECT_EQ(cache.Acquire(1)->rows, 1000);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(source->reads, 1);
}

TEST(RowGroupCacheTest, ReadsAheadOnlyASequentialVisit) {
  auto source = Groups({2, 2, 2, 2, 2});
  RowGroupCache cache(source, source->RowsPerGroup(), MemoryRowGroups::Columns(), 4, 2);
  cache.Acquire(0);
  cache.ReadAhead(0);  // group 0: the start of a visit, reads group 1
  cache.WaitForReadsAhead();
  EXPECT_EQ(cache.reads(), 2);
  cache.ReadAhead(0);  // then group 2, the second within reach
  cache.WaitForReadsAhead();
  EXPECT_EQ(cache.reads(), 3);
  cache.ReadAhead(0);  // both held: nothing
  cache.WaitForReadsAhead();
  EXPECT_EQ(cache.reads(), 3);
  cache.Acquire(1);
  EXPECT_EQ(cache.reads(), 3);  // read ahead
  RowGroupCache random(source, source->RowsPerGroup(), MemoryRowGroups::Columns(), 4, 2);
  random.Acquire(3);
  random.ReadAhead(3);  // group 2 not held: no sequential visit, no read
  random.WaitForReadsAhead();
  EXPECT_EQ(random.reads(), 1);
}

TEST(RowGroupCacheTest, WithAPlanReadsAheadInPlanOrderIntoFreePlacesOnly) {
  auto source = Groups({2, 2, 2, 2, 2});
  RowGroupCache cache(source, source->RowsPerGroup(), MemoryRowGroups::Columns(), 3, 2);
  // The epoch needs group 3 (samples 0-1), then 0 (2-3), 4 (4-5), 1 (6-7), 2 (8-9).
  cache.SetPlan({{3, 0, 1}, {0, 2, 3}, {4, 4, 5}, {1, 6, 7}, {2, 8, 9}});
  cache.Acquire(3);
  cache.ReadAhead(3);  // the plan's next: 0, not 4 (row order)
  cache.WaitForReadsAhead();
  cache.ReadAhead(3);  // then 4, the second within reach
  cache.WaitForReadsAhead();
  cache.ReadAhead(3);  // 0 and 4 held: nothing
  cache.WaitForReadsAhead();
  EXPECT_EQ(cache.read_log(), (std::vector<int64_t>{3, 0, 4}));
  EXPECT_EQ(cache.reads_ahead(), 2);
  cache.Acquire(0);
  cache.ReadAhead(0);  // 1 is next, but no place is free and nothing is passed
  cache.WaitForReadsAhead();
  EXPECT_EQ(cache.reads(), 3);
  cache.PlanProgress(2);  // group 3's last use is delivered: it goes
  cache.ReadAhead(0);
  cache.WaitForReadsAhead();
  EXPECT_EQ(cache.read_log(), (std::vector<int64_t>{3, 0, 4, 1}));
  EXPECT_EQ(cache.held(), 3);
  cache.Acquire(1);
  EXPECT_EQ(cache.reads(), 4);  // 1 was there
  cache.SetPlan({});  // no plan: back to row order, from a sequential visit
  cache.ReadAhead(1);  // 0 held: sequential, 2 is next
  cache.WaitForReadsAhead();
  EXPECT_EQ(cache.read_log().back(), 2);
}

TEST(RowGroupCacheTest, AFailedReadIsEveryCallersErrorAndNotKept) {
  auto source = Groups({2, 2});
  source->failing = 1;
  RowGroupCache cache(source, source->RowsPerGroup(), MemoryRowGroups::Columns(), 2, 1);
  cache.Acquire(0);
  cache.ReadAhead(0);  // fails quietly
  cache.WaitForReadsAhead();
  EXPECT_THROW(cache.Acquire(1), Error);
  EXPECT_THROW(cache.Acquire(1), Error);
  source->failing = -1;
  EXPECT_EQ(cache.Acquire(1)->rows, 2);
  EXPECT_EQ(cache.held(), 2);
}

TEST(RowGroupCacheTest, RowsAGroupStillFeedsAreKeptWhenItIsLetGo) {
  auto source = Groups({4, 4, 4});
  RowGroupCache cache(source, source->RowsPerGroup(), MemoryRowGroups::Columns(), 1, 0);
  // The order: rows 0-2 of group 0, group 1, row 3 of group 0 last (as a
  // document waits in a row still open), then group 2.
  cache.SetPlan({{0, 0, 7}, {1, 3, 6}, {2, 8, 11}},
                {0, 1, 2, 7, 3, 4, 5, 6, 8, 9, 10, 11}, std::vector<int32_t>(12, 1));
  for (int64_t row : {0, 1, 2}) EXPECT_EQ(cache.AcquireRow(0, row).row, row);
  // Nothing delivered yet, but rows 0-2 were served as often as the plan
  // uses them: only row 3 is kept.
  for (int64_t row : {0, 1, 2, 3}) cache.AcquireRow(1, row);  // group 0 let go
  EXPECT_EQ(cache.rows_kept(), 1);
  EXPECT_GT(cache.kept_bytes(), 0);
  const HeldRow kept = cache.AcquireRow(0, 3);  // from the remnant: not read again
  EXPECT_EQ(source->reads, 2);
  EXPECT_EQ(kept.row, 0);
  EXPECT_EQ(kept.decoded->rows, 1);
  int64_t id = 0;
  std::memcpy(&id, kept.decoded->columns[1].values.data(), sizeof(id));
  EXPECT_EQ(id, 103);
  // Delivered past its last use: let go as the plan moves on.
  cache.PlanProgress(8);
  cache.ReadAhead(1);
  cache.WaitForReadsAhead();
  EXPECT_EQ(cache.rows_kept(), 0);
  // A row the plan no longer needs was not kept: asking for it reads again.
  cache.AcquireRow(0, 0);
  EXPECT_EQ(source->reads, 3);
}

TEST(RowGroupCacheTest, ARowWhoseGetWaitsForItsGroupsReadIsKeptWhenTheGroupIsLetGo) {
  auto source = std::make_shared<GatedRowGroups>(std::vector<int64_t>{4, 4}, /*gated=*/0);
  RowGroupCache cache(source, source->RowsPerGroup(), MemoryRowGroups::Columns(), 1, 0);
  // The order: rows 0 and 1 of group 0 (two workers at once), then group 1.
  cache.SetPlan({{0, 0, 1}, {1, 2, 5}}, {0, 1, -1, -1, 2, 3, 4, 5}, {1, 1, 0, 0, 1, 1, 1, 1});
  std::latch waiting(1);
  std::latch go(1);
  cache.set_wait_hook([&](int64_t group) {
    EXPECT_EQ(group, 0);
    waiting.count_down();
    go.wait();
  });
  std::thread reader([&] { EXPECT_EQ(IdOf(cache.AcquireRow(0, 0)), 100); });
  source->started.wait();  // group 0 claimed and being read
  HeldRow waited;
  std::thread waiter([&] { waited = cache.AcquireRow(0, 1); });
  waiting.wait();  // the second Get waits for that read, row 1 not served
  source->open.count_down();
  reader.join();  // group 0 held
  // Before the waiting Get looks again, the epoch moves on: group 1 takes
  // group 0's place, which keeps row 1, still to be delivered.
  cache.AcquireRow(1, 0);
  EXPECT_EQ(cache.rows_kept(), 1);
  go.count_down();
  waiter.join();
  EXPECT_EQ(IdOf(waited), 101);
  EXPECT_EQ(waited.decoded->rows, 1);  // from the remnant
  EXPECT_EQ(source->reads, 2);  // group 0 not read again
  EXPECT_EQ(cache.read_log(), (std::vector<int64_t>{0, 1}));
}

TEST(RowGroupCacheTest, ARowWhoseReadFailedIsStillToBeDelivered) {
  auto source = Groups({4, 4});
  RowGroupCache cache(source, source->RowsPerGroup(), MemoryRowGroups::Columns(), 1, 0);
  // The order: row 1 of group 0, row 0, then group 1.
  cache.SetPlan({{0, 0, 1}, {1, 2, 5}}, {1, 0, -1, -1, 2, 3, 4, 5}, {1, 1, 0, 0, 1, 1, 1, 1});
  source->failing = 0;
  EXPECT_THROW(cache.AcquireRow(0, 1), Error);  // not served
  source->failing = -1;
  cache.AcquireRow(0, 0);
  cache.AcquireRow(1, 0);  // group 0 let go: row 1 is kept for the Get asking again
  EXPECT_EQ(cache.rows_kept(), 1);
  EXPECT_EQ(IdOf(cache.AcquireRow(0, 1)), 101);
  EXPECT_EQ(source->reads, 3);  // the failed read, group 0 and group 1
}

TEST(RowGroupCacheTest, GroupsHeldFromTheLastEpochLeaveTheRemnantsBudgetToWaitingRows) {
  // Five groups of four documents of 10 tokens; two held, and remnants of
  // two groups' bytes.
  auto source = std::make_shared<MemoryRowGroups>(std::vector<int64_t>(5, 4),
                                                  std::vector<int64_t>(20, 10));
  RowGroupCache cache(source, source->RowsPerGroup(), MemoryRowGroups::Columns(), 2, 0);
  cache.Acquire(3);  // the last epoch ended with groups 3 and 4 held
  cache.Acquire(4);
  // The epoch: the first document of groups 0, 1 and 2, then each of those
  // groups whole (its first document again: open rows wait on all of a
  // group's rows), then groups 3 and 4.
  std::vector<std::pair<int64_t, int64_t>> order = {{0, 0}, {1, 0}, {2, 0}};
  for (int64_t group = 0; group < 5; ++group) {
    for (int64_t row = 0; row < 4; ++row) order.emplace_back(group, row);
  }
  std::vector<int64_t> last_use(20, -1);
  std::vector<int32_t> uses(20, 0);
  std::vector<PlannedGroup> plan;  // groups 0-4 first need in that order
  for (size_t at = 0; at < order.size(); ++at) {
    const auto [group, row] = order[at];
    const auto position = static_cast<int64_t>(at);
    last_use[static_cast<size_t>(group * 4 + row)] = position;
    ++uses[static_cast<size_t>(group * 4 + row)];
    if (group == static_cast<int64_t>(plan.size())) plan.push_back({group, position, position});
    plan[static_cast<size_t>(group)].last_use = position;
  }
  cache.SetPlan(plan, last_use, uses);
  for (size_t at = 0; at < order.size(); ++at) {
    const auto [group, row] = order[at];
    EXPECT_EQ(IdOf(cache.AcquireRow(group, row)), 100 + group * 4 + row) << at;
    cache.PlanProgress(static_cast<int64_t>(at) + 1);
    // Group 4, not started, is let go for group 0 without a copy of its
    // rows: the rows kept are those of the started groups.
    if (at == 0) {
      EXPECT_EQ(cache.rows_kept(), 0);
    }
  }
  // Each group read once this epoch: a copy of group 4 would have taken
  // the room group 1's waiting rows need, and group 1 been read again.
  const std::vector<int64_t> log = cache.read_log();
  EXPECT_EQ(std::vector<int64_t>(log.begin() + 2, log.end()),
            (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(RowGroupCacheTest, RemnantsStayWithinMaxRowGroupsOfBytes) {
  auto source = std::make_shared<MemoryRowGroups>(std::vector<int64_t>{4, 4, 4},
                                                  std::vector<int64_t>{40, 40, 40, 40, 1, 1, 1,
                                                                       1, 1, 1, 1, 1});
  RowGroupCache cache(source, source->RowsPerGroup(), MemoryRowGroups::Columns(), 1, 0);
  // Three long rows of group 0 are needed after group 1: more bytes than
  // the mean group read, so they are not kept.
  const auto group_bytes = static_cast<int64_t>(source->Read(0).bytes());
  cache.SetPlan({{0, 0, 11}, {1, 1, 4}, {2, 5, 7}},
                {0, 8, 9, 10, 1, 2, 3, 4, 5, 6, 7, 11}, std::vector<int32_t>(12, 1));
  cache.AcquireRow(0, 0);
  cache.PlanProgress(1);
  cache.AcquireRow(1, 0);
  EXPECT_EQ(cache.rows_kept(), 0);
  EXPECT_LE(cache.kept_bytes(), group_bytes);
  cache.AcquireRow(0, 1);  // not kept: read again
  EXPECT_EQ(source->reads, 4);  // with the Read above
}

TEST(RowGroupCacheTest, BadOptionsAreRefused) {
  auto source = Groups({2});
  EXPECT_THROW(RowGroupCache(source, {2}, MemoryRowGroups::Columns(), 0, 1), Error);
  EXPECT_THROW(RowGroupCache(source, {2}, MemoryRowGroups::Columns(), 1, -1), Error);
  EXPECT_THROW(RowGroupCache(nullptr, {2}, MemoryRowGroups::Columns(), 1, 1), Error);
}

}  // namespace
}  // namespace feedline::text::internal

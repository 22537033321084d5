// Where collated batches are written and read (CollatedBatches), alone and
// through ProcessWorkers::CollateIfIdle with a forked worker: once a batch
// was seen, the next one's arrays lie in a room of the shared slots that the
// worker wrote them into (the training process reads them there, no copy),
// with the bytes the worker's collate wrote; a room comes back with its
// Sample once the batch is dropped and is reused, grows with the batches,
// and is never given without shared slots. A whole batch's rows and its
// collate go in one exchange.
#include "src/process/collated_batches.h"

#include <signal.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "src/core/sample_binder.h"
#include "src/process/process_workers.h"

namespace feedline::internal {
namespace {

using extension::TaskOutput;
using extension::TaskRequest;
using extension::WorkerTask;
using extension::WorkerTaskInfo;

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::shared_ptr<SharedSlotAllocator> Slots() {
  return std::make_shared<SharedSlotAllocator>(64 * kMiB);
}

TEST(CollatedBatchesTest, NoRoomUntilABatchIsSeenThenAQuarterMoreRoundedToAMiB) {
  auto slots = Slots();
  auto batches = std::make_shared<CollatedBatches>(slots);
  EXPECT_EQ(batches->Take().room_bytes, 0u) << "the first batch goes through the arena";
  batches->Saw(3 * kMiB);
  const CollatedBatches::Lease lease = batches->Take();
  EXPECT_EQ(lease.room_bytes, 4 * kMiB);
  EXPECT_GE(slots->OffsetOf(slots->base() + lease.room_offset), 0);
  EXPECT_LE(lease.room_offset + lease.room_bytes, slots->reserved());
}

TEST(CollatedBatchesTest, ADroppedBatchGivesItsRoomAndSampleToTheNextCleared) {
  auto slots = Slots();
  auto batches = std::make_shared<CollatedBatches>(slots);
  batches->Saw(kMiB);
  uint64_t first_room;
  {
    CollatedBatches::Lease lease = batches->Take();
    first_room = lease.room_offset;
    // A field bound into the room, as CollateIfIdle reads one.
    SampleBinder::Bind(*lease.sample, "buffer0", DType::kU8, Shape{16},
                       slots->base() + lease.room_offset);
    lease.sample->Allocate("buffer0", DType::kU8, Shape{16});
    EXPECT_EQ(slots->bytes_in_use(), static_cast<int64_t>(2 * kMiB));
  }
  const CollatedBatches::Lease again = batches->Take();
  EXPECT_EQ(again.room_offset, first_room) << "the room is reused, its pages still committed";
  EXPECT_EQ(again.sample->num_fields(), 0);
  // Unbound: the same name now gets the Sample's own storage.
  Tensor own = again.sample->Allocate("buffer0", DType::kU8, Shape{16});
  EXPECT_LT(slots->OffsetOf(own.raw()), 0);
}

TEST(CollatedBatchesTest, TheRoomGrowsWithTheBatchesAndTheOldOneIsFreed) {
  auto slots = Slots();
  auto batches = std::make_shared<CollatedBatches>(slots);
  batches->Saw(kMiB);
  batches->Take();  // dropped at once: its 2 MiB room is idle
  batches->Saw(6 * kMiB);
  const CollatedBatches::Lease lease = batches->Take();
  EXPECT_EQ(lease.room_bytes, 8 * kMiB);
  EXPECT_EQ(slots->bytes_in_use(), static_cast<int64_t>(8 * kMiB)) << "the smaller room was freed";
}

TEST(CollatedBatchesTest, WithoutSharedSlotsThereIsNeverARoom) {
  auto batches = std::make_shared<CollatedBatches>(nullptr);
  batches->Saw(kMiB);
  EXPECT_EQ(batches->Take().room_bytes, 0u);
}

TEST(CollatedBatchesTest, ABatchMayOutliveThePool) {
  auto slots = Slots();
  auto batches = std::make_shared<CollatedBatches>(slots);
  batches->Saw(kMiB);
  std::shared_ptr<Sample> sample = batches->Take().sample;
  batches.reset();
  sample->Allocate("x", DType::kU8, Shape{4});
  sample.reset();
  EXPECT_EQ(slots->bytes_in_use(), 0) << "the last drop frees the room";
}

// Sample i: "x", kBytes bytes of value i; collate writes the kept samples'
// bytes one after the other as field "batch".
constexpr int64_t kBytes = 300000;

class BatchKeepingTask : public WorkerTask {
 public:
  void Load(const TaskRequest& request, TaskOutput& out) override {
    std::memset(out.Field("x", DType::kU8, Shape{kBytes}).raw(), static_cast<int>(request.index),
                kBytes);
    kept_[next_++] = static_cast<uint8_t>(request.index);
  }
  bool Collate(std::span<const int64_t> replies, TaskOutput& out) override {
    const auto count = static_cast<int64_t>(replies.size());
    auto* batch = static_cast<uint8_t*>(out.Field("batch", DType::kU8, Shape{count * kBytes}).raw());
    for (int64_t i = 0; i < count; ++i) {
      std::memset(batch + i * kBytes, kept_.at(replies[static_cast<size_t>(i)]), kBytes);
    }
    return true;
  }

 private:
  int64_t next_ = 0;
  std::map<int64_t, uint8_t> kept_;
};

class BatchKeepingProgram : public extension::WorkerProgram {
 public:
  std::unique_ptr<WorkerTask> MakeTask(const WorkerTaskInfo&) override {
    return std::make_unique<BatchKeepingTask>();
  }
  void OnSampleReply(int, int64_t process, const Sample*) const override { process_ = process; }
  int64_t process() const { return process_; }

 private:
  mutable int64_t process_ = -1;
};

// The sample's field "batch" holds `indices`' bytes in order.
void ExpectBatchOf(const Sample& batch, const std::vector<uint8_t>& indices) {
  const Tensor& bytes = batch["batch"];
  ASSERT_EQ(bytes.bytes(), indices.size() * kBytes);
  const auto* data = static_cast<const uint8_t*>(bytes.raw());
  for (size_t i = 0; i < indices.size(); ++i) {
    EXPECT_EQ(data[i * kBytes], indices[i]);
    EXPECT_EQ(data[(i + 1) * kBytes - 1], indices[i]);
  }
}

// One started worker process running `program` (a BatchKeepingProgram),
// and the slots its batches' rooms come from.
struct OneKeepingWorker {
  explicit OneKeepingWorker(
      std::shared_ptr<BatchKeepingProgram> kept = std::make_shared<BatchKeepingProgram>())
      : program(std::move(kept)) {
    ProcessWorkerOptions options;
    options.num_workers = 1;
    workers = std::make_shared<ProcessWorkers>(program, options);
    workers->StartWorker(0);
    slots = std::static_pointer_cast<SharedSlotAllocator>(workers->slot_allocator());
  }
  std::shared_ptr<BatchKeepingProgram> program;
  std::shared_ptr<ProcessWorkers> workers;
  std::shared_ptr<SharedSlotAllocator> slots;
};

TEST(CollatedBatchesTest, AWorkersCollatedBatchIsReadWhereTheWorkerWroteIt) {
  OneKeepingWorker worker;
  auto& [program, workers, slots] = worker;
  ASSERT_NE(slots, nullptr);
  SampleContext ctx(0, 0, 0, /*worker_id=*/0);
  Sample row;
  for (int64_t i = 1; i <= 6; ++i) workers->LoadSample(i, ctx, row);  // replies 0-5

  const int64_t replies_a[] = {0, 1};
  std::shared_ptr<const Sample> first = workers->CollateIfIdle(0, program->process(), replies_a);
  ASSERT_NE(first, nullptr);
  ExpectBatchOf(*first, {1, 2});
  EXPECT_LT(slots->OffsetOf(first->Find("batch")->raw()), 0)
      << "nothing seen yet: the first batch is copied out of the arena";
  first.reset();

  const int64_t replies_b[] = {2, 3};
  std::shared_ptr<const Sample> second = workers->CollateIfIdle(0, program->process(), replies_b);
  ASSERT_NE(second, nullptr);
  ExpectBatchOf(*second, {3, 4});
  const void* where = second->Find("batch")->raw();
  EXPECT_GE(slots->OffsetOf(where), 0) << "read in the room the worker wrote it in";
  second.reset();

  const int64_t replies_c[] = {4, 5};
  std::shared_ptr<const Sample> third = workers->CollateIfIdle(0, program->process(), replies_c);
  ASSERT_NE(third, nullptr);
  ExpectBatchOf(*third, {5, 6});
  EXPECT_EQ(third->Find("batch")->raw(), where) << "the dropped batch's room is reused";
}

// BatchKeepingProgram, saying that its tasks collate: a whole batch's
// request asks for its collate too.
class CollatingProgram : public BatchKeepingProgram {
 public:
  bool CollatesInWorker() const override { return true; }
};

TEST(CollatedBatchesTest, AWholeBatchIsCollatedInTheExchangeThatLoadsItsRows) {
  OneKeepingWorker worker(std::make_shared<CollatingProgram>());
  auto& [program, workers, slots] = worker;
  SampleContext ctx(0, 0, 0, /*worker_id=*/0);
  Sample rows[3];
  RowLoad loads[3] = {{4, &rows[0], nullptr}, {5, &rows[1], nullptr}, {6, &rows[2], nullptr}};
  ASSERT_TRUE(workers->LoadRows(loads, 0, ctx, /*whole_batch=*/true));  // replies 0, 1, 2
  for (const RowLoad& load : loads) EXPECT_EQ(load.error, nullptr);
  // The batch came with its rows: asking for it needs no process any more.
  const pid_t pid = static_cast<pid_t>(workers->worker_pids()[0]);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const int64_t replies[] = {0, 1, 2};
  std::shared_ptr<const Sample> batch = workers->CollateIfIdle(0, program->process(), replies);
  ASSERT_NE(batch, nullptr);
  ExpectBatchOf(*batch, {4, 5, 6});
  // Asked once: the next ask goes to the (dead) process and gets nothing.
  EXPECT_EQ(workers->CollateIfIdle(0, program->process(), replies), nullptr);
}

TEST(CollatedBatchesTest, RowsThatAreNoWholeBatchAreNotCollatedAhead) {
  OneKeepingWorker worker(std::make_shared<CollatingProgram>());
  auto& [program, workers, slots] = worker;
  SampleContext ctx(0, 0, 0, /*worker_id=*/0);
  Sample rows[2];
  RowLoad loads[2] = {{1, &rows[0], nullptr}, {2, &rows[1], nullptr}};
  ASSERT_TRUE(workers->LoadRows(loads, 0, ctx, /*whole_batch=*/false));
  const pid_t pid = static_cast<pid_t>(workers->worker_pids()[0]);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const int64_t replies[] = {0, 1};
  EXPECT_EQ(workers->CollateIfIdle(0, program->process(), replies), nullptr)
      << "only a round trip could collate these, and the process is gone";
}

TEST(CollatedBatchesTest, ABatchLargerThanItsRoomComesThroughTheArenaWhole) {
  OneKeepingWorker worker;
  auto& [program, workers, slots] = worker;
  SampleContext ctx(0, 0, 0, /*worker_id=*/0);
  Sample row;
  for (int64_t i = 1; i <= 12; ++i) workers->LoadSample(i, ctx, row);  // replies 0-11
  const int64_t one[] = {0};
  ASSERT_NE(workers->CollateIfIdle(0, program->process(), one), nullptr);  // seen: 300 KB
  // 11 samples (3.3 MB) do not fit the 1 MiB room.
  const int64_t many[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  std::shared_ptr<const Sample> batch = workers->CollateIfIdle(0, program->process(), many);
  ASSERT_NE(batch, nullptr);
  ExpectBatchOf(*batch, {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  EXPECT_LT(slots->OffsetOf(batch->Find("batch")->raw()), 0);
}

}  // namespace
}  // namespace feedline::internal

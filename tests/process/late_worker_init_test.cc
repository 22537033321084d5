// A worker_init that fails after the other workers have loaded the whole
// epoch: the epoch must end with the WorkerInitError, as torch raises a
// failed worker_init_fn, not end cleanly without it. Through the public
// DataLoader, with worker threads and worker processes; bounded (the failing
// worker_init sleeps 300 ms).
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "feedline/feedline.h"

namespace feedline {
namespace {

class NumberedRows : public Dataset {
 public:
  int64_t size() const override { return 8; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    out.SetScalar<int64_t>("index", index);
  }
};

class LateWorkerInit : public ::testing::TestWithParam<WorkerMode> {};

TEST_P(LateWorkerInit, FailureAfterTheOtherWorkersFinishedTheEpochIsRaised) {
  LoaderOptions options;
  options.worker_mode = GetParam();
  options.num_workers = 2;
  options.batch_size = 4;
  options.worker_init = [](int worker) {
    if (worker != 1) return;
    // Worker 0 loads all 8 samples meanwhile.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    throw std::runtime_error("no GPU here");
  };
  DataLoader loader(std::make_shared<NumberedRows>(), options);
  const auto start = std::chrono::steady_clock::now();
  int batches = 0;
  try {
    while (loader.Next()) ++batches;
    FAIL() << "the epoch ended without the failed worker_init (" << batches << " batches)";
  } catch (const WorkerInitError& e) {
    EXPECT_EQ(e.worker(), 1);
    EXPECT_NE(std::string(e.what()).find("no GPU here"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

INSTANTIATE_TEST_SUITE_P(ThreadsAndProcesses, LateWorkerInit,
                         ::testing::Values(WorkerMode::kThread, WorkerMode::kProcess),
                         [](const auto& info) {
                           return info.param == WorkerMode::kThread ? "Threads" : "Processes";
                         });

}  // namespace
}  // namespace feedline

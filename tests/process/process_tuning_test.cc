// The tuner treats worker processes as processes (longer windows, agreeing
// verdicts: docs/tuning.md), and worker threads as threads, whichever worker
// mode is asked for: the loader's backend says which it runs on. Through the
// public DataLoader.
#include <cstdint>
#include <memory>

#include <gtest/gtest.h>

#include "feedline/feedline.h"

namespace feedline {
namespace {

class Squares : public Dataset {
 public:
  int64_t size() const override { return 48; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    out.SetScalar<int64_t>("value", index * index);
  }
};

bool TunedAsProcesses(WorkerMode mode) {
  LoaderOptions options;
  options.worker_mode = mode;
  options.num_workers = kAuto;
  options.batch_size = 8;
  DataLoader loader(std::make_shared<Squares>(), options);
  int64_t next = 0;
  while (auto batch = loader.Next()) {
    const Tensor& values = (*batch)["value"];
    for (int64_t r = 0; r < values.shape()[0]; ++r, ++next) {
      EXPECT_EQ(values.data<int64_t>()[r], next * next);
    }
  }
  EXPECT_EQ(next, 48);
  const TunerStats tuner = loader.stats().tuner;
  EXPECT_TRUE(tuner.enabled);
  return tuner.costly_workers;
}

TEST(ProcessTuning, ProcessWorkersAreTunedAsProcesses) {
  EXPECT_TRUE(TunedAsProcesses(WorkerMode::kProcess));
}

TEST(ProcessTuning, ThreadWorkersAreTunedAsThreads) {
  // kAuto puts a C++ dataset on threads: it holds no global lock.
  EXPECT_FALSE(TunedAsProcesses(WorkerMode::kThread));
  EXPECT_FALSE(TunedAsProcesses(WorkerMode::kAuto));
}

}  // namespace
}  // namespace feedline

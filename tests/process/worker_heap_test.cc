// A worker process keeps the memory a sample frees for the next sample
// (worker_heap.h): through the public DataLoader with worker processes, a
// dataset whose Get allocates, fills and frees a buffer of 48 MiB (a float
// image or a zoom-out canvas) counts the page faults of its own Get. With
// glibc's defaults each such Get maps the buffer afresh and faults in every
// page (12,288 of 4 KiB); in a worker process only the first batch's Gets
// may. A user's own malloc settings in the environment are left alone.
#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "feedline/feedline.h"
#include "src/process/worker_heap.h"

namespace feedline {
namespace {

constexpr size_t kBufferBytes = size_t{48} << 20;
constexpr int64_t kBufferPages = kBufferBytes / 4096;

int64_t MinorFaults() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

class LargeBufferPerSample : public Dataset {
 public:
  int64_t size() const override { return 12; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    const int64_t before = MinorFaults();
    {
      std::vector<unsigned char> buffer(kBufferBytes);  // zero-filled: every page written
      buffer[index % buffer.size()] = 1;
      out.SetScalar<int64_t>("checksum", buffer[7]);
    }
    out.SetScalar<int64_t>("faults", MinorFaults() - before);
  }
};

// The faults of each sample's Get, with 2 worker processes.
std::vector<int64_t> FaultsPerSample() {
  LoaderOptions options;
  options.worker_mode = WorkerMode::kProcess;
  options.num_workers = 2;
  options.batch_size = 4;
  DataLoader loader(std::make_shared<LargeBufferPerSample>(), options);
  std::vector<int64_t> faults;
  while (auto batch = loader.Next()) {
    const Tensor& values = (*batch)["faults"];
    for (int64_t r = 0; r < values.shape()[0]; ++r) faults.push_back(values.data<int64_t>()[r]);
  }
  return faults;
}

TEST(WorkerHeap, AWorkerProcessReusesTheBufferItsLastSampleFreed) {
  ASSERT_FALSE(internal::UserConfiguresMalloc()) << "run without malloc settings in the environment";
  const std::vector<int64_t> faults = FaultsPerSample();
  ASSERT_EQ(faults.size(), 12u);
  // The first batch (4 samples, 2 a worker) grows the workers' heaps;
  // every later sample reuses what they hold.
  for (size_t i = 4; i < faults.size(); ++i) {
    EXPECT_LT(faults[i], kBufferPages / 10) << "sample " << i << " mapped its buffer afresh";
  }
}

TEST(WorkerHeap, TheUsersMallocSettingsAreLeftAlone) {
  // glibc reads MALLOC_* at start-up, so the worker keeps its parent's
  // (default) heap; the library must not override what the user chose.
  ASSERT_EQ(::setenv("MALLOC_MMAP_THRESHOLD_", "131072", 1), 0);
  EXPECT_TRUE(internal::UserConfiguresMalloc());
  const std::vector<int64_t> faults = FaultsPerSample();
  ::unsetenv("MALLOC_MMAP_THRESHOLD_");
  ASSERT_EQ(faults.size(), 12u);
  for (int64_t f : faults) EXPECT_GE(f, kBufferPages / 2) << "a 48 MiB buffer mapped afresh";
}

TEST(WorkerHeap, GlibcTunablesForMallocCountAsTheUsersSettings) {
  ASSERT_EQ(::setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1000000", 1), 0);
  EXPECT_TRUE(internal::UserConfiguresMalloc());
  ASSERT_EQ(::setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1), 0);
  EXPECT_FALSE(internal::UserConfiguresMalloc());
  ::unsetenv("GLIBC_TUNABLES");
}

}  // namespace
}  // namespace feedline

// TunerResources: the parsers of /proc and cgroup files, and how cores and
// memory are shared among the ranks of a host.
#include "src/loader/tuner_resources.h"

#include <gtest/gtest.h>

#include "feedline/loader_options.h"

namespace feedline::internal {
namespace {

TEST(TunerResources, ParsesCgroupAndMeminfo) {
  EXPECT_EQ(ParseCpuMax("max 100000\n"), std::nullopt);
  EXPECT_EQ(ParseCpuMax("150000 100000\n"), 2);
  EXPECT_EQ(ParseCpuMax("50000 100000"), 1);
  EXPECT_EQ(ParseCpuMax("garbage"), std::nullopt);
  EXPECT_EQ(CpusFromQuota(-1, 100000), std::nullopt);
  EXPECT_EQ(CpusFromQuota(400000, 100000), 4);
  EXPECT_EQ(ParseMemAvailable("MemTotal: 100 kB\nMemAvailable:   2048 kB\n"), 2048 * 1024);
  EXPECT_EQ(ParseMemAvailable("MemTotal: 100 kB\n"), std::nullopt);
  EXPECT_EQ(ParseMemoryLimit("max\n"), std::nullopt);
  EXPECT_EQ(ParseMemoryLimit("9223372036854771712\n"), std::nullopt);
  EXPECT_EQ(ParseMemoryLimit("1073741824\n"), int64_t{1} << 30);
}

TEST(TunerResources, SharesCoresAndMemoryAmongLocalRanks) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  // 16 CPUs in the affinity mask, a quota of 6, 4 ranks on the host.
  TunerResources r = ComputeTunerResources(16, 6, 4, 64 * kGiB, std::nullopt, std::nullopt);
  EXPECT_EQ(r.cores, 6);
  EXPECT_EQ(r.max_workers, 1);
  EXPECT_EQ(r.memory_budget_bytes, static_cast<int64_t>(64 * kGiB * kMemoryShare / 4));
  // The cgroup's limit minus its usage caps what MemAvailable says.
  r = ComputeTunerResources(8, std::nullopt, 2, 64 * kGiB, 10 * kGiB, 2 * kGiB);
  EXPECT_EQ(r.max_workers, 4);
  EXPECT_EQ(r.available_bytes, 8 * kGiB);
  EXPECT_EQ(r.memory_budget_bytes, static_cast<int64_t>(8 * kGiB * kMemoryShare / 2));
  // More ranks than cores: still one worker each.
  EXPECT_EQ(ComputeTunerResources(2, std::nullopt, 8, 0, std::nullopt, std::nullopt).max_workers,
            1);
}

TEST(TunerResources, DetectsThisHost) {
  const TunerResources r = DetectTunerResources();
  EXPECT_GE(r.cores, 1);
  EXPECT_GE(r.max_workers, 1);
  EXPECT_LE(r.max_workers, r.cores);
  EXPECT_GT(r.available_bytes, 0);  // /proc/meminfo exists on Linux
  EXPECT_LE(r.memory_budget_bytes, r.available_bytes);
}

TEST(TunerResources, AutoMaxWorkersIsThisHostsShare) {
  EXPECT_EQ(AutoMaxWorkers(), DetectTunerResources().max_workers);
}

}  // namespace
}  // namespace feedline::internal

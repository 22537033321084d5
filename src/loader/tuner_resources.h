// TunerResources: what the tuner may use on this host: the cores (the
// process's CPU affinity, capped by the cgroup's CPU quota, shared among the
// local ranks of a distributed job) and a memory budget for batch slots (a
// share of the available memory, capped by the cgroup's limit, shared the
// same way). Detection reads /proc and /sys; the parsers and the arithmetic
// are pure functions, tested on file contents.
//
// Thread safety: pure functions; DetectTunerResources reads the environment
// (LOCAL_WORLD_SIZE and the other launcher variables) and must not race with
// setenv.
#ifndef FEEDLINE_SRC_LOADER_TUNER_RESOURCES_H_
#define FEEDLINE_SRC_LOADER_TUNER_RESOURCES_H_

#include <cstdint>
#include <optional>
#include <string>

namespace feedline::internal {

struct TunerResources {
  int cores = 1;                // usable by this process
  int local_ranks = 1;          // processes of the job on this host
  int max_workers = 1;          // cores / local_ranks, at least 1
  int64_t available_bytes = 0;  // MemAvailable, capped by the cgroup (0: unknown)
  int64_t memory_budget_bytes = 0;
};

// The share of available memory the batch slots of all loaders of one rank
// may take by default.
inline constexpr double kMemoryShare = 0.25;

// "max 100000" or "200000 100000" (cgroup v2 cpu.max) -> the CPUs the quota
// allows, rounded up; nullopt for "max" or text that is not a quota.
std::optional<int> ParseCpuMax(const std::string& text);
// cgroup v1: cpu.cfs_quota_us and cpu.cfs_period_us (quota -1: none).
std::optional<int> CpusFromQuota(int64_t quota_us, int64_t period_us);
// MemAvailable from /proc/meminfo's text, in bytes.
std::optional<int64_t> ParseMemAvailable(const std::string& meminfo);
// A cgroup memory limit file ("max", or bytes; v1's "unlimited" is a huge
// number): nullopt when there is no limit.
std::optional<int64_t> ParseMemoryLimit(const std::string& text);

// The arithmetic, from what was detected.
TunerResources ComputeTunerResources(int affinity_cores, std::optional<int> quota_cores,
                                     int local_ranks, std::optional<int64_t> mem_available,
                                     std::optional<int64_t> cgroup_limit,
                                     std::optional<int64_t> cgroup_usage);

// Reads this host: sched_getaffinity, the cgroup (v2, else v1) CPU quota and
// memory limit and usage, /proc/meminfo, and the launcher's local world size
// (LOCAL_WORLD_SIZE and the others of launcher.h; 1 when unset or malformed).
TunerResources DetectTunerResources();

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_LOADER_TUNER_RESOURCES_H_

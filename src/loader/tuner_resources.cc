#include "src/loader/tuner_resources.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "feedline/launcher.h"
#include "feedline/loader_options.h"

namespace feedline::internal {
namespace {

std::optional<int64_t> ParseInt64(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\n");
  if (begin == std::string::npos) return std::nullopt;
  size_t end = text.find_last_not_of(" \t\n");
  const std::string s = text.substr(begin, end - begin + 1);
  const size_t from = s[0] == '-' ? 1 : 0;
  if (s.size() == from) return std::nullopt;
  for (size_t i = from; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
  }
  errno = 0;
  const long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The cgroup v2 directory of this process ("0::/path" in /proc/self/cgroup).
std::string CgroupV2Dir() {
  const std::optional<std::string> text = ReadFile("/proc/self/cgroup");
  if (!text) return "/sys/fs/cgroup";
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("0::", 0) == 0) {
      std::string path = line.substr(3);
      return path == "/" ? "/sys/fs/cgroup" : "/sys/fs/cgroup" + path;
    }
  }
  return "/sys/fs/cgroup";
}

int AffinityCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

std::optional<int> QuotaCores() {
  const std::string v2 = CgroupV2Dir();
  for (const std::string& dir : {v2, std::string("/sys/fs/cgroup")}) {
    if (std::optional<std::string> text = ReadFile(dir + "/cpu.max")) return ParseCpuMax(*text);
  }
  const std::optional<std::string> quota = ReadFile("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  const std::optional<std::string> period = ReadFile("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  if (!quota || !period) return std::nullopt;
  const std::optional<int64_t> q = ParseInt64(*quota);
  const std::optional<int64_t> p = ParseInt64(*period);
  if (!q || !p) return std::nullopt;
  return CpusFromQuota(*q, *p);
}

// The cgroup's memory limit and current usage (v2, else v1).
std::pair<std::optional<int64_t>, std::optional<int64_t>> CgroupMemory() {
  const std::string v2 = CgroupV2Dir();
  for (const std::string& dir : {v2, std::string("/sys/fs/cgroup")}) {
    if (std::optional<std::string> max = ReadFile(dir + "/memory.max")) {
      std::optional<std::string> current = ReadFile(dir + "/memory.current");
      return {ParseMemoryLimit(*max), current ? ParseInt64(*current) : std::nullopt};
    }
  }
  std::optional<std::string> limit = ReadFile("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  std::optional<std::string> usage = ReadFile("/sys/fs/cgroup/memory/memory.usage_in_bytes");
  return {limit ? ParseMemoryLimit(*limit) : std::nullopt,
          usage ? ParseInt64(*usage) : std::nullopt};
}

int LocalRanks() {
  try {
    const LaunchInfo launch = DetectLaunch();
    return static_cast<int>(std::clamp<int64_t>(launch.local_world_size, 1, 1 << 20));
  } catch (const std::exception&) {
    // A malformed launcher variable is reported where it matters (the
    // distributed sampler); here the loader assumes it runs alone.
    return 1;
  }
}

}  // namespace

std::optional<int> CpusFromQuota(int64_t quota_us, int64_t period_us) {
  if (quota_us <= 0 || period_us <= 0) return std::nullopt;
  const int64_t cpus = (quota_us + period_us - 1) / period_us;
  return static_cast<int>(std::clamp<int64_t>(cpus, 1, 1 << 20));
}

std::optional<int> ParseCpuMax(const std::string& text) {
  std::istringstream in(text);
  std::string quota, period;
  if (!(in >> quota >> period)) return std::nullopt;
  if (quota == "max") return std::nullopt;
  const std::optional<int64_t> q = ParseInt64(quota);
  const std::optional<int64_t> p = ParseInt64(period);
  if (!q || !p) return std::nullopt;
  return CpusFromQuota(*q, *p);
}

std::optional<int64_t> ParseMemAvailable(const std::string& meminfo) {
  std::istringstream lines(meminfo);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    int64_t kb = -1;
    std::string unit;
    if (!(fields >> kb) || kb < 0) return std::nullopt;
    fields >> unit;
    return unit.empty() || unit == "kB" ? kb * 1024 : kb;
  }
  return std::nullopt;
}

std::optional<int64_t> ParseMemoryLimit(const std::string& text) {
  const std::optional<int64_t> v = ParseInt64(text);
  if (!v || *v <= 0) return std::nullopt;  // "max" or unparseable
  // cgroup v1 writes "no limit" as the largest page-aligned number.
  if (*v >= (int64_t{1} << 60)) return std::nullopt;
  return v;
}

TunerResources ComputeTunerResources(int affinity_cores, std::optional<int> quota_cores,
                                     int local_ranks, std::optional<int64_t> mem_available,
                                     std::optional<int64_t> cgroup_limit,
                                     std::optional<int64_t> cgroup_usage) {
  TunerResources r;
  r.cores = std::max(1, affinity_cores);
  if (quota_cores) r.cores = std::max(1, std::min(r.cores, *quota_cores));
  r.local_ranks = std::max(1, local_ranks);
  r.max_workers = std::max(1, r.cores / r.local_ranks);
  int64_t available = mem_available.value_or(0);
  if (cgroup_limit) {
    const int64_t left = std::max<int64_t>(0, *cgroup_limit - cgroup_usage.value_or(0));
    available = available > 0 ? std::min(available, left) : left;
  }
  r.available_bytes = available;
  r.memory_budget_bytes =
      static_cast<int64_t>(static_cast<double>(available) * kMemoryShare / r.local_ranks);
  return r;
}

TunerResources DetectTunerResources() {
  const std::optional<std::string> meminfo = ReadFile("/proc/meminfo");
  const auto [limit, usage] = CgroupMemory();
  return ComputeTunerResources(AffinityCores(), QuotaCores(), LocalRanks(),
                               meminfo ? ParseMemAvailable(*meminfo) : std::nullopt, limit, usage);
}

}  // namespace feedline::internal

namespace feedline {

int AutoMaxWorkers() { return internal::DetectTunerResources().max_workers; }

}  // namespace feedline

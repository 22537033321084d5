// LoaderOptions: the settings of a DataLoader, named as in paddle.io.DataLoader
// (and torch.utils.data.DataLoader where they agree).
#ifndef FEEDLINE_LOADER_OPTIONS_H_
#define FEEDLINE_LOADER_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "feedline/batch_sampler.h"
#include "feedline/collate.h"
#include "feedline/export.h"
#include "feedline/sampler.h"

namespace feedline {

// num_workers = kAuto or prefetch_factor = kAuto: the loader sets that value
// itself while it runs, from what it measures (docs/tuning.md).
inline constexpr int kAuto = -1;

// The most workers num_workers = kAuto runs on this host: the CPUs this
// process may use (its affinity mask, capped by the cgroup's CPU quota)
// divided among the ranks of a distributed job on the host
// (LOCAL_WORLD_SIZE and the other launcher variables of launcher.h), at
// least 1.
FEEDLINE_EXPORT int AutoMaxWorkers();

// What happens to a sample that fails to load.
enum class ErrorPolicy {
  kRaise,    // the iterator throws the SampleError, after every earlier batch
  kSkip,     // the batch comes out without it, one shorter
  kReplace,  // a substitute from (seed, epoch, index) takes its place
};
FEEDLINE_EXPORT const char* ErrorPolicyName(ErrorPolicy policy);  // "raise", "skip", "replace"
// Parses "raise" / "skip" / "replace"; throws Error otherwise.
FEEDLINE_EXPORT ErrorPolicy ParseErrorPolicy(const std::string& name);

// Where samples load when num_workers > 0.
enum class WorkerMode {
  kThread,   // worker threads of this process (a C++ Dataset's default)
  kProcess,  // a forked worker process per worker: a crash in Dataset::Get
             // (a decoder's segfault or abort) ends that process, which is
             // restarted and the sample loaded again (src/process/README.md)
  kAuto,     // threads for a C++ Dataset (it needs no global lock); the Python
             // binding picks processes for Python datasets (docs/python.md)
};
FEEDLINE_EXPORT const char* WorkerModeName(WorkerMode mode);  // "thread", "process", "auto"
// Parses "thread" / "process" / "auto"; throws Error otherwise.
FEEDLINE_EXPORT WorkerMode ParseWorkerMode(const std::string& name);

struct FEEDLINE_EXPORT LoaderOptions {
  // Batching. Either batch_size (+ shuffle / sampler, drop_last) or a
  // batch_sampler, as in paddle.io.DataLoader.
  int64_t batch_size = 1;
  bool shuffle = false;
  std::shared_ptr<const Sampler> sampler;
  std::shared_ptr<const BatchSampler> batch_sampler;
  bool drop_last = false;

  // Parallelism. num_workers = 0 loads in the caller's thread. At most
  // max(2, num_workers * prefetch_factor) batches exist at once.
  int num_workers = 0;
  int prefetch_factor = 2;
  bool persistent_workers = false;
  // Threads or processes (see WorkerMode). With kProcess, worker_init runs
  // in each worker process (an IterableDataset's pass too: each process
  // opens its own).
  WorkerMode worker_mode = WorkerMode::kThread;
  // false lets a complete batch overtake earlier, incomplete ones.
  bool in_order = true;
  // Each batch loads whole in one worker, batch b in worker b % num_workers,
  // and each worker keeps at most prefetch_factor undelivered batches: the
  // assignment torch's DataLoader makes, which a Python dataset can observe
  // (get_worker_info() per batch). false (the default) lets any idle worker
  // load any row, so one slow sample does not hold a batch behind it.
  // Ignored with num_workers = 0 or kAuto.
  bool batch_per_worker = false;

  CollateOptions collate;
  CollateFn collate_fn;  // replaces the default collation when set

  // A sample taking longer than this raises TimeoutError (0 = no limit).
  std::chrono::milliseconds timeout{0};
  // Called once in each worker thread when it starts.
  std::function<void(int worker_id)> worker_init;

  // Seeds the shuffle and every sample's Rng.
  uint64_t seed = 0;
  ErrorPolicy error_policy = ErrorPolicy::kRaise;
  // With kReplace: substitutes tried per failed sample before giving up.
  int max_replace_attempts = 16;

  // With num_workers or prefetch_factor kAuto: the bytes all batch slots
  // may take (0: a quarter of the available memory, the cgroup's limit
  // respected, shared among the ranks of the host).
  int64_t memory_budget_bytes = 0;
};

}  // namespace feedline

#endif  // FEEDLINE_LOADER_OPTIONS_H_

// ShardPrefetcher: downloads whole shards into the node's cache (ShardCache)
// ahead of the reads, in the order the epoch's plan first needs them, so
// that a read finds its shard in place instead of waiting for the network.
//
// The plan (Plan) is the epoch's shards in order of first use, each with the
// position (in samples of the epoch's order) of its last use; Progress says
// how many samples of that order the loader has delivered. A shard is
// *ahead* from the moment its download starts until the delivered samples
// pass its last use; the prefetcher starts the next shard of the plan only
// while
//   - the bytes ahead, with it, stay within `max_bytes` (or nothing is
//     ahead: a shard larger than the bound is still fetched, alone), and
//   - fewer than `max_requests` of its downloads run.
// A shard that the delivered samples have passed is released (ShardCache::
// Release): it goes first when the cache makes room, before the least
// recently used ones; it stays in the cache while there is room (the next
// epoch reads it again). One the reads passed before the prefetcher reached
// it is skipped.
//
// A failed download is left to the read that needs the shard (it downloads
// it again and reports the error through the loader's error policy): the
// prefetcher only counts it.
//
// Downloads run on `max_requests` threads started by the first plan and
// stopped by the destructor (in the process that started them; a forked
// child, which has none of them, leaves them alone). Plan and Progress only
// take a lock and wake them: they are called under the loader's lock.
//
// Thread safety: every method may be called from many threads at once.
#ifndef FEEDLINE_SRC_STORAGE_SHARD_PREFETCHER_H_
#define FEEDLINE_SRC_STORAGE_SHARD_PREFETCHER_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "src/core/mutex.h"
#include "src/storage/pack_store.h"
#include "src/storage/shard_cache.h"

namespace feedline::storage {

class ShardPrefetcher {
 public:
  // `shard_bytes`: each shard's tar size. `cache` outlives the prefetcher.
  // REQUIRES: max_bytes > 0, max_requests >= 1.
  ShardPrefetcher(const ShardCache* cache, std::vector<uint64_t> shard_bytes, uint64_t max_bytes,
                  int max_requests);
  ~ShardPrefetcher();
  ShardPrefetcher(const ShardPrefetcher&) = delete;
  ShardPrefetcher& operator=(const ShardPrefetcher&) = delete;

  // Replaces the plan (empty: nothing more to fetch); progress restarts at 0.
  // Downloads under way finish.
  void Plan(std::vector<PlannedShard> plan);
  // The first `delivered` samples of the plan's order are delivered.
  void Progress(int64_t delivered);

  // What it did, for tests and statistics: the downloads it started, those
  // that failed, and the most bytes ahead at once.
  int64_t started() const;
  int64_t failed() const;
  uint64_t peak_bytes_ahead() const;

 private:
  enum class State { kWaiting, kFetching, kFetched, kPassed };
  struct Entry {
    PlannedShard planned;
    State state = State::kWaiting;
  };

  void Run();
  // Marks the entries the progress has passed; returns the shards to release.
  std::vector<size_t> PassLocked() REQUIRES(mu_);
  // Whether PassLocked would pass an entry now.
  bool AnyPassedLocked() const REQUIRES(mu_);
  // The entry to fetch next, or -1 if none may start now.
  int64_t PickLocked() REQUIRES(mu_);

  const ShardCache* const cache_;
  const std::vector<uint64_t> shard_bytes_;
  const uint64_t max_bytes_;
  const int max_requests_;
  const pid_t owner_;
  mutable internal::Mutex mu_;
  internal::CondVar wake_;
  std::vector<Entry> plan_ GUARDED_BY(mu_);
  uint64_t generation_ GUARDED_BY(mu_) = 0;
  size_t first_live_ GUARDED_BY(mu_) = 0;  // entries before it are passed
  size_t next_ GUARDED_BY(mu_) = 0;        // entries from it are waiting
  int64_t delivered_ GUARDED_BY(mu_) = 0;
  uint64_t ahead_ GUARDED_BY(mu_) = 0;     // bytes of fetching and fetched entries
  uint64_t peak_ GUARDED_BY(mu_) = 0;
  int fetching_ GUARDED_BY(mu_) = 0;       // downloads running, any plan's
  int64_t started_ GUARDED_BY(mu_) = 0;
  int64_t failed_ GUARDED_BY(mu_) = 0;
  bool stop_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
};

}  // namespace feedline::storage

#endif  // FEEDLINE_SRC_STORAGE_SHARD_PREFETCHER_H_

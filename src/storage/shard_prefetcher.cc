#include "src/storage/shard_prefetcher.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

namespace feedline::storage {

ShardPrefetcher::ShardPrefetcher(const ShardCache* cache, std::vector<uint64_t> shard_bytes,
                                 uint64_t max_bytes, int max_requests)
    : cache_(cache),
      shard_bytes_(std::move(shard_bytes)),
      max_bytes_(max_bytes),
      max_requests_(max_requests),
      owner_(::getpid()) {}

ShardPrefetcher::~ShardPrefetcher() NO_THREAD_SAFETY_ANALYSIS {
  if (::getpid() != owner_) {
    // A forked child: the threads (and whoever held the lock) are the
    // parent's. Their handles are leaked, not destroyed (a joinable
    // std::thread's destructor terminates).
    for (std::thread& thread : threads_) new std::thread(std::move(thread));
    return;
  }
  std::vector<std::thread> threads;
  {
    internal::MutexLock lock(&mu_);
    stop_ = true;
    threads = std::move(threads_);
  }
  wake_.NotifyAll();
  // Downloads under way finish first (their retries are bounded).
  for (std::thread& thread : threads) thread.join();
}

void ShardPrefetcher::Plan(std::vector<PlannedShard> plan) {
  {
    internal::MutexLock lock(&mu_);
    for (size_t i = first_live_; i < next_ && i < plan_.size(); ++i) {
      if (plan_[i].state == State::kFetched) ahead_ -= shard_bytes_[plan_[i].planned.shard];
    }
    // Downloads of the old plan still running stay ahead until they end.
    plan_.clear();
    for (const PlannedShard& planned : plan) plan_.push_back(Entry{planned});
    ++generation_;
    first_live_ = next_ = 0;
    delivered_ = 0;
    if (threads_.empty() && !plan_.empty() && ::getpid() == owner_) {
      for (int i = 0; i < max_requests_; ++i) threads_.emplace_back([this] { Run(); });
    }
  }
  wake_.NotifyAll();
}

void ShardPrefetcher::Progress(int64_t delivered) {
  {
    internal::MutexLock lock(&mu_);
    if (delivered <= delivered_) return;
    delivered_ = delivered;
    // Called for every batch: a thread is woken only when the progress
    // passes a shard (which frees room ahead), not to find nothing to do.
    if (!AnyPassedLocked()) return;
  }
  wake_.NotifyOne();
}

bool ShardPrefetcher::AnyPassedLocked() const {
  for (size_t i = first_live_; i < next_; ++i) {
    if (plan_[i].state == State::kFetched && plan_[i].planned.last_use < delivered_) return true;
  }
  return next_ < plan_.size() && plan_[next_].planned.last_use < delivered_;
}

int64_t ShardPrefetcher::started() const {
  internal::MutexLock lock(&mu_);
  return started_;
}

int64_t ShardPrefetcher::failed() const {
  internal::MutexLock lock(&mu_);
  return failed_;
}

uint64_t ShardPrefetcher::peak_bytes_ahead() const {
  internal::MutexLock lock(&mu_);
  return peak_;
}

std::vector<size_t> ShardPrefetcher::PassLocked() {
  std::vector<size_t> release;
  for (size_t i = first_live_; i < next_; ++i) {
    Entry& entry = plan_[i];
    if (entry.state != State::kFetched || entry.planned.last_use >= delivered_) continue;
    entry.state = State::kPassed;
    ahead_ -= shard_bytes_[entry.planned.shard];
    release.push_back(entry.planned.shard);
  }
  // Passed before it was reached: the reads fetched it themselves.
  while (next_ < plan_.size() && plan_[next_].planned.last_use < delivered_) {
    plan_[next_].state = State::kPassed;
    release.push_back(plan_[next_].planned.shard);
    ++next_;
  }
  while (first_live_ < next_ && plan_[first_live_].state == State::kPassed) ++first_live_;
  return release;
}

int64_t ShardPrefetcher::PickLocked() {
  if (fetching_ >= max_requests_ || next_ >= plan_.size()) return -1;
  const uint64_t bytes = shard_bytes_[plan_[next_].planned.shard];
  if (ahead_ > 0 && ahead_ + bytes > max_bytes_) return -1;
  return static_cast<int64_t>(next_++);
}

void ShardPrefetcher::Run() {
  internal::MutexLock lock(&mu_);
  while (!stop_) {
    // Released before anything more is fetched (under the lock: another
    // thread's download must find them released when it makes room).
    for (size_t shard : PassLocked()) cache_->Release(shard);
    const int64_t pick = PickLocked();
    if (pick < 0) {
      wake_.Wait(&mu_);
      continue;
    }
    Entry& entry = plan_[static_cast<size_t>(pick)];
    const size_t shard = entry.planned.shard;
    const uint64_t bytes = shard_bytes_[shard];
    const uint64_t generation = generation_;
    entry.state = State::kFetching;
    ahead_ += bytes;
    peak_ = std::max(peak_, ahead_);
    ++fetching_;
    ++started_;
    wake_.NotifyOne();  // another thread may start the next one
    bool ok = true;
    {
      internal::MutexUnlock unlock(&mu_);
      try {
        cache_->Ensure(shard);
        // Used now: a shard a past epoch released must not be the first to
        // go while this one still needs it.
        cache_->Touch(shard);
      } catch (...) {
        ok = false;  // the read that needs it downloads it and reports the error
      }
    }
    --fetching_;
    if (!ok) ++failed_;
    if (generation != generation_) {
      ahead_ -= bytes;
    } else if (!ok) {
      plan_[static_cast<size_t>(pick)].state = State::kPassed;
      ahead_ -= bytes;
    } else {
      plan_[static_cast<size_t>(pick)].state = State::kFetched;
    }
    wake_.NotifyAll();
  }
}

}  // namespace feedline::storage

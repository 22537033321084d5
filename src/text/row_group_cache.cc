#include "src/text/row_group_cache.h"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "feedline/error.h"

namespace feedline::text::internal {

using feedline::internal::MutexLock;

RowGroupCache::RowGroupCache(std::shared_ptr<const RowGroupSource> source,
                             std::vector<int64_t> rows, std::vector<ColumnSpec> columns,
                             int64_t max_row_groups, int64_t readahead)
    : source_(std::move(source)),
      rows_(std::move(rows)),
      columns_(std::move(columns)),
      max_row_groups_(max_row_groups),
      readahead_(readahead) {
  if (source_ == nullptr) throw Error("ColumnarDataset: the row group source must not be null");
  if (max_row_groups_ < 1) {
    throw Error("ColumnarDataset: max_row_groups must be >= 1, got " +
                std::to_string(max_row_groups_));
  }
  if (readahead_ < 0) {
    throw Error("ColumnarDataset: readahead must be >= 0, got " + std::to_string(readahead_));
  }
}

std::shared_ptr<const DecodedRowGroup> RowGroupCache::Acquire(int64_t group) {
  {
    MutexLock lock(&mu_);
    if (!plan_place_.empty()) {
      plan_front_ = std::max(plan_front_, plan_place_[static_cast<size_t>(group)]);
    }
    while (true) {
      auto it = entries_.find(group);
      if (it == entries_.end()) {
        entries_.emplace(group, Entry{});  // claimed: this thread reads it
        break;
      }
      if (it->second.decoded != nullptr) {
        it->second.last_use = ++clock_;
        return it->second.decoded;
      }
      read_done_.Wait(&mu_);
    }
  }
  return ReadClaimed(group, /*ahead=*/false);
}

void RowGroupCache::ReadAhead(int64_t group) {
  int64_t next = -1;
  Released released;  // freed after the lock is let go
  {
    MutexLock lock(&mu_);
    next = plan_.empty() ? ClaimSequentialLocked(group) : ClaimPlannedLocked(released);
  }
  released.clear();
  if (next < 0) return;
  try {
    ReadClaimed(next, /*ahead=*/true);
  } catch (const std::exception&) {
    // Dropped: ReadClaimed let go of the claim, and the Acquire that needs
    // the group reads it again and reports the error as that row's.
  }
}

int64_t RowGroupCache::ClaimSequentialLocked(int64_t group) {
  const auto groups = static_cast<int64_t>(rows_.size());
  // Empty groups are never read: the visit goes from the last group with
  // rows before `group` to the next ones with rows after it.
  int64_t previous = group - 1;
  while (previous >= 0 && rows_[static_cast<size_t>(previous)] == 0) --previous;
  if (previous >= 0) {
    auto it = entries_.find(previous);
    if (it == entries_.end() || it->second.decoded == nullptr) return -1;
  }
  int64_t ahead = 0;
  for (int64_t g = group + 1; g < groups && ahead < readahead_; ++g) {
    if (rows_[static_cast<size_t>(g)] == 0) continue;
    ++ahead;
    if (entries_.find(g) == entries_.end()) {
      entries_.emplace(g, Entry{});
      return g;
    }
  }
  return -1;
}

int64_t RowGroupCache::ClaimPlannedLocked(Released& released) {
  // Let go of the groups whose last use is delivered: the plan needs them
  // no more this epoch.
  for (auto it = entries_.begin(); it != entries_.end();) {
    const int64_t place = plan_place_[static_cast<size_t>(it->first)];
    const bool passed =
        place >= 0 && plan_[static_cast<size_t>(place)].last_use < plan_delivered_;
    if (passed && it->second.decoded != nullptr) {
      released.push_back(std::move(it->second.decoded));
      it = entries_.erase(it);
      --held_;
    } else {
      ++it;
    }
  }
  const auto planned = static_cast<int64_t>(plan_.size());
  const int64_t end = std::min(planned, plan_front_ + 1 + readahead_);
  for (int64_t place = std::max<int64_t>(plan_front_ + 1, 0); place < end; ++place) {
    const int64_t group = plan_[static_cast<size_t>(place)].group;
    if (entries_.find(group) != entries_.end()) continue;  // held or being read
    // Into a free place (groups being read count, as they will be held), or
    // that of the held group the plan first needs latest after this one
    // (one the epoch does not need at all first): never that of a group in
    // use or needed sooner.
    if (static_cast<int64_t>(entries_.size()) >= max_row_groups_) {
      auto latest = entries_.end();
      int64_t latest_place = place;
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->second.decoded == nullptr) continue;
        int64_t held_place = plan_place_[static_cast<size_t>(it->first)];
        if (held_place < 0) held_place = planned;
        if (held_place > latest_place) {
          latest = it;
          latest_place = held_place;
        }
      }
      if (latest == entries_.end()) return -1;
      released.push_back(std::move(latest->second.decoded));
      entries_.erase(latest);
      --held_;
    }
    entries_.emplace(group, Entry{});
    return group;
  }
  return -1;
}

void RowGroupCache::SetPlan(std::vector<PlannedGroup> plan) {
  std::vector<int64_t> place(plan.empty() ? 0 : rows_.size(), -1);
  for (size_t i = 0; i < plan.size(); ++i) {
    place[static_cast<size_t>(plan[i].group)] = static_cast<int64_t>(i);
  }
  MutexLock lock(&mu_);
  plan_.swap(plan);
  plan_place_.swap(place);
  plan_front_ = -1;
  plan_delivered_ = 0;
}

void RowGroupCache::PlanProgress(int64_t delivered) {
  MutexLock lock(&mu_);
  plan_delivered_ = std::max(plan_delivered_, delivered);
}

void RowGroupCache::NoteReadLocked(int64_t group) {
  if (read_log_.size() < kReadLogSize) read_log_.push_back(group);
}

std::shared_ptr<const DecodedRowGroup> RowGroupCache::ReadClaimed(int64_t group, bool ahead) {
  {
    MutexLock lock(&mu_);
    NoteReadLocked(group);
  }
  std::shared_ptr<const DecodedRowGroup> decoded;
  try {
    DecodedRowGroup read = source_->Read(group);
    CheckDecoded(read, rows_[static_cast<size_t>(group)], columns_, source_->Describe(group));
    decoded = std::make_shared<const DecodedRowGroup>(std::move(read));
  } catch (...) {
    MutexLock lock(&mu_);
    ++reads_;
    if (ahead) ++reads_ahead_;
    entries_.erase(group);
    read_done_.NotifyAll();
    throw;
  }
  Released released;  // freed after the lock is let go
  {
    MutexLock lock(&mu_);
    ++reads_;
    if (ahead) ++reads_ahead_;
    ++held_;
    Entry& entry = entries_[group];
    entry.decoded = decoded;
    entry.last_use = ++clock_;
    EvictBeyondLimit(group, released);
    read_done_.NotifyAll();
  }
  return decoded;
}

void RowGroupCache::EvictBeyondLimit(int64_t keep, Released& released) {
  while (held_ > max_row_groups_) {
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == keep || it->second.decoded == nullptr) continue;
      if (oldest == entries_.end() || it->second.last_use < oldest->second.last_use) oldest = it;
    }
    if (oldest == entries_.end()) return;
    released.push_back(std::move(oldest->second.decoded));
    entries_.erase(oldest);
    --held_;
  }
}

int64_t RowGroupCache::reads() const {
  MutexLock lock(&mu_);
  return reads_;
}

int64_t RowGroupCache::reads_ahead() const {
  MutexLock lock(&mu_);
  return reads_ahead_;
}

int64_t RowGroupCache::held() const {
  MutexLock lock(&mu_);
  return held_;
}

std::vector<int64_t> RowGroupCache::read_log() const {
  MutexLock lock(&mu_);
  return read_log_;
}

}  // namespace feedline::text::internal

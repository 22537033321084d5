#include "src/text/row_group_cache.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <string>
#include <system_error>
#include <thread>
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
  group_starts_.reserve(rows_.size());
  int64_t start = 0;
  for (const int64_t rows : rows_) {
    group_starts_.push_back(start);
    start += rows;
  }
  if (source_ == nullptr) throw Error("ColumnarDataset: the row group source must not be null");
  if (max_row_groups_ < 1) {
    throw Error("ColumnarDataset: max_row_groups must be >= 1, got " +
                std::to_string(max_row_groups_));
  }
  if (readahead_ < 0) {
    throw Error("ColumnarDataset: readahead must be >= 0, got " + std::to_string(readahead_));
  }
}

RowGroupCache::~RowGroupCache() { StopReadsAhead(); }

void RowGroupCache::StopReadsAhead() {
  std::list<Reader> readers;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    for (const int64_t group : queued_) entries_.erase(group);
    queued_.clear();
    read_done_.NotifyAll();  // a Get waiting for a dropped claim reads it itself
    if (readers_pid_ == ::getpid()) {
      readers.swap(readers_);
    } else {
      // Another process's readers: their threads are not in this one.
      for (Reader& reader : readers_) (void)reader.thread.release();
      readers_.clear();
    }
  }
  source_->WaitForReads([&readers] {
    for (Reader& reader : readers) reader.thread->join();
  });
}

std::shared_ptr<const DecodedRowGroup> RowGroupCache::Acquire(int64_t group) {
  return Hold(group, -1).decoded;
}

HeldRow RowGroupCache::AcquireRow(int64_t group, int64_t row) { return Hold(group, row); }

HeldRow RowGroupCache::Hold(int64_t group, int64_t row) {
  {
    MutexLock lock(&mu_);
    if (!plan_place_.empty()) {
      plan_front_ = std::max(plan_front_, plan_place_[static_cast<size_t>(group)]);
    }
    bool hooked = false;
    while (true) {
      auto it = entries_.find(group);
      if (it != entries_.end() && it->second.decoded != nullptr) {
        it->second.last_use = ++clock_;
        CountServedLocked(group, row);
        return {it->second.decoded, row};
      }
      if (row >= 0) {
        // Kept when the group was let go: served without reading it again
        // (nor waiting for a read of it under way).
        const auto kept = remnants_.find(group);
        if (kept != remnants_.end()) {
          const int64_t at = kept->second.Find(row);
          if (at >= 0) {
            CountServedLocked(group, row);
            return {kept->second.decoded, at};
          }
        }
      }
      if (it == entries_.end()) {
        entries_.emplace(group, Entry{});  // claimed: this thread reads it
        NoteReadLocked(group);
        break;
      }
      // Claimed for a reader that has not started it: read here when no
      // reader runs in this process (none could be started, or this one
      // forked), else waited for as the reader's (it comes next).
      if ((readers_pid_ != ::getpid() || readers_running_ == 0) && TakeQueuedLocked(group)) {
        NoteReadLocked(group);
        break;
      }
      if (wait_hook_ != nullptr && !hooked) {
        // For tests (set_wait_hook): the window Wait leaves open, with the
        // lock let go as Wait lets it go.
        hooked = true;
        const std::function<void(int64_t)> hook = wait_hook_;
        feedline::internal::MutexUnlock unlocked(&mu_);
        hook(group);
        continue;  // the read may be done: look again before waiting
      }
      // The row is not counted as served while waiting: the read may be
      // done and the group let go again before this thread looks, and then
      // the row must be in its remnant.
      read_done_.Wait(&mu_);
    }
  }
  return {ReadClaimed(group, row, /*ahead=*/false), row};
}

void RowGroupCache::CountServedLocked(int64_t group, int64_t row) {
  if (row < 0 || row_uses_left_.empty()) return;
  const int64_t at = group_starts_[static_cast<size_t>(group)] + row;
  int32_t& uses = row_uses_left_[static_cast<size_t>(at)];
  if (uses > 0) --uses;  // served: kept for the uses left only
}

void RowGroupCache::set_wait_hook(std::function<void(int64_t group)> hook) {
  MutexLock lock(&mu_);
  wait_hook_ = std::move(hook);
}

void RowGroupCache::ReadAhead(int64_t group) {
  Released released;  // freed after the lock is let go
  {
    MutexLock lock(&mu_);
    const int64_t next =
        plan_.empty() ? ClaimSequentialLocked(group) : ClaimPlannedLocked(released);
    if (next >= 0) {
      queued_.push_back(next);
      StartReaderLocked();
    }
  }
  released.clear();
}

void RowGroupCache::StartReaderLocked() {
  if (readers_pid_ != ::getpid()) {
    // First use, or forked: the readers listed are another process's.
    for (Reader& reader : readers_) (void)reader.thread.release();
    readers_.clear();
    readers_running_ = 0;
    readers_pid_ = ::getpid();
  }
  for (auto it = readers_.begin(); it != readers_.end();) {
    if (it->ended) {
      it->thread->join();  // it let go of the lock for good: no wait on it
      it = readers_.erase(it);
    } else {
      ++it;
    }
  }
  if (stopping_ || readers_running_ >= readahead_ ||
      readers_running_ >= static_cast<int64_t>(queued_.size())) {
    return;
  }
  Reader& reader = readers_.emplace_back();
  try {
    reader.thread = std::make_unique<std::thread>([this] { ReaderLoop(); });
  } catch (const std::system_error&) {
    // No thread to be had: the groups stay queued, and the Gets that need
    // them read them (TakeQueuedLocked).
    readers_.pop_back();
    return;
  }
  ++readers_running_;
}

void RowGroupCache::ReaderLoop() {
  while (true) {
    int64_t group = -1;
    {
      MutexLock lock(&mu_);
      if (stopping_ || queued_.empty()) {
        --readers_running_;
        for (Reader& reader : readers_) {
          if (reader.thread != nullptr && reader.thread->get_id() == std::this_thread::get_id()) {
            reader.ended = true;
          }
        }
        reads_ahead_done_.NotifyAll();
        return;
      }
      group = queued_.front();
      queued_.pop_front();
      NoteReadLocked(group);  // here, so that the log keeps the queue's order
      ++reads_ahead_running_;
    }
    try {
      ReadClaimed(group, /*row=*/-1, /*ahead=*/true);
    } catch (const std::exception&) {
      // Dropped: ReadClaimed let go of the claim, and the Get that needs the
      // group reads it again and reports the error as that row's.
    }
    MutexLock lock(&mu_);
    --reads_ahead_running_;
    reads_ahead_done_.NotifyAll();
  }
}

bool RowGroupCache::TakeQueuedLocked(int64_t group) {
  const auto it = std::find(queued_.begin(), queued_.end(), group);
  if (it == queued_.end()) return false;
  queued_.erase(it);
  return true;
}

bool RowGroupCache::ReadsAheadPendingLocked() const {
  return !queued_.empty() || reads_ahead_running_ > 0;
}

void RowGroupCache::WaitForReadsAhead() {
  MutexLock lock(&mu_);
  while (ReadsAheadPendingLocked()) reads_ahead_done_.Wait(&mu_);
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

void RowGroupCache::ReleasePassedLocked(Released& released) {
  // The groups whose last use is delivered: the plan needs them no more
  // this epoch.
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
  for (auto it = remnants_.begin(); it != remnants_.end();) {
    if (it->second.last_use < plan_delivered_ || !AnyUsesLeftLocked(it->first, it->second.rows)) {
      remnant_bytes_ -= it->second.bytes();
      remnant_rows_ -= static_cast<int64_t>(it->second.rows.size());
      released.push_back(std::move(it->second.decoded));
      it = remnants_.erase(it);
    } else {
      ++it;
    }
  }
}

int64_t RowGroupCache::ClaimPlannedLocked(Released& released) {
  ReleasePassedLocked(released);
  const auto planned = static_cast<int64_t>(plan_.size());
  const int64_t end = std::min(planned, plan_front_ + 1 + readahead_);
  for (int64_t place = std::max<int64_t>(plan_front_ + 1, 0); place < end; ++place) {
    const int64_t group = plan_[static_cast<size_t>(place)].group;
    if (entries_.find(group) != entries_.end()) continue;  // held or being read
    // Into a free place (groups being read count, as they will be held), or
    // that of the held group the plan first needs latest after this one
    // (one the epoch does not need at all first): never that of a group in
    // use or needed sooner. Failing that, that of the oldest group the plan
    // has started (before the furthest asked for), when the rows it still
    // feeds fit in a remnant: it is then not read again.
    if (static_cast<int64_t>(entries_.size()) >= max_row_groups_) {
      auto latest = entries_.end();
      auto oldest = entries_.end();
      int64_t latest_place = place;
      int64_t oldest_place = plan_front_;
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->second.decoded == nullptr) continue;
        int64_t held_place = plan_place_[static_cast<size_t>(it->first)];
        if (held_place < 0) held_place = planned;
        if (held_place > latest_place) {
          latest = it;
          latest_place = held_place;
        }
        if (held_place < oldest_place) {
          oldest = it;
          oldest_place = held_place;
        }
      }
      if (latest != entries_.end()) {
        released.push_back(std::move(latest->second.decoded));
        entries_.erase(latest);
        --held_;
      } else if (oldest != entries_.end() && !row_last_use_.empty() &&
                 FitsLocked(PendingLocked(oldest->first, *oldest->second.decoded).bytes)) {
        LetGoLocked(oldest, released);
      } else {
        return -1;
      }
    }
    entries_.emplace(group, Entry{});
    return group;
  }
  return -1;
}

RowGroupCache::Pending RowGroupCache::PendingLocked(int64_t group,
                                                    const DecodedRowGroup& decoded) const {
  Pending pending;
  if (row_last_use_.empty()) return pending;
  const int64_t start = group_starts_[static_cast<size_t>(group)];
  for (int64_t r = 0; r < decoded.rows; ++r) {
    const int64_t last = row_last_use_[static_cast<size_t>(start + r)];
    // Delivered, or served as often as the plan uses it, or not in the plan.
    if (last < plan_delivered_ || row_uses_left_[static_cast<size_t>(start + r)] == 0) {
      continue;
    }
    pending.rows.push_back(r);
    pending.last_use = std::max(pending.last_use, last);
    pending.bytes += sizeof(int64_t);  // the remnant's row number
    for (size_t c = 0; c < columns_.size(); ++c) {
      const ColumnSpec& spec = columns_[c];
      const DecodedColumn& column = decoded.columns[c];
      if (spec.kind == ColumnKind::kScalar) {
        pending.bytes += DTypeSize(spec.dtype);
        continue;
      }
      const size_t width = spec.kind == ColumnKind::kBytes ? 1 : DTypeSize(spec.dtype);
      const int64_t count = column.offsets[static_cast<size_t>(r) + 1] -
                            column.offsets[static_cast<size_t>(r)];
      pending.bytes += static_cast<size_t>(count) * width + sizeof(int64_t);
    }
  }
  return pending;
}

bool RowGroupCache::AnyUsesLeftLocked(int64_t group, const std::vector<int64_t>& rows) const {
  const int64_t start = group_starts_[static_cast<size_t>(group)];
  // A loop, not any_of: the analysis does not carry the lock into a lambda.
  for (const int64_t r : rows) {
    if (row_uses_left_[static_cast<size_t>(start + r)] > 0) return true;
  }
  return false;
}

bool RowGroupCache::FitsLocked(size_t bytes) const {
  if (groups_read_ == 0) return false;
  const size_t budget =
      static_cast<size_t>(max_row_groups_) * (bytes_read_ / static_cast<size_t>(groups_read_));
  return remnant_bytes_ + bytes <= budget;
}

void RowGroupCache::LetGoLocked(Entries::iterator it, Released& released) {
  const int64_t group = it->first;
  std::shared_ptr<const DecodedRowGroup> decoded = std::move(it->second.decoded);
  entries_.erase(it);
  --held_;
  // Only a group the plan has started (a Get asked for it) has rows waiting
  // in open rows. One it has not started (held from the last epoch, or read
  // ahead) is read when the plan reaches it, as when ClaimPlannedLocked lets
  // it go: a copy of it, nearly a whole group, would hold the remnants'
  // budget until then and leave the rows that do wait without room.
  const int64_t place = plan_place_.empty() ? -1 : plan_place_[static_cast<size_t>(group)];
  const bool started = place >= 0 && place <= plan_front_;
  Pending pending = started ? PendingLocked(group, *decoded) : Pending{};
  // Copied under the lock, so that no Get finds the rows in neither place;
  // a remnant is small (the rows still waiting to be packed) or not kept.
  if (!pending.rows.empty() && FitsLocked(pending.bytes) &&
      remnants_.find(group) == remnants_.end()) {
    RowGroupRemnant remnant;
    remnant.decoded =
        std::make_shared<const DecodedRowGroup>(CopyRows(*decoded, columns_, pending.rows));
    remnant.rows = std::move(pending.rows);
    remnant.last_use = pending.last_use;
    remnant_bytes_ += remnant.bytes();
    remnant_rows_ += static_cast<int64_t>(remnant.rows.size());
    remnants_.emplace(group, std::move(remnant));
  }
  released.push_back(std::move(decoded));
}

void RowGroupCache::SetPlan(std::vector<PlannedGroup> plan, std::vector<int64_t> row_last_use,
                            std::vector<int32_t> row_uses) {
  std::vector<int64_t> place(plan.empty() ? 0 : rows_.size(), -1);
  for (size_t i = 0; i < plan.size(); ++i) {
    place[static_cast<size_t>(plan[i].group)] = static_cast<int64_t>(i);
  }
  if (plan.empty() || row_uses.size() != row_last_use.size()) {
    row_last_use.clear();
    row_uses.clear();
  }
  std::map<int64_t, RowGroupRemnant> remnants;  // the last plan's: freed after the lock
  MutexLock lock(&mu_);
  plan_.swap(plan);
  plan_place_.swap(place);
  row_last_use_.swap(row_last_use);
  row_uses_left_.swap(row_uses);
  plan_front_ = -1;
  plan_delivered_ = 0;
  remnants.swap(remnants_);
  remnant_bytes_ = 0;
  remnant_rows_ = 0;
}

void RowGroupCache::PlanProgress(int64_t delivered) {
  MutexLock lock(&mu_);
  plan_delivered_ = std::max(plan_delivered_, delivered);
}

void RowGroupCache::NoteReadLocked(int64_t group) {
  if (read_log_.size() < kReadLogSize) read_log_.push_back(group);
}

std::shared_ptr<const DecodedRowGroup> RowGroupCache::ReadClaimed(int64_t group, int64_t row,
                                                                   bool ahead) {
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
    bytes_read_ += decoded->bytes();
    ++groups_read_;
    // Read whole again: a remnant of it is no longer needed.
    if (auto kept = remnants_.find(group); kept != remnants_.end()) {
      remnant_bytes_ -= kept->second.bytes();
      remnant_rows_ -= static_cast<int64_t>(kept->second.rows.size());
      released.push_back(std::move(kept->second.decoded));
      remnants_.erase(kept);
    }
    Entry& entry = entries_[group];
    entry.decoded = decoded;
    entry.last_use = ++clock_;
    // Served with the group stored, in one step: a failed read serves
    // nothing, and the row stays to be delivered for the Get that retries.
    CountServedLocked(group, row);
    EvictBeyondLimit(group, released);
    read_done_.NotifyAll();
  }
  return decoded;
}

void RowGroupCache::EvictBeyondLimit(int64_t keep, Released& released) {
  while (held_ > max_row_groups_) {
    auto victim = plan_place_.empty() ? entries_.end() : PlannedVictimLocked(keep);
    if (victim == entries_.end()) {
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->first == keep || it->second.decoded == nullptr) continue;
        if (victim == entries_.end() || it->second.last_use < victim->second.last_use) {
          victim = it;
        }
      }
    }
    if (victim == entries_.end()) return;
    LetGoLocked(victim, released);
  }
}

RowGroupCache::Entries::iterator RowGroupCache::PlannedVictimLocked(int64_t keep) {
  // The oldest group the plan has started, if the rows it still feeds fit
  // in a remnant (then it is not read again); else the group the plan needs
  // latest. Not the least recently used: a group touched for the one
  // document still waiting in an open row is used recently, and a group
  // read ahead not yet at all.
  const auto planned = static_cast<int64_t>(plan_.size());
  auto oldest = entries_.end();
  auto latest = entries_.end();
  int64_t oldest_place = planned;
  int64_t latest_place = -1;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first == keep || it->second.decoded == nullptr) continue;
    int64_t place = plan_place_[static_cast<size_t>(it->first)];
    if (place < 0) place = planned;
    if (place <= plan_front_ && place < oldest_place) {
      oldest = it;
      oldest_place = place;
    }
    if (place > latest_place) {
      latest = it;
      latest_place = place;
    }
  }
  if (oldest != entries_.end() && !row_last_use_.empty() &&
      FitsLocked(PendingLocked(oldest->first, *oldest->second.decoded).bytes)) {
    return oldest;
  }
  return latest;
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

int64_t RowGroupCache::rows_kept() const {
  MutexLock lock(&mu_);
  return remnant_rows_;
}

int64_t RowGroupCache::kept_bytes() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(remnant_bytes_);
}

std::vector<int64_t> RowGroupCache::read_log() const {
  MutexLock lock(&mu_);
  return read_log_;
}

}  // namespace feedline::text::internal

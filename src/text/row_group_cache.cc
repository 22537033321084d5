#include "src/text/row_group_cache.h"

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
  return ReadClaimed(group);
}

void RowGroupCache::ReadAhead(int64_t group) {
  const auto groups = static_cast<int64_t>(rows_.size());
  int64_t next = -1;
  {
    MutexLock lock(&mu_);
    // Empty groups are never read: the visit goes from the last group with
    // rows before `group` to the next ones with rows after it.
    int64_t previous = group - 1;
    while (previous >= 0 && rows_[static_cast<size_t>(previous)] == 0) --previous;
    if (previous >= 0) {
      auto it = entries_.find(previous);
      if (it == entries_.end() || it->second.decoded == nullptr) return;
    }
    int64_t ahead = 0;
    for (int64_t g = group + 1; g < groups && ahead < readahead_; ++g) {
      if (rows_[static_cast<size_t>(g)] == 0) continue;
      ++ahead;
      if (entries_.find(g) == entries_.end()) {
        next = g;
        entries_.emplace(g, Entry{});
        break;
      }
    }
  }
  if (next < 0) return;
  try {
    ReadClaimed(next);
  } catch (const std::exception&) {
    // Dropped: ReadClaimed let go of the claim, and the Acquire that needs
    // the group reads it again and reports the error as that row's.
  }
}

std::shared_ptr<const DecodedRowGroup> RowGroupCache::ReadClaimed(int64_t group) {
  std::shared_ptr<const DecodedRowGroup> decoded;
  try {
    DecodedRowGroup read = source_->Read(group);
    CheckDecoded(read, rows_[static_cast<size_t>(group)], columns_, source_->Describe(group));
    decoded = std::make_shared<const DecodedRowGroup>(std::move(read));
  } catch (...) {
    MutexLock lock(&mu_);
    ++reads_;
    entries_.erase(group);
    read_done_.NotifyAll();
    throw;
  }
  MutexLock lock(&mu_);
  ++reads_;
  ++held_;
  Entry& entry = entries_[group];
  entry.decoded = decoded;
  entry.last_use = ++clock_;
  EvictBeyondLimit(group);
  read_done_.NotifyAll();
  return decoded;
}

void RowGroupCache::EvictBeyondLimit(int64_t keep) {
  while (held_ > max_row_groups_) {
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == keep || it->second.decoded == nullptr) continue;
      if (oldest == entries_.end() || it->second.last_use < oldest->second.last_use) oldest = it;
    }
    if (oldest == entries_.end()) return;
    entries_.erase(oldest);
    --held_;
  }
}

int64_t RowGroupCache::reads() const {
  MutexLock lock(&mu_);
  return reads_;
}

int64_t RowGroupCache::held() const {
  MutexLock lock(&mu_);
  return held_;
}

}  // namespace feedline::text::internal

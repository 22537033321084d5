// RowGroupCache: the decoded row groups a ColumnarDataset holds, at most
// `max_row_groups` of them, the least recently used let go first. A group
// is read by the first thread that needs it; the others wait for that read
// instead of reading it again. A thread that then finds its group's
// successors neither held nor being read reads one of them ahead
// (ReadAhead), so that a sequential visit finds the next group decoded.
//
// Memory: at most max_row_groups decoded groups held, plus one per thread
// reading; a group let go stays alive while a Get still copies from it.
//
// Thread safety: every member may be called from any thread.
#ifndef FEEDLINE_SRC_TEXT_ROW_GROUP_CACHE_H_
#define FEEDLINE_SRC_TEXT_ROW_GROUP_CACHE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "feedline/text/row_group_source.h"
#include "src/core/mutex.h"
#include "src/core/thread_annotations.h"

namespace feedline::text::internal {

class RowGroupCache {
 public:
  // `rows` is the source's RowsPerGroup(), `columns` what Read decodes (to
  // check what it returns). max_row_groups >= 1, readahead >= 0 (Error).
  RowGroupCache(std::shared_ptr<const RowGroupSource> source, std::vector<int64_t> rows,
                std::vector<ColumnSpec> columns, int64_t max_row_groups, int64_t readahead);

  // Group `group`, decoded: held, or read now, or waited for while another
  // thread reads it. Throws what the source's Read throws (each caller that
  // finds no group held reads it again, so each sees the error).
  std::shared_ptr<const DecodedRowGroup> Acquire(int64_t group);

  // When the visit at `group` looks sequential (the first group with rows,
  // or the last group with rows before it still held), reads the first of
  // the next `readahead` groups with rows that is neither held nor being
  // read, if any. A failed read is dropped: the Acquire that
  // needs the group reads it again and reports it.
  void ReadAhead(int64_t group);

  int64_t reads() const;  // Read calls so far
  int64_t held() const;   // decoded groups held now

 private:
  struct Entry {
    std::shared_ptr<const DecodedRowGroup> decoded;  // null while being read
    uint64_t last_use = 0;
  };

  // Reads `group`, which this thread claimed (its entry is in `entries_`,
  // without data), and stores it, evicting to the limit.
  std::shared_ptr<const DecodedRowGroup> ReadClaimed(int64_t group);
  void EvictBeyondLimit(int64_t keep) REQUIRES(mu_);

  const std::shared_ptr<const RowGroupSource> source_;
  const std::vector<int64_t> rows_;
  const std::vector<ColumnSpec> columns_;
  const int64_t max_row_groups_;
  const int64_t readahead_;

  mutable feedline::internal::Mutex mu_;
  feedline::internal::CondVar read_done_;
  std::map<int64_t, Entry> entries_ GUARDED_BY(mu_);
  uint64_t clock_ GUARDED_BY(mu_) = 0;
  int64_t reads_ GUARDED_BY(mu_) = 0;
  int64_t held_ GUARDED_BY(mu_) = 0;
};

}  // namespace feedline::text::internal

#endif  // FEEDLINE_SRC_TEXT_ROW_GROUP_CACHE_H_

// RowGroupCache: the decoded row groups a ColumnarDataset holds, at most
// `max_row_groups` of them, the least recently used let go first. A group
// is read by the first thread that needs it; the others wait for that read
// instead of reading it again. A thread that then finds the groups the
// visit needs next neither held nor being read reads one of them ahead
// (ReadAhead), so that the next group is decoded by the time it is asked for.
// ReadAhead only claims the group: the cache's own reader threads (up to
// `readahead`, started when there is a group to read and ended when there
// is none, in the process that reads) decode it, so that no Get holds its
// batch back for a group that later batches need. Without them a loader's
// batches waited behind the one whose Get was reading ahead, and with small
// batches (packing: 16k tokens against 330k in a group) the loader's
// window of batches filled while it read: one group read at a time, 1.2 of
// 2 cores busy. A Get that needs a group still queued waits for it as the
// readers' (it is next), or reads it itself when no reader runs here.
//
// Which groups come next: with an epoch plan (SetPlan, the groups in the
// order the epoch's samples first need them, and where each is last
// needed), the next `readahead` groups of the plan after the furthest one
// asked for. Groups the plan has passed (their last use delivered,
// PlanProgress) are let go; a read ahead takes a free place, or that of a
// held group the plan first needs later still (or not at all), never that
// of a group in use. Without a plan, the next groups in row order, when the visit looks
// sequential.
//
// Read once per epoch: with a plan that says where each row is last needed
// (SetPlan's row_last_use), a group the plan has started (a Get asked for
// it) let go while some of its rows are still to be delivered keeps those
// rows, copied out (RowGroupRemnant), until their last use is delivered; a
// Get of one of them (AcquireRow) is served from there instead of reading
// the group again. A group the plan has not started (held from the last
// epoch, or read ahead) keeps none: it is read when the plan reaches it.
// Reading ahead may then also let go of the oldest group the plan has
// started, when its remnant fits. Packing in file order so reads each group once with a few groups
// held, whatever the size of a group (the documents still waiting for a
// row are few).
//
// Memory: at most max_row_groups decoded groups held, plus one per thread
// reading, plus remnants of at most as many bytes as max_row_groups decoded
// groups (of the mean size read so far; a remnant that would exceed it is
// not kept, and its rows read their group again); a group let go stays
// alive while a Get still copies from it, and is released outside the lock
// (a source's buffers may need a lock of their own, as Python's, to be
// freed).
//
// Thread safety: every member may be called from any thread.
#ifndef FEEDLINE_SRC_TEXT_ROW_GROUP_CACHE_H_
#define FEEDLINE_SRC_TEXT_ROW_GROUP_CACHE_H_

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "feedline/text/row_group_source.h"
#include "src/core/mutex.h"
#include "src/text/row_group_remnant.h"
#include "src/core/thread_annotations.h"

namespace feedline::text::internal {

using text::PlannedGroup;

// A row served from the cache: row `row` of `decoded` (the group, or the
// remnant that kept the row).
struct HeldRow {
  std::shared_ptr<const DecodedRowGroup> decoded;
  int64_t row = 0;
};

class RowGroupCache {
 public:
  // `rows` is the source's RowsPerGroup(), `columns` what Read decodes (to
  // check what it returns). max_row_groups >= 1, readahead >= 0 (Error).
  RowGroupCache(std::shared_ptr<const RowGroupSource> source, std::vector<int64_t> rows,
                std::vector<ColumnSpec> columns, int64_t max_row_groups, int64_t readahead);
  // Waits for the reads ahead under way (through the source's
  // WaitForReads); drops the claims of those not started.
  ~RowGroupCache();
  RowGroupCache(const RowGroupCache&) = delete;
  RowGroupCache& operator=(const RowGroupCache&) = delete;

  // Group `group`, decoded: held, or read now, or waited for while another
  // thread reads it. Throws what the source's Read throws (each caller that
  // finds no group held reads it again, so each sees the error).
  std::shared_ptr<const DecodedRowGroup> Acquire(int64_t group);
  // Row `row` of group `group`: from the group (as Acquire), or from the
  // remnant that kept it when the group was let go.
  HeldRow AcquireRow(int64_t group, int64_t row);

  // After a Get of a row of `group`: claims the first group the visit needs
  // next that is neither held nor being read, if any (see the top), for a
  // reader thread to read. A failed read is dropped: the Acquire that needs
  // the group reads it again and reports it.
  void ReadAhead(int64_t group);
  // Returns once every read ahead claimed so far has ended (for tests).
  void WaitForReadsAhead();
  // Starts no reader again, drops the claims of the reads ahead not
  // started, and waits for those under way (through the source's
  // WaitForReads): before the process ends, so that no reader is inside
  // the source (Python, whose interpreter is about to finalize) then. The
  // groups the plan needs next are read by the Gets that need them.
  void StopReadsAhead();

  // The epoch's plan, in first-use order (each group once); empty: none,
  // read ahead in row order. row_last_use: where the plan's order last
  // needs each row of the source (-1: not at all), and row_uses how many
  // times it asks for it; or both empty (then no remnants are kept). A row
  // is still to be delivered while its last use is not delivered and it has
  // been served (AcquireRow returned it) fewer times than it is used: a Get
  // still waiting for its group's read, or whose read failed, has not been
  // served. Replaces the last plan, its progress and the remnants.
  void SetPlan(std::vector<PlannedGroup> plan, std::vector<int64_t> row_last_use = {},
               std::vector<int32_t> row_uses = {});
  // The first `delivered` samples of the plan's order are delivered. Only
  // records it (called under the loader's lock: it must not read or free).
  void PlanProgress(int64_t delivered);

  int64_t reads() const;        // Read calls so far
  int64_t reads_ahead() const;  // of them, by ReadAhead
  int64_t held() const;         // decoded groups held now
  int64_t rows_kept() const;    // rows held in remnants now
  int64_t kept_bytes() const;   // the bytes they hold
  // The groups read so far, in the order their reads were taken on (a
  // read ahead when a reader takes it from the queue), for tests and
  // traces: the first kReadLogSize of them.
  std::vector<int64_t> read_log() const;
  static constexpr size_t kReadLogSize = 4096;

  // For tests: called, without the lock, by a Get about to wait for
  // another thread's read of `group` (once per Get), which then looks
  // again; so a test can act in the window a waiting Get leaves open.
  void set_wait_hook(std::function<void(int64_t group)> hook);

 private:
  struct Entry {
    std::shared_ptr<const DecodedRowGroup> decoded;  // null while being read
    uint64_t last_use = 0;
  };

  using Released = std::vector<std::shared_ptr<const DecodedRowGroup>>;
  using Entries = std::map<int64_t, Entry>;

  // The rows of a held group still to be delivered, and their bytes.
  struct Pending {
    std::vector<int64_t> rows;
    size_t bytes = 0;
    int64_t last_use = -1;
  };

  // Group `group` whole (row < 0) or row `row` of it (a remnant may serve it).
  HeldRow Hold(int64_t group, int64_t row);

  // A reader thread: reads the queued groups until none is left.
  void ReaderLoop();
  // Starts a reader for the queued groups if fewer than readahead_ run;
  // joins the readers that ended. The readers of another process (this
  // one forked from it) are left alone: their threads are not here.
  void StartReaderLocked() REQUIRES(mu_);
  // Whether `group` was queued for a reader and not started: then it is
  // taken out of the queue, for the caller to read.
  bool TakeQueuedLocked(int64_t group) REQUIRES(mu_);
  // Whether reads ahead are queued or under way.
  bool ReadsAheadPendingLocked() const REQUIRES(mu_);

  // Reads `group`, which this thread claimed (its entry is in `entries_`,
  // without data), and stores it, evicting to the limit; its row `row`
  // (if >= 0) counts as served once stored.
  std::shared_ptr<const DecodedRowGroup> ReadClaimed(int64_t group, int64_t row, bool ahead);
  // Row `row` of `group` (none if < 0) handed to a Get: one use fewer left.
  void CountServedLocked(int64_t group, int64_t row) REQUIRES(mu_);
  // Let go of the least recently used groups beyond the limit (never
  // `keep`), into `released`, to be freed once the lock is let go.
  void EvictBeyondLimit(int64_t keep, Released& released) REQUIRES(mu_);
  // With a plan, the held group to let go first (not `keep`), or end().
  Entries::iterator PlannedVictimLocked(int64_t keep) REQUIRES(mu_);
  // Lets go of a held group, keeping its pending rows when they fit.
  void LetGoLocked(Entries::iterator it, Released& released) REQUIRES(mu_);
  Pending PendingLocked(int64_t group, const DecodedRowGroup& decoded) const REQUIRES(mu_);
  // Whether `bytes` more fit in the remnants' budget.
  bool FitsLocked(size_t bytes) const REQUIRES(mu_);
  bool AnyUsesLeftLocked(int64_t group, const std::vector<int64_t>& rows) const REQUIRES(mu_);
  // Lets go of the groups and remnants the plan has passed.
  void ReleasePassedLocked(Released& released) REQUIRES(mu_);
  // The plan's next group to read ahead (claimed), or -1. Lets go of the
  // groups the plan has passed.
  int64_t ClaimPlannedLocked(Released& released) REQUIRES(mu_);
  // Without a plan: the next group in row order to read ahead (claimed), or -1.
  int64_t ClaimSequentialLocked(int64_t group) REQUIRES(mu_);
  void NoteReadLocked(int64_t group) REQUIRES(mu_);

  const std::shared_ptr<const RowGroupSource> source_;
  const std::vector<int64_t> rows_;
  std::vector<int64_t> group_starts_;  // the first row of each group
  const std::vector<ColumnSpec> columns_;
  const int64_t max_row_groups_;
  const int64_t readahead_;

  mutable feedline::internal::Mutex mu_;
  feedline::internal::CondVar read_done_;
  Entries entries_ GUARDED_BY(mu_);
  std::map<int64_t, RowGroupRemnant> remnants_ GUARDED_BY(mu_);
  size_t remnant_bytes_ GUARDED_BY(mu_) = 0;
  int64_t remnant_rows_ GUARDED_BY(mu_) = 0;
  // The bytes and number of groups read, for the remnants' budget.
  size_t bytes_read_ GUARDED_BY(mu_) = 0;
  int64_t groups_read_ GUARDED_BY(mu_) = 0;
  uint64_t clock_ GUARDED_BY(mu_) = 0;
  int64_t reads_ GUARDED_BY(mu_) = 0;
  int64_t reads_ahead_ GUARDED_BY(mu_) = 0;
  int64_t held_ GUARDED_BY(mu_) = 0;
  std::vector<int64_t> read_log_ GUARDED_BY(mu_);
  std::function<void(int64_t)> wait_hook_ GUARDED_BY(mu_);

  // Reads ahead: the groups claimed for a reader, not started yet; the
  // readers (each with whether it has ended, to be joined), the process
  // that started them, and how many run.
  struct Reader {
    std::unique_ptr<std::thread> thread;
    bool ended = false;
  };
  std::deque<int64_t> queued_ GUARDED_BY(mu_);
  std::list<Reader> readers_ GUARDED_BY(mu_);
  pid_t readers_pid_ GUARDED_BY(mu_) = 0;
  int64_t readers_running_ GUARDED_BY(mu_) = 0;
  int64_t reads_ahead_running_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  feedline::internal::CondVar reads_ahead_done_;

  // The epoch's plan: its groups in first-use order, each group's place in
  // it (-1: not planned), the furthest place a Get asked for, and the
  // samples delivered.
  std::vector<PlannedGroup> plan_ GUARDED_BY(mu_);
  std::vector<int64_t> plan_place_ GUARDED_BY(mu_);
  int64_t plan_front_ GUARDED_BY(mu_) = -1;
  int64_t plan_delivered_ GUARDED_BY(mu_) = 0;
  std::vector<int64_t> row_last_use_ GUARDED_BY(mu_);
  std::vector<int32_t> row_uses_left_ GUARDED_BY(mu_);
};

}  // namespace feedline::text::internal

#endif  // FEEDLINE_SRC_TEXT_ROW_GROUP_CACHE_H_

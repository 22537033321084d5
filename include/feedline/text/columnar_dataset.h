// ColumnarDataset: the rows of columnar data (Parquet files, an Arrow table)
// as samples, read from a RowGroupSource one row group at a time, lazily,
// with at most `max_row_groups` decoded groups held. Each column fills one
// field (ColumnSpec): a list of integers becomes a 1-D int64 tensor (token
// ids), a number a scalar of its dtype, bytes or a string a 1-D uint8
// tensor.
//
// The row a sample reads: row `index`, or row_map[index] when a row map is
// given (a selection or reordering of the rows, as a Hugging Face dataset's
// indices mapping). Length(i) is lengths[i] (token counts, known without
// reading a row group) when given, so the dataset can be packed and batched
// by a token budget.
//
// Read-ahead, in the epoch's plan order: the loader tells the dataset the
// order it will ask for (EpochOrder) and how far it has delivered
// (EpochProgress). After serving a row, a Get claims the next of the
// `readahead` groups that order needs first after the furthest group asked
// for, if it is neither held nor being read and a place is free, and the
// dataset's reader threads (up to `readahead`) read it, so that no batch
// waits behind the read of a group later batches need; groups
// whose last use in the order is delivered are let go. So a shuffled order
// that visits groups one after another (rows shuffled within a window of
// groups) finds each group decoded by the time it is asked for. Without a
// plan (the dataset used outside a loader), a Get whose visit looks
// sequential (g - 1 still held) reads the next groups after g in row order.
// The rows a group still feeds when it must make room are kept, copied out,
// until the order's last use of them is delivered (within a budget of
// max_row_groups groups' bytes), so an order that visits the groups one
// after another, as packing in file order does, reads each group once.
// A random order over the whole dataset reads a group for most rows unless
// max_row_groups holds them all.
//
// Thread safety: Get, Length and Source may run on any number of threads;
// the cache is locked inside.
#ifndef FEEDLINE_TEXT_COLUMNAR_DATASET_H_
#define FEEDLINE_TEXT_COLUMNAR_DATASET_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "feedline/dataset.h"
#include "feedline/export.h"
#include "feedline/text/row_group_source.h"

namespace feedline::text {

namespace internal {
class RowGroupCache;
struct HeldRow;
}

struct FEEDLINE_EXPORT ColumnarOptions {
  int64_t max_row_groups = 4;  // decoded row groups held at most
  int64_t readahead = 3;       // groups read ahead, each on a reader thread
  std::vector<int64_t> row_map;  // the row of each sample; empty: 0, 1, ...
  std::vector<int64_t> lengths;  // each sample's Length; empty: none
};

// A list row of a decoded row group, in place: `size` values of `dtype`
// (kI32 or kI64, as decoded) at `data`, alive while `owner` is held.
struct FEEDLINE_EXPORT ListRow {
  std::shared_ptr<const DecodedRowGroup> owner;
  const void* data = nullptr;
  int64_t size = 0;
  DType dtype = DType::kI64;
};

class FEEDLINE_EXPORT ColumnarDataset : public Dataset {
 public:
  // Throws Error for a null source, no columns, an empty or repeated field
  // name, a list column whose dtype is not kI32 / kI64, a row map entry out
  // of the source's rows, lengths not one per sample or negative, or bad
  // cache options.
  ColumnarDataset(std::shared_ptr<const RowGroupSource> source, std::vector<ColumnSpec> columns,
                  ColumnarOptions options = {});
  ~ColumnarDataset() override;
  ColumnarDataset(const ColumnarDataset&) = delete;
  ColumnarDataset& operator=(const ColumnarDataset&) = delete;

  int64_t size() const override { return size_; }
  // Throws SampleError (kIo, naming the row group) when its group cannot be
  // read.
  void Get(int64_t index, Sample& out, SampleContext& ctx) const override;
  // Sample `index`'s list column `column` (an index into columns(), of kind
  // kList) in place, without a copy: how a PackedDataset reads its
  // documents. Throws as Get does; Error for a column that is not a list.
  ListRow GetList(int64_t index, size_t column) const;
  // The index in columns() of the list column filling `field`, or -1.
  int64_t ListColumn(const std::string& field) const;
  std::string Source(int64_t index) const override;
  // Throws Error when no lengths were given.
  int64_t Length(int64_t index) const override;
  // The scalar columns: their shape is the same in every row.
  std::vector<FieldSpec> FixedFields() const override;
  // The plan the row groups are read ahead in (see the top).
  void EpochOrder(std::span<const int64_t> order) const override;
  void EpochProgress(int64_t delivered) const override;

  const std::vector<ColumnSpec>& columns() const { return columns_; }
  int64_t num_row_groups() const { return static_cast<int64_t>(group_starts_.size()) - 1; }
  bool has_lengths() const { return !lengths_.empty() || size_ == 0; }
  // The source's row and its group for sample `index`.
  int64_t row_of(int64_t index) const;
  int64_t group_of_row(int64_t row) const;
  // Row group reads so far, those of them read ahead of need, and groups
  // held now (for tests and stats).
  int64_t row_group_reads() const;
  int64_t row_group_reads_ahead() const;
  int64_t row_groups_held() const;
  // Rows kept from groups let go before the plan's last use of them, and
  // their bytes (now).
  int64_t rows_kept() const;
  int64_t kept_bytes() const;
  // The row groups in the order their reads were taken on (the first 4096).
  std::vector<int64_t> row_group_read_log() const;
  // Stops the reads ahead for good and waits for those under way (the
  // reader threads' end; Gets then read the groups they need): before the
  // process ends, while the source can still be called.
  void StopReadsAhead() const;

 private:
  // The decoded row of sample `index` (its group in `group`); throws as Get.
  internal::HeldRow Hold(int64_t index, int64_t& group) const;

  std::shared_ptr<const RowGroupSource> source_;
  std::vector<ColumnSpec> columns_;
  std::vector<int64_t> group_starts_;  // first row of each group, then the rows
  std::vector<int64_t> row_map_;
  std::vector<int64_t> lengths_;
  int64_t size_ = 0;
  std::unique_ptr<internal::RowGroupCache> cache_;
};

}  // namespace feedline::text

#endif  // FEEDLINE_TEXT_COLUMNAR_DATASET_H_

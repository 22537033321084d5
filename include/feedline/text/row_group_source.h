// RowGroupSource: columnar data (Parquet files, an Arrow table) read one row
// group at a time, the unit of I/O of a ColumnarDataset. A row group is a
// run of consecutive rows; Read(g) decodes the dataset's columns of group g
// into flat buffers (values and, for lists and strings, offsets), so that a
// row is then served from memory without calling back into the source.
//
// The Python module implements it with pyarrow (feedline.io.ParquetDataset,
// and a Hugging Face datasets.Dataset's Arrow table); tests implement it in
// memory. A source may also be told the epoch's plan (PlanGroups), to fetch
// what it reads ahead of need.
//
// Thread safety: Read may be called from several threads at once, for
// different groups.
#ifndef FEEDLINE_TEXT_ROW_GROUP_SOURCE_H_
#define FEEDLINE_TEXT_ROW_GROUP_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "feedline/export.h"
#include "feedline/tensor.h"

namespace feedline::text {

// What a column's rows become in a sample.
enum class ColumnKind : uint8_t {
  kList,    // a list of integers per row (token ids): a 1-D int64 field
  kScalar,  // one number per row: a scalar field of the column's dtype
  kBytes,   // bytes or a string per row: a 1-D uint8 field, `prefix` first
};

struct FEEDLINE_EXPORT ColumnSpec {
  std::string column;  // its name in the source, for messages
  std::string field;   // the sample's field it fills
  ColumnKind kind = ColumnKind::kList;
  // kScalar: the field's dtype (the decoded values are of it). kList: the
  // decoded values' dtype, kI32 or kI64 (the field is int64 either way).
  DType dtype = DType::kI64;
  std::string prefix;  // kBytes: bytes written before each row's own
};

// One column of a decoded row group. values holds the rows' elements end to
// end (of the spec's dtype; bytes for kBytes); kList and kBytes rows are
// values[offsets[r], offsets[r + 1]) in elements, offsets.size() == rows + 1.
// The values are a view of memory `owner` keeps alive: the decoder's own
// buffers (pyarrow's), so that they are not copied.
struct FEEDLINE_EXPORT DecodedColumn {
  std::shared_ptr<const void> owner;
  std::span<const std::byte> values;
  std::vector<int64_t> offsets;

  // A column owning `values`.
  static DecodedColumn Owning(std::vector<std::byte> values, std::vector<int64_t> offsets = {});
};

struct FEEDLINE_EXPORT DecodedRowGroup {
  int64_t rows = 0;
  std::vector<DecodedColumn> columns;  // in the dataset's column order

  // The memory it holds, for the cache's accounting and messages.
  size_t bytes() const;
};

// A row group of an epoch's plan: where the epoch's order (in samples) first
// and last needs it.
struct FEEDLINE_EXPORT PlannedGroup {
  int64_t group = 0;
  int64_t first_use = 0;
  int64_t last_use = 0;
};

class FEEDLINE_EXPORT RowGroupSource {
 public:
  virtual ~RowGroupSource();

  // The rows of every row group, in row order.
  virtual std::vector<int64_t> RowsPerGroup() const = 0;
  // "corpus/part-0.parquet, row group 3": where group `group` comes from.
  virtual std::string Describe(int64_t group) const = 0;
  // The columns of `group`, decoded. Throws Error (naming the file, the
  // column and the reason) when it cannot be read.
  virtual DecodedRowGroup Read(int64_t group) const = 0;

  // The epoch's plan (its groups in first-use order, each once) and how many
  // samples of its order are delivered, as the ColumnarDataset learns them:
  // a source whose bytes are remote fetches them ahead in that order (the
  // Python module's Parquet files through the node's cache). Called under
  // the loader's lock: they may only record and wake. Default: nothing.
  virtual void PlanGroups(const std::vector<PlannedGroup>& plan) const;
  virtual void PlanProgress(int64_t delivered) const;

  // Runs `wait`, which waits for Reads on other threads to end, with any
  // lock those Reads take let go by this thread: the Python module's
  // sources let go of the GIL when the thread holds it (a dataset freed by
  // Python waits for its reads ahead). Default: runs it.
  virtual void WaitForReads(const std::function<void()>& wait) const;
};

// Throws Error unless `decoded` holds `rows` rows of every column of
// `columns` (offsets of the right size, starting at 0, never decreasing,
// within values). `where` names the row group.
FEEDLINE_EXPORT void CheckDecoded(const DecodedRowGroup& decoded, int64_t rows,
                                  const std::vector<ColumnSpec>& columns,
                                  const std::string& where);

}  // namespace feedline::text

#endif  // FEEDLINE_TEXT_ROW_GROUP_SOURCE_H_

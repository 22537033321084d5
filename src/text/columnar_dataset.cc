#include "feedline/text/columnar_dataset.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <set>
#include <string>
#include <utility>

#include "feedline/error.h"
#include "src/text/row_group_cache.h"

namespace feedline::text {

namespace {

void CheckColumns(const std::vector<ColumnSpec>& columns) {
  if (columns.empty()) throw Error("ColumnarDataset: no columns");
  std::set<std::string> fields;
  for (const ColumnSpec& c : columns) {
    if (c.field.empty()) throw Error("ColumnarDataset: column '" + c.column + "' has no field name");
    if (!fields.insert(c.field).second) {
      throw Error("ColumnarDataset: two columns fill the field '" + c.field + "'");
    }
    if (c.kind == ColumnKind::kList && c.dtype != DType::kI32 && c.dtype != DType::kI64) {
      throw Error("ColumnarDataset: list column '" + c.column +
                  "' must be decoded as int32 or int64, got " + DTypeName(c.dtype));
    }
  }
}

// Row `row` of a list column, widened to int64.
void FillList(const ColumnSpec& spec, const DecodedColumn& column, int64_t row, Sample& out) {
  const int64_t begin = column.offsets[static_cast<size_t>(row)];
  const int64_t count = column.offsets[static_cast<size_t>(row) + 1] - begin;
  Tensor t = out.Allocate(spec.field, DType::kI64, Shape{count});
  int64_t* dst = t.data<int64_t>();
  if (spec.dtype == DType::kI64) {
    if (count > 0) std::memcpy(dst, column.values.data() + begin * 8, static_cast<size_t>(count) * 8);
    return;
  }
  const auto* src = reinterpret_cast<const int32_t*>(column.values.data()) + begin;
  for (int64_t i = 0; i < count; ++i) dst[i] = src[i];
}

void FillScalar(const ColumnSpec& spec, const DecodedColumn& column, int64_t row, Sample& out) {
  const size_t width = DTypeSize(spec.dtype);
  Tensor t = out.Allocate(spec.field, spec.dtype, Shape());
  std::memcpy(t.raw(), column.values.data() + static_cast<size_t>(row) * width, width);
}

void FillBytes(const ColumnSpec& spec, const DecodedColumn& column, int64_t row, Sample& out) {
  const int64_t begin = column.offsets[static_cast<size_t>(row)];
  const int64_t count = column.offsets[static_cast<size_t>(row) + 1] - begin;
  const auto prefix = static_cast<int64_t>(spec.prefix.size());
  Tensor t = out.Allocate(spec.field, DType::kU8, Shape{prefix + count});
  auto* dst = static_cast<char*>(t.raw());
  std::memcpy(dst, spec.prefix.data(), spec.prefix.size());
  if (count > 0) std::memcpy(dst + prefix, column.values.data() + begin, static_cast<size_t>(count));
}

}  // namespace

ColumnarDataset::ColumnarDataset(std::shared_ptr<const RowGroupSource> source,
                                 std::vector<ColumnSpec> columns, ColumnarOptions options)
    : source_(std::move(source)),
      columns_(std::move(columns)),
      row_map_(std::move(options.row_map)),
      lengths_(std::move(options.lengths)) {
  if (source_ == nullptr) throw Error("ColumnarDataset: the row group source must not be null");
  CheckColumns(columns_);
  const std::vector<int64_t> rows = source_->RowsPerGroup();
  group_starts_.assign(1, 0);
  for (size_t g = 0; g < rows.size(); ++g) {
    if (rows[g] < 0) {
      throw Error("ColumnarDataset: " + source_->Describe(static_cast<int64_t>(g)) + " has " +
                  std::to_string(rows[g]) + " rows");
    }
    group_starts_.push_back(group_starts_.back() + rows[g]);
  }
  const int64_t total = group_starts_.back();
  size_ = row_map_.empty() ? total : static_cast<int64_t>(row_map_.size());
  for (size_t i = 0; i < row_map_.size(); ++i) {
    if (row_map_[i] < 0 || row_map_[i] >= total) {
      throw Error("ColumnarDataset: row_map[" + std::to_string(i) + "] = " +
                  std::to_string(row_map_[i]) + " is not a row of the " + std::to_string(total) +
                  " rows");
    }
  }
  if (!lengths_.empty() && static_cast<int64_t>(lengths_.size()) != size_) {
    throw Error("ColumnarDataset: " + std::to_string(lengths_.size()) + " lengths for " +
                std::to_string(size_) + " samples");
  }
  for (size_t i = 0; i < lengths_.size(); ++i) {
    if (lengths_[i] < 0) {
      throw Error("ColumnarDataset: length " + std::to_string(i) + " is negative (" +
                  std::to_string(lengths_[i]) + ")");
    }
  }
  cache_ = std::make_unique<internal::RowGroupCache>(source_, rows, columns_,
                                                     options.max_row_groups, options.readahead);
}

ColumnarDataset::~ColumnarDataset() = default;

int64_t ColumnarDataset::row_of(int64_t index) const {
  CheckIndex(index, size_);
  return row_map_.empty() ? index : row_map_[static_cast<size_t>(index)];
}

int64_t ColumnarDataset::group_of_row(int64_t row) const {
  CheckIndex(row, group_starts_.back());
  // The last group starting at or before `row` (empty groups start where
  // the next one does: upper_bound skips them).
  const auto it = std::upper_bound(group_starts_.begin(), group_starts_.end(), row);
  return static_cast<int64_t>(it - group_starts_.begin()) - 1;
}

internal::HeldRow ColumnarDataset::Hold(int64_t index, int64_t& group) const {
  const int64_t row = row_of(index);
  group = group_of_row(row);
  const int64_t within = row - group_starts_[static_cast<size_t>(group)];
  try {
    return cache_->AcquireRow(group, within);
  } catch (const SampleError&) {
    throw;
  } catch (const std::exception& e) {
    throw SampleError(FailureKind::kIo, source_->Describe(group), e.what(), index);
  }
}

void ColumnarDataset::Get(int64_t index, Sample& out, SampleContext&) const {
  int64_t group = 0;
  {
    const internal::HeldRow held = Hold(index, group);
    for (size_t c = 0; c < columns_.size(); ++c) {
      const ColumnSpec& spec = columns_[c];
      const DecodedColumn& column = held.decoded->columns[c];
      switch (spec.kind) {
        case ColumnKind::kList: FillList(spec, column, held.row, out); break;
        case ColumnKind::kScalar: FillScalar(spec, column, held.row, out); break;
        case ColumnKind::kBytes: FillBytes(spec, column, held.row, out); break;
      }
    }
  }
  cache_->ReadAhead(group);
}

ListRow ColumnarDataset::GetList(int64_t index, size_t column) const {
  if (column >= columns_.size() || columns_[column].kind != ColumnKind::kList) {
    throw Error("ColumnarDataset::GetList: column " + std::to_string(column) +
                " is not a list column");
  }
  int64_t group = 0;
  ListRow out;
  {
    internal::HeldRow held = Hold(index, group);
    const DecodedColumn& values = held.decoded->columns[column];
    const int64_t begin = values.offsets[static_cast<size_t>(held.row)];
    out.size = values.offsets[static_cast<size_t>(held.row) + 1] - begin;
    out.dtype = columns_[column].dtype;
    out.data = values.values.data() + begin * static_cast<int64_t>(DTypeSize(out.dtype));
    out.owner = std::move(held.decoded);
  }
  cache_->ReadAhead(group);
  return out;
}

int64_t ColumnarDataset::ListColumn(const std::string& field) const {
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (columns_[c].field == field && columns_[c].kind == ColumnKind::kList) {
      return static_cast<int64_t>(c);
    }
  }
  return -1;
}

std::string ColumnarDataset::Source(int64_t index) const {
  const int64_t row = row_of(index);
  const int64_t group = group_of_row(row);
  return source_->Describe(group) + ", row " +
         std::to_string(row - group_starts_[static_cast<size_t>(group)]);
}

int64_t ColumnarDataset::Length(int64_t index) const {
  CheckIndex(index, size_);
  if (lengths_.empty()) {
    throw Error("ColumnarDataset: no lengths were given (name a list column or a length column)");
  }
  return lengths_[static_cast<size_t>(index)];
}

std::vector<FieldSpec> ColumnarDataset::FixedFields() const {
  std::vector<FieldSpec> fixed;
  for (const ColumnSpec& c : columns_) {
    if (c.kind == ColumnKind::kScalar) fixed.push_back({c.field, c.dtype, Shape()});
  }
  return fixed;
}

void ColumnarDataset::EpochOrder(std::span<const int64_t> order) const {
  // Each group once, where the order first needs it, with its last use;
  // and each row's last use, so that the rows a group still feeds when it is
  // let go are kept (RowGroupCache).
  std::vector<PlannedGroup> plan;
  std::vector<int64_t> entry_of(static_cast<size_t>(num_row_groups()), -1);
  std::vector<int64_t> row_last_use;
  std::vector<int32_t> row_uses;
  if (!order.empty()) {
    row_last_use.assign(static_cast<size_t>(group_starts_.back()), -1);
    row_uses.assign(static_cast<size_t>(group_starts_.back()), 0);
  }
  for (size_t at = 0; at < order.size(); ++at) {
    const int64_t index = order[at];
    if (index < 0 || index >= size_) continue;  // Get reports it
    const int64_t row = row_of(index);
    row_last_use[static_cast<size_t>(row)] = static_cast<int64_t>(at);
    ++row_uses[static_cast<size_t>(row)];
    const int64_t group = group_of_row(row);
    int64_t& entry = entry_of[static_cast<size_t>(group)];
    const auto position = static_cast<int64_t>(at);
    if (entry < 0) {
      entry = static_cast<int64_t>(plan.size());
      plan.push_back(PlannedGroup{group, position, position});
    }
    plan[static_cast<size_t>(entry)].last_use = position;
  }
  // The source too: one that fetches remote bytes fetches them ahead in
  // this order, before the decoded-group cache reads ahead.
  source_->PlanGroups(plan);
  cache_->SetPlan(std::move(plan), std::move(row_last_use), std::move(row_uses));
}

void ColumnarDataset::EpochProgress(int64_t delivered) const {
  source_->PlanProgress(delivered);
  cache_->PlanProgress(delivered);
}

int64_t ColumnarDataset::row_group_reads() const { return cache_->reads(); }
int64_t ColumnarDataset::row_group_reads_ahead() const { return cache_->reads_ahead(); }
int64_t ColumnarDataset::row_groups_held() const { return cache_->held(); }
int64_t ColumnarDataset::rows_kept() const { return cache_->rows_kept(); }
int64_t ColumnarDataset::kept_bytes() const { return cache_->kept_bytes(); }
std::vector<int64_t> ColumnarDataset::row_group_read_log() const { return cache_->read_log(); }

void ColumnarDataset::StopReadsAhead() const { cache_->StopReadsAhead(); }

}  // namespace feedline::text

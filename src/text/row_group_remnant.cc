#include "src/text/row_group_remnant.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace feedline::text::internal {

int64_t RowGroupRemnant::Find(int64_t row) const {
  const auto it = std::lower_bound(rows.begin(), rows.end(), row);
  if (it == rows.end() || *it != row) return -1;
  return static_cast<int64_t>(it - rows.begin());
}

DecodedRowGroup CopyRows(const DecodedRowGroup& group, const std::vector<ColumnSpec>& columns,
                         std::span<const int64_t> rows) {
  DecodedRowGroup out;
  out.rows = static_cast<int64_t>(rows.size());
  out.columns.reserve(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    const ColumnSpec& spec = columns[c];
    const DecodedColumn& column = group.columns[c];
    const size_t width = spec.kind == ColumnKind::kBytes ? 1 : DTypeSize(spec.dtype);
    std::vector<std::byte> values;
    std::vector<int64_t> offsets;
    if (spec.kind == ColumnKind::kScalar) {
      values.resize(rows.size() * width);
      for (size_t k = 0; k < rows.size(); ++k) {
        std::memcpy(values.data() + k * width,
                    column.values.data() + static_cast<size_t>(rows[k]) * width, width);
      }
    } else {
      offsets.reserve(rows.size() + 1);
      offsets.push_back(0);
      for (const int64_t row : rows) {
        const int64_t count = column.offsets[static_cast<size_t>(row) + 1] -
                              column.offsets[static_cast<size_t>(row)];
        offsets.push_back(offsets.back() + count);
      }
      values.resize(static_cast<size_t>(offsets.back()) * width);
      for (size_t k = 0; k < rows.size(); ++k) {
        const auto begin = static_cast<size_t>(column.offsets[static_cast<size_t>(rows[k])]);
        const auto count = static_cast<size_t>(offsets[k + 1] - offsets[k]);
        if (count > 0) {
          std::memcpy(values.data() + static_cast<size_t>(offsets[k]) * width,
                      column.values.data() + begin * width, count * width);
        }
      }
    }
    out.columns.push_back(DecodedColumn::Owning(std::move(values), std::move(offsets)));
  }
  return out;
}

}  // namespace feedline::text::internal

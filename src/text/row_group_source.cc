#include "feedline/text/row_group_source.h"

#include <memory>
#include <string>
#include <utility>

#include "feedline/error.h"

namespace feedline::text {

RowGroupSource::~RowGroupSource() = default;

void RowGroupSource::PlanGroups(const std::vector<PlannedGroup>&) const {}

void RowGroupSource::PlanProgress(int64_t) const {}

void RowGroupSource::WaitForReads(const std::function<void()>& wait) const { wait(); }

DecodedColumn DecodedColumn::Owning(std::vector<std::byte> values, std::vector<int64_t> offsets) {
  auto held = std::make_shared<const std::vector<std::byte>>(std::move(values));
  DecodedColumn column;
  column.values = std::span<const std::byte>(*held);
  column.owner = std::move(held);
  column.offsets = std::move(offsets);
  return column;
}

size_t DecodedRowGroup::bytes() const {
  size_t total = 0;
  for (const DecodedColumn& c : columns) {
    total += c.values.size() + c.offsets.size() * sizeof(int64_t);
  }
  return total;
}

void CheckDecoded(const DecodedRowGroup& decoded, int64_t rows,
                  const std::vector<ColumnSpec>& columns, const std::string& where) {
  if (decoded.rows != rows) {
    throw Error(where + ": " + std::to_string(decoded.rows) + " rows decoded, " +
                std::to_string(rows) + " expected");
  }
  if (decoded.columns.size() != columns.size()) {
    throw Error(where + ": " + std::to_string(decoded.columns.size()) + " columns decoded, " +
                std::to_string(columns.size()) + " expected");
  }
  for (size_t c = 0; c < columns.size(); ++c) {
    const ColumnSpec& spec = columns[c];
    const DecodedColumn& column = decoded.columns[c];
    const std::string at = where + ", column '" + spec.column + "'";
    const size_t width = spec.kind == ColumnKind::kBytes ? 1 : DTypeSize(spec.dtype);
    if (column.values.size() % width != 0) {
      throw Error(at + ": " + std::to_string(column.values.size()) +
                  " bytes of values, not a whole number of elements");
    }
    const auto elements = static_cast<int64_t>(column.values.size() / width);
    if (spec.kind == ColumnKind::kScalar) {
      if (elements != rows) {
        throw Error(at + ": " + std::to_string(elements) + " values for " +
                    std::to_string(rows) + " rows");
      }
      continue;
    }
    if (static_cast<int64_t>(column.offsets.size()) != rows + 1 || column.offsets.front() != 0) {
      throw Error(at + ": the offsets must be rows + 1 (" + std::to_string(rows + 1) +
                  ") values starting at 0");
    }
    for (size_t r = 1; r < column.offsets.size(); ++r) {
      if (column.offsets[r] < column.offsets[r - 1]) {
        throw Error(at + ": the offsets decrease at row " + std::to_string(r - 1));
      }
    }
    if (column.offsets.back() != elements) {
      throw Error(at + ": the offsets end at " + std::to_string(column.offsets.back()) +
                  ", but there are " + std::to_string(elements) + " values");
    }
  }
}

}  // namespace feedline::text

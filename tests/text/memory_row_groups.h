// A RowGroupSource over in-memory rows for the text tests: one list column
// ("tokens", int32) and one int64 scalar column ("id"), split into groups of
// the given sizes; a group can be made to fail, and Read calls are counted.
#ifndef FEEDLINE_TESTS_TEXT_MEMORY_ROW_GROUPS_H_
#define FEEDLINE_TESTS_TEXT_MEMORY_ROW_GROUPS_H_

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/text/row_group_source.h"

namespace feedline::text::testing {

// Row r holds tokens {r, r + 1, ..., r + r % 4 - 1} (r % 4 of them) and id 100 + r;
// or, given `lengths`, lengths[r] tokens numbered on from the rows before it
// (0, 1, ... across all rows: every token unique).
class MemoryRowGroups : public RowGroupSource {
 public:
  explicit MemoryRowGroups(std::vector<int64_t> rows, std::vector<int64_t> lengths = {})
      : rows_(std::move(rows)), lengths_(std::move(lengths)) {}

  std::vector<int64_t> RowsPerGroup() const override { return rows_; }
  std::string Describe(int64_t group) const override {
    return "memory, row group " + std::to_string(group);
  }
  DecodedRowGroup Read(int64_t group) const override {
    ++reads;
    if (group == failing) throw Error(Describe(group) + ": unreadable");
    int64_t first = 0;
    for (int64_t g = 0; g < group; ++g) first += rows_[static_cast<size_t>(g)];
    int64_t token = 0;  // the first token of row `first`, given lengths
    for (int64_t r = 0; r < first && !lengths_.empty(); ++r) {
      token += lengths_[static_cast<size_t>(r)];
    }
    DecodedRowGroup out;
    out.rows = rows_[static_cast<size_t>(group)];
    std::vector<std::byte> tokens, ids;
    std::vector<int64_t> offsets{0};
    for (int64_t r = first; r < first + out.rows; ++r) {
      const int64_t count = lengths_.empty() ? r % 4 : lengths_[static_cast<size_t>(r)];
      for (int64_t t = 0; t < count; ++t) {
        Append(tokens, static_cast<int32_t>(lengths_.empty() ? r + t : token++));
      }
      offsets.push_back(offsets.back() + count);
      Append(ids, static_cast<int64_t>(100 + r));
    }
    out.columns = {DecodedColumn::Owning(std::move(tokens), std::move(offsets)),
                   DecodedColumn::Owning(std::move(ids))};
    return out;
  }

  static std::vector<ColumnSpec> Columns() {
    return {{"tokens", "input_ids", ColumnKind::kList, DType::kI32, ""},
            {"id", "id", ColumnKind::kScalar, DType::kI64, ""}};
  }

  mutable std::atomic<int64_t> reads{0};
  std::atomic<int64_t> failing{-1};

 private:
  template <typename T>
  static void Append(std::vector<std::byte>& bytes, T value) {
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &value, sizeof(T));
  }

  std::vector<int64_t> rows_;
  std::vector<int64_t> lengths_;
};

}  // namespace feedline::text::testing

#endif  // FEEDLINE_TESTS_TEXT_MEMORY_ROW_GROUPS_H_

// RowGroupRemnant: the rows of a decoded row group that an epoch's plan
// still needs after the group itself is let go, copied out of it.
//
// Packing in file order reads a row group's documents over a window of
// rows: most of them are packed while the group is held, and a few wait in
// rows still open when the cache must make room for the next group. Keeping
// those few (a remnant) instead of the group, or instead of reading the
// group again for them, is what lets an epoch read each group once within
// max_row_groups held groups (RowGroupCache).
//
// Thread safety: a value; const members may be read from any thread.
#ifndef FEEDLINE_SRC_TEXT_ROW_GROUP_REMNANT_H_
#define FEEDLINE_SRC_TEXT_ROW_GROUP_REMNANT_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "feedline/text/row_group_source.h"

namespace feedline::text::internal {

struct RowGroupRemnant {
  std::vector<int64_t> rows;  // the group's rows kept, ascending
  std::shared_ptr<const DecodedRowGroup> decoded;  // its row k is the group's rows[k]
  int64_t last_use = 0;  // the plan's last use of any of them

  // The row of `decoded` holding the group's row `row`, or -1 if not kept.
  int64_t Find(int64_t row) const;
  // The bytes it holds.
  size_t bytes() const { return decoded->bytes() + rows.size() * sizeof(int64_t); }
};

// Rows `rows` (ascending, each < group.rows) of every column of `group`,
// copied into buffers of their own: the values of those rows only, and
// offsets from 0.
DecodedRowGroup CopyRows(const DecodedRowGroup& group, const std::vector<ColumnSpec>& columns,
                         std::span<const int64_t> rows);

}  // namespace feedline::text::internal

#endif  // FEEDLINE_SRC_TEXT_ROW_GROUP_REMNANT_H_

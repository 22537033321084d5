#include "src/text/row_group_remnant.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "text/memory_row_groups.h"

namespace feedline::text::internal {
namespace {

using testing::MemoryRowGroups;

template <typename T>
std::vector<T> Values(const DecodedColumn& column) {
  std::vector<T> out(column.values.size() / sizeof(T));
  std::memcpy(out.data(), column.values.data(), column.values.size());
  return out;
}

TEST(RowGroupRemnantTest, CopiesTheRowsOfEveryColumnAndFindsThem) {
  // Rows 0-5 of one group: row r holds r % 4 tokens {r, ...} and id 100 + r.
  const DecodedRowGroup group = MemoryRowGroups({6}).Read(0);
  const std::vector<int64_t> kept{1, 3, 4};
  RowGroupRemnant remnant;
  remnant.rows = kept;
  remnant.decoded = std::make_shared<const DecodedRowGroup>(
      CopyRows(group, MemoryRowGroups::Columns(), kept));
  const DecodedRowGroup& copy = *remnant.decoded;
  EXPECT_EQ(copy.rows, 3);
  EXPECT_EQ(copy.columns[0].offsets, (std::vector<int64_t>{0, 1, 4, 4}));
  EXPECT_EQ(Values<int32_t>(copy.columns[0]), (std::vector<int32_t>{1, 3, 4, 5}));
  EXPECT_EQ(Values<int64_t>(copy.columns[1]), (std::vector<int64_t>{101, 103, 104}));
  CheckDecoded(copy, 3, MemoryRowGroups::Columns(), "the remnant");
  EXPECT_EQ(remnant.Find(3), 1);
  EXPECT_EQ(remnant.Find(4), 2);
  EXPECT_EQ(remnant.Find(2), -1);
  EXPECT_EQ(remnant.Find(9), -1);
}

TEST(RowGroupRemnantTest, CopiesBytesColumns) {
  DecodedRowGroup group;
  group.rows = 3;
  const std::string text = "abcdef";
  std::vector<std::byte> bytes(text.size());
  std::memcpy(bytes.data(), text.data(), text.size());
  group.columns.push_back(DecodedColumn::Owning(std::move(bytes), {0, 2, 3, 6}));
  const std::vector<ColumnSpec> columns{{"text", "text", ColumnKind::kBytes, DType::kU8, ""}};
  const std::vector<int64_t> kept{0, 2};
  const DecodedRowGroup copy = CopyRows(group, columns, kept);
  EXPECT_EQ(copy.columns[0].offsets, (std::vector<int64_t>{0, 2, 5}));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(copy.columns[0].values.data()), 5),
            "abdef");
}

}  // namespace
}  // namespace feedline::text::internal

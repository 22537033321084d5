#include "feedline/concat.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "feedline/error.h"
#include "testing/sample_x.h"

namespace feedline {
namespace {

// Sample i of part `tag` has field "x" = tag * 1000 + i, source "<tag>/<i>"
// and length tag * 100 + i.
class Part : public Dataset {
 public:
  Part(int64_t tag, int64_t n, std::vector<FieldSpec> fixed = {})
      : tag_(tag), n_(n), fixed_(std::move(fixed)) {}
  int64_t size() const override { return n_; }
  void Get(int64_t index, Sample& out, SampleContext&) const override {
    CheckIndex(index, n_);
    out.SetScalar<int64_t>("x", tag_ * 1000 + index);
  }
  std::string Source(int64_t index) const override {
    CheckIndex(index, n_);
    return std::to_string(tag_) + "/" + std::to_string(index);
  }
  int64_t Length(int64_t index) const override { return tag_ * 100 + index; }
  std::vector<FieldSpec> FixedFields() const override { return fixed_; }

 private:
  int64_t tag_;
  int64_t n_;
  std::vector<FieldSpec> fixed_;
};

using test::GetX;

std::shared_ptr<const Dataset> MakePart(int64_t tag, int64_t n, std::vector<FieldSpec> fixed = {}) {
  return std::make_shared<Part>(tag, n, std::move(fixed));
}

TEST(ConcatTest, MapsEveryIndexToItsPart) {
  Concat concat({MakePart(1, 3), MakePart(2, 2), MakePart(3, 4)});
  ASSERT_EQ(concat.size(), 9);
  const std::vector<int64_t> expected = {1000, 1001, 1002, 2000, 2001, 3000, 3001, 3002, 3003};
  for (int64_t i = 0; i < concat.size(); ++i) {
    EXPECT_EQ(GetX(concat, i), expected[static_cast<size_t>(i)]) << i;
  }
  EXPECT_EQ(concat.Source(3), "2/0");
  EXPECT_EQ(concat.Source(8), "3/3");
  EXPECT_EQ(concat.Length(2), 102);
  EXPECT_EQ(concat.Length(5), 300);
}

TEST(ConcatTest, SkipsEmptyParts) {
  Concat concat({MakePart(1, 0), MakePart(2, 2), MakePart(3, 0), MakePart(4, 0), MakePart(5, 1),
                 MakePart(6, 0)});
  ASSERT_EQ(concat.size(), 3);
  EXPECT_EQ(GetX(concat, 0), 2000);
  EXPECT_EQ(GetX(concat, 1), 2001);
  EXPECT_EQ(GetX(concat, 2), 5000);
  EXPECT_THROW(GetX(concat, 3), IndexError);
}

TEST(ConcatTest, AllEmptyHasNoSamples) {
  Concat concat({MakePart(1, 0), MakePart(2, 0)});
  EXPECT_EQ(concat.size(), 0);
  EXPECT_THROW(GetX(concat, 0), IndexError);
}

TEST(ConcatTest, OutOfRangeIsIndexError) {
  Concat concat({MakePart(1, 2), MakePart(2, 2)});
  EXPECT_THROW(GetX(concat, 4), IndexError);
  EXPECT_THROW(GetX(concat, -1), IndexError);
  EXPECT_THROW(concat.Source(4), IndexError);
  try {
    concat.Length(17);
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("17"), std::string::npos) << e.what();
  }
}

TEST(ConcatTest, RejectsNoPartsAndNullParts) {
  EXPECT_THROW(Concat({}), Error);
  EXPECT_THROW(Concat({MakePart(1, 2), nullptr}), Error);
}

TEST(ConcatTest, FixedFieldsWhenAllPartsAgree) {
  const std::vector<FieldSpec> fields = {{"image", DType::kU8, Shape{4, 4, 3}},
                                         {"label", DType::kI64, Shape{}}};
  Concat concat({MakePart(1, 2, fields), MakePart(2, 3, fields), MakePart(3, 1, fields)});
  const std::vector<FieldSpec> fixed = concat.FixedFields();
  ASSERT_EQ(fixed.size(), 2u);
  EXPECT_EQ(fixed[0].name, "image");
  EXPECT_EQ(fixed[0].shape, (Shape{4, 4, 3}));
  EXPECT_EQ(fixed[1].name, "label");
  EXPECT_EQ(fixed[1].dtype, DType::kI64);
}

TEST(ConcatTest, NoFixedFieldsWhenPartsDisagree) {
  const FieldSpec image{"image", DType::kU8, Shape{4, 4, 3}};
  const FieldSpec label{"label", DType::kI64, Shape{}};
  struct Row {
    const char* what;
    std::vector<FieldSpec> other;
  };
  const Row rows[] = {
      {"another shape", {{"image", DType::kU8, Shape{4, 5, 3}}, label}},
      {"another dtype", {{"image", DType::kF32, Shape{4, 4, 3}}, label}},
      {"another name", {{"pixels", DType::kU8, Shape{4, 4, 3}}, label}},
      {"fewer fields", {image}},
      {"more fields", {image, label, {"mask", DType::kU8, Shape{4, 4}}}},
      {"another order", {label, image}},
      {"none", {}},
  };
  for (const Row& row : rows) {
    Concat concat({MakePart(1, 1, {image, label}), MakePart(2, 1, {image, label}),
                   MakePart(3, 1, row.other)});
    EXPECT_TRUE(concat.FixedFields().empty()) << row.what;
  }
  // A single part keeps its own.
  EXPECT_EQ(Concat({MakePart(1, 1, {image})}).FixedFields().size(), 1u);
}

}  // namespace
}  // namespace feedline

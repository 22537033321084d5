#include "feedline/sample.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "src/core/sample_binder.h"

namespace feedline {
namespace {

TEST(SampleTest, AllocateGivesWritableFieldOfTheRequestedType) {
  Sample s;
  Tensor t = s.Allocate("image", DType::kU8, Shape{4, 5, 3});
  EXPECT_EQ(t.dtype(), DType::kU8);
  EXPECT_EQ(t.shape(), (Shape{4, 5, 3}));
  ASSERT_NE(t.raw(), nullptr);
  for (int64_t i = 0; i < t.elements(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(i);
  const Tensor* found = s.Find("image");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->raw(), t.raw());
  EXPECT_EQ(found->data<uint8_t>()[59], 59);
  EXPECT_EQ(&s["image"], found);
}

TEST(SampleTest, ReusesBuffersAfterClear) {
  Sample s;
  void* image = s.Allocate("image", DType::kF32, Shape{3, 32, 32}).raw();
  void* label = s.Allocate("label", DType::kI64, Shape{}).raw();
  ASSERT_NE(image, label);
  for (int round = 0; round < 3; ++round) {
    s.Clear();
    // Same or smaller request: the buffer is reused, not reallocated.
    EXPECT_EQ(s.Allocate("image", DType::kF32, Shape{3, 32, 32}).raw(), image);
    EXPECT_EQ(s.Allocate("label", DType::kI64, Shape{}).raw(), label);
  }
  s.Clear();
  EXPECT_EQ(s.Allocate("image", DType::kU8, Shape{3, 16, 16}).raw(), image);
  // A larger request grows the field and keeps reusing the grown buffer.
  s.Clear();
  void* grown = s.Allocate("image", DType::kF32, Shape{3, 64, 64}).raw();
  s.Clear();
  EXPECT_EQ(s.Allocate("image", DType::kF32, Shape{3, 64, 64}).raw(), grown);
}

TEST(SampleTest, ClearForgetsFields) {
  Sample s;
  s.SetScalar<int64_t>("label", 7);
  ASSERT_EQ(s.num_fields(), 1);
  s.Clear();
  EXPECT_EQ(s.num_fields(), 0);
  EXPECT_EQ(s.Find("label"), nullptr);
  EXPECT_THROW(s["label"], Error);
}

TEST(SampleTest, MissingFieldIsNullOrNamedError) {
  Sample s;
  s.SetScalar<float>("score", 0.5f);
  EXPECT_EQ(s.Find("label"), nullptr);
  try {
    s["label"];
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'label'"), std::string::npos) << e.what();
  }
}

TEST(SampleTest, FieldsKeepFirstAllocationOrder) {
  Sample s;
  s.SetScalar<int64_t>("b", 1);
  s.SetScalar<int64_t>("a", 2);
  s.SetScalar<int64_t>("c", 3);
  s.SetScalar<int64_t>("a", 4);  // rewriting does not move it
  ASSERT_EQ(s.num_fields(), 3);
  EXPECT_EQ(s.field_name(0), "b");
  EXPECT_EQ(s.field_name(1), "a");
  EXPECT_EQ(s.field_name(2), "c");
  EXPECT_EQ(*s.field(1).data<int64_t>(), 4);
  // After Clear the order is that of the next sample.
  s.Clear();
  s.SetScalar<int64_t>("c", 5);
  s.SetScalar<int64_t>("b", 6);
  ASSERT_EQ(s.num_fields(), 2);
  EXPECT_EQ(s.field_name(0), "c");
  EXPECT_EQ(s.field_name(1), "b");
  EXPECT_EQ(*s["b"].data<int64_t>(), 6);
}

TEST(SampleTest, SetScalarAndSetVectorCopyValues) {
  Sample s;
  s.SetScalar<float>("x", 1.25f);
  const int32_t tokens[] = {4, 8, 15, 16, 23, 42};
  s.SetVector<int32_t>("tokens", tokens, 6);
  s.SetVector<int32_t>("empty", nullptr, 0);
  EXPECT_EQ(s["x"].shape(), Shape{});
  EXPECT_EQ(*s["x"].data<float>(), 1.25f);
  ASSERT_EQ(s["tokens"].shape(), Shape{6});
  EXPECT_EQ(std::vector<int32_t>(s["tokens"].data<int32_t>(), s["tokens"].data<int32_t>() + 6),
            std::vector<int32_t>(tokens, tokens + 6));
  EXPECT_EQ(s["empty"].elements(), 0);
  EXPECT_THROW(s["tokens"].data<int64_t>(), Error);
}

TEST(SampleTest, UnboundFieldsAreNotBound) {
  Sample s;
  s.SetScalar<int64_t>("label", 1);
  EXPECT_FALSE(internal::SampleBinder::IsBound(s, 0));
}

TEST(SampleTest, BoundFieldIsWrittenIntoTheDestination) {
  Sample s;
  std::vector<std::byte> row(2 * 3 * sizeof(float));
  internal::SampleBinder::Bind(s, "image", DType::kF32, Shape{2, 3}, row.data());
  Tensor t = s.Allocate("image", DType::kF32, Shape{2, 3});
  EXPECT_EQ(t.raw(), row.data());
  t.data<float>()[5] = 3.5f;
  float last;
  std::memcpy(&last, row.data() + 5 * sizeof(float), sizeof(float));
  EXPECT_EQ(last, 3.5f);
  s.SetScalar<int64_t>("label", 2);
  ASSERT_EQ(s.num_fields(), 2);
  EXPECT_TRUE(internal::SampleBinder::IsBound(s, 0));
  EXPECT_FALSE(internal::SampleBinder::IsBound(s, 1));

  // Rebinding moves the field to the next row; unbinding gives it its own buffer.
  std::vector<std::byte> next_row(row.size());
  internal::SampleBinder::Bind(s, "image", DType::kF32, Shape{2, 3}, next_row.data());
  s.Clear();
  EXPECT_EQ(s.Allocate("image", DType::kF32, Shape{2, 3}).raw(), next_row.data());
  EXPECT_TRUE(internal::SampleBinder::IsBound(s, 0));
  internal::SampleBinder::Unbind(s);
  s.Clear();
  void* own = s.Allocate("image", DType::kF32, Shape{2, 3}).raw();
  EXPECT_NE(own, row.data());
  EXPECT_NE(own, next_row.data());
  EXPECT_FALSE(internal::SampleBinder::IsBound(s, 0));
}

TEST(SampleTest, BoundFieldRejectsAnotherSchema) {
  Sample s;
  std::vector<std::byte> row(4 * sizeof(float));
  internal::SampleBinder::Bind(s, "image", DType::kF32, Shape{4}, row.data());
  try {
    s.Allocate("image", DType::kF32, Shape{5});
    FAIL() << "expected SampleError";
  } catch (const SampleError& e) {
    EXPECT_EQ(e.reason(), "schema");
    EXPECT_NE(e.message().find("[4]"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("[5]"), std::string::npos) << e.message();
  }
  EXPECT_THROW(s.Allocate("image", DType::kU8, Shape{4}), SampleError);
}

}  // namespace
}  // namespace feedline

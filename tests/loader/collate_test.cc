// DefaultCollate's own contract (include/feedline/collate.h), through the
// public API: samples in, batch fields out of a BatchBuilder.
#include "feedline/collate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/tensor.h"

namespace feedline {
namespace {

// A BatchBuilder over heap buffers, filled with a marker byte so that a
// field the collate forgets to write shows up.
class VectorBuilder : public BatchBuilder {
 public:
  Tensor Add(std::string_view name, DType dtype, const Shape& shape) override {
    const size_t bytes = static_cast<size_t>(shape.elements()) * DTypeSize(dtype);
    buffers_.push_back(std::make_unique<std::vector<std::byte>>(bytes, std::byte{0xAB}));
    names_.emplace_back(name);
    tensors_.emplace_back(dtype, shape, buffers_.back()->data());
    return tensors_.back();
  }
  const std::vector<std::string>& names() const { return names_; }
  const Tensor& operator[](const std::string& name) const {
    for (size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == name) return tensors_[i];
    }
    throw std::out_of_range("no field " + name);
  }

 private:
  std::vector<std::unique_ptr<std::vector<std::byte>>> buffers_;
  std::vector<std::string> names_;
  std::vector<Tensor> tensors_;
};

// Owns the samples and the span DefaultCollate takes.
struct Samples {
  explicit Samples(int n) : owned(static_cast<size_t>(n)) {
    for (Sample& s : owned) ptrs.push_back(&s);
  }
  Sample& operator[](int i) { return owned[static_cast<size_t>(i)]; }
  std::span<const Sample* const> span() const { return ptrs; }
  std::vector<Sample> owned;
  std::vector<const Sample*> ptrs;
};

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.shape().elements());
}

std::vector<uint8_t> Bytes(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.raw());
  return std::vector<uint8_t>(p, p + t.bytes());
}

template <typename T>
void SetTokens(Sample& s, const std::string& name, DType dtype, std::vector<T> values) {
  Tensor t = s.Allocate(name, dtype, Shape{static_cast<int64_t>(values.size())});
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * sizeof(T));
}

// The message of the SampleError `fn` throws ("" if none).
template <typename Fn>
std::string SampleErrorOf(Fn fn) {
  try {
    fn();
  } catch (const SampleError& e) {
    return e.what();
  }
  return "";
}

TEST(Collate, StacksFieldsOfEqualShapeAlongANewFirstDimension) {
  Samples s(3);
  for (int i = 0; i < 3; ++i) {
    Tensor image = s[i].Allocate("image", DType::kU8, Shape{2, 2});
    for (int k = 0; k < 4; ++k) image.data<uint8_t>()[k] = static_cast<uint8_t>(10 * i + k);
    s[i].SetScalar<int64_t>("label", 100 + i);
  }
  VectorBuilder out;
  DefaultCollate(s.span(), CollateOptions{}, out);
  EXPECT_EQ(out.names(), (std::vector<std::string>{"image", "label"}));  // sample order, no extras
  EXPECT_EQ(out["image"].dtype(), DType::kU8);
  EXPECT_EQ(out["image"].shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(Values<uint8_t>(out["image"]),
            (std::vector<uint8_t>{0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23}));
  EXPECT_EQ(out["label"].shape(), Shape{3});
  EXPECT_EQ(Values<int64_t>(out["label"]), (std::vector<int64_t>{100, 101, 102}));
}

TEST(Collate, PadsEveryDimensionToTheLargestExtentWithThePadValue) {
  Samples s(2);
  Tensor a = s[0].Allocate("x", DType::kF32, Shape{1, 3});
  for (int k = 0; k < 3; ++k) a.data<float>()[k] = static_cast<float>(k + 1);
  Tensor b = s[1].Allocate("x", DType::kF32, Shape{2, 1});
  b.data<float>()[0] = 7;
  b.data<float>()[1] = 8;
  CollateOptions options;
  options.pad_value = -1.5;
  VectorBuilder out;
  DefaultCollate(s.span(), options, out);
  EXPECT_EQ(out.names(), (std::vector<std::string>{"x", "x_lengths"}));
  EXPECT_EQ(out["x"].shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(Values<float>(out["x"]), (std::vector<float>{1, 2, 3, -1.5, -1.5, -1.5,  //
                                                        7, -1.5, -1.5, 8, -1.5, -1.5}));
  // The lengths are each sample's first dimension.
  EXPECT_EQ(out["x_lengths"].dtype(), DType::kI64);
  EXPECT_EQ(Values<int64_t>(out["x_lengths"]), (std::vector<int64_t>{1, 2}));
}

TEST(Collate, PadValueIsConvertedToTheFieldsDtype) {
  Samples s(2);
  SetTokens<uint8_t>(s[0], "u8", DType::kU8, {1});
  SetTokens<uint8_t>(s[1], "u8", DType::kU8, {2, 3});
  SetTokens<int32_t>(s[0], "i32", DType::kI32, {});
  SetTokens<int32_t>(s[1], "i32", DType::kI32, {5, 6});
  CollateOptions options;
  options.pad_value = 7;
  VectorBuilder out;
  DefaultCollate(s.span(), options, out);
  EXPECT_EQ(Values<uint8_t>(out["u8"]), (std::vector<uint8_t>{1, 7, 2, 3}));
  // A zero-length sample is all padding, with length 0.
  EXPECT_EQ(Values<int32_t>(out["i32"]), (std::vector<int32_t>{7, 7, 5, 6}));
  EXPECT_EQ(Values<int64_t>(out["i32_lengths"]), (std::vector<int64_t>{0, 2}));
}

TEST(Collate, FieldsListedAsPaddedGetLengthsEvenWhenShapesAgree) {
  Samples s(2);
  SetTokens<int32_t>(s[0], "tokens", DType::kI32, {1, 1, 1});
  SetTokens<int32_t>(s[1], "tokens", DType::kI32, {2, 2, 2});
  CollateOptions options;
  options.padded = {"tokens"};
  VectorBuilder out;
  DefaultCollate(s.span(), options, out);
  EXPECT_EQ(out.names(), (std::vector<std::string>{"tokens", "tokens_lengths"}));
  EXPECT_EQ(out["tokens"].shape(), (Shape{2, 3}));
  EXPECT_EQ(Values<int32_t>(out["tokens"]), (std::vector<int32_t>{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(Values<int64_t>(out["tokens_lengths"]), (std::vector<int64_t>{3, 3}));
}

TEST(Collate, PadMultiplesRoundThePaddedExtentsUp) {
  // Two 1 x 2 x 3 and 1 x 3 x 1 "images": padded to 1 x 4 x 4 with
  // multiples {1, 2, 4}, even in a batch whose shapes agree.
  Samples s(2);
  Tensor a = s[0].Allocate("image", DType::kU8, Shape{1, 2, 3});
  Tensor b = s[1].Allocate("image", DType::kU8, Shape{1, 3, 1});
  std::fill_n(a.data<uint8_t>(), 6, 1);
  std::fill_n(b.data<uint8_t>(), 3, 2);
  CollateOptions options;
  options.pad_multiples = {PadMultiple{"image", {1, 2, 4}}};
  VectorBuilder out;
  DefaultCollate(s.span(), options, out);
  EXPECT_EQ(out["image"].shape(), (Shape{2, 1, 4, 4}));
  EXPECT_EQ(Values<uint8_t>(out["image"]),
            (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                  2, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}));
  Samples same(1);
  same[0].Allocate("image", DType::kU8, Shape{1, 4, 4});
  VectorBuilder exact;
  DefaultCollate(same.span(), options, exact);
  EXPECT_EQ(exact["image"].shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(exact.names(), (std::vector<std::string>{"image", "image_lengths"}));

  options.pad_multiples = {PadMultiple{"image", {32, 32}}};
  VectorBuilder wrong;
  try {
    DefaultCollate(s.span(), options, wrong);
    FAIL() << "no error";
  } catch (const SampleError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("field 'image' is [1, 2, 3], but its pad "
                                               "multiples give 2 dimensions"));
  }
}

TEST(Collate, RaggedFieldsAreConcatenatedWithOffsets) {
  Samples s(3);
  SetTokens<int32_t>(s[0], "tokens", DType::kI32, {1, 1});
  SetTokens<int32_t>(s[1], "tokens", DType::kI32, {});
  SetTokens<int32_t>(s[2], "tokens", DType::kI32, {3, 3, 3});
  CollateOptions options;
  options.ragged = {"tokens"};
  VectorBuilder out;
  DefaultCollate(s.span(), options, out);
  EXPECT_EQ(out.names(), (std::vector<std::string>{"tokens", "tokens_offsets"}));
  EXPECT_EQ(out["tokens"].shape(), Shape{5});
  EXPECT_EQ(Values<int32_t>(out["tokens"]), (std::vector<int32_t>{1, 1, 3, 3, 3}));
  EXPECT_EQ(out["tokens_offsets"].shape(), Shape{4});
  EXPECT_EQ(Values<int64_t>(out["tokens_offsets"]), (std::vector<int64_t>{0, 2, 2, 5}));
}

TEST(Collate, RaggedFieldsStayRaggedWhenShapesAgree) {
  Samples s(2);
  SetTokens<int64_t>(s[0], "t", DType::kI64, {4, 5});
  SetTokens<int64_t>(s[1], "t", DType::kI64, {6, 7});
  CollateOptions options;
  options.ragged = {"t"};
  VectorBuilder out;
  DefaultCollate(s.span(), options, out);
  EXPECT_EQ(out["t"].shape(), Shape{4});
  EXPECT_EQ(Values<int64_t>(out["t_offsets"]), (std::vector<int64_t>{0, 2, 4}));
}

TEST(Collate, RaggedFieldThatVariesBeyondItsFirstDimensionNamesTheField) {
  Samples s(2);
  s[0].Allocate("boxes", DType::kF32, Shape{1, 4});
  s[1].Allocate("boxes", DType::kF32, Shape{2, 5});
  CollateOptions options;
  options.ragged = {"boxes"};
  VectorBuilder out;
  const std::string message = SampleErrorOf([&] { DefaultCollate(s.span(), options, out); });
  EXPECT_NE(message.find("'boxes'"), std::string::npos) << message;
  EXPECT_NE(message.find("[2, 5]"), std::string::npos) << message;
}

TEST(Collate, AScalarFieldListedAsRaggedNamesTheField) {
  Samples s(2);
  s[0].SetScalar<int64_t>("label", 1);
  s[1].SetScalar<int64_t>("label", 2);
  CollateOptions options;
  options.ragged = {"label"};
  VectorBuilder out;
  const std::string message = SampleErrorOf([&] { DefaultCollate(s.span(), options, out); });
  EXPECT_NE(message.find("'label'"), std::string::npos) << message;
}

TEST(Collate, DisagreeingDtypesAreASampleErrorNamingTheField) {
  Samples s(2);
  s[0].SetScalar<int64_t>("x", 1);
  s[1].SetScalar<int32_t>("x", 1);
  VectorBuilder out;
  const std::string message = SampleErrorOf([&] { DefaultCollate(s.span(), {}, out); });
  EXPECT_NE(message.find("'x'"), std::string::npos) << message;
  EXPECT_NE(message.find("i64"), std::string::npos) << message;
  EXPECT_NE(message.find("i32"), std::string::npos) << message;
}

TEST(Collate, DisagreeingRanksAreASampleErrorNamingTheField) {
  Samples s(2);
  s[0].Allocate("image", DType::kU8, Shape{2, 2});
  s[1].Allocate("image", DType::kU8, Shape{2, 2, 3});
  VectorBuilder out;
  const std::string message = SampleErrorOf([&] { DefaultCollate(s.span(), {}, out); });
  EXPECT_NE(message.find("'image'"), std::string::npos) << message;
  EXPECT_NE(message.find("[2, 2, 3]"), std::string::npos) << message;
}

TEST(Collate, AFieldMissingFromSomeSamplesNamesTheField) {
  Samples s(2);
  s[0].SetScalar<int64_t>("label", 1);
  s[0].SetScalar<int64_t>("weight", 1);
  s[1].SetScalar<int64_t>("label", 2);
  VectorBuilder out;
  const std::string message = SampleErrorOf([&] { DefaultCollate(s.span(), {}, out); });
  EXPECT_NE(message.find("'weight'"), std::string::npos) << message;
  EXPECT_NE(message.find("missing"), std::string::npos) << message;
}

TEST(Collate, BoolFieldsStayBoolAndPadWithZeroOrOne) {
  Samples s(2);
  SetTokens<uint8_t>(s[0], "mask", DType::kBool, {1, 0, 1});
  SetTokens<uint8_t>(s[1], "mask", DType::kBool, {0});
  SetTokens<uint8_t>(s[0], "flag", DType::kBool, {1});
  SetTokens<uint8_t>(s[1], "flag", DType::kBool, {0});
  {
    VectorBuilder out;
    DefaultCollate(s.span(), {}, out);
    EXPECT_EQ(out["flag"].dtype(), DType::kBool);
    EXPECT_EQ(Bytes(out["flag"]), (std::vector<uint8_t>{1, 0}));
    EXPECT_EQ(out["mask"].dtype(), DType::kBool);
    EXPECT_EQ(out["mask"].shape(), (Shape{2, 3}));
    EXPECT_EQ(Bytes(out["mask"]), (std::vector<uint8_t>{1, 0, 1, 0, 0, 0}));
  }
  {
    // Any non-zero pad value pads a bool field with true (1), never another byte.
    CollateOptions options;
    options.pad_value = 2.5;
    VectorBuilder out;
    DefaultCollate(s.span(), options, out);
    EXPECT_EQ(Bytes(out["mask"]), (std::vector<uint8_t>{1, 0, 1, 0, 1, 1}));
  }
}

TEST(Collate, NoSamplesAddNoFields) {
  VectorBuilder out;
  DefaultCollate(std::span<const Sample* const>(), {}, out);
  EXPECT_TRUE(out.names().empty());
}

}  // namespace
}  // namespace feedline

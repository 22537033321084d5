#include "feedline/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "feedline/error.h"

namespace feedline {
namespace {

TEST(ShapeTest, DefaultIsScalarWithOneElement) {
  Shape s;
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.elements(), 1);
  EXPECT_EQ(s.ToString(), "[]");
}

TEST(ShapeTest, HoldsDimsAndCountsElements) {
  Shape s{3, 224, 224};
  ASSERT_EQ(s.rank(), 3);
  EXPECT_EQ(s[0], 3);
  EXPECT_EQ(s[1], 224);
  EXPECT_EQ(s[2], 224);
  EXPECT_EQ(s.elements(), 3 * 224 * 224);
  EXPECT_EQ(s.ToString(), "[3, 224, 224]");
  EXPECT_EQ(Shape({4, 0, 5}).elements(), 0);
}

TEST(ShapeTest, IteratesOverItsDims) {
  Shape s{2, 5, 7};
  int64_t product = 1;
  int count = 0;
  for (int64_t d : s) {
    product *= d;
    ++count;
  }
  EXPECT_EQ(count, 3);
  EXPECT_EQ(product, 70);
}

TEST(ShapeTest, PushBackUpToMaxRankThenThrows) {
  Shape s;
  for (int i = 0; i < Shape::kMaxRank; ++i) s.push_back(i + 1);
  EXPECT_EQ(s.rank(), Shape::kMaxRank);
  EXPECT_EQ(s.elements(), 40320);  // 8!
  EXPECT_THROW(s.push_back(2), Error);
  EXPECT_EQ(s.rank(), Shape::kMaxRank);
  EXPECT_THROW((Shape{1, 1, 1, 1, 1, 1, 1, 1, 1}), Error);
}

TEST(ShapeTest, RejectsNegativeDims) {
  try {
    Shape s{2, -3};
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-3"), std::string::npos) << e.what();
  }
}

TEST(ShapeTest, PrependAndDropFront) {
  Shape s{3, 4};
  Shape batched = s.Prepend(8);
  EXPECT_EQ(batched, (Shape{8, 3, 4}));
  EXPECT_EQ(batched.DropFront(), s);
  EXPECT_EQ(Shape{}.Prepend(5), Shape{5});
  EXPECT_EQ(Shape{5}.DropFront(), Shape{});
  EXPECT_EQ(Shape{}.DropFront(), Shape{});
  Shape full{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_THROW(full.Prepend(1), Error);
}

TEST(ShapeTest, EqualityComparesRankAndDims) {
  EXPECT_EQ((Shape{1, 2}), (Shape{1, 2}));
  EXPECT_NE((Shape{1, 2}), (Shape{2, 1}));
  EXPECT_NE((Shape{1, 2}), (Shape{1, 2, 1}));
  EXPECT_NE(Shape{}, Shape{1});
  Shape a{1, 2};
  a[1] = 9;
  EXPECT_EQ(a, (Shape{1, 9}));
}

TEST(DTypeTest, SizesAndNames) {
  struct Row {
    DType dtype;
    size_t size;
    const char* name;
  };
  const Row rows[] = {{DType::kU8, 1, "u8"},
                      {DType::kI32, 4, "i32"},
                      {DType::kI64, 8, "i64"},
                      {DType::kF16, 2, "f16"},
                      {DType::kF32, 4, "f32"}};
  for (const Row& row : rows) {
    EXPECT_EQ(DTypeSize(row.dtype), row.size) << row.name;
    EXPECT_STREQ(DTypeName(row.dtype), row.name);
  }
}

TEST(DTypeTest, DTypeOfMatchesCTypeSizes) {
  static_assert(DTypeOf<uint8_t>() == DType::kU8);
  static_assert(DTypeOf<int32_t>() == DType::kI32);
  static_assert(DTypeOf<int64_t>() == DType::kI64);
  static_assert(DTypeOf<uint16_t>() == DType::kF16);
  static_assert(DTypeOf<float>() == DType::kF32);
  EXPECT_EQ(DTypeSize(DTypeOf<uint8_t>()), sizeof(uint8_t));
  EXPECT_EQ(DTypeSize(DTypeOf<int32_t>()), sizeof(int32_t));
  EXPECT_EQ(DTypeSize(DTypeOf<int64_t>()), sizeof(int64_t));
  EXPECT_EQ(DTypeSize(DTypeOf<uint16_t>()), sizeof(uint16_t));
  EXPECT_EQ(DTypeSize(DTypeOf<float>()), sizeof(float));
}

TEST(TensorTest, ViewsMemoryWithoutOwningIt) {
  float values[6] = {0, 1, 2, 3, 4, 5};
  Tensor t(DType::kF32, Shape{2, 3}, values);
  EXPECT_FALSE(t.empty());
  EXPECT_EQ(t.elements(), 6);
  EXPECT_EQ(t.bytes(), sizeof(values));
  EXPECT_EQ(t.raw(), values);
  EXPECT_EQ(t.data<float>(), values);
  t.data<float>()[4] = 40.0f;
  EXPECT_EQ(values[4], 40.0f);
  EXPECT_TRUE(Tensor().empty());
}

TEST(TensorTest, TypedAccessChecksTheDType) {
  int32_t values[2] = {1, 2};
  Tensor t(DType::kI32, Shape{2}, values);
  EXPECT_EQ(t.data<int32_t>()[1], 2);
  try {
    t.data<float>();
    FAIL() << "expected Error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("i32"), std::string::npos) << message;
    EXPECT_NE(message.find("f32"), std::string::npos) << message;
  }
  EXPECT_THROW(t.data<int64_t>(), Error);
  EXPECT_THROW(t.data<uint8_t>(), Error);
}

TEST(TensorTest, BytesUseTheElementSize) {
  EXPECT_EQ(Tensor(DType::kF16, Shape{3, 5}, nullptr).bytes(), 30u);
  EXPECT_EQ(Tensor(DType::kI64, Shape{}, nullptr).bytes(), 8u);
  EXPECT_EQ(Tensor(DType::kU8, Shape{0, 7}, nullptr).bytes(), 0u);
}

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint32_t Bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

bool IsHalfNan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

TEST(HalfTest, KnownValues) {
  struct Row {
    float value;
    uint16_t half;
  };
  const Row rows[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {0.5f, 0x3800},
      {65504.0f, 0x7bff},                  // largest finite half
      {std::ldexp(1.0f, -14), 0x0400},     // smallest normal
      {std::ldexp(1.0f, -24), 0x0001},     // smallest subnormal
      {std::ldexp(1023.0f, -24), 0x03ff},  // largest subnormal
      {std::numeric_limits<float>::infinity(), 0x7c00},
      {-std::numeric_limits<float>::infinity(), 0xfc00},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(FloatToHalf(row.value), row.half) << row.value;
    EXPECT_EQ(Bits(HalfToFloat(row.half)), Bits(row.value)) << row.value;
  }
}

TEST(HalfTest, RoundsToNearestEven) {
  const float ulp_at_one = std::ldexp(1.0f, -10);
  // Halfway between 1 and 1 + ulp: ties go to the even mantissa (1).
  EXPECT_EQ(FloatToHalf(1.0f + ulp_at_one / 2), 0x3c00);
  // Halfway between 1 + ulp and 1 + 2 ulp: ties go to 1 + 2 ulp.
  EXPECT_EQ(FloatToHalf(1.0f + 1.5f * ulp_at_one), 0x3c02);
  // Just above and below a halfway point round to the nearer value.
  EXPECT_EQ(FloatToHalf(std::nextafter(1.0f + ulp_at_one / 2, 2.0f)), 0x3c01);
  EXPECT_EQ(FloatToHalf(std::nextafter(1.0f + 1.5f * ulp_at_one, 0.0f)), 0x3c01);
  // The mantissa carry rolls into the exponent: just below 2 rounds to 2.
  EXPECT_EQ(FloatToHalf(std::nextafter(2.0f, 0.0f)), 0x4000);
}

TEST(HalfTest, OverflowAndUnderflow) {
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);  // below the halfway point to 65536
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // halfway, ties to even: infinity
  EXPECT_EQ(FloatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(FloatToHalf(-1e10f), 0xfc00);
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::max()), 0x7c00);
  const float min_subnormal = std::ldexp(1.0f, -24);
  EXPECT_EQ(FloatToHalf(min_subnormal / 2), 0x0000);      // tie to even: zero
  EXPECT_EQ(FloatToHalf(-min_subnormal / 2), 0x8000);     // keeps the sign
  EXPECT_EQ(FloatToHalf(min_subnormal * 0.75f), 0x0001);  // above half: rounds up
  EXPECT_EQ(FloatToHalf(min_subnormal * 1.5f), 0x0002);   // tie between 1 and 2: even
  EXPECT_EQ(FloatToHalf(min_subnormal * 2.5f), 0x0002);   // tie between 2 and 3: even
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(FloatToHalf(1e-30f), 0x0000);
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(FloatToHalf(std::ldexp(1023.75f, -24)), 0x0400);
}

TEST(HalfTest, NanStaysNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(IsHalfNan(FloatToHalf(nan)));
  EXPECT_TRUE(IsHalfNan(FloatToHalf(-nan)));
  EXPECT_EQ(FloatToHalf(-nan) & 0x8000u, 0x8000u);
  // A signalling NaN whose payload lives only in the low bits must not turn
  // into infinity.
  EXPECT_TRUE(IsHalfNan(FloatToHalf(FromBits(0x7f800001u))));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7c01)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0xfc01)));
}

TEST(HalfTest, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const uint16_t half = static_cast<uint16_t>(h);
    const float f = HalfToFloat(half);
    if (IsHalfNan(half)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      const uint16_t back = FloatToHalf(f);
      ASSERT_TRUE(IsHalfNan(back)) << std::hex << h;
      ASSERT_EQ(back & 0x8000u, half & 0x8000u) << std::hex << h;
    } else {
      ASSERT_EQ(FloatToHalf(f), half) << std::hex << h << " -> " << f;
    }
  }
}

TEST(HalfTest, ConversionPicksTheNearestHalf) {
  // Every float between two neighbouring halves must go to the nearer one.
  // Walk a spread of float bit patterns from 2^-25 up to 65520, where
  // rounding starts to give infinity.
  for (uint32_t bits = 0x33000000u; bits < 0x477ff000u; bits += 0x1357u) {
    const float f = FromBits(bits);
    const uint16_t h = FloatToHalf(f);
    ASSERT_LT(h, 0x7c00u) << f;
    const double error = std::fabs(static_cast<double>(HalfToFloat(h)) - f);
    if (h > 0) {
      const double below = std::fabs(static_cast<double>(HalfToFloat(h - 1)) - f);
      ASSERT_LE(error, below) << f;
    }
    if (h < 0x7bff) {
      const double above = std::fabs(static_cast<double>(HalfToFloat(h + 1)) - f);
      ASSERT_LE(error, above) << f;
    }
    // Negative values mirror positive ones.
    ASSERT_EQ(FloatToHalf(-f), h | 0x8000u) << f;
  }
}

TEST(DTypeTest, ParseDTypeIsTheInverseOfDTypeName) {
  for (DType d : {DType::kU8, DType::kI32, DType::kI64, DType::kF16, DType::kF32}) {
    EXPECT_EQ(ParseDType(DTypeName(d)), d);
  }
  try {
    ParseDType("float32");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "dtype must be 'u8', 'i32', 'i64', 'f16' or 'f32', got 'float32'");
  }
}

}  // namespace
}  // namespace feedline

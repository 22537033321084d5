// Tensor: a typed, shaped, non-owning view of contiguous bytes.
//
// A Tensor never owns the memory it points into: batch tensors point into a
// batch slot and stay valid as long as the Batch handle that gave them out
// lives. Shapes hold at most kMaxRank dimensions inline, so creating and
// copying a Tensor never allocates.
//
// Thread safety: a Tensor is a plain value; concurrent reads are safe.
//
// Example:
//   const Tensor& images = batch["image"];          // f32 [B, 3, 224, 224]
//   const float* pixels = images.data<float>();
#ifndef FEEDLINE_TENSOR_H_
#define FEEDLINE_TENSOR_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "feedline/export.h"

namespace feedline {

// kBool is one byte per element like kU8 (0 or 1); its own tag lets a bool
// array come back as bool, so `~mask` negates instead of flipping bits.
// The values are stored (worker replies, shard indexes): new dtypes go at
// the end. kF64, kI8, kI16 and kU16 carry what a Python dataset returns in
// those dtypes unchanged, as torch and Paddle do.
enum class DType : uint8_t { kU8, kI32, kI64, kF16, kF32, kBool, kF64, kI8, kI16, kU16 };
// The highest DType value: decoders of a dtype byte refuse anything above it.
inline constexpr DType kLastDType = DType::kU16;

// Bytes per element of `dtype`.
constexpr size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kU8: return 1;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kF16: return 2;
    case DType::kF32: return 4;
    case DType::kBool: return 1;
    case DType::kF64: return 8;
    case DType::kI8: return 1;
    case DType::kI16: return 2;
    case DType::kU16: return 2;
  }
  return 0;
}
// "u8", "i32", "i64", "f16", "f32", "bool", "f64", "i8", "i16" or "u16".
FEEDLINE_EXPORT const char* DTypeName(DType dtype);
// The inverse of DTypeName for u8, i32, i64, f16 and f32 (the spellings a
// transform's dtype argument takes); throws Error naming them otherwise.
FEEDLINE_EXPORT DType ParseDType(std::string_view name);
// The dtype of C++ type T (uint8_t, int32_t, int64_t, uint16_t for f16, float).
template <typename T>
constexpr DType DTypeOf();
template <> constexpr DType DTypeOf<uint8_t>() { return DType::kU8; }
template <> constexpr DType DTypeOf<int32_t>() { return DType::kI32; }
template <> constexpr DType DTypeOf<int64_t>() { return DType::kI64; }
template <> constexpr DType DTypeOf<uint16_t>() { return DType::kF16; }
template <> constexpr DType DTypeOf<float>() { return DType::kF32; }

// A shape of up to kMaxRank dimensions, stored inline (no heap).
class FEEDLINE_EXPORT Shape {
 public:
  static constexpr int kMaxRank = 8;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);  // throws Error if too many dims

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  // Product of all dimensions (1 for a scalar).
  int64_t elements() const {
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= dims_[i];
    return n;
  }
  // Appends a dimension; throws Error past kMaxRank.
  void push_back(int64_t dim);
  // This shape with `dim` in front: [dim, ...this].
  Shape Prepend(int64_t dim) const;
  // This shape without its first dimension.
  Shape DropFront() const;
  const int64_t* begin() const { return dims_.data(); }
  const int64_t* end() const { return dims_.data() + rank_; }

  bool operator==(const Shape& other) const {
    if (rank_ != other.rank_) return false;
    for (int i = 0; i < rank_; ++i) {
      if (dims_[i] != other.dims_[i]) return false;
    }
    return true;
  }
  bool operator!=(const Shape& other) const { return !(*this == other); }
  // "[3, 224, 224]"
  std::string ToString() const;

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

class FEEDLINE_EXPORT Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape, void* data) : dtype_(dtype), shape_(shape), data_(data) {}

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t elements() const { return shape_.elements(); }
  size_t bytes() const { return static_cast<size_t>(elements()) * DTypeSize(dtype_); }
  void* raw() const { return data_; }
  bool empty() const { return data_ == nullptr; }

  // Typed access. REQUIRES: DTypeOf<T>() == dtype() (checked, throws Error).
  template <typename T>
  T* data() const {
    CheckType(DTypeOf<T>());
    return static_cast<T*>(data_);
  }

 private:
  void CheckType(DType requested) const;

  DType dtype_ = DType::kU8;
  Shape shape_;
  void* data_ = nullptr;
};

// IEEE half precision conversion (round to nearest even).
FEEDLINE_EXPORT uint16_t FloatToHalf(float value);
FEEDLINE_EXPORT float HalfToFloat(uint16_t value);

}  // namespace feedline

#endif  // FEEDLINE_TENSOR_H_

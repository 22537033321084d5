#include "feedline/tensor.h"

#include <cstring>
#include <sstream>

#include "feedline/error.h"

namespace feedline {

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kU8: return "u8";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kF16: return "f16";
    case DType::kF32: return "f32";
    case DType::kBool: return "bool";
    case DType::kF64: return "f64";
    case DType::kI8: return "i8";
    case DType::kI16: return "i16";
    case DType::kU16: return "u16";
  }
  return "?";
}

DType ParseDType(std::string_view name) {
  for (DType d : {DType::kU8, DType::kI32, DType::kI64, DType::kF16, DType::kF32}) {
    if (name == DTypeName(d)) return d;
  }
  throw Error("dtype must be 'u8', 'i32', 'i64', 'f16' or 'f32', got '" + std::string(name) + "'");
}

Shape::Shape(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) push_back(d);
}

void Shape::push_back(int64_t dim) {
  if (rank_ >= kMaxRank) {
    throw Error("a shape has at most " + std::to_string(kMaxRank) + " dimensions");
  }
  if (dim < 0) throw Error("shape dimensions must be >= 0, got " + std::to_string(dim));
  dims_[rank_++] = dim;
}

Shape Shape::Prepend(int64_t dim) const {
  Shape out;
  out.push_back(dim);
  for (int i = 0; i < rank_; ++i) out.push_back(dims_[i]);
  return out;
}

Shape Shape::DropFront() const {
  Shape out;
  for (int i = 1; i < rank_; ++i) out.push_back(dims_[i]);
  return out;
}

std::string Shape::ToString() const {
  std::ostringstream out;
  out << "[";
  for (int i = 0; i < rank_; ++i) out << (i ? ", " : "") << dims_[i];
  out << "]";
  return out.str();
}

void Tensor::CheckType(DType requested) const {
  if (requested != dtype_) {
    throw Error(std::string("tensor holds ") + DTypeName(dtype_) + ", accessed as " +
                DTypeName(requested));
  }
}

uint16_t FloatToHalf(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to infinity
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);  // underflow to zero
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exponent: fine
  return static_cast<uint16_t>(half);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      x = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}

}  // namespace feedline

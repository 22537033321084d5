#include "feedline/collate.h"

#include <algorithm>
#include <cstring>

#include "feedline/error.h"
#include "src/core/sample_binder.h"

namespace feedline {
namespace {

bool IsRagged(const CollateOptions& options, const std::string& name) {
  return std::find(options.ragged.begin(), options.ragged.end(), name) != options.ragged.end();
}

const PadMultiple* MultiplesOf(const CollateOptions& options, const std::string& name) {
  for (const PadMultiple& pad : options.pad_multiples) {
    if (pad.field == name) return &pad;
  }
  return nullptr;
}

bool IsPadded(const CollateOptions& options, const std::string& name) {
  return std::find(options.padded.begin(), options.padded.end(), name) != options.padded.end() ||
         MultiplesOf(options, name) != nullptr;
}

// Writes `value` converted to `dtype` `count` times at `dst`.
void Fill(std::byte* dst, DType dtype, double value, int64_t count) {
  switch (dtype) {
    case DType::kU8: std::fill_n(reinterpret_cast<uint8_t*>(dst), count, static_cast<uint8_t>(value)); break;
    case DType::kI32: std::fill_n(reinterpret_cast<int32_t*>(dst), count, static_cast<int32_t>(value)); break;
    case DType::kI64: std::fill_n(reinterpret_cast<int64_t*>(dst), count, static_cast<int64_t>(value)); break;
    case DType::kF16: std::fill_n(reinterpret_cast<uint16_t*>(dst), count, FloatToHalf(static_cast<float>(value))); break;
    case DType::kF32: std::fill_n(reinterpret_cast<float*>(dst), count, static_cast<float>(value)); break;
    case DType::kBool: std::fill_n(reinterpret_cast<uint8_t*>(dst), count, static_cast<uint8_t>(value != 0)); break;
    case DType::kF64: std::fill_n(reinterpret_cast<double*>(dst), count, value); break;
    case DType::kI8: std::fill_n(reinterpret_cast<int8_t*>(dst), count, static_cast<int8_t>(value)); break;
    case DType::kI16: std::fill_n(reinterpret_cast<int16_t*>(dst), count, static_cast<int16_t>(value)); break;
    case DType::kU16: std::fill_n(reinterpret_cast<uint16_t*>(dst), count, static_cast<uint16_t>(value)); break;
  }
}

// Copies `src` (shape `from`) into the top-left corner of `dst` (shape `to`,
// same rank, every dimension >= from's), row-major.
void CopyPadded(const std::byte* src, const Shape& from, std::byte* dst, const Shape& to,
                size_t elem) {
  const int rank = from.rank();
  if (rank == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  if (rank == 1) {
    if (from[0] > 0) std::memcpy(dst, src, static_cast<size_t>(from[0]) * elem);
    return;
  }
  // Strides of one index step in dimension 0.
  const Shape inner_from = from.DropFront();
  const Shape inner_to = to.DropFront();
  const size_t src_step = static_cast<size_t>(inner_from.elements()) * elem;
  const size_t dst_step = static_cast<size_t>(inner_to.elements()) * elem;
  for (int64_t i = 0; i < from[0]; ++i) {
    CopyPadded(src + static_cast<size_t>(i) * src_step, inner_from,
               dst + static_cast<size_t>(i) * dst_step, inner_to, elem);
  }
}

}  // namespace

void BatchBuilder::Attach(std::shared_ptr<const void> /*object*/) {
  throw Error("this batch builder cannot carry a collate function's object");
}

void DefaultCollate(std::span<const Sample* const> samples, const CollateOptions& options,
                    BatchBuilder& out) {
  if (samples.empty()) return;
  const Sample& first = *samples[0];
  const int64_t batch = static_cast<int64_t>(samples.size());
  for (int f = 0; f < first.num_fields(); ++f) {
    if (internal::SampleBinder::IsBound(first, f)) continue;  // already in place
    const std::string& name = first.field_name(f);
    const Tensor& head = first.field(f);
    // Check every sample has the field with the same dtype and rank; find the
    // largest extent of each dimension.
    Shape max_shape = head.shape();
    bool same_shape = true;
    for (const Sample* s : samples) {
      const Tensor* t = s->Find(name);
      if (t == nullptr) {
        throw SampleError(FailureKind::kCollate, "", "field '" + name + "' is missing from some samples");
      }
      if (t->dtype() != head.dtype() || t->shape().rank() != head.shape().rank()) {
        throw SampleError(FailureKind::kCollate, "",
                          "field '" + name + "' has " + DTypeName(head.dtype()) + " " +
                              head.shape().ToString() + " in one sample and " +
                              DTypeName(t->dtype()) + " " + t->shape().ToString() + " in another");
      }
      if (t->shape() != head.shape()) same_shape = false;
      for (int d = 0; d < max_shape.rank(); ++d) max_shape[d] = std::max(max_shape[d], t->shape()[d]);
    }
    const size_t elem = DTypeSize(head.dtype());
    if (same_shape && !IsRagged(options, name) && !IsPadded(options, name)) {
      Tensor dst = out.Add(name, head.dtype(), head.shape().Prepend(batch));
      const size_t row = head.bytes();
      auto* bytes = static_cast<std::byte*>(dst.raw());
      for (int64_t i = 0; row > 0 && i < batch; ++i) {
        std::memcpy(bytes + static_cast<size_t>(i) * row,
                    samples[static_cast<size_t>(i)]->Find(name)->raw(), row);
      }
      continue;
    }
    if (head.shape().rank() == 0) {
      throw SampleError(FailureKind::kCollate, "", "scalar field '" + name + "' cannot be ragged");
    }
    if (IsRagged(options, name)) {
      // Values concatenated along dimension 0; other dimensions must agree.
      int64_t total = 0;
      for (const Sample* s : samples) {
        const Shape& sh = s->Find(name)->shape();
        if (sh.DropFront() != head.shape().DropFront()) {
          throw SampleError(FailureKind::kCollate, "",
                            "ragged field '" + name + "' varies beyond its first dimension: " +
                                head.shape().ToString() + " vs " + sh.ToString());
        }
        total += sh[0];
      }
      Shape values_shape = head.shape();
      values_shape[0] = total;
      Tensor values = out.Add(name, head.dtype(), values_shape);
      Tensor offsets = out.Add(name + "_offsets", DType::kI64, Shape{batch + 1});
      auto* dst = static_cast<std::byte*>(values.raw());
      int64_t* off = offsets.data<int64_t>();
      off[0] = 0;
      for (int64_t i = 0; i < batch; ++i) {
        const Tensor* t = samples[static_cast<size_t>(i)]->Find(name);
        if (t->bytes() > 0) std::memcpy(dst, t->raw(), t->bytes());
        dst += t->bytes();
        off[i + 1] = off[i] + t->shape()[0];
      }
      continue;
    }
    // Pad to the largest extent in every dimension, rounded up to its
    // multiple.
    if (const PadMultiple* pad = MultiplesOf(options, name)) {
      if (static_cast<int>(pad->multiples.size()) != max_shape.rank()) {
        throw SampleError(FailureKind::kCollate, "",
                          "field '" + name + "' is " + head.shape().ToString() + ", but its pad "
                          "multiples give " + std::to_string(pad->multiples.size()) +
                          " dimensions");
      }
      for (int d = 0; d < max_shape.rank(); ++d) {
        const int64_t m = pad->multiples[static_cast<size_t>(d)];
        if (m > 1) max_shape[d] = (max_shape[d] + m - 1) / m * m;
      }
    }
    Tensor dst = out.Add(name, head.dtype(), max_shape.Prepend(batch));
    Tensor lengths = out.Add(name + "_lengths", DType::kI64, Shape{batch});
    const size_t row_elems = static_cast<size_t>(max_shape.elements());
    auto* bytes = static_cast<std::byte*>(dst.raw());
    Fill(bytes, head.dtype(), options.pad_value, static_cast<int64_t>(row_elems) * batch);
    for (int64_t i = 0; i < batch; ++i) {
      const Tensor* t = samples[static_cast<size_t>(i)]->Find(name);
      CopyPadded(static_cast<const std::byte*>(t->raw()), t->shape(),
                 bytes + static_cast<size_t>(i) * row_elems * elem, max_shape, elem);
      lengths.data<int64_t>()[i] = t->shape()[0];
    }
  }
}

}  // namespace feedline

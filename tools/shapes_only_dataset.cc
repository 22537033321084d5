#include "tools/shapes_only_dataset.h"

#include <cstring>
#include <utility>

#include "feedline/error.h"
#include "feedline/sample.h"

namespace feedline::cli {

ShapesOnlyDataset::ShapesOnlyDataset(std::shared_ptr<const Dataset> inner)
    : inner_(std::move(inner)) {
  if (!inner_) throw Error("ShapesOnlyDataset: dataset must not be null");
}

void ShapesOnlyDataset::Get(int64_t index, Sample& out, SampleContext& ctx) const {
  // The full sample goes into this thread's own Sample, which keeps its
  // buffers from one Get to the next: no allocation in steady state.
  thread_local Sample loaded;
  loaded.Clear();
  inner_->Get(index, loaded, ctx);
  for (int i = 0; i < loaded.num_fields(); ++i) {
    const Tensor& field = loaded.field(i);
    const Shape& shape = field.shape();
    if (shape.rank() == 0) {
      Tensor copy = out.Allocate(loaded.field_name(i), field.dtype(), shape);
      std::memcpy(copy.raw(), field.raw(), field.bytes());
      continue;
    }
    out.SetVector<int64_t>(loaded.field_name(i) + "_shape", shape.begin(), shape.rank());
  }
}

}  // namespace feedline::cli

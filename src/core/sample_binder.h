// SampleBinder: the loader's access to a Sample's bindings, which route a
// declared fixed field straight into its batch row.
#ifndef FEEDLINE_SRC_CORE_SAMPLE_BINDER_H_
#define FEEDLINE_SRC_CORE_SAMPLE_BINDER_H_

#include <cstddef>
#include <string>

#include "feedline/sample.h"

namespace feedline::internal {

class SampleBinder {
 public:
  // From now on, Allocate(name, dtype, shape) on `sample` returns `destination`.
  static void Bind(Sample& sample, const std::string& name, DType dtype, const Shape& shape,
                   std::byte* destination);
  // Removes all bindings.
  static void Unbind(Sample& sample);
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_CORE_SAMPLE_BINDER_H_

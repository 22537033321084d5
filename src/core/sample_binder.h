// SampleBinder: the loader's access to a Sample's bindings, which route a
// declared fixed field straight into its batch row.
#ifndef FEEDLINE_SRC_CORE_SAMPLE_BINDER_H_
#define FEEDLINE_SRC_CORE_SAMPLE_BINDER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "feedline/sample.h"

namespace feedline::internal {

// A sample's bound fields: Allocate(name, ...) of a bound name returns its
// destination, after checking the dtype and shape.
struct SampleBindings {
  struct Binding {
    std::string name;
    DType dtype;
    Shape shape;
    std::byte* destination;
    bool soft;  // a mismatch falls back to the field's own storage
  };
  std::vector<Binding> list;
};

class SampleBinder {
 public:
  // From now on, Allocate(name, dtype, shape) on `sample` returns
  // `destination`, and the field's own buffer is released. A call with
  // another dtype or shape throws SampleError ("schema"), unless `soft`:
  // then it gets the Sample's own storage, as an unbound field does.
  static void Bind(Sample& sample, const std::string& name, DType dtype, const Shape& shape,
                   std::byte* destination, bool soft = false);
  // Removes all bindings.
  static void Unbind(Sample& sample);
  // Copies the fields written in place into the Sample's own storage, so
  // that they no longer depend on the batch memory (which may be reused).
  static void Detach(Sample& sample);
  // Clears `sample` and frees its own buffers (a sample about to be bound).
  static void ReleaseBuffers(Sample& sample);
  // True if field i of `sample` was written straight into a batch row (collate
  // leaves it where it is).
  static bool IsBound(const Sample& sample, int i);
  // The sample's bindings, or nullptr if it has none (worker processes send
  // them, so the process writes where a thread would).
  static const SampleBindings* Bindings(const Sample& sample);
};

}  // namespace feedline::internal

#endif  // FEEDLINE_SRC_CORE_SAMPLE_BINDER_H_

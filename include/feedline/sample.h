// Sample: the named fields a dataset produces for one index ("image",
// "label", "tokens", ...).
//
// A Sample is reused: the loader keeps one per position of each batch slot and
// clears it (keeping its buffers) before every use, so in steady state filling
// a sample allocates nothing. A field that the dataset declared as fixed
// (Dataset::FixedFields) is written straight into its row of the batch: the
// pointer Allocate returns is already the batch memory.
//
// Thread safety: a Sample is used by one thread at a time.
//
// Example (inside Dataset::Get):
//   Tensor image = out.Allocate("image", DType::kU8, {h, w, 3});
//   DecodeInto(image.data<uint8_t>());
//   out.SetScalar<int64_t>("label", label);
#ifndef FEEDLINE_SAMPLE_H_
#define FEEDLINE_SAMPLE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "feedline/export.h"
#include "feedline/tensor.h"

namespace feedline {

namespace internal {
class SampleBinder;
struct SampleBindings;
}  // namespace internal

class FEEDLINE_EXPORT Sample {
 public:
  Sample();
  ~Sample();
  Sample(const Sample&) = delete;
  Sample& operator=(const Sample&) = delete;
  Sample(Sample&&) noexcept;
  Sample& operator=(Sample&&) noexcept;

  // Returns writable memory for field `name`, valid until the next Clear().
  // The contents are unspecified; the caller fills all of it. If the field is
  // bound to a batch row, the dtype and shape must match the declaration
  // (throws SampleError otherwise).
  Tensor Allocate(std::string_view name, DType dtype, const Shape& shape);

  // Sets a scalar field (shape []).
  template <typename T>
  void SetScalar(std::string_view name, T value) {
    std::memcpy(AllocateField(name, DTypeOf<T>(), Shape()).tensor.raw(), &value, sizeof(T));
  }

  // Copies `count` values into a 1-D field.
  template <typename T>
  void SetVector(std::string_view name, const T* values, int64_t count) {
    Tensor t = Allocate(name, DTypeOf<T>(), Shape{count});
    if (count > 0) std::memcpy(t.raw(), values, sizeof(T) * static_cast<size_t>(count));
  }

  // The field named `name`, or nullptr.
  const Tensor* Find(std::string_view name) const;
  // The field named `name`; throws Error if absent.
  const Tensor& operator[](std::string_view name) const;

  // Fields in the order they were first allocated.
  int num_fields() const;
  const std::string& field_name(int i) const;
  const Tensor& field(int i) const;

  // Forgets all fields, keeping their buffers for reuse.
  void Clear();

 private:
  friend class internal::SampleBinder;

  struct Field {
    std::string name;
    Tensor tensor;
    // The field's own buffer when it is not written into a batch row. Grown
    // without zero-filling or keeping its old bytes: every caller overwrites
    // what it allocates, so a fresh buffer is written once, not twice.
    std::unique_ptr<std::byte[]> storage;
    size_t capacity = 0;
    std::byte* Reserve(size_t bytes);
    void FreeStorage();
    bool used = false;
    bool bound = false;  // written straight into a batch row
    int binding = -2;    // index into bindings_, -1 none, -2 not looked up
  };

  Field& FieldFor(std::string_view name);
  Field& AllocateField(std::string_view name, DType dtype, const Shape& shape);

  std::vector<std::unique_ptr<Field>> fields_;  // stable addresses for order_
  std::vector<Field*> order_;                   // used fields in allocation order
  // Where the loader routes declared fixed fields (internal::SampleBinder);
  // null until it binds one.
  std::unique_ptr<internal::SampleBindings> bindings_;
};

}  // namespace feedline

#endif  // FEEDLINE_SAMPLE_H_

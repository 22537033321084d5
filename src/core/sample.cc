#include "feedline/sample.h"

#include "feedline/error.h"
#include "src/core/sample_binder.h"

namespace feedline {
namespace {

// Field names are short: an inline loop beats a call to memcmp.
inline bool SameName(const std::string& a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < b.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

Sample::Sample() = default;
Sample::~Sample() = default;
Sample::Sample(Sample&&) noexcept = default;
Sample& Sample::operator=(Sample&&) noexcept = default;

Sample::Field& Sample::FieldFor(std::string_view name) {
  // Datasets produce the same few fields every time, so a linear scan over a
  // handful of names beats a map and never allocates after the first sample.
  // Datasets allocate the same fields in the same order every time, so the
  // field after the last used one is checked first.
  const size_t hint = order_.size();
  if (hint < fields_.size() && SameName(fields_[hint]->name, name)) return *fields_[hint];
  for (const std::unique_ptr<Field>& f : fields_) {
    if (SameName(f->name, name)) return *f;
  }
  fields_.push_back(std::make_unique<Field>());
  fields_.back()->name = std::string(name);
  return *fields_.back();
}

std::byte* Sample::Field::Reserve(size_t bytes) {
  if (capacity < bytes) {
    storage.reset(new std::byte[bytes]);  // default-initialized: not zeroed
    capacity = bytes;
  }
  return storage.get();
}

void Sample::Field::FreeStorage() {
  storage.reset();
  capacity = 0;
}

Tensor Sample::Allocate(std::string_view name, DType dtype, const Shape& shape) {
  return AllocateField(name, dtype, shape).tensor;
}

Sample::Field& Sample::AllocateField(std::string_view name, DType dtype, const Shape& shape) {
  Field& f = FieldFor(name);
  if (!f.used) {
    f.used = true;
    order_.push_back(&f);
  }
  if (f.binding == -2) {
    f.binding = -1;
    if (bindings_ != nullptr) {
      for (size_t i = 0; i < bindings_->list.size(); ++i) {
        if (bindings_->list[i].name == name) f.binding = static_cast<int>(i);
      }
    }
  }
  if (f.binding >= 0) {
    const internal::SampleBindings::Binding& b = bindings_->list[static_cast<size_t>(f.binding)];
    const bool fits = b.dtype == dtype && b.shape == shape;
    if (fits) {
      f.bound = true;
      f.tensor = Tensor(dtype, shape, b.destination);
      return f;
    }
    if (!b.soft) {
      throw SampleError(FailureKind::kSchema, "",
                        "field '" + std::string(name) + "' was declared " + DTypeName(b.dtype) +
                            " " + b.shape.ToString() + " but the dataset produced " +
                            DTypeName(dtype) + " " + shape.ToString());
    }
  }
  const size_t bytes = static_cast<size_t>(shape.elements()) * DTypeSize(dtype);
  f.bound = false;
  f.tensor = Tensor(dtype, shape, f.Reserve(bytes));
  return f;
}

const Tensor* Sample::Find(std::string_view name) const {
  for (const Field* f : order_) {
    if (f->name == name) return &f->tensor;
  }
  return nullptr;
}

const Tensor& Sample::operator[](std::string_view name) const {
  const Tensor* t = Find(name);
  if (t == nullptr) throw Error("sample has no field '" + std::string(name) + "'");
  return *t;
}

int Sample::num_fields() const { return static_cast<int>(order_.size()); }
const std::string& Sample::field_name(int i) const { return order_[static_cast<size_t>(i)]->name; }
const Tensor& Sample::field(int i) const { return order_[static_cast<size_t>(i)]->tensor; }

void Sample::Clear() {
  for (Field* f : order_) {
    f->used = false;
    f->bound = false;
  }
  order_.clear();
}

namespace internal {

void SampleBinder::Bind(Sample& sample, const std::string& name, DType dtype, const Shape& shape,
                        std::byte* destination, bool soft) {
  for (auto& f : sample.fields_) {
    f->binding = -2;  // look up again on next use
    // Written in place from now on: its own buffer would only hold memory.
    // (The loader binds a Sample only between uses, so nothing views it.)
    if (f->name == name && f->storage != nullptr) {
      f->FreeStorage();
      if (!f->bound) f->tensor = Tensor();
    }
  }
  if (sample.bindings_ == nullptr) sample.bindings_ = std::make_unique<SampleBindings>();
  for (SampleBindings::Binding& b : sample.bindings_->list) {
    if (b.name == name) {
      b.dtype = dtype;
      b.shape = shape;
      b.destination = destination;
      b.soft = soft;
      return;
    }
  }
  sample.bindings_->list.push_back(SampleBindings::Binding{name, dtype, shape, destination, soft});
}

bool SampleBinder::IsBound(const Sample& sample, int i) {
  return sample.order_[static_cast<size_t>(i)]->bound;
}

const SampleBindings* SampleBinder::Bindings(const Sample& sample) {
  return sample.bindings_.get();
}

void SampleBinder::Detach(Sample& sample) {
  for (Sample::Field* f : sample.order_) {
    if (!f->bound) continue;
    const size_t bytes = f->tensor.bytes();
    std::byte* own = f->Reserve(bytes);
    if (bytes > 0) std::memcpy(own, f->tensor.raw(), bytes);
    f->tensor = Tensor(f->tensor.dtype(), f->tensor.shape(), own);
    f->bound = false;
  }
}

void SampleBinder::ReleaseBuffers(Sample& sample) {
  sample.Clear();
  for (auto& f : sample.fields_) {
    f->FreeStorage();
    f->tensor = Tensor();
  }
}

void SampleBinder::Unbind(Sample& sample) {
  for (auto& f : sample.fields_) f->binding = -2;
  sample.bindings_.reset();
}

}  // namespace internal
}  // namespace feedline

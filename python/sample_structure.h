// Python samples as fields, and batches back as Python values, by the
// sample's SampleSchema (feedline/sample_schema.h).
//
// A sample (a tuple, list, namedtuple, dict, array or scalar, with tuples,
// lists and dicts nested to any depth) is walked once: its schema is built
// (containers, their classes, and each leaf's kind and dtype) and each leaf
// becomes one field named by its path ("0", "image", "meta[0][\"box\"]").
// Nested containers are collated level by level, as torch's default_collate
// walks them, and a batch is rebuilt from the first sample's schema.
//
// Thread safety: functions taking py:: objects REQUIRE the GIL. Structure is
// safe to use from several threads at once.
#ifndef FEEDLINE_PYTHON_SAMPLE_STRUCTURE_H_
#define FEEDLINE_PYTHON_SAMPLE_STRUCTURE_H_

#include <pybind11/pybind11.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "feedline/batch.h"
#include "feedline/sample.h"
#include "feedline/sample_schema.h"
#include "feedline/tensor.h"

namespace feedline::python {

namespace py = pybind11;

// The layout of a loader's samples (or of its collate_fn's batches): the
// first sample's schema, against which every later sample is checked. Python
// datasets reveal it with their first sample; native datasets declare their
// fields. Once known it never changes.
class Structure {
 public:
  // How batches are shaped at the top: one value, a tuple (a tuple, list or
  // namedtuple sample; a native dataset's fields), or a dict.
  enum Kind : int { kUnknown, kSingle, kTuple, kDict };

  // Sets the layout up front (a native dataset's fields).
  void Declare(Kind kind, std::vector<std::string> names);
  // The fields of a native dataset that hold tagged str / bytes objects
  // (object_fields.h): batches give them as objects, one per row, without
  // their "_lengths" field. Call before the first sample, after Declare if
  // the dataset declares its fields.
  void DeclareObjectFields(std::vector<std::string> names);
  // Whether `name` is one of DeclareObjectFields' fields.
  bool IsDeclaredObjectField(std::string_view name) const;
  // Records `schema` the first time; afterwards throws SampleError if the
  // sample does not fit the first one: another top-level kind or tuple
  // length, a leaf that is an object in one and an array in the other, a
  // nested container with other elements. A top-level dict's keys may come
  // and go.
  void Observe(const SampleSchema& schema);
  // Samples reach a collate_fn whole, as the dataset returned them, whatever
  // their structure (ragged lists, optional keys, strings, custom objects),
  // as torch hands them to one: each is kept as itself in the process that
  // loaded it (held_objects.h) or pickled into fields to cross from a
  // worker process (pickled_fields.h), instead of laid out by a schema, and
  // never checked against the first. For a Python dataset given a
  // collate_fn; call before the first sample.
  void CarryWhole() { whole_ = true; }
  bool carries_whole() const { return whole_; }
  // Lets torch.bfloat16 leaves (bfloat16_fields.h) through; without it
  // Observe refuses them. For a loader that delivers torch tensors; call
  // before the first sample.
  void DeliverTorchBFloat16() { torch_bfloat16_ = true; }

  Kind kind() const { return kind_.load(std::memory_order_acquire); }
  // True once a Python sample was observed (not a declared layout): the
  // schema then says what the sample's values were.
  // Samples carried whole have no schema to describe.
  bool described() const { return kind() != kUnknown && !declared_ && !whole_; }
  // REQUIRES: kind() != kUnknown.
  const SampleSchema& schema() const { return schema_; }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::mutex mu_;  // serializes the first Observe
  std::atomic<Kind> kind_{kUnknown};
  SampleSchema schema_;             // written once, before kind_ is published
  std::vector<std::string> names_;  // likewise: the schema's field names
  bool declared_ = false;           // likewise
  std::vector<std::string> object_fields_;  // set before the first sample
  bool torch_bfloat16_ = false;     // set before the first Observe
  bool whole_ = false;              // likewise
};

// The top-level kind of `schema`'s root.
Structure::Kind RootKind(const SampleSchema& schema);

// Writes the arrays and scalars of `item` as fields through `allocate`,
// converting dtypes numpy has and feedline lacks (uint32/uint64 -> int64,
// float128 -> float64); torch.bfloat16 tensors become bfloat16 fields
// (bfloat16_fields.h); strings and other objects become object fields
// (object_fields.h). Returns the sample's schema. Throws SampleError for a
// field that cannot be carried. With `whole` the sample is pickled into
// fields instead (Structure::CarryWhole) and its schema is one object leaf.
using AllocateFn = std::function<Tensor(const std::string& name, DType, const Shape&)>;
SampleSchema FillSample(const py::handle& item, bool whole, const AllocateFn& allocate);
// FillSample as `structure` carries samples, the schema checked against (or
// recorded as) the first sample's before any field is written.
void FillFields(const py::handle& item, Structure& structure, const AllocateFn& allocate);

// The schema of every sample carried whole (Structure::CarryWhole): one
// object leaf, whatever the sample holds.
const SampleSchema& WholeSampleSchema();

// A sample as its dataset returned it (copies), for a Python collate_fn.
py::object SampleToPython(const Sample& sample, const Structure& structure);

// The batch laid out as `structure`: a tuple of the elements followed by any
// other fields (lengths, offsets, the "replaced" mask), a dict (a dict
// layout, or an unknown one: every field), or a single array; nested
// tuples and dicts as the samples had them, a padded nested leaf's
// "<name>_lengths" beside it. Arrays view the batch slot without copying
// and keep it out of the pool while they live. With `dlpack_leaves` a
// numeric field a framework imports through DLPack comes as a BatchArray
// (dlpack_export.h) instead of a numpy array.
py::object ShapeBatch(const Batch& batch, const Structure& structure, bool dlpack_leaves = false);

// ("tuple" | "dict" | "single" | "unknown", [field names]).
py::object StructureToPython(const Structure& structure);

// feedline._feedline.SampleSchema and SchemaNode: the schema as Python
// objects (python/sample_schema_binding.cc).
void BindSampleSchema(py::module_& m);
// `structure`'s schema as a feedline._feedline.SampleSchema, or None if no
// Python sample described it yet.
py::object SchemaToPython(const Structure& structure);

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_SAMPLE_STRUCTURE_H_

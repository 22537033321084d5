// Python objects in samples: strings, bytes and anything else that is not a
// numeric array (file paths, ids, captions, None, a dataclass) travel through
// the loader as bytes in a uint8 field and come back as the objects, one per
// sample, in a list: what torch's default_collate does with them.
//
// Every part of the loader (threads, worker processes, collate) sees an
// object field as an ordinary variable-length uint8 field; the sample's
// schema (SchemaKind::kObject, sample_structure.h) says it holds an object,
// so a sample whose field changes from an object to an array (or back) is
// refused. A field's bytes are a one-byte tag ('s' UTF-8 text, 'b' bytes,
// 'p' a pickle) and the payload; the default collate pads them and adds
// `<name>_lengths`, which turns them back into one object per row.
//
// Thread safety: every function REQUIRES the GIL.
#ifndef FEEDLINE_PYTHON_OBJECT_FIELDS_H_
#define FEEDLINE_PYTHON_OBJECT_FIELDS_H_

#include <pybind11/pybind11.h>

#include <functional>
#include <string>

#include "feedline/batch.h"
#include "feedline/tensor.h"

namespace feedline::python {

namespace py = pybind11;

// True if `value` is not a number or numeric array (bool, int, float);
// otherwise `*numeric` is `value` as a numpy array, converted once here
// (a py::object: a default py::array is not empty but a new array).
bool IsObjectValue(const py::handle& value, py::object* numeric);

// Writes `value`'s tagged bytes as a uint8 [n] field through `allocate`.
void FillObjectField(const std::string& name, const py::handle& value,
                     const std::function<Tensor(const std::string&, DType, const Shape&)>& allocate);

// The object of one sample's field (uint8 [n]).
py::object DecodeObject(const Tensor& field);

// The objects of a batch's field: one per row of a uint8 [B, n] field (rows
// cut to `lengths` when the samples' sizes differed), or the one object of a
// uint8 [n] field (what a collate_fn returned). `lengths` may be null.
py::object DecodeObjectField(const Tensor& field, const Tensor* lengths);

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_OBJECT_FIELDS_H_

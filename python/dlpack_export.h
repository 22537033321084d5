// A field of a delivered batch handed to a framework through DLPack, with no
// numpy array in between: BatchArray has `__dlpack__` and
// `__dlpack_device__` (the protocol torch.from_dlpack and
// paddle.utils.dlpack.from_dlpack read), and `numpy()` / `__array__` for the
// paths that still want an array (a sample taken out of a batch_size=None
// batch).
//
// The capsule's DLManagedTensor holds a handle on the batch: its slot stays
// the loader's until the framework frees the tensor. Its deleter only drops
// that handle (C++, no GIL): a framework may free a tensor on a thread of its
// own, where numpy's deleter would need the GIL.
//
// Which dtypes: the ones every supported torch and Paddle import (u8, i8,
// i16, i32, i64, f16, f32, f64); bool (DLPack 0.6 has no bool code) and u16
// (torch 1.13 has no uint16) stay numpy arrays, as does an empty field.
//
// Thread safety: Python objects; used under the GIL. The capsule's deleter
// may run on any thread.
#ifndef FEEDLINE_PYTHON_DLPACK_EXPORT_H_
#define FEEDLINE_PYTHON_DLPACK_EXPORT_H_

#include "feedline/batch.h"
#include "python/python_support.h"

namespace feedline::python {

// Whether field `field` of `batch` goes out as a BatchArray.
bool ExportsThroughDLPack(const Batch& batch, int field);

// A BatchArray over field `field` of `batch` (a handle on it is kept).
// REQUIRES: ExportsThroughDLPack(batch, field).
py::object MakeBatchArray(const Batch& batch, int field);

// Registers BatchArray in `m`.
void BindBatchArray(py::module_& m);

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_DLPACK_EXPORT_H_

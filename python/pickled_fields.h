// A Python value carried as fields: the pickle stream (protocol 5) of
// feedline/_pickling.py in one uint8 field, and each contiguous array it
// holds out of band in a uint8 field of its own ("buffer0", "buffer1", ...),
// copied once, straight into the field. Read back, the arrays are either
// views of the fields (a collated batch, kept alive by them) or copies (a
// sample, whose memory the loader reuses).
//
// Two things cross from a worker process this way: a sample handed whole to
// a collate_fn (Structure::CarryWhole, sample_structure.h), whatever its
// structure, and the batch a collate_fn made in the worker
// (worker_collate.h). In the training process a sample is kept as itself
// instead (held_objects.h).
//
// Thread safety: every function REQUIRES the GIL.
#ifndef FEEDLINE_PYTHON_PICKLED_FIELDS_H_
#define FEEDLINE_PYTHON_PICKLED_FIELDS_H_

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "feedline/sample.h"
#include "python/sample_structure.h"

namespace feedline::python {

namespace py = pybind11;

// Writes `value` through `allocate`: the stream as field `stream_name`,
// then its buffers. Raises (py::error_already_set) what pickling raised.
void FillPickledFields(const py::handle& value, const std::string& stream_name,
                       const AllocateFn& allocate);

// The value FillPickledFields wrote into `fields` (its only fields), its
// arrays copies of the fields' bytes. Throws Error if the fields are not
// FillPickledFields' for `stream_name`.
py::object LoadPickledCopy(const Sample& fields, const std::string& stream_name);

// The same with its arrays viewing `fields`, which they keep alive.
py::object LoadPickledViews(std::shared_ptr<const Sample> fields, const std::string& stream_name);

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_PICKLED_FIELDS_H_

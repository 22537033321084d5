// Samples handed whole to a collate_fn in the process that loaded them (a
// worker thread, or the caller's thread with num_workers=0): kept as the
// objects the dataset returned, as torch hands them over, instead of being
// pickled into fields and unpickled as copies for the collate. So a sample
// that cannot be pickled (a lock, an open file, a generator) reaches
// collate_fn, and a large one costs no pickling and no copy. Samples from
// worker processes cross as before (pickled_fields.h, worker_collate.h).
//
// What the loader carries for such a sample is a ticket: one int64 [2]
// field (a serial and a check value) under the schema of a sample carried
// whole. The objects are kept by the Sample they were loaded into: a Sample
// holds at most one (loading it again, as the error policy's substitute
// does, replaces it), and collate takes it out. A ticket whose object is
// not here (it was replaced, or the Sample is another one) is not taken.
//
// Thread safety: every function from any thread; those taking or returning
// Python objects REQUIRE the GIL.
#ifndef FEEDLINE_PYTHON_HELD_OBJECTS_H_
#define FEEDLINE_PYTHON_HELD_OBJECTS_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "feedline/sample.h"
#include "python/python_support.h"

namespace feedline::python {

namespace py = pybind11;

class HeldObjects {
 public:
  // Keeps `item` for `out` and writes its ticket as `out`'s only field.
  void Hold(const py::handle& item, Sample& out);
  // The object kept for `sample` by its ticket, taken out; a null object
  // when `sample` holds no ticket of this table's.
  py::object Take(const Sample& sample);

 private:
  struct Held {
    int64_t serial = 0;
    std::unique_ptr<PyRef> object;  // gives the object back under the GIL
  };
  std::mutex mu_;
  int64_t next_serial_ = 1;                                // GUARDED_BY(mu_)
  std::unordered_map<const Sample*, Held> held_;           // GUARDED_BY(mu_)
};

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_HELD_OBJECTS_H_

// Seeds Python's `random` and `numpy.random` global generators, and torch's
// default CPU generator where torch is imported (torchvision's random
// transforms draw from it), for one sample from (seed, epoch, index), so
// that a Python __getitem__ drawing from them gets the same draws with
// num_workers = 0 and for any number of worker processes (torch and Paddle
// seed per worker, so their draws change with the worker count), and no two
// samples get the same draws (forked workers would otherwise all inherit
// one torch generator state and repeat each other's crops).
//
// The generators are global to a process. A worker process owns its
// globals, so it seeds them before each sample. In the training process they
// are the user's: with num_workers = 0 samples are seeded too, and each
// DataLoader.__next__ runs between a save and a restore of their state
// (SavedPythonGenerators; saving costs ~35 us, so once per batch, not per
// sample), so the training loop's own draws are untouched. Worker threads,
// which run beside the training loop, do not touch them at all (their draws
// are not reproducible; use process workers, the default for Python
// datasets).
//
// Thread safety: REQUIRES the GIL.
#ifndef FEEDLINE_PYTHON_PYTHON_SEEDING_H_
#define FEEDLINE_PYTHON_PYTHON_SEEDING_H_

#include <pybind11/pybind11.h>

#include <cstdint>

namespace feedline::python {

void SeedPythonGenerators(uint64_t seed, int64_t epoch, int64_t index);

// Saves the generators' state and gives it back when it ends.
class SavedPythonGenerators {
 public:
  SavedPythonGenerators();
  ~SavedPythonGenerators();
  SavedPythonGenerators(const SavedPythonGenerators&) = delete;
  SavedPythonGenerators& operator=(const SavedPythonGenerators&) = delete;

 private:
  pybind11::object saved_random_;
  pybind11::object saved_numpy_;
  pybind11::object saved_torch_;  // null without torch
};

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_PYTHON_SEEDING_H_

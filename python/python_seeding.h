// Seeds Python's `random` and `numpy.random` global generators for one sample
// from (seed, epoch, index), so that a Python __getitem__ drawing from them
// gets the same draws in thread mode, in process mode and for any number of
// workers (torch and Paddle seed per worker, so their draws change with the
// worker count).
//
// The generators are global to a process. A worker process owns its
// globals, so it seeds them before each sample. In the training process they
// are the user's: with num_workers = 0 a sample runs between a save and a
// restore of their state (SeededPythonGeneratorsScope), so the training
// loop's own draws are untouched; worker threads, which run beside the
// training loop, do not touch them at all (their draws are not reproducible;
// use process workers, the default for Python datasets).
//
// Thread safety: REQUIRES the GIL.
#ifndef FEEDLINE_PYTHON_PYTHON_SEEDING_H_
#define FEEDLINE_PYTHON_PYTHON_SEEDING_H_

#include <pybind11/pybind11.h>

#include <cstdint>

namespace feedline::python {

void SeedPythonGenerators(uint64_t seed, int64_t epoch, int64_t index);

// Seeds the generators for one sample and gives them back their earlier
// state when it ends.
class SeededPythonGeneratorsScope {
 public:
  SeededPythonGeneratorsScope(uint64_t seed, int64_t epoch, int64_t index);
  ~SeededPythonGeneratorsScope();
  SeededPythonGeneratorsScope(const SeededPythonGeneratorsScope&) = delete;
  SeededPythonGeneratorsScope& operator=(const SeededPythonGeneratorsScope&) = delete;

 private:
  pybind11::object saved_random_;
  pybind11::object saved_numpy_;
};

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_PYTHON_SEEDING_H_

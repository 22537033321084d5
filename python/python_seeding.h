// Seeds Python's `random` and `numpy.random` global generators for one sample
// from (seed, epoch, index), so that a Python __getitem__ drawing from them
// gets the same draws in thread mode, in process mode and for any number of
// workers (torch and Paddle seed per worker, so their draws change with the
// worker count).
//
// Thread safety: REQUIRES the GIL. The generators are global to the process;
// in thread mode the draws of one sample stay its own only while its
// __getitem__ does not release the GIL between seeding and drawing (file
// reads do); process workers have no such limit.
#ifndef FEEDLINE_PYTHON_PYTHON_SEEDING_H_
#define FEEDLINE_PYTHON_PYTHON_SEEDING_H_

#include <cstdint>

namespace feedline::python {

void SeedPythonGenerators(uint64_t seed, int64_t epoch, int64_t index);

}  // namespace feedline::python

#endif  // FEEDLINE_PYTHON_PYTHON_SEEDING_H_

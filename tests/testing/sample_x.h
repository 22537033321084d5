// Reads field "x" (an int64 scalar) of a dataset's sample, for the tests of
// datasets built over index datasets.
#ifndef FEEDLINE_TESTS_TESTING_SAMPLE_X_H_
#define FEEDLINE_TESTS_TESTING_SAMPLE_X_H_

#include <cstdint>

#include "feedline/dataset.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"

namespace feedline::test {

inline int64_t GetX(const Dataset& dataset, int64_t index) {
  Sample sample;
  SampleContext ctx(/*seed=*/0, /*epoch=*/0, index);
  dataset.Get(index, sample, ctx);
  return *sample["x"].data<int64_t>();
}

}  // namespace feedline::test

#endif  // FEEDLINE_TESTS_TESTING_SAMPLE_X_H_

#include "feedline/dataset.h"

#include <string>

#include "feedline/error.h"

namespace feedline {

std::string Dataset::Source(int64_t /*index*/) const { return {}; }

int64_t Dataset::Length(int64_t /*index*/) const {
  throw Error("this dataset does not report sample lengths; DynamicBatchSampler needs "
              "Dataset::Length()");
}

void CheckIndex(int64_t index, int64_t size) {
  if (index < 0 || index >= size) {
    throw IndexError("index " + std::to_string(index) + " is out of range for a dataset of " +
                     std::to_string(size) + " samples");
  }
}

}  // namespace feedline

// The batches a loader gives, as bytes to compare: for the storage tests
// that check a remote or cached pack against the local one, batch by batch.
#ifndef FEEDLINE_TESTS_STORAGE_BATCH_BYTES_H_
#define FEEDLINE_TESTS_STORAGE_BATCH_BYTES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "feedline/feedline.h"

namespace feedline::storage::testing {

// The rows' indices and the bytes of every field, batch by batch, of a
// shuffled epoch (batch 5, seed 11) over `data` with `workers` workers.
inline std::vector<std::vector<uint8_t>> BatchesOf(std::shared_ptr<const Dataset> data,
                                                   int workers,
                                                   WorkerMode mode = WorkerMode::kThread,
                                                   ErrorPolicy policy = ErrorPolicy::kRaise,
                                                   StatsSnapshot* stats = nullptr) {
  LoaderOptions options;
  options.batch_size = 5;
  options.shuffle = true;
  options.seed = 11;
  options.num_workers = workers;
  options.worker_mode = mode;
  options.error_policy = policy;
  DataLoader loader(std::move(data), options);
  std::vector<std::vector<uint8_t>> batches;
  while (std::optional<Batch> batch = loader.Next()) {
    std::vector<uint8_t> bytes;
    for (int64_t index : batch->indices()) bytes.push_back(static_cast<uint8_t>(index));
    for (int f = 0; f < batch->num_fields(); ++f) {
      const Tensor& field = batch->field(f);
      const uint8_t* p = static_cast<const uint8_t*>(field.raw());
      bytes.insert(bytes.end(), p, p + field.bytes());
    }
    batches.push_back(std::move(bytes));
  }
  if (stats != nullptr) *stats = loader.stats();
  return batches;
}

}  // namespace feedline::storage::testing

#endif  // FEEDLINE_TESTS_STORAGE_BATCH_BYTES_H_

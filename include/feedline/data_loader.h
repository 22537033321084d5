// DataLoader: batches from a dataset, loaded by a pool of worker threads
// (paddle.io.DataLoader).
//
// Workers pull single samples, not whole batches, from a shared queue and
// write each straight into its row of a batch slot; a batch is delivered when
// all its samples are, in sampler order. So one slow sample delays only its
// own batch's completion, never a whole worker's batch, and the first batch
// arrives after batch_size / num_workers sample times. Every random choice is
// a function of (seed, epoch, index): batches are bit-identical for any
// num_workers.
//
// Memory: at most max(2, num_workers * prefetch_factor) batch slots are used
// for loading ahead. Batches the caller keeps holding are on top of that: if
// it holds every slot and asks for another batch, one more slot is made
// (list(loader) works) rather than deadlocking.
//
// Thread safety: one consumer thread iterates a loader; stats() may be called
// from any thread. Destroying the loader mid-epoch cancels and joins the
// workers promptly; Batch handles already delivered stay valid.
//
// Example:
//   LoaderOptions options;
//   options.batch_size = 64;
//   options.shuffle = true;
//   options.num_workers = 4;
//   DataLoader loader(std::make_shared<MyDataset>(), options);
//   for (int epoch = 0; epoch < 10; ++epoch) {
//     for (const Batch& batch : loader) Train(batch);
//   }
#ifndef FEEDLINE_DATA_LOADER_H_
#define FEEDLINE_DATA_LOADER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "feedline/batch.h"
#include "feedline/dataset.h"
#include "feedline/export.h"
#include "feedline/iterable_dataset.h"
#include "feedline/loader_options.h"
#include "feedline/loader_state.h"
#include "feedline/loop_report.h"
#include "feedline/next_status.h"
#include "feedline/stats.h"

namespace feedline {

namespace internal {
class Engine;
class LoopMonitor;
}

class FEEDLINE_EXPORT DataLoader {
 public:
  // Throws Error for invalid options (the message names the option).
  DataLoader(std::shared_ptr<const Dataset> dataset, LoaderOptions options = {});
  DataLoader(std::shared_ptr<const IterableDataset> dataset, LoaderOptions options = {});
  // For the library's own factories (an engine whose samples load in worker
  // processes); an Engine cannot be made from the public headers, and the
  // constructor is not among the library's symbols.
  FEEDLINE_NO_EXPORT explicit DataLoader(std::unique_ptr<internal::Engine> engine);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Batches per epoch. Throws Error for an IterableDataset (unknown length).
  int64_t size() const;

  // The epoch the next iteration runs; each iteration that starts advances it.
  // After Restore, setting the restored epoch keeps the restored position;
  // setting another epoch drops it.
  void set_epoch(int64_t epoch);
  int64_t epoch() const;

  // The next batch of the current epoch, starting an epoch if none is running;
  // nullopt at the end of the epoch (the next call starts the next one).
  // Throws SampleError under error_policy raise, TimeoutError on timeout.
  std::optional<Batch> Next();

  // Like Next(), but waits at most `max_wait`: kBatch (in *out), kEnd (end of
  // the epoch) or kPending (nothing yet; call again). Lets a caller that must
  // react to signals (the Python binding) wait in slices.
  NextStatus TryNext(std::chrono::milliseconds max_wait, Batch* out);

  // Abandons the running epoch, if any (pending work is cancelled).
  void Reset();

  // What begin() does before its first Next(): continues the epoch a Restore
  // started, if nothing has consumed it yet; otherwise Reset(). For callers
  // that iterate with Next() or TryNext() (language bindings).
  void StartIteration();

  // Where iteration stands: in a running epoch, that epoch and the batches
  // delivered so far; otherwise the epoch the next iteration runs, at batch 0.
  // The fingerprint records what the position belongs to (loader_state.h).
  LoaderState state() const;
  // Continues from `state`: the next iteration, however it starts (begin(),
  // Next(), TryNext()), yields batch state.next_batch of epoch state.epoch
  // onwards, bit-identical to the uninterrupted run for any num_workers; the
  // iteration after it runs the following epoch. Throws Error if the
  // recorded fingerprint differs from this loader's (the message names the
  // field), for an IterableDataset, or for a position past the epoch's end.
  // With a DistributedBatchSampler, a state taken with another num_replicas
  // or rank continues from its global position instead (loader_state.h,
  // docs/distributed.md): the rest of that epoch, split over this job.
  void Restore(const LoaderState& state);

  // Includes the training loop's steps (the time from a batch's delivery to
  // the next call): Summarize(stats(), {}, num_workers) in loop_report.h
  // gives step time, data wait, samples/s and a verdict.
  StatsSnapshot stats() const;
  const LoaderOptions& options() const;

  // Calls `callback` on the consumer thread with the loop's report of the
  // last `every_steps` steps (0: none) and of each epoch when it ends; a
  // null callback stops reports. An exception from it leaves the call
  // (Next(), TryNext()) before a batch is taken. Throws Error if
  // every_steps < 0. Not while another thread iterates the loader.
  void SetReport(int64_t every_steps, std::function<void(const LoopReport&)> callback);

  // Range-for over one epoch. begin() starts a new epoch (abandoning a
  // running one), except right after Restore, where it continues the
  // restored epoch.
  class Iterator {
   public:
    Iterator() = default;
    const Batch& operator*() const { return batch_; }
    const Batch* operator->() const { return &batch_; }
    Iterator& operator++();
    bool operator==(const Iterator& other) const { return loader_ == other.loader_; }

   private:
    friend class DataLoader;
    explicit Iterator(DataLoader* loader);
    DataLoader* loader_ = nullptr;
    Batch batch_;
  };
  Iterator begin();
  Iterator end() { return Iterator(); }

 private:
  std::unique_ptr<internal::Engine> engine_;
  std::unique_ptr<internal::LoopMonitor> monitor_;
};

}  // namespace feedline

#endif  // FEEDLINE_DATA_LOADER_H_

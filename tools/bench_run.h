// One benchmark run: a DataLoader over a dataset with the given settings,
// consumed by a loop that optionally sleeps a simulated training step per
// batch, measured into a BenchResult. `bench` runs it once, `tune` once per
// configuration.
//
// Thread safety: RunBench may run on any thread; the loader's workers are
// joined before it returns.
#ifndef FEEDLINE_TOOLS_BENCH_RUN_H_
#define FEEDLINE_TOOLS_BENCH_RUN_H_

#include <cstdint>
#include <memory>

#include "feedline/dataset.h"
#include "feedline/loader_options.h"
#include "tools/progress.h"
#include "tools/report.h"

namespace feedline::cli {

// The loader options for `settings`: shuffled for the train pipeline,
// persistent workers across epochs. Throws Error for a bad error policy.
LoaderOptions MakeLoaderOptions(const BenchSettings& settings);

// Runs settings.epochs epochs, stopping early after `max_batches` batches in
// all (-1: no limit). `progress` may be null. Throws UsageError when the
// batches in flight would not fit in the machine's memory, and what the
// loader throws (SampleError under error policy raise, Error for bad
// options).
BenchResult RunBench(std::shared_ptr<const Dataset> dataset, const BenchSettings& settings,
                     int64_t max_batches = -1, ProgressReporter* progress = nullptr);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_BENCH_RUN_H_

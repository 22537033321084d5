// The loader's own overhead: a trivial in-memory dataset whose sample i is
// its int64 index, batch 256, in the caller's thread and with workers.
// bench/loader_overhead_vs_torch.py runs torch's DataLoader on the same job.
#include <benchmark/benchmark.h>

#include <memory>

#include "feedline/feedline.h"
#include "feedline/synth/index_dataset.h"

namespace {

using feedline::synth::IndexDataset;

void BM_Loader_Overhead(benchmark::State& state) {
  constexpr int64_t kSamples = 1 << 20;
  feedline::LoaderOptions options;
  options.batch_size = 256;
  options.num_workers = static_cast<int>(state.range(0));
  options.persistent_workers = true;
  options.shuffle = state.range(1) != 0;
  feedline::DataLoader loader(std::make_shared<IndexDataset>(kSamples), options);
  int64_t samples = 0;
  for (auto _ : state) {
    int64_t sum = 0;
    for (const feedline::Batch& batch : loader) {
      sum += batch["index"].data<int64_t>()[0];
      samples += batch.size();
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(samples);
}
BENCHMARK(BM_Loader_Overhead)
    ->ArgNames({"workers", "shuffle"})
    ->Args({0, 0})
    ->Args({2, 0})
    ->Args({2, 1})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

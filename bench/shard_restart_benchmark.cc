// Crops that decode only their rows: the train pipeline on packed shards
// whose JPEGs carry a restart marker every N MCU rows, against the same
// shards without markers and against libjpeg-turbo's full decode of the
// same images, side by side on the same threads.
//
//   shard_restart_benchmark IMAGE_FOLDER WORK_DIR [threads=2] [rounds=5] [intervals=r1,m4]
//
// Packs IMAGE_FOLDER into WORK_DIR/r0 (files unchanged) and WORK_DIR/<spec>
// for each interval spec (rN: a restart marker every N MCU rows; mN: every
// N MCUs, the nearest divisor of the row; progressive JPEGs are rewritten as
// baseline ones unless the spec ends in 'p': m4p keeps them progressive),
// printing pack time and sizes.
// Then, for `rounds` rounds, each mode in turn runs one pass over all
// images (a shuffled order, `threads` threads pulling indices):
//   full decode   DecodeImage of each original file's bytes (in memory),
//                 whole image at full scale: libjpeg-turbo's full-decode rate
//   train r0      ShardDataset::Get with TrainPipeline(224) (f32,
//                 RandomResizedCrop + flip + normalize) on the plain shards:
//                 pread + CRC-32C + fused crop decode
//   train <spec>  the same on the rewritten shards (the crop's window only)
// and prints each mode's median images/s and the median of the per-round
// ratios to the full decode. Page cache warm (one pass first).
//
// Two rates per mode: wall clock (images/s on `threads` threads) and CPU
// time (images per second of the threads' own CPU time, times `threads`:
// the rate on `threads` idle cores). On a machine shared with other jobs
// the wall-clock rate swings with their load; the CPU-time rate does not,
// and the ratios are taken from it.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/storage/pack.h"
#include "feedline/storage/shard_dataset.h"
#include "feedline/vision/decode.h"
#include "feedline/vision/image_folder.h"
#include "feedline/vision/pipeline.h"
#include "src/core/sample_context_access.h"

namespace {

using namespace feedline;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct PassRate {
  double wall = 0;  // items per second
  double cpu = 0;   // items per CPU-second of the threads, times threads
};

// Runs work(index, thread) for every index in `order` on `threads` threads.
PassRate RunPass(const std::vector<int64_t>& order, int threads,
                 const std::function<void(int64_t, int)>& work) {
  std::atomic<size_t> next{0};
  std::vector<double> cpu(static_cast<size_t>(threads));
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const double begin = ThreadCpuSeconds();
      for (size_t k = next++; k < order.size(); k = next++) work(order[k], t);
      cpu[static_cast<size_t>(t)] = ThreadCpuSeconds() - begin;
    });
  }
  for (std::thread& th : pool) th.join();
  PassRate rate;
  rate.wall = static_cast<double>(order.size()) / Seconds(start);
  rate.cpu = static_cast<double>(order.size()) * threads /
             std::accumulate(cpu.begin(), cpu.end(), 0.0);
  return rate;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<std::string> ParseSpecs(const std::string& text) {
  std::vector<std::string> specs;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t digits = item.size() - (item.back() == 'p' ? 1 : 0);
    if (digits < 2 || (item[0] != 'r' && item[0] != 'm') ||
        std::min(item.find_first_not_of("0123456789", 1), item.size()) != digits) {
      std::fprintf(stderr, "bad interval spec '%s' (rN or mN, then p to keep progressive JPEGs)\n",
                   item.c_str());
      std::exit(2);
    }
    specs.push_back(item);
  }
  return specs;
}

bool KeepsProgressive(const std::string& spec) { return spec.back() == 'p'; }

std::string Describe(const std::string& spec) {
  const int n = std::stoi(spec.substr(1));
  if (spec == "r0") return "files unchanged";
  const std::string progressive = KeepsProgressive(spec) ? ", progressive kept" : "";
  if (spec[0] == 'r') {
    return "restart marker every " + std::to_string(n) + " MCU row(s)" + progressive;
  }
  return "restart marker every ~" + std::to_string(n) + " MCUs" + progressive;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s IMAGE_FOLDER WORK_DIR [threads=2] [rounds=5] [intervals=r1,m4]\n",
                 argv[0]);
    return 2;
  }
  const std::string folder = argv[1];
  const std::string work = argv[2];
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 5;
  const std::vector<std::string> specs = ParseSpecs(argc > 5 ? argv[5] : "r1,m4");

  // The original files, in memory, for the full-decode baseline.
  const vision::ImageFolder::Listing listing = vision::ImageFolder::List(folder);
  std::vector<std::vector<uint8_t>> files;
  uint64_t folder_bytes = 0;
  int progressive = 0;
  for (int64_t i = 0; i < listing.files.size(); ++i) {
    std::ifstream in(folder + "/" + std::string(listing.files.path(i)), std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    folder_bytes += files.back().size();
    progressive += vision::ReadImageInfo(files.back(), "x").progressive ? 1 : 0;
  }
  const int64_t n = static_cast<int64_t>(files.size());

  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::printf("shard_restart_benchmark, %s: %lld images (%.1f KiB avg, %d progressive) from %s, "
              "%d threads (%u cores), %d rounds\n\n",
              date, static_cast<long long>(n), folder_bytes / 1024.0 / n, progressive,
              folder.c_str(), threads, std::thread::hardware_concurrency(), rounds);

  std::vector<std::string> all_specs = {"r0"};
  all_specs.insert(all_specs.end(), specs.begin(), specs.end());
  std::printf(
      "| pack | s | images/s | tar bytes | rewritten JPEGs | their bytes | of which progressive "
      "| their bytes |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  uint64_t plain_bytes = 0;
  for (const std::string& spec : all_specs) {
    storage::PackOptions options;
    options.restart = true;
    const int n = std::stoi(spec.substr(1));
    options.jpeg_restart_rows = spec[0] == 'r' ? n : 1;
    options.jpeg_restart_mcus = spec[0] == 'm' ? n : 0;
    options.jpeg_progressive_to_baseline = !KeepsProgressive(spec);
    const auto start = Clock::now();
    const storage::PackResult result = storage::PackSource(folder, work + "/" + spec, options);
    const double s = Seconds(start);
    if (spec == "r0") plain_bytes = result.bytes;
    const double change = result.rewritten_bytes_before == 0
                              ? 0.0
                              : 100.0 * (double(result.rewritten_bytes_after) -
                                         double(result.rewritten_bytes_before)) /
                                    double(result.rewritten_bytes_before);
    const double progressive_change =
        result.progressive_bytes_before == 0
            ? 0.0
            : 100.0 * (double(result.progressive_bytes_after) -
                       double(result.progressive_bytes_before)) /
                  double(result.progressive_bytes_before);
    std::printf("| %s (%s) | %.2f | %.0f | %llu (%+.2f %%) | %lld | %+.2f %% | %lld | %+.2f %% |\n",
                spec.c_str(), Describe(spec).c_str(), s, result.records / s,
                static_cast<unsigned long long>(result.bytes),
                plain_bytes ? 100.0 * (double(result.bytes) - double(plain_bytes)) / plain_bytes
                            : 0.0,
                static_cast<long long>(result.rewritten_jpegs), change,
                static_cast<long long>(result.progressive_converted), progressive_change);
  }
  std::printf("\n");

  const vision::Pipeline train = vision::TrainPipeline(224);
  std::map<std::string, std::unique_ptr<storage::ShardDataset>> shards;
  for (const std::string& spec : all_specs) {
    const std::string dir = work + "/" + spec;
    shards[dir] = std::make_unique<storage::ShardDataset>(storage::ShardDataset::Find(dir), train);
  }

  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(1));

  struct Mode {
    std::string name;
    std::function<void(int64_t, int)> work;
  };
  std::vector<Mode> modes;
  std::vector<std::vector<uint8_t>> pixels(static_cast<size_t>(threads));
  modes.push_back({"full decode (libjpeg-turbo, whole image, in memory)", [&](int64_t i, int t) {
                     vision::DecodeImage(files[static_cast<size_t>(i)], "x",
                                         pixels[static_cast<size_t>(t)]);
                   }});
  std::vector<std::unique_ptr<SampleContext>> contexts;
  for (int t = 0; t < threads; ++t) contexts.push_back(std::make_unique<SampleContext>(7, 0, 0, t));
  for (const std::string& spec : all_specs) {
    const storage::ShardDataset* data = shards[work + "/" + spec].get();
    modes.push_back({"train, shards " + spec + " (" + Describe(spec) + ")",
                     [&, data](int64_t i, int t) {
                       SampleContext& ctx = *contexts[static_cast<size_t>(t)];
                       internal::SampleContextAccess::Reset(ctx, 0, i);
                       Sample sample;
                       data->Get(i, sample, ctx);
                     }});
  }

  for (const Mode& m : modes) RunPass(order, threads, m.work);  // warm caches
  std::vector<std::vector<double>> rates(modes.size()), walls(modes.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t m = 0; m < modes.size(); ++m) {
      const PassRate rate = RunPass(order, threads, modes[m].work);
      rates[m].push_back(rate.cpu);
      walls[m].push_back(rate.wall);
    }
  }
  std::printf(
      "| mode | images/s, CPU time (median) | images/s, wall clock (median) | / full decode, "
      "CPU time (median of rounds) | per round |\n");
  std::printf("|---|---:|---:|---:|---|\n");
  for (size_t m = 0; m < modes.size(); ++m) {
    std::vector<double> ratios;
    std::string per_round;
    for (int round = 0; round < rounds; ++round) {
      ratios.push_back(rates[m][round] / rates[0][round]);
      char buffer[16];
      std::snprintf(buffer, sizeof(buffer), "%s%.2f", round ? ", " : "", ratios.back());
      per_round += buffer;
    }
    std::printf("| %s | %.0f | %.0f | %.2fx | %s |\n", modes[m].name.c_str(), Median(rates[m]),
                Median(walls[m]), Median(ratios), per_round.c_str());
  }
  return 0;
}

#include "tools/diagnosis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tools/report.h"

namespace feedline::cli {
namespace {

// Beyond this the per-image figure is engine overhead, not work: say so.
constexpr double kTinyWorkUs = 50;

std::string Percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.0f%%", 100 * fraction);
  return buffer;
}

// What to do about the stage that dominates worker time.
std::string StageAdvice(const BenchSettings& s, const std::string& stage, double share) {
  const std::string pct = Percent(share);
  if (stage == "read" && s.remote && !s.cached) {
    return "Reading takes " + pct +
           " of worker time: every record is a request to the server; give --cache-dir DIR (a "
           "local folder: each shard is downloaded once per node, fetched ahead in the epoch's "
           "order) or copy the data to a local SSD.";
  }
  if (stage == "read" && s.remote) {
    return "Reading takes " + pct +
           " of worker time: the shards are being downloaded into the cache (--cache-dir); "
           "later epochs read them from the local disk (--epochs 2 shows it).";
  }
  if (stage == "read") {
    return "Reading the files takes " + pct +
           " of worker time: the storage is slow; copy the data to a local SSD or keep it in "
           "the page cache.";
  }
  if (stage == "decode") {
    return "Decoding takes " + pct +
           " of worker time: store the images smaller, since decoding time grows with the pixels "
           "stored (a short side of 256 to 320 pixels is enough for 224-pixel training).";
  }
  if (stage == "transform") {
    return "The transforms take " + pct +
           " of worker time: use lighter augmentation or resize to a smaller size first.";
  }
  if (stage == "collate") {
    return "Collating takes " + pct +
           " of worker time: declare the dataset's fixed fields so samples are written "
           "straight into the batch.";
  }
  return "Engine overhead outside the dataset takes " + pct +
         " of worker time: the work per sample is small, so fewer, larger samples go faster.";
}

}  // namespace

const char* BottleneckName(Bottleneck bottleneck) {
  return bottleneck == Bottleneck::kLoader ? "loader" : "compute";
}

Diagnosis Diagnose(const BenchResult& result) {
  const BenchSettings& s = result.settings;
  Diagnosis d;
  const std::array<double, kNumShares> shares = StageShares(result);
  const auto top = std::max_element(shares.begin(), shares.end());
  if (*top > 0) {
    d.dominant_stage = ShareName(static_cast<int>(top - shares.begin()));
    d.dominant_share = *top;
  }
  const double wait = WaitFraction(result);
  const double utilization = WorkerUtilization(result);
  const int cores = std::max(1, s.cores);
  const int workers = std::max(0, s.workers);
  const bool simulated_step = s.step_ms > 0;

  d.bottleneck =
      (!simulated_step || wait > kLoaderBoundWait) ? Bottleneck::kLoader : Bottleneck::kCompute;

  if (d.bottleneck == Bottleneck::kCompute) {
    const double idle = utilization >= 0 ? 1 - utilization : 1 - wait;
    d.sentences.push_back("The training step is the bottleneck: the loader is idle " +
                          Percent(idle) + " of the time and the step waits " + Percent(wait) +
                          " for data.");
    if (utilization >= 0 && utilization < 0.5 && workers > 1) {
      // Keep 25% headroom over the measured need.
      const int enough = std::max(1, static_cast<int>(std::ceil(workers * utilization / 0.75)));
      if (enough < workers) {
        d.suggested_workers = enough;
        d.sentences.push_back("Lower --workers to " + std::to_string(enough) +
                              " to free CPU for other work; the loader would still keep up.");
      }
    }
    if (d.sentences.size() == 1) d.sentences.push_back("Nothing to change in the loader.");
  } else {
    if (simulated_step) {
      d.sentences.push_back("The training step waits " + Percent(wait) + " of the time for data.");
    } else {
      d.sentences.push_back(
          "No training step was simulated, so this is the loader's top speed; pass --step-ms "
          "with your model's step time to see whether it keeps up.");
    }
    const double per_image_us = ImagesPerSecond(result) > 0 ? 1e6 / ImagesPerSecond(result) : 0;
    if (workers == 0) {
      const int target = std::min(cores, 4);
      d.suggested_workers = target;
      d.sentences.push_back(
          "Samples load in the training thread (--workers 0): raise --workers to " +
          std::to_string(target) + ".");
    } else if (utilization >= 0 && utilization < kIdleWorkers) {
      // The workers wait too: the hand-off between them and the consumer is
      // the limit, not the work.
      d.sentences.push_back("The workers are busy only " + Percent(utilization) +
                            " of the time, so more workers will not help.");
      if (per_image_us > 0 && per_image_us < kTinyWorkUs) {
        char cost[96];
        std::snprintf(cost, sizeof(cost), "%.2f us per sample", per_image_us);
        d.sentences.push_back(std::string("The work per sample is tiny, so this figure (") + cost +
                              ") is the engine's own per-sample cost.");
      } else if (s.prefetch < 4) {
        d.suggested_prefetch = std::min(8, 2 * std::max(1, s.prefetch));
        d.sentences.push_back("Raise --prefetch to " + std::to_string(d.suggested_prefetch) +
                              " so that they always have a free batch to fill.");
      }
    } else {
      // How many workers would make the loader as fast as the consumer: the
      // loader must speed up by (step + wait) / step = 1 / (1 - wait).
      // (The epsilon keeps 2 / (1 - 0.8) at 10, not 11.)
      const int needed =
          simulated_step ? static_cast<int>(std::ceil(workers / std::max(0.05, 1 - wait) - 1e-9))
                         : cores;
      if (needed > workers && needed <= cores) {
        d.suggested_workers = needed;
        d.sentences.push_back("Raise --workers to " + std::to_string(needed) + ".");
        if (!d.dominant_stage.empty())
          d.sentences.push_back(StageAdvice(s, d.dominant_stage, d.dominant_share));
      } else if (workers < cores) {
        d.suggested_workers = cores;
        d.sentences.push_back("Raise --workers to " + std::to_string(cores) +
                              " (one per core); that may still fall short of about " +
                              std::to_string(needed) + " cores' worth of loading.");
        if (!d.dominant_stage.empty())
          d.sentences.push_back(StageAdvice(s, d.dominant_stage, d.dominant_share));
      } else {
        d.sentences.push_back("Every core is already loading (" + std::to_string(workers) +
                              " workers on " + std::to_string(cores) +
                              " cores); to go faster, cut the work per image.");
        if (!d.dominant_stage.empty())
          d.sentences.push_back(StageAdvice(s, d.dominant_stage, d.dominant_share));
      }
    }
  }

  if (result.stats.errors > 0) {
    std::string reasons;
    for (const auto& [reason, count] : result.stats.errors_by_reason) {
      reasons += (reasons.empty() ? "" : ", ") + reason + ": " + std::to_string(count);
    }
    d.sentences.push_back(std::to_string(result.stats.errors) + " samples failed to load (" +
                          reasons + "); `feedline verify " + s.source + "` lists the files.");
  }
  return d;
}

}  // namespace feedline::cli

// Decode and augmentation throughput on photo-like ~400x350 JPEGs (the size
// of an average ImageNet image), per core:
//   BM_Decode_Full          libjpeg-turbo decoding whole images (the baseline)
//   BM_Decode_TrainCrop     RandomResizedCrop's region only, at the best DCT scale
//   BM_Pipeline_Train       the whole train recipe into f32 [3, 224, 224]
//   BM_Pipeline_Train_FastIdct  the same with libjpeg's fast integer IDCT
//   BM_Pipeline_Train_U8    the same into u8 [224, 224, 3] (normalize on the GPU)
//   BM_Pipeline_Train_Unfused  full decode, then crop: what the fusion saves
//   BM_Pipeline_Val         Resize(256) + CenterCrop(224)
//   BM_Pipeline_DecodeOnly  the "decode only" pipeline (u8, whole image)
// Items are images. With FEEDLINE_BENCH_DUMP=dir set, the images are also
// written to dir/img_NN.jpg, for bench/vision_torchvision_baseline.py to run
// torchvision on the very same files.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "feedline/rng.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/synth/synth.h"
#include "feedline/vision/decode.h"
#include "feedline/vision/pipeline.h"
#include "src/core/sample_context_access.h"

namespace feedline::vision {
namespace {

constexpr int kImages = 32;

const std::vector<std::vector<uint8_t>>& Images() {
  static const std::vector<std::vector<uint8_t>> images = [] {
    std::vector<std::vector<uint8_t>> out;
    for (int i = 0; i < kImages; ++i) {
      // Mostly landscape 400x350, some portrait; the common JPEG settings.
      const bool portrait = i % 4 == 3;
      JpegEncodeOptions options;
      options.quality = 85 + i % 11;
      options.subsampling = i % 8 == 5 ? ChromaSubsampling::k444 : ChromaSubsampling::k420;
      options.progressive = i % 8 == 7;
      out.push_back(SynthesizeJpeg(portrait ? 350 : 400, portrait ? 400 : 350,
                                   static_cast<uint64_t>(1000 + i), options));
    }
    if (const char* dir = std::getenv("FEEDLINE_BENCH_DUMP")) {
      for (int i = 0; i < kImages; ++i) {
        char path[4096];
        std::snprintf(path, sizeof(path), "%s/img_%02d.jpg", dir, i);
        if (std::FILE* f = std::fopen(path, "wb")) {
          std::fwrite(out[i].data(), 1, out[i].size(), f);
          std::fclose(f);
        }
      }
    }
    return out;
  }();
  return images;
}

void BM_Decode_Full(benchmark::State& state) {
  const auto& images = Images();
  std::vector<uint8_t> pixels;
  size_t i = 0;
  for (auto _ : state) {
    DecodedImage image = DecodeImage(images[i++ % kImages], "bench", pixels);
    benchmark::DoNotOptimize(image);
    benchmark::DoNotOptimize(pixels.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Decode_Full);

void BM_Decode_TrainCrop(benchmark::State& state) {
  const auto& images = Images();
  const Pipeline train = TrainPipeline(224);
  std::vector<uint8_t> pixels;
  int64_t i = 0;
  for (auto _ : state) {
    const std::vector<uint8_t>& data = images[static_cast<size_t>(i % kImages)];
    const ImageInfo info = ReadImageInfo(data, "bench");
    Rng rng(0, 0, static_cast<uint64_t>(i++));
    const PipelinePlan plan = train.Plan(info.height, info.width, rng);
    DecodeRequest request;
    request.region = Rect{static_cast<int>(plan.x), static_cast<int>(plan.y),
                          static_cast<int>(plan.width + 1), static_cast<int>(plan.height + 1)};
    request.max_scale = plan.max_scale;
    DecodedImage image = DecodeImage(data, "bench", pixels, request);
    benchmark::DoNotOptimize(image);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Decode_TrainCrop);

void RunPipeline(benchmark::State& state, const Pipeline& pipeline) {
  const auto& images = Images();
  Sample sample;
  SampleContext ctx(/*seed=*/0, /*epoch=*/0, /*index=*/0);
  int64_t i = 0;
  for (auto _ : state) {
    sample.Clear();
    feedline::internal::SampleContextAccess::Reset(ctx, 0, i);  // keeps its scratch buffers
    pipeline.Run(images[static_cast<size_t>(i++ % kImages)], "bench", sample, "image", ctx);
    benchmark::DoNotOptimize(sample["image"].raw());
  }
  state.SetItemsProcessed(state.iterations());
  const double n = static_cast<double>(state.iterations());
  state.counters["decode_us"] = ctx.stage_ns(Stage::kDecode) / n / 1e3;
  state.counters["transform_us"] = ctx.stage_ns(Stage::kTransform) / n / 1e3;
}

void BM_Pipeline_Train(benchmark::State& state) { RunPipeline(state, TrainPipeline(224)); }
BENCHMARK(BM_Pipeline_Train);

void BM_Pipeline_Train_FastIdct(benchmark::State& state) {
  PipelineOptions options;
  options.decode.jpeg_fast_idct = true;
  RunPipeline(state, Pipeline(TrainPipeline(224).transforms(), options));
}
BENCHMARK(BM_Pipeline_Train_FastIdct);

void BM_Pipeline_Train_U8(benchmark::State& state) {
  RunPipeline(state, TrainPipeline(224, DType::kU8));
}
BENCHMARK(BM_Pipeline_Train_U8);

void BM_Pipeline_Train_Unfused(benchmark::State& state) {
  PipelineOptions options;
  options.fused = false;
  RunPipeline(state, Pipeline(TrainPipeline(224).transforms(), options));
}
BENCHMARK(BM_Pipeline_Train_Unfused);

void BM_Pipeline_Val(benchmark::State& state) { RunPipeline(state, ValPipeline(256, 224)); }
BENCHMARK(BM_Pipeline_Val);

void BM_Pipeline_DecodeOnly(benchmark::State& state) {
  PipelineOptions options;
  options.dtype = DType::kU8;
  RunPipeline(state, Pipeline({}, options));
}
BENCHMARK(BM_Pipeline_DecodeOnly);

}  // namespace
}  // namespace feedline::vision

BENCHMARK_MAIN();

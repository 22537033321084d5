// libFuzzer target for the image decoders and the fused decode path.
//
// Every input goes through the header reader, the full decoder, a region +
// DCT-scaled decode whose box comes from the input's length, and the train
// pipeline (plan, region decode, resample, normalize); a JPEG with restart
// markers also through the window decode of packed shards
// (src/vision/jpeg_restarts.h) with its row offsets, then with one moved. A
// SampleError is the
// expected answer to bad data; anything else (a crash, a sanitizer report,
// another exception escaping) is a bug.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "feedline/error.h"
#include "feedline/sample.h"
#include "feedline/sample_context.h"
#include "feedline/vision/decode.h"
#include "feedline/vision/pipeline.h"
#include "src/vision/jpeg_restarts.h"

namespace {

using feedline::SampleError;
using namespace feedline::vision;

DecodeOptions Options(bool strict) {
  DecodeOptions options;
  options.max_pixels = 1 << 22;  // keeps each run fast and small
  options.jpeg_strict = strict;
  return options;
}

const Pipeline& Train() {
  static const Pipeline* pipeline = [] {
    PipelineOptions options;
    options.decode = Options(/*strict=*/true);
    return new Pipeline(TrainPipeline(48).transforms(), options);
  }();
  return *pipeline;
}

const Pipeline& Val() {
  static const Pipeline* pipeline = [] {
    PipelineOptions options;
    options.decode = Options(/*strict=*/false);
    options.dtype = feedline::DType::kF16;
    return new Pipeline({Transform::Resize(40), Transform::CenterCrop(56)}, options);
  }();
  return *pipeline;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  std::vector<uint8_t> pixels;
  try {
    ReadImageInfo(bytes, "fuzz", Options(true));
  } catch (const SampleError&) {
  }
  try {
    DecodeImage(bytes, "fuzz", pixels, {}, Options(false));
  } catch (const SampleError&) {
  }
  try {
    DecodeRequest request;
    request.region = Rect{static_cast<int>(size % 97), static_cast<int>(size % 61),
                          static_cast<int>(1 + size % 173), static_cast<int>(1 + size % 131)};
    request.max_scale = 1 << (size % 4);
    DecodeImage(bytes, "fuzz", pixels, request, Options(true));
  } catch (const SampleError&) {
  }
  std::vector<uint32_t> restarts;
  if (internal::FindJpegRestarts(bytes, restarts)) {
    for (int variant = 0; variant < 2; ++variant) {
      if (variant == 1) restarts[restarts.size() / 2] += 1 + static_cast<uint32_t>(size % 5);
      try {
        DecodeRequest request;
        request.region = Rect{static_cast<int>(size % 41), static_cast<int>(size % 37),
                              static_cast<int>(1 + size % 53), static_cast<int>(1 + size % 29)};
        request.max_scale = 1 << (size % 3);
        request.jpeg_restarts = restarts;
        DecodeImage(bytes, "fuzz", pixels, request, Options(true));
        feedline::Sample sample;
        feedline::SampleContext ctx(/*seed=*/size, /*epoch=*/0, /*index=*/0);
        Train().Run(bytes, "fuzz", sample, "image", ctx, restarts);
      } catch (const SampleError&) {
      }
    }
  }
  for (const Pipeline* pipeline : {&Train(), &Val()}) {
    try {
      feedline::Sample sample;
      feedline::SampleContext ctx(/*seed=*/size, /*epoch=*/0, /*index=*/0);
      pipeline->Run(bytes, "fuzz", sample, "image", ctx);
    } catch (const SampleError&) {
    }
  }
  return 0;
}
